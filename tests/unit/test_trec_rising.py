"""A TREC run whose scores rise with rank (a distance written as a score): ranked by trec_eval's rule (score,
highest first: the lists reversed) and noted when most of a direction's queries rise."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from eccv_metric import ChanceLevelWarning
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.formats import trec


def lines(query: str, docs: list[str], scores: list[float], ranks: list[int] | None = None) -> list[str]:
    ranks = ranks or list(range(1, len(docs) + 1))
    return [f"{query} Q0 {d} {r} {s} t" for d, r, s in zip(docs, ranks, scores, strict=True)]


def write_run(path, queries: dict[str, str]) -> str:
    """``queries``: query token -> "up" (scores rise with rank), "down" (fall) or "flat" (all equal)."""
    out = []
    for query, how in queries.items():
        docs = [f"caption-{k}" for k in range(1, 5)] if query.startswith("image") else [f"image-{k}" for k in (1, 2)]
        steps = np.arange(len(docs), dtype=float)
        scores = {"up": steps, "down": -steps, "flat": 0 * steps}[how]
        out += lines(query, docs, scores.tolist())
    path.write_text("\n".join(out) + "\n")
    return str(path)


@pytest.mark.parametrize("ties", ["stable", "trec_eval"])
@pytest.mark.parametrize(
    ("hows", "noted"),
    [
        (["up", "up", "down", "down"], None),  # half: not most
        (["up", "up", "up", "down"], "3 of 4"),  # more than half
        (["up", "up", "down", "down", "flat"], None),  # a flat list tells nothing: 2 of 4 that tell
        (["up", "up", "up", "down", "flat", "flat"], "3 of 4"),
        (["up"], "1 of 1"),
        (["down"] * 5, None),
        (["flat"] * 3, None),
    ],
)
def test_most_queries_rising_is_noted_per_direction(tmp_path, ties, hows, noted):
    queries = {f"image-{10 + k}": how for k, how in enumerate(hows)} | {"caption-7": "down", "caption-8": "down"}
    path = write_run(tmp_path / "run.trec", queries)
    arrays, notes = trec.read_run_parts(path, ties)
    assert list(arrays) == ["i2t", "t2i"]
    assert notes == ([] if noted is None else [note for note in notes if note.startswith("i2t: ")])
    if noted is not None:
        assert len(notes) == 1 and f"rise with rank in {noted} queries" in notes[0]
        assert "trec_eval's rule" in notes[0] and "negate them" in notes[0]
    lists = trec.read_run(path, ties)["i2t"]  # the rule stays: score descending
    for k, how in enumerate(hows):
        if how != "flat":
            want = [1, 2, 3, 4] if how == "down" else [4, 3, 2, 1]
            assert lists[10 + k] == want
    assert trec.read_run_rankings(path, ties).notes == tuple(notes)


def test_the_rank_column_decides_what_rises_then_the_line_order(tmp_path):
    path = tmp_path / "run.trec"
    # lines in another order than their ranks: by rank, the scores rise (1.0 at rank 1, 3.0 at rank 3)
    path.write_text("\n".join(lines("image-1", ["caption-3", "caption-1", "caption-2"], [3.0, 1.0, 2.0], [3, 1, 2])))
    assert "rise with rank in 1 of 1" in trec.read_run_parts(path)[1][0]
    path.write_text("\n".join(lines("image-1", ["caption-1", "caption-2"], [1.0, 2.0], [0, 0])))  # ranks all 0
    assert "rise with rank in 1 of 1" in trec.read_run_parts(path)[1][0]
    path.write_text("\n".join(lines("image-1", ["caption-1", "caption-2"], [2.0, 1.0], [0, 0])))
    assert trec.read_run_parts(path)[1] == []


@pytest.fixture()
def distances(world, tmp_path):
    """The world's i2t lists, each image's own captions first, written as a run of distances (rank r: score r)
    and as similarities (-r)."""
    own = world.lists["coco"]["i2t"]
    ranked = {q: own[q] + [c for c in world.caption_ids if c not in own[q]] for q in world.image_ids}
    out = {}
    for name, sign in (("distances", 1), ("similarities", -1)):
        rows = []
        for q, docs in ranked.items():
            rows += lines(f"image-{q}", [f"caption-{d}" for d in docs], [sign * r for r in range(1, len(docs) + 1)])
        out[name] = tmp_path / f"{name}.trec"
        out[name].write_text("\n".join(rows) + "\n")
    return out


def test_a_distance_run_is_noted_in_the_results_and_by_the_cli(world, res, distances, capsys, monkeypatch, tmp_path):
    import eccv_metric.cli.evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChanceLevelWarning)
        right = evaluate(trec.read_run_rankings(distances["similarities"]), ["coco_5k_r1"], resources=res)
        wrong = evaluate(trec.read_run_rankings(distances["distances"]), ["coco_5k_r1"], resources=res)
    assert not any("rise with rank" in n for n in right.notes)
    assert wrong.notes[0].startswith(f"i2t: the scores of {distances['distances']} rise with rank in 20 of 20 queries")
    # reversed, as trec_eval ranks it: the own captions last
    assert (right.means()["coco_5k_r1"]["i2t"], wrong.means()["coco_5k_r1"]["i2t"]) == (1.0, 0.0)
    with pytest.warns(ChanceLevelWarning, match="rise with rank"):
        evaluate(trec.read_run_rankings(distances["distances"]), ["coco_5k_r1"], resources=res)
    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)
    capsys.readouterr()
    assert main(["evaluate", "--run", str(distances["distances"]), "--metrics", "coco_5k_r1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("warning: i2t: the scores of ") and "rise with rank" in line for line in err) == 1
    assert main(["evaluate", "--run", str(distances["similarities"]), "--metrics", "coco_5k_r1"]) == 0
    assert "rise with rank" not in capsys.readouterr().err
    assert main(["import-trec", str(distances["distances"]), "-o", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("warning: i2t: the scores of ") and "rise with rank" in line for line in err) == 1


def test_the_space_shows_the_note(res, distances, monkeypatch):
    from eccv_metric.hub import space

    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    got = space.score(upload=str(distances["distances"]), metrics=["coco_5k_r1"])
    assert got.ok and "i2t: the scores of distances.trec rise with rank in 20 of 20 queries" in got.message
    assert "rise with rank" not in space.score(upload=str(distances["similarities"]), metrics=["coco_5k_r1"]).message
