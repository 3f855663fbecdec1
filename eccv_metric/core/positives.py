"""Positive lists (CSR over dense indices): the relation between queries and gallery items of one task."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property

import numpy as np

from eccv_metric.core.ids import IdIndex

_MAX_COLUMN_PASSES = 64  # hits by columns of positives up to this many per query, else a sorted lookup


@dataclass(frozen=True)
class Positives:
    """Positive lists of one benchmark and direction (CSR over dense indices).

    ``query`` holds the dense query indices (ascending, unique); the positives
    of ``query[k]`` are ``indices[indptr[k]:indptr[k + 1]]`` (ascending).
    ``outside`` maps a dense query index to positive ids that are not in the
    gallery: they can never be retrieved but count in R, as in the official
    code (the wheel's ECCV i2t lists of images 575916 and 421999 each hold one
    caption id outside the 25,000 test captions). Queries with an empty list
    are never stored.
    """

    query: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    n_gallery: int
    outside: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def from_pairs(
        cls, q: np.ndarray, g: np.ndarray, n_gallery: int, outside: Mapping[int, tuple[int, ...]] | None = None
    ) -> Positives:
        outside = {int(k): tuple(sorted(set(v))) for k, v in (outside or {}).items() if v}
        # sorted, then repeats dropped: np.unique's hash path (numpy >= 2.3, no return_* flag) took 30 s on the
        # 18M distinct keys of the PM lists, the sort 1.4 s
        keys = np.sort(np.asarray(q, np.int64) * n_gallery + np.asarray(g, np.int64))
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys
        q_all, g_all = np.divmod(keys, n_gallery)
        query, counts = np.unique(
            np.concatenate([q_all, np.fromiter(outside, np.int64, len(outside))]), return_counts=True
        )
        counts -= np.isin(query, list(outside))
        indptr = np.zeros(len(query) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(query.astype(np.int32), indptr, g_all.astype(np.int32), n_gallery, outside)

    @classmethod
    def from_id_lists(
        cls, lists: Mapping[int, Iterable[int]], queries: IdIndex, gallery: IdIndex, what: str
    ) -> Positives:
        """CSR from ``{query id: [positive ids]}``; query ids must be in ``queries``.

        Positive ids missing from ``gallery`` are kept in ``outside``.
        """
        q_ids = np.fromiter(lists.keys(), dtype=np.int64, count=len(lists))
        values = [np.asarray(list(v), dtype=np.int64) for v in lists.values()]
        lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
        flat = np.concatenate(values) if values else np.zeros(0, np.int64)
        q = np.repeat(queries.require(q_ids, f"{what} queries"), lengths)
        g = gallery.positions(flat)
        outside: dict[int, list[int]] = {}
        for qq, gid in zip(q[g < 0].tolist(), flat[g < 0].tolist(), strict=True):
            outside.setdefault(qq, []).append(gid)
        return cls.from_pairs(q[g >= 0], g[g >= 0], len(gallery), {k: tuple(v) for k, v in outside.items()})

    @cached_property
    def n_positives(self) -> np.ndarray:
        """R of each query: its positives in the gallery plus those outside it."""
        extra = np.array([len(self.outside.get(int(q), ())) for q in self.query], dtype=np.int64)
        return np.diff(self.indptr) + extra

    @cached_property
    def _keys(self) -> np.ndarray:
        return np.repeat(self.query.astype(np.int64), np.diff(self.indptr)) * self.n_gallery + self.indices

    def hits(self, items: np.ndarray) -> np.ndarray:
        """``hits[k, i]``: is ``items[k, i]`` a positive of ``query[k]`` (rows aligned with ``query``).

        ``items``: dense gallery indices in ``[0, n_gallery)``, or -1 (padding, an item outside the
        gallery), no index twice in a row (ranked lists are checked for that).

        Compares the p-th positive of every query with its ranked items, one
        column ``p`` at a time: O(positives x depth) comparisons. Queries are
        taken in order of decreasing number of positives, so the queries that
        have a p-th positive are a prefix (no per-pass gather).
        """
        if items.shape[1] == 0:
            return np.zeros(items.shape, dtype=bool)
        if len(self.indices) * items.shape[1] > (1 << 25) or self._max_count > _MAX_COLUMN_PASSES:
            return self.lookup(self.query[:, None], items)
        order, columns = self._by_count
        ranked = items if order is None else items[order]
        hit = ranked == columns[0][:, None]
        for column in columns[1:]:
            n = len(column)
            hit[:n] |= ranked[:n] == column[:, None]
        if order is None:
            return hit
        out = np.empty_like(hit)
        out[order] = hit
        return out

    @cached_property
    def _by_count(self) -> tuple[np.ndarray | None, list[np.ndarray]]:
        """(query order by decreasing number of positives, or None if already so; the p-th positive of each
        query that has one, in that order, for each p); a query with no in-gallery positive gets -2 (never
        matches a ranked item, which is >= -1)."""
        counts = np.diff(self.indptr)
        order = np.argsort(-counts, kind="stable")
        if (order == np.arange(len(order))).all():
            order = None
        starts = self.indptr[:-1] if order is None else self.indptr[:-1][order]
        ordered = counts if order is None else counts[order]
        first = np.full(len(ordered), -2, dtype=np.int32)
        first[ordered > 0] = self.indices[starts[ordered > 0]]
        columns = [first]
        for p in range(1, self._max_count):
            columns.append(self.indices[starts[: int((ordered > p).sum())] + p].astype(np.int32))
        return order, columns

    @cached_property
    def _max_count(self) -> int:
        return int(np.diff(self.indptr).max(initial=0))

    def lookup(self, q: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Whether gallery item ``g`` is a positive of query ``q`` (broadcast; g < 0 is never)."""
        q, g = np.broadcast_arrays(np.asarray(q, np.int64), np.asarray(g, np.int64))
        probe = q * self.n_gallery + g
        keys = self._keys
        if len(keys) == 0:
            return np.zeros(probe.shape, dtype=bool)
        pos = np.searchsorted(keys, probe)
        hit = keys[np.minimum(pos, len(keys) - 1)] == probe
        return hit & (g >= 0)

    def rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(list lengths, concatenated positives) of the lists at ``rows`` (positions into ``query``, or a mask)."""
        counts = np.diff(self.indptr)[rows]
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return counts, self.indices[np.repeat(self.indptr[:-1][rows], counts) + offsets]

    def positive_mask(self, part: np.ndarray, columns: np.ndarray, col_of_dense: np.ndarray) -> np.ndarray:
        """Bool (len(part) x len(columns)): is block column j a positive of ``query[part[k]]``.

        ``columns[j]``: dense gallery index of block column j (-1: an extra item); ``col_of_dense``: its inverse.
        """
        counts, positives = self.rows(part)
        owner = np.repeat(np.arange(len(part)), counts)
        cols = col_of_dense[positives]
        mask = np.zeros((len(part), len(columns)), dtype=bool)
        mask[owner[cols >= 0], cols[cols >= 0]] = True
        return mask

    def restrict(self, queries: np.ndarray) -> Positives:
        """The same lists for the queries among ``queries`` (dense indices) only."""
        keep = np.isin(self.query, queries)
        counts, indices = self.rows(keep)
        indptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        kept = set(self.query[keep].tolist())
        outside = {q: v for q, v in self.outside.items() if q in kept}
        return Positives(self.query[keep], indptr, indices, self.n_gallery, outside)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(dense query, dense gallery) of every in-gallery positive."""
        return np.repeat(self.query, np.diff(self.indptr)), self.indices

    def union(self, other: Positives) -> Positives:
        """The positives of either relation (same queries and gallery); ids outside the gallery are merged too."""
        q1, g1 = self.pairs()
        q2, g2 = other.pairs()
        outside = {int(q): tuple(v) for q, v in self.outside.items()}
        for q, v in other.outside.items():
            outside[int(q)] = tuple(set(outside.get(int(q), ())) | set(v))
        return Positives.from_pairs(np.concatenate([q1, q2]), np.concatenate([g1, g2]), self.n_gallery, outside)

    def to_id_lists(self, query_ids: np.ndarray, gallery_ids: np.ndarray) -> dict[int, list[int]]:
        """``{query id: sorted positive ids}`` (outside ids included)."""
        by_id = np.argsort(gallery_ids, kind="stable")  # the gallery's dense indices in id order
        rank = np.empty(len(by_id), dtype=np.int64)
        rank[by_id] = np.arange(len(by_id))
        row = np.repeat(np.arange(len(self.query), dtype=np.int64), np.diff(self.indptr))
        width = max(len(by_id), 1)
        keys = np.sort(row * width + rank[self.indices])  # (query, id rank): each query's ids ascending, CSR order
        flat = gallery_ids[by_id[keys % width]].tolist()
        bounds = self.indptr.tolist()
        out = {}
        for k, (q, qid) in enumerate(zip(self.query.tolist(), query_ids[self.query].tolist(), strict=True)):
            ids, extra = flat[bounds[k] : bounds[k + 1]], self.outside.get(q)
            out[qid] = sorted(ids + list(extra)) if extra else ids
        return out
