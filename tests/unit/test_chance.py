"""The chance check: every metric kind's expectation under random rankings equals an enumeration; rank metrics and
mAP@R alone get the note; the warning names the causes and points at the caller's line; the kinds carry it (issue 35,
issue 41)."""

from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import evaluate
from tests.unit.world import quiet_evaluate

# -- 5. every metric kind gets the chance check ---------------------------------------------------------------------


def _brute_chance(n: int, r: int) -> dict[str, tuple[float, float]]:
    """Mean and variance of first rank, R-Precision and mAP@R over every placement of r positives among n items
    (all equally likely under a random order), counted one by one."""
    from itertools import combinations

    firsts, rps, maps = [], [], []
    for positions in combinations(range(1, n + 1), r):
        rel = [i in positions for i in range(1, n + 1)]
        firsts.append(positions[0])
        rps.append(sum(rel[:r]) / r)
        maps.append(sum(sum(rel[:i]) / i for i in range(1, r + 1) if rel[i - 1]) / r)
    return {k: (float(np.mean(v)), float(np.var(v))) for k, v in (("first", firsts), ("rp", rps), ("map", maps))}


@pytest.mark.parametrize(("n", "r"), [(1, 1), (5, 1), (6, 2), (9, 3), (10, 10), (12, 5)])
def test_chance_expectations_equal_an_enumeration(n, r):
    from eccv_metric.measures.formulas import first_rank_at_chance
    from eccv_metric.measures.formulas import map_at_r_at_chance
    from eccv_metric.measures.formulas import rprecision_at_chance

    want = _brute_chance(n, r)
    nn, rr = np.array([float(n)]), np.array([float(r)])
    mean, var = first_rank_at_chance(nn, rr)
    assert mean[0] == pytest.approx(want["first"][0]) and var[0] == pytest.approx(want["first"][1], abs=1e-12)
    mean, var = rprecision_at_chance(nn, rr, rr)
    assert mean[0] == pytest.approx(want["rp"][0]) and var[0] == pytest.approx(want["rp"][1], abs=1e-12)
    assert map_at_r_at_chance(nn, rr)[0] == pytest.approx(want["map"][0])
    assert want["map"][1] <= want["map"][0] + 1e-12  # the variance bound the note uses


def _near_images(world, seed: int = 0):
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((len(world.image_ids), 8)).astype(np.float32)
    cap = rng.standard_normal((len(world.caption_ids), 8)).astype(np.float32) * 0.1
    cap += img[[world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]]  # each near its image
    return img, cap, cap[rng.permutation(len(cap))]


@pytest.mark.parametrize("metrics", [["coco_5k_medr"], ["coco_5k_meanr"], ["coco_5k_medr", "coco_5k_meanr"]])
def test_rank_metrics_alone_get_the_chance_note(world, res, metrics):
    img, cap, shuffled = _near_images(world)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        right = evaluate(Embeddings(img, cap), metrics, directions="t2i", resources=res)
    assert right.notes == []
    with pytest.warns(ChanceLevelWarning, match="t2i: numbers at chance level") as caught:
        wrong = evaluate(Embeddings(img, shuffled), metrics, directions="t2i", resources=res)
    assert wrong.notes == [str(caught[0].message)] and "mean rank" in wrong.notes[0]


def test_map_at_r_alone_gets_the_chance_note(world, res):
    img, cap, shuffled = _near_images(world)
    right = quiet_evaluate(Embeddings(img, cap), ["coco_5k_r1", "coco_5k_rprecision"], resources=res)
    assert right.notes == []
    wrong = quiet_evaluate(Embeddings(img, shuffled), ["coco_5k_rprecision"], directions="t2i", resources=res)
    assert len(wrong.notes) == 1 and "coco_5k_rprecision = " in wrong.notes[0]


# -- 6. the chance warning says what it knows and points at the caller's line ---------------------------------------


def test_the_chance_warning_names_causes_and_points_at_the_callers_line(world, res):
    img, _, shuffled = _near_images(world)
    with pytest.warns(ChanceLevelWarning) as caught:
        evaluate(Embeddings(img, shuffled), ["coco_5k_r1"], directions="t2i", resources=res)  # this line
    warning = caught[0]
    assert warning.filename == __file__
    message = str(warning.message)
    assert message.startswith("t2i: numbers at chance level (coco_5k_r1 = ")
    assert "common causes: rows not in the order of the benchmark's ids" in message
    assert "a model that was not trained or whose weights were not loaded" in message
    assert "likely" not in message


# -- the kinds carry their behaviour: the engine's scorer and the chance check read it, never a kind's name --------


def test_every_kind_carries_its_behaviour():
    from eccv_metric.measures.kinds import METRIC_KINDS

    for kind in METRIC_KINDS.values():
        reads_lists = kind.needs in ("first_hit", "depth")
        assert (kind.reads is not None) == (kind.score is not None) == (kind.short is not None) == reads_lists, kind
        assert (kind.chance is None) == (kind.needs == "pairs"), kind  # every ranking metric gets the chance check


def test_the_engine_and_the_chance_check_name_no_kind():
    from eccv_metric.api import chance
    from eccv_metric.engine import depth
    from eccv_metric.measures.kinds import METRIC_KINDS

    quoted = re.compile("|".join(rf"[\"']{re.escape(key)}[\"']" for key in METRIC_KINDS))
    for source in (inspect.getsource(depth._score), inspect.getsource(depth._depth), inspect.getsource(chance)):
        assert not quoted.findall(source)


def test_a_kinds_chance_is_its_expectation_on_one_query():
    from eccv_metric.measures.kinds import METRIC_KINDS

    n, r = np.array([12.0]), np.array([5.0])
    want = _brute_chance(12, 5)
    assert METRIC_KINDS["medr"].chance(n, r, None, None)[0][0] == pytest.approx(want["first"][0])
    assert METRIC_KINDS["rprecision"].chance(n, r, None, None)[0][0] == pytest.approx(want["rp"][0])
    assert METRIC_KINDS["map_at_r"].chance(n, r, None, None)[0][0] == pytest.approx(want["map"][0])
    capped, _ = METRIC_KINDS["capped_rprecision"].chance(n, r, None, 2)
    assert capped[0] == pytest.approx(5 / 12)  # hits among min(R, cap) items, over min(R, cap): R / n in mean
    assert METRIC_KINDS["recall"].chance(n, r, 1, None)[0][0] == pytest.approx(5 / 12)
