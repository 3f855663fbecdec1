"""An evidence folder as a run (``evaluate --evidence DIR``, then ``explore DIR``): its views are those of the input
it kept, its per-query values those ``evaluate --per-query`` wrote (its PM option taken from the evidence), and a
run's own (published) per-query values are shown only where its evidence gives them; each bad input one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.cli.main import main
from eccv_metric.evidence import load_evidence
from eccv_metric.evidence.layout import sha256_file
from eccv_metric.explore import read_run
from eccv_metric.explore import table_of
from eccv_metric.explore.runs import evidence_run
from eccv_metric.explore.runs import scored_options
from tests.unit.world import vectors

DIRECTIONS = ("i2t", "t2i")


@pytest.fixture(scope="module")
def kept(world, tmp_path_factory):
    """``evaluate`` on the world's embeddings (cosine), PM with zeta 1: its results, per-query values and evidence."""
    from tests.unit.bench_world import write_ground_truth

    root = tmp_path_factory.mktemp("kept")
    data = write_ground_truth(world, root / "data")
    img, cap = vectors(world)
    np.save(root / "img.npy", img)
    np.save(root / "cap.npy", cap)
    flags = ["--ground-truth", str(data), "--cxc-source", str(world.cxc_dir)]
    args = ["--image-embeddings", str(root / "img.npy"), "--caption-embeddings", str(root / "cap.npy"), "--normalize",
            "--benchmarks", "coco_5k", "eccv", "cxc", "pm", "--pm-zeta", "1", *flags]  # fmt: skip
    files = [root / n for n in ("r.json", "pq.json", "ev")]
    assert main(["evaluate", *args, "-o", str(files[0]), "--per-query", str(files[1]), "--evidence", str(files[2]),
                 "-q"]) == 0  # fmt: skip
    return {"flags": flags, "pq": json.loads(files[1].read_text()), "ev": files[2], "vecs": (img, cap)}


def test_the_views_and_values_are_the_runs(kept, capsys):
    """The run's items are its input's (the same embeddings scored in Python); every per-query value the table holds
    is the one --per-query wrote (PM's too: zeta 1, from the evidence), query for query, exactly."""
    run = read_run(kept["ev"])
    assert list(run.groups) == ["input"] and run.scored_with["pm_zeta"] == 1
    options = scored_options([run], ResourceOptions(ground_truth=kept["flags"][1], cxc_source=kept["flags"][3]))
    assert options.pm_zeta == 1
    resources = options.resources()
    direct = Embeddings(*kept["vecs"], normalize=True)
    compared = 0
    for direction in DIRECTIONS:
        table, other = table_of(run, "eccv", direction, resources), table_of(direct, "eccv", direction, resources)
        assert np.array_equal(table.items, other.items) and np.array_equal(table.scores, other.scores)
        for metric, entry in table.per_query.items():
            if metric in kept["pq"] and direction in kept["pq"][metric]:
                written = kept["pq"][metric][direction]
                assert entry.query_ids.tolist() == written["query_ids"], metric
                assert entry.values.tolist() == written["values"], (metric, direction)
                compared += 1
    assert compared >= 10 and "pm_r1" not in kept["pq"]  # every metric both hold (pmrp among them)
    table = table_of(run, "eccv", "i2t", resources)
    query = int(table.query_ids[np.flatnonzero(~np.isnan(table.values["pmrp"]))[0]])  # a query of PM's too
    assert main(["explore", str(kept["ev"]), "--query", str(query), "--json", "--directions", "i2t",
                 *kept["flags"], "-q"]) == 0  # fmt: skip
    (view,) = json.loads(capsys.readouterr().out)["i2t"]
    for metric, value in view["values"].items():
        if metric in kept["pq"]:
            written = kept["pq"][metric]["i2t"]
            assert value == written["values"][written["query_ids"].index(query)], metric
    assert "pmrp" in view["values"] and len(view["values"]) == len(table.values)


def test_published_values_are_shown_only_where_the_evidence_gives_them(kept, world):
    """A run's own per-query values (a published run's) equal to its evidence's: shown, with a note; one changed:
    refused in one line naming the metric, how many and the query."""
    evidence = load_evidence(kept["ev"])
    options = ResourceOptions(ground_truth=kept["flags"][1], cxc_source=kept["flags"][3], pm_zeta=1)
    resources = options.resources()
    run = evidence_run(evidence, "me/model", kept["pq"], resources)
    table = table_of(run, "eccv", "i2t", resources)
    assert any("are as published, equal to its evidence's" in note for note in table.notes), table.notes
    forged = json.loads(json.dumps(kept["pq"]))
    entry = forged["eccv_r1"]["t2i"]
    entry["values"][2] = 1.0 - entry["values"][2]
    run = evidence_run(evidence, "me/model", forged, resources)
    table_of(run, "eccv", "i2t", resources)  # i2t's values are its evidence's
    with pytest.raises(EvaluationError) as caught:
        table_of(run, "eccv", "t2i", resources)
    said = str(caught.value)
    assert said.startswith("me/model: 1 of its ") and "published per-query values of eccv_r1 t2i" in said, said
    assert f"(query {entry['query_ids'][2]}: published {entry['values'][2]:g}, evidence " in said and "\n" not in said


def rewrite(folder, name, values):
    """An evidence file replaced, its manifest's record forged to match (as a forger would)."""
    np.save(folder / name, values)
    manifest = json.loads((folder / "evidence.json").read_text())
    manifest["files"][name].update(dtype=str(values.dtype), shape=list(values.shape), bytes=(folder / name).stat(
        ).st_size, sha256=sha256_file(folder / name))  # fmt: skip
    (folder / "evidence.json").write_text(json.dumps(manifest))


def test_bad_evidence_is_one_line(kept, tmp_path, capsys):
    ev = kept["ev"]
    manifest = json.loads((ev / "evidence.json").read_text())
    emb = next(rel for rel in manifest["files"] if rel.endswith("image_embeddings.npy"))
    changed, other = tmp_path / "changed", tmp_path / "other"
    for folder in (changed, other):
        shutil.copytree(ev, folder)
    img = np.load(ev / emb)
    np.save(changed / emb, -img)
    rewrite(other, emb, img[1:])  # another benchmark's items: one image fewer
    cases = {
        (str(changed),): f"{changed}/{emb} is not the file the run wrote",
        (str(other),): f"{other}: 19 image embeddings (rows) but ",
    }
    cases[(str(ev), "--pm-zeta", "3")] = "error: --pm-zeta 3, but ev was scored with 1 (its evidence.json): drop it"
    cases[(str(ev), "--benchmark", "mscoco_fg")] = (
        "ev: its evidence scored coco_5k, cxc, eccv, pm, not mscoco_fg's items"
    )
    for args, said in cases.items():
        assert main(["explore", *args, *kept["flags"], "-q"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and said in err and err.count("\n") == 1, (args, err)
