"""From metric names to jobs: which view, which positives, which formula, for every metric and direction.

A :class:`Job` is one metric in one direction, resolved against the
resources: the view to rank (:class:`~eccv_metric.core.view.View`), the
relevance(s) giving each query its positives, the metric kind and its
parameter (K, the PMRP cap). The engine (:mod:`eccv_metric.engine.run`)
never sees a benchmark name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import MetricRequest
from eccv_metric.benchmarks.registry import Task
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.groundtruth.cxc import RATING_ITEMS
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.inputs.base import Input
from eccv_metric.inputs.base import Relevance

CROSS_MODAL = ("i2t", "t2i")


@dataclass(frozen=True, eq=False)
class Job:
    """One metric in one direction (see the module docstring); correlation jobs carry ratings, not a view."""

    metric: str
    direction: str
    kind: str
    view: View | None
    relevances: tuple[Relevance, ...] = ()
    k: int | None = None
    cap: int | None = None
    ratings: Ratings | None = None
    rating_kinds: tuple[str, str] = ("caption", "caption")
    collection: Collection | None = None
    pairs: tuple[np.ndarray, np.ndarray] | None = None  # the rated pairs as dense items of the collection

    @property
    def relevance(self) -> Relevance:
        return self.relevances[0]

    @property
    def restriction_label(self) -> str:
        restriction = None if self.view is None else self.view.restriction
        return REGISTRY.restriction_label(restriction)


def plan(requests: list[MetricRequest], resources: Resources, directions: Iterable[str] | None = None) -> list[Job]:
    """Jobs of every request; ``directions`` limits the image-caption directions (i2t / t2i) scored."""
    keep = set(CROSS_MODAL if directions is None else directions)
    jobs: list[Job] = []
    for request in requests:
        bench = request.benchmark
        for task in tasks_of(request, keep):
            if request.kind in ("spearman", "spearman_std"):
                kind = str(task.relation)
                collection = resources.collection(bench.collection)
                first, second = (collection.index(m) for m in RATING_ITEMS[kind])
                rated = resources.ratings(kind).within(first, second)
                pairs = (first.positions(rated.id_1).astype(np.int64), second.positions(rated.id_2).astype(np.int64))
                jobs.append(
                    Job(
                        request.name,
                        task.direction,
                        request.kind,
                        None,
                        ratings=rated,
                        rating_kinds=RATING_ITEMS[kind],
                        collection=collection,
                        pairs=pairs,
                    )
                )
                continue
            view = resources.view(bench, task)
            relations = task.relation if isinstance(task.relation, tuple) else (task.relation,)
            relevances = tuple(resources.relation(bench, r, task.direction) for r in relations)
            cap = resources.pm.r_cap if request.kind == "capped_rprecision" else None
            jobs.append(Job(request.name, task.direction, request.kind, view, relevances, request.k, cap))  # type: ignore[arg-type]
    return jobs


def tasks_of(request: MetricRequest, keep: set[str]) -> list[Task]:
    """The tasks of a request in the image-caption directions kept (intramodal tasks always); none: an error."""
    bench = request.benchmark
    tasks = [t for t in bench.tasks if t.direction not in CROSS_MODAL or t.direction in keep]
    if not tasks:
        raise EvaluationError(
            f"{request.name}: {bench.name} is scored in {', '.join(bench.directions)}, which the input does "
            f"not give (directions given: {', '.join(sorted(keep)) or 'none'})"
        )
    return tasks


def refuse_unservable(requests: list[MetricRequest], source: Input, directions: Iterable[str] | None = None) -> None:
    """An error naming the first task the input cannot serve (e.g. cxc_t2t from image x caption scores only).

    Told from the input and the registry alone, before any resource is loaded (ground truth, CxC ratings,
    FG files, maybe downloaded): offline, the input's own shortcoming is named first.
    """
    keep = set(CROSS_MODAL if directions is None else directions)
    for request in requests:
        for task in tasks_of(request, keep):
            if request.kind in ("spearman", "spearman_std"):
                reason = source.cannot_pairs(RATING_ITEMS[str(task.relation)])
            else:
                reason = source.cannot_direction(task.direction)
            if reason is not None:
                raise EvaluationError(f"{request.name} ({task.direction}): {reason}")


def direction_order(direction: str) -> int:
    return list(DIRECTION_KINDS).index(direction)
