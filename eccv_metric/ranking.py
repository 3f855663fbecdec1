"""Ranked lists as integer arrays, from the official dict format or from arrays (score matrices: ``topk``)."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import IdIndex
from eccv_metric.topk import _CHUNK_ELEMENTS

QUERY_KIND = {"i2t": "image", "t2i": "caption"}
GALLERY_KIND = {"i2t": "caption", "t2i": "image"}


class HasHits(Protocol):
    def hits(self, items: np.ndarray) -> np.ndarray: ...


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

    def hits(self, rel: HasHits, rows: np.ndarray, depth: int | None = None) -> np.ndarray:
        """``rel.hits`` of the lists at ``rows`` (aligned with ``rel``'s queries) over their first ``depth``
        items (default: all held); positions past a list's end are no hits."""
        depth = self.items.shape[1] if depth is None else min(depth, self.items.shape[1])
        every_row = len(rows) == len(self.items) and bool((rows == np.arange(len(rows))).all())
        hits = rel.hits(self.items[:, :depth] if every_row else self.items[rows, :depth])  # a view when all rows
        available = self.lengths[rows]
        if available.min(initial=depth) < depth:  # a short list: positions past its end are no hits
            hits &= np.arange(depth)[None, :] < available[:, None]
        return hits


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
    _require_int64_range(arr, what)
    return arr.astype(np.int64, copy=False)


def _require_int64_range(arr: np.ndarray, what: str) -> None:
    """An unsigned 64-bit id above the int64 range would wrap to a negative id: refused."""
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise EvaluationError(f"{what} must be integers within int64, got {int(arr.max())}")


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
        _require_int64_range(values, "ranked ids")
        ids = values.astype(np.int64, copy=False)
        return (ids.ravel() if flat else ids), np.full(len(ids), ids.shape[1], dtype=np.int64)
    values = list(values)  # type: ignore[call-overload]
    if lengths is None:
        require_sequences(values, keys.tolist(), label)
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = int(lengths.max(initial=0))
    equal = bool((lengths == width).all())
    try:
        ids = _flat_int64(values, int(lengths.sum()), width if equal else None)
    except EvaluationError as error:
        for key, value in zip(keys.tolist(), values, strict=True):  # the first faulty list, named
            try:
                _flat_int64([value], len(value), len(value))
                continue
            except EvaluationError as exc:
                message = str(exc)
            try:
                _int_array(list(value), "ranked ids")  # only to word the message with a dtype
            except EvaluationError as exc:
                message = str(exc)
            raise EvaluationError(f"{label} {key}: {message}") from None
        raise AssertionError("a batch refused but each of its lists accepted") from error
    if equal:
        ids = ids.reshape(len(values), width)
        return (ids.ravel() if flat else ids), lengths
    return ids, lengths


def _flat_int64(lists: list, total: int, width: int | None = None) -> np.ndarray:
    """All ids of the lists, concatenated, as int64; a float, string or other non-integer raises.

    Packed by ``struct``'s ``q`` format, which takes Python and numpy integers
    (and objects with ``__index__``) and refuses floats, strings, None, numpy
    bools and ints out of the int64 range, with no dtype discovery. Lists of
    one length ``width`` are packed one C call per list (``starmap``), about
    35% faster than a sum type check plus ``np.fromiter``; lists of different
    lengths in one call over all ids.
    """
    try:
        if lists and set(map(type, lists)) == {np.ndarray}:  # numpy rows: no Python ints involved
            rows = [row for row in lists if len(row)]  # an empty row holds no id, whatever its dtype
            if np.dtype(np.uint64) in {row.dtype for row in rows}:
                for row in rows:
                    _require_int64_range(row, "ranked ids")
            return np.concatenate(rows, dtype=np.int64, casting="same_kind") if rows else np.zeros(0, np.int64)
        if width is not None:
            packed = bytearray().join(itertools.starmap(struct.Struct(f"={width}q").pack, lists))
        else:
            packed = bytearray(struct.Struct(f"={total}q").pack(*itertools.chain.from_iterable(lists)))
        return np.frombuffer(packed, dtype=np.int64)
    except (TypeError, ValueError, OverflowError, struct.error):
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
