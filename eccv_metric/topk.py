"""Top-k of score matrices: the first items of each query's ranking, exact, block by block.

Tie rule: items are ranked by a stable descending sort, i.e. by decreasing
score and, among equal scores, by increasing position in the gallery id array
given (``np.argsort(-s, kind="stable")``). Only the top ``depth`` items each
metric needs are materialised (``np.partition`` per row plus an exact tie
fix-up), never the full 5,000 x 25,000 ranking.
"""

from __future__ import annotations

import threading

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.workers import Priority
from eccv_metric.workers import block_workers
from eccv_metric.workers import next_ticket

_CHUNK_ELEMENTS = 1 << 22
# top-k blocks of about 2 MB (float32): the block, its partitioned copy and its mask stay in cache between passes
_TOPK_ELEMENTS = 1 << 19
_INLINE_BLOCKS = 3  # a ranking of at most this many blocks runs in the calling thread


def as_score_matrix(scores: object) -> np.ndarray:
    """A 2-D float16/32/64 numpy array from numpy or torch input (torch is not imported)."""
    if hasattr(scores, "detach") and hasattr(scores, "cpu"):
        tensor = scores.detach().cpu()  # type: ignore[attr-defined]
        if str(getattr(tensor, "dtype", "")) == "torch.bfloat16":
            tensor = tensor.float()
        scores = tensor.numpy()
    arr = np.asarray(scores)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (2, 4, 8):
        raise EvaluationError(f"scores must be float16, float32 or float64, not {arr.dtype}")
    if arr.ndim != 2:
        raise EvaluationError(f"scores must be a 2-D (images x captions) matrix, got shape {arr.shape}")
    return arr


def stable_topk(rows: np.ndarray, k: int, scratch: Scratch | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the ``k`` first items of each row under ``argsort(-row, kind="stable")``.

    Exact with ties: the k-th largest value is found with ``np.partition``,
    every item >= it is a candidate, and candidates are ordered by (score
    descending, column ascending). Also returns which rows hold NaN or inf
    (their top-k is meaningless; the caller raises). ``scratch``: reusable
    buffers of the calling thread (fewer page faults on big blocks).
    """
    n = rows.shape[1]
    if k >= n:
        finite = np.isfinite(rows.min(axis=1)) & np.isfinite(rows.max(axis=1))
        return np.argsort(-rows, axis=1, kind="stable").astype(np.int32), ~finite
    part = np.partition(rows, n - k, axis=1)
    # np.partition puts NaN last and +inf can only sit in the top segment; -inf only in the bottom one
    finite = np.isfinite(part[:, n - k :].max(axis=1)) & np.isfinite(part[:, : n - k].min(axis=1))
    if not finite.all():
        return np.zeros((len(rows), k), np.int32), ~finite
    kth = part[:, n - k]
    mask = (scratch or Scratch()).bools(rows.size).reshape(rows.shape)
    np.greater_equal(rows, kth[:, None], out=mask)
    row, col = np.divmod(np.flatnonzero(mask), n)  # candidates: items >= the k-th value, row by row
    counts = np.bincount(row, minlength=len(rows))
    if (counts > k).any():  # ties at the k-th value: keep the first tied columns, only among the candidates
        tied = rows[row, col] == kth[row]
        need = k - np.bincount(row[~tied], minlength=len(rows))
        tied_before = np.cumsum(tied) - tied  # tied candidates before this one, over all rows
        row_start = np.cumsum(counts) - counts
        rank_in_row = tied_before - tied_before[row_start][row]
        col = col[~tied | (rank_in_row < need[row])]
    return _by_score(rows, np.arange(len(rows)), col.astype(np.int32).reshape(-1, k)), ~finite


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


def _by_score(rows: np.ndarray, row_idx: np.ndarray, cols: np.ndarray) -> np.ndarray:
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


def top_ranked(
    scores: np.ndarray,
    query_pos: np.ndarray,
    k: int,
    along_columns: bool,
    gallery_pos: np.ndarray | None = None,
    priority: Priority | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` gallery positions for each query row (or column) of ``scores``.

    ``query_pos``: row positions (or column positions if ``along_columns``);
    ``gallery_pos``: restrict the gallery to these (ascending) positions of the
    other axis. Returns (top positions into the gallery axis, bool mask of
    queries whose scores hold NaN or inf). Blocks run on the shared block
    workers, a lower ``priority`` first (default: a new evaluation's ticket).
    """
    order = np.argsort(query_pos, kind="stable")  # read the matrix in storage order
    query_pos = query_pos[order]
    n_gal = scores.shape[0 if along_columns else 1] if gallery_pos is None else len(gallery_pos)
    chunk = max(1, min(512, _TOPK_ELEMENTS // max(1, n_gal)))
    starts = range(0, len(query_pos), chunk)

    scratch = Scratch()

    def work(start: int) -> tuple[np.ndarray, np.ndarray]:
        pos = query_pos[start : start + chunk]
        if not along_columns:
            return stable_topk(_query_block(scores, pos, False, gallery_pos), k, scratch)
        return stable_topk(_column_block(scores, pos, gallery_pos, scratch), k, scratch)

    workers = block_workers()
    if workers is not None and len(starts) > _INLINE_BLOCKS:
        parts = workers.map(work, starts, (next_ticket(), -len(query_pos)) if priority is None else priority)
    else:  # a few blocks run in the calling thread: they never queue behind another ranking
        parts = [work(s) for s in starts]
    bad = np.zeros(len(query_pos), bool)
    if parts:
        bad[order] = np.concatenate([p[1] for p in parts])
    if bad.any():
        return np.zeros((len(query_pos), 0), np.int32), bad
    top = np.empty((len(query_pos), k), np.int32)
    if parts:
        top[order] = np.concatenate([p[0] for p in parts])
    if gallery_pos is not None:
        top = gallery_pos[top].astype(np.int32)
    return top, bad


def _query_block(
    scores: np.ndarray, pos: np.ndarray, along_columns: bool, gallery_pos: np.ndarray | None
) -> np.ndarray:
    """Scores of some queries as a C-contiguous (queries x gallery) float32/64 block."""
    if along_columns:
        return _column_block(scores, pos, gallery_pos)
    block = _take(scores, pos, axis=0)
    if gallery_pos is not None:
        block = _take(block, gallery_pos, axis=1)
    return np.ascontiguousarray(block, dtype=np.float32 if scores.dtype == np.float16 else scores.dtype)


def _column_block(
    scores: np.ndarray, pos: np.ndarray, gallery_pos: np.ndarray | None, scratch: Scratch | None = None
) -> np.ndarray:
    """Columns ``pos`` of ``scores`` (rows ``gallery_pos``) as a C-contiguous float32/64 (queries x gallery) copy.

    With ``scratch`` the copy is the thread's reusable buffer (valid until its next block).
    """
    dtype = np.dtype(np.float32 if scores.dtype == np.float16 else scores.dtype)
    if gallery_pos is not None and _is_range(gallery_pos):
        scores, gallery_pos = _take(scores, gallery_pos, axis=0), None  # a view: restrict rows first
    cols = _take(scores, pos, axis=1)
    if gallery_pos is not None:
        cols = _take(cols, gallery_pos, axis=0)
    shape = (cols.shape[1], cols.shape[0])
    out = np.empty(shape, dtype=dtype) if scratch is None else scratch.floats(shape, dtype)
    tile = 512
    for r in range(0, cols.shape[0], tile):  # tiled transpose: cache friendly
        out[:, r : r + tile] = cols[r : r + tile].T
    return out


def _is_range(pos: np.ndarray) -> bool:
    return bool(len(pos)) and pos[-1] - pos[0] == len(pos) - 1 and bool((np.diff(pos) == 1).all())


def _take(arr: np.ndarray, pos: np.ndarray, axis: int) -> np.ndarray:
    """``arr.take(pos, axis)``, as a view when ``pos`` is a contiguous ascending range."""
    if _is_range(pos):
        return arr[pos[0] : pos[-1] + 1] if axis == 0 else arr[:, pos[0] : pos[-1] + 1]
    return arr.take(pos, axis=axis)
