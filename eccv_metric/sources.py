"""The two sources of ranked lists: given lists (the official dicts or arrays) and score matrices.

Each gives a direction's lists over the whole test gallery (``ranked``), within
each query's COCO 1K fold (``fold_ranked``) and the rank of each query's
best-ranked positive (``positive_ranks``).
"""

from __future__ import annotations

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import N_FOLDS
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import Positives
from eccv_metric.positives import require_unique
from eccv_metric.rank_stats import ranks_from_lists
from eccv_metric.rank_stats import ranks_from_scores
from eccv_metric.ranking import QUERY_KIND
from eccv_metric.ranking import RankedLists
from eccv_metric.ranking import check_extra_ids
from eccv_metric.ranking import int_ids
from eccv_metric.topk import as_score_matrix
from eccv_metric.topk import top_ranked
from eccv_metric.workers import next_ticket


class ListSource:
    """Given ranked lists of one direction (from the official dicts or from arrays)."""

    def __init__(self, lists: RankedLists, gt: GroundTruth):
        self.gt = gt
        self.lists = lists

    def ranked(self, direction: str, depth: int, queries: np.ndarray) -> RankedLists:
        return self.lists

    def fold_ranked(self, direction: str, depth: int, rel: Positives | None = None) -> RankedLists:
        """Each list filtered to the gallery items of the query's fold (first ``depth`` kept)."""
        lists = self.lists
        qfold = self.gt.query_fold(direction)[lists.query]
        gfold = self.gt.gallery_fold(direction)
        n, width = lists.items.shape
        depth = min(depth, width, self.gt.fold_size(direction))  # a filtered list never holds more: memory by input
        out = np.full((n, depth), -1, dtype=np.int32)
        available = np.zeros(n, dtype=np.int64)
        step = max(1, (1 << 22) // max(1, width))
        for start in range(0, n if width else 0, step):
            items = lists.items[start : start + step]
            keep = (items >= 0) & (gfold[np.maximum(items, 0)] == qfold[start : start + step, None])
            cum = np.cumsum(keep, axis=1, dtype=np.int32)
            available[start : start + step] = cum[:, -1]
            r, c = np.nonzero(keep & (cum <= depth))
            out[start + r, cum[r, c] - 1] = items[r, c]
        return RankedLists(direction, lists.query, out, available, self.gt.fold_size(direction))

    def positive_ranks(self, direction: str, rel: Positives, fold: bool, name: str) -> np.ndarray:
        """1-based rank of each query's best-ranked positive (needs a positive in its list)."""
        lists = self.fold_ranked(direction, self.lists.items.shape[1]) if fold else self.lists
        return ranks_from_lists(lists, rel, self.gt, name)


class ScoreSource:
    """A similarity matrix ``scores[i, j]`` of ``image_ids[i]`` and ``caption_ids[j]``."""

    def __init__(self, scores: object, image_ids: object, caption_ids: object, gt: GroundTruth):
        self.gt = gt
        scores = as_score_matrix(scores)
        if not (scores.flags.c_contiguous or scores.flags.f_contiguous):
            scores = np.ascontiguousarray(scores)  # a strided view: one copy, then fast row access
        self.scores = scores
        self._ticket = next_ticket()
        self.pos: dict[str, np.ndarray] = {}
        self.dense: dict[str, np.ndarray] = {}
        self._ranked: dict[str, RankedLists] = {}
        for axis, (ids, index) in enumerate(((image_ids, gt.images), (caption_ids, gt.captions))):
            arr = int_ids(ids, f"{index.kind} ids", ndim=1)
            if len(arr) != self.scores.shape[axis]:
                raise EvaluationError(
                    f"scores have shape {self.scores.shape} but {len(arr)} {index.kind} ids were given "
                    f"(scores[i, j] must be image_ids[i] x caption_ids[j])"
                )
            require_unique(arr, f"given {index.kind}")
            check_extra_ids(arr, index, gt.captions if axis == 0 else gt.images)
            dense = index.positions(arr)
            pos = np.full(len(index), -1, dtype=np.int64)
            pos[dense[dense >= 0]] = np.flatnonzero(dense >= 0)
            if (pos < 0).any():
                raise EvaluationError(
                    f"the gallery must cover the test split: {int((pos < 0).sum())} test {index.kind} id(s) "
                    f"are missing from {index.kind}_ids: {preview(index.ids[pos < 0])}"
                )
            self.pos["i2t" if axis == 0 else "t2i"] = pos
            self.dense["t2i" if axis == 0 else "i2t"] = dense

    def _top(self, direction: str, depth: int, queries: np.ndarray, gallery_pos: np.ndarray | None) -> np.ndarray:
        query_pos = self.pos[direction][queries]
        n_gal = self.scores.shape[1 if direction == "i2t" else 0] if gallery_pos is None else len(gallery_pos)
        # read the matrix along its storage order: a column-major matrix is ranked through its transpose
        transposed = not self.scores.flags.c_contiguous
        matrix = self.scores.T if transposed else self.scores
        along_columns = (direction == "t2i") != transposed
        # this evaluation's ticket, then one priority for all of a direction's rankings: the direction with
        # more queries (and the longer serial tail) is served first, its COCO 1K re-ranking included
        priority = (self._ticket, -len(self.gt.query_index(direction)))
        top, bad = top_ranked(matrix, query_pos, min(depth, n_gal), along_columns, gallery_pos, priority)
        if bad.any():
            ids = self.gt.query_index(direction).ids[queries[bad]]
            raise EvaluationError(
                f"{direction}: the scores of {int(bad.sum())} query {QUERY_KIND[direction]}(s) contain NaN or inf: "
                f"{preview(ids)}"
            )
        return self.dense[direction][top]

    def positive_ranks(self, direction: str, rel: Positives, fold: bool, name: str) -> np.ndarray:
        """Exact 1-based rank of each query's best-ranked positive, straight from the scores."""
        transposed = not self.scores.flags.c_contiguous
        along_columns = (direction == "t2i") != transposed
        gt = self.gt
        ranks, bad = ranks_from_scores(
            self.scores.T if transposed else self.scores,
            along_columns,
            self.pos[direction][rel.query],
            self.dense[direction],
            rel,
            gt.gallery_fold(direction) if fold else None,
            gt.query_fold(direction)[rel.query] if fold else None,
        )
        if bad.any():
            raise EvaluationError(
                f"{direction} {name}: the scores of {int(bad.sum())} query {QUERY_KIND[direction]}(s) contain NaN "
                f"or inf, or have no positive in the gallery: {preview(gt.query_index(direction).ids[rel.query][bad])}"
            )
        return ranks

    def ranked(self, direction: str, depth: int, queries: np.ndarray) -> RankedLists:
        n_gal = self.scores.shape[1 if direction == "i2t" else 0]
        items = self._top(direction, depth, queries, None)
        lists = RankedLists(direction, queries, items, np.full(len(queries), n_gal, np.int64), n_gal)
        self._ranked[direction] = lists
        return lists

    def fold_ranked(self, direction: str, depth: int, rel: Positives) -> RankedLists:
        """Top items among each query of ``rel`` of its fold only (fold items keep their given order for ties).

        Shortcut, exact: the fold's ranking is the whole ranking restricted to
        the fold's items (same scores, same tie order). So when the lists of
        :meth:`ranked` are at hand, a query is decided by its filtered list if
        that holds ``depth`` fold items or a positive (R@K is then known for
        every K <= ``depth``); only the other queries are ranked again, within
        their fold.
        """
        full = self._ranked.get(direction)
        queries = rel.query
        if full is None or not np.isin(queries, full.query).all():
            return self._fold_top(direction, depth, queries)
        filtered = ListSource(full, self.gt).fold_ranked(direction, depth)
        rows = filtered.rows(queries, self.gt, "COCO 1K")
        items, available = filtered.items[rows], filtered.lengths[rows]
        width = items.shape[1]
        again = (available < depth) & ~filtered.hits(rel, rows).any(axis=1)
        size = self.gt.fold_size(direction)
        if again.any():
            exact = self._fold_top(direction, depth, queries[again])
            items = np.pad(items, ((0, 0), (0, depth - width)), constant_values=-1) if width < depth else items
            items[again] = exact.items[exact.rows(queries[again], self.gt, "COCO 1K")]
            available[again] = size
        return RankedLists(direction, queries, items, available, size)

    def _fold_top(self, direction: str, depth: int, queries: np.ndarray) -> RankedLists:
        """Top ``depth`` items of each query among the gallery items of its fold, from the scores."""
        gt = self.gt
        qfold = gt.query_fold(direction)[queries]
        gfold = gt.gallery_fold(direction)
        gallery_pos_of_dense = self.pos["t2i" if direction == "i2t" else "i2t"]
        size = gt.fold_size(direction)
        parts_q, parts_items = [], []
        for fold in range(N_FOLDS):
            fold_queries = queries[qfold == fold]
            gallery_pos = np.sort(gallery_pos_of_dense[np.flatnonzero(gfold == fold)])
            parts_q.append(fold_queries)
            parts_items.append(self._top(direction, depth, fold_queries, gallery_pos))
        query = np.concatenate(parts_q)
        return RankedLists(direction, query, np.concatenate(parts_items), np.full(len(query), size, np.int64), size)
