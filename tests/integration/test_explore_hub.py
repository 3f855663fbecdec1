"""A published run looked at: ``explore --from-hub`` and the Space's published-model boxes on the fake Hub, over the
two tiny models tests/integration/published_world.py publishes with their evidence (the runs verify --from-hub
recomputes: tests/integration/test_verify_hub.py).

The published run's rankings are its evidence's (the same items as the evidence folder its run wrote, read locally);
its per-query values are those its run's ``--per-query`` file holds, query for query; the query sets' counts are
filters over those files written here. What has no rankings to show is one line: a model with no entries, details
with per-query values only, evidence of another item order, no network. In-process (``main([...])`` and
``hub.browse.browse``; the fake Hub in a thread)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from eccv_metric.cli.main import main
from eccv_metric.evidence import load_evidence
from eccv_metric.evidence.truth import run_resources
from eccv_metric.explore import read_run
from eccv_metric.explore import table_of
from eccv_metric.hub import browse as browse_module
from eccv_metric.hub.explore_hub import published_run
from eccv_metric.hub.space_words import DATA_ENV
from tests.docs_blocks import DOCS
from tests.docs_blocks import bash_lines
from tests.docs_blocks import cli_calls
from tests.integration.hub_client import offline
from tests.integration.published_world import forge_manifest
from tests.integration.published_world import npy
from tests.integration.published_world import npy_bytes
from tests.integration.published_world import pushed_hub
from tests.integration.published_world import republish
from tests.integration.published_world import tree_of

EMB = "evidence/coco_5k/image_embeddings.npy"
HUB = ["--dataset-repo", "me/world", "-q"]


@pytest.fixture()
def hub(published_runs, tmp_path, monkeypatch, capsys):
    with pushed_hub(published_runs, tmp_path, monkeypatch) as fake:
        capsys.readouterr()
        yield fake


def values_of(pq: dict, metric: str, direction: str) -> dict[int, float]:
    entry = pq[metric][direction]
    return dict(zip(entry["query_ids"], entry["values"], strict=True))


def test_a_published_run_is_its_evidence_with_its_per_query_values(hub, published_runs, capsys, monkeypatch, tmp_path):
    """me/clip and me/blip from the Hub: each table's items and marks are those of the evidence folder its run wrote
    (read locally, on the build's ground truth); every value its --per-query file holds is the table's; the sets
    of explore --json are filters over the two files; the retrievals page's --from-hub line runs as written."""
    pq = {name: json.loads(open(published_runs[name][1]).read()) for name in ("clip", "blip")}
    runs = {name: published_run(f"me/{name}", "me/world", log=lambda _: None) for name in ("clip", "blip")}
    resources = runs["clip"].resources
    assert resources is runs["blip"].resources and "me/clip on me/world@" in runs["clip"].about
    local = read_run(published_runs["clip"][2])
    local_res = run_resources(load_evidence(published_runs["clip"][2]), published_runs["data"])
    checked = 0
    for direction in ("i2t", "t2i"):
        table, there = (
            table_of(runs["clip"], "eccv", direction, resources),
            table_of(local, "eccv", direction, local_res),
        )
        assert np.array_equal(table.items, there.items) and table.marks.keys() == there.marks.keys()
        assert all(np.array_equal(table.marks[m], there.marks[m]) for m in table.marks)
        for name in ("clip", "blip"):
            table = table_of(runs[name], "eccv", direction, resources)
            for metric in pq[name]:
                if metric in table.per_query:
                    entry = table.per_query[metric]
                    assert dict(zip(entry.query_ids.tolist(), entry.values.tolist(), strict=True)) == values_of(
                        pq[name], metric, direction)  # fmt: skip
                    checked += 1
            assert any("as published, equal to its evidence's" in n for n in table.notes), table.notes
    assert checked >= 16
    assert main(["explore", "--from-hub", "me/clip", "--vs-from-hub", "me/blip", *HUB, "--json", "-n", "3"]) == 0
    sets = {s["name"]: s for s in json.loads(capsys.readouterr().out)["t2i"]}
    clip, blip = (values_of(pq[name], "eccv_r1", "t2i") for name in ("clip", "blip"))
    assert sets["a_better"]["count"] == sum(clip[q] == 1 and blip[q] == 0 for q in clip)
    assert sets["b_better"]["count"] == sum(clip[q] == 0 and blip[q] == 1 for q in clip)
    assert sets["a_better"]["title"] == "me/clip right, me/blip wrong"
    local = ["--vs", published_runs["blip"][2]]  # a run of your own beside a published one: its ground truth
    assert main(["explore", "--from-hub", "me/clip", *local, *HUB, "--json", "--directions", "t2i"]) == 0
    beside = {s["name"]: s["count"] for s in json.loads(capsys.readouterr().out)["t2i"]}
    assert beside["a_better"] == sets["a_better"]["count"] and beside["b_better"] == sets["b_better"]["count"]
    coco, eccv = (values_of(pq["clip"], m, "t2i") for m in ("coco_5k_r1", "eccv_r1"))
    assert sets["coco_wrong_eccv_right"]["count"] == sum(coco[q] == 0 and eccv[q] == 1 for q in eccv)
    names = {"you/your-clip": "me/clip", "you/your-blip": "me/blip", "you/eccv-caption": "me/world"}
    lines = [line for line in bash_lines((DOCS / "guides" / "retrievals.md").read_text()) if "--from-hub" in line]
    assert len(lines) == 2
    monkeypatch.chdir(tmp_path)
    outs = []
    for line in lines:
        for name, here in names.items():
            line = line.replace(name, here)
        (argv,) = cli_calls(line)
        assert main(argv) == 0, capsys.readouterr()
        printed = capsys.readouterr()
        assert "me/clip: me/clip on me/world@" in printed.err, printed.err  # after the download's bar
        outs.append(printed.out)
    assert outs[0].startswith("eccv t2i: 12 queries\n  COCO counts the top item wrong, ECCV Caption counts it right: ")
    assert outs[1].startswith("wrote published.html ("), outs
    report = (tmp_path / "published.html").read_text()
    assert "A: me/clip on me/world@" in report and "B: me/blip on me/world@" in report


def test_what_has_no_rankings_to_show_is_one_line(hub, published_runs, capsys, monkeypatch):
    """No entries, per-query values only, evidence of another item order, no network: one ``error:`` line each."""
    pristine, published = dict(tree_of(hub, "me/details_me__clip")), dict(tree_of(hub, "me/clip"))

    def refused(model: str = "me/clip", *extra: str) -> str:
        assert main(["explore", "--from-hub", model, *HUB, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        return err

    assert "me/blip publishes no eval results for me/other (check --dataset-repo)" in refused(
        "me/blip", "--dataset-repo", "me/other")  # fmt: skip
    republish(hub, {p: d for p, d in pristine.items() if not p.startswith("evidence/")}, published)
    said = refused()
    words = "hold per-query values only, no evidence (published without evaluate --evidence): it has no rankings to "
    assert words + "show; only its numbers can be compared" in said, said
    ids = "evidence/coco_5k/image_ids.npy"
    reordered = {**pristine, EMB: npy_bytes(npy(pristine[EMB])[::-1].copy()),
                 ids: npy_bytes(npy(pristine[ids])[::-1].copy())}  # fmt: skip
    forge_manifest(reordered, EMB)
    forge_manifest(reordered, ids)
    republish(hub, reordered, published)
    said = refused()
    assert re.search(r"image_ids are not in the benchmark's item order \(row 1: id \d+\) \(item order\): nothing is "
                     "shown from evidence in doubt", said), said  # fmt: skip
    assert "drop the ground-truth flags" in refused("me/clip", "--ground-truth", "x")  # its own, at its revision
    offline(monkeypatch)
    said = refused("me/blip")
    assert said.startswith("error: explore --from-hub me/blip failed: could not reach the Hub at http://127.0.0.1:")
    assert said.rstrip().endswith("then run explore again"), said


def test_the_browse_tabs_published_model_boxes(hub, published_runs, monkeypatch):
    """The Browse handler with run A and run B given as published models on the Space's benchmark (its
    ECCV_CAPTION_DATA a Hub repo): the cards' values are the --per-query files'; without a Hub repo set, and for a
    model that published nothing there, one line."""
    monkeypatch.setattr(browse_module, "_RUNS", type(browse_module._RUNS)())
    monkeypatch.setattr(browse_module, "_MEDIA", {})  # this test's Hub: read here, and not kept after it
    monkeypatch.setenv(DATA_ENV, "me/world")
    empty = (None,) * 7
    answer = browse_module.browse(empty, None, None, False, "me/clip", "me/blip", "eccv", "t2i", "b_better", 50)
    assert answer.ok, answer.message
    assert answer.message.startswith("A: me/clip on me/world@") and "; B: me/blip on me/world@" in answer.message
    pq = {name: json.loads(open(published_runs[name][1]).read()) for name in ("clip", "blip")}
    shown = re.findall(r'data-query="(\d+)"', answer.html)
    values = re.findall(r'data-values="([^"]*)"', answer.html)
    assert shown and len(values) == 2 * len(set(shown))
    for query, (a, b) in zip(dict.fromkeys(shown), zip(values[::2], values[1::2], strict=True), strict=True):
        for name, held in (("clip", a), ("blip", b)):
            got = json.loads(html.unescape(held))
            assert got["eccv_r1"] == values_of(pq[name], "eccv_r1", "t2i")[int(query)], (name, query)
    for label, name in answer.sets:  # each set as picked (an empty one: tests/integration/test_space_browse.py)
        title, count = re.fullmatch(r"(.*) \((\d[\d,]*)\)", label).groups()
        picked = browse_module.browse(empty, None, None, False, "me/clip", "me/blip", "eccv", "t2i", name, 50)
        assert f"'{title}': {count} quer" in picked.message and picked.chosen == name, (label, picked.message)
        assert len(set(re.findall(r'data-query="(\d+)"', picked.html))) == min(50, int(count.replace(",", "")))
    again = browse_module.browse(empty, None, None, False, "me/clip", "", "eccv", "t2i", instances="instances.json")
    assert again.ok and again.message.endswith(browse_module.PUBLISHED_NOTE), again.message  # a box it does not read
    said = browse_module.browse(empty, None, None, False, "me/nobody", "", "eccv", "t2i").message
    assert said.startswith("error: the 'run A: a published model (ORG/MODEL)' box (me/nobody) failed: the Hub answered "
                           "404") and "\n" not in said  # fmt: skip
    monkeypatch.setenv(DATA_ENV, str(published_runs["data"]))
    said = browse_module.browse(empty, None, None, False, "", "me/blip", "eccv", "t2i").message
    assert said == (
        "error: the 'run B: a published model (ORG/MODEL)' box: this Space's ECCV_CAPTION_DATA setting names a "
        "folder, not the benchmark's Hub dataset repo, so no published model can be read here (eccv-caption explore "
        "--from-hub MODEL --dataset-repo DATASET reads one)"
    )
