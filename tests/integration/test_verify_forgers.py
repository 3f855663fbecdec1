"""What a forger can still change, and the Hub failing mid-way (the review of issue 61), on the fake Hub holding the
two tiny models tests/integration/published_world.py publishes with their evidence: a run re-labelled to another
model is never recomputed (the details' seal, the model the evidence records); a Hub read failing while a row's
benchmark is read makes it "not checked", never a verdict, and nothing of it is kept; ``--significance`` compares
on the benchmark's own ground truth at its revision. In-process (``main([...])``, the fake Hub in a thread)."""

from __future__ import annotations

import json
from collections import OrderedDict

import pytest
from huggingface_hub import HfFileSystem

from eccv_metric.analysis.compare import compare
from eccv_metric.cli.main import main
from eccv_metric.evidence.truth import build_resources
from tests.integration.published_world import as_another
from tests.integration.published_world import board_rows
from tests.integration.published_world import forger
from tests.integration.published_world import pushed_hub
from tests.integration.published_world import tree_of


@pytest.fixture()
def hub(published_runs, tmp_path, monkeypatch, capsys):
    """me/world, me/clip and me/blip with their runs pushed; the verify cache and the ground truth read here alone
    (the process's ground truth cache keyed by the same repo text would hold an earlier test's)."""
    import eccv_metric.benchmarks.resources as resources

    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(resources, "_CACHE", OrderedDict())
    with pushed_hub(published_runs, tmp_path, monkeypatch) as fake:
        capsys.readouterr()
        yield fake


def verify(capsys, model: str) -> tuple[int, list[str], str]:
    code = main(["verify", "--from-hub", model, "--dataset-repo", "me/world", "-q"])
    printed = capsys.readouterr()
    return code, printed.out.splitlines(), printed.err


def test_a_relabelled_run_is_never_recomputed(hub, capsys):
    """me/clip's details copied to spam/twin with results.json's model and model repo changed and its seal left was
    "12 numbers: 12 equal" (the Hub side checked no seal, the manifest named no model). Now each relabelling is not
    recomputable, one line why: the seal broken; sealed again, evidence recording another model; evidence recording
    none (written before it did); details never sealed. (A forger who rewrites the manifest too is recomputed: the
    leaderboard flags the copy as shared, tests/integration/test_verify_hub.py, and --reencode tells the model.)"""
    clip, details = dict(tree_of(hub, "me/clip")), dict(tree_of(hub, "me/details_me__clip"))
    summary = json.loads(details["results.json"])
    relabel = {**summary, "model_repo": "spam/twin", "provenance": {**summary["provenance"], "model": "hf:spam/twin"}}
    unsealed = {k: v for k, v in summary.items() if k != "seal"} | {"model_repo": "spam/unsealed"}
    old_run = {
        k: v for k, v in json.loads(details["evidence/evidence.json"])["run"].items() if not k.startswith("model")
    }
    cases = {
        "spam/twin": ({**details, "results.json": json.dumps(relabel).encode()},
                      "'s results.json was changed after push-results wrote it (its seal no longer matches"),
        "spam/twin2": (as_another(details, "spam/twin2"),
                       ": the evidence is another run's: its model hf:(local path) (the results name hf:spam/twin2)"),
        "spam/old": (as_another(details, "spam/old", {"run": old_run}, model=False),
                     ": the evidence records no model (written by an earlier eccv-caption-hf)"),
        "spam/unsealed": ({**details, "results.json": json.dumps(unsealed).encode()},
                          "'s results.json records no seal (published by an earlier eccv-caption-hf)"),
    }  # fmt: skip
    for repo, (tree, words) in cases.items():
        forger(hub, repo, clip, tree)
        code, lines, err = verify(capsys, repo)
        assert code == 1 and lines[-1] == "12 numbers: 12 not recomputable", (repo, lines, err)
        assert all(words in line for line in lines[1:-1]), (repo, words, lines[1])
    assert verify(capsys, "me/clip")[1][-1] == "12 numbers: 12 equal"


def test_the_hub_failing_mid_way_is_not_checked_and_never_kept(hub, published_runs, capsys, tmp_path):
    """The Hub failing while a row's benchmark was listed (its ground truth pinned: HfFileSystem's error became a
    plain EvaluationError) made the row "not recomputable", a verdict on its evidence. Now the rows are "not
    checked", the Hub's line their note, and nothing is kept: once the Hub answers, the same leaderboard scores every
    row again, and its --significance lines compare on the benchmark's own ground truth. verify --from-hub with a
    Parquet file of the benchmark failing is one error line (it was a row per number; tests/unit/test_evidence.py: a
    read failing while the evidence is scored again)."""
    hub.failing["me/world/tree/"] = 403  # the benchmark's folders, listed as its ground truth is pinned
    assert main(["leaderboard", "--from-hub", "me/world"]) == 0
    printed = capsys.readouterr().out
    assert board_rows(printed) == {"me/clip": "not checked", "me/blip": "not checked"}, printed
    (note,) = [line for line in printed.splitlines() if line.startswith("note: me/clip: 12 numbers not checked: ")]
    assert note.endswith(": cannot read the Hub dataset repo (HfHubHTTPError: 403 Forbidden: fake_hub: failing with "
                         "403.)"), note  # fmt: skip
    assert not list((tmp_path / "cache").rglob("*.json"))  # no verdict kept
    hub.failing = {"data/images/test-": 403}  # a Parquet file of the benchmark
    HfFileSystem.clear_instance_cache()  # the listings it keeps: a new process has none
    code, lines, err = verify(capsys, "me/clip")
    assert code == 2 and lines == [] and err.count("\n") == 1, (lines, err)
    assert err.startswith("error: me/world@") and "cannot read data/images from the Hub dataset repo" in err, err
    hub.failing.clear()
    args = ["leaderboard", "--from-hub", "me/world", "--significance", "--n-resamples", "50", "--seed", "3"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert board_rows(printed) == {"me/clip": "recomputed", "me/blip": "recomputed"}, printed
    assert "kept from an earlier run" not in printed
    # --significance called compare without the benchmark's ground truth: on a benchmark other than the package's 5K
    # split every pair was "not compared (... id(s) are not queries of this metric)". It compares on the benchmark
    # at the revision the details were scored on: what compare gives on the runs' own files and the build folder.
    (line,) = [x for x in printed.splitlines() if x.startswith("  me/blip vs me/clip: ")]
    per_query = [json.loads(open(published_runs[name][1]).read()) for name in ("blip", "clip")]
    pair = [{"eccv_map_at_r": p["eccv_map_at_r"]} for p in per_query]
    for row in compare(*pair, 50, 0.95, 3, resources=build_resources(published_runs["data"])):
        sign = "+" if row["diff"] >= 0 else "-"
        assert f"{row['direction']} {sign}{abs(100 * row['diff']):.2f} " in line and f"p={row['p_value']:.4f}" in line
    assert "not compared" not in printed, printed


def test_compare_from_hub_reads_the_benchmarks_own_ground_truth(hub, published_runs, capsys, tmp_path):
    """``compare --from-hub`` with no ground-truth flag compared on the package's 5K split: on another benchmark
    every metric was refused ("id(s) are not queries of this metric"). It reads the benchmark at the revision A's
    details were scored on, and gives what ``compare`` gives on the runs' own files and the build folder."""
    out = tmp_path / "hub.json"
    args = ["compare", "--from-hub", "me/blip", "me/clip", "--dataset-repo", "me/world", "--n-resamples", "50"]
    assert main([*args, "--seed", "3", "-o", str(out)]) == 0, capsys.readouterr()
    per_query = [json.loads(open(published_runs[name][1]).read()) for name in ("blip", "clip")]
    local = compare(*per_query, 50, 0.95, 3, resources=build_resources(published_runs["data"]))
    published = json.loads(out.read_text())
    assert [(r["metric"], r["direction"]) for r in published] == [(r["metric"], r["direction"]) for r in local]
    for theirs, ours in zip(published, local, strict=True):
        assert theirs["p_value"] == ours["p_value"] and abs(theirs["diff"] - ours["diff"]) < 1e-12
