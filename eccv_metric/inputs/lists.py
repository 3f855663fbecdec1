"""Ranked lists as integer arrays (:class:`RankedLists`): restricted to a fold or a gallery, spliced, set side by
side, their ties flagged (the lists a user gives are read into these arrays by :mod:`eccv_metric.inputs.list_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.kernels.past import PastTies


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
    for ranked lists given in order. Lists ranked straight from a scorer also carry ``past``: per list, the items
    past the held ones that tie with its last held item (:class:`~eccv_metric.kernels.past.PastTies`, dense
    items, -1 for an extra id), so that a group of equal scores at a list's end is counted without reading the
    scores again; None where not counted.
    """

    direction: str
    query: np.ndarray
    items: np.ndarray
    lengths: np.ndarray
    gallery_size: int | np.ndarray  # per list when galleries differ (folds, a query's own item left out)
    ties: np.ndarray | None = None
    scores: np.ndarray | None = None
    past: PastTies | None = None

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
        """The lists at ``rows`` (items, lengths, groups of equal scores, scores, the ties past them), as the lists
        of ``query``."""
        size = self.gallery_size if np.ndim(self.gallery_size) == 0 else np.asarray(self.gallery_size)[rows]
        ties = None if self.ties is None else self.ties[rows]
        scores = None if self.scores is None else self.scores[rows]
        past = None if self.past is None else self.past.take(rows)
        return RankedLists(self.direction, query, self.items[rows], self.lengths[rows], size, ties, scores, past)

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
    counted = lists.past is not None and lists.scores is not None
    past = np.zeros(n, np.int64), [], []  # the ties past each filtered list: counts, (row, item) pairs
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
        if counted:
            mine = (gallery_group, None if query_group is None else query_group[start : start + step])
            found = ties_past(lists, start, keep, cum, depth, mine, None if own is None else own[start : start + step])
            past[0][start : start + step] = found[0]
            past[1].append(start + found[1])
            past[2].append(found[2])
        r, c = np.nonzero(keep & (cum <= depth))
        out[start + r, cum[r, c] - 1] = items[r, c]
        if scores is not None:
            scores[start + r, cum[r, c] - 1] = lists.scores[start : start + step][r, c]  # type: ignore[index]
        if ties is not None:  # two kept items tie when every item between them did
            group = np.cumsum(~lists.ties[start : start + step], axis=1, dtype=np.int32)  # type: ignore[index]
            kept = np.full((len(items), depth), -1, np.int32)
            kept[r, cum[r, c] - 1] = group[r, c]
            ties[start : start + step, 1:] = (kept[:, 1:] == kept[:, :-1]) & (kept[:, 1:] >= 0)
    found = None
    if counted:
        row, item = (np.concatenate(p) if p else np.zeros(0, np.int64) for p in past[1:])
        order = np.argsort(row, kind="stable")
        found = PastTies.of(past[0], row[order], item[order])
    return RankedLists(lists.direction, lists.query, out, available, sizes, ties, scores, found)


def ties_past(
    lists: RankedLists,
    start: int,
    keep: np.ndarray,
    cum: np.ndarray,
    depth: int,
    groups: tuple[np.ndarray | None, np.ndarray | None],
    own: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ties past the filtered lists of :func:`restrict_lists` (rows ``start:`` of ``lists``; ``keep``: the
    items each keeps, ``cum``: their running count): (count per row, -1 where not known; row, item pairs). The
    items of its gallery that tie with a filtered list's last held item and come after it: those later in the
    whole list, and, when it ties with the whole list's last item, those of the whole list's ties past it that
    the query may rank (not known where those were not kept)."""
    scores, whole = lists.scores[start : start + len(keep)], lists.past  # type: ignore[index]
    rows = np.arange(len(keep))
    held = np.minimum(cum[:, -1], depth)
    at = (cum < held[:, None]).sum(axis=1)  # where the last held item sits in the whole list
    value = scores[rows, np.minimum(at, scores.shape[1] - 1)]
    later = keep & (np.arange(keep.shape[1])[None, :] > at[:, None]) & (scores == value[:, None])
    later &= (held > 0)[:, None]
    r, c = np.nonzero(later)
    count = later.sum(axis=1).astype(np.int64)
    end = np.flatnonzero((held > 0) & (value == scores[:, -1]) & (whole.count[start + rows] != 0))  # type: ignore[union-attr]
    unknown = end[~whole.kept()[start + end]]  # type: ignore[union-attr]
    owner, item = whole.pairs(start + end[whole.kept()[start + end]])  # type: ignore[union-attr]
    owner = end[whole.kept()[start + end]][owner]  # type: ignore[union-attr]
    mine = item >= 0
    gallery_group, query_group = groups
    if gallery_group is not None and query_group is not None:
        mine &= gallery_group[np.maximum(item, 0)] == query_group[owner]
    if own is not None:
        mine &= item != own[owner]
    owner, item = owner[mine], item[mine]
    count += np.bincount(owner, minlength=len(keep))
    count[unknown] = -1
    return count, np.concatenate([r, owner]), np.concatenate([lists.items[start + r, c], item])


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
    past = None if lists.past is None or other.past is None else lists.past.replaced(rows, other.past, at)
    return RankedLists(lists.direction, lists.query, out[0], lengths, sizes, out[1], out[2], past)  # type: ignore[arg-type]


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
