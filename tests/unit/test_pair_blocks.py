"""The pair stage's block cache (eccv_metric.models.pairs.blocks) holds only what its entry stands for: a block
carries the entry that scored it and is checked on read (a block copied from another model's entry is named and
scored again), every selection that changes the pair set has an entry of its own (two runs never discard each
other's blocks), and the provenance's pair-stage seconds and rate are the run's own, blocks scored late included.
Tiny Python pair scorers over the synthetic world: a few hundred pairs, a fraction of a second each."""

from __future__ import annotations

import shutil
import time
import warnings

import numpy as np
import pytest

from eccv_metric.models.cache.entries import CacheWarning
from eccv_metric.models.families.pair_scorer import ObjectPairScorer
from tests.unit.model_world import run_model
from tests.unit.pair_answers import DotPairs
from tests.unit.pair_answers import DotPairsWithFirst


class Shifted(DotPairs):
    """Another pair scorer scoring the same pairs: DotPairs' scores, reversed in sign (other numbers)."""

    def score_pairs(self, images, texts):  # noqa: ANN001, ANN201
        return -super().score_pairs(images, texts)


class Slow(DotPairs):
    """DotPairs taking at least ``pause`` seconds per call."""

    pause = 0.05

    def score_pairs(self, images, texts):  # noqa: ANN001, ANN201
        time.sleep(self.pause)
        return super().score_pairs(images, texts)


@pytest.fixture()
def small_blocks(monkeypatch):
    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)


def _entries(cache):  # noqa: ANN001, ANN202
    return sorted(p for p in (cache / "pairs").iterdir() if p.is_dir())


def _quiet(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    """A run that must warn nothing about the cache (any CacheWarning fails)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        return run_model(model, data, world, tmp_path, **kwargs)


def test_a_block_of_another_model_is_named_and_scored_again(world, data, tmp_path, small_blocks):
    """Two pair scorers over the same pairs (exhaustive: every pair of the split): model B's block files copied into
    model A's entry (two cluster caches merged, an rsync of pairs/) are each named in one warning with the model
    that scored them, and scored again: A's numbers, never B's."""
    kwargs = {"benchmarks": ["coco_5k", "eccv"], "protocol": "exhaustive"}
    a = ObjectPairScorer(DotPairs(), identity={"name": "model-a"})
    b = ObjectPairScorer(Shifted(), identity={"name": "model-b"})
    mine = run_model(a, data, world, tmp_path, **kwargs)
    theirs = run_model(b, data, world, tmp_path, **kwargs)
    assert mine.results.means() != theirs.results.means()
    entry_a, entry_b = sorted(_entries(tmp_path / "cache"), key=lambda e: "model-a" not in (e / "key.json").read_text())
    copied = sorted(entry_b.glob("block-*.npz"))
    for path in copied:
        shutil.copyfile(path, entry_a / path.name)
    with pytest.warns(CacheWarning) as caught:
        again = run_model(a, data, world, tmp_path, **kwargs)
    found = [str(w.message) for w in caught if w.category is CacheWarning]
    assert len(found) == len(copied) == 7
    assert all(str(entry_a) in m and b.spec in m and m.endswith("scoring it again") for m in found), found[0]
    assert again.results.means() == mine.results.means()
    assert again.provenance["pairs"]["blocks_computed"] == 7 and again.provenance["pairs"]["blocks_cached"] == 0


SELECTIONS = {  # benchmark selections whose rerank scores other pairs
    "coco_1k restrict": {"benchmarks": ["coco_1k"]},
    "coco_1k within": {"benchmarks": ["coco_1k"], "coco_1k": "within"},
    "eccv": {"benchmarks": ["eccv"]},
    "coco_5k + cxc_sits": {"benchmarks": ["coco_5k", "cxc_sits"]},
}


def test_each_pair_set_keeps_its_own_blocks(world, data, tmp_path, small_blocks):
    """coco_1k within and restrict, ECCV's queries alone, CxC SITS's rated pairs added: each selection's rerank scores
    another pair set, kept in an entry of its own; run again in turn, every one reads its blocks back (none
    discarded, none computed, no warning) and gives the same numbers."""
    scorer = ObjectPairScorer(DotPairsWithFirst(), identity={"name": "dot-pairs"})
    first = {}
    for name, kwargs in SELECTIONS.items():
        out = _quiet(scorer, data, world, tmp_path, rerank_k=4, score_rule="itm", **kwargs)
        assert out.provenance["pairs"]["blocks_computed"] == out.provenance["pairs"]["blocks"] > 0, name
        first[name] = out
    assert len(_entries(tmp_path / "cache")) == len(SELECTIONS)
    for name, kwargs in SELECTIONS.items():
        out = _quiet(scorer, data, world, tmp_path, rerank_k=4, score_rule="itm", **kwargs)
        pairs = out.provenance["pairs"]
        assert pairs["blocks_computed"] == 0 and pairs["blocks_cached"] == pairs["blocks"], name
        assert pairs["pairs_to_score"] == 0 and pairs["pairs_per_second"] is None, name
        assert out.results.means() == first[name].results.means(), name


def test_blocks_scored_late_count_in_the_runs_seconds_and_rate(world, data, tmp_path, small_blocks):
    """Blocks found in the cache but failing their check are scored once the others are read: the pair stage's
    seconds include that time, and its pairs/s is the pairs scored over those seconds (never a rate over the time
    before them)."""
    scorer = ObjectPairScorer(Slow(), identity={"name": "slow"})
    kwargs = {"benchmarks": ["coco_5k"], "protocol": "exhaustive", "pair_batch_size": 300}
    run_model(scorer, data, world, tmp_path, **kwargs)
    for path in sorted((tmp_path / "cache" / "pairs").glob("*/block-*.npz"))[:3]:
        stored = dict(np.load(path))
        stored["scores"] = stored["scores"] + 1  # its bytes changed, its checksum not
        np.savez(path, **stored)
    with pytest.warns(CacheWarning, match="its checksum"):
        out = run_model(scorer, data, world, tmp_path, **kwargs)
    pairs = out.provenance["pairs"]
    assert pairs["pairs_to_score"] == 0 and pairs["blocks_computed"] == 3 and pairs["pairs_scored_here"] == 900
    assert pairs["seconds"] >= 3 * Slow.pause
    assert pairs["pairs_per_second"] == pytest.approx(900 / pairs["seconds"], rel=0.01)


@pytest.fixture(scope="module")
def no_pixels(world, tmp_path_factory):
    """A built-like folder whose images have no pixels (the texts all there)."""
    from tests.unit.model_world import write_data

    return write_data(world, tmp_path_factory.mktemp("no_pixels"), skip_pixels=tuple(world.image_ids), fg_pixels=False)


def test_a_pair_scorer_that_would_score_no_pair_says_so(world, no_pixels, tmp_path):
    """Images without pixels: every image-caption benchmark is skipped, and only captions-with-captions benchmarks are
    left, which the first stage alone would score. Nothing asked: refused before anything is encoded, naming what
    was skipped, why, and the next step; asked for by name: scored by the first stage, with one NotUsedWarning
    saying that the pair head scored nothing."""
    from eccv_metric import EvaluationError
    from eccv_metric.models import NotUsedWarning

    model = DotPairsWithFirst()
    with pytest.raises(EvaluationError, match=r"DotPairsWithFirst would score no pair here: every image-caption "
                       r"benchmark was skipped \(coco_1k, .*images have no pixels.*; the benchmarks left \(coco_t2t, "
                       r".*\) are the first stage's alone .*give images= .*benchmarks="):  # fmt: skip
        run_model(model, no_pixels, world, tmp_path, rerank_k=4)
    assert model.pairs == 0
    with pytest.warns(NotUsedWarning, match=r"scores no pair: cxc_t2t is scored by its first stage .* alone"):
        out = run_model(model, no_pixels, world, tmp_path, benchmarks=["cxc_t2t"], rerank_k=4)
    assert model.pairs == 0 and set(out.results.means()) == {"cxc_t2t_r1", "cxc_t2t_r5", "cxc_t2t_r10"}
    assert out.provenance["pairs"]["pairs"] == 0
