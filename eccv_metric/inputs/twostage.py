"""A two-stage ranking as an input: a first stage that scores every (query, gallery item), and per direction a
second stage that rescored each query's candidates (:class:`~eccv_metric.inputs.reranked.Reranked`).

The ranking rule, defined for every metric. For query q with candidates C(q): first the candidates, by final
score descending, equal final scores in the gallery's order (the first stage's rows under its tie rule: the
given order with ``ties="stable"``, trec_eval's with ``ties="trec_eval"``); then every other gallery item in
the first stage's own order (its scores, its tie rule). This is what ranking LAVIS's matrix (candidates: the
final score, every other pair -100) stably gives down to the last candidate; past them LAVIS ranks ties, this
rule the first stage. A restricted view (COCO 1K folds, FG's original pool) is this ranking restricted to the
view's items (candidates outside it dropped, order kept); an intramodal view leaves the query's own item out.

Exact and blockwise, with the first stage's kernels: the first positive's rank is ``1 + #{candidates before
it}`` when a candidate is positive, else ``m + its rank among the view's other items by the first stage``
(``m`` = the query's candidates in the view; one pass over the first stage's blocks, the candidates' columns
taken off the counts: :func:`~eccv_metric.kernels.ranks.block_spans`); a top list is the candidates in final
order, then the first stage's top list with the candidates taken out. Only queries that need the first stage
read it.

Every query a metric scores must have been reranked (an error names the others); a direction without a
second stage cannot be asked for (evaluate the first stage alone for it). The CxC correlations are refused:
the final scores exist for each query's candidates only, not for the rated pairs (score those with the
reranker itself, :class:`~eccv_metric.inputs.pairs.PairScores`, or the first stage alone).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.candidates import Bound
from eccv_metric.inputs.candidates import bind
from eccv_metric.inputs.candidates import compact
from eccv_metric.inputs.candidates import in_rows
from eccv_metric.inputs.candidates import within_candidates
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.inputs.lists import side_by_side
from eccv_metric.inputs.lists import tie_flags
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.reranked import Reranked
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.inputs.tied import columns_of
from eccv_metric.inputs.tied import count_tied
from eccv_metric.kernels.ranks import Ranked
from eccv_metric.kernels.scorers import BlockScorer


class TwoStage(ScoredInput):
    """A first stage (:class:`ScoreMatrix` or :class:`Embeddings`) and, per direction, a :class:`Reranked`
    (or a mapping / tuple of its three arrays) (see the module docstring)::

        TwoStage(Embeddings(image_emb, caption_emb), i2t=Reranked(image_ids, top_captions, itm_scores))
    """

    kind = "twostage"

    def __init__(self, first: ScoreMatrix | Embeddings, **directions: object):
        if not isinstance(first, (ScoreMatrix, Embeddings)):
            raise EvaluationError(
                f"the first stage must be a ScoreMatrix or Embeddings (a score for every query and gallery item), "
                f"not {type(first).__name__}"
            )
        unknown = sorted(set(directions) - set(DIRECTION_KINDS))
        if unknown:
            raise EvaluationError(f"unknown directions {unknown}: a second stage is given as i2t, t2i, t2t or i2i")
        super().__init__({}, first.ties)  # rows and ids are the first stage's (mapping, given_ids)
        self.first = first
        self.reranked = {d: Reranked.of(v, d) for d, v in directions.items() if v is not None}
        if not self.reranked:
            raise EvaluationError("no second stage: give Reranked candidates for i2t and/or t2i (or t2t, i2i)")
        self._bound: dict[tuple, Bound] = {}

    def __repr__(self) -> str:
        return f"TwoStage({type(self.first).__name__}, {', '.join(f'{d}={r!r}' for d, r in self.reranked.items())})"

    # -- the first stage's rows, scores and words ------------------------------------------------------------------

    def n_rows(self, kind: str) -> int | None:
        return self.first.n_rows(kind)

    def scorer(self, view: View) -> BlockScorer:
        return self.first.scorer(view)

    def shape_error(self, kind: str, n_rows: int, n_ids: int) -> str:
        return self.first.shape_error(kind, n_rows, n_ids)

    def nonfinite(self, view: View) -> tuple[str, str]:
        return self.first.nonfinite(view)

    def mapping(self, collection: Collection, kind: str) -> tuple[np.ndarray, np.ndarray]:
        return self.first.mapping(collection, kind)

    def row_order(self, collection: Collection, kind: str) -> np.ndarray | None:
        return self.first.row_order(collection, kind)

    def given_ids(self, collection: Collection, kind: str) -> np.ndarray:
        return self.first.given_ids(collection, kind)

    def constant_scores(self, kinds: tuple[str, str]) -> tuple[str, bool] | None:
        found = self.first.constant_scores(kinds)
        if found is None:
            return None
        return found[0].replace("every ranking is", "past the reranked candidates every ranking is"), found[1]

    def cannot_direction(self, direction: str) -> str | None:
        if direction not in self.reranked:
            return (
                f"no {direction} second stage was given ({direction}= of TwoStage): a direction is ranked by a "
                "two-stage input only where it was reranked; evaluate the first stage alone for it"
            )
        return self.first.cannot_direction(direction)

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        return (
            "a two-stage input's final scores exist for each query's reranked candidates only, not for the rated "
            "pairs: score them with the reranker itself (PairScores) or the first stage alone"
        )

    def prefers_ranks(self, view: View) -> bool:
        return False  # a top list within the candidates reads no first-stage score at all

    # -- candidates -----------------------------------------------------------------------------------------------

    def bound(self, collection: Collection, direction: str) -> Bound:
        """The direction's candidates on ``collection`` (checked and sorted once)."""
        key = (id(collection), direction)
        if key not in self._bound:
            self._bound[key] = bind(self.first, self.reranked[direction], collection, direction)
        return self._bound[key]

    def candidates(
        self, view: View, queries: np.ndarray, needed_by: str, gallery_pos: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scorer positions, final scores, in the view) of the candidates of ``queries`` (dense), final order;
        ``gallery_pos``: a restricted view's group gallery (its candidates are those inside it)."""
        found = self.bound(view.collection, view.direction)
        rows = found.row[queries]
        if (rows < 0).any():
            missing = view.queries.ids[queries[rows < 0]]
            raise EvaluationError(
                f"{view.direction}{needed_by and ' ' + needed_by}: {len(missing)} query {view.query_kind}(s) were not "
                f"reranked (not in the {view.direction} query_ids): {preview(missing)}; rerank every query the "
                "metrics score, or evaluate the first stage alone"
            )
        cols, final = found.cols[rows], found.final[rows]
        gdense, grow = self.mapping(view.collection, view.gallery_kind)
        inside = np.ones(cols.shape, dtype=bool)
        if view.restricted:
            group = np.zeros(len(queries), np.int64) if view.query_group is None else view.query_group[queries]
            dense = gdense[cols]
            inside = (dense >= 0) & (view.gallery_group[np.maximum(dense, 0)] == group[:, None]) & (group[:, None] >= 0)
        if gallery_pos is not None:
            inside &= columns_of(gallery_pos, cols) >= 0  # type: ignore[operator]
        if view.exclude_self:
            inside &= cols != grow[queries][:, None]
        return cols, final, inside

    def reranked_depth(self, view: View, queries: np.ndarray) -> np.ndarray:
        return self.candidates(view, queries, "")[2].sum(axis=1)

    # -- rankings -------------------------------------------------------------------------------------------------

    def top(
        self, view: View, depth: int, queries: np.ndarray, decided_by: Relevance | None = None, past: int = 0
    ) -> RankedLists:
        if view.restricted:
            return self._restricted_top(view, depth, queries, decided_by)  # the whole ranking filtered, or _group_top
        gdense, grow = self._rows(view, view.gallery_kind, None)
        own = grow[queries] if view.exclude_self else None
        size = len(gdense) - view.exclude_self
        pos, ties, scores = self.compose(view, depth, queries, None, own, size)
        lengths = np.full(len(queries), size)
        lists = RankedLists(view.direction, queries, gdense[pos].astype(np.int32), lengths, size, ties, scores)
        self._last[view.key] = lists
        return lists

    def tops(self, view: View, groups: list[tuple[int, np.ndarray]], past: int = 0) -> list[RankedLists]:
        """:meth:`top` of each group ``(depth, dense queries)``, one by one."""
        return [self.top(view, depth, queries, None, past) for depth, queries in groups]

    def top_positions(self, view: View, depth: int, queries: np.ndarray) -> np.ndarray:
        """The given gallery row of each of the first ``depth`` items of ``queries`` (dense), unrestricted view."""
        gdense, grow = self._rows(view, view.gallery_kind, None)
        own = grow[queries] if view.exclude_self else None
        pos = self.compose(view, depth, queries, None, own, len(gdense) - view.exclude_self)[0]
        order = self.row_order(view.collection, view.gallery_kind)
        return pos if order is None else order[pos]

    def _group_top(self, view: View, depth: int, queries: np.ndarray, past: int = 0) -> RankedLists:
        """The two-stage ranking of ``queries`` within the gallery of their group (restricted views)."""
        qgroup = np.zeros(len(view.queries), np.int64) if view.query_group is None else view.query_group
        pool = np.flatnonzero(view.gallery_group >= 0)
        gdense, grow = self._rows(view, view.gallery_kind, pool)
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for group in np.unique(qgroup[queries]).tolist():
            members = queries[qgroup[queries] == group]
            gallery_pos = np.sort(grow[view.gallery_group == group])
            own = np.searchsorted(gallery_pos, grow[members]) if view.exclude_self else None
            size = len(gallery_pos) - view.exclude_self
            pos, ties, scores = self.compose(view, depth, members, gallery_pos, own, size)
            parts.append((members, np.where(pos >= 0, gdense[pos], -1).astype(np.int32), ties, scores))
        query = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        sizes = view.gallery_sizes(query, 0)
        items, ties = side_by_side([p[1] for p in parts], -1), side_by_side([p[2] for p in parts], False)
        return RankedLists(view.direction, query, items, sizes, sizes, ties, side_by_side([p[3] for p in parts], 0))

    def compose(
        self,
        view: View,
        depth: int,
        queries: np.ndarray,
        gallery_pos: np.ndarray | None,
        own: np.ndarray | None,
        size: int,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scorer positions, tie flags, scores) of the first ``min(depth, size)`` items of each query's
        two-stage ranking over ``gallery_pos`` (None: the whole gallery); ``own``: as the first stage's top."""
        width = min(depth, size)
        cols, final, inside = self.candidates(view, queries, "", gallery_pos)
        m = inside.sum(axis=1)
        pos, scores = np.full((len(queries), width), -1, np.int64), np.zeros((len(queries), width))
        lead = compact([cols, final], inside, width)
        pos[:, : lead[0].shape[1]], scores[:, : lead[1].shape[1]] = lead
        tail = np.flatnonzero(m < width)  # these queries read the first stage past their candidates
        if len(tail):
            _, qrow = self._rows(view, view.query_kind, queries[tail])
            scorer = self.scorer(view)
            mine = None if own is None else own[tail]
            found = self._top(view, scorer, qrow[queries[tail]], width, gallery_pos, mine, queries[tail])
            top, values = found.top, found.values
            taken = in_rows(top, np.where(inside[tail], cols[tail], -1))
            rest = compact([top.astype(np.int64), values.astype(np.float64)], ~taken, width)
            at = np.arange(width)[None, :] - m[tail, None]  # a tail item's place after the query's candidates
            fill = (at >= 0) & (at < rest[0].shape[1])
            safe = np.clip(at, 0, max(rest[0].shape[1] - 1, 0))
            for out, part in zip((pos, scores), rest, strict=True):
                if part.shape[1]:
                    out[tail] = np.where(fill, np.take_along_axis(part, safe, axis=1), out[tail])
        return pos, tie_flags(scores, np.full(len(queries), width), np.minimum(m, width)), scores

    def first_ranks_many(self, wanted: list[tuple[View, Relevance, str]]) -> list[Ranked]:
        """Exact ranks of each request's best positive under the two-stage rule (module docstring): within the
        candidates from their final scores; past them, one shared pass over the first stage for every request's
        remaining queries, each query's candidates taken off its counts."""
        plans, heads = [], []
        for view, rel, name in wanted:
            cols, final, inside = self.candidates(view, rel.query, name)
            gdense = self.mapping(view.collection, view.gallery_kind)[0]
            hits = rel.hits(np.where(inside, gdense[cols], -1)) & inside
            head = within_candidates(hits, final, inside)
            rest = np.flatnonzero(~hits.any(axis=1))
            parts = []
            if len(rest):
                self.require_varied(view)
                for members, request in self.rank_requests(view, rel.restrict(rel.query[rest])):
                    taken = np.where(inside[rest[members]], cols[rest[members]], -1)
                    excluded = columns_of(request.gallery_pos, taken)
                    parts.append((members, dataclasses.replace(request, excluded=excluded)))
            plans.append((view, parts))
            heads.append((head, rest, inside.sum(axis=1)))
        found = self.rank_plans(plans)
        out = []
        for (view, rel, name), (_, parts), (head, rest, m) in zip(wanted, plans, heads, strict=True):
            past = Ranked.empty(len(rest))
            for members, request in parts:
                past.put(members, found[id(request)])
            self.refuse_bad(view, name, rel.query[rest], past.bad)
            shift = m[rest]
            head.put(rest, Ranked(past.ranks + shift, past.bad, past.low + shift, past.high + shift))
            out.append(head)
        return out

    def tie_totals(
        self, view: View, rel: Relevance, members: np.ndarray, lists: RankedLists, rows: np.ndarray, at: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`ScoredInput.tie_totals`, within the item's part of the ranking: a candidate's group among the
        query's candidates in the view (final scores), another item's among the others (the first stage's)."""
        queries = rel.query[members]
        cols, final, inside = self.candidates(view, queries, "")
        values = lists.scores[rows, at]  # type: ignore[index]
        head = at < inside.sum(axis=1)
        n_tied, n_positive = np.zeros(len(members), np.int64), np.zeros(len(members), np.int64)
        gdense = self.mapping(view.collection, view.gallery_kind)[0]
        if head.any():
            equal = inside[head] & (final[head] == values[head, None])
            hits = rel.restrict(queries[head]).hits(np.where(inside[head], gdense[cols[head]], -1))
            n_tied[head], n_positive[head] = equal.sum(axis=1), (equal & hits).sum(axis=1)
        if (~head).any():
            taken = np.where(inside[~head], cols[~head], -1)
            n_tied[~head], n_positive[~head] = count_tied(self, view, rel, members[~head], values[~head], taken)
        return n_tied, n_positive
