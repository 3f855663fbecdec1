"""The Space app, served for real on 127.0.0.1 with the pinned gradio: gradio_client and headless Chromium.

Chromium is Debian's (`apt-get install chromium`), driven by playwright's Python package through
executable_path (no browser download). The server and the browser stop at the end of the module.
Benchmark sources (CxC CSVs, MSCOCO-FG files) reach the Space the way a user gives them: uploaded in its
"benchmark source files" box, straight from ../shared/data. ``SPACE_SCREENSHOTS=<folder>`` keeps the
browser tests' screenshots there (default: pytest's tmp_path).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import Embeddings
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import evaluate
from eccv_metric.analysis.report import shown
from eccv_metric.benchmarks.names import metric_label
from eccv_metric.hub import space
from tests.fixtures import SHARED

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CXC_FILES = [SHARED / "cxc" / f"{k}_test.csv" for k in ("sts", "sis", "sits")]
FG_FILES = [SHARED / "mscoco_fg" / "MSCOCO_FG_ann.json", SHARED / "mscoco_fg" / "MSCOCO_FG_img_filenames.npy"]
BOXES = ["upload", "pasted", "benchmarks", "metrics", "ks", "partial", "image_embeddings", "caption_embeddings"]
BOXES += ["normalize", "image_ids", "caption_ids", "instances", "sources"]


def load_app():
    spec = importlib.util.spec_from_file_location("space_app", EVALUATE_MODULE_DIR / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return app


@pytest.fixture(scope="module")
def app():
    return load_app()


@pytest.fixture(scope="module")
def server(app):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    demo = app.build()
    demo.launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, show_error=True, **app.LAUNCH
    )
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def client(server):
    from gradio_client import Client

    return Client(server, verbose=False)


@pytest.fixture(scope="module")
def top50_file(top50, tmp_path_factory):
    i2t, t2i = top50
    path = tmp_path_factory.mktemp("space") / "rank50.json"
    path.write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    return path


def call(client, **boxes):
    """The /score endpoint with the boxes named (files through handle_file), as the page sends them."""
    from gradio_client import handle_file

    values = {"pasted": "", "benchmarks": [], "metrics": [], "ks": "1 5 10", "partial": False, "normalize": False}
    values.update(boxes)
    args = []
    for name in BOXES:
        value = values.get(name)
        if name == "sources":
            value = [handle_file(str(p)) for p in value or []]
        elif isinstance(value, Path):
            value = handle_file(str(value))
        args.append(value)
    status, table, curves, raw = client.predict(*args, api_name="/score")
    return status, table, curves, raw


def status_text(status_html: str) -> tuple[str, str]:
    match = re.fullmatch(r'<div class="eccv-(ok|error)" role="\w+">(.*)</div>', status_html, re.S)
    assert match, status_html
    return match.group(1), match.group(2).replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")


def test_requirements_pin_what_ci_tests(app):
    """The Space's requirements.txt pins exactly the gradio the tests run (installed from the `space` extra)."""
    import gradio

    lines = (EVALUATE_MODULE_DIR / "requirements.txt").read_text().split()
    assert f"gradio=={gradio.__version__}" in lines
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert f'"gradio=={gradio.__version__}"' in pyproject
    card = (EVALUATE_MODULE_DIR / "README.md").read_text().split("---")[1]
    assert f"sdk_version: {gradio.__version__}" in card  # the Hub installs the gradio of the card's header


def test_client_scores_a_real_top50_file_like_the_library(client, top50, top50_file):
    i2t, t2i = top50
    metrics = ["eccv_map_at_r", "eccv_r1", "coco_5k_recalls", "cxc_r1"]
    status, table, curves, raw = call(client, upload=top50_file, metrics=metrics)
    kind, text = status_text(status)
    assert kind == "ok" and text.startswith("scored 5,000 i2t and 25,000 t2i ranked lists in "), text
    expected = evaluate(Rankings(i2t=i2t, t2i=t2i), metrics, (1, 5, 10)).means()
    assert json.loads(raw) == expected
    assert table["headers"] == ["metric", "id", "i2t", "t2i", "unit"]  # the registry's label, the id, the values
    assert table["data"] == [
        [metric_label(m), m, shown(m, v["i2t"]), shown(m, v["t2i"]), "percent"] for m, v in expected.items()
    ]
    assert table["data"][0][0] == "COCO 5K R@1"
    points = curves["value"]["data"]  # K as text: the axis shows the Ks given only (issue 35: no 1.4, 1.8 ticks)
    assert sorted(points) == sorted(
        [str(k), 100 * expected[f"coco_5k_r{k}"][d], f"COCO 5K {d}"] for k in (1, 5, 10) for d in ("i2t", "t2i")
    )


def test_client_states_partial_only_when_queries_are_missing(client, top50, top50_file, tmp_path):
    i2t, _ = top50
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"i2t": dict(list(i2t.items())[:10])}))
    kind, text = status_text(call(client, upload=partial, metrics=["coco_5k_r1"])[0])
    assert kind == "error" and "have no ranked list" in text and "or the 'score only the queries given" in text
    assert "\n" not in text
    status, _, _, raw = call(client, upload=partial, metrics=["coco_5k_r1"], partial=True)
    assert "scored 10 i2t ranked lists (partial: means over the queries given only" in status_text(status)[1]
    expected = evaluate(Rankings(i2t=dict(list(i2t.items())[:10])), ["coco_5k_r1"], partial=True).means()
    assert json.loads(raw) == expected
    kind, text = status_text(call(client, upload=top50_file, metrics=["coco_5k_r1"], partial=True)[0])
    assert kind == "ok" and "partial" not in text  # a full upload is never labelled partial
    kind, text = status_text(call(client, upload=partial, pasted=space.EXAMPLE, metrics=["eccv_r1"], partial=True)[0])
    assert kind == "error" and "clear one of them" in text  # the upload never silently wins over pasted text


def test_client_errors_are_one_line_in_the_spaces_words(client, top50_file, tmp_path):
    kind, text = status_text(call(client, upload=top50_file, metrics=["pmrp"])[0])
    assert kind == "error" and f"pass a file in the '{space.LABELS['instances']}' box" in text
    assert "instances_json" not in text
    kind, text = status_text(call(client, pasted=space.EXAMPLE, metrics=["eccv_r1"], ks="1 ²")[0])
    assert kind == "error" and "'²' is not a whole number written in 0-9" in text
    bad = tmp_path / "rankings.JSON"
    bad.write_text('{"i2t": {"184791": [1, 2], "184791": [3]}}')
    kind, text = status_text(call(client, upload=bad, metrics=["eccv_r1"])[0])
    assert kind == "error" and "appears twice" in text
    odd = tmp_path / "scores.bin"
    odd.write_bytes(b"\x00" * 16)
    kind, text = status_text(call(client, upload=odd, metrics=["eccv_r1"])[0])
    assert kind == "error" and "scores.bin is none of .json (a rankings JSON), .trec / .run / .txt / .tsv" in text


def test_upper_case_npy_names_are_npy_and_embeddings_score_like_the_library(client, gt, tmp_path):
    rng = np.random.default_rng(5)
    image = rng.integers(-2, 3, (len(gt.image_ids), 6)).astype(np.float32)
    caption = (image[gt.caption_image] + rng.integers(-2, 3, (len(gt.caption_ids), 6))).astype(np.float32)
    np.save(tmp_path / "img.npy", image)
    np.save(tmp_path / "cap.npy", caption)
    (tmp_path / "img.npy").rename(tmp_path / "IMG.NPY")
    metrics = ["eccv_map_at_r", "coco_5k_medr"]
    status, table, _, raw = call(
        client, image_embeddings=tmp_path / "IMG.NPY", caption_embeddings=tmp_path / "cap.npy", metrics=metrics
    )
    kind, text = status_text(status)
    assert kind == "ok" and text.startswith("scored 5,000 image and 25,000 caption embeddings"), text
    expected = evaluate(Embeddings(image, caption), metrics).means()
    assert json.loads(raw) == expected
    rows = {row[1]: row[2:] for row in table["data"]}  # by id
    medr = expected["coco_5k_medr"]
    assert rows["coco_5k_medr"] == [shown("coco_5k_medr", medr["i2t"]), shown("coco_5k_medr", medr["t2i"]), "rank"]


# -- the browser ------------------------------------------------------------------------------------------------


def screenshot_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("SPACE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser, server):
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(60_000)
    page.goto(server)
    yield page
    page.close()


def pick(page, box: str, *names: str) -> None:
    """Choose names in a multiselect dropdown, as a user does: type the id, then click the option (labelled from
    the registry, the id in brackets)."""
    field = page.locator(f"#{box} input[role=combobox]")
    for name in names:
        field.fill(name)
        page.get_by_role("option", name=re.compile(rf"\({re.escape(name)}\)$")).click()
        page.locator(f"#{box} .token").get_by_text(f"({name})").wait_for()
    field.press("Escape")


def upload(page, box: str, *paths: Path) -> None:
    page.locator(f"#{box} input[type=file]").set_input_files([str(p) for p in paths])
    for path in paths:
        page.locator(f"#{box}").get_by_text(re.compile(re.escape(path.stem))).first.wait_for()  # shown as name


def open_section(page, title: str) -> None:
    page.get_by_text(title).click()


def score_and_read(page, expect: str) -> tuple[str, dict[str, list[str]]]:
    page.get_by_role("button", name="Score", exact=True).click()
    page.locator("#status").get_by_text(re.compile(expect)).wait_for(timeout=600_000)  # FG: ~30 s, more when busy
    status = page.locator("#status").inner_text().strip()
    rows = page.locator("#results [role=row]")  # gradio's Dataframe is an ARIA grid
    texts = [[c.strip() for c in rows.nth(i).locator("[role=gridcell]").all_inner_texts()] for i in range(rows.count())]
    return status, {row[1]: [row[0], *row[2:]] for row in texts if len(row) > 1}  # by id: [label, values, unit]


def expected_cells(means: dict, directions: list[str]) -> dict[str, list[str]]:
    units = {"fraction": "percent", "rank": "rank", "correlation": "rho"}
    from eccv_metric.analysis.report import scale_of

    return {
        m: [metric_label(m)] + [shown(m, v[d]) if d in v else "" for d in directions] + [units[scale_of(m)]]
        for m, v in means.items()
    }


@pytest.mark.browser
@pytest.mark.slow
def test_browser_5k_rankings_example_reset_and_full_upload(page, app, top50, top50_file, tmp_path):
    """The example (partial), then a real top-50 file: the upload takes the example's place (its text, its
    benchmarks and metrics, its partial tick go back to their defaults), so the file is scored with the defaults
    for its lists, as full; numbers as the library's, R@K curves drawn. Settings the user changed after loading
    the example are the user's and stay."""
    example = json.loads(app.EXAMPLE)
    lists = {d: {int(k): v for k, v in example[d].items()} for d in ("i2t", "t2i")}
    page.get_by_role("button", name="Load the small example").click()
    page.wait_for_function("document.querySelector('#pasted textarea').value.includes('184791')")
    assert page.locator("#partial input").is_checked()
    status, cells = score_and_read(page, "scored 2 i2t and 2 t2i ranked lists")
    assert "partial" in status
    means = evaluate(Rankings(**lists), space.EXAMPLE_METRICS, partial=True).means()
    assert cells == expected_cells(means, ["i2t", "t2i"])

    upload(page, "upload", top50_file)  # the user's own input: the example's settings leave with its text
    page.wait_for_function("document.querySelector('#pasted textarea').value === ''")
    page.wait_for_function("!document.querySelector('#partial input').checked")
    page.locator("#benchmarks .token").first.wait_for(state="detached")
    page.locator("#metrics .token").first.wait_for(state="detached")
    status, cells = score_and_read(page, "scored 5,000 i2t and 25,000 t2i ranked lists")
    assert "partial" not in status
    i2t, t2i = top50
    means = evaluate(Rankings(i2t=i2t, t2i=t2i)).means()  # the defaults for image-caption lists
    assert cells == expected_cells(means, ["i2t", "t2i"])
    page.screenshot(path=str(screenshot_dir(tmp_path) / "space_5k.png"), full_page=True)

    page.get_by_role("button", name="Load the small example").click()  # the example clears the upload
    page.locator("#upload").get_by_text("rank50.json").wait_for(state="detached")
    page.locator("#benchmarks .token").first.wait_for()
    pick(page, "benchmarks", "cxc")  # changed by hand: the user's own from now on
    upload(page, "upload", top50_file)
    page.wait_for_function("document.querySelector('#pasted textarea').value === ''")  # two inputs never
    assert page.locator("#partial input").is_checked()
    page.locator("#benchmarks .token").get_by_text("(cxc)").wait_for()
    page.locator("#benchmarks .token").get_by_text("(eccv)").wait_for()


@pytest.mark.browser
def test_browser_the_button_and_the_result_are_in_view_at_1366x900(browser, server, tmp_path):
    """At 1366x900 (a common laptop screen), after "Load the small example", Score and the whole result (status
    and table) are in view without scrolling; the table shows the registry's labels, each metric's id beside
    its numbers, and its search box finds a metric by its id."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    try:
        page.set_default_timeout(60_000)
        page.goto(server)
        page.get_by_role("button", name="Load the small example").click()
        page.wait_for_function("document.querySelector('#pasted textarea').value.includes('184791')")
        score = page.locator("#score")
        box = score.bounding_box()
        assert box["y"] + box["height"] <= 900, box  # the button is in view
        score.click(no_wait_after=True)
        page.locator("#status").get_by_text(re.compile("scored 2 i2t and 2 t2i")).wait_for()
        page.locator("#results [role=row]").nth(len(space.EXAMPLE_METRICS) + 2).wait_for()
        assert page.evaluate("window.scrollY") == 0
        for part in ("#status", "#results"):
            box = page.locator(part).bounding_box()
            assert 0 <= box["y"] and box["y"] + box["height"] <= 900, (part, box)
        labels = page.locator("#results [role=gridcell][data-col='0']").all_inner_texts()
        ids = page.locator("#results [role=gridcell][data-col='1']").all_inner_texts()
        assert "COCO 5K R@1" in labels and "ECCV Caption mAP@R" in labels
        assert "coco_5k_r1" in ids and "eccv_map_at_r" in ids
        page.screenshot(path=str(screenshot_dir(tmp_path) / "space_1366x900.png"))
        page.locator("#results input[placeholder^='Search']").fill("eccv_map_at_r")
        page.wait_for_function("document.querySelectorAll('#results [role=row]').length === 2")
        assert page.locator("#results [role=gridcell]").first.inner_text().strip() == "ECCV Caption mAP@R"
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_browser_cxc_t2t_from_caption_embeddings(page, gt, tmp_path):
    rng = np.random.default_rng(21)
    base = rng.standard_normal((len(gt.image_ids), 16)).astype(np.float32)
    caption = (base[gt.caption_image] + rng.standard_normal((len(gt.caption_ids), 16))).astype(np.float32)
    np.save(tmp_path / "captions.npy", caption)
    pick(page, "benchmarks", "cxc_t2t", "cxc_sts")  # fills the metrics box with their defaults
    page.locator("#metrics .token").get_by_text("(cxc_sts_spearman)").wait_for()
    pick(page, "metrics", "cxc_t2t_medr")
    open_section(page, "embeddings (instead of rankings or a matrix)")
    upload(page, "caption_emb", tmp_path / "captions.npy")
    open_section(page, "optional files: ids, COCO instances, benchmark sources")
    upload(page, "sources", *CXC_FILES)
    status, cells = score_and_read(page, "scored 25,000 caption embeddings")
    metrics = ["cxc_t2t_recalls", "cxc_sts_spearman", "cxc_t2t_medr"]
    means = evaluate(Embeddings(None, caption), metrics, resources=Resources(cxc_source=SHARED / "cxc")).means()
    assert set(means) == {"cxc_t2t_r1", "cxc_t2t_r5", "cxc_t2t_r10", "cxc_t2t_medr", "cxc_sts_spearman",
                          "cxc_sts_spearman_std"}  # fmt: skip
    assert cells == expected_cells(means, ["t2t"])
    assert cells["cxc_t2t_medr"][-1] == "rank" and cells["cxc_sts_spearman"][-1] == "rho"
    page.screenshot(path=str(screenshot_dir(tmp_path) / "space_cxc_t2t.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.slow
def test_browser_mscoco_fg_from_embeddings_with_uploaded_sources(page, tmp_path):
    resources = Resources(fg_source=SHARED / "mscoco_fg")
    fg = resources.collection("mscoco_fg")
    rng = np.random.default_rng(22)
    image = rng.standard_normal((len(fg.images), 16)).astype(np.float32)
    caption = (image[fg.caption_image] + rng.standard_normal((len(fg.captions), 16))).astype(np.float32)
    np.save(tmp_path / "fg_images.npy", image)
    np.save(tmp_path / "fg_captions.npy", caption)
    pick(page, "benchmarks", "mscoco_fg")
    open_section(page, "embeddings (instead of rankings or a matrix)")
    upload(page, "image_emb", tmp_path / "fg_images.npy")
    upload(page, "caption_emb", tmp_path / "fg_captions.npy")
    open_section(page, "optional files: ids, COCO instances, benchmark sources")
    upload(page, "sources", *FG_FILES)
    status, cells = score_and_read(page, "scored 31,244 image and 25,000 caption embeddings")
    means = evaluate(Embeddings(image, caption), ["mscoco_fg_recalls"], resources=resources).means()
    assert cells == expected_cells(means, ["i2t", "t2i"])
    page.screenshot(path=str(screenshot_dir(tmp_path) / "space_mscoco_fg.png"), full_page=True)


@pytest.mark.browser
def test_browser_error_is_one_styled_line(page):
    page.get_by_role("button", name="Load the small example").click()
    page.wait_for_function("document.querySelector('#pasted textarea').value.includes('184791')")
    page.locator("#ks input, #ks textarea").first.fill("1 ²")
    page.get_by_role("button", name="Score", exact=True).click()
    alert = page.locator("#status [role=alert]")
    alert.wait_for()
    text = alert.inner_text().strip()
    assert text.startswith("error: Ks: '²' is not a whole number") and "\n" not in text
    color = alert.evaluate("e => getComputedStyle(e).borderLeftColor")
    assert color == "rgb(221, 51, 51)", color  # the error box's style, not plain text


# -- the handler under fuzz ----------------------------------------------------------------------------------------


def test_handler_fuzz_under_a_memory_cap(tmp_path):
    """Seeded hostile inputs straight to the handler in a child process capped at 3 GB of address space:
    every answer is the library's table or one error line, never a traceback, never an internal error."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.space_fuzz", str(tmp_path), "0", "120"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["cases"] == 120 and summary["ok"] >= 10 and summary["errors"] >= 40, summary


if __name__ == "__main__":  # serve the app by hand: python tests/integration/test_space.py
    sys.exit(load_app().build().launch(**load_app().LAUNCH))
