"""The items past a top-k list that tie with its last item (:class:`PastTies`), found by the top-k kernel
(:func:`~eccv_metric.kernels.topk.ranked_rows`) where it finds its candidates: the tie note counts a group of equal
scores at a list's end from them without reading the row again (:mod:`eccv_metric.engine.ties`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Capped = tuple[np.ndarray, np.ndarray, np.ndarray]  # a block's rows' counts, and the (row, column) pairs it keeps


@dataclass(frozen=True)
class PastTies:
    """Per ranked list: how many items past its held items score exactly its last held item's score (``count``: the
    group of equal scores holding the list's last item goes on past the list by that many; -1: not known), and
    those items (list ``i``'s at ``items[start[i]:start[i + 1]]``, in no particular order; a list with more than
    the cap it was made with keeps none: :meth:`kept` tells). A top-k's lists hold k items; a restricted view's
    filtered lists what the whole ranking's gave them (:func:`~eccv_metric.inputs.lists.ties_past`)."""

    count: np.ndarray
    items: np.ndarray
    start: np.ndarray

    @classmethod
    def of(cls, count: np.ndarray, row: np.ndarray, items: np.ndarray) -> PastTies:
        """From each row's count (-1: not known) and the items of the rows that keep theirs, as (row, item) pairs
        given row by row."""
        start = np.zeros(len(count) + 1, np.int64)
        np.cumsum(np.bincount(row, minlength=len(count)), out=start[1:])
        return cls(count.astype(np.int64), items.astype(np.int32), start)

    @classmethod
    def of_pairs(cls, row: np.ndarray, col: np.ndarray, m: int, cap: int) -> PastTies:
        """From (row, column) pairs given row by row; rows with more than ``cap`` keep only their count."""
        if not len(row):  # no tie past any list: the usual block of float scores
            return cls(np.zeros(m, np.int64), np.zeros(0, np.int32), np.zeros(m + 1, np.int64))
        count, _, kept = cls.capped(row, col, m, cap)
        return cls.of_counts(count, kept, cap)

    @staticmethod
    def capped(row: np.ndarray, col: np.ndarray, m: int, cap: int) -> Capped:
        """A block's (row, column) pairs, given row by row, as :meth:`of_blocks` takes them: each of its ``m`` rows'
        count, and the pairs of the rows with at most ``cap`` (a block keeps no more than its capped lists hold: a
        block of equal scores has a pair for each of its cells)."""
        count = np.bincount(row, minlength=m).astype(np.int64)
        fits = count[row] <= cap
        return count, row[fits], col[fits]

    @classmethod
    def of_blocks(cls, blocks: list[tuple[np.ndarray, Capped]], m: int, cap: int) -> PastTies:
        """From blocks of rows: each block's rows (their place among the ``m`` rows) and its :meth:`capped` pairs;
        the same as one :meth:`of_pairs` of every block's pairs (a row's pairs come from its one block, kept in
        that block's order)."""
        count = np.zeros(m, np.int64)
        rows, cols = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for place, (counts, row, col) in blocks:
            count[place] = counts
            if len(row):
                rows.append(place[row])
                cols.append(col)
        row, col = np.concatenate(rows), np.concatenate(cols)
        return cls.of_counts(count, col[np.argsort(row, kind="stable")], cap)

    @classmethod
    def of_counts(cls, count: np.ndarray, kept: np.ndarray, cap: int) -> PastTies:
        """From each row's count and the items of the rows with at most ``cap``, row by row."""
        start = np.zeros(len(count) + 1, np.int64)
        np.cumsum(np.where(count <= cap, count, 0), out=start[1:])
        return cls(count, kept.astype(np.int32), start)

    @classmethod
    def stacked(cls, parts: list[PastTies]) -> PastTies:
        """The rows of ``parts``, one after the other."""
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64))
        stored = np.concatenate([np.diff(p.start) for p in parts])
        start = np.zeros(len(stored) + 1, np.int64)
        np.cumsum(stored, out=start[1:])
        return cls(np.concatenate([p.count for p in parts]), np.concatenate([p.items for p in parts]), start)

    def take(self, rows: np.ndarray) -> PastTies:
        """The rows ``rows``, in that order."""
        stored = np.diff(self.start)[rows]
        owner = np.repeat(np.arange(len(rows)), stored)
        at = np.repeat(self.start[rows], stored) + np.arange(len(owner)) - np.repeat(np.cumsum(stored) - stored, stored)
        return PastTies.of(self.count[rows], owner, self.items[at])

    def replaced(self, rows: np.ndarray, other: PastTies, at: np.ndarray) -> PastTies:
        """These rows with rows ``rows`` replaced by the rows ``at`` of ``other``."""
        rest = np.ones(len(self.count), dtype=bool)
        rest[rows] = False
        kept = np.flatnonzero(rest)
        return PastTies.stacked([self.take(kept), other.take(at)]).moved(np.concatenate([kept, rows]))

    def pairs(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``rows``, item) of the kept items of the rows ``rows``."""
        found = self.take(rows)
        return np.repeat(np.arange(len(rows)), np.diff(found.start)), found.items

    def kept(self) -> np.ndarray:
        """Per row: are its items kept (every one of them)."""
        return np.diff(self.start) == self.count

    def moved(self, order: np.ndarray) -> PastTies:
        """The same rows, row ``j`` put at row ``order[j]`` (a permutation)."""
        stored = np.diff(self.start)
        moved = np.empty_like(stored)
        moved[order] = stored
        start = np.zeros(len(stored) + 1, np.int64)
        np.cumsum(moved, out=start[1:])
        row = np.repeat(np.arange(len(stored)), stored)
        items = np.empty_like(self.items)
        items[start[order][row] + np.arange(len(row)) - self.start[row]] = self.items
        count = np.empty_like(self.count)
        count[order] = self.count
        return PastTies(count, items, start)

    def with_items(self, items: np.ndarray) -> PastTies:
        return PastTies(self.count, items, self.start)
