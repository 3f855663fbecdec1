"""Exact rank of each query's best-ranked positive, straight from the scores (any depth, one pass).

``rank(q)`` = 1-based rank of query q's best-ranked positive under the stable
descending order (ties: the item given first wins):
``rank = #{g : s[g] > s*} + #{g before p* : s[g] = s*} + 1``, where ``s*`` is
the best positive score and ``p*`` the first gallery position holding a
positive with that score. Used for MedR / MeanR and for R@K with a K too deep
for a top-K (``R@K = 1[rank <= K]``). A query's own item (intramodal views)
takes no part: it is ranked below every other item, so it never counts.

Scorers that compute their blocks (a matrix product per block: embeddings,
on numpy or on a torch device) are read in *aligned* blocks, fixed row ranges
of the scorer's queries, by :func:`shared_first_ranks`: one pass computes each
block once and serves every request on that scorer (every relevance, every
view, every gallery restriction), so the caption-caption product of cxc_t2t
and coco_t2t is computed once, and a similarity's bits come from the same
product call whichever metrics are asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eccv_metric.core import progress
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.scorers import DeviceScorer

PositiveMask = Callable[[np.ndarray, int], np.ndarray]


def block_ranks(
    block: np.ndarray, mask: np.ndarray, finite: np.ndarray | None = None, own: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ranks, bad) of :func:`block_spans` (the ranks under the given order, and the rows it cannot rank)."""
    found = block_spans(block, mask, finite, own)
    return found.ranks, found.bad


@dataclass(frozen=True)
class Ranked:
    """Exact ranks of some queries' best-ranked positives, and how far another order of equal scores moves them.

    ``ranks``: 1-based, under the scorer's order of equal scores (the given order, or ``ties="trec_eval"``'s);
    ``bad``: rows holding NaN / inf or no positive (rank 0 there). ``low`` / ``high``: the best and the worst rank
    any order of equal scores gives the best positive: ``low = #{higher} + 1`` and ``high = low + #{other items
    whose score equals the best positive score and that are not positives}``; ``low < high`` exactly when the
    rank is *decided by tie order*: another tie rule could give another rank (positives tied with each other
    decide nothing: whichever comes first, the first positive's rank is the same).
    """

    ranks: np.ndarray
    bad: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Ranked:
        return cls(np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n))

    def put(self, members: np.ndarray, part: Ranked) -> None:
        """Write ``part`` (rows aligned with ``members``) into these arrays."""
        self.ranks[members], self.bad[members] = part.ranks, part.bad
        self.low[members], self.high[members] = part.low, part.high


def block_spans(
    block: np.ndarray,
    mask: np.ndarray,
    finite: np.ndarray | None = None,
    own: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> Ranked:
    """Ranks of the best positive (``mask``) of each row of ``block``; ``finite``: rows known free of NaN/inf.

    ``own``: each row's own column (-1: none), which takes no part (as if scored below every other item: the
    rank of a row whose only positive is its own item is the row length). ``excluded`` (rows x m, -1 padded):
    columns of each row that take no part at all, as if removed from the row (a two-stage ranking's candidates,
    ranked apart: :mod:`eccv_metric.inputs.twostage`); never a row's own column. ``block`` is only read;
    ``mask`` may be modified. Returns :class:`Ranked`: bad rows hold NaN / inf (outside their own column) or
    no positive (rank 0 there).

    Two comparisons of the block with each row's best positive score count the higher and the equal items;
    only rows where another item ties with that score are read again, for the tied items before it. The
    excluded columns' scores are gathered (m per row) and taken off those counts.
    """
    m, n = block.shape
    own_only = np.zeros(m, dtype=bool)
    if own is not None:
        has = np.flatnonzero(own >= 0)
        own_cols = own[has]
        own_values = block[has, own_cols]
        own_only[has] = mask[has, own_cols]
        mask[has, own_cols] = False
    if excluded is not None:
        ex_rows, ex_cols = np.nonzero(excluded >= 0)
        ex_cols = excluded[ex_rows, ex_cols]
        mask[ex_rows, ex_cols] = False
    if finite is None:
        finite = row_finite(block, own)
    pos_rows, pos_cols = np.divmod(np.flatnonzero(mask), n)  # row by row, columns ascending
    counts = np.bincount(pos_rows, minlength=m)
    found = counts > 0
    own_only &= ~found
    best = np.full(m, -np.inf, dtype=block.dtype)
    values = block[pos_rows, pos_cols]
    if len(values):
        best[found] = np.maximum.reduceat(values, (np.cumsum(counts) - counts)[found])
    at_best = np.flatnonzero(values == best[pos_rows])  # row by row: the first of each row is p*
    lead = at_best[np.r_[True, pos_rows[at_best[1:]] != pos_rows[at_best[:-1]]]] if len(at_best) else at_best
    first = np.full(m, n, dtype=np.int64)  # p*: the first positive column holding the best positive score
    first[pos_rows[lead]] = pos_cols[lead]
    tied_positives = np.bincount(pos_rows[at_best], minlength=m)
    threshold = best[:, None]
    higher = row_counts(block > threshold)
    equal = row_counts(block == threshold)
    if own is not None:  # the own column never counts
        higher[has] -= own_values > best[has]
        equal[has] -= own_values == best[has]
    before = np.zeros(m, dtype=np.int64)
    tied = np.flatnonzero(found & (equal > 1))  # other items tie with the best positive: count those before p*
    if len(tied):
        part = block[tied]
        before[tied] = row_counts((part == threshold[tied]) & (np.arange(n) < first[tied, None]))
        if own is not None:
            at = np.flatnonzero(own[tied] >= 0)
            mine = own[tied[at]]
            before[tied[at]] -= (part[at, mine] == best[tied[at]]) & (mine < first[tied[at]])
    length = np.full(m, n, dtype=np.int64)
    if excluded is not None:  # removed columns: off every count, and off the row's length
        ex_values = block[ex_rows, ex_cols]
        higher -= np.bincount(ex_rows, ex_values > best[ex_rows], minlength=m).astype(np.int64)
        is_equal = ex_values == best[ex_rows]
        equal -= np.bincount(ex_rows, is_equal, minlength=m).astype(np.int64)
        before -= np.bincount(ex_rows, is_equal & (ex_cols < first[ex_rows]), minlength=m).astype(np.int64)
        length -= np.bincount(ex_rows, minlength=m)
    low = (higher + 1).astype(np.float64)
    ranks = low + before
    high = low + (equal - tied_positives)
    ranks[own_only] = low[own_only] = high[own_only] = length[own_only]
    bad = ~finite | ~(found | own_only)
    return Ranked(np.where(bad, 0, ranks), bad, np.where(bad, 0, low), np.where(bad, 0, high))


def row_counts(flags: np.ndarray) -> np.ndarray:
    """True values per row of a 2-D bool array (int64): rows summed eight bytes at a time (a bool is 0 or 1, so
    255 summed words cannot carry between bytes), about 3x numpy's ``count_nonzero(axis=1)``."""
    m, n = flags.shape
    flags = np.ascontiguousarray(flags)
    words = n // 8
    out = np.count_nonzero(flags[:, words * 8 :], axis=1).astype(np.int64)
    packed = flags[:, : words * 8].view(np.uint64)
    for start in range(0, words, 255):
        lanes = np.add.reduce(packed[:, start : start + 255], axis=1, dtype=np.uint64)
        out += lanes.view(np.uint8).reshape(m, 8).sum(axis=1, dtype=np.int64)
    return out


def row_finite(block: np.ndarray, own: np.ndarray | None = None) -> np.ndarray:
    """Rows free of NaN / inf (each row's own column, ``own`` >= 0, left out): two reductions, no copy."""
    finite = np.isfinite(block.max(axis=1)) & np.isfinite(block.min(axis=1))
    if own is not None:
        again = np.flatnonzero(~finite & (own >= 0))  # rare: decided again without the own column
        if len(again):
            part = np.isfinite(block[again])
            part[np.arange(len(again)), own[again]] = True
            finite[again] = part.all(axis=1)
    return finite


@dataclass(frozen=True)
class RankRequest:
    """Exact ranks of some scorer rows: ``positive_mask(members, n_cols)`` gives the positives of the queries at
    positions ``members`` of ``query_pos`` over the gallery columns ``gallery_pos`` (None: all); ``own``: each
    query's own column among them (-1: none); ``excluded``: columns of each query that take no part (rows x m,
    -1 padded; see :func:`block_spans`)."""

    query_pos: np.ndarray
    positive_mask: PositiveMask
    gallery_pos: np.ndarray | None = None
    own: np.ndarray | None = None
    excluded: np.ndarray | None = None


def first_ranks(
    scorer: BlockScorer,
    query_pos: np.ndarray,
    positive_mask: PositiveMask,
    gallery_pos: np.ndarray | None = None,
    own: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ranks of the scorer's query rows ``query_pos``: (ranks, bad) of :func:`rank_request`."""
    found = rank_request(scorer, RankRequest(query_pos, positive_mask, gallery_pos, own))
    return found.ranks, found.bad


def rank_request(scorer: BlockScorer, request: RankRequest) -> Ranked:
    """Exact ranks of a request's query rows (a block of queries at a time, calling thread).

    ``positive_mask(members, n_cols)``: bool (len(members) x n_cols) positives of the queries at positions
    ``members`` of ``query_pos``, over the (restricted) gallery columns. ``gallery_pos`` / ``own``: as in
    :func:`~eccv_metric.kernels.topk.top_ranked`. Returns :class:`Ranked` (see :func:`block_spans`).
    """
    if scorer.aligned:
        return shared_first_ranks(scorer, [request])[0]
    query_pos, own, excluded = request.query_pos, request.own, request.excluded
    n_cols = scorer.n_gallery if request.gallery_pos is None else len(request.gallery_pos)
    step = scorer.rows_per_block(n_cols, topk=False)
    out = Ranked.empty(len(query_pos))
    starts = range(0, len(query_pos), step)
    with progress.bar(f"exact ranks of {len(query_pos):,} queries x {n_cols:,} items", len(starts), "block") as shown:
        for start in starts:
            members = np.arange(start, min(start + step, len(query_pos)))
            block = scorer.block(query_pos[members], request.gallery_pos)
            if block.dtype not in (np.float32, np.float64):
                block = block.astype(np.float32)
            finite = None
            if own is not None:
                block, finite = without_self(block, own[members])
            mask = request.positive_mask(members, n_cols)
            out.put(members, block_spans(block, mask, finite, None, None if excluded is None else excluded[members]))
            shown.update(1)
    return out


def rank_all(scorer: BlockScorer, requests: list[RankRequest]) -> list[Ranked]:
    """:class:`Ranked` of each request on one scorer: one shared pass when the scorer computes its blocks
    (aligned), else request by request (blocks of a stored matrix are read, not computed)."""
    if scorer.aligned:
        return shared_first_ranks(scorer, requests)
    return [rank_request(scorer, r) for r in requests]


def shared_first_ranks(scorer: BlockScorer, requests: list[RankRequest]) -> list[Ranked]:
    """:func:`rank_request` of every request on one scorer whose blocks are computed, in one pass.

    The scorer's query rows are read in aligned blocks (rows ``[b * scorer.aligned, (b + 1) * scorer.aligned)``,
    every gallery column); each block any request needs is computed once, and each request ranks its rows of it
    (its gallery columns, its own columns left out). Memory: one block and one request's part of it at a time.
    On a :class:`~eccv_metric.kernels.scorers.DeviceScorer` the blocks and the counts stay on its device.
    """
    step = scorer.aligned
    device = scorer if isinstance(scorer, DeviceScorer) else None
    sorted_pos = []
    for request in requests:
        order = np.argsort(request.query_pos, kind="stable")
        sorted_pos.append((order, request.query_pos[order]))
    needed = np.unique(np.concatenate([pos // step for _, pos in sorted_pos])) if requests else np.zeros(0, np.int64)
    out = [Ranked.empty(len(r.query_pos)) for r in requests]
    what = f"exact ranks of {scorer.n_queries:,} queries x {scorer.n_gallery:,} items"
    with progress.bar(what, len(needed), "block") as shown:
        for b in needed.tolist():
            start = b * step
            block = device.aligned_block(b) if device is not None else full_block(scorer, start)
            for request, (order, pos), found in zip(requests, sorted_pos, out, strict=True):
                lo, hi = np.searchsorted(pos, [start, start + step])
                if lo == hi:
                    continue
                members = order[lo:hi]
                local = request.query_pos[members] - start
                n_cols = scorer.n_gallery if request.gallery_pos is None else len(request.gallery_pos)
                mask = request.positive_mask(members, n_cols)
                own = None if request.own is None else request.own[members]
                excluded = None if request.excluded is None else request.excluded[members]
                if device is not None:
                    counted = device.count_ranks(block, local, request.gallery_pos, mask, own, excluded)
                    found.put(members, Ranked(*counted))
                    continue
                whole = len(local) == len(block) and local[-1] - local[0] == len(local) - 1
                part = block if whole else block[local]
                if request.gallery_pos is not None:
                    part = part[:, request.gallery_pos]
                found.put(members, block_spans(part, mask, None, own, excluded))
            shown.update(1)
    return out


def count_equal(
    scorer: BlockScorer,
    request: RankRequest,
    values: np.ndarray,
    excluded: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(items scoring exactly ``values[i]``, positives among them) for each query row of ``request`` (its own
    column and its ``excluded`` columns, rows x m -1 padded, left out); blocks read as the ranks read them, so
    a score has the same bits."""
    query_pos = request.query_pos
    n_cols = scorer.n_gallery if request.gallery_pos is None else len(request.gallery_pos)
    step = scorer.rows_per_block(n_cols, topk=False)
    n_equal = np.zeros(len(query_pos), np.int64)
    n_positive = np.zeros(len(query_pos), np.int64)
    for start in range(0, len(query_pos), step):
        members = np.arange(start, min(start + step, len(query_pos)))
        block = scorer.block(query_pos[members], request.gallery_pos)
        if block.dtype not in (np.float32, np.float64):
            block = block.astype(np.float32)
        equal = block == np.asarray(values[members], dtype=block.dtype)[:, None]
        gone = [] if request.own is None else [request.own[members][:, None]]
        gone += [] if excluded is None else [excluded[members]]
        for cols in gone:
            rows, at = np.nonzero(cols >= 0)
            equal[rows, cols[rows, at]] = False
        n_equal[members] = row_counts(equal)
        n_positive[members] = row_counts(equal & request.positive_mask(members, n_cols))
    return n_equal, n_positive


def full_block(scorer: BlockScorer, start: int) -> np.ndarray:
    """Scores of the aligned block of rows from ``start``, every gallery column, as float32/64 (read only)."""
    rows = np.arange(start, min(start + scorer.aligned, scorer.n_queries))
    block = scorer.block(rows, None)
    if block.dtype not in (np.float32, np.float64):
        block = block.astype(np.float32)
    block.flags.writeable = False
    return block


def without_self(block: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``block`` with each row's own column scored strictly below the rest of its row, rows free of NaN/inf).

    The own column (``own[r]`` >= 0) gets ``nextafter(min(row without it, 0), -inf)``:
    it can never enter a top-K of K < the row length nor count in a rank, and
    its given value is never looked at (a NaN there is no error). The block is
    copied first when it may be the caller's data (a view of a given matrix).
    """
    if block.base is not None or not block.flags.writeable:
        block = block.copy()
    rows = np.flatnonzero(own >= 0)
    block[rows, own[rows]] = 0
    finite = np.isfinite(block).all(axis=1)
    low = np.nextafter(block.min(axis=1)[rows], block.dtype.type(-np.inf))
    block[rows, own[rows]] = low
    return block, finite
