"""partial=True: lists that give every query are scored, and labelled, as full; a direction with no query to score
fails in evaluate(), naming it."""

from __future__ import annotations

import pytest

from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import evaluate
from tests.unit.world import quiet_evaluate


def test_partial_lists_that_give_every_query_are_full(world):
    res = world.resources()
    gt = res.gt
    full = {int(q): [int(c) for c in gt.caption_ids] for q in gt.image_ids}  # every image query, whole gallery
    some = dict(list(full.items())[:3])
    whole = quiet_evaluate(Rankings(i2t=full), ["coco_5k_r1"], resources=res, partial=True)
    part = quiet_evaluate(Rankings(i2t=some), ["coco_5k_r1"], resources=res, partial=True)
    plain = quiet_evaluate(Rankings(i2t=full), ["coco_5k_r1"], resources=res)
    assert not whole.partial and whole.means() == plain.means()
    assert part.partial and len(part["coco_5k_r1"]["i2t"].values) == 3


def test_empty_lists_with_partial_fail_in_evaluate_naming_the_direction(world, res):
    with pytest.raises(
        EvaluationError, match="i2t coco_5k_r1: no query has a positive and a ranking: no query to score"
    ):
        evaluate(Rankings(i2t={}), "coco_5k_r1", resources=res, partial=True)
