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
    """The groups of equal scores in one relevance's lists (see the module docstring), looked at block by block:
    only the lists that hold a tie, or stop short (:attr:`sub`), can have a value decided by tie order; per list
    the start of its last listed group when the ranking may go on past it (:attr:`last`, -1: none), counted in
    full from the input on demand. Memory: the lists' flags plus one block of int32 positions at a time."""

    def __init__(
        self, source: Input, view: View, rel: Relevance, lists: RankedLists, rows: np.ndarray, hits: np.ndarray
    ):
        width = hits.shape[1]  # as deep as this relevance's jobs read, two items past their deepest cut
        self.hits, self.first = hits, formulas.first_hit(hits)
        self.ties, self.rows, self.n = lists.ties, rows, len(rows)
        sizes = np.broadcast_to(np.asarray(lists.gallery_size), (len(lists.query),))[rows]
        known = np.minimum(lists.lengths[rows], width)
        sub, last = [], []
        step = max(1, (1 << 22) // max(1, width))
        for lo in range(0, len(rows), step):  # row blocks: no copy of every list's flags
            flags = self.ties[rows[lo : lo + step], :width]  # type: ignore[index]
            k, size = known[lo : lo + step], sizes[lo : lo + step]
            short = (k > 0) & (k < width) & (k < size)
            at = np.flatnonzero(flags.any(axis=1) | short)
            flags, k, size = flags[at], k[at], size[at]
            # the last listed group goes on past the list when the list stops short, or when its last item (read
            # past every cut for this) ties with the one before it; its start: the last listed item not tied back
            tail = flags[:, -1] if width >= 2 else np.zeros(len(at), dtype=bool)
            is_open = (k > 0) & (k < size) & ((k < width) | tail)
            starts = np.where(~flags & (np.arange(width)[None, :] < k[:, None]), np.arange(width)[None, :], -1)
            sub.append(lo + at)
            last.append(np.where(is_open, starts.max(axis=1, initial=-1), -1) if width else np.full(len(at), -1))
        self.sub = np.concatenate(sub) if sub else np.zeros(0, np.int64)
        self.last = np.concatenate(last) if last else np.zeros(0, np.int64)
        self.known = known[self.sub]
        self.width = width
        self._fetch = (source, view, rel, lists, rows)
        self._totals: dict[int, tuple[int, int]] = {}

    def totals(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(members, positives) of the last listed group of ``members`` (positions in :attr:`sub`), in full."""
        missing = np.array([m for m in members.tolist() if m not in self._totals], dtype=np.int64)
        if len(missing):
            source, view, rel, lists, rows = self._fetch
            full = self.sub[missing]
            at = self.known[missing] - 1  # the last listed item: in the group, its score known
            n_tied, n_pos = source.tie_totals(view, rel, full, lists, rows[full], at)
            self._totals.update(zip(missing.tolist(), zip(n_tied.tolist(), n_pos.tolist(), strict=True), strict=True))
        got = [self._totals[m] for m in members.tolist()]
        return np.array([g[0] for g in got], np.int64), np.array([g[1] for g in got], np.int64)

    def decided(self, kind: str, cuts: np.ndarray) -> np.ndarray:
        """Queries whose value of a depth job (its cut per query) the tie order decides (module docstring)."""
        first = self.first
        out = np.zeros(self.n, dtype=bool)
        width = self.width
        if not len(self.sub) or not width:
            return out
        step = max(1, (1 << 21) // width)
        for lo in range(0, len(self.sub), step):
            block = Block(self, np.arange(lo, min(lo + step, len(self.sub))))
            out[self.sub[block.members]] = block.decided(kind, cuts[self.sub[block.members]],
                                                         first[self.sub[block.members]])  # fmt: skip
        return out


class Block:
    """Per listed position of some lists of :class:`Groups`: the start, the listed members and the listed
    positives of its group of equal scores (int32)."""

    def __init__(self, groups: Groups, members: np.ndarray):
        self.groups, self.members = groups, members
        rows = groups.sub[members]
        flags, hits = groups.ties[groups.rows[rows], : groups.width], groups.hits[rows]  # type: ignore[index]
        self.flags = flags
        known, width = groups.known[members], flags.shape[1]
        at = np.arange(width, dtype=np.int32)
        listed = at[None, :] < known[:, None]
        self.start = np.maximum.accumulate(np.where(flags, 0, at[None, :]), axis=1).astype(np.int32)
        ends = listed.copy()
        ends[:, :-1] &= ~flags[:, 1:]
        end = np.minimum.accumulate(np.where(ends, at[None, :], width - 1)[:, ::-1], axis=1)[:, ::-1]
        cum = np.zeros((len(members), width + 1), np.int32)
        np.cumsum(hits & listed, axis=1, out=cum[:, 1:])
        self.size = end - self.start + 1
        self.hits = np.take_along_axis(cum, end + 1, axis=1) - np.take_along_axis(cum, self.start, axis=1)
        self.ends, self.known, self.last = ends, known, groups.last[members]

    def group_at(self, pos: np.ndarray, where: np.ndarray, settled: object) -> tuple[np.ndarray, ...]:
        """(start, members, positives) of the group at position ``pos`` of each list where ``where`` (others: -1); a
        group still open at the list's end is counted in full from the input where ``settled(start, members,
        positives)`` (its listed part) does not already decide the verdict."""
        rows, safe = np.arange(len(pos)), np.clip(pos, 0, self.start.shape[1] - 1)
        start = np.where(where, self.start[rows, safe], -1)
        size = np.where(where, self.size[rows, safe], 0)
        hits = np.where(where, self.hits[rows, safe], 0)
        open_ = where & (self.last >= 0) & (start == self.last) & ~settled(start, size, hits)  # type: ignore[operator]
        if open_.any():
            at = np.flatnonzero(open_)
            size[at], hits[at] = self.groups.totals(self.members[at])
        return start, size, hits

    def decided(self, kind: str, cuts: np.ndarray, first: np.ndarray) -> np.ndarray:
        n = len(cuts)
        rows = np.arange(n)
        if kind == "recall":
            listed = first < self.known
            where = listed | (self.last >= 0)  # no listed positive: the open group may hold the first one
            pos = np.where(listed, first, np.maximum(self.known - 1, 0))
            where &= self.start[rows, np.clip(pos, 0, self.start.shape[1] - 1)] < cuts

            def pushed(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
                return (hits >= 1) & (cuts <= start + size - hits)  # the listed part is enough to say yes

            start, size, hits = self.group_at(pos, where, pushed)
            return where & pushed(start, size, hits)
        if kind in CUT_KINDS:  # a group straddling the cut: the item after the cut ties with the one before it
            inside = (cuts >= 1) & (cuts < self.known)
            straddles = inside & self.flags[rows, np.clip(cuts, 0, self.start.shape[1] - 1)]
            start, size, hits = self.group_at(cuts - 1, straddles, mixes)
            return straddles & mixes(start, size, hits)
        # mAP@R: any group starting before the cut that mixes positives and non-positives
        mixed = self.ends & (self.start < cuts[:, None]) & (self.hits >= 1) & (self.size - self.hits >= 1)
        found = mixed.any(axis=1)
        check = ~found & (self.last >= 0) & (self.last < cuts)
        if check.any():
            start, size, hits = self.group_at(np.maximum(self.known - 1, 0), check, mixes)
            found |= check & mixes(start, size, hits)
        return found


def mixes(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """Groups holding a positive and a non-positive (their listed part is enough to say yes)."""
    return (hits >= 1) & (size - hits >= 1)
