"""What inputs that give scores share: a score matrix (:mod:`.matrix`) or embeddings (:mod:`.embeddings`).

Both are ranked block by block through a scorer
(:mod:`eccv_metric.kernels.scorers`), so every view, every fold and every
intramodal task costs a bounded amount of memory beyond the input, and every
rank is exact (``#{higher} + #{equal, given earlier} + 1``). Their rows are named by ids, and read in the order
of the tie rule (``ties``), as :mod:`eccv_metric.inputs.rows` says.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.base import HeldChecks
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.inputs.lists import restrict_lists
from eccv_metric.inputs.lists import side_by_side
from eccv_metric.inputs.lists import splice
from eccv_metric.inputs.lists import tie_flags
from eccv_metric.inputs.rows import RowIds
from eccv_metric.inputs.tied import all_tied
from eccv_metric.inputs.tied import tie_totals
from eccv_metric.kernels.past import PastTies
from eccv_metric.kernels.ranks import Ranked
from eccv_metric.kernels.ranks import RankRequest
from eccv_metric.kernels.ranks import rank_all
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.topk import TopRanked
from eccv_metric.kernels.topk import top_ranked_groups
from eccv_metric.kernels.workers import next_ticket

PAST = 64  # items past a list's end that tie with its last item, kept per list (at least the list's depth)


class ScoredInput(RowIds, HeldChecks):
    """What score matrices and embeddings share: id mappings, top-k per view, exact ranks, pair scores; their
    values are checked when made and refused when scored (:class:`~eccv_metric.inputs.base.HeldChecks`)."""

    made_for: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what reading the input found, carried into every result

    exact_ranks = True
    kind = "scores"

    def __init__(self, ids: dict[str, object], ties: str = "stable"):
        super().__init__(ids, ties)
        self._varied: dict[tuple, tuple[str, bool] | None] = {}
        self.constant_notes: dict[tuple, str] = {}  # kinds -> what a constant score matrix means
        self.tied_queries: dict[str, set[int]] = {}  # direction -> queries whose every score is equal
        self.ticket = next_ticket()
        self._last: dict[tuple, RankedLists] = {}

    # -- what a subclass provides ----------------------------------------------------------------------------------

    def scorer(self, view: View) -> BlockScorer:
        raise NotImplementedError

    def cannot(self, view: View) -> str | None:
        return self.cannot_direction(view.direction)

    def cannot_direction(self, direction: str) -> str | None:
        """Why this input cannot rank a direction's queries (no resources needed to tell; None: it can)."""
        raise NotImplementedError

    def constant_scores(self, kinds: tuple[str, str]) -> tuple[str, bool] | None:
        """(what it means, whether to refuse) when every score of these kinds is equal; None: they vary."""
        raise NotImplementedError

    def require_varied(self, view: View) -> bool:
        """Scores that are all equal: refused when they lost the model's scores (products that underflow to 0),
        else noted (:attr:`constant_notes`: every ranking is the tie order of the rows). Whether they are."""
        q, g = view.query_kind, view.gallery_kind
        key = (q, g) if q == g else ("image", "caption")  # one matrix serves both directions: one check, one wording
        if key not in self._varied:
            self._varied[key] = self.constant_scores(key)
        found = self._varied[key]
        if found is not None and found[1]:
            raise EvaluationError(f"{view.direction}: {found[0]}")
        if found is not None:
            self.constant_notes[key] = found[0]
        return found is not None

    def nonfinite(self, view: View) -> tuple[str, str]:
        """(what non-finite scores of a view are, "; " + what to do or ""), in the input's words."""
        return "contain NaN or inf", ""

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        raise NotImplementedError

    def given_queries(self, view: View) -> None:
        return None

    def prefers_ranks(self, view: View) -> bool:
        """Blocks a scorer computes (a matrix product per block) are cheaper scanned once for exact ranks than
        twice (top-K, then ranks); a stored matrix is read cheaply either way."""
        return not self.scorer(view).parallel

    def _priority(self, view: View) -> tuple[int, int]:
        # this evaluation's ticket, then the view with more queries (the longer serial tail) first
        return (self.ticket, -len(view.queries))

    # -- rankings -----------------------------------------------------------------------------------------------

    def top(
        self, view: View, depth: int, queries: np.ndarray, decided_by: Relevance | None = None, past: int = 0
    ) -> RankedLists:
        if view.restricted:
            return self._restricted_top(view, depth, queries, decided_by, past)
        lists = self.tops(view, [(depth, queries)], past)[0]
        self._last[view.key] = lists
        return lists

    def tops(self, view: View, groups: list[tuple[int, np.ndarray]], past: int = 0) -> list[RankedLists]:
        """:meth:`top` of each group ``(depth, dense queries)`` in one pass over the scores: a block holding queries
        of several groups is read, or computed, once (a restricted view's groups: one by one). ``past``: as
        :meth:`top`'s; every group's lists carry the ties past them, as one list of every query would."""
        if view.restricted:
            return [self.top(view, depth, queries, None, past) for depth, queries in groups]
        queries = np.concatenate([q for _, q in groups])
        _, qrow = self._rows(view, view.query_kind, queries)
        gdense, _ = self._rows(view, view.gallery_kind, None)
        scorer = self.scorer(view)
        n_gal = scorer.n_gallery - view.exclude_self
        own = self.mapping(view.collection, view.gallery_kind)[1][queries] if view.exclude_self else None
        group = np.repeat(np.arange(len(groups)), [len(q) for _, q in groups])
        ks = [min(depth, n_gal) for depth, _ in groups]
        pasts = [max(PAST, k) if past else 0 for k in ks]
        found = self._tops(view, scorer, qrow[queries], ks, group, None, own, queries, pasts)
        items, out = gdense.astype(np.int32), []
        for (_, members), got in zip(groups, found, strict=True):
            lengths = np.full(len(members), n_gal)
            beyond = None if got.past is None else got.past.with_items(items[got.past.items])
            out.append(RankedLists(view.direction, members, items[got.top], lengths, n_gal,
                                   tie_flags(got.values, lengths), got.values, beyond))  # fmt: skip
        return out

    def top_positions(self, view: View, depth: int, queries: np.ndarray) -> np.ndarray:
        """The given gallery row of each of the first ``depth`` items of ``queries`` (dense), unrestricted view."""
        _, qrow = self._rows(view, view.query_kind, queries)
        self._rows(view, view.gallery_kind, None)
        scorer = self.scorer(view)
        own = self.mapping(view.collection, view.gallery_kind)[1][queries] if view.exclude_self else None
        k = min(depth, scorer.n_gallery - view.exclude_self)
        top = self._top(view, scorer, qrow[queries], k, None, own, queries).top
        order = self.row_order(view.collection, view.gallery_kind)
        return top if order is None else order[top]

    def _top(
        self,
        view: View,
        scorer: BlockScorer,
        rows: np.ndarray,
        k: int,
        gallery_pos: np.ndarray | None,
        own: np.ndarray | None,
        queries: np.ndarray,
        past: int = 0,
    ) -> TopRanked:
        """The top-k of the scorer rows ``rows`` (``queries``: dense): gallery positions of the scorer, their
        scores, and with ``past`` the ties past each list (:func:`~eccv_metric.kernels.topk.ranked_top`)."""
        one = np.zeros(len(rows), np.int64)
        return self._tops(view, scorer, rows, [k], one, gallery_pos, own, queries, [past])[0]

    def _tops(
        self,
        view: View,
        scorer: BlockScorer,
        rows: np.ndarray,
        ks: list[int],
        group: np.ndarray,
        gallery_pos: np.ndarray | None,
        own: np.ndarray | None,
        queries: np.ndarray,
        pasts: list[int],
    ) -> list[TopRanked]:
        """:meth:`_top` of each group of rows (``group``: each row's), group ``g`` ranked ``ks[g]`` deep, with
        ``pasts[g]`` (:func:`~eccv_metric.kernels.topk.top_ranked_groups`)."""
        constant = self.require_varied(view)
        found = top_ranked_groups(scorer, rows, ks, group, gallery_pos, self._priority(view), own, pasts)
        members = [np.flatnonzero(group == g) for g in range(len(ks))]
        bad = np.zeros(len(rows), bool)
        for at, got in zip(members, found, strict=True):
            bad[at] = got.bad
        if bad.any():
            ids = view.queries.ids[queries[bad]]
            raise EvaluationError(
                f"{view.direction}: the scores of {int(bad.sum())} query {view.query_kind}(s) "
                f"{self.nonfinite(view)[0]}: {preview(ids)}{self.nonfinite(view)[1]}"
            )
        for at, got in zip(members, found, strict=True):
            if not constant:  # a constant matrix is noted once, not query by query
                tied = all_tied(scorer, rows[at], got.top, gallery_pos, None if own is None else own[at])
                named = view.queries.ids[queries[at[tied]]].tolist()
                if named:
                    self.tied_queries.setdefault(view.direction, set()).update(named)
        return found

    def _restricted_top(
        self, view: View, depth: int, queries: np.ndarray, decided_by: Relevance | None, past: int = 0
    ) -> RankedLists:
        """Top items of each query among its group's items (group items keep their given order for ties).

        Shortcut, exact: a group's ranking is the whole ranking restricted to the
        group's items (same scores, same tie order). So when the unrestricted
        lists of these queries are at hand, a query is decided by its filtered
        list if that holds ``depth`` items, or a positive of ``decided_by`` (the
        only relevance whose first hits will be read); only the other queries are
        ranked again, within their group.
        """
        sizes = view.gallery_sizes(queries, 0)
        qgroup = np.zeros(len(view.queries), np.int64) if view.query_group is None else view.query_group
        full = self._last.get(view.unrestricted().key)
        if full is None or not np.isin(queries, full.query).all():
            return self._group_top(view, depth, queries, past)
        rows = full.rows(queries, view.queries, view.restriction or "")
        sub = full.take(rows, queries)
        own = queries.astype(np.int64) if view.exclude_self else None
        filtered = restrict_lists(sub, depth, qgroup[queries], view.gallery_group, own, sizes)
        short = past if filtered.past is not None else 0  # the ties past a list tell what its last items would
        settled = filtered.lengths >= np.minimum(depth - short, sizes)
        if decided_by is not None:
            hit_rows = filtered.rows(decided_by.query, view.queries, view.restriction or "")
            settled[hit_rows] |= filtered.hits(decided_by, hit_rows).any(axis=1)
        again = np.flatnonzero(~settled)
        if not len(again):
            return RankedLists(view.direction, queries, filtered.items, filtered.lengths, sizes, filtered.ties,
                               filtered.scores, filtered.past)  # fmt: skip
        exact = self._group_top(view, depth, queries[again], past)
        return splice(filtered, again, exact, exact.rows(queries[again], view.queries, view.restriction or ""), sizes)

    def _group_top(self, view: View, depth: int, queries: np.ndarray, past: int = 0) -> RankedLists:
        """Top ``depth`` items of each query among the gallery items of its group, from the scores (``past``: with
        the ties past each list, :attr:`RankedLists.past`)."""
        scorer = self.scorer(view)
        qgroup = np.zeros(len(view.queries), np.int64) if view.query_group is None else view.query_group
        _, qrow = self._rows(view, view.query_kind, queries)
        pool = np.flatnonzero(view.gallery_group >= 0)
        gdense, grow = self._rows(view, view.gallery_kind, pool)
        parts_q, parts_items, parts_ties, parts_scores, parts_past = [], [], [], [], []
        for group in np.unique(qgroup[queries]).tolist():
            members = queries[qgroup[queries] == group]
            gallery_pos = np.sort(grow[view.gallery_group == group])
            own = np.searchsorted(gallery_pos, grow[members]) if view.exclude_self else None
            k = min(depth, len(gallery_pos) - view.exclude_self)
            found = self._top(view, scorer, qrow[members], k, gallery_pos, own, members, max(PAST, k) if past else 0)
            if found.past is not None:  # dense items (-1: an extra id)
                parts_past.append(found.past.with_items(gdense[found.past.items].astype(np.int32)))
            parts_q.append(members)
            parts_items.append(gdense[found.top].astype(np.int32))
            parts_ties.append(tie_flags(found.values, np.full(len(members), k)))
            parts_scores.append(found.values)
        query = np.concatenate(parts_q) if parts_q else np.zeros(0, np.int64)
        sizes = view.gallery_sizes(query, 0)
        items, ties = side_by_side(parts_items, -1), side_by_side(parts_ties, False)
        found_past = PastTies.stacked(parts_past) if past and len(parts_past) == len(parts_q) else None
        return RankedLists(view.direction, query, items, sizes, sizes, ties, side_by_side(parts_scores, 0), found_past)

    def first_ranks(self, view: View, rel: Relevance, name: str) -> np.ndarray:
        """Exact rank of each ``rel.query``'s best-ranked positive, straight from the scores."""
        return self.first_ranks_many([(view, rel, name)])[0].ranks

    def first_ranks_many(self, wanted: list[tuple[View, Relevance, str]]) -> list[Ranked]:
        """:meth:`first_ranks` of each (view, relevance, metric name), with how far another tie order moves them
        (:class:`~eccv_metric.kernels.ranks.Ranked`): the requests on one scorer share one pass over its blocks
        (:func:`~eccv_metric.kernels.ranks.rank_all`), so every relevance and view of a direction reads each
        computed block once. Errors: the first request (in the order given) that fails."""
        plans = []
        for view, rel, _ in wanted:
            self.require_varied(view)
            plans.append((view, self.rank_requests(view, rel)))
        found = self.rank_plans(plans)
        out = []
        for (view, rel, name), (_, parts) in zip(wanted, plans, strict=True):
            ranked = Ranked.empty(len(rel.query))
            for members, request in parts:
                ranked.put(members, found[id(request)])
            self.refuse_bad(view, name, rel.query, ranked.bad)
            out.append(ranked)
        return out

    def rank_plans(self, plans: list[tuple[View, list[tuple[np.ndarray, RankRequest]]]]) -> dict[int, Ranked]:
        """Every request of ``plans`` (view, [(members, request)]), one shared pass per scorer: id(request) ->
        its :class:`~eccv_metric.kernels.ranks.Ranked`."""
        scorers: dict[int, tuple[BlockScorer, list[RankRequest]]] = {}
        for view, parts in plans:
            scorer = self.scorer(view)
            scorers.setdefault(id(scorer), (scorer, []))[1].extend(r for _, r in parts)
        found: dict[int, Ranked] = {}
        for scorer, requests in scorers.values():
            found.update(zip(map(id, requests), rank_all(scorer, requests), strict=True))
        return found

    def refuse_bad(self, view: View, name: str, queries: np.ndarray, bad: np.ndarray) -> None:
        """An error naming the queries (dense) whose scores hold NaN / inf, or that have no positive to rank."""
        if bad.any():
            raise EvaluationError(
                f"{view.direction} {name}: the scores of {int(bad.sum())} query {view.query_kind}(s) "
                f"{self.nonfinite(view)[0]}, or have no positive in the gallery: "
                f"{preview(view.queries.ids[queries][bad])}{self.nonfinite(view)[1]}"
            )

    def tie_totals(
        self, view: View, rel: Relevance, members: np.ndarray, lists: RankedLists, rows: np.ndarray, at: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~eccv_metric.inputs.tied.tie_totals`: the group of equal scores holding each list's item at
        ``at``, in full (from the lists, else read again from the scores, only for these queries)."""
        return tie_totals(self, view, rel, members, lists, rows, at)

    def reranked_depth(self, view: View, queries: np.ndarray) -> np.ndarray | None:
        """How many reranked candidates each query's view gallery holds (a two-stage input); None: not one."""
        return None

    def rank_requests(self, view: View, rel: Relevance) -> list[tuple[np.ndarray, RankRequest]]:
        """(positions in ``rel.query``, the request ranking them) per gallery group of the view (one: unrestricted)."""
        _, qrow = self._rows(view, view.query_kind, rel.query)
        pool = None if not view.restricted else np.flatnonzero(view.gallery_group >= 0)
        gdense, grow = self._rows(view, view.gallery_kind, pool)
        qgroup = np.zeros(len(view.queries), np.int64) if view.query_group is None else view.query_group
        groups = np.unique(qgroup[rel.query]).tolist() if view.restricted else [None]
        out = []
        for group in groups:
            members = np.arange(len(rel.query)) if group is None else np.flatnonzero(qgroup[rel.query] == group)
            gallery_pos = None if group is None else np.sort(grow[view.gallery_group == group])
            columns = gdense if gallery_pos is None else gdense[gallery_pos]
            col_of_dense = np.full(len(view.gallery), -1, dtype=np.int64)
            col_of_dense[columns[columns >= 0]] = np.flatnonzero(columns >= 0)
            own = col_of_dense[rel.query[members]] if view.exclude_self else None

            def mask(part: np.ndarray, n_cols: int, members: np.ndarray = members, columns: np.ndarray = columns,
                     col_of_dense: np.ndarray = col_of_dense) -> np.ndarray:  # fmt: skip
                return rel.positive_mask(members[part], columns, col_of_dense)

            out.append((members, RankRequest(qrow[rel.query[members]], mask, gallery_pos, own)))
        return out

    # -- pairs ------------------------------------------------------------------------------------------------------

    def pair_scores(
        self, collection: Collection, kinds: tuple[str, str], dense_1: np.ndarray, dense_2: np.ndarray, what: str
    ) -> np.ndarray:
        reason = self.cannot_pairs(kinds)
        if reason is not None:
            raise EvaluationError(f"{what}: {reason}")
        rows = []
        for kind, dense in zip(kinds, (dense_1, dense_2), strict=True):
            row = self.mapping(collection, kind)[1][dense]
            if (row < 0).any():
                ids = collection.index(kind).ids[np.unique(dense[row < 0])]
                raise EvaluationError(f"{what}: {len(ids)} rated {kind}(s) have no row: {preview(ids)}")
            order = self.row_order(collection, kind)
            rows.append(row if order is None else order[row])  # the pair scorer reads the given rows
        return self.pair_scorer(kinds).pairs(rows[0], rows[1])

    def pair_scorer(self, kinds: tuple[str, str]) -> MatrixScorer:
        """A scorer whose ``pairs(rows_1, rows_2)`` gives the similarity of row pairs of the two kinds."""
        raise NotImplementedError
