"""Ranked lists of one direction stored flat (CSR), materialised only as deep as the metrics read them.

The lists users give are checked and converted once (:func:`from_dict`,
:func:`from_arrays`) into :class:`FlatLists`: the dense gallery indices of all
lists concatenated (int32) and each list's length. Memory is bounded by the
input: lists of very different lengths (one of 5,000 ids, the others of one)
are never padded to the longest. A view asks for the first ``depth`` items of
each list (:meth:`FlatLists.ranked`: a queries x ``min(depth, longest list)``
array; lists of one length, e.g. top-50 arrays, are a reshape of the flat ids,
no copy), for the lists filtered to a restricted gallery
(:meth:`FlatLists.filtered`), or for the rank of each query's first positive
(:meth:`FlatLists.first_hits`: lists grouped by length, so no list is padded
to more than twice its length).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.ids import int_ids
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.inputs.list_ids import dense_rows
from eccv_metric.inputs.list_ids import query_key_array
from eccv_metric.inputs.list_ids import query_positions
from eccv_metric.inputs.list_ids import ranked_to_arrays
from eccv_metric.inputs.list_ids import require_sequences
from eccv_metric.inputs.lists import HasHits
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.kernels.scorers import CHUNK_ELEMENTS
from eccv_metric.measures.formulas import NO_HIT
from eccv_metric.measures.formulas import first_hit


class Restrictable(HasHits, Protocol):
    query: np.ndarray

    def restrict(self, queries: np.ndarray) -> Restrictable: ...


@dataclass(frozen=True, eq=False)
class FlatLists:
    """The lists of one direction: list ``k`` (of query ``query[k]``, dense) is ``flat[offsets[k]:offsets[k + 1]]``.

    ``flat``: dense gallery indices (int32), best first; ``lengths``: int64;
    ``gallery_size``: how many items were ranked (one number, or one per list).
    """

    direction: str
    query: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    gallery_size: int | np.ndarray

    @cached_property
    def offsets(self) -> np.ndarray:
        offsets = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        return offsets

    @cached_property
    def width(self) -> int:
        """The longest list."""
        return int(self.lengths.max(initial=0))

    @cached_property
    def equal(self) -> bool:
        """Whether every list has the same length (then ``flat`` is a queries x width array, reshaped)."""
        return bool((self.lengths == self.width).all())

    def rows(self, queries: np.ndarray, query_index: IdIndex, needed_by: str) -> np.ndarray:
        """Row of each dense query index; an error names the queries the lists lack."""
        return self.ranked(0).rows(queries, query_index, needed_by)

    def ranked(self, depth: int, sizes: np.ndarray | None = None) -> RankedLists:
        """The first ``min(depth, longest list)`` items of every list, padded with -1 (see the module docstring)."""
        n, width = len(self.lengths), min(int(depth), self.width)
        gallery_size = self.gallery_size if sizes is None else sizes
        if self.equal:
            items = self.flat.reshape(n, self.width)[:, :width]
        else:
            items = np.full((n, width), -1, dtype=np.int32)
            step = max(1, CHUNK_ELEMENTS // max(1, width))
            for start in range(0, n, step):
                stop = min(n, start + step)
                lo, hi = int(self.offsets[start]), int(self.offsets[stop])
                lengths = self.lengths[start:stop]
                pos = np.arange(hi - lo) - np.repeat(self.offsets[start:stop] - lo, lengths)
                row = np.repeat(np.arange(start, stop), lengths)
                keep = pos < width
                items[row[keep], pos[keep]] = self.flat[lo:hi][keep]
        return RankedLists(self.direction, self.query, items, self.lengths, gallery_size)

    def filtered(
        self, query_group: np.ndarray | None, gallery_group: np.ndarray | None, own: np.ndarray | None
    ) -> FlatLists:
        """Each list filtered to the items its query may rank (see :func:`~eccv_metric.inputs.lists.restrict_lists`):
        the items of its query's group, its query's own item (``own``, per list) dropped."""
        row = np.repeat(np.arange(len(self.lengths)), self.lengths)
        keep = np.ones(len(self.flat), dtype=bool)
        if gallery_group is not None and query_group is not None:
            keep &= gallery_group[self.flat] == query_group[row]
        if own is not None:
            keep &= self.flat != own[row]
        lengths = np.bincount(row[keep], minlength=len(self.lengths)).astype(np.int64)
        return FlatLists(self.direction, self.query, self.flat[keep], lengths, self.gallery_size)

    def first_hits(self, rel: Restrictable, rows: np.ndarray) -> np.ndarray:
        """0-based position of the first positive of ``rel`` in the lists at ``rows`` (aligned with ``rel.query``);
        ``NO_HIT`` where a list holds none. Lists are taken in groups of similar length (powers of two)."""
        lengths = self.lengths[rows]
        out = np.full(len(rows), NO_HIT, dtype=np.int64)
        group = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
        for g in np.unique(group[lengths > 0]).tolist():
            members = np.flatnonzero((group == g) & (lengths > 0))
            width = int(lengths[members].max())
            step = max(1, CHUNK_ELEMENTS // width)
            for start in range(0, len(members), step):
                part = members[start : start + step]
                sub = rel if len(part) == len(rows) else rel.restrict(rel.query[part])
                items = self.ranked_rows(rows[part], width)
                out[part] = first_hit(sub.hits(items))
        return out

    def ranked_rows(self, rows: np.ndarray, width: int) -> np.ndarray:
        """The first ``width`` items of the lists at ``rows`` (a rows x width array padded with -1)."""
        lengths = np.minimum(self.lengths[rows], width)
        starts = self.offsets[:-1][rows]
        pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out = np.full((len(rows), width), -1, dtype=np.int32)
        out[np.repeat(np.arange(len(rows)), lengths), pos] = self.flat[np.repeat(starts, lengths) + pos]
        return out


def from_dict(rankings: Mapping[int, Sequence[int]], direction: str, queries: IdIndex, gallery: IdIndex) -> FlatLists:
    """Validate and convert ``{query id: [ranked gallery ids]}`` (the official format), a bounded number of ids at
    a time."""
    if not isinstance(rankings, Mapping):
        raise EvaluationError(
            f"{direction} rankings must be a dict {{query id: [ranked ids]}}, not {type(rankings).__name__}"
        )
    keys = list(rankings.keys())
    key_arr = query_key_array(keys, direction)
    qpos = query_positions(key_arr, direction, queries)
    values = list(rankings.values())
    require_sequences(values, keys, f"{direction} query")
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    ends = np.cumsum(lengths)
    parts, start = [], 0
    while start < len(values):  # chunks of about CHUNK_ELEMENTS ids (at least one list)
        stop = max(start + 1, int(np.searchsorted(ends, ends[start] - lengths[start] + CHUNK_ELEMENTS, "right")))
        ids, _ = ranked_to_arrays(values[start:stop], key_arr[start:stop], f"{direction} query", lengths[start:stop],
                                  flat=False)  # fmt: skip
        parts.append(dense_ids(ids, lengths[start:stop], key_arr[start:stop], gallery, direction))
        start = stop
    flat = np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.zeros(0, np.int32)
    return FlatLists(direction, qpos, flat, lengths, len(gallery))


def from_arrays(
    query_ids: object, ranked: object, direction: str, queries: IdIndex, gallery: IdIndex, lengths: object = None
) -> FlatLists:
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
    qpos = query_positions(keys, direction, queries)
    return FlatLists(direction, qpos, dense_ids(ranked, lengths, keys, gallery, direction), lengths, len(gallery))


def dense_ids(ids: np.ndarray, lengths: np.ndarray, keys: np.ndarray, gallery: IdIndex, direction: str) -> np.ndarray:
    """Ranked ids (2-D, or flat with ``lengths``) -> flat dense gallery indices (int32).

    Errors name the first query whose list holds an id outside the gallery or a repeated id.
    """
    if ids.ndim == 2:
        return dense_rows(ids, lengths, keys, gallery, direction).ravel()
    dense = gallery.positions(ids)
    row = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.cumsum(lengths) - lengths
    if (dense < 0).any():
        k = int(row[np.argmax(dense < 0)])
        own = slice(int(starts[k]), int(starts[k] + lengths[k]))
        raise EvaluationError(
            f"{direction} query {keys[k]} ranks id(s) that are not test-split {DIRECTION_KINDS[direction][1]}s: "
            f"{preview(ids[own][dense[own] < 0])}"
        )
    pairs = np.sort(row * np.int64(len(gallery)) + dense)
    dup = pairs[1:] == pairs[:-1]
    if dup.any():
        k = int(pairs[np.argmax(dup)] // len(gallery))
        values, counts = np.unique(ids[int(starts[k]) : int(starts[k] + lengths[k])], return_counts=True)
        raise EvaluationError(
            f"{direction} query {keys[k]} ranks the same {DIRECTION_KINDS[direction][1]} more than once: "
            f"{preview(values[counts > 1])}"
        )
    return dense
