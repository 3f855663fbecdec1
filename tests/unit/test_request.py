"""One evaluation request parsed in one place (benchmarks.request): defaults, the official alias, directions,
checks; front ends only translate into it; what the input cannot serve is refused before any resource loads."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Resources
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.request import OFFICIAL
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.request import default_benchmarks
from eccv_metric.hub import space
from tests.unit.world import int_embeddings
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors


def names_of(request: Request) -> list[str]:
    return sorted(request.names)


def test_default_metric_names_are_what_each_benchmark_scores_by_default():
    for bench in REGISTRY:
        expected = []
        for kind in bench.default:  # written out here: "<name>_recalls" for R@K, else the kind's own name
            expected.append(f"{bench.name}_recalls" if kind == "recalls" else bench.metric_name(kind))
        assert bench.default_metric_names() == expected
        assert names_of(Request.parse(benchmarks=bench.name)) == names_of(Request.parse(expected))


def test_nothing_asked_gives_the_official_defaults_for_image_caption_inputs():
    for given in (None, ["i2t", "t2i"], ["i2t"], ["i2t", "t2i", "t2t"]):
        assert names_of(Request.parse(given=given)) == sorted(DEFAULT_TARGETS)
    assert names_of(Request.parse(benchmarks=OFFICIAL)) == sorted(DEFAULT_TARGETS)
    both = Request.parse("coco_5k_r5", benchmarks=[OFFICIAL, "eccv"])  # the alias beside names and benchmarks
    assert set(both.names) == set(DEFAULT_TARGETS) | {"coco_5k_r5", "eccv_rprecision"}


def test_intramodal_inputs_default_to_their_ranking_benchmarks():
    t2t = [b.name for b in REGISTRY if b.directions == ("t2t",) and "spearman" not in b.default]
    assert default_benchmarks(["t2t"]) == t2t and set(t2t) == {"coco_t2t", "cxc_t2t"}
    assert default_benchmarks(["i2i"]) == ["cxc_i2i"]
    assert default_benchmarks(["t2t"], made_for=("cxc_t2t", "cxc_t2t")) == ["cxc_t2t"]  # what the input names
    assert default_benchmarks([]) == [] and default_benchmarks(["i2t", "t2t"]) == []


def test_directions_follow_the_input():
    assert Request.parse(given=["i2t", "t2t"]).directions == ("i2t",)
    assert Request.parse(directions="t2i", given=["i2t", "t2i"]).directions == ("t2i",)
    assert Request.parse(directions=["i2t"], given=["t2i"]).directions == ("i2t",)  # then refused, naming i2t
    assert Request.parse(given=["t2t"]).directions is None  # no image-caption direction: nothing to restrict
    with pytest.raises(EvaluationError, match="directions must be 'i2t' and/or 't2i'"):
        Request.parse(directions=["i2t", "i2t"])


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"partial": "False"}, "partial must be True or False"),
        ({"n_resamples": 0}, "n_resamples must be an integer between 1 and 100,000"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"seed": 1.5}, "seed must be an integer"),
        ({"benchmarks": ["nope"]}, "unknown benchmark 'nope'"),
        ({"benchmarks": {"eccv": 1}}, "benchmarks must be a benchmark name or a list of names"),
        ({"metrics": []}, "target_metrics is empty"),
        ({"ks": [5.5]}, "Ks must be positive integers"),
    ],
)
def test_every_argument_is_checked_once_before_any_work(kwargs, message):
    with pytest.raises(EvaluationError, match=message):
        Request.parse(**kwargs)


def test_evaluate_defaults_follow_the_input(world):
    rng = np.random.default_rng(3)
    cap = int_embeddings(rng, world.caption_ids, 4)
    captions = np.stack([cap[c] for c in world.caption_ids])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = evaluate(Embeddings(captions=captions), resources=world.resources())
    assert {name.split("_r")[0] for name in got} == {"coco_t2t", "cxc_t2t"}  # not the image-caption defaults
    assert all(set(by_dir) == {"t2t"} for by_dir in got.means().values())


def test_the_space_takes_ks_as_text_and_leaves_their_rule_to_the_library():
    assert space.parse_ks("1, 5 10") == [1, 5, 10] and space.parse_ks("") == [1, 5, 10]
    assert space.parse_ks(str(10**12)) == [10**12]  # R@(gallery size), as in the library
    assert Request.parse("coco_5k_recalls", space.parse_ks("10 1")).names == ["coco_5k_r1", "coco_5k_r10"]
    with pytest.raises(EvaluationError, match="Ks"):
        Request.parse("coco_5k_recalls", [0])


def test_a_score_matrix_defaults_to_the_official_metrics(world):
    scores = np.zeros((len(world.image_ids), len(world.caption_ids)), np.float32)
    request = Request.parse(given=["i2t", "t2i"], made_for=ScoreMatrix(scores).made_for)
    assert names_of(request) == sorted(DEFAULT_TARGETS)


def test_the_module_checks_its_benchmark_name_even_with_target_metrics(world):
    from eccv_metric.hub.evaluate_glue import compute

    scores = np.zeros((len(world.image_ids), len(world.caption_ids)), np.float32)
    for metrics in (["coco_5k_r1"], None):
        with pytest.raises(EvaluationError, match="unknown benchmark 'cocco_5k'"):
            compute({}, {"scores": scores}, metrics, (1,), world.resources(), benchmark="cocco_5k")


@pytest.mark.parametrize(
    ("metric", "make", "expected"),
    [
        ("cxc_t2t_r1", lambda img, cap: ScoreMatrix(img @ cap.T), "give caption_scores"),
        ("cxc_i2i_r1", lambda img, cap: ScoreMatrix(img @ cap.T), "give image_scores"),
        ("cxc_sts_spearman", lambda img, cap: ScoreMatrix(img @ cap.T), "needs caption_scores"),
        ("cxc_t2t_r1", lambda img, cap: Embeddings(img), "needs caption_embeddings="),
        ("mscoco_fg_map_at_r", lambda img, cap: Embeddings(None, cap), "needs image_embeddings="),
    ],
)
def test_the_input_is_checked_before_resources_load(world, tmp_path, metric, make, expected):
    img, cap = vectors(world)
    offline = Resources(world.gt, cxc_source=tmp_path / "no-cxc", fg_source=tmp_path / "no-fg")  # would fail to load
    with pytest.raises(EvaluationError, match=expected) as info:
        quiet_evaluate(make(img, cap), metric, resources=offline)
    assert str(tmp_path) not in str(info.value)
