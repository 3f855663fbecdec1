"""Ranked lists as integer arrays (:class:`RankedLists`), converted from the official dicts or from arrays.

Every list is checked in full: query ids are items of the view's queries,
given once; ranked ids are integers (Python or numpy ints, or objects with
``__index__``; floats, strings, None and bools are refused) naming gallery
items of the view, each at most once per list. Errors name the query.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.ids import int_array
from eccv_metric.core.ids import require_int64_range
from eccv_metric.core.view import DIRECTION_KINDS


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

    Lists made from scores also carry ``ties`` (bool: the item is in one group of equal scores with the item
    before it, a group whose order the tie rule decided; False past a list's end) and ``scores`` (each listed
    item's score as the ranking compared it), which the tie note reads (:mod:`eccv_metric.engine.ties`); None
    for ranked lists given in order.
    """

    direction: str
    query: np.ndarray
    items: np.ndarray
    lengths: np.ndarray
    gallery_size: int | np.ndarray  # per list when galleries differ (folds, a query's own item left out)
    ties: np.ndarray | None = None
    scores: np.ndarray | None = None

    @cached_property
    def _row_of_query(self) -> np.ndarray:
        table = np.full(int(self.query.max(initial=-1)) + 1, -1, dtype=np.int64)
        table[self.query] = np.arange(len(self.query))
        return table

    def rows(self, queries: np.ndarray, query_index: IdIndex, needed_by: str) -> np.ndarray:
        """Row of each dense query index; an error names the queries the lists lack."""
        table = self._row_of_query
        known = queries < len(table)
        rows = np.full(len(queries), -1, dtype=np.int64)
        rows[known] = table[queries[known]]
        if (rows < 0).any():
            missing = query_index.ids[queries[rows < 0]]
            raise EvaluationError(
                f"{self.direction}: {len(missing)} query {DIRECTION_KINDS[self.direction][0]} id(s) needed by "
                f"{needed_by} have no ranked list: {preview(missing)}; give every query a list, or partial=True "
                "to score the queries given only"
            )
        return rows

    def take(self, rows: np.ndarray, query: np.ndarray) -> RankedLists:
        """The lists at ``rows`` (items, lengths, groups of equal scores, scores), as the lists of ``query``."""
        size = self.gallery_size if np.ndim(self.gallery_size) == 0 else np.asarray(self.gallery_size)[rows]
        ties = None if self.ties is None else self.ties[rows]
        scores = None if self.scores is None else self.scores[rows]
        return RankedLists(self.direction, query, self.items[rows], self.lengths[rows], size, ties, scores)

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


def restrict_lists(
    lists: RankedLists,
    depth: int,
    query_group: np.ndarray | None,
    gallery_group: np.ndarray | None,
    own: np.ndarray | None,
    sizes: np.ndarray,
) -> RankedLists:
    """Each list filtered to the items its query may rank, the first ``depth`` of them kept.

    ``query_group`` (per list) / ``gallery_group`` (per dense gallery item): a
    list keeps the items of its query's group (a COCO 1K fold, an original
    pool); ``own`` (per list, a dense gallery index or -1): the query's own item,
    dropped. The filtered list is the ranking restricted to those items (same
    scores, same tie order), so its first ``lengths`` items are known exactly.
    ``sizes``: how many items each query is ranked against. Memory is bounded
    by the input: a filtered list never holds more than its query's gallery.
    """
    n, width = lists.items.shape
    depth = min(depth, width, int(sizes.max(initial=0)))
    out = np.full((n, depth), -1, dtype=np.int32)
    ties = None if lists.ties is None else np.zeros((n, depth), dtype=bool)
    scores = None if lists.scores is None else np.zeros((n, depth), lists.scores.dtype)
    available = np.zeros(n, dtype=np.int64)
    step = max(1, (1 << 22) // max(1, width))
    for start in range(0, n if width else 0, step):
        items = lists.items[start : start + step]
        keep = items >= 0
        if gallery_group is not None and query_group is not None:
            keep &= gallery_group[np.maximum(items, 0)] == query_group[start : start + step, None]
        if own is not None:
            keep &= items != own[start : start + step, None]
        cum = np.cumsum(keep, axis=1, dtype=np.int32)
        available[start : start + step] = cum[:, -1]
        r, c = np.nonzero(keep & (cum <= depth))
        out[start + r, cum[r, c] - 1] = items[r, c]
        if scores is not None:
            scores[start + r, cum[r, c] - 1] = lists.scores[start : start + step][r, c]  # type: ignore[index]
        if ties is not None:  # two kept items tie when every item between them did
            group = np.cumsum(~lists.ties[start : start + step], axis=1, dtype=np.int32)  # type: ignore[index]
            kept = np.full((len(items), depth), -1, np.int32)
            kept[r, cum[r, c] - 1] = group[r, c]
            ties[start : start + step, 1:] = (kept[:, 1:] == kept[:, :-1]) & (kept[:, 1:] >= 0)
    return RankedLists(lists.direction, lists.query, out, available, sizes, ties, scores)


def splice(lists: RankedLists, rows: np.ndarray, other: RankedLists, at: np.ndarray, sizes: np.ndarray) -> RankedLists:
    """``lists`` with its ``rows`` replaced by the rows ``at`` of ``other`` (whole lists of those queries: their
    length is the gallery size), widths padded; ``sizes``: each list's gallery size."""
    out = []
    for mine, theirs, pad in (
        (lists.items, other.items, -1),
        (lists.ties, other.ties, False),
        (lists.scores, other.scores, 0),
    ):
        if mine is None or theirs is None:
            out.append(None)
            continue
        width = max(mine.shape[1], theirs.shape[1])
        mine = np.pad(mine, ((0, 0), (0, width - mine.shape[1])), constant_values=pad)
        mine[rows] = np.pad(theirs[at], ((0, 0), (0, width - theirs.shape[1])), constant_values=pad)
        out.append(mine)
    lengths = lists.lengths.copy()
    lengths[rows] = sizes[rows]
    return RankedLists(lists.direction, lists.query, out[0], lengths, sizes, out[1], out[2])  # type: ignore[arg-type]


def side_by_side(parts: list[np.ndarray], pad: int | bool) -> np.ndarray:
    """Rows of lists of different widths in one array, padded with ``pad``."""
    width = max((p.shape[1] for p in parts), default=0)
    dtype = np.result_type(*parts) if parts else np.int32
    padded = [np.pad(p, ((0, 0), (0, width - p.shape[1])), constant_values=pad) for p in parts]
    return np.concatenate(padded).astype(dtype, copy=False) if padded else np.zeros((0, 0), dtype)


def tie_flags(scores: np.ndarray, length: np.ndarray, breaks: np.ndarray | None = None) -> np.ndarray:
    """:attr:`RankedLists.ties` of lists ranked by ``scores``: each item whose score equals the one before it,
    within each list's ``length``; ``breaks``: a position per row where a new group starts whatever the scores
    (a two-stage list's first item ranked by the first stage). Row blocks: no temporary of the whole shape."""
    n, width = scores.shape
    flags = np.zeros((n, width), dtype=bool)
    length = np.broadcast_to(np.asarray(length), (n,))
    step = max(1, (1 << 22) // max(1, width))
    for start in range(0, n if width > 1 else 0, step):
        part = scores[start : start + step]
        np.equal(part[:, 1:], part[:, :-1], out=flags[start : start + step, 1:])
        flags[start : start + step] &= np.arange(width)[None, :] < length[start : start + step, None]
    if breaks is not None and width > 1:
        inside = np.flatnonzero(breaks < width)
        flags[inside, breaks[inside]] = False
    return flags


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
