"""One plan for every benchmark of a run: shared products, exact counts, and the torch path's exactness.

- ``block_ranks`` (two comparisons per row, the own column left out without a copy) against a full stable
  sort of each row, on tie-heavy integer blocks with NaN / inf, -0.0 and own items that are positives;
- one pass over a computed product serves every relevance and view of a direction (counted products);
- ``evaluate_benchmarks``: the numbers of one ``evaluate`` call per benchmark, bit for bit, and what it skips;
- the torch path (CPU torch here; a GPU where the machine has one): integer embeddings give the numpy
  engine's per-query values to the bit (also ``tests/unit/test_matrix.py`` against the brute force); on float
  embeddings a per-query rank may differ only where two scores are within a few float32 ulps.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Resources
from eccv_metric import evaluate
from eccv_metric import evaluate_benchmarks
from eccv_metric.kernels import scorers
from eccv_metric.kernels.ranks import block_ranks
from tests.unit.test_matrix import torch_device
from tests.unit.world import int_embeddings
from tests.unit.world import vectors

COCO = [b.name for b in REGISTRY if b.collection == "coco_5k"]


def brute_rank(row: list[float], positive: list[bool], own: int) -> int | None:
    """1-based position of the first positive in a stable descending sort of the row, the own item (``own`` >= 0)
    moved below every other item; None: no positive, or NaN / inf outside the own column."""
    items = [j for j in range(len(row)) if j != own]
    if any(not np.isfinite(row[j]) for j in items):
        return None
    order = sorted(items, key=lambda j: -row[j]) + ([own] if own >= 0 else [])
    hits = [pos for pos, j in enumerate(order) if positive[j]]
    return hits[0] + 1 if hits else None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_ranks_equal_a_stable_sort_of_each_row(dtype):
    rng = np.random.default_rng(0)
    for trial in range(400):
        m, n = int(rng.integers(1, 7)), int(rng.integers(1, 30))
        block = rng.integers(-2, 3, (m, n)).astype(dtype)
        if trial % 4 == 0:
            block[rng.integers(m), rng.integers(n)] = [np.nan, np.inf, -np.inf][trial % 3]
        if trial % 5 == 0:
            block[block == 0] = -0.0
        mask = rng.random((m, n)) < rng.random() * 0.6
        own = rng.integers(-1, n, m) if trial % 2 else None
        ranks, bad = block_ranks(block, mask.copy(), None, own)
        for r in range(m):
            want = brute_rank(block[r].tolist(), mask[r].tolist(), -1 if own is None else int(own[r]))
            assert (bad[r], ranks[r]) == ((True, 0.0) if want is None else (False, want)), (block[r], mask[r], own)


def counted_products(monkeypatch) -> list[tuple[int, int]]:
    """Every product an EmbeddingScorer computes, as (queries, gallery items)."""
    seen: list[tuple[int, int]] = []
    original = scorers.EmbeddingScorer.block

    def block(self, rows, cols, scratch=None):
        seen.append((len(np.unique(rows // self.aligned)), self.n_gallery))
        return original(self, rows, cols, scratch)

    monkeypatch.setattr(scorers.EmbeddingScorer, "block", block)
    return seen


def test_one_pass_serves_every_relevance_of_a_product(world, res, monkeypatch):
    """cxc_t2t and coco_t2t (R@K and MedR): one pass over the caption-caption product, not one per relevance."""
    _, cap = vectors(world)
    monkeypatch.setattr("eccv_metric.inputs.embeddings.MATRIX_BUDGET", 0)
    monkeypatch.setattr("eccv_metric.kernels.scorers.CHUNK_ELEMENTS", 7 * len(cap))  # blocks of 7 captions
    names = ["cxc_t2t_r1", "cxc_t2t_r5", "cxc_t2t_medr", "coco_t2t_r1", "coco_t2t_meanr"]
    alone = {name: evaluate(Embeddings(None, cap), [name], resources=res)[name]["t2t"] for name in names}
    seen = counted_products(monkeypatch)
    together = evaluate(Embeddings(None, cap), names, resources=res)
    blocks = -(-len(cap) // 7)
    assert sum(b for b, _ in seen) == blocks + 1  # every aligned block once, and the first again for the constant check
    for name in names:  # the same bits as each metric alone (each block is the same product call)
        np.testing.assert_array_equal(together[name]["t2t"].values, alone[name].values)


def test_fine_grained_views_share_their_pass(world, monkeypatch):
    """MSCOCO-FG and its original pool (t2i): one pass over the refined captions' product serves both views."""
    fg = world.fg["mscoco_fg"]
    rng = np.random.default_rng(3)
    gallery = np.stack(list(int_embeddings(rng, fg["gallery"]).values()))
    captions = np.stack(list(int_embeddings(rng, fg["captions"]).values()))
    resources = world.resources()
    monkeypatch.setattr("eccv_metric.inputs.embeddings.MATRIX_BUDGET", 0)
    monkeypatch.setattr("eccv_metric.kernels.scorers.CHUNK_ELEMENTS", 4 * len(gallery))  # blocks of 4 captions
    names = ["mscoco_fg_medr", "mscoco_fg_original_pool_medr"]
    seen = counted_products(monkeypatch)
    got = evaluate(Embeddings(gallery, captions, fg["gallery"], fg["captions"]), names, resources=resources)
    t2i = [b for b, n in seen if n == len(gallery)]  # (the constant check reads the image x caption product)
    assert sum(t2i) == -(-len(captions) // 4)
    assert set(got) == set(names)


def test_evaluate_benchmarks_gives_each_benchmarks_numbers(world, res):
    img, cap = vectors(world)
    wanted = ["coco_5k", "coco_1k", "eccv", "cxc", "cxc_extended", "pm", "cxc_t2t", "coco_t2t", "cxc_i2i", "cxc_sts"]
    results, skipped = evaluate_benchmarks(Embeddings(img, cap), wanted, resources=res, n_resamples=50)
    assert skipped == {}
    for name in wanted:
        alone = evaluate(Embeddings(img, cap), benchmarks=[name], resources=res, n_resamples=50)
        for metric in alone:
            for direction, scores in alone[metric].items():
                np.testing.assert_array_equal(results[metric][direction].values, scores.values)
                np.testing.assert_array_equal(results[metric][direction].query_ids, scores.query_ids)
    custom, _ = evaluate_benchmarks(Embeddings(img, cap), {"eccv": ["eccv_map_at_r"], "coco_5k": None}, resources=res)
    assert list(custom) == ["eccv_map_at_r", "coco_5k_r1", "coco_5k_r5", "coco_5k_r10"]


def test_evaluate_benchmarks_skips_what_it_cannot_score_when_asked(world):
    img, cap = vectors(world)
    no_cxc = Resources(world.gt)  # no CxC ratings: cxc_t2t cannot be planned
    with pytest.raises(EvaluationError, match="CxC"):
        evaluate_benchmarks(Embeddings(img, cap), ["coco_5k", "cxc_t2t"], resources=no_cxc)
    results, skipped = evaluate_benchmarks(
        Embeddings(img, cap), ["coco_5k", "cxc_t2t"], resources=no_cxc, skip_failing=True
    )
    assert list(skipped) == ["cxc_t2t"] and skipped["cxc_t2t"].startswith("cxc_t2t: ")
    assert "coco_5k_r1" in results
    huge = cap * np.float32(1e20)  # caption-caption products overflow: found when ranked, not when planned
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, skipped = evaluate_benchmarks(
            Embeddings(img, huge), ["cxc_i2i", "cxc_t2t"], resources=world.resources(), skip_failing=True
        )
    assert list(skipped) == ["cxc_t2t"] and "overflow" in skipped["cxc_t2t"]
    assert "cxc_i2i_r1" in results and "cxc_t2t_r1" not in results


# -- the torch path ----------------------------------------------------------------------------------------------


def test_torch_is_used_where_asked_and_refused_by_name(world, res):
    import torch

    img, cap = vectors(world)
    assert Embeddings(torch.from_numpy(img), torch.from_numpy(cap)).device is None  # CPU tensors: numpy engine
    assert Embeddings(img, cap, device="cpu").device == "cpu"
    assert Embeddings(img, cap, device=torch.device("cpu")).device == "cpu"
    assert Embeddings(img, cap, device="numpy").device is None
    for bad, match in ((7, "device must be a torch device name"), ("gpu0", "device='gpu0' is not a torch device")):
        with pytest.raises(EvaluationError, match=match):
            evaluate(Embeddings(img, cap, device=bad), ["coco_5k_r1"], resources=res)
    if not torch.cuda.is_available():
        with pytest.raises(EvaluationError, match="device='cuda': torch sees no CUDA device"):
            evaluate(Embeddings(img, cap, device="cuda"), ["coco_5k_r1"], resources=res)


def test_without_torch_a_named_device_is_one_error_and_numpy_still_ranks(world, res, monkeypatch):
    import eccv_metric.kernels

    img, cap = vectors(world)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    monkeypatch.delitem(sys.modules, "eccv_metric.kernels.device", raising=False)
    monkeypatch.delattr(eccv_metric.kernels, "device", raising=False)
    with pytest.raises(EvaluationError, match="device= ranks with torch, which cannot be imported.*pip install torch"):
        Embeddings(img, cap, device="cuda")
    assert evaluate(Embeddings(img, cap), ["coco_5k_r1"], resources=res).means()


@pytest.mark.parametrize("ties", ["stable", "trec_eval"])
def test_torch_ranks_equal_the_numpy_engine_on_tie_heavy_integers(world, res, ties):
    """Every metric of every 5K benchmark, both tie rules, queries x items of two dimensions in -2..2."""
    rng = np.random.default_rng(11)
    img = rng.integers(-2, 3, (len(world.image_ids), 2)).astype(np.float32)
    cap = rng.integers(-2, 3, (len(world.caption_ids), 2)).astype(np.float32)
    numpy_side = evaluate(Embeddings(img, cap, ties=ties), benchmarks=COCO, resources=res, n_resamples=20)
    torch_side = evaluate(
        Embeddings(img, cap, ties=ties, device=torch_device()), benchmarks=COCO, resources=res, n_resamples=20
    )
    assert list(torch_side) == list(numpy_side)
    for metric in numpy_side:
        for direction, scores in numpy_side[metric].items():
            np.testing.assert_array_equal(torch_side[metric][direction].query_ids, scores.query_ids)
            np.testing.assert_array_equal(torch_side[metric][direction].values, scores.values)


def test_torch_ranks_on_float_scores_differ_only_at_near_ties(world, res):
    """Continuous embeddings: torch's product may round a score differently from numpy's BLAS; a query's rank may
    then differ only where its best positive's score is within a few float32 ulps of another item's."""
    rng = np.random.default_rng(5)
    cap = rng.standard_normal((len(world.caption_ids), 64)).astype(np.float32)
    cap[:, 0] += 8 * np.repeat(np.arange(len(world.image_ids)), 5)  # co-captions close: ranks are not all 1
    names = ["cxc_t2t_medr", "coco_t2t_medr"]
    ours = evaluate(Embeddings(None, cap, normalize=True), names, resources=res)
    theirs = evaluate(Embeddings(None, cap, normalize=True, device=torch_device()), names, resources=res)
    unit = cap / np.linalg.norm(cap, axis=1, keepdims=True)
    scores = (unit.astype(np.float64) @ unit.T.astype(np.float64)).astype(np.float32)
    for name in names:
        a, b = ours[name]["t2t"], theirs[name]["t2t"]
        np.testing.assert_array_equal(a.query_ids, b.query_ids)
        for q in np.flatnonzero(a.values != b.values):
            row = world.caption_ids.index(int(a.query_ids[q]))
            gaps = np.abs(np.diff(np.sort(np.delete(scores[row], row))))
            assert gaps.min() <= 8 * np.spacing(np.float32(1)), (name, a.query_ids[q])
