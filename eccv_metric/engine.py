"""Evaluation: which queries and depths each metric needs, and per-query values.

A *source* gives ranked lists of one direction: over the whole test gallery
(``ranked``) and restricted to each query's COCO 1K fold (``fold_ranked``).
Two sources exist (``sources.py``): given ranked lists and score matrices.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from dataclasses import replace
from typing import Protocol

import numpy as np

from eccv_metric import measures
from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import DIRECTIONS
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import Positives
from eccv_metric.rank_stats import STATS
from eccv_metric.ranking import QUERY_KIND
from eccv_metric.ranking import RankedLists
from eccv_metric.sources import ListSource
from eccv_metric.sources import ScoreSource
from eccv_metric.targets import Request


class Relevance(Protocol):
    """Positive lists of one benchmark and direction (CSR ``Positives`` or PM)."""

    query: np.ndarray
    n_positives: np.ndarray

    def hits(self, items: np.ndarray) -> np.ndarray: ...

    def restrict(self, queries: np.ndarray) -> Relevance: ...


@dataclass(frozen=True)
class QueryScores:
    """Per-query values of one metric in one direction; ``mean`` is the reported number."""

    metric: str
    direction: str
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: str = "mean"  # how the reported number is made: "mean", "median" (MedR) or "std" (of a bootstrap)

    @property
    def mean(self) -> float:
        if len(self.values) == 0:
            raise EvaluationError(f"{self.direction} {self.metric}: no query has a positive, nothing to average")
        return float(np.mean(self.values))

    @property
    def value(self) -> float:
        """The reported number: the mean over queries, their median for MedR (std of bootstrap samples)."""
        mean = self.mean  # the same check for an empty set of queries
        if self.aggregate == "median":
            return float(np.median(self.values))
        if self.aggregate == "std":
            return float(np.std(self.values))
        return mean


class Source(Protocol):
    def ranked(self, direction: str, depth: int, queries: np.ndarray) -> RankedLists: ...

    def fold_ranked(self, direction: str, depth: int, rel: Positives) -> RankedLists: ...

    def positive_ranks(self, direction: str, rel: Positives, fold: bool, name: str) -> np.ndarray: ...


# R@K with a deeper K is read off exact ranks (one pass over the scores per relevance), not a K-deep top-K:
# measured faster from about K = 1,000 on (slower at K = 100-400, where the top-K is cheap)
_DEEP_K = 1000


@dataclass(frozen=True)
class _Job:
    metric: str
    relevance: Relevance
    depth: int
    compute: Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
    needs: str
    first_hit: bool = False


def _jobs(
    request: Request, gt: GroundTruth, direction: str, pm: Callable[[str], Relevance], r_cap: int | None
) -> list[_Job]:
    jobs = []
    bench_of = {"coco_5k": "coco", "cxc": "cxc", "eccv": "eccv"}
    for rset, ks in request.recalls.items():
        if rset == "coco_1k":
            continue
        rel = gt.positives[bench_of[rset]][direction]
        for k in ks:
            jobs.append(
                _Job(f"{rset}_r{k}", rel, k, _recall(k), f"R@{k} needs {k} items or a positive among them", True)
            )
    eccv = gt.positives["eccv"][direction]
    max_r = int(eccv.n_positives.max())
    for wanted, name, measure, label in (
        (request.map_at_r, "eccv_map_at_r", measures.map_at_r, "mAP@R"),
        (request.rprecision, "eccv_rprecision", measures.r_precision, "R-Precision"),
    ):
        if wanted:
            needs = f"{label} needs the first R items (R = its number of positives)"
            jobs.append(_Job(name, eccv, max_r, lambda rel, n, a, g, m=measure: m(rel, n, a), needs))
    if request.pmrp:
        prel = pm(direction)
        cap_r = prel.n_positives if r_cap is None else np.minimum(prel.n_positives, r_cap)
        jobs.append(
            _Job(
                "pmrp",
                prel,
                int(cap_r.max(initial=1)),
                lambda rel, n, a, g: measures.r_precision(rel, n, a, r_cap),
                f"PMRP needs the first min(R, {r_cap}) items" if r_cap else "PMRP needs the first R items",
            )
        )
    return jobs


def _recall(k: int) -> Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]:
    return lambda first, n, a, g: measures.recall_at_k(first, a, k, g)


def _restricted(jobs: list[_Job], ranked: RankedLists) -> list[_Job]:
    """Jobs whose relevance keeps only the queries that have a ranked list (partial input)."""
    subsets: dict[int, Relevance] = {}
    for job in jobs:
        if id(job.relevance) not in subsets:
            subsets[id(job.relevance)] = job.relevance.restrict(ranked.query)  # type: ignore[attr-defined]
    return [replace(job, relevance=subsets[id(job.relevance)]) for job in jobs]


def evaluate(
    gt: GroundTruth,
    request: Request,
    sources: Mapping[str, Source],
    pm: Callable[[str], Relevance],
    r_cap: int | None = 50,
    partial: bool = False,
) -> dict[str, dict[str, QueryScores]]:
    """Per-query values ``out[metric][direction]`` for every requested metric and given direction.

    ``partial``: score only the queries that have a ranked list (means over
    those); by default a missing query is an error.
    """
    out: dict[str, dict[str, QueryScores]] = {name: {} for name in request.names()}
    given = [d for d in DIRECTIONS if d in sources]

    def one(direction: str) -> None:
        _evaluate_direction(out, gt, request, direction, sources[direction], pm, r_cap, partial)

    # directions overlap: one's serial steps run beside the other's ranking of a score matrix; given lists are
    # many small numpy steps, which measured faster in one thread than contending for the GIL in two
    if len(given) > 1 and any(isinstance(sources[d], ScoreSource) for d in given):
        with ThreadPoolExecutor(len(given)) as pool:
            for future in [pool.submit(one, d) for d in given]:
                future.result()  # the first direction's error first, as in a serial run
    else:
        for direction in given:
            one(direction)
    return {name: {d: by_dir[d] for d in DIRECTIONS if d in by_dir} for name, by_dir in out.items()}


def _evaluate_direction(
    out: dict[str, dict[str, QueryScores]],
    gt: GroundTruth,
    request: Request,
    direction: str,
    source: Source,
    pm: Callable[[str], Relevance],
    r_cap: int | None,
    partial: bool,
) -> None:
    """Fill ``out[metric][direction]`` for one direction."""
    jobs = _jobs(request, gt, direction, pm, r_cap)
    if isinstance(source, ScoreSource):  # R@K for a deep K: the exact rank of the first positive, no top-K
        deep = [job for job in jobs if job.first_hit and job.depth > _DEEP_K]
        jobs = [job for job in jobs if job not in deep]
        _recalls_from_ranks(out, gt, direction, source, deep)
    if jobs:
        needed = np.zeros(len(gt.query_index(direction)), dtype=bool)
        for job in jobs:
            needed[job.relevance.query] = True
        queries = np.flatnonzero(needed).astype(np.int32)
        ranked = source.ranked(direction, max(j.depth for j in jobs), queries)
        if partial:
            jobs = _restricted(jobs, ranked)
        hits: dict[int, _Hits] = {}
        for job in jobs:
            out[job.metric][direction] = _score(gt, ranked, job, jobs, hits)
    ks_1k = request.recalls.get("coco_1k", ())
    if ks_1k:
        coco = gt.positives["coco"][direction]
        ranked = source.fold_ranked(direction, max(ks_1k), coco)
        jobs_1k = [
            _Job(
                f"coco_1k_r{k}",
                coco,
                k,
                _recall(k),
                f"COCO 1K R@{k} needs {k} items of the query's fold or a positive among them",
                True,
            )
            for k in ks_1k
        ]
        if partial:
            jobs_1k = _restricted(jobs_1k, ranked)
        hits = {}
        for job in jobs_1k:
            out[job.metric][direction] = _score(gt, ranked, job, jobs_1k, hits)
    for rset, stat in request.rank_stats:
        rel = gt.positives["coco" if rset.startswith("coco") else rset][direction]
        name = f"{rset}_{stat}"
        if partial and isinstance(source, ListSource):
            rel = rel.restrict(source.lists.query)
        ranks = source.positive_ranks(direction, rel, rset == "coco_1k", name)
        ids = gt.query_index(direction).ids[rel.query]
        out[name][direction] = QueryScores(name, direction, ids, ranks, STATS[stat])


def _recalls_from_ranks(
    out: dict[str, dict[str, QueryScores]], gt: GroundTruth, direction: str, source: ScoreSource, jobs: list[_Job]
) -> None:
    """R@K = 1[rank of the query's best-ranked positive <= K], from one pass over the scores (any K)."""
    ranks: dict[int, np.ndarray] = {}
    for job in jobs:
        rel = job.relevance
        if id(rel) not in ranks:
            ranks[id(rel)] = source.positive_ranks(direction, rel, False, job.metric)
        ids = gt.query_index(direction).ids[rel.query]
        out[job.metric][direction] = QueryScores(job.metric, direction, ids, (ranks[id(rel)] <= job.depth) * 1.0)


def _score(gt: GroundTruth, ranked: RankedLists, job: _Job, jobs: list[_Job], cache: dict[int, _Hits]) -> QueryScores:
    """Per-query values of one job; the hits are shared by the jobs of the same relevance."""
    direction = ranked.direction
    rel = job.relevance
    if id(rel) not in cache:
        cache[id(rel)] = _hits(gt, ranked, rel, [j for j in jobs if j.relevance is rel])
    found = cache[id(rel)]
    # R@K jobs only need each query's first hit; the others the hit matrix
    hits = found.first if job.first_hit else found.hits[:, : job.depth]
    values, undecided = job.compute(hits, rel.n_positives, found.available, ranked.gallery_size)
    if undecided.any():
        raise EvaluationError(
            f"{direction} {job.metric}: the ranked lists of {int(undecided.sum())} query "
            f"{QUERY_KIND[direction]}(s) are too short ({job.needs}): {preview(found.ids[undecided])}"
        )
    return QueryScores(job.metric, direction, found.ids, values)


@dataclass(frozen=True)
class _Hits:
    """What the jobs of one relevance share: query ids, list lengths, hit matrix and first hits."""

    ids: np.ndarray
    available: np.ndarray
    hits: np.ndarray
    first: np.ndarray


def _hits(gt: GroundTruth, ranked: RankedLists, rel: Relevance, jobs: list[_Job]) -> _Hits:
    """The hits of the relevance's queries, as deep as its deepest job needs; the first job names missing lists."""
    rows = ranked.rows(rel.query, gt, jobs[0].metric)
    available = ranked.lengths[rows]
    hits = ranked.hits(rel, rows, max(j.depth for j in jobs))
    ids = gt.query_index(ranked.direction).ids[rel.query]
    return _Hits(ids, available, hits, measures.first_hit(hits))
