"""The tie note (issue 50): a value another order of equal scores could change is counted, per metric and direction,
for every score input; held against a brute force written apart (tests/unit/twostage_brute.py: the value under
positives first and positives last in every group of equal scores) on tie-heavy integer scores, for every metric kind
and view, both tie rules, distractors; noted on a clipped matrix, not on a tie-free one."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import ScoreMatrix
from eccv_metric.api.evaluate import plan_request
from eccv_metric.api.evaluate import request_for
from eccv_metric.engine.run import run
from eccv_metric.engine.ties import Tally
from tests.unit import twostage_brute as tb
from tests.unit.test_matrix import torch_device
from tests.unit.world import quiet_evaluate


def first_stage(case: tb.Case, kind: str):
    images = np.stack([case.vectors[("image", i)] for i in case.image_rows])
    captions = np.stack([case.vectors[("caption", c)] for c in case.caption_rows])
    if kind in ("embeddings", "torch"):  # torch: ranked by the device kernels (the GPU where there is one)
        device = torch_device() if kind == "torch" else None
        return Embeddings(images, captions, caption_ids=case.caption_rows, ties=case.ties, device=device)
    return ScoreMatrix(
        images @ captions.T, caption_ids=case.caption_rows, caption_scores=captions @ captions.T, ties=case.ties
    )


def tallied(source, names, resources):
    """Per-query values and the engine's tally (what the notes are made of)."""
    request = request_for(source, names, (1, 5, 10))
    jobs = plan_request(source, request, resources)
    tally = Tally()
    return run(jobs, source, tally=tally), tally


def check(world, case, source, resources, metrics, cap=50, tail=True):
    per_query, tally = tallied(source, [m[0] for m in metrics], resources)
    for metric in metrics:
        for direction, want in tb.expected(world, case, metric, cap=cap).items():
            got = per_query[metric[0]][direction]
            values = dict(zip(got.query_ids.tolist(), got.values.tolist(), strict=True))
            assert values == pytest.approx(want["values"], rel=1e-12, abs=0), (metric[0], direction)  # mAP: sum order
            assert set(tally.tied[(metric[0], direction)].tolist()) == want["tied"], (metric[0], direction, "tied")
            if tail:
                assert set(tally.tail[(metric[0], direction)].tolist()) == want["tail"], (metric[0], direction)
    if not tail:
        assert not tally.tail


@pytest.mark.parametrize(("kind", "ties"), [("scores", "stable"), ("embeddings", "trec_eval"), ("torch", "stable")])
def test_tie_tally_of_a_first_stage_alone_equals_the_brute_force(world, res, kind, ties):
    """Scores and embeddings alone: the queries whose values the tie order decides are those whose value differs
    between the two extreme orders of equal scores (brute force); no tail."""
    case = tb.make_case(world, 6, {"i2t": 1, "t2i": 1, "t2t": 1}, ties=ties, extras=3)
    case.reranked = {d: dict.fromkeys(by_query, ([], [])) for d, by_query in case.reranked.items()}
    check(world, case, first_stage(case, kind), res, tb.METRICS, tail=False)


def test_tie_note_on_a_clipped_matrix_and_none_on_a_tie_free_one(world, res):
    rng = np.random.default_rng(9)
    scores = rng.standard_normal((len(world.image_ids), len(world.caption_ids)))
    free = quiet_evaluate(ScoreMatrix(scores), ["coco_5k_r1", "coco_5k_medr", "coco_5k_map_at_r"], resources=res)
    assert not [n for n in free.notes if "equal scores" in n]
    clipped = quiet_evaluate(
        ScoreMatrix(np.maximum(scores, 1.0)), ["coco_5k_r1", "coco_5k_medr", "coco_5k_map_at_r"], resources=res
    )
    notes = [n for n in clipped.notes if "the order of equal scores decides" in n]
    assert [n[:3] for n in notes] == ["i2t", "t2i"] and "coco_5k_medr" in notes[0], clipped.notes


def test_tie_notes_are_not_warned_but_equal_scores_everywhere_are(world, res):
    """A float matrix holds a few equal scores by chance: the tie note is in Results.notes, not a warning; a matrix
    whose every score is equal still warns."""
    import warnings

    from eccv_metric import ChanceLevelWarning
    from eccv_metric import evaluate

    rng = np.random.default_rng(11)
    scores = rng.standard_normal((len(world.image_ids), len(world.caption_ids)))
    own = [world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]
    scores[own, np.arange(len(world.caption_ids))] += 3.0  # a matrix that works: not at chance level
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChanceLevelWarning)
        got = evaluate(ScoreMatrix(np.maximum(scores, 1.0)), ["coco_5k_r1", "coco_5k_medr"], resources=res)
    assert [n for n in got.notes if "the order of equal scores decides" in n], got.notes
    with pytest.warns(ChanceLevelWarning, match="every ranking is the tie order of the rows"):
        evaluate(ScoreMatrix(np.ones_like(scores)), ["coco_5k_r1"], resources=res)
