"""``evaluate_many``: many inputs against one set of resources give, value for value, what ``evaluate`` gives each."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.api import evaluate as api_evaluate
from eccv_metric.api.many import evaluate_many
from eccv_metric.engine.plan import plan as engine_plan
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
