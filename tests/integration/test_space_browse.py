"""The Space's Browse tab and ``explore --html`` in headless Chromium (one browser for the module), on the
synthetic world of tests/unit/world.py built as the Space's dataset (``ECCV_CAPTION_DATA``: its ground truth,
8x8 PNG pixels, caption texts; one image left without pixels).

Two tiny models' runs (Python encoders of the pixels and texts, through ``evaluate_model(save_embeddings=)``):
run A is the Score tab's upload, run B the Browse tab's run files. For every query each set shows, every mark is
the library's positives (``Resources.positives``) and every per-query value the one ``evaluate --per-query``
wrote; each set's count is a filter over those files written here. Bad input is one line in the tab, never a
wrong mark. The report opens with every request but its own file refused, its numbers those of ``evaluate -o``.
``SPACE_SCREENSHOTS=<folder>`` keeps the screenshots (default: pytest's tmp_path; the docs' are made so).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric.analysis.report import shown
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.cli.main import main
from eccv_metric.hub.space_words import DATA_ENV
from eccv_metric.hub.space_words import SOURCE_ENV
from tests.integration.test_space import load_app
from tests.integration.test_space import screenshot_dir
from tests.unit.model_world import Counting
from tests.unit.model_world import png
from tests.unit.model_world import run_model
from tests.unit.model_world import write_data
from tests.unit.model_world import write_ground_truth
from tests.unit.world import make_world

pytestmark = pytest.mark.browser
MARKED = ("eccv", "coco_5k", "cxc", "pm")
PER_QUERY = ["--benchmarks", "coco_5k", "eccv", "cxc", "pm", "--metrics", "pm_r1"]


class Backwards(Counting):
    """A second tiny model: the same pixels, the texts' features in another order."""

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return super().encode_texts(texts)[:, ::-1].copy()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def data(world, tmp_path_factory):
    built = write_data(world, tmp_path_factory.mktemp("data"), skip_pixels=(world.image_ids[3],))
    return write_ground_truth(world, built)


@pytest.fixture(scope="module")
def runs(world, data, tmp_path_factory):
    """Each model's saved embeddings (a run folder) and the per-query values ``evaluate --per-query`` wrote."""
    folder = tmp_path_factory.mktemp("runs")
    pixels = folder / "pixels"  # the image the Space's dataset lacks, for the models
    pixels.mkdir()
    (pixels / f"COCO_val2014_{world.image_ids[3]:012d}.jpg").write_bytes(png(world.image_ids[3]))
    out = {}
    for name, model in (("model_a", Counting()), ("model_b", Backwards())):
        emb = folder / name / "emb"
        run_model(model, data, world, folder / name, benchmarks=["eccv"], save_embeddings=emb, images=pixels)
        files = folder / name / "emb" / "coco_5k"
        flags = [f"--{p.stem.replace('_', '-')}" for p in sorted(files.glob("*.npy"))]
        args = [x for flag, p in zip(flags, sorted(files.glob("*.npy")), strict=True) for x in (flag, str(p))]
        common = [*args, "--ground-truth", str(data), "--cxc-source", str(world.cxc_dir), *PER_QUERY, "-q"]
        assert main(["evaluate", *common, "--per-query", str(folder / f"{name}_pq.json")]) == 0
        assert main(["evaluate", *common, "-o", str(folder / f"{name}.json")]) == 0
        out[name] = (files, json.loads((folder / f"{name}_pq.json").read_text()), folder / f"{name}.json")
    return out


@pytest.fixture(scope="module")
def server(world, data):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DATA_ENV, str(data))
        patch.setenv(SOURCE_ENV, str(world.cxc_dir))
        app = load_app()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        demo = app.build()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.LAUNCH)
        yield f"http://127.0.0.1:{port}/"
        demo.close()


@pytest.fixture(scope="module")
def page(browser, server, runs):
    """The page at 1366x900 with run A in the Score tab's embeddings boxes, on the Browse tab."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(server)
    files = runs["model_a"][0]
    page.get_by_text("embeddings (instead of rankings or a matrix)").click()
    page.get_by_text("optional files: ids, COCO instances, benchmark sources").click()
    for box, name in (("image_emb", "image_embeddings"), ("caption_emb", "caption_embeddings"),
                      ("image_ids", "image_ids"), ("caption_ids", "caption_ids")):  # fmt: skip
        page.locator(f"#{box} input[type=file]").set_input_files(str(files / f"{name}.npy"))
        page.locator(f"#{box}").get_by_text(name).first.wait_for()
    page.get_by_role("tab", name="Browse").click()
    yield page
    page.close()


def choose(page, box: str, label: str) -> None:
    """Pick a dropdown's choice as a user does: type its label, click the option shown (its label, a count)."""
    field = page.locator(f"#{box} input")
    if field.input_value() == label:
        return  # picked already (typing the picked choice's own label leaves gradio's list unsettled)
    field.click()
    field.fill(label)
    page.get_by_role("option", name=re.compile("^" + re.escape(label))).first.click()
    page.wait_for_function(f"document.querySelector('#{box} input').value.startsWith({json.dumps(label)})")


def show(page, expect: str = "ok") -> str:
    """Click Show; the status line once it answers (``ok`` or ``error``: its styled box, with its new text)."""
    line = "#browse_status .eccv-ok, #browse_status .eccv-error"
    before = page.evaluate(f"() => (document.querySelector({json.dumps(line)}) || {{}}).innerText || ''")
    page.locator("#show").click()
    page.wait_for_function(
        "([line, before]) => { const s = document.querySelector(line); return s && s.innerText !== before; }",
        arg=[line, before],
    )
    kind = "error" if page.locator("#browse_status .eccv-error").count() else "ok"
    text = page.locator(line).inner_text().strip()
    assert kind == expect and "\n" not in text, text
    return text


def run_b(page, *paths: Path) -> None:
    page.get_by_text("run files (optional)").click()
    box = page.locator("#run_b")
    if box.locator("button[aria-label='Clear']").count():
        box.locator("button[aria-label='Clear']").first.click()
    if paths:
        box.locator("input[type=file]").set_input_files([str(p) for p in paths])
        box.get_by_text(paths[-1].stem).first.wait_for()
    page.get_by_text("run files (optional)").click()


def cards(page) -> list[dict]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#cards .eccv-card')].map((card) => ({
            query: Number(card.dataset.query),
            runs: [...card.querySelectorAll('.eccv-run')].map((run) => ({
                values: JSON.parse(run.querySelector('.eccv-values').dataset.values),
                items: [...run.querySelectorAll('.eccv-item')].map((li) => ({
                    id: Number(li.dataset.id), marks: JSON.parse(li.dataset.marks)})),
            })),
        }))"""
    )


def set_counts(page) -> dict[str, int]:
    page.locator("#query_set input").click()
    labels = [t.strip().removeprefix("✓").strip() for t in page.get_by_role("option").all_inner_texts()]
    page.get_by_text("Each query's top 10").click()  # the list closes as a user closes it
    return {re.sub(r" \(\d[\d,]*\)$", "", t.strip()): int(re.search(r"\((\d[\d,]*)\)$", t.strip())[1].replace(",", ""))
            for t in labels}  # fmt: skip


def by_query(pq: dict, metric: str, direction: str) -> dict[int, float]:
    entry = pq[metric][direction]
    return dict(zip(entry["query_ids"], entry["values"], strict=True))


def test_two_runs_marks_values_and_sets(page, runs, data, world, tmp_path):
    """Run A (the Score tab's upload) and run B (run files) side by side, in both directions and every set: the
    marks are the library's positives, the values ``--per-query``'s, the counts filters over those files; the
    page stays put at 1366x900 and the cards scroll one query at a time."""
    (_, pq_a, _), (files_b, pq_b, _) = runs["model_a"], runs["model_b"]
    run_b(page, *sorted(files_b.glob("*.npy")))
    resources = ResourceOptions(ground_truth=data, cxc_source=world.cxc_dir).resources()
    for direction in ("t2i", "i2t"):
        choose(page, "direction", direction)
        page.locator("#shown input").fill("50")
        show(page)
        counts = set_counts(page)
        positives = {}
        for name in MARKED:
            bench = REGISTRY.get(name)
            rel = resources.positives(bench, bench.task(direction).relation, direction)
            view = resources.view(bench, bench.task(direction))
            positives[name] = {q: set(v) for q, v in rel.to_id_lists(view.queries.ids, view.gallery.ids).items()}
        queries = set(positives["eccv"])
        r1 = {n: by_query(pq_a, f"{n}_r1" if n != "pm" else "pm_r1", direction) for n in MARKED}
        r1_b = by_query(pq_b, "eccv_r1", direction)
        want = {
            f"COCO counts the top item wrong, {REGISTRY.get(n).title} counts it right": sum(
                1 for q in queries if r1["coco_5k"][q] == 0 and r1[n].get(q) == 1
            )
            for n in ("eccv", "cxc", "pm")
        }
        want["A right, B wrong"] = sum(1 for q in queries if r1["eccv"][q] == 1 and r1_b[q] == 0)
        want["B right, A wrong"] = sum(1 for q in queries if r1["eccv"][q] == 0 and r1_b[q] == 1)
        want[f"the {len(queries)} worst queries by eccv_map_at_r"] = len(queries)
        want[f"{len(queries)} queries at random (seed 0)"] = len(queries)
        assert counts == want
        assert direction != "t2i" or 0 in counts.values(), counts  # an empty set is picked below
        seen = 0
        for label in counts if direction == "t2i" else list(counts)[:1]:  # every set once, in one direction
            if not page.locator("#query_set input").input_value().startswith(label):  # else its cards are shown
                choose(page, "query_set", label)
                show(page)
            status = page.locator("#browse_status").inner_text()
            assert f"'{label}': {counts[label]:,} quer" in status, (label, status)  # an empty set too: its own
            assert len(cards(page)) == min(50, counts[label])  # line, no other set's cards
            for card in cards(page):
                query = card["query"]
                for run, pq in zip(card["runs"], (pq_a, pq_b), strict=True):
                    for metric, by_dir in pq.items():
                        if direction in by_dir and query in by_query(pq, metric, direction):
                            assert run["values"][metric] == by_query(pq, metric, direction)[query], (metric, query)
                    for item in run["items"]:
                        assert item["marks"] == {n: item["id"] in positives[n].get(query, ()) for n in MARKED}
                    seen += len(run["items"])
        assert seen >= 20
    choose(page, "query_set", "the ")
    show(page)
    assert page.evaluate("window.scrollY") == 0
    box = page.locator("#cards .eccv-cards").bounding_box()
    assert box["y"] + box["height"] <= 900, box  # the queries scroll in the box, the page stays put
    page.screenshot(path=str(screenshot_dir(tmp_path) / "browse_1366x900.png"))
    page.locator("#cards .eccv-cards").hover()
    page.mouse.wheel(0, 250)  # less than a card: the box stops at the next query (scroll-snap)
    page.wait_for_timeout(800)
    gap = page.evaluate("""() => { const box = document.querySelector('#cards .eccv-cards');
        const second = box.querySelectorAll('.eccv-card')[1];
        return second.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientTop; }""")
    assert abs(gap) <= 1, gap  # the second query's card at the top of the box


def test_bad_input_is_one_line_never_a_mark(page, runs, world, tmp_path):
    """A query id not in the benchmark, a run of another benchmark's items, a per-query file (numbers only), a
    published model on a Space whose dataset is a folder: one line each, the cards cleared; an image without pixels
    says so in place of its thumbnail."""
    files_a, _, _ = runs["model_a"]
    run_b(page)
    choose(page, "browse_benchmark", "COCO 5K (coco_5k)")  # every image is one of its queries
    choose(page, "direction", "i2t")
    page.locator("#query input, #query textarea").first.fill(str(world.image_ids[3]))
    show(page)
    placeholder = page.locator("#cards .eccv-query .eccv-nopix")
    assert placeholder.inner_text().startswith(f"image {world.image_ids[3]}: no pixels")
    assert page.locator("#cards .eccv-query img").count() == 0
    page.locator("#query input, #query textarea").first.fill("5")
    text = show(page, "error")
    assert text.startswith("error: query 5: not an image id of coco_5k")
    assert not page.locator("#cards .eccv-card").count()  # the last query's cards are gone with it
    page.locator("#query input, #query textarea").first.fill("")
    np.save(tmp_path / "scores.npy", np.zeros((len(world.image_ids) - 1, len(world.caption_ids)), np.float32))
    run_b(page, tmp_path / "scores.npy")
    text = show(page, "error")
    assert text.startswith(
        "error: the 'run B files, shown beside A (optional)' box: its scores.npy has shape (19, 100)"
    )
    assert not page.locator("#cards .eccv-card").count()
    (tmp_path / "per_query.json").write_text(json.dumps(runs["model_a"][1]))
    run_b(page, tmp_path / "per_query.json")
    text = show(page, "error")
    assert "per_query.json is a per-query file (evaluate --per-query): numbers only" in text
    run_b(page)
    page.get_by_text("published models (optional)").click()  # a Space whose dataset is a folder reads no model
    page.locator("#published_a input, #published_a textarea").first.fill("me/clip")
    text = show(page, "error")
    assert text.startswith("error: the 'run A: a published model (ORG/MODEL)' box: this Space's ECCV_CAPTION_DATA "
                           "setting names a folder, not the benchmark's Hub dataset repo"), text  # fmt: skip
    page.locator("#published_a input, #published_a textarea").first.fill("")
    page.get_by_text("published models (optional)").click()


def test_report_opens_offline_with_the_results_numbers(browser, runs, data, world, tmp_path):
    """``explore A --vs B --html``: one file; Chromium opens it with every other request refused (none is made);
    each number of run A is the results file's (``evaluate -o``), shown as ``evaluate`` shows it."""
    (files_a, _, results_a), (files_b, _, _) = runs["model_a"], runs["model_b"]
    report = tmp_path / "report.html"
    flags = ["--data", str(data), "--cxc-source", str(world.cxc_dir), "-n", "4", "--n-resamples", "200", "-q"]
    assert main(["explore", str(files_a), "--vs", str(files_b), "--html", str(report), *flags]) == 0
    context = browser.new_context(viewport={"width": 1366, "height": 900}, offline=True)
    context.route("http*://**/*", lambda route: route.abort())  # no network: a request would fail
    page = context.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    try:
        page.goto(report.as_uri())
        page.wait_for_load_state("load")
        assert [url for url in asked if not url.startswith(("file:", "data:"))] == []
        cells = page.evaluate("""() => [...document.querySelectorAll('td[data-value]')].map((td) => [
            td.dataset.metric, td.dataset.direction, td.dataset.run, td.dataset.value, td.innerText])""")
        results = {k: v for k, v in json.loads(results_a.read_text()).items() if k != "provenance"}
        mine = {(m, d): (float(v), text) for m, d, run, v, text in cells if run == "A"}
        assert {(m, d) for m, by_dir in results.items() for d in by_dir} <= set(mine)
        for metric, by_dir in results.items():
            for direction, value in by_dir.items():
                assert mine[(metric, direction)] == (value, shown(metric, value))
        assert page.locator("svg.eccv-chart g[data-metric]").count() > 10 and page.locator(".eccv-card img").count()
        page.screenshot(path=str(screenshot_dir(tmp_path) / "explore_report.png"))
    finally:
        context.close()
