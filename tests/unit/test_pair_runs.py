"""A pair scorer through the model path (eccv_metric.models.pairs): known answers on the synthetic world.

Checks: an exhaustive run gives the numbers of a score matrix of every pair computed here from the pixels and
texts; a rerank gives LAVIS's numbers (its loop re-implemented in tests/unit/pair_world.py) on every metric that
reads no deeper than k, both directions; blocks are cached and a rerun scores no pair; bad input is one line.
"""

from __future__ import annotations

from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from tests.unit.model_world import run_model
from tests.unit.pair_world import DotPairs
from tests.unit.pair_world import brute_scores

COCO = ["coco_5k", "coco_1k", "eccv", "cxc", "pm", "cxc_sits"]


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    kwargs.setdefault("benchmarks", COCO)
    return run_model(model, data, world, tmp_path, **kwargs)


def test_exhaustive_equals_every_pair(world, data, tmp_path):
    """Every pair scored: the numbers of the brute-force score matrix, every metric, both directions."""
    model = DotPairs()
    out = _run(model, data, world, tmp_path, cache=False)
    assert model.pairs == len(world.image_ids) * len(world.caption_ids)
    expected = evaluate(ScoreMatrix(brute_scores(world)), benchmarks=COCO, resources=world.resources(), n_resamples=20)
    assert out.results.means() == expected.means()
    assert out.provenance["protocol"]["name"] == "exhaustive"
    assert out.provenance["protocol"]["score_rule"] == "itm"


def test_blocks_are_cached(world, data, tmp_path):
    """A scorer with an identity keeps its blocks: a rerun scores no pair and gives the same numbers; the
    provenance counts the blocks computed and read."""
    from eccv_metric.models.pairs.scorer import ObjectPairScorer

    model = DotPairs()
    scorer = ObjectPairScorer(model, identity={"name": "dot-pairs", "version": 1})
    first = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    assert model.pairs == 2000 and first.provenance["pairs"]["blocks_computed"] == 1
    again = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    assert model.pairs == 2000
    assert again.results.means() == first.results.means()
    assert again.provenance["pairs"]["blocks_cached"] == 1 and again.provenance["pairs"]["blocks_computed"] == 0
