"""A two-stage input (issue 50): a first stage's scores and each direction's reranked candidates, ranked exactly by
the rule (the candidates by final score, then every other item in the first stage's order), against a brute force
written apart (tests/unit/twostage_brute.py) on tie-heavy integer scores, for every metric kind and view (COCO 1K
folds, intramodal, distractors, both tie rules); LAVIS's -100 matrix from the same candidates; the notes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import Reranked
from eccv_metric import ScoreMatrix
from eccv_metric import TwoStage
from tests.unit import twostage_brute as tb
from tests.unit.test_tie_note import check
from tests.unit.test_tie_note import first_stage
from tests.unit.world import quiet_evaluate

NAMES = [m[0] for m in tb.METRICS]


@pytest.mark.parametrize("kind", ["scores", "embeddings", "torch"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_stage_ranks_equal_a_brute_force_of_the_rule(world, res, kind, seed):
    """R@K (K below and above k), R-Precision, mAP@R, capped and uncapped PMRP, MedR, MeanR; COCO 1K folds (the
    5K ranking restricted to each fold), t2t (the own caption among the candidates is dropped)."""
    case = tb.make_case(world, seed, {"i2t": 3, "t2i": 4, "t2t": 5})
    source = TwoStage(first_stage(case, kind), **case.as_reranked())
    check(world, case, source, res, tb.METRICS)


def test_pmrp_cap_below_r_and_trec_eval_ties_and_distractors(world):
    """The PMRP cap at 2 (reads min(R, 2)); ties="trec_eval" orders equal scores (final and first stage) by id
    descending as strings; distractor captions take part in the unrestricted views only, also as candidates."""
    case = tb.make_case(world, 4, {"i2t": 6, "t2i": 3, "t2t": 4}, ties="trec_eval", extras=7)
    source = TwoStage(first_stage(case, "scores"), **case.as_reranked())
    check(world, case, source, world.resources(r_cap=2), tb.METRICS, cap=2)


def test_uncapped_pmrp_reads_the_first_stage(world):
    case = tb.make_case(world, 5, {"i2t": 2, "t2i": 2})
    source = TwoStage(first_stage(case, "embeddings"), **case.as_reranked())
    pm = [m for m in tb.METRICS if m[1] == "pm"]
    check(world, case, source, world.resources(r_cap=None), pm, cap=None)


def test_lavis_minus_100_matrix_agrees_within_the_candidates_and_is_noted(world, res):
    """LAVIS's loop: the candidates' final scores, every other pair -100. Ranked stably it gives the two-stage
    numbers wherever a metric reads no deeper than the candidates (R@1/5/10, ECCV mAP@R and R-P, PMRP capped at 5
    with k = 12), and other MedR / MeanR (its ties rank past the candidates), which the tie note names."""
    rng = np.random.default_rng(8)
    images = rng.standard_normal((len(world.image_ids), 4))
    own = [world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]
    captions = images[own] + 1.5 * rng.standard_normal((len(world.caption_ids), 4))  # a first stage that works
    first = images @ captions.T
    k = 12
    lavis = np.full(first.shape, -100.0)
    reranked = {}
    for direction, scores in (("i2t", first), ("t2i", first.T)):
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        final = np.take_along_axis(scores, top, axis=1) + rng.standard_normal(top.shape)  # "ITM + ITC"
        rows = np.arange(len(scores))[:, None]
        if direction == "i2t":
            lavis_i2t = lavis.copy()
            lavis_i2t[rows, top] = final
        else:
            lavis_t2i = lavis.copy().T
            lavis_t2i[rows, top] = final
        ids = np.asarray(world.caption_ids if direction == "i2t" else world.image_ids)
        queries = world.image_ids if direction == "i2t" else world.caption_ids
        reranked[direction] = (np.asarray(queries), ids[top], final)
    two = TwoStage(ScoreMatrix(first), **reranked)
    same = ["coco_5k_r1", "coco_5k_r5", "coco_5k_r10", "eccv_map_at_r", "eccv_rprecision", "eccv_r1", "pmrp"]
    ranks = ["coco_5k_medr", "coco_5k_meanr"]
    resources = world.resources(r_cap=5)
    got = quiet_evaluate(two, same + ranks, resources=resources)
    for direction, matrix in (("i2t", lavis_i2t), ("t2i", lavis_t2i.T)):
        lavis_got = quiet_evaluate(ScoreMatrix(matrix), same + ranks, resources=resources, directions=direction)
        for name in same:
            assert lavis_got.means()[name][direction] == got.means()[name][direction], name
        assert lavis_got.means()["coco_5k_meanr"][direction] != got.means()["coco_5k_meanr"][direction]
        tie_note = [n for n in lavis_got.notes if n.startswith(f"{direction}: the order of equal scores decides")]
        assert len(tie_note) == 1 and "coco_5k_medr" in tie_note[0] and "LAVIS's -100" in tie_note[0], lavis_got.notes
        assert not re.search(r"\bcoco_5k_r1\b", tie_note[0])  # R@1 is decided by the candidates' distinct final scores
    tail = [n for n in got.notes if "the first stage's order past each query's reranked candidates" in n]
    assert [n[:3] for n in tail] == ["i2t", "t2i"] and all("coco_5k_meanr" in n for n in tail), got.notes
    assert not [n for n in got.notes if "order of equal scores" in n]  # float scores: no ties


# -- bad input: one line each, naming the direction, the query and the field ---------------------------------------


def small(world, **change):
    """A valid i2t second stage over the world (every image, its first 3 captions), with fields changed."""
    fields = {
        "query_ids": np.asarray(world.image_ids),
        "candidate_ids": np.asarray([world.caption_ids[:3]] * len(world.image_ids)),
        "scores": np.zeros((len(world.image_ids), 3)),
    }
    fields.update(change)
    return fields


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidate_ids": np.zeros((20, 0), np.int64)}, "i2t: candidate_ids= must be 2-D (one row of candidate ids"),
        ({"candidate_ids": np.arange(20)}, "i2t: candidate_ids= must be 2-D"),
        ({"scores": np.zeros((20, 4))}, "i2t: scores= has shape (20, 4) but candidate_ids= (20, 3)"),
        ({"scores": np.zeros((19, 3))}, "i2t: scores= has 19 rows but query_ids= 20: one row per query"),
        ({"query_ids": np.arange(21)}, "i2t: candidate_ids= has 20 rows but query_ids= 21"),
        ({"scores": np.zeros((20, 3), np.int64)}, "i2t: scores= must be float16, float32 or float64, not int64"),
        ({"candidate_ids": np.zeros((20, 3))}, "i2t: candidate_ids= must be integers"),
        ({"query_ids": np.r_[np.arange(19), 0]}, "i2t: query_ids= names queries more than once: 0"),
    ],
)
def test_bad_second_stages_are_refused_by_field(world, change, message):
    img = np.ones((len(world.image_ids), 2))
    with pytest.raises(EvaluationError) as caught:
        TwoStage(Embeddings(img, np.ones((len(world.caption_ids), 2))), i2t=small(world, **change))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value), str(caught.value)


def test_bad_candidates_and_scores_name_the_query(world):
    cands = np.asarray([world.caption_ids[:3]] * len(world.image_ids))
    cands[4, 2] = cands[4, 0]
    twice = rf"^t2x: candidate_ids= of query {world.image_ids[4]} names candidates more than once: {cands[4, 0]} "
    with pytest.raises(EvaluationError, match=twice + r"\(1 query\(ies\) in all\)$"):
        Reranked(world.image_ids, cands, np.zeros(cands.shape), what="t2x")
    scores = np.zeros((len(world.image_ids), 3))
    scores[7, 1] = np.nan
    nan = (
        rf"^scores= of query {world.image_ids[7]} hold nan \(candidate {world.caption_ids[1]}; 1 query\(ies\) in all\)"
    )
    with pytest.raises(EvaluationError, match=nan + ": every final score must be finite$"):
        Reranked(world.image_ids, np.asarray([world.caption_ids[:3]] * 20), scores)


def test_ids_the_first_stage_lacks_and_queries_not_reranked_are_named(world, res):
    first = Embeddings(np.ones((len(world.image_ids), 2)), np.ones((len(world.caption_ids), 2)))
    cands = np.asarray([world.caption_ids[:3]] * len(world.image_ids))
    cands[2, 1] = 77
    unknown = rf"^i2t candidate_ids of query {world.image_ids[2]} name id\(s\) that are not captions of the first stage"
    with pytest.raises(EvaluationError, match=unknown + r": 77 \(1 query\(ies\) in all\)$"):
        quiet_evaluate(TwoStage(first, i2t=small(world, candidate_ids=cands)), "coco_5k_r1", resources=res)
    queries = np.asarray(world.image_ids)
    queries[0] = 5
    with pytest.raises(EvaluationError, match=r"^i2t query_ids name 1 id\(s\) that are not images of the first stage"):
        quiet_evaluate(TwoStage(first, i2t=small(world, query_ids=queries)), "coco_5k_r1", resources=res)
    some = {k: v[:15] for k, v in small(world).items()}
    missing = r"^i2t: 5 query image\(s\) were not reranked \(not in the i2t query_ids\): "
    with pytest.raises(EvaluationError, match=missing + ".*; rerank every query the metrics score, or evaluate the "):
        quiet_evaluate(TwoStage(first, i2t=some), "coco_5k_r1", resources=res)
    with pytest.raises(EvaluationError, match=r"^i2t coco_5k_medr: 5 query image\(s\) were not reranked"):
        quiet_evaluate(TwoStage(first, i2t=some), "coco_5k_medr", resources=res)


def test_what_a_two_stage_input_does_not_answer(world, res):
    first = Embeddings(np.ones((len(world.image_ids), 2)), np.ones((len(world.caption_ids), 2)))
    two = TwoStage(first, i2t=small(world))
    absent = r"^coco_5k_r1 \(t2i\): no t2i second stage was given \(t2i= of TwoStage\): "
    with pytest.raises(EvaluationError, match=absent + ".*evaluate the first stage alone for it$"):
        quiet_evaluate(two, "coco_5k_r1", resources=res, directions=["i2t", "t2i"])
    assert list(quiet_evaluate(two, "coco_5k_r1", resources=res).means()["coco_5k_r1"]) == ["i2t"]  # defaults: i2t
    t2i = (np.asarray(world.caption_ids), np.asarray([world.image_ids[:2]] * 100), np.zeros((100, 2)))
    with pytest.raises(EvaluationError, match=r"^cxc_sits_spearman \(t2i\): a two-stage input's final scores exist "):
        quiet_evaluate(TwoStage(first, t2i=t2i), "cxc_sits_spearman", resources=res)
    with pytest.raises(EvaluationError, match=r"^the first stage must be a ScoreMatrix or Embeddings .* not Rankings$"):
        TwoStage(Rankings(i2t={}), i2t=small(world))
    with pytest.raises(EvaluationError, match=r"^unknown directions \['x2y'\]: a second stage is given as i2t"):
        TwoStage(first, x2y=small(world))
    with pytest.raises(EvaluationError, match=r"^no second stage: give Reranked candidates for i2t and/or t2i"):
        TwoStage(first)
    fields = r"^i2t must hold exactly query_ids, candidate_ids, scores: missing \['scores'\]; unknown \['score'\]$"
    with pytest.raises(EvaluationError, match=fields):
        TwoStage(first, i2t={**{k: v for k, v in small(world).items() if k != "scores"}, "score": np.zeros((20, 3))})
