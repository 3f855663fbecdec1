"""A two-stage result from files: the .npz of one direction's second stage (query_ids, candidate_ids, scores) beside
a first stage (a score matrix .npy or embeddings), through Python and ``eccv-caption evaluate --rerank``; the same
numbers as the in-memory input; every bad combination one error line in the front end's words; the evaluate module
and the Space say they do not take it."""

from __future__ import annotations

import json
import os
import warnings
import zipfile

import numpy as np
import pytest

from eccv_metric import ChanceLevelWarning
from eccv_metric import EvaluationError
from eccv_metric import Reranked
from eccv_metric import ScoreMatrix
from eccv_metric import TwoStage
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.formats.reranked import is_reranked
from eccv_metric.formats.reranked import load_reranked
from eccv_metric.formats.reranked import save_reranked
from eccv_metric.hub import space
from eccv_metric.hub.evaluate_glue import check_keywords
from eccv_metric.inputs.choose import input_from_parts
from tests.unit.world import vectors

METRICS = ["coco_5k_r1", "coco_5k_r5", "coco_5k_medr", "eccv_map_at_r"]


@pytest.fixture()
def world_evaluate(monkeypatch, res):
    """The CLI's evaluate with the world's ground truth."""
    import eccv_metric.cli.evaluate

    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)


def second_stages(world, scores: np.ndarray, k: int = 4) -> dict[str, Reranked]:
    """Each direction's top k of the first stage, rescored (seeded)."""
    rng = np.random.default_rng(3)
    out = {}
    for direction, matrix, queries, gallery in (
        ("i2t", scores, world.image_ids, world.caption_ids),
        ("t2i", scores.T, world.caption_ids, world.image_ids),
    ):
        top = np.argsort(-matrix, axis=1, kind="stable")[:, :k]
        final = rng.integers(0, 3, top.shape).astype(np.float32)
        out[direction] = Reranked(np.asarray(queries), np.asarray(gallery)[top], final)
    return out


def quiet(source, res):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChanceLevelWarning)
        return evaluate(source, METRICS, resources=res)


def test_files_round_trip_and_score_as_in_memory(world, res, tmp_path, world_evaluate, capsys):
    img, cap = vectors(world)
    scores = img @ cap.T
    stages = second_stages(world, scores)
    np.save(tmp_path / "first.npy", scores)
    for direction, stage in stages.items():
        save_reranked(tmp_path / f"{direction}.npz", stage)
        assert is_reranked(tmp_path / f"{direction}.npz")
        assert oct(os.stat(tmp_path / f"{direction}.npz").st_mode & 0o777) == oct(0o666 & ~current_umask())
        loaded = load_reranked(tmp_path / f"{direction}.npz")
        for name in ("query_ids", "candidate_ids", "scores"):
            assert np.array_equal(getattr(loaded, name), getattr(stage, name))
    want = quiet(TwoStage(ScoreMatrix(scores), **stages), res)
    from_npz = TwoStage(ScoreMatrix(scores), **{d: np.load(tmp_path / f"{d}.npz") for d in stages})  # a mapping
    assert quiet(from_npz, res).means() == want.means()
    argv = ["evaluate", "--scores", str(tmp_path / "first.npy"), "--metrics", *METRICS, "--json"]
    argv += ["--rerank", f"i2t={tmp_path / 'i2t.npz'}", "--rerank", f"t2i={tmp_path / 't2i.npz'}"]
    assert main([*argv, "-o", str(tmp_path / "res.json")]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == want.means()
    provenance = json.loads((tmp_path / "res.json").read_text())["provenance"]  # what the two-stage input was
    assert provenance["input"] == "two-stage" and "first stage's order" in provenance["ranking"]
    assert provenance["first_stage"] == {"input": "scores", "shapes": {"image_caption": [20, 100]}, "ties": "stable"}
    assert provenance["second_stage"] == {"i2t": {"queries": 20, "candidates_per_query": 4},
                                          "t2i": {"queries": 100, "candidates_per_query": 4}}  # fmt: skip
    tail = [
        line for line in out.err.splitlines() if "the first stage's order past each query's reranked candidates" in line
    ]
    assert [line[:14] for line in tail] == ["warning: i2t: ", "warning: t2i: "], out.err
    assert "coco_5k_medr" in tail[0]


def current_umask() -> int:
    from eccv_metric.core.files import current_umask as umask

    return umask()


def error_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0].removeprefix("error: ")


def test_cli_refuses_each_bad_combination_in_one_line(world, res, tmp_path, world_evaluate, capsys):
    img, cap = vectors(world)
    scores = img @ cap.T
    np.save(tmp_path / "first.npy", scores)
    save_reranked(tmp_path / "i2t.npz", second_stages(world, scores)["i2t"])
    npz, npy = f"i2t={tmp_path / 'i2t.npz'}", str(tmp_path / "first.npy")
    (tmp_path / "run.json").write_text(json.dumps({"i2t": {str(world.image_ids[0]): [world.caption_ids[0]]}}))
    cases = [
        (["--rerank", npz], "--rerank needs a first stage, a score for every query and gallery item: give --scores"),
        (["--rankings", str(tmp_path / "run.json"), "--rerank", npz], "--rerank reranks a first stage of scores: "),
        (["--demo", "--rerank", npz], "--demo is an input of its own: drop --rerank"),
        (["--scores", npy, "--rerank", "i2t"], "--rerank takes DIRECTION=FILE (e.g. --rerank i2t=reranked_i2t.npz)"),
        (["--scores", npy, "--rerank", f"x2y={tmp_path / 'i2t.npz'}"], "the direction must be i2t, t2i, t2t or i2i"),
        (["--scores", npy, "--rerank", npz, "--rerank", npz], "--rerank gives i2t twice: one file per direction"),
        (["--scores", npy, "--rerank", f"i2t={npy}"], "a .npy array, not a two-stage result"),
        (["--scores", str(tmp_path / "i2t.npz")], "a .npz archive (save one array with np.save; a two-stage result's"),
        (["--run", str(tmp_path / "i2t.npz")], "a two-stage result (.npz), not a run: give it as --rerank DIRECTION="),
    ]
    for extra, message in cases:
        line = error_line(capsys, ["evaluate", *extra, "--metrics", "coco_5k_r1"])
        assert message in line and "rerank=" not in line, (extra, line)
    assert "give it as --scores" in error_line(capsys, ["evaluate", "--scores", npy, "--rerank", f"i2t={npy}"])
    np.savez(tmp_path / "two.npz", query_ids=np.asarray(world.image_ids), candidate_ids=np.zeros((20, 2), np.int64))
    line = error_line(capsys, ["evaluate", "--scores", npy, "--rerank", f"i2t={tmp_path / 'two.npz'}"])
    assert line == f"{tmp_path / 'two.npz'} must hold exactly query_ids, candidate_ids, scores: missing ['scores']"
    stage = second_stages(world, scores)["i2t"]
    bad = stage.scores.copy()
    bad[3, 1] = np.inf
    np.savez(tmp_path / "inf.npz", query_ids=stage.query_ids, candidate_ids=stage.candidate_ids, scores=bad)
    line = error_line(capsys, ["evaluate", "--scores", npy, "--rerank", f"i2t={tmp_path / 'inf.npz'}"])
    assert line.startswith(f"{tmp_path / 'inf.npz'}: the scores array of query {world.image_ids[3]} hold inf "), line
    np.savez(tmp_path / "obj.npz", query_ids=np.array([object()]), candidate_ids=stage.candidate_ids, scores=bad)
    assert "never loaded" in error_line(capsys, ["evaluate", "--scores", npy, "--rerank", f"i2t={tmp_path}/obj.npz"])
    with zipfile.ZipFile(tmp_path / "other.npz", "w") as archive:
        archive.writestr("x.npy", b"")
    assert not is_reranked(tmp_path / "other.npz") and not is_reranked(tmp_path / "first.npy")


def test_python_parts_and_the_other_front_ends(world, res, tmp_path, monkeypatch):
    img, cap = vectors(world)
    stage = second_stages(world, img @ cap.T)["i2t"]
    two = input_from_parts({"image_embeddings": img, "caption_embeddings": cap, "rerank": {"i2t": stage}})
    assert isinstance(two, TwoStage) and two.reranked["i2t"] is stage
    with pytest.raises(EvaluationError, match=r"^rerank must map directions \(i2t, t2i, t2t, i2i\) to reranked "):
        input_from_parts({"scores": img @ cap.T, "rerank": [stage]})
    with pytest.raises(EvaluationError, match=r"^the evaluate module does not score two-stage results \(rerank=\): "):
        check_keywords({"scores": 1, "rerank": 2}, lambda self, scores=None: None)
    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    save_reranked(tmp_path / "i2t.npz", stage)
    got = space.score(upload=str(tmp_path / "i2t.npz"), metrics=["coco_5k_r1"])
    assert not got.ok and "the Space does not score two-stage results: use the CLI" in got.message, got.message
