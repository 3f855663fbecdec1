"""Which per-query values the order of equal scores decides (the tie note), and which a two-stage input's first
stage decides past its reranked candidates (the tail note).

*Decided by tie order*: a query's value that another order of equal scores could change. The engine ranks
equal scores in one order (the rows' given order with ``ties="stable"``, trec_eval's with ``ties="trec_eval"``);
a group of items with equal scores may hold the query's positives and other items, and a value that reads
the order inside such a group is the tie rule's, not the scores'. Per kind of metric:

- a rank (MedR, MeanR): the best positive's rank lies in ``[low, high]`` over every order of equal scores
  (``low = #{higher} + 1``, ``high = low + #{non-positives tied with the best positive score}``,
  :class:`~eccv_metric.kernels.ranks.Ranked`); decided by tie order when ``low < high``;
- R@K (cut ``c = min(K, gallery size)``): ``low <= c < high``: the group holding the first positive starts
  within the first ``c`` items and holds enough non-positives to push every positive past them;
- R-Precision and PMRP (cut ``c = min(R, cap, gallery size)``): the group holding the ``c``-th and the
  ``(c + 1)``-th item (a group *straddling the cut*) holds a positive and a non-positive;
- mAP@R (cut ``c = min(R, gallery size)``): a group starting within the first ``c`` items holds a positive
  and a non-positive (inside the cut, swapping them moves a positive; across it, it changes the hits).

Positives tied only with each other decide nothing. The lists are read two items past the deepest cut, with
each item's tie group (:attr:`~eccv_metric.inputs.lists.RankedLists.ties`): the first tells whether a group
straddles a cut, the second whether the group at the list's end goes on past it; only such a group (it ties
with the last item read: rare but for tie-heavy scores) is counted in full from the scores
(``Input.tie_totals``: the query's row read again), and only for the queries whose verdict needs it. Ranked
lists (given in order) have no ties.

*Decided by the first stage* (two-stage inputs, :mod:`eccv_metric.inputs.twostage`): ``m`` = the query's
reranked candidates in the view; a rank ``> m``; R@K with no positive among the candidates and ``c > m``;
R-Precision, PMRP and mAP@R with ``c > m``.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

from eccv_metric.core.view import View
from eccv_metric.inputs.base import Input
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.kernels.ranks import Ranked
from eccv_metric.measures import formulas

RANK_KINDS = ("medr", "meanr")
CUT_KINDS = ("rprecision", "capped_rprecision")


@dataclass
class Tally:
    """What the notes report, by (metric, direction): the query ids whose value the tie order decides
    (``tied``), and those a two-stage input's first stage decides (``tail``); ``reranked``: each direction's
    candidates per query (the largest), for the wording."""

    tied: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    tail: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    reranked: dict[str, int] = field(default_factory=dict)

    def add(self, metric: str, direction: str, ids: np.ndarray, tied: np.ndarray, tail: np.ndarray | None) -> None:
        self.tied[(metric, direction)] = ids[tied]
        if tail is not None:
            self.tail[(metric, direction)] = ids[tail]


def by_rank(kind: str, k: int | None, found: Ranked) -> np.ndarray:
    """Queries whose rank job (MedR, MeanR, or R@K read off ranks) another order of equal scores could change."""
    if kind == "recall":
        return (found.low <= k) & (k < found.high)  # type: ignore[operator]
    return found.low < found.high


def past_by_rank(kind: str, k: int | None, ranks: np.ndarray, reranked: np.ndarray) -> np.ndarray:
    """Queries whose rank job reads the first stage's order past the reranked candidates."""
    past = ranks > reranked
    return past & (k > reranked) if kind == "recall" else past  # type: ignore[operator]


def cut(kind: str, k: int | None, cap: int | None, n_positives: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """How many items of each list a depth job reads (its cut), within the gallery."""
    if kind == "recall":
        return formulas.capped_k(k, sizes)  # type: ignore[arg-type]
    r = n_positives if kind != "capped_rprecision" or cap is None else np.minimum(n_positives, cap)
    return np.minimum(r, sizes).astype(np.int64)


def past_on_lists(kind: str, cuts: np.ndarray, first: np.ndarray, reranked: np.ndarray) -> np.ndarray:
    """Queries whose depth job reads the first stage's order past the reranked candidates."""
    if kind == "recall":
        return (cuts > reranked) & (first >= reranked)  # no positive among the candidates (first: NO_HIT)
    return cuts > reranked


class Groups:
    """The tie groups of one relevance's lists (see the module docstring): per listed position, the start, the
    listed members and the listed positives of its group; the last listed group when the ranking goes on past
    the list (``last``, -1: none), counted in full from the input on demand. Only the lists that hold a tie, or
    stop short, are looked at (``sub``): in the others no value is decided by tie order."""

    def __init__(
        self, source: Input, view: View, rel: Relevance, lists: RankedLists, rows: np.ndarray, hits: np.ndarray
    ):
        every = lists.ties[rows, : hits.shape[1]]  # type: ignore[index]
        self.n, width = every.shape
        known = (every >= 0).sum(axis=1)
        sizes = np.broadcast_to(np.asarray(lists.gallery_size), (len(lists.query),))[rows]
        short = (known > 0) & (known < width) & (known < sizes)
        tied = ((every[:, 1:] == every[:, :-1]) & (every[:, 1:] >= 0)).any(axis=1) if width > 1 else short
        self.sub = np.flatnonzero(tied | short)
        labels, hits, sizes = every[self.sub], hits[self.sub], sizes[self.sub]
        n = len(self.sub)
        listed = labels >= 0
        at = np.arange(width)
        starts = listed.copy()
        starts[:, 1:] &= labels[:, 1:] != labels[:, :-1]
        ends = listed.copy()
        ends[:, :-1] &= labels[:, 1:] != labels[:, :-1]
        self.start = np.maximum.accumulate(np.where(starts, at, 0), axis=1) if width else labels
        end = np.minimum.accumulate(np.where(ends, at, width)[:, ::-1], axis=1)[:, ::-1] if width else labels
        end = np.minimum(end, width - 1)
        cum = np.zeros((n, width + 1), np.int64)
        np.cumsum(hits & listed, axis=1, out=cum[:, 1:])
        self.size = end - self.start + 1
        self.hits = np.take_along_axis(cum, end + 1, axis=1) - np.take_along_axis(cum, self.start, axis=1)
        self.known = known[self.sub]
        self.labels = labels
        # the last listed group may go on past the list: a list cut short (it holds fewer items than were ranked
        # before its end), or a full list whose last item (read past the cut for this) ties with the one before
        tail = labels[:, -1] == labels[:, -2] if width >= 2 else np.zeros(n, dtype=bool)
        is_open = (self.known > 0) & (self.known < sizes) & ((self.known < width) | tail)
        self.last = np.where(is_open, self.start[np.arange(n), np.maximum(self.known - 1, 0)], -1)
        self._fetch = (source, view, rel, lists, rows)
        self._totals: dict[int, tuple[int, int]] = {}

    def totals(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(members, positives) of the last listed group of ``members`` (positions in :attr:`sub`), in full."""
        missing = np.array([m for m in members.tolist() if m not in self._totals], dtype=np.int64)
        if len(missing):
            source, view, rel, lists, rows = self._fetch
            full = self.sub[missing]
            n_tied, n_pos = source.tie_totals(view, rel, full, lists, rows[full], self.last[missing])
            self._totals.update(zip(missing.tolist(), zip(n_tied.tolist(), n_pos.tolist(), strict=True), strict=True))
        got = [self._totals[m] for m in members.tolist()]
        return np.array([g[0] for g in got], np.int64), np.array([g[1] for g in got], np.int64)

    def group_at(
        self, pos: np.ndarray, where: np.ndarray, settled: object
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, members, positives) of the group at position ``pos`` of each row where ``where`` (others: -1); a
        group still open at the list's end is counted in full from the input where ``settled(start, members,
        positives)`` (its listed part) does not already decide the verdict."""
        n = len(pos)
        if not self.labels.shape[1]:
            return np.full(n, -1), np.zeros(n, np.int64), np.zeros(n, np.int64)
        safe = np.clip(pos, 0, self.labels.shape[1] - 1)
        rows = np.arange(n)
        start = np.where(where, self.start[rows, safe], -1)
        size = np.where(where, self.size[rows, safe], 0)
        hits = np.where(where, self.hits[rows, safe], 0)
        open_ = where & (self.last >= 0) & (start == self.last) & ~settled(start, size, hits)  # type: ignore[operator]
        if open_.any():
            members = np.flatnonzero(open_)
            size[members], hits[members] = self.totals(members)
        return start, size, hits

    def decided(self, kind: str, cuts: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Queries whose value of a depth job (its cut per query) the tie order decides (module docstring)."""
        out = np.zeros(self.n, dtype=bool)
        if len(self.sub):
            out[self.sub] = self._decided(kind, cuts[self.sub], first[self.sub])
        return out

    def _decided(self, kind: str, cuts: np.ndarray, first: np.ndarray) -> np.ndarray:
        n = len(cuts)
        if kind == "recall":
            listed = first < self.known
            where = listed | (self.last >= 0)  # no listed positive: the open group may hold the first one
            pos = np.where(listed, first, np.maximum(self.known - 1, 0))
            width = max(self.labels.shape[1] - 1, 0)
            where &= self.start[np.arange(n), np.clip(pos, 0, width)] < cuts if self.labels.shape[1] else False

            def pushed(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
                return (hits >= 1) & (cuts <= start + size - hits)  # more members only add non-positives here

            start, size, hits = self.group_at(pos, where, pushed)
            return where & pushed(start, size, hits)
        if kind in CUT_KINDS:
            inside = (cuts >= 1) & (cuts < self.known)
            at = np.clip(cuts, 1, max(self.labels.shape[1] - 1, 1))
            rows = np.arange(n)
            straddles = inside & (self.labels[rows, at - 1] == self.labels[rows, at])
            start, size, hits = self.group_at(cuts - 1, straddles, mixes)
            return straddles & mixes(start, size, hits)
        # mAP@R: any group starting before the cut that mixes positives and non-positives
        width = self.labels.shape[1]
        ends = np.ones(self.labels.shape, dtype=bool)
        ends[:, :-1] = self.labels[:, 1:] != self.labels[:, :-1]
        ends &= self.labels >= 0
        mixed = ends & (self.start < cuts[:, None]) & (self.hits >= 1) & (self.size - self.hits >= 1)
        found = mixed.any(axis=1) if width else np.zeros(n, dtype=bool)
        check = ~found & (self.last >= 0) & (self.last < cuts)
        if check.any():
            start, size, hits = self.group_at(np.maximum(self.known - 1, 0), check, mixes)
            found |= check & mixes(start, size, hits)
        return found


def mixes(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """Groups holding a positive and a non-positive (their listed part is enough to say yes)."""
    return (hits >= 1) & (size - hits >= 1)
