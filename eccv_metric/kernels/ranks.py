"""Exact rank of each query's best-ranked positive, straight from the scores (any depth, one pass).

``rank(q)`` = 1-based rank of query q's best-ranked positive under the stable
descending order (ties: the item given first wins):
``rank = #{g : s[g] > s*} + #{g before p* : s[g] = s*} + 1``, where ``s*`` is
the best positive score and ``p*`` the first gallery position holding a
positive with that score. Used for MedR / MeanR and for R@K with a K too deep
for a top-K (``R@K = 1[rank <= K]``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from eccv_metric.core import progress
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.topk import without_self


def block_ranks(block: np.ndarray, mask: np.ndarray, finite: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ranks of the best positive (``mask``) of each row of ``block``; ``finite``: rows known free of NaN/inf.

    Returns (ranks as float64, bad) where ``bad`` marks rows holding NaN / inf or no positive (rank 0 there).
    """
    if finite is None:
        finite = np.isfinite(block).all(axis=1)
    best = np.where(mask, block, -np.inf).max(axis=1, initial=-np.inf)
    bad = ~finite | ~mask.any(axis=1)
    at_best = block == best[:, None]
    first = (mask & at_best).argmax(axis=1)  # first position of a positive with the best score
    at_best &= np.arange(block.shape[1])[None, :] < first[:, None]
    ranks = np.count_nonzero(block > best[:, None], axis=1) + np.count_nonzero(at_best, axis=1) + 1
    return np.where(bad, 0, ranks).astype(np.float64), bad


def first_ranks(
    scorer: BlockScorer,
    query_pos: np.ndarray,
    positive_mask: Callable[[np.ndarray, int], np.ndarray],
    gallery_pos: np.ndarray | None = None,
    own: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ranks of the scorer's query rows ``query_pos`` (a block of queries at a time, calling thread).

    ``positive_mask(members, n_cols)``: bool (len(members) x n_cols) positives of the queries at positions
    ``members`` of ``query_pos``, over the (restricted) gallery columns. ``gallery_pos`` / ``own``: as in
    :func:`~eccv_metric.kernels.topk.top_ranked`. Returns (ranks, bad) as :func:`block_ranks`.
    """
    n_cols = scorer.n_gallery if gallery_pos is None else len(gallery_pos)
    step = scorer.rows_per_block(n_cols, topk=False)
    ranks = np.zeros(len(query_pos))
    bad = np.zeros(len(query_pos), dtype=bool)
    starts = range(0, len(query_pos), step)
    with progress.bar(f"exact ranks of {len(query_pos):,} queries x {n_cols:,} items", len(starts), "block") as shown:
        for start in starts:
            members = np.arange(start, min(start + step, len(query_pos)))
            block = scorer.block(query_pos[members], gallery_pos)
            if block.dtype not in (np.float32, np.float64):
                block = block.astype(np.float32)
            finite = None
            if own is not None:
                block, finite = without_self(block, own[members])
            ranks[members], bad[members] = block_ranks(block, positive_mask(members, n_cols), finite)
            shown.update(1)
    return ranks, bad
