"""Reading published results back from the fake Hub: ``leaderboard --from-hub`` over every task (table, CSV,
Markdown, ``--significance``), ``compare --from-hub`` against ``compare`` on the local files, values the Hub serves
that cannot be numbers, and MTEB's runs published like any results."""

from __future__ import annotations

import csv
import io
import json

import yaml
from huggingface_hub import CommitOperationAdd
from huggingface_hub import HfApi

from eccv_metric.cli.main import main
from eccv_metric.hub.details import parse_tree_url
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.published import read_published
from tests.integration import hub_world
from tests.integration.hub_world import add_model
from tests.integration.hub_world import cli
from tests.integration.hub_world import one_line
from tests.integration.hub_world import scaled
from tests.integration.hub_world import sealed
from tests.integration.hub_world import write_run

bench, run, hub, here = hub_world.bench, hub_world.run, hub_world.hub, hub_world.here  # the fixtures


def rows_of(stdout: str, *prefixes: str) -> dict[str, list[str]]:
    return {line[:44].strip(): line[44:].split() for line in stdout.splitlines() if line.startswith(prefixes)}


def publish_two(hub, run, tmp_path) -> tuple[tuple, tuple]:
    """me/clip (main) and other/clip-ft (a pull request), each with its details; clip-ft's values are 0.9 of clip's."""
    add_model(hub, "other/clip-ft")
    a = write_run(tmp_path / "a", run)
    b = write_run(tmp_path / "b", scaled(run, 0.9), model="hf:other/clip-ft")
    assert cli(hub.env, "push-results", str(a[0]), "--per-query", str(a[1]), "--direct").returncode == 0
    done = cli(hub.env, "push-results", str(b[0]), "--per-query", str(b[1]), token="hf_other")
    assert done.returncode == 0, done.stderr  # other's pull request on its own repo; details in other/...
    return a, b


def test_leaderboard_from_hub_every_model_on_every_task(hub, run, tmp_path):
    numbers = run[0]
    publish_two(hub, run, tmp_path)
    out_csv, out_md = tmp_path / "board.csv", tmp_path / "board.md"
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", "-o", str(out_csv), token=None)
    assert done.returncode == 0, done.stderr
    rows = rows_of(done.stdout, "me/clip", "other/")
    assert set(rows) == {"me/clip", "other/clip-ft (PR #1)"}
    header = next(line for line in done.stdout.splitlines() if line.startswith("model"))
    assert header.split()[1:4] == ["mAP@R", "R-P", "ECCV"]  # the same columns as --with
    want = [f"{50 * (numbers[m]['i2t'] + numbers[m]['t2i']):.2f}" for m in ("eccv_map_at_r", "eccv_rprecision")]
    assert rows["me/clip"][:2] == want
    assert (
        "me/eccv-caption on the Hub: 2 models or pull requests on its leaderboard, each read for the 12 tasks of its "
        "eval.yaml; 2 shown" in done.stdout
    )
    assert [p for m, p, _ in hub.log if "/leaderboard" in p] == [
        "/api/datasets/me/eccv-caption/leaderboard?base_model=false"
    ]
    table = {r["model"]: r for r in csv.DictReader(io.StringIO(out_csv.read_text()))}
    assert len(table) == 27 and table["me/clip"]["eccv_map_at_r_i2t"] == f"{100 * numbers['eccv_map_at_r']['i2t']:.2f}"
    assert table["me/clip"]["pmrp_i2t"] == "" and table["VSE0"]["eccv_map_at_r_i2t"] == "14.92"  # the appendix
    assert list(table["me/clip"])[:3] == ["model", "mAP@R", "R-P"]
    md = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", "-o", str(out_md), token=None)
    assert md.returncode == 0 and out_md.read_text().startswith("| model | mAP@R | R-P |"), md.stderr
    one_line(
        cli(hub.env, "leaderboard", "-o", str(tmp_path / "b.txt")),
        f"--output {tmp_path / 'b.txt'}: name a .csv",
        "follows the name)",
    )


def test_the_leaderboard_is_read_as_documented_and_its_limit_said(hub, run, tmp_path):
    """Issue 61: the leaderboard was asked once per task with a task_id parameter no document names. It is read as
    huggingface_hub reads it (base_model only); a model on none of the leaderboard it serves is not found, and the
    output says so."""
    numbers, per_query = run
    t2i = ({m: {"t2i": by["t2i"]} for m, by in numbers.items()}, {m: {"t2i": by["t2i"]} for m, by in per_query.items()})
    res = write_run(tmp_path / "t2i", t2i)
    assert cli(hub.env, "push-results", str(res[0]), "--per-query", str(res[1]), "--direct").returncode == 0
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", token=None)
    assert done.returncode == 0, done.stderr
    assert (
        "0 models or pull requests on its leaderboard, each read for the 12 tasks of its eval.yaml; 0 shown"
        in done.stdout
    )
    assert "note: the Hub's leaderboard API names no task (hub docs, 'Accessing Benchmark Leaderboard Data'): a " \
        "model absent from the leaderboard it serves (one that published other tasks only) is not listed" \
        in done.stdout  # fmt: skip
    assert [p for m, p, _ in hub.log if "/leaderboard" in p] == [
        "/api/datasets/me/eccv-caption/leaderboard?base_model=false"
    ]


def test_values_out_of_range_or_not_finite_are_left_out_with_a_note(hub, run, tmp_path):
    """Issue 53: another repo's 250 % and NaN were shown as 245.00 and nan, ranked first, with no note."""
    publish_two(hub, run, tmp_path)
    bad = add_model(hub, "spam/bad")
    (bad / ".eval_results").mkdir()
    for task, value in (("eccv_map_at_r_i2t", 250.0), ("eccv_map_at_r_t2i", float("nan")), ("eccv_r1_i2t", 40.0),
                        ("eccv_r1_t2i", 20.0)):  # fmt: skip
        item = {"dataset": {"id": "me/eccv-caption", "task_id": task}, "value": value}
        (bad / ".eval_results" / f"{task}.yaml").write_text(yaml.safe_dump([item]))
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", token=None)
    assert done.returncode == 0, done.stderr
    assert "note: left out spam/bad's eccv_map_at_r_i2t from .eval_results/eccv_map_at_r_i2t.yaml: 250 is outside " \
        "[0, 100] (percent (0-100))" in done.stdout  # fmt: skip
    assert "note: left out spam/bad's .eval_results/eccv_map_at_r_t2i.yaml: the Hub found it invalid (Invalid input: " \
        "expected number, received nan at [0].value)" in done.stdout  # fmt: skip
    rows = rows_of(done.stdout, "spam/bad")
    assert rows["spam/bad"][:3] == ["-", "-", "30.00"]  # no mAP@R at all; its ECCV R@1 is a number
    order = [line.split()[0] for line in done.stdout.splitlines() if line.startswith(("me/", "other/", "spam/"))]
    assert order.index("spam/bad") > order.index("me/clip")  # never ranked first by a value it cannot have


def test_significance_and_compare_from_hub_equal_compare_on_the_local_files(hub, run, tmp_path):
    a, b = publish_two(hub, run, tmp_path)
    args = ["--n-resamples", "200", "--seed", "3"]
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", "--significance", *args, token=None)
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("  me/clip vs other/clip-ft (PR #1): ")]
    assert "i2t +" in line and "t2i +" in line and "p=0.0050" in line  # 0.9 of every value: as small as 200 allow
    hub_json, local_json = tmp_path / "hub.json", tmp_path / "local.json"
    published = cli(hub.env, "compare", "--from-hub", "me/clip", "other/clip-ft@refs/pr/1", *args, "-o", str(hub_json))
    assert published.returncode == 0, published.stderr
    local = cli(hub.env, "compare", str(a[1]), str(b[1]), *args, "-o", str(local_json))
    assert local.returncode == 0, local.stderr
    assert json.loads(hub_json.read_text()) == json.loads(local_json.read_text())
    one_line(
        cli(hub.env, "compare", "--from-hub", "me/clip", "other/clip-ft", token=None),
        "compare --from-hub other/clip-ft: give --dataset-repo, the benchmark to compare on (other/clip-ft has eval "
        "results with details for: none)",
        "",
    )


def test_numbers_without_details_and_datasets_without_a_leaderboard(hub, run, tmp_path):
    res = write_run(tmp_path / "plain", run)
    assert cli(hub.env, "push-results", str(res[0]), "--no-details", "--direct").returncode == 0
    one_line(
        cli(hub.env, "compare", "--from-hub", "me/clip", "me/clip", "--dataset-repo", "me/eccv-caption"),
        "compare --from-hub me/clip: its eval results for me/eccv-caption point at no details",
        "compare local --per-query files instead",
    )
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", "--significance", "--n-resamples", "10")
    assert done.returncode == 0 and "1 model(s) published details: nothing to compare" not in done.stdout
    assert "0 model(s) published details: nothing to compare" in done.stdout, done.stdout
    one_line(
        cli(hub.env, "leaderboard", "--from-hub", "me/plain"),
        "leaderboard --from-hub me/plain: me/plain has no eval.yaml (not a benchmark `eccv-caption build` wrote)",
        "then run the leaderboard again",
    )
    hub.store.allow_listed.clear()
    one_line(
        cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption"),
        "leaderboard --from-hub me/eccv-caption: the Hub keeps no leaderboard for me/eccv-caption (it keeps them for "
        "benchmarks on its allow-list, tagged benchmark:official)",
        "or rank your files with --with",
    )
    one_line(
        cli(hub.env, "leaderboard", "--from-hub", "me/missing"),
        "leaderboard --from-hub me/missing failed: the dataset me/missing was not found on the Hub",
        "check the repo id, then run the leaderboard again",
    )
    one_line(cli(hub.env, "leaderboard", "--from-hub", "eccv"), "--from-hub 'eccv' is not a Hub repo id", "")
    one_line(cli(hub.env, "leaderboard", "--significance"), "--significance compares published details", "")


def test_mteb_runs_are_published_like_any_results(hub, run, tmp_path):
    """MTEB's predictions scored by evaluate --run: producer mteb, its model, its task names mapped onto eval.yaml's."""
    numbers, per_query = run
    tasks = {"ECCVCaption_eccv-i2t": ["eccv-i2t"]}
    mteb = {"date": "2026-08-25T10:30:00Z", "producer": "mteb", "input": "mteb_predictions", "model": "mteb:me/clip"}
    mteb["mteb"] = {"model_name": "me/clip", "revision": "abc", "tasks": tasks}
    eccv = {m: {"i2t": numbers[m]["i2t"]} for m in ("eccv_map_at_r", "eccv_rprecision", "eccv_r1")}
    eccv_pq = {m: {"i2t": per_query[m]["i2t"]} for m in eccv}
    res = write_run(tmp_path / "mteb", (eccv, eccv_pq))
    raw = json.loads(res[0].read_text())
    raw["provenance"] = {**mteb, "package": "eccv-caption-hf 0.2.0"}
    res[0].write_text(json.dumps(sealed(raw, eccv_pq)))
    one_line(
        cli(hub.env, "push-results", str(res[0]), "--per-query", str(res[1])),
        f"{res[0]} was scored on MTEB's predictions: give --dataset-repo, the Hub dataset repo",
        "(its eval.yaml registers the tasks)",
    )
    done = cli(hub.env, "push-results", str(res[0]), "--per-query", str(res[1]), "--dataset-repo", "me/eccv-caption")
    assert done.returncode == 0, done.stderr
    model = hub.store.commits[-1]
    tasks = {yaml.safe_load(data)[0]["dataset"]["task_id"]: yaml.safe_load(data)[0] for data in model["files"].values()}
    assert set(tasks) == {"eccv_map_at_r_i2t", "eccv_rprecision_i2t", "eccv_r1_i2t"}
    item = tasks["eccv_map_at_r_i2t"]
    assert "revision" not in item["dataset"]  # MTEB's predictions name no dataset revision
    assert item["notes"] == "ranked by MTEB (trec_eval ties)"
    assert item["source"]["name"] == "Per-query details (MTEB, eccv-caption-hf 0.2.0)"
    assert "MTEB's predictions scored by eccv-caption-hf 0.2.0" in model["description"]


def pushed_here(hub, run, tmp_path, capsys) -> dict:
    """me/clip's run pushed to main in this process, with its details; the entries of its files, by task id."""
    res, pq = write_run(tmp_path / "a", run)
    assert main(["push-results", str(res), "--per-query", str(pq), "--direct", "--quiet"]) == 0, capsys.readouterr()
    capsys.readouterr()
    files = {p.name: yaml.safe_load(p.read_text())[0] for p in (hub.model / ".eval_results").iterdir()}
    return {item["dataset"]["task_id"]: item for item in files.values()}


def test_what_the_hub_serves_that_is_no_number_is_a_note(here, bench, run, tmp_path, capsys):
    """Issue 61: a hand-added .eval_results/zz-dup.yaml (60.0, no source) beside the pushed file ranked the model
    first, its value shown with the pushed entry's details; an invalid file the Hub accepts and reports when read
    (PR #4924's shape) had never been met. Both entries are kept, neither shown; the invalid file is a note."""
    pushed = pushed_here(here, run, tmp_path, capsys)
    task = "eccv_map_at_r_i2t"
    dup = {"dataset": {"id": "me/eccv-caption", "task_id": task}, "value": 60.0}
    bad = {**pushed["eccv_r1_t2i"], "source": {"url": None}}  # the Hub takes it, and reports it when read
    by_hand = [CommitOperationAdd(f".eval_results/zz-{name}.yaml", yaml.safe_dump([item]).encode())
               for name, item in (("dup", dup), ("bad", bad))]  # fmt: skip
    HfApi().create_commit("me/clip", by_hand, commit_message="by hand")
    tasks = {t: BY_ID[t] for t in task_ids((bench / "eval.yaml").read_text())}
    notes: list[str] = []
    published = read_published(HfApi(), "me/clip", None, "me/eccv-caption", tasks, notes.append)
    own = f".eval_results/me--eccv-caption--{task}.yaml"
    commit = parse_tree_url(pushed[task]["source"]["url"])
    assert [(e.file, e.value, e.details) for e in published.by_task()[task]] == [
        (own, pushed[task]["value"] / 100, commit), (".eval_results/zz-dup.yaml", 0.6, None)]  # fmt: skip
    assert "i2t" not in published.results["eccv_map_at_r"] and published.details_commit() is None
    assert len(published.by_task()["eccv_r1_t2i"]) == 1  # the invalid file's entry is none
    assert notes == [
        "note: left out me/clip's .eval_results/zz-bad.yaml: the Hub found it invalid (Invalid input: expected "
        "string, received null at [0].source.url)",
        f"note: me/clip has 2 entries for {task} ({own}: {pushed[task]['value']:g}, .eval_results/zz-dup.yaml: "
        "60): neither is shown until one is removed",
    ]
    assert main(["leaderboard", "--from-hub", "me/eccv-caption"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("me/clip "))
    assert row.split()[1] == "-" and notes[1] in out  # no mAP@R average: never ranked by the duplicate's 60


def test_borrowed_details_are_told(here, bench, run, tmp_path, capsys):
    """Issue 61: a repo publishing every task at +5 points with source.url pointing at another model's details was
    ranked above it, and compare --from-hub reported +0.00, p=1.0. The details' results.json names their model."""
    pushed = pushed_here(here, run, tmp_path, capsys)
    copy = add_model(here, "spam/copy") / ".eval_results"
    copy.mkdir()
    for task, item in pushed.items():
        (copy / f"{task}.yaml").write_text(yaml.safe_dump([{**item, "value": min(item["value"] + 5, 100)}]))
    tasks = {t: BY_ID[t] for t in task_ids((bench / "eval.yaml").read_text())}
    notes: list[str] = []
    published = read_published(HfApi(), "spam/copy", None, "me/eccv-caption", tasks, notes.append)
    (commit,) = published.details_of
    assert published.details_of[commit] == "me/clip" and not published.own(commit)
    assert published.details_commit() is None and notes == [
        f"note: spam/copy: 12 entries point at the details of me/clip ({commit[0]}@{commit[1][:12]}), not of "
        "spam/copy: not its evidence"
    ]
    mine = read_published(HfApi(), "me/clip", None, "me/eccv-caption", tasks, notes.append)
    assert mine.details_commit() == commit and len(notes) == 1
    assert main(["compare", "--from-hub", "spam/copy", "me/clip", "--dataset-repo", "me/eccv-caption"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: compare --from-hub spam/copy: its eval results for me/eccv-caption point at "
                          f"details that are not its own ({commit[0]}@{commit[1][:12]} names me/clip)")  # fmt: skip
