"""``evaluate_many``: many inputs against one set of resources give, value for value, what ``evaluate`` gives each."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.api import evaluate as api_evaluate
from eccv_metric.api.many import evaluate_benchmarks
from eccv_metric.api.many import evaluate_many
from eccv_metric.engine.plan import plan as engine_plan
from eccv_metric.inputs.pairs import PairScores
from tests.unit import brute
from tests.unit.test_matrix import KS
from tests.unit.test_matrix import Setup
from tests.unit.test_matrix import requested


def assert_same(got, want) -> None:
    """Same metrics, directions, query ids, per-query values (bit for bit) and notes."""
    assert list(got) == list(want)
    for metric in want:
        assert list(got[metric]) == list(want[metric]), metric
        for direction, scores in want[metric].items():
            np.testing.assert_array_equal(got[metric][direction].query_ids, scores.query_ids)
            np.testing.assert_array_equal(got[metric][direction].values, scores.values)
    assert got.notes == want.notes


@pytest.mark.parametrize("collection", ["coco_5k", "mscoco_fg"])
def test_many_inputs_equal_each_evaluated_alone_and_plan_once(world, tmp_path, monkeypatch, collection):
    setups = [
        Setup(world, collection, "scores", seed=3),
        Setup(world, collection, "scores", seed=4, values="float"),
        Setup(world, collection, "embeddings", seed=5),
        Setup(world, collection, "dicts", seed=6),
        Setup(world, collection, "arrays", seed=7, values="float"),
    ]
    sources = [s.make_input(tmp_path) for s in setups]
    lists = {d: setups[3].full_lists(d) for d in brute.KIND if d != "i2t"}
    sources.append(Rankings(**lists))  # ranked lists without i2t: planned for the directions they give
    names = [r[1] for r in requested(collection) if r[2] != "spearman"]
    resources = world.resources()
    want = [evaluate(s, names, KS, resources=resources) for s in sources]
    plans = []
    monkeypatch.setattr(api_evaluate, "plan", lambda *a, **kw: plans.append(a) or engine_plan(*a, **kw))
    got = evaluate_many(sources, names, KS, resources=resources)
    assert len(got) == len(want) == len(sources)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w)
    assert len(plans) == 2  # both image-caption directions, then t2i alone


def test_an_input_that_cannot_be_scored_is_named_by_its_place(world):
    good = Setup(world, "coco_5k", "scores").make_input(None)
    bad = ScoreMatrix(np.zeros((3, 4), np.float32))
    with pytest.raises(EvaluationError, match=r"^sources\[1\]: "):
        evaluate_many([good, bad], ["coco_5k_recalls"], resources=world.resources())


@pytest.mark.parametrize("sources", [ScoreMatrix(np.zeros((3, 4), np.float32)), {"a": 1}, iter([])])
def test_sources_must_be_a_list_of_inputs(world, sources):
    with pytest.raises(EvaluationError, match="sources must be a list of inputs"):
        evaluate_many(sources, resources=world.resources())
    with pytest.raises(EvaluationError, match=r"sources\[1\] must be Rankings, ScoreMatrix, Embeddings or TwoStage"):
        evaluate_many([Rankings(i2t={1: [2]}), np.zeros((3, 4))], resources=world.resources())


def test_no_inputs_no_results(world):
    assert evaluate_many([], resources=world.resources()) == []


def test_an_input_that_lacks_a_modality_is_refused_before_any_is_scored(world, monkeypatch):
    good = Setup(world, "coco_5k", "scores").make_input(None)
    images_only = Embeddings(np.ones((4, 3), np.float32))
    ran = []
    monkeypatch.setattr(api_evaluate, "run", lambda *a, **kw: ran.append(a))
    with pytest.raises(EvaluationError, match=r"^sources\[1\]: coco_5k_r1 \(i2t\): needs caption_embeddings="):
        evaluate_many([good, images_only], ["coco_5k_recalls"], resources=world.resources())
    assert ran == []


def _nan_scores(s):
    m = s.matrices["image", "caption"].astype(np.float32)
    m[2, 5] = np.nan
    return ScoreMatrix(m, s.images, s.captions)


def _inf_caption_scores(s):
    m = s.matrices["caption", "caption"].astype(np.float32)
    m[3, 1] = np.inf
    return ScoreMatrix(s.matrices["image", "caption"], s.images, s.captions, caption_scores=m)


def _embeddings(s, change, both=False, **kw):
    """Embeddings with ``change`` made to the image rows (and the caption rows: ``both``)."""
    img = np.stack([s.vector("image", i) for i in s.images]).astype(np.float32)
    cap = np.stack([s.vector("caption", c) for c in s.captions]).astype(np.float32)
    change(img)
    if both:
        change(cap)
    return Embeddings(img, cap, s.images, s.captions, **kw)


def _huge(values):
    np.multiply(values, 1e30, out=values)


def _set(img, row, value):
    img[row] = value


MEMBER_ERRORS = {  # each member error: how the input is made, what evaluate alone says
    "NaN score": (_nan_scores, r"scores= holds NaN at row 2, column 5: "),
    "inf caption score": (_inf_caption_scores, r"caption_scores= holds inf at row 3, column 1: "),
    "NaN embedding": (lambda s: _embeddings(s, lambda a: _set(a, 4, np.nan)), r"image embeddings: rows 4 hold NaN"),
    "zero row, cosine": (
        lambda s: _embeddings(s, lambda a: _set(a, 1, 0), normalize=True),
        r"image embeddings: rows 1 are zero \(no cosine\)",
    ),
    "overflowing products": (
        lambda s: _embeddings(s, _huge, both=True),
        r"i2t: the scores of \d+ query image\(s\) overflow",
    ),
}


@pytest.mark.parametrize("case", list(MEMBER_ERRORS))
def test_every_member_error_names_the_member(world, monkeypatch, case):
    """NaN / inf in a score matrix or embeddings, a zero row for a cosine: found when the input is made, refused
    when it is scored, so that evaluate_many names which of its inputs (before any is scored)."""
    make, said = MEMBER_ERRORS[case]
    setup = Setup(world, "coco_5k", "scores")
    good, bad = setup.make_input(None), make(setup)  # making a bad input is no error yet
    resources = world.resources()
    with pytest.raises(EvaluationError, match="^" + said):
        evaluate(bad, ["coco_5k_recalls", "coco_t2t_r1"], resources=resources)
    ran = []
    scored = api_evaluate.run
    monkeypatch.setattr(api_evaluate, "run", lambda *a, **kw: ran.append(a) or scored(*a, **kw))
    with pytest.raises(EvaluationError, match=r"^sources\[2\]: " + said):
        evaluate_many([good, good, bad], ["coco_5k_recalls", "coco_t2t_r1"], resources=resources)
    if case != "overflowing products":  # values are checked before anything is scored
        assert ran == []


def test_a_values_error_is_the_same_from_evaluate_benchmarks(world):
    setup = Setup(world, "coco_5k", "scores")
    with pytest.raises(EvaluationError, match=r"^scores= holds NaN at row 2, column 5: "):
        evaluate_benchmarks(_nan_scores(setup), ["coco_5k"], resources=world.resources(), skip_failing=True)


def test_another_exception_of_a_member_keeps_its_type_and_is_noted(world):
    def fails(ids_1, ids_2):
        raise RuntimeError("the caller's scorer failed")

    good = Setup(world, "coco_5k", "scores").make_input(None)
    with pytest.raises(RuntimeError, match="the caller's scorer failed") as raised:
        evaluate_many([good, PairScores(fails)], ["cxc_sts_spearman"], resources=world.resources())
    if sys.version_info >= (3, 11):
        assert raised.value.__notes__ == ["raised by sources[1] of evaluate_many"]
