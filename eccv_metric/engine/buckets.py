"""Ragged depths: the queries of one view ranked in groups of similar depth, each list only as deep as its group
needs (:func:`depth_buckets`), and the groups' per-query parts put back in the order of one list of every query
(:func:`merge_parts`).

A depth job reads each query's first ``reads`` items (:attr:`~eccv_metric.measures.kinds.MetricKind.reads`):
R for R-Precision and mAP@R, ``min(R, cap)`` for PMRP, K for R@K. One list of every query is as deep as the
deepest of them; uncapped PMRP over plausible matches reads from 1 to 13,380 captions of an image query (2,495
on average), so one list of every query costs five times what the queries read. A query's values and tie flags
depend only on its own list, and on that list only as far as its depth (two items past it for the tie note),
but for one thing: a sum of floats along a list (mAP@R's) rounds its last bit by the row's length, so it runs over
the width one list of every query would have (:func:`sum_width`). Any grouping then gives the same values, bit
for bit; the grouping only decides what it costs. Restricted views (folds, a pool) keep one list: their lists'
width depends on which queries are asked, and no metric reads deep there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eccv_metric.core.view import View
from eccv_metric.engine.plan import Job
from eccv_metric.inputs.base import Relevance
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.results import QueryScores

ONE_LIST_BELOW = 1 << 22  # list entries (queries x depth) under which one list of every query is kept
STEP = 2**0.25  # depths within this factor of each other are one class; groups are runs of classes
GROUP_COST = 1 << 19  # what one more group costs (a ranking call, restricted relevances), in list entries


@dataclass(frozen=True)
class Part:
    """One depth job's values on one relevance: ``query`` (dense, ascending as every relevance lists its
    queries), their :class:`QueryScores`, and the tie flags ``(decided by tie order, decided past a two-stage
    input's candidates)`` when the tie note is asked for."""

    query: np.ndarray
    scores: QueryScores
    flags: tuple[np.ndarray, np.ndarray | None] | None


def depth_buckets(view: View, jobs: list[Job], rel_of: Callable[[Relevance], Relevance]) -> list[np.ndarray] | None:
    """Groups of the view's queries (dense, ascending; shallowest group first) whose lists are cheaper ranked
    apart, or None where one list of every query costs about as little.

    Each query's depth is the most any job reads of it. Depths are put in classes (a factor :data:`STEP`
    apart), and runs of classes are grouped to make the least ``sum(queries x deepest) + groups x GROUP_COST``
    (a dynamic programme over the classes, at most a few dozen).
    """
    need = np.zeros(len(view.queries), np.int64)
    asked = np.zeros(len(view.queries), dtype=bool)
    for job in jobs:
        reads = METRIC_KINDS[job.kind].reads
        assert reads is not None
        for r in job.relevances:
            rel = rel_of(r)
            asked[rel.query] = True
            need[rel.query] = np.maximum(need[rel.query], reads(job.k, job.cap, rel.n_positives))
    queries = np.flatnonzero(asked)
    depth = np.clip(need[queries], 1, max(1, len(view.gallery)))
    if len(queries) * int(depth.max(initial=0)) < ONE_LIST_BELOW:
        return None
    classes, inverse = np.unique(np.floor(np.log(depth) / np.log(STEP)).astype(np.int64), return_inverse=True)
    counts = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(classes)))))
    deepest = np.zeros(len(classes), np.int64)
    np.maximum.at(deepest, inverse, depth)
    best, start = [0.0], [0]  # best[j]: least cost of the first j classes; start[j]: where its last group starts
    for j in range(1, len(classes) + 1):
        cost, at = min((best[i] + float(counts[j] - counts[i]) * deepest[j - 1] + GROUP_COST, i) for i in range(j))
        best.append(cost)
        start.append(at)
    bounds, j = [], len(classes)
    while j > 0:
        bounds.append((start[j], j))
        j = start[j]
    if len(bounds) == 1:
        return None
    return [queries[(inverse >= lo) & (inverse < hi)] for lo, hi in reversed(bounds)]


def sum_width(
    jobs: list[Job], rel: Relevance, rel_of: Callable[[Relevance], Relevance], extra: int, widest: int
) -> int:
    """How many terms a sum along a list (mAP@R's) runs over for the queries of ``rel`` when one list of every
    query (``widest`` items) is read: the width of its hits (its deepest job's depth, ``extra`` past the cut), up
    to its most positives. The groups' queries are summed over this width too: the same bits."""
    full = rel_of(rel)
    deepest = max(
        METRIC_KINDS[j.kind].depth(j.k, j.cap, [rel_of(r).n_positives for r in j.relevances])
        for j in jobs
        if any(rel_of(r) is full for r in j.relevances)
    )
    return min(deepest + extra, widest, int(full.n_positives.max(initial=0)))


def within(rel_of: Callable[[Relevance], Relevance], queries: np.ndarray) -> Callable[[Relevance], Relevance]:
    """``rel_of`` restricted to the dense ``queries`` (each relevance restricted once)."""
    made: dict[int, Relevance] = {}

    def of(rel: Relevance) -> Relevance:
        base = rel_of(rel)
        if id(base) not in made:
            made[id(base)] = base.restrict(base.query[np.isin(base.query, queries)])
        return made[id(base)]

    return of


def merge_parts(found: list[dict[tuple[int, int], Part]]) -> dict[tuple[int, int], Part]:
    """The parts of every group as one list of every query gives them: each part's queries in ascending order."""
    out = {}
    for key in found[0]:
        pieces = [parts[key] for parts in found]
        dense = np.concatenate([p.query for p in pieces])
        order = np.argsort(dense, kind="stable")
        first = pieces[0].scores
        ids = np.concatenate([p.scores.query_ids for p in pieces])[order]
        values = np.concatenate([p.scores.values for p in pieces])[order]
        flags = None
        if pieces[0].flags is not None:
            tied = np.concatenate([p.flags[0] for p in pieces])[order]  # type: ignore[index]
            tails = [p.flags[1] for p in pieces]  # type: ignore[index]
            flags = (tied, None if tails[0] is None else np.concatenate(tails)[order])  # type: ignore[arg-type]
        out[key] = Part(dense[order], QueryScores(first.metric, first.direction, ids, values, first.aggregate), flags)
    return out
