"""Top-k of score blocks: the first items of each query's ranking, exact, block by block.

Tie rule: items are ranked by a stable descending sort, i.e. by decreasing
score and, among equal scores, by increasing position in the gallery given
(``np.argsort(-s, kind="stable")``). Only the top ``depth`` items each
metric needs are materialised (``np.partition`` per row plus an exact tie
fix-up), never a full ranking.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from eccv_metric.core import progress
from eccv_metric.kernels import topk_choice
from eccv_metric.kernels.past import PastTies
from eccv_metric.kernels.ranks import without_self
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.scorers import DeviceScorer
from eccv_metric.kernels.workers import Priority
from eccv_metric.kernels.workers import block_workers
from eccv_metric.kernels.workers import next_ticket

INLINE_BLOCKS = 3  # a ranking of at most this many blocks runs in the calling thread


def stable_topk(
    rows: np.ndarray, k: int, scratch: Scratch | None = None, strategy: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the ``k`` first items of each row under ``argsort(-row, kind="stable")``.

    Exact with ties: the k-th largest value is found with ``np.partition``,
    every item >= it is a candidate, and candidates are ordered by (score
    descending, column ascending). Also returns which rows hold NaN or inf
    (their top-k is meaningless; the caller raises). ``scratch``: reusable
    buffers of the calling thread (fewer page faults on big blocks).

    Long rows (at least ``4 * k * width`` items, ``width`` in 64/32/16/8) have two
    strategies with the same result: ``"partition"`` of the whole row
    (:func:`partition_topk`), or ``"chunks"``: cut into chunks of ``width``
    columns, the k first chunks under (chunk maximum descending, chunk
    ascending) hold the row's top-k (see :func:`chunked_topk`), so the partition
    reads ``k * width`` values, not the row. ``strategy`` (or the environment
    variable ``ECCV_METRIC_TOPK``) forces one; by default the faster one on this
    machine is measured on the first block and kept (:mod:`eccv_metric.kernels.topk_choice`).
    """
    top, bad, _ = ranked_rows(rows, k, scratch, strategy)
    return top, bad


def ranked_rows(
    rows: np.ndarray,
    k: int,
    scratch: Scratch | None = None,
    strategy: str | None = None,
    past: int = 0,
    as_pairs: bool = False,
) -> tuple[np.ndarray, np.ndarray, PastTies | Pairs | None]:
    """:func:`stable_topk`, and with ``past`` > 0 the items of each row past its top-k that score exactly its k-th
    item's score (:class:`PastTies`: their columns, kept for rows with at most ``past`` of them). Found where the
    top-k finds its candidates (every item >= the k-th value), so they cost no other pass over the row; the tie
    note counts a group at a list's end from them (:mod:`eccv_metric.engine.ties`). ``as_pairs``: as the
    (row, column) pairs of :meth:`PastTies.of_pairs`, which :func:`top_ranked_groups` joins once per group."""
    found, bad, pairs = _ranked_pairs(rows, k, scratch, strategy, past)
    return found, bad, pairs if as_pairs or pairs is None else PastTies.of_pairs(*pairs, len(rows), past)


Pairs = tuple[np.ndarray, np.ndarray]  # (row, column) of the items past each list tied with its last, row by row


def _ranked_pairs(
    rows: np.ndarray, k: int, scratch: Scratch | None, strategy: str | None, past: int
) -> tuple[np.ndarray, np.ndarray, Pairs | None]:
    n = rows.shape[1]
    if k >= n:
        finite = np.isfinite(rows.min(axis=1)) & np.isfinite(rows.max(axis=1))
        found = np.argsort(-rows, axis=1, kind="stable").astype(np.int32)
        none = np.zeros(0, np.int64)
        return found, ~finite, ((none, none) if past else None)
    width = next((w for w in CHUNK_WIDTHS if 4 * k * w <= n), 0)
    if not width:
        return partition_topk(rows, k, scratch, past)
    name = topk_choice.forced(strategy)
    if name is None:
        key = topk_choice.key_of(rows.dtype.str, n, k)
        name, time_now = topk_choice.pick(key, may_time=rows.size <= CALIBRATION_ELEMENTS)
        if time_now:
            runs = {
                "chunks": lambda: usable(chunked_topk(rows, k, width, scratch, past)),
                "partition": lambda: usable(partition_topk(rows, k, scratch, past)),
            }
            result, _ = topk_choice.calibrate(key, runs, f"{rows.shape[0]:,} x {n:,} {rows.dtype}")
            return result
    if (name or topk_choice.DEFAULT) == "chunks":
        return chunked_topk(rows, k, width, scratch, past)
    return partition_topk(rows, k, scratch, past)


CALIBRATION_ELEMENTS = 1 << 21  # blocks beyond this (a whole matrix ranked at once) are not timed


def usable(result: tuple[np.ndarray, np.ndarray, Pairs | None]) -> tuple[tuple, bool]:
    """(a top-k result, whether its timing is meaningful: no row held NaN or inf)."""
    return result, not result[1].any()


def partition_topk(
    rows: np.ndarray, k: int, scratch: Scratch | None = None, past: int = 0
) -> tuple[np.ndarray, np.ndarray, Pairs | None]:
    """:func:`ranked_rows` through ``np.partition`` of whole rows (``k < n``), ties past the lists as pairs."""
    n = rows.shape[1]
    part = np.partition(rows, n - k, axis=1)
    # np.partition puts NaN last and +inf can only sit in the top segment; -inf only in the bottom one
    finite = np.isfinite(part[:, n - k :].max(axis=1)) & np.isfinite(part[:, : n - k].min(axis=1))
    if not finite.all():
        return np.zeros((len(rows), k), np.int32), ~finite, None
    top, beyond = select_top(rows, part[:, n - k], k, scratch)
    return top, ~finite, (beyond if past else None)


CHUNK_WIDTHS = (64, 32, 16, 8)


def select_top(
    rows: np.ndarray, kth: np.ndarray, k: int, scratch: Scratch | None = None
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The ``k`` first columns of each row (stable descending order), given each row's k-th largest value; and
    (row, column) of the items equal to the k-th value left past them (row by row, columns ascending)."""
    n = rows.shape[1]
    mask = (scratch or Scratch()).bools(rows.size).reshape(rows.shape)
    np.greater_equal(rows, kth[:, None], out=mask)
    row, col = np.divmod(np.flatnonzero(mask), n)  # candidates: items >= the k-th value, row by row
    counts = np.bincount(row, minlength=len(rows))
    left: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if (counts > k).any():  # ties at the k-th value: keep the first tied columns, only among the candidates
        tied = rows[row, col] == kth[row]
        need = k - np.bincount(row[~tied], minlength=len(rows))
        tied_before = np.cumsum(tied) - tied  # tied candidates before this one, over all rows
        row_start = np.cumsum(counts) - counts
        rank_in_row = tied_before - tied_before[row_start][row]
        keep = ~tied | (rank_in_row < need[row])
        left = (row[~keep], col[~keep])
        col = col[keep]
    return order_by_score(rows, np.arange(len(rows)), col.astype(np.int32).reshape(-1, k)), left


def chunked_topk(
    rows: np.ndarray, k: int, width: int, scratch: Scratch | None = None, past: int = 0
) -> tuple[np.ndarray, np.ndarray, Pairs | None]:
    """:func:`ranked_rows` of long rows through chunk maxima (``k < n // width``), same result (pairs past lists).

    Chunk c holds columns ``[c * width, (c + 1) * width)``; the last ``n % width``
    columns (the tail) are always candidates. Take the k first chunks under
    (maximum descending, chunk ascending), threshold ``t`` = the k-th of those
    maxima. Every item of the top-k of the chunked columns lies in them: the k
    chunks hold k items >= t, so the k-th largest value v is >= t; an item > t
    lies in a chunk whose maximum is > t (all of them are taken); if v = t, the
    tied items the top-k keeps are the first ones in column order, and each
    taken chunk of maximum t holds one, before any chunk of maximum t left out.
    A row's top-k item is in the top-k of the columns it belongs to, so the
    taken chunks and the tail, in column order, ranked as one short row, give
    the row's top-k. NaN / inf: the chunk maxima carry NaN and +inf, the row
    minima -inf. Items equal to v past the top-k (``past``): those of the short
    row, and when v = t those of the chunks of maximum t left out (no other
    chunk holds one).
    """
    m, n = rows.shape
    full = n // width
    chunked = rows[:, : full * width].reshape(m, full, width)
    maxima = chunk_maxima(chunked)
    finite = np.isfinite(maxima.max(axis=1)) & np.isfinite(rows.min(axis=1))
    if full * width < n:
        finite &= np.isfinite(rows[:, full * width :].max(axis=1))
    if not finite.all():
        return np.zeros((m, k), np.int32), ~finite, None
    part = np.partition(maxima, full - k, axis=1)
    chunks = np.sort(select_top(maxima, part[:, full - k], k)[0], axis=1)  # the k chunks, in column order
    values = chunked[np.arange(m)[:, None], chunks].reshape(m, k * width)
    cols = (chunks[:, :, None] * width + np.arange(width, dtype=np.int32)).reshape(m, k * width)
    if full * width < n:
        values = np.concatenate([values, rows[:, full * width :]], axis=1)
        tail = np.broadcast_to(np.arange(full * width, n, dtype=np.int32), (m, n - full * width))
        cols = np.concatenate([cols, tail], axis=1)
    short = values.shape[1]
    kth = np.partition(values, short - k, axis=1)[:, short - k]
    top, (row, at) = select_top(values, kth, k)
    found = np.take_along_axis(cols, top, axis=1).astype(np.int32)
    if not past:
        return found, ~finite, None
    col = cols[row, at].astype(np.int64)
    again = np.flatnonzero(kth == part[:, full - k])  # v = t: chunks of maximum t left out may hold more
    if len(again):
        left = maxima[again] == kth[again, None]
        left[np.arange(len(again))[:, None], chunks[again]] = False
        r, c = np.nonzero(left)
        hit_r, hit_w = np.nonzero(chunked[again[r], c] == kth[again[r], None])
        row = np.concatenate([row, again[r[hit_r]]])
        col = np.concatenate([col, c[hit_r].astype(np.int64) * width + hit_w])
        order = np.argsort(row, kind="stable")
        row, col = row[order], col[order]
    return found, ~finite, (row, col)


def chunk_maxima(chunked: np.ndarray) -> np.ndarray:
    """Maximum of each chunk (last axis) of an (m, chunks, width) view; NaN wins, as in ``np.max``.

    Wide chunks: numpy's reduction; narrow ones: a halving tree of ``np.maximum``
    (measured 2x faster at width 8, slower at width 64).
    """
    width = chunked.shape[2]
    if width >= 32:
        return chunked.max(axis=2)
    half = width // 2
    out = np.maximum(chunked[:, :, :half], chunked[:, :, half:])
    while half > 1:
        half //= 2
        out = np.maximum(out[:, :, :half], out[:, :, half:])
    return out[:, :, 0]


class Scratch(threading.local):
    """Buffers reused by the blocks one thread ranks: a bool mask and a float block."""

    def __init__(self) -> None:
        self._bools = np.zeros(0, dtype=bool)
        self._floats: dict[np.dtype, np.ndarray] = {}

    def bools(self, size: int) -> np.ndarray:
        if len(self._bools) < size:
            self._bools = np.empty(size, dtype=bool)
        return self._bools[:size]

    def floats(self, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
        size = shape[0] * shape[1]
        buf = self._floats.get(dtype)
        if buf is None or len(buf) < size:
            buf = self._floats[dtype] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


def order_by_score(rows: np.ndarray, row_idx: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Reorder the columns (ascending) of rows ``row_idx`` by score descending; ties keep column order.

    float32: one sort of 64-bit keys (descending-score bits above the column),
    which is about twice as fast as a stable argsort of the scores.
    """
    values = rows[row_idx[:, None], cols]
    if values.dtype != np.float32:
        order = np.argsort(-values, axis=1, kind="stable")
        return np.take_along_axis(cols, order, axis=1)
    bits = (values + np.float32(0)).view(np.uint32)  # + 0 turns -0.0 into 0.0: equal scores, equal keys
    # descending order of the float's bits: flip the magnitude of non-negative values, keep negative ones
    bits ^= ((bits >> np.uint32(31)) - np.uint32(1)) & np.uint32(0x7FFFFFFF)
    keys = (bits.astype(np.uint64) << np.uint64(32)) | cols.astype(np.uint64)
    keys.sort(axis=1)
    return (keys & np.uint64(0xFFFFFFFF)).astype(np.int32)


@dataclass(frozen=True)
class TopRanked:
    """What :func:`ranked_top` finds: ``top`` (gallery positions of the scorer), ``bad`` (queries whose scores hold
    NaN or inf), ``values`` (the score of each top item as the block held it: what the tie note compares);
    ``past``: the items past each list that tie with its last item (:class:`PastTies`, gallery positions); None
    where not asked for, or not counted (a device scorer)."""

    top: np.ndarray
    bad: np.ndarray
    values: np.ndarray
    past: PastTies | None = None


def top_ranked(
    scorer: BlockScorer,
    query_pos: np.ndarray,
    k: int,
    gallery_pos: np.ndarray | None = None,
    priority: Priority | None = None,
    own: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(top, bad, values) of :func:`ranked_top`."""
    found = ranked_top(scorer, query_pos, k, gallery_pos, priority, own)
    return found.top, found.bad, found.values


def ranked_top(
    scorer: BlockScorer,
    query_pos: np.ndarray,
    k: int,
    gallery_pos: np.ndarray | None = None,
    priority: Priority | None = None,
    own: np.ndarray | None = None,
    past: int = 0,
) -> TopRanked:
    """Top-``k`` gallery positions for the scorer's query rows ``query_pos`` (:class:`TopRanked`).

    ``gallery_pos``: restrict the gallery to these (ascending) positions. ``own``: for each query, the position
    (into the restricted gallery) of its own item, which is left out (-1: none). ``past`` > 0: also count the
    items past each list that tie with its last item, and keep their positions where at most ``past``
    (:func:`ranked_rows`). Blocks run on the shared block workers when the scorer allows it, a lower
    ``priority`` first (default: a new evaluation's ticket). A scorer that computes aligned blocks is read one
    aligned block at a time (each computed once); a :class:`~eccv_metric.kernels.scorers.DeviceScorer` ranks
    on its device.
    """
    one = np.zeros(len(query_pos), np.int64)
    return top_ranked_groups(scorer, query_pos, [k], one, gallery_pos, priority, own, [past])[0]


def top_ranked_groups(
    scorer: BlockScorer,
    query_pos: np.ndarray,
    ks: list[int],
    group: np.ndarray,
    gallery_pos: np.ndarray | None = None,
    priority: Priority | None = None,
    own: np.ndarray | None = None,
    pasts: list[int] | None = None,
) -> list[TopRanked]:
    """:func:`ranked_top` of queries in groups, the queries of group ``g`` (``group``: each query's) ranked
    ``ks[g]`` deep (``pasts[g]``: its ``past``), in one pass over the scores: a block holding queries of several
    groups is read, or computed, once, and each group's rows of it are ranked at the group's depth. Per group,
    the :class:`TopRanked` of its queries in their given order, as :func:`ranked_top` gives it (every group's
    lists empty where any query's scores hold NaN or inf)."""
    members = [np.flatnonzero(group == g) for g in range(len(ks))]
    if isinstance(scorer, DeviceScorer):
        return [
            TopRanked(*scorer.top_ranked(query_pos[m], k, gallery_pos, None if own is None else own[m]))
            for m, k in zip(members, ks, strict=True)
        ]
    order = np.argsort(query_pos, kind="stable")  # read the scores in storage order
    query_pos, grouped = query_pos[order], group[order]
    own = None if own is None else own[order]
    n_gal = scorer.n_gallery if gallery_pos is None else len(gallery_pos)
    chunk = scorer.rows_per_block(n_gal, topk=True)
    starts = aligned_starts(query_pos, scorer.aligned) if scorer.aligned else range(0, len(query_pos), chunk)
    ends = dict(zip(starts, [*starts[1:], len(query_pos)], strict=True))
    scratch = Scratch()

    many = len(starts) > INLINE_BLOCKS
    what = f"ranking {len(query_pos):,} queries x {n_gal:,} items"
    shown = progress.bar(what, len(starts), "block") if many else progress.NoBar()

    def work(start: int) -> list[tuple]:
        block = scorer.block(query_pos[start : ends[start]], gallery_pos, scratch)
        block, finite = (block, None) if own is None else without_self(block, own[start : ends[start]])
        here = grouped[start : ends[start]]
        pieces = []
        for g in np.unique(here).tolist():  # the groups of this block's rows: a few, never one per query
            rows = np.flatnonzero(here == g)
            part = block if len(rows) == len(here) else block[rows]
            cap = pasts[g] if pasts else 0
            top, bad, beyond = ranked_rows(part, ks[g], scratch, past=cap, as_pairs=True)
            if beyond is not None:  # capped in the block: memory bounded by the lists, not by the ties
                beyond = PastTies.capped(*beyond, len(part), cap)  # type: ignore[misc]
            if finite is not None:
                bad |= ~finite[rows]
            values = np.take_along_axis(part, top, axis=1) if not bad.any() else np.zeros(top.shape, part.dtype)
            pieces.append((g, start + rows, top, bad, values, beyond))  # beyond: None where bad (then unread)
        shown.update(1)
        return pieces

    workers = block_workers() if scorer.parallel else None
    with shown:
        if workers is not None and many:
            parts = workers.map(work, starts, (next_ticket(), -len(query_pos)) if priority is None else priority)
        else:  # a few blocks run in the calling thread: they never queue behind another ranking
            parts = [work(s) for s in starts]
    pieces = [piece for block in parts for piece in block]
    bad = np.zeros(len(query_pos), bool)
    for _, rows, _, part_bad, _, _ in pieces:
        bad[order[rows]] = part_bad
    if bad.any():
        return [TopRanked(np.zeros((len(m), 0), np.int32), bad[m], np.zeros((len(m), 0))) for m in members]
    local = np.zeros(len(query_pos), np.int64)  # each query's place among its group's queries
    for m in members:
        local[m] = np.arange(len(m))
    dtype = pieces[0][4].dtype if pieces else np.float64
    out = [(np.empty((len(m), k), np.int32), np.empty((len(m), k), dtype)) for m, k in zip(members, ks, strict=True)]
    for g, rows, part_top, _, part_values, _ in pieces:  # no concatenated copy of them all
        at = local[order[rows]]
        out[g][0][at], out[g][1][at] = part_top, part_values
    found = []
    for g, (top, values) in enumerate(out):
        mine = [(local[order[piece[1]]], piece[5]) for piece in pieces if piece[0] == g]
        past = PastTies.of_blocks(mine, len(members[g]), pasts[g]) if pasts and pasts[g] > 0 else None
        if gallery_pos is not None:
            top = gallery_pos[top].astype(np.int32)
            past = None if past is None else past.with_items(gallery_pos[past.items].astype(np.int32))
        found.append(TopRanked(top, bad[members[g]], values, past))
    return found


def aligned_starts(sorted_pos: np.ndarray, aligned: int) -> list[int]:
    """Where each aligned block of rows (``[b * aligned, (b + 1) * aligned)``) begins in ascending positions."""
    if not len(sorted_pos):
        return []
    blocks = sorted_pos // aligned
    return [0, *(np.flatnonzero(np.diff(blocks)) + 1).tolist()]
