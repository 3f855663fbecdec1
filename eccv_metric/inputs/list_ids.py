"""A user's ranked lists (the official dicts, or arrays) read into int64 arrays, every list checked in full.

Query ids are items of the view's queries, given once; ranked ids are integers (Python or numpy ints, or objects
with ``__index__``; floats, strings, None and bools are refused) naming gallery items of the view, each at most
once per list. Errors name the query.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from collections.abc import Sequence

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.ids import int_array
from eccv_metric.core.ids import require_int64_range
from eccv_metric.core.view import DIRECTION_KINDS


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


def query_key_array(keys: list, direction: str) -> np.ndarray:
    """The query ids of a dict of lists as int64; string keys (e.g. from ``json.load``) are named as such."""
    try:
        key_arr = int_array(keys, f"{direction} query ids")
    except EvaluationError:
        text = next((k for k in keys if isinstance(k, str)), None)
        if text is None:
            raise
        raise EvaluationError(
            f"{direction} query ids must be integers, got strings such as {text!r:.20} (JSON object keys are "
            "strings: convert them with int(), or read the file with eccv_metric.formats.load_rankings)"
        ) from None
    if key_arr.ndim != 1:
        raise EvaluationError(f"{direction} query ids must be single integers")
    return key_arr


def query_positions(keys: np.ndarray, direction: str, queries: IdIndex) -> np.ndarray:
    """Dense index of each query id; unknown and repeated queries are refused, named."""
    qpos = queries.positions(keys)
    kind = DIRECTION_KINDS[direction][0]
    if (qpos < 0).any():
        raise EvaluationError(
            f"{direction}: {int((qpos < 0).sum())} query id(s) are not test-split {kind}s: {preview(keys[qpos < 0])}"
        )
    seen = np.bincount(qpos, minlength=len(queries))
    if (seen > 1).any():
        raise EvaluationError(f"{direction}: queries given more than once: {preview(queries.ids[seen > 1])}")
    return qpos


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
        require_int64_range(values, "ranked ids")
        ids = values.astype(np.int64, copy=False)
        return (ids.ravel() if flat else ids), np.full(len(ids), ids.shape[1], dtype=np.int64)
    values = list(values)  # type: ignore[call-overload]
    if lengths is None:
        require_sequences(values, keys.tolist(), label)
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    width = int(lengths.max(initial=0))
    equal = bool((lengths == width).all())
    try:
        ids = flat_int64(values, int(lengths.sum()), width if equal else None)
    except EvaluationError as error:
        for key, value in zip(keys.tolist(), values, strict=True):  # the first faulty list, named
            try:
                flat_int64([value], len(value), len(value))
                continue
            except EvaluationError as exc:
                message = str(exc)
            try:
                int_array(list(value), "ranked ids")  # only to word the message with a dtype
            except EvaluationError as exc:
                message = str(exc)
            raise EvaluationError(f"{label} {key}: {message}") from None
        raise AssertionError("a batch refused but each of its lists accepted") from error
    if equal:
        ids = ids.reshape(len(values), width)
        return (ids.ravel() if flat else ids), lengths
    return ids, lengths


def flat_int64(lists: list, total: int, width: int | None = None) -> np.ndarray:
    """All ids of the lists, concatenated, as int64; a float, string or other non-integer raises.

    Packed by ``struct``'s ``q`` format, which takes Python and numpy integers
    (and objects with ``__index__``) and refuses floats, strings, None, numpy
    bools and ints out of the int64 range, with no dtype discovery. Lists of
    one length ``width`` are packed one C call per list (``starmap``), about
    35% faster than a sum type check plus ``np.fromiter``; lists of different
    lengths in one call over all ids. Lists longer than :data:`PACK_SLICE` ids (or
    over 4M ids of different lengths) are packed slice by slice into the output (no
    argument tuple or bytes copy of them all).
    """
    try:
        if lists and set(map(type, lists)) == {np.ndarray}:  # numpy rows: no Python ints involved
            rows = [row for row in lists if len(row)]  # an empty row holds no id, whatever its dtype
            dtypes = {row.dtype for row in rows}
            if np.dtype(bool) in dtypes:
                raise EvaluationError("ranked ids must be integers, not booleans")
            if np.dtype(np.uint64) in dtypes:
                for row in rows:
                    require_int64_range(row, "ranked ids")
            return np.concatenate(rows, dtype=np.int64, casting="same_kind") if rows else np.zeros(0, np.int64)
        if (width or 0) > PACK_SLICE or (width is None and total > 1 << 22):  # long lists: no tuple of them all
            flat = _pack_slices(lists, total)
        elif width is not None:
            flat = np.frombuffer(bytearray().join(itertools.starmap(struct.Struct(f"={width}q").pack, lists)), np.int64)
        else:
            flat = np.frombuffer(
                bytearray(struct.Struct(f"={total}q").pack(*itertools.chain.from_iterable(lists))), np.int64
            )
    except EvaluationError:
        raise
    except (TypeError, ValueError, OverflowError, struct.error):
        raise EvaluationError("ranked ids must be integers, got mixed/other values") from None
    found = first_bool(lists, flat)
    if found is not None:
        raise EvaluationError(f"ranked ids must be integers, not booleans ({found!r} is not an id)")
    return flat


def first_bool(lists: list, flat: np.ndarray) -> object | None:
    """The first Python bool among the ids of ``lists`` (``struct`` packs True as 1): only the 0s and 1s of their
    packed ids ``flat`` are looked at, so the check costs one vectorised pass."""
    suspects = np.flatnonzero((flat == 0) | (flat == 1))
    if not len(suspects):
        return None
    ends = np.cumsum(np.fromiter(map(len, lists), dtype=np.int64, count=len(lists)))
    rows = np.searchsorted(ends, suspects, "right")
    starts = ends - np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    for position, row in zip(suspects.tolist(), rows.tolist(), strict=True):
        item = lists[row][position - int(starts[row])]
        if isinstance(item, (bool, np.bool_)):
            return item
    return None


PACK_SLICE = 1 << 16


def _pack_slices(lists: list, total: int) -> np.ndarray:
    """:func:`flat_int64` of many ids: each list packed in slices of ``PACK_SLICE`` ids straight into the output."""
    out = np.empty(total, dtype=np.int64)
    view = memoryview(out).cast("B")
    full = struct.Struct(f"={PACK_SLICE}q")
    offset = 0
    for values in lists:
        for start in range(0, len(values), PACK_SLICE):
            part = values[start : start + PACK_SLICE]
            packer = full if len(part) == PACK_SLICE else struct.Struct(f"={len(part)}q")
            packer.pack_into(view, offset, *part)
            offset += packer.size
    if offset != 8 * total:
        raise ValueError("lists changed size")
    return out


def dense_rows(ids: np.ndarray, lengths: np.ndarray, keys: np.ndarray, gallery: IdIndex, direction: str) -> np.ndarray:
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
            f"{direction} query {keys[row]} ranks id(s) that are not test-split {DIRECTION_KINDS[direction][1]}s: "
            f"{preview(ids[row][unknown[row]])}"
        )
    srt = np.sort(dense, axis=1)
    dup = srt[:, 1:] == srt[:, :-1]
    if valid is not None:
        dup &= srt[:, 1:] >= 0
    if dup.any():
        row = int(np.flatnonzero(dup.any(axis=1))[0])
        raise EvaluationError(
            f"{direction} query {keys[row]} ranks the same {DIRECTION_KINDS[direction][1]} more than once: "
            f"{preview(_repeated(ids[row][dense[row] >= 0]))}"
        )
    return dense


def _repeated(ids: np.ndarray) -> np.ndarray:
    uniq, counts = np.unique(ids, return_counts=True)
    return uniq[counts > 1]
