"""Ranked lists as integer arrays: from the official dict format or from a score matrix.

Tie rule for score matrices: items are ranked by a stable descending sort,
i.e. by decreasing score and, among equal scores, by increasing position in
the gallery id array given (``np.argsort(-s, kind="stable")``). Only the top
``depth`` items each metric needs are materialised (``np.partition`` per row
plus an exact tie fix-up), never the full 5,000 x 25,000 ranking.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Mapping
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.groundtruth import IdIndex

QUERY_KIND = {"i2t": "image", "t2i": "caption"}
GALLERY_KIND = {"i2t": "caption", "t2i": "image"}
_CHUNK_ELEMENTS = 1 << 22
# top-k blocks of about 2 MB (float32): the block, its partitioned copy and its mask stay in cache between passes
_TOPK_ELEMENTS = 1 << 19


@dataclass(frozen=True)
class RankedLists:
    """The ranked lists of one direction.

    ``items[k, :depth]`` are the first ranked gallery items (dense indices; -1
    for an item that is not in the test split, e.g. an extra gallery id) of
    query ``query[k]``; ``lengths[k]`` is how long the whole list is (it may
    exceed ``depth``: the rest was not needed). ``gallery_size`` is the number
    of items that were ranked.
    """

    direction: str
    query: np.ndarray
    items: np.ndarray
    lengths: np.ndarray
    gallery_size: int

    @cached_property
    def _row_of_query(self) -> np.ndarray:
        table = np.full(int(self.query.max(initial=-1)) + 1, -1, dtype=np.int64)
        table[self.query] = np.arange(len(self.query))
        return table

    def rows(self, queries: np.ndarray, gt: GroundTruth, needed_by: str) -> np.ndarray:
        """Row of each dense query index; an error names the queries the lists lack."""
        table = self._row_of_query
        known = queries < len(table)
        rows = np.full(len(queries), -1, dtype=np.int64)
        rows[known] = table[queries[known]]
        if (rows < 0).any():
            missing = gt.query_index(self.direction).ids[queries[rows < 0]]
            raise EvaluationError(
                f"{self.direction}: {len(missing)} query {QUERY_KIND[self.direction]} id(s) needed by "
                f"{needed_by} have no ranked list: {preview(missing)}"
            )
        return rows


def from_dict(rankings: Mapping[int, Sequence[int]], direction: str, gt: GroundTruth) -> RankedLists:
    """Validate and convert ``{query id: [ranked gallery ids]}`` (the official format)."""
    if not isinstance(rankings, Mapping):
        raise EvaluationError(
            f"{direction} rankings must be a dict {{query id: [ranked ids]}}, not {type(rankings).__name__}"
        )
    keys = list(rankings.keys())
    key_arr = _int_array(keys, f"{direction} query ids")
    if key_arr.ndim != 1:
        raise EvaluationError(f"{direction} query ids must be single integers")
    qpos = _query_positions(key_arr, direction, gt)
    values = list(rankings.values())
    gallery = gt.gallery_index(direction)
    require_sequences(values, keys, f"{direction} query")
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = int(lengths.max(initial=0))
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // max(1, width))
    if len(values) <= rows_per_chunk:
        items = _convert(values, lengths, key_arr, gallery, direction)
    else:
        items = np.full((len(values), width), -1, dtype=np.int32)
        for start in range(0, len(values), rows_per_chunk):
            stop = min(start + rows_per_chunk, len(values))
            part = _convert(values[start:stop], lengths[start:stop], key_arr[start:stop], gallery, direction)
            items[start:stop, : part.shape[1]] = part
    return RankedLists(direction, qpos, items, lengths, len(gallery))


def from_arrays(
    query_ids: object, ranked: object, direction: str, gt: GroundTruth, lengths: object = None
) -> RankedLists:
    """Validate and convert ranked lists given as arrays (no Python lists involved).

    ``query_ids``: 1-D ints; ``ranked``: a 2-D int array (one row per query), or
    a flat int array of all lists concatenated with their ``lengths``.
    """
    keys = int_ids(query_ids, f"{direction} query ids", ndim=1)
    ranked = int_ids(ranked, f"{direction} ranked ids")
    if lengths is None:
        if ranked.ndim != 2 or len(ranked) != len(keys):
            raise EvaluationError(
                f"{direction}: ranked ids must be a 2-D array with one row per query "
                f"({len(keys)} queries), got shape {ranked.shape}"
            )
        lengths = np.full(len(keys), ranked.shape[1], dtype=np.int64)
    else:
        lengths = int_ids(lengths, f"{direction} list lengths")
        if lengths.shape != keys.shape or ranked.ndim != 1 or int(lengths.sum()) != len(ranked) or (lengths < 0).any():
            raise EvaluationError(
                f"{direction}: lengths must give one non-negative length per query summing to the ids"
            )
        if len(lengths) and (lengths == lengths[0]).all():
            ranked = ranked.reshape(len(lengths), int(lengths[0]))  # equal lengths: no padding needed
    qpos = _query_positions(keys, direction, gt)
    gallery = gt.gallery_index(direction)
    return RankedLists(direction, qpos, _dense_rows(ranked, lengths, keys, gallery, direction), lengths, len(gallery))


def int_ids(values: object, what: str, ndim: int | None = None) -> np.ndarray:
    """An int64 array of ids from a list, numpy array or torch tensor; floats, strings and mixed values raise."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        values = values.detach().cpu().numpy()  # type: ignore[attr-defined]
    scalar = not hasattr(values, "__iter__") or (isinstance(values, np.ndarray) and values.ndim == 0)
    if scalar or isinstance(values, (str, bytes, Mapping, set, frozenset)):
        raise EvaluationError(
            f"{what} must be a list or array of integer ids (in order), not {type(values).__name__} {values!r:.40}"
        )
    arr = _int_array(values if isinstance(values, (np.ndarray, list)) else list(values), what)  # type: ignore[call-overload]
    if ndim is not None and arr.ndim != ndim:
        raise EvaluationError(f"{what} must be {'a flat list' if ndim == 1 else f'{ndim}-D'}, got shape {arr.shape}")
    return arr


def check_extra_ids(ids: np.ndarray, index: IdIndex, other: IdIndex) -> None:
    """Ids beside the test split (extra gallery items) must be non-negative and not ids of the other modality.

    A negative id, or a test-split caption id among image ids (or the
    reverse), is a mix-up, not a distractor: refused rather than ranked as a
    negative.
    """
    if len(ids) and ids.min() < 0:
        raise EvaluationError(f"{index.kind} ids must be non-negative: {preview(ids[ids < 0])}")
    extra = ids[index.positions(ids) < 0]
    crossed = extra[other.positions(extra) >= 0]
    if len(crossed):
        raise EvaluationError(
            f"{len(crossed)} of the {index.kind} ids beside the test split are test-split {other.kind} ids "
            f"(a mix-up of image and caption ids?): {preview(crossed)}"
        )


def require_sequences(values: list, keys: Sequence[object], label: str) -> None:
    """Each ranked list must be a sequence: a list, a tuple or a 1-D integer array.

    A dict (``{id: score}``) or a set has no rank order we may trust (its
    insertion or hash order is not the order of its scores): refused, as are
    strings and scalars. Checked per distinct type, not per list.
    """
    kinds = set(map(type, values))
    if kinds <= {list, tuple}:
        return
    for key, value in zip(keys, values, strict=True):
        if isinstance(value, (list, tuple)):
            continue
        if isinstance(value, np.ndarray) and value.ndim == 1 and (value.size == 0 or value.dtype.kind in "iu"):
            continue
        what = type(value).__name__
        if isinstance(value, np.ndarray):
            what = f"a {value.ndim}-D {value.dtype} array"
        elif isinstance(value, Mapping):
            what = "a dict (scores are not ranks: sort the ids by score, best first)"
        elif isinstance(value, (set, frozenset)):
            what = "a set (it has no order: give the ids best first)"
        raise EvaluationError(
            f"{label} {key}: a ranked list must be a list, tuple or 1-D integer array of ids (best first), not {what}"
        )


def _query_positions(keys: np.ndarray, direction: str, gt: GroundTruth) -> np.ndarray:
    qpos = gt.query_index(direction).positions(keys)
    if (qpos < 0).any():
        raise EvaluationError(
            f"{direction}: {int((qpos < 0).sum())} query id(s) are not test-split {QUERY_KIND[direction]}s: "
            f"{preview(keys[qpos < 0])}"
        )
    seen = np.bincount(qpos, minlength=len(gt.query_index(direction)))
    if (seen > 1).any():
        raise EvaluationError(
            f"{direction}: queries given more than once: {preview(gt.query_index(direction).ids[seen > 1])}"
        )
    return qpos


def _int_array(values: list, what: str) -> np.ndarray:
    """``np.array`` of a (possibly nested) list, which must hold integers only."""
    try:
        arr = values if isinstance(values, np.ndarray) else np.array(values)
    except (ValueError, OverflowError):
        arr = np.array(values, dtype=object)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise EvaluationError(
            f"{what} must be integers, got {arr.dtype if arr.dtype != object else 'mixed/other values'}"
        )
    return arr.astype(np.int64, copy=False)


def _convert(values: list, lengths: np.ndarray, keys: np.ndarray, gallery: IdIndex, direction: str) -> np.ndarray:
    """Ranked lists -> dense gallery indices (int32, rows padded with -1); errors name the query."""
    ids, lengths = ranked_to_arrays(values, keys, f"{direction} query", lengths, flat=False)
    return _dense_rows(ids, lengths, keys, gallery, direction)


def ranked_to_arrays(
    values: object, keys: np.ndarray, label: str = "query", lengths: np.ndarray | None = None, flat: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Python (or numpy) ranked lists -> (int64 ids, lengths); non-integer ids raise naming the query.

    The ids come back flat, or as a 2-D array when ``flat`` is False and all
    lists have the same length.
    """
    if isinstance(values, np.ndarray) and values.ndim == 2:
        if values.size and values.dtype.kind not in "iu":
            raise EvaluationError(f"ranked ids must be integers, got {values.dtype}")
        ids = values.astype(np.int64, copy=False)
        return (ids.ravel() if flat else ids), np.full(len(ids), ids.shape[1], dtype=np.int64)
    values = list(values)  # type: ignore[call-overload]
    if lengths is None:
        require_sequences(values, keys.tolist(), label)
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = int(lengths.max(initial=0))
    equal = bool((lengths == width).all())
    try:
        ids = _flat_int64(values, int(lengths.sum()))
    except EvaluationError:
        for key, value in zip(keys.tolist(), values, strict=True):
            try:
                _int_array(list(value), "ranked ids")
            except EvaluationError as exc:
                raise EvaluationError(f"{label} {key}: {exc}") from None
        raise
    if equal:
        ids = ids.reshape(len(values), width)
        return (ids.ravel() if flat else ids), lengths
    return ids, lengths


def _flat_int64(lists: list, total: int) -> np.ndarray:
    """All ids of the lists, concatenated, as int64; a float, string or other non-integer raises.

    Checked without ``np.array``'s dtype discovery: the ids' sum is a (Python
    or numpy) integer only if every id is one (a float makes it a float, a
    string or None raises), then ``np.fromiter`` converts (about twice as fast
    as ``np.array`` over a list of lists).
    """
    chain = itertools.chain.from_iterable
    try:
        if lists and set(map(type, lists)) == {np.ndarray}:  # numpy rows: no Python ints involved
            return np.concatenate(lists, dtype=np.int64, casting="same_kind")
        with np.errstate(all="ignore"):  # numpy integer ids may overflow the sum: only its type matters
            checksum = sum(chain(lists))
        if isinstance(checksum, (int, np.integer)):
            return np.fromiter(chain(lists), dtype=np.int64, count=total)
    except (TypeError, ValueError, OverflowError):
        pass
    raise EvaluationError("ranked ids must be integers, got mixed/other values")


def _dense_rows(ids: np.ndarray, lengths: np.ndarray, keys: np.ndarray, gallery: IdIndex, direction: str) -> np.ndarray:
    """Ranked ids (2-D, or flat with ``lengths``) -> dense gallery indices, rows padded with -1.

    Errors name the query whose list holds an id outside the gallery or a repeated id.
    """
    if ids.ndim == 2:
        valid = None
    else:
        width = int(lengths.max(initial=0))
        valid = np.arange(width)[None, :] < lengths[:, None]
        padded = np.full((len(lengths), width), -1, dtype=np.int64)
        padded[valid] = ids
        ids = padded
    dense = gallery.positions(ids)
    unknown = dense < 0 if valid is None else valid & (dense < 0)
    if unknown.any():
        row = int(np.flatnonzero(unknown.any(axis=1))[0])
        raise EvaluationError(
            f"{direction} query {keys[row]} ranks id(s) that are not test-split {GALLERY_KIND[direction]}s: "
            f"{preview(ids[row][unknown[row]])}"
        )
    srt = np.sort(dense, axis=1)
    dup = srt[:, 1:] == srt[:, :-1]
    if valid is not None:
        dup &= srt[:, 1:] >= 0
    if dup.any():
        row = int(np.flatnonzero(dup.any(axis=1))[0])
        raise EvaluationError(
            f"{direction} query {keys[row]} ranks the same {GALLERY_KIND[direction]} more than once: "
            f"{preview(_repeated(ids[row][dense[row] >= 0]))}"
        )
    return dense


def _repeated(ids: np.ndarray) -> np.ndarray:
    uniq, counts = np.unique(ids, return_counts=True)
    return uniq[counts > 1]


# ---------------------------------------------------------------------------
# score matrices


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
    """Reorder the columns (ascending) of rows ``row_idx`` by score descending; ties keep column order."""
    order = np.argsort(-rows[row_idx[:, None], cols], axis=1, kind="stable")
    return np.take_along_axis(cols, order, axis=1)


def top_ranked(
    scores: np.ndarray, query_pos: np.ndarray, k: int, along_columns: bool, gallery_pos: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` gallery positions for each query row (or column) of ``scores``.

    ``query_pos``: row positions (or column positions if ``along_columns``);
    ``gallery_pos``: restrict the gallery to these (ascending) positions of the
    other axis. Returns (top positions into the gallery axis, bool mask of
    queries whose scores hold NaN or inf). Chunks run on two threads.
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

    workers = min(2, os.cpu_count() or 1)
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(work, starts))
    else:
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
