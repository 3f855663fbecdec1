"""The depth jobs of a view (R@K, R-Precision, mAP@R, PMRP: :func:`run_depth`): each query's first items, asked of
the input once (or once for groups of queries of similar depth: :mod:`eccv_metric.engine.buckets`), each
relevance's hits built once and shared by its jobs, a job's value per query on each of its relevances (their mean
for a job over several), and the tie note's flags (:mod:`eccv_metric.engine.ties`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.view import View
from eccv_metric.engine import ties
from eccv_metric.engine.buckets import Part
from eccv_metric.engine.buckets import depth_buckets
from eccv_metric.engine.buckets import merge_parts
from eccv_metric.engine.buckets import sum_width
from eccv_metric.engine.buckets import within
from eccv_metric.engine.plan import Job
from eccv_metric.engine.ties import Tally
from eccv_metric.inputs.base import Input
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.kernels.workers import block_workers
from eccv_metric.measures import formulas
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.results import QueryScores

Flags = tuple[np.ndarray, np.ndarray | None]  # (decided by tie order, decided past a two-stage input's candidates)


def run_depth(
    view: View,
    jobs: list[Job],
    source: Input,
    rel_of: Callable[[Relevance], Relevance],
    out: dict,
    tally: Tally | None,
    extra: int,
) -> None:
    """The depth jobs of one view into ``out[(metric, direction)]``: their parts (one per relevance) from one list
    per query, then the mean over a job's parts and its tie flags (``tally``; ``extra``: the lists are read that
    many items past the deepest cut, and carry the ties past their ends where the input counts them).

    A scored input ranks a shallower list for less: when the queries' depths differ widely (uncapped R-Precision
    over plausible matches reads from 1 to 13,380 items), the queries are ranked in groups of similar depth
    (:func:`~eccv_metric.engine.buckets.depth_buckets`), each list as deep as its group needs; each query's
    values and flags are the same, read off a list at least as deep as its own depth (two items past it with
    ``extra``, and the ties past the list's end, as one list of every query carries them). A group's error is
    told as one list of every query tells it (the queries named in full).
    """
    groups = depth_buckets(view, jobs, rel_of) if source.exact_ranks and not view.restricted else None
    parts = None
    if groups is not None:
        try:
            rels = [within(rel_of, g) for g in groups]
            depths = [max(_depth(j, r) for j in jobs) + extra for r in rels]
            asked = list(zip(depths, groups, strict=True))
            tops = getattr(source, "tops", None)  # an input written before the protocol had it: one top a group
            if tops is None:
                lists = [source.top(view, depth, queries, None, extra) for depth, queries in asked]
            else:
                lists = tops(view, asked, extra)
            widest = max(got.items.shape[1] for got in lists)  # one list of every query: this wide
            sums = {id(r): sum_width(jobs, r, rel_of, extra, widest) for j in jobs for r in j.relevances}
            found = zip(rels, lists, strict=True)
            parts = merge_parts([_depth_parts(view, jobs, source, r, tally, extra, got, sums) for r, got in found])
        except EvaluationError:
            parts = None  # raised below by the one list of every query, in its words
    if parts is None:
        parts = _depth_parts(view, jobs, source, rel_of, tally, extra)
    for job in jobs:
        found = [parts[(id(job), i)] for i in range(len(job.relevances))]
        scores = [part.scores for part in found]
        out[(job.metric, job.direction)] = scores[0] if len(scores) == 1 else _mean_over(job, scores)
        if found[0].flags is not None:
            flags = [part.flags for part in found]
            _tally_parts(tally, job, out[(job.metric, job.direction)].query_ids, scores, flags)  # type: ignore[arg-type]


def _depth_parts(
    view: View,
    jobs: list[Job],
    source: Input,
    rel_of: Callable[[Relevance], Relevance],
    tally: Tally | None,
    extra: int,
    lists: RankedLists | None = None,
    sums: dict[int, int] | None = None,
) -> dict[tuple[int, int], Part]:
    """Each depth job's part on each of its relevances (``(id(job), i)``: the i-th), from one ``source.top`` (or
    the ``lists`` given, as deep as these jobs read; ``sums``: by relevance, how many terms a sum along a list
    runs over, :func:`~eccv_metric.engine.buckets.sum_width`)."""
    if lists is None:
        rels = {id(r): rel_of(r) for j in jobs for r in j.relevances}
        needed = np.zeros(len(view.queries), dtype=bool)  # a mask, not np.unique: ~1 ms less per view
        for rel in rels.values():
            needed[rel.query] = True
        depth = max(_depth(j, rel_of) for j in jobs)
        only_hits = all(j.kind == "recall" for j in jobs) and len(rels) == 1
        decided_by = next(iter(rels.values())) if only_hits else None
        lists = source.top(view, depth + extra, np.flatnonzero(needed), decided_by, extra)
    cache: dict[int, _Hits] = {}
    found: dict[tuple[int, int], tuple[Job, Relevance, QueryScores]] = {}
    for job in jobs:
        for i, (given, rel) in enumerate((r, rel_of(r)) for r in job.relevances):
            if id(rel) not in cache:
                deepest = max(_depth(j, rel_of) for j in jobs if any(rel_of(r) is rel for r in j.relevances))
                width = None if sums is None else sums[id(given)]
                cache[id(rel)] = _hits(view, lists, rel, deepest + extra, job.metric, width)
            found[(id(job), i)] = (job, rel, _score(view, job, rel, cache[id(rel)]))
    flags = _flags(view, found, source, lists, cache) if tally is not None and lists.ties is not None else {}
    return {key: Part(rel.query, scores, flags.get(key)) for key, (_, rel, scores) in found.items()}


def _flags(
    view: View,
    found: dict[tuple[int, int], tuple[Job, Relevance, QueryScores]],
    source: Input,
    lists: RankedLists,
    cache: dict[int, _Hits],
) -> dict[tuple[int, int], Flags]:
    """The tie note's flags of each part ``found`` (key: (id(job), i) -> its job, relevance, values): the jobs of
    one relevance in turn (they share its groups of equal scores), the relevances side by side on the block
    workers, so that a direction's serial tail does not grow by their sum."""
    by_rel: dict[int, list[tuple[tuple[int, int], Job, Relevance]]] = {}
    for key, (job, rel, _) in found.items():
        by_rel.setdefault(id(rel), []).append((key, job, rel))

    def flags_of(rel_key: int) -> list[tuple[tuple[int, int], Flags]]:
        groups: dict[int, ties.Groups] = {}
        hits = cache[rel_key]
        return [(key, _depth_flags(view, job, rel, source, lists, hits, groups)) for key, job, rel in by_rel[rel_key]]

    workers = block_workers() if len(by_rel) > 1 else None
    priority = (getattr(source, "ticket", 0), -len(view.queries))
    done = workers.map(flags_of, list(by_rel), priority) if workers is not None else [flags_of(k) for k in by_rel]
    return dict(pair for part in done for pair in part)


def _depth_flags(
    view: View, job: Job, rel: Relevance, source: Input, lists: RankedLists, found: _Hits, groups: dict
) -> Flags:
    """(decided by tie order, decided past a two-stage input's candidates) per query of ``rel`` for a depth job."""
    if id(rel) not in groups:
        groups[id(rel)] = ties.Groups(source, view, rel, lists, found.rows, found.hits, found.first)
    sizes = np.broadcast_to(np.asarray(found.sizes), (len(found.ids),))
    cuts = ties.cut(job.kind, job.k, job.cap, rel.n_positives, sizes)
    tied = groups[id(rel)].decided(job.kind, cuts)
    reranked = ties.reranked_depth(source, view, rel)
    return tied, None if reranked is None else ties.past_on_lists(job.kind, cuts, found.first, reranked)


def _tally_parts(tally: Tally, job: Job, out_ids: np.ndarray, parts: list[QueryScores], flags: list[Flags]) -> None:
    """Record a depth job's flagged queries (``out_ids``: the job's); a job over several relations (PMRP over
    zeta): flagged in any of them."""
    if len(parts) == 1:
        tally.add(job.metric, job.direction, out_ids, *flags[0])  # type: ignore[arg-type]
        return
    tied = np.zeros(len(out_ids), dtype=bool)
    tail = None if flags[0][1] is None else np.zeros(len(out_ids), dtype=bool)
    for part, (part_tied, part_tail) in zip(parts, flags, strict=True):
        order = np.argsort(part.query_ids)
        at = order[np.searchsorted(part.query_ids[order], out_ids)]  # every part scores the job's queries
        tied |= part_tied[at]
        if tail is not None:
            tail |= part_tail[at]  # type: ignore[index]
    tally.add(job.metric, job.direction, out_ids, tied, tail)


def _depth(job: Job, rel_of: Callable[[Relevance], Relevance]) -> int:
    """How many items of each list the job reads at most (its kind's ``depth``)."""
    return METRIC_KINDS[job.kind].depth(job.k, job.cap, [rel_of(r).n_positives for r in job.relevances])  # type: ignore[misc]


@dataclass(frozen=True)
class _Hits:
    """What the jobs of one relevance share: query ids, list lengths, gallery sizes, hit matrix, first hits, and
    the rows of the lists they came from."""

    ids: np.ndarray
    available: np.ndarray
    sizes: np.ndarray | int
    hits: np.ndarray
    first: np.ndarray
    rows: np.ndarray
    width: int | None = None  # how many terms a sum along a list runs over (None: the hits' own)


def _hits(
    view: View, lists: RankedLists, rel: Relevance, depth: int, needed_by: str, width: int | None = None
) -> _Hits:
    rows = lists.rows(rel.query, view.queries, needed_by)
    hits = lists.hits(rel, rows, depth)
    sizes = lists.gallery_size if np.ndim(lists.gallery_size) == 0 else np.asarray(lists.gallery_size)[rows]
    ids = view.queries.ids[rel.query]
    return _Hits(ids, lists.lengths[rows], sizes, hits, formulas.first_hit(hits), rows, width)


def _score(view: View, job: Job, rel: Relevance, found: _Hits) -> QueryScores:
    """Per-query values of one job on one relevance (its kind's ``score``); an error names the queries the lists
    cannot decide, with what the kind needs (its ``short``)."""
    kind = METRIC_KINDS[job.kind]
    values, undecided = kind.score(
        found.hits, found.first, rel.n_positives, found.available, found.sizes, job.k, job.cap, found.width
    )  # type: ignore[misc]
    if undecided.any():
        where = f" of the query's {job.restriction_label}" if job.restriction_label else ""
        raise EvaluationError(
            f"{job.direction} {job.metric}: the ranked lists of {int(undecided.sum())} query "
            f"{view.query_kind}(s) are too short ({kind.short(job.k, job.cap, found.sizes, where)}): "  # type: ignore[misc]
            f"{preview(found.ids[undecided])}; give longer lists or the scores (a score matrix or embeddings rank "
            "every item)"
        )
    return QueryScores(job.metric, job.direction, found.ids, values)


def _mean_over(job: Job, parts: list[QueryScores]) -> QueryScores:
    """Per query, the mean of its values over several relations (PCME's PMRP), on the queries all of them score."""
    common = parts[0].query_ids
    for part in parts[1:]:
        common = np.intersect1d(common, part.query_ids)
    values = np.zeros(len(common))
    for part in parts:
        order = np.argsort(part.query_ids)
        values += part.values[order][np.searchsorted(part.query_ids[order], common)]
    return QueryScores(job.metric, job.direction, common, values / len(parts))
