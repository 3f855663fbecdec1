"""The one engine: every job, from any input, with the kernels and formulas of the layers below.

Per view (the ranking a set of jobs reads) it asks the input once for the top
items every depth job needs (R@K: K items; R-Precision / mAP@R: R items;
PMRP: min(R, cap); queries of similar depth together where depths differ
widely: :mod:`eccv_metric.engine.buckets`), shares each relevance's hits among its jobs, and reads
rank jobs (MedR, MeanR; R@K with K above ``DEEP_K`` from scores) off exact
ranks. Correlations score the rated pairs. Per-query values everywhere; a
job an input cannot decide is an error naming the queries.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import View
from eccv_metric.engine import ties
from eccv_metric.engine.depth import run_depth
from eccv_metric.engine.plan import Job
from eccv_metric.engine.plan import direction_order
from eccv_metric.engine.ties import Tally
from eccv_metric.inputs.base import Input
from eccv_metric.inputs.base import Relevance
from eccv_metric.kernels.ranks import Ranked
from eccv_metric.measures import formulas
from eccv_metric.measures.correlation import bootstrap_spearman
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.results import PerQuery
from eccv_metric.measures.results import QueryScores

# R@K with a deeper K is read off exact ranks (one pass over the scores per relevance), not a K-deep top-K:
# measured faster from about K = 1,000 on (slower at K = 100-400, where the top-K is cheap)
DEEP_K = 1000


def refuse_unscorable(jobs: list[Job], source: Input) -> None:
    """An error naming the first planned job the input cannot score (a view it cannot rank, pairs it cannot
    score)."""
    for job in jobs:
        reason = source.cannot_pairs(job.rating_kinds) if job.view is None else source.cannot(job.view)
        if reason is not None:
            raise EvaluationError(f"{job.metric} ({job.direction}): {reason}")


def run(
    jobs: list[Job],
    source: Input,
    partial: bool = False,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    tally: Tally | None = None,
) -> PerQuery:
    """Per-query values ``out[metric][direction]`` of every job.

    ``partial``: score only the queries the input has a ranking for (ranked
    lists; means over those); by default a missing query is an error.
    ``tally``: filled with the queries whose values the tie order, or a two-stage input's first stage, decides
    (:mod:`eccv_metric.engine.ties`).
    """
    refuse_unscorable(jobs, source)  # what this input cannot give, before any work
    out: dict[tuple[str, str], QueryScores] = {}
    directions = sorted({j.direction for j in jobs if j.view is not None}, key=direction_order)

    def one(direction: str) -> None:
        chosen = [j for j in jobs if j.view is not None and j.direction == direction]
        _run_direction(chosen, source, partial, out, tally)

    if len(directions) > 1 and source.kind != "lists":  # a direction's serial steps beside the other's ranking
        with ThreadPoolExecutor(len(directions)) as pool:
            for future in [pool.submit(one, d) for d in directions]:
                future.result()  # the first direction's error first, as in a serial run
    else:
        for direction in directions:
            one(direction)
    for job in jobs:
        if job.view is None and (job.metric, job.direction) not in out:
            _correlation(job, source, n_resamples, seed, out)
    for (metric, direction), scores in out.items():  # an average over no query is no number: refused here
        if len(scores.values) == 0:
            given = " (partial=True scores only the queries the ranked lists give)" if partial else ""
            raise EvaluationError(
                f"{direction} {metric}: no query has a positive and a ranking: no query to score{given}"
            )
    result: PerQuery = {}
    for job in jobs:  # metrics in the jobs' order (the registry's), directions in i2t, t2i, t2t, i2i order
        for name in (job.metric, job.metric + "_std") if job.kind == "spearman" else (job.metric,):
            result.setdefault(name, {})
    for (metric, direction), scores in sorted(out.items(), key=lambda item: direction_order(item[0][1])):
        result[metric][direction] = scores
    return result


def _run_direction(jobs: list[Job], source: Input, partial: bool, out: dict, tally: Tally | None) -> None:
    views: list[View] = []
    for job in jobs:
        if all(job.view is not v for v in views):
            views.append(job.view)  # type: ignore[arg-type]
    views.sort(key=lambda v: v.restricted)  # unrestricted first: restricted views may filter its lists
    ranks = _shared_ranks(views, jobs, source)
    for view in views:
        _run_view(view, [j for j in jobs if j.view is view], source, partial, out, ranks, tally)


def _shared_ranks(views: list[View], jobs: list[Job], source: Input) -> dict[tuple[int, int], Ranked]:
    """The exact ranks every rank job of a direction reads, asked of a scored input at once: one pass over each
    computed product serves every relevance and view (the caption-caption product once for cxc_t2t and
    coco_t2t). Ranked lists (``exact_ranks`` False) are asked view by view, as their jobs run."""
    if not source.exact_ranks:
        return {}
    wanted: dict[tuple[int, int], tuple[View, Relevance, str]] = {}
    for view in views:
        for job in _rank_jobs(view, [j for j in jobs if j.view is view], source):
            wanted.setdefault((id(view), id(job.relevance)), (view, job.relevance, job.metric))
    return dict(zip(wanted, source.first_ranks_many(list(wanted.values())), strict=True))


def _rank_jobs(view: View, jobs: list[Job], source: Input) -> list[Job]:
    """The jobs of a view read off exact ranks (:func:`_run_view`'s *rank jobs*)."""
    by_rank = [j for j in jobs if METRIC_KINDS[j.kind].needs == "rank"]
    if source.exact_ranks:  # R@K = 1[rank <= K]: from exact ranks when they cost no more than a top-K
        ranked = {id(j.relevance) for j in by_rank}
        cheap = source.prefers_ranks(view)  # e.g. blocks computed by a matrix product: one pass, not two
        by_rank += [
            j
            for j in jobs
            if j.kind == "recall" and (j.k > DEEP_K or id(j.relevance) in ranked or cheap)  # type: ignore[operator]
        ]
    return by_rank


def _run_view(
    view: View,
    jobs: list[Job],
    source: Input,
    partial: bool,
    out: dict,
    shared: dict[tuple[int, int], Ranked],
    tally: Tally | None = None,
) -> None:
    """Score every job of one view (one ranking: direction, collection, restriction) into ``out[(metric, dir)]``.

    The jobs split in two groups. *Rank jobs* (MedR, MeanR; R@K too when the input has exact ranks and
    K > ``DEEP_K``, or another rank job already reads the same relevance, or the input prefers ranks) read
    the exact rank of each query's first positive: one ``source.first_ranks`` per relevance. *Depth jobs*
    (R@K, R-Precision, mAP@R, PMRP) read the first ``depth`` items of each query's list: ``source.top`` is
    asked once, for the deepest depth any job needs and for the queries any relevance has (or ``source.tops``
    once, for groups of queries of similar depth: :func:`~eccv_metric.engine.depth.run_depth`); each relevance's
    hit matrix is built once at the depth its deepest job reads and shared by its jobs.
    A job over several relevances (PCME's PMRP over zeta) is the per-query mean of its parts.

    With ``partial`` and an input that gives only some queries (ranked lists), every relevance is first
    restricted to the given queries (once per relevance), so means are over those queries only.
    Errors (lists too short to decide a value) name the metric, direction and queries. ``shared``: ranks
    already found for (view, relevance) by :func:`_shared_ranks`. ``tally``: see :func:`run` (lists of scores
    are then read one item deeper, past the deepest cut: :mod:`eccv_metric.engine.ties`).
    """
    restricted: dict[int, Relevance] = {}

    def rel_of(rel: Relevance) -> Relevance:
        if not partial or source.given_queries(view) is None:
            return rel
        if id(rel) not in restricted:
            restricted[id(rel)] = rel.restrict(source.given_queries(view))  # type: ignore[arg-type]
        return restricted[id(rel)]

    by_rank = _rank_jobs(view, jobs, source)
    by_depth = [j for j in jobs if j not in by_rank]
    # two items past the cut: does a group of equal scores straddle it, and does the group at the list's end go on?
    extra = 2 if tally is not None and source.exact_ranks else 0
    if by_depth:
        run_depth(view, by_depth, source, rel_of, out, tally, extra)
    ranks: dict[int, Ranked | np.ndarray] = {}
    for job in by_rank:
        rel = rel_of(job.relevance)
        if id(rel) not in ranks:
            found = shared.get((id(view), id(rel)))
            ranks[id(rel)] = source.first_ranks(view, rel, job.metric) if found is None else found
        got = ranks[id(rel)]
        values = got.ranks if isinstance(got, Ranked) else got
        ids = view.queries.ids[rel.query]
        if job.kind == "recall":  # an exact rank is at most the gallery size: K needs no capping
            scores = QueryScores(
                job.metric,
                job.direction,
                ids,
                formulas.recall_from_ranks(values, job.k, formulas.NO_HIT),  # type: ignore[arg-type]
            )
        else:
            scores = QueryScores(job.metric, job.direction, ids, values, METRIC_KINDS[job.kind].aggregate)
        out[(job.metric, job.direction)] = scores
        if tally is not None and isinstance(got, Ranked):
            reranked = ties.reranked_depth(source, view, rel)
            tail = None if reranked is None else ties.past_by_rank(job.kind, job.k, values, reranked)
            tally.add(job.metric, job.direction, ids, ties.by_rank(job.kind, job.k, got), tail)


def _correlation(job: Job, source: Input, n_resamples: int, seed: int, out: dict) -> None:
    """Spearman bootstrap of the rated pairs' similarities; the ``_std`` job reads the same samples."""
    assert job.ratings is not None and job.pairs is not None and job.collection is not None
    sims = source.pair_scores(job.collection, job.rating_kinds, job.pairs[0], job.pairs[1], job.metric)
    rho = bootstrap_spearman(job.ratings, sims, n_resamples, seed)
    samples = np.arange(len(rho.samples))
    base = job.metric.removesuffix("_std")
    out[(base, job.direction)] = QueryScores(base, job.direction, samples, rho.samples)
    out[(base + "_std", job.direction)] = QueryScores(base + "_std", job.direction, samples, rho.samples, "std")
