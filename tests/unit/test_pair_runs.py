"""A pair scorer through the model path (eccv_metric.models.pairs): known answers on the synthetic world.

Checks: an exhaustive run gives the numbers of a score matrix of every pair computed here from the pixels and
texts; a rerank gives LAVIS's numbers (its loop re-implemented in tests/unit/pair_world.py) on every metric that
reads no deeper than k, both directions; blocks are cached and a rerun scores no pair; bad input is one line.
"""

from __future__ import annotations

import numpy as np

from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from tests.unit.model_world import run_model
from tests.unit.pair_world import DotPairs
from tests.unit.pair_world import TorchPairs
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


def _blocks(folder):  # noqa: ANN001, ANN202
    """{block file name: its scores} of every pair entry under a cache folder."""
    return {p.name: np.load(p)["scores"] for p in sorted((folder / "pairs").glob("*/block-*.npz"))}


def test_shards_then_a_scoring_run_equal_one_process(world, data, tmp_path, monkeypatch):
    """shard 1/2 and 2/2 over one cache folder, then a run without a shard: the numbers and the block bits of one
    process; the jobs score nothing and say so; the last run computes no block (a torch scorer with its own first
    stage, exhaustive under itm+itc: the first stage's batches are dealt too)."""
    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)
    kwargs = {"benchmarks": ["coco_5k", "eccv"], "protocol": "exhaustive", "pair_batch_size": 64}
    one = _run(TorchPairs(), data, world, tmp_path, cache_dir=tmp_path / "one", **kwargs)
    assert one.provenance["protocol"]["score_rule"] == "itm+itc"
    shared = tmp_path / "shared"
    for k in (1, 2):
        job = _run(TorchPairs(), data, world, tmp_path, cache_dir=shared, shard=f"{k}/2", **kwargs)
        assert not job.scored and job.results.means() == {}
        assert job.provenance["parallel"] == {"how": "shard", "shard": f"{k}/2"}
        assert job.provenance["pairs"]["blocks_computed"] == (4 if k == 1 else 3)
    last = _run(TorchPairs(), data, world, tmp_path, cache_dir=shared, **kwargs)
    assert last.provenance["pairs"]["blocks_computed"] == 0 and last.provenance["pairs"]["blocks_cached"] == 7
    assert last.results.means() == one.results.means()
    mine, theirs = _blocks(tmp_path / "one"), _blocks(shared)
    assert len(mine) == 7 and mine.keys() == theirs.keys()
    assert all(np.array_equal(mine[name], theirs[name]) for name in mine)
