"""Ranked lists given by the user (:class:`Rankings`): the official dicts, arrays, or a TREC run read into them.

Each direction (``i2t``, ``t2i``, ``t2t``, ``i2i``) is ``{query id: [gallery ids, best first]}``
or arrays ``(query_ids, ranked_ids_2d)`` / ``(query_ids, flat_ids, lengths)``. Lists are checked and
converted once per collection. A restricted view (COCO 1K folds, an original pool) reads each list
filtered to the query's allowed items; an intramodal view drops the query's own item from its list
(it is not part of its gallery). Only what the lists hold is known: a metric that needs more items
than a list has, and cannot be decided by a positive within it, is an error naming the queries.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.flat import FlatLists
from eccv_metric.inputs.flat import from_arrays
from eccv_metric.inputs.flat import from_dict
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.inputs.lists import restrict_lists
from eccv_metric.kernels.ranks import Ranked
from eccv_metric.measures.formulas import NO_HIT
from eccv_metric.measures.formulas import first_hit


class Rankings:
    """Ranked lists per direction (see the module docstring). Query ids must be distinct within a direction."""

    kind = "lists"
    exact_ranks = False
    made_for: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what reading the lists found, carried into every result (formats.trec)

    def __init__(self, **directions: object):
        unknown = sorted(set(directions) - set(DIRECTION_KINDS))
        if unknown:
            raise EvaluationError(f"unknown directions {unknown}: ranked lists are given as i2t, t2i, t2t or i2i")
        self.raw = {d: v for d, v in directions.items() if v is not None}
        if not self.raw:
            raise EvaluationError("no ranked lists: give i2t and/or t2i (or t2t, i2i) lists")
        self._converted: dict[tuple, FlatLists] = {}

    def cannot(self, view: View) -> str | None:
        return self.cannot_direction(view.direction)

    def cannot_direction(self, direction: str) -> str | None:
        if direction not in self.raw:
            return f"no {direction} ranked lists were given"
        return None

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        return (
            "a correlation needs the model's similarity of each rated pair, which ranked lists do not hold: "
            "give embeddings or score matrices"
        )

    def lists(self, view: View) -> FlatLists:
        """The direction's lists as dense indices of the view's collection (converted once, stored flat)."""
        key = (view.direction, id(view.collection))
        if key not in self._converted:
            raw = self.raw[view.direction]
            if isinstance(raw, Mapping):
                lists = from_dict(raw, view.direction, view.queries, view.gallery)
            else:
                if not isinstance(raw, tuple) or len(raw) not in (2, 3):
                    raise EvaluationError(
                        f"{view.direction} must be a dict {{query id: [ranked ids]}} or arrays "
                        "(query_ids, ranked_ids[, lengths])"
                    )
                lists = from_arrays(raw[0], raw[1], view.direction, view.queries, view.gallery, *raw[2:])
            self._converted[key] = lists
        return self._converted[key]

    def prefers_ranks(self, view: View) -> bool:
        return False

    def given_queries(self, view: View) -> np.ndarray:
        return self.lists(view).query

    def top(
        self, view: View, depth: int, queries: np.ndarray, decided_by: Relevance | None = None, past: int = 0
    ) -> RankedLists:
        lists = self.lists(view)
        if not view.restricted and not view.exclude_self:
            return lists.ranked(depth)
        sizes, query_group, own = self._restriction(view, lists)
        if lists.equal:  # one 2-D array: filtered in blocks of rows
            return restrict_lists(lists.ranked(lists.width), depth, query_group, view.gallery_group, own, sizes)
        depth = min(depth, lists.width, int(sizes.max(initial=0)))
        return lists.filtered(query_group, view.gallery_group, own).ranked(depth, sizes)

    def tops(self, view: View, groups: list[tuple[int, np.ndarray]], past: int = 0) -> list[RankedLists]:
        return [self.top(view, depth, queries, None, past) for depth, queries in groups]

    def _restriction(self, view: View, lists: FlatLists) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(gallery size, group and own item of each list's query) of a restricted or intramodal view."""
        sizes = view.gallery_sizes(lists.query, len(view.gallery))
        query_group = None
        if view.restricted:
            query_group = (
                np.zeros(len(lists.query), np.int64) if view.query_group is None else view.query_group[lists.query]
            )
        own = lists.query.astype(np.int64) if view.exclude_self else None
        return sizes, query_group, own

    def first_ranks(self, view: View, rel: Relevance, name: str) -> np.ndarray:
        """Ranks from the lists: the position of the first positive + 1 (a list without one: error)."""
        lists = self.lists(view)
        if lists.equal:
            ranked = self.top(view, lists.width, rel.query)
            first = first_hit(ranked.hits(rel, ranked.rows(rel.query, view.queries, name)))
        else:
            if view.restricted or view.exclude_self:
                _, query_group, own = self._restriction(view, lists)
                lists = lists.filtered(query_group, view.gallery_group, own)
            first = lists.first_hits(rel, lists.rows(rel.query, view.queries, name))  # type: ignore[arg-type]
        missing = first == NO_HIT
        if missing.any():
            raise EvaluationError(
                f"{view.direction} {name}: the ranked lists of {int(missing.sum())} query "
                f"{view.query_kind}(s) hold no positive, so their rank is unknown: "
                f"{preview(view.queries.ids[rel.query][missing])}"
            )
        return (first + 1).astype(np.float64)

    def first_ranks_many(self, wanted: list[tuple[View, Relevance, str]]) -> list[Ranked]:
        """:meth:`first_ranks` of each request; a ranked list has no ties (``low`` = ``high`` = the rank)."""
        out = []
        for view, rel, name in wanted:
            ranks = self.first_ranks(view, rel, name)
            out.append(Ranked(ranks, np.zeros(len(ranks), dtype=bool), ranks, ranks))
        return out

    def reranked_depth(self, view: View, queries: np.ndarray) -> None:
        return None

    def tie_totals(
        self, view: View, rel: Relevance, members: np.ndarray, lists: RankedLists, rows: np.ndarray, at: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("ranked lists carry no tie groups: nothing to count")

    def pair_scores(
        self, collection: Collection, kinds: tuple[str, str], dense_1: np.ndarray, dense_2: np.ndarray, what: str
    ) -> np.ndarray:
        raise EvaluationError(
            f"{what}: a correlation needs the model's similarity of each rated pair, which ranked lists do not "
            "hold: give embeddings or score matrices"
        )
