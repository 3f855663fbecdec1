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
with the last item read: rare but for tie-heavy scores) is counted in full (``Input.tie_totals``), and only for
the queries whose verdict needs it: from the items past the list that tie with its last one, which the top-k
keeps as it ranks (:attr:`~eccv_metric.inputs.lists.RankedLists.past`; a list that carries them may stop up to
two items short, as a restricted view's may), else from the query's row read again. Ranked lists (given in order)
have no ties.

*Decided by the first stage* (two-stage inputs, :mod:`eccv_metric.inputs.twostage`): ``m`` = the query's
reranked candidates in the view; a rank ``> m``; R@K with no positive among the candidates and ``c > m``;
R-Precision, PMRP and mAP@R with ``c > m``.
"""

from __future__ import annotations

from collections.abc import Callable
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
Settled = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # (start, members, positives) -> verdict known


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


def reranked_depth(source: Input, view: View, rel: Relevance) -> np.ndarray | None:
    """Each query's reranked candidates in the view (two-stage inputs; None for the others, also for an input
    written before the protocol had the method)."""
    depth = getattr(source, "reranked_depth", None)
    return None if depth is None else depth(view, rel.query)


def past_on_lists(kind: str, cuts: np.ndarray, first: np.ndarray, reranked: np.ndarray) -> np.ndarray:
    """Queries whose depth job reads the first stage's order past the reranked candidates."""
    if kind == "recall":
        return (cuts > reranked) & (first >= reranked)  # no positive among the candidates (first: NO_HIT)
    return cuts > reranked


class Groups:
    """The groups of equal scores in one relevance's lists (see the module docstring): only the lists that hold a
    tie, or stop short (:attr:`sub`), can have a value decided by tie order; per list the start of its last listed
    group when the ranking may go on past it (:attr:`last`, -1: none), counted in full from the input on demand
    (:meth:`totals`, once per list). A job looks at the group holding one position of each list (R@K: the first
    positive; R-Precision, PMRP: the cut), read off the lists' tie flags block by block; mAP@R at every group
    before its cut. Memory: the lists' flags plus one block of positions at a time."""

    def __init__(
        self,
        source: Input,
        view: View,
        rel: Relevance,
        lists: RankedLists,
        rows: np.ndarray,
        hits: np.ndarray,
        first: np.ndarray | None = None,
    ):
        width = hits.shape[1]  # as deep as this relevance's jobs read, two items past their deepest cut
        self.hits, self.first = hits, formulas.first_hit(hits) if first is None else first  # first: of these hits
        self.ties, self.rows, self.n, self.width = lists.ties, rows, len(rows), width
        sizes = np.broadcast_to(np.asarray(lists.gallery_size), (len(lists.query),))[rows]
        known = np.minimum(lists.lengths[rows], width)
        sub, last = [], []
        step = max(1, (1 << 22) // max(1, width))
        for lo in range(0, len(rows), step):  # row blocks: no copy of every list's flags
            flags = self.ties[rows[lo : lo + step], :width]  # type: ignore[index]
            k, size = known[lo : lo + step], sizes[lo : lo + step]
            short = (k > 0) & (k < width) & (k < size)
            at = np.flatnonzero(flags.any(axis=1) | short)
            # the last listed group goes on past the list when the list stops short, or when its last item (read
            # past every cut for this) ties with the one before it; its start: the last listed item not tied back
            tail = flags[at, -1] if width >= 2 else np.zeros(len(at), dtype=bool)
            opened = np.flatnonzero((k[at] > 0) & (k[at] < size[at]) & ((k[at] < width) | tail))
            starts = ~flags[at[opened]] & (np.arange(width)[None, :] < k[at[opened], None])
            found = np.full(len(at), -1, np.int64)
            found[opened] = width - 1 - np.argmax(starts[:, ::-1], axis=1)
            sub.append(lo + at)
            last.append(found)
        self.sub = np.concatenate(sub) if sub else np.zeros(0, np.int64)
        self.last = np.concatenate(last) if last else np.zeros(0, np.int64)
        self.known = known[self.sub]
        self._fetch = (source, view, rel, lists, rows)
        self._size = np.full(len(self.sub), -1, np.int64)  # a group's totals, counted in full once (-1: not yet)
        self._hits = np.zeros(len(self.sub), np.int64)
        self._recall: tuple[np.ndarray, ...] | None = None

    def listed(self, idx: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, listed members, listed positives) of the group holding position ``pos`` (< :attr:`known`) of
        the lists at positions ``idx`` of :attr:`sub`: it starts at the last item at or before ``pos`` not tied
        with the one before it (the first item never is), and ends before the next such item within the list."""
        width = self.width
        out = [np.zeros(len(idx), np.int64) for _ in range(3)]
        at = np.arange(width)[None, :]
        step = max(1, (1 << 22) // max(1, width))
        for lo in range(0, len(idx), step):  # the group: the listed items of the same group number as ``pos``
            part, p = idx[lo : lo + step], pos[lo : lo + step]
            rows = self.sub[part]
            group = np.cumsum(~self.ties[self.rows[rows], :width], axis=1, dtype=np.int32)  # type: ignore[index]
            inside = (group == group[np.arange(len(part)), p][:, None]) & (at < self.known[part, None])
            out[0][lo : lo + step], out[1][lo : lo + step] = np.argmax(inside, axis=1), np.count_nonzero(inside, 1)
            out[2][lo : lo + step] = np.count_nonzero(self.hits[rows] & inside, axis=1)
        return out[0], out[1], out[2]

    def totals(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(members, positives) of the last listed group of ``members`` (positions in :attr:`sub`), in full."""
        missing = np.unique(members[self._size[members] < 0])
        if len(missing):
            source, view, rel, lists, rows = self._fetch
            full = self.sub[missing]
            at = self.known[missing] - 1  # the last listed item: in the group, its score known
            self._size[missing], self._hits[missing] = source.tie_totals(view, rel, full, lists, rows[full], at)
        return self._size[members], self._hits[members]

    def in_full(self, idx: np.ndarray, found: tuple[np.ndarray, ...], settled: Settled) -> tuple[np.ndarray, ...]:
        """(start, members, positives) of the groups ``found`` (listed parts) of the lists ``idx``, a group still
        open at the list's end counted in full (:meth:`totals`) where ``settled(start, members, positives)`` of
        its listed part does not already decide the verdict."""
        start, size, hits = found[0], found[1].copy(), found[2].copy()
        last = self.last[idx]
        open_ = np.flatnonzero((last >= 0) & (start == last) & ~settled(start, size, hits))
        if len(open_):
            size[open_], hits[open_] = self.totals(idx[open_])
        return start, size, hits

    def decided(self, kind: str, cuts: np.ndarray) -> np.ndarray:
        """Queries whose value of a depth job (its cut per query) the tie order decides (module docstring)."""
        out = np.zeros(self.n, dtype=bool)
        if not len(self.sub) or not self.width:
            return out
        c = cuts[self.sub]
        if kind == "recall":  # the group holding the first positive, or the open last group (it may hold one)
            idx, start, size, hits = self.recall_groups()
            near = np.flatnonzero(start < c[idx])
            idx, cut = idx[near], c[idx[near]]

            def pushed(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
                return (hits >= 1) & (cut <= start + size - hits)  # the listed part is enough to say yes

            out[self.sub[idx]] = pushed(*self.in_full(idx, (start[near], size[near], hits[near]), pushed))
            return out
        if kind in CUT_KINDS:  # a group straddling the cut: the item after the cut ties with the one before it
            idx = np.flatnonzero((c >= 1) & (c < self.known))
            idx = idx[self.ties[self.rows[self.sub[idx]], c[idx]]]  # type: ignore[index]
            out[self.sub[idx]] = mixes(*self.in_full(idx, self.listed(idx, c[idx] - 1), mixes))
            # a cut at the end of a list that stops short (its ties past it known): the open last group straddles
            # it when it goes on past the list, i.e. when it is larger in full than listed
            edge = np.flatnonzero((c >= 1) & (c == self.known) & (self.known < self.width) & (self.last >= 0))
            if len(edge):
                listed = self.listed(edge, c[edge] - 1)
                start, size, hits = self.in_full(edge, listed, lambda *_: np.zeros(len(edge), dtype=bool))
                out[self.sub[edge]] = (size > listed[1]) & mixes(start, size, hits)
            return out
        # mAP@R: any group starting before the cut that mixes positives and non-positives
        found = self.mixed_before(c)
        idx = np.flatnonzero(~found & (self.last >= 0) & (self.last < c))
        found[idx] = mixes(*self.in_full(idx, self.listed(idx, self.known[idx] - 1), mixes))
        out[self.sub] = found
        return out

    def recall_groups(self) -> tuple[np.ndarray, ...]:
        """(lists, start, listed members, listed positives) of the group holding each list's first positive, or
        its last listed group when no positive is listed and that group is open: the same for every K."""
        if self._recall is None:
            first = self.first[self.sub]
            listed = first < self.known
            idx = np.flatnonzero(listed | (self.last >= 0))
            pos = np.where(listed[idx], first[idx], np.maximum(self.known[idx] - 1, 0))
            self._recall = (idx, *self.listed(idx, pos))
        return self._recall

    def mixed_before(self, cuts: np.ndarray) -> np.ndarray:
        """Per list of :attr:`sub`: does a listed group starting before its cut hold a positive and a non-positive
        (int32 positions, block by block)."""
        width = self.width
        found = np.zeros(len(self.sub), dtype=bool)
        at = np.arange(width, dtype=np.int32)
        step = max(1, (1 << 21) // width)
        for lo in range(0, len(self.sub), step):
            rows = self.sub[lo : lo + step]
            flags, hits = self.ties[self.rows[rows], :width], self.hits[rows]  # type: ignore[index]
            listed = at[None, :] < self.known[lo : lo + step, None]
            start = np.maximum.accumulate(np.where(flags, 0, at[None, :]), axis=1).astype(np.int32)
            ends = listed.copy()
            ends[:, :-1] &= ~flags[:, 1:]
            end = np.minimum.accumulate(np.where(ends, at[None, :], width - 1)[:, ::-1], axis=1)[:, ::-1]
            cum = np.zeros((len(rows), width + 1), np.int32)
            np.cumsum(hits & listed, axis=1, out=cum[:, 1:])
            size = end - start + 1
            n_hits = np.take_along_axis(cum, end + 1, axis=1) - np.take_along_axis(cum, start, axis=1)
            mixed = ends & (start < cuts[lo : lo + step, None]) & (n_hits >= 1) & (size - n_hits >= 1)
            found[lo : lo + step] = mixed.any(axis=1)
        return found


def mixes(start: np.ndarray, size: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """Groups holding a positive and a non-positive (their listed part is enough to say yes)."""
    return (hits >= 1) & (size - hits >= 1)
