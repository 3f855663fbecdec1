"""Per-query values and the reported numbers made from them."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError

AGGREGATES = ("mean", "median", "std")


@dataclass(frozen=True)
class QueryScores:
    """Per-query values of one metric in one direction; ``value`` is the reported number.

    ``aggregate``: how the reported number is made from the values: their
    ``mean`` (every metric but these two), their ``median`` (MedR) or their
    ``std`` (the spread of a bootstrap's samples).
    """

    metric: str
    direction: str
    query_ids: np.ndarray
    values: np.ndarray
    aggregate: str = "mean"

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


class Results(Mapping[str, Mapping[str, QueryScores]]):
    """What :func:`eccv_metric.evaluate` returns: ``results[metric][direction]`` is a :class:`QueryScores`.

    ``means()`` gives the reported numbers ``{metric: {direction: value}}`` (the
    official nested form), ``flat()`` the same as ``{"metric/direction": value}``,
    ``per_query_json()`` what ``eccv-caption evaluate --per-query`` writes. ``notes``: what a reader of the
    numbers should know (e.g. a direction whose every R@K is at chance level: likely rows in the wrong order).
    ``partial``: True when queries were left out (``partial=True`` and ranked lists that miss some): the means
    are over the queries given only, not comparable with full results.
    """

    def __init__(
        self, per_query: Mapping[str, Mapping[str, QueryScores]], notes: list[str] | None = None, partial: bool = False
    ):
        self._per_query = {name: dict(by_dir) for name, by_dir in per_query.items()}
        self.notes: list[str] = list(notes or [])
        self.partial = partial

    def __getitem__(self, metric: str) -> Mapping[str, QueryScores]:
        return self._per_query[metric]

    def __iter__(self) -> Iterator[str]:
        return iter(self._per_query)

    def __len__(self) -> int:
        return len(self._per_query)

    def __repr__(self) -> str:
        return f"Results({self.means()!r})"

    def means(self) -> dict[str, dict[str, float]]:
        return {name: {d: s.value for d, s in by_dir.items()} for name, by_dir in self._per_query.items()}

    def flat(self) -> dict[str, float]:
        return {f"{name}/{d}": s.value for name, by_dir in self._per_query.items() for d, s in by_dir.items()}

    def per_query_json(self) -> dict:
        return {
            name: {
                d: {"query_ids": s.query_ids.tolist(), "values": s.values.tolist(), "aggregate": s.aggregate}
                for d, s in by_dir.items()
            }
            for name, by_dir in self._per_query.items()
        }


PerQuery = dict[str, dict[str, QueryScores]]  # per-query values ``out[metric][direction]``


def means(per_query: Mapping[str, Mapping[str, QueryScores]]) -> dict[str, dict[str, float]]:
    """Per-query values -> the reported numbers ``{metric: {direction: value}}``."""
    return {name: {d: scores.value for d, scores in by_dir.items()} for name, by_dir in per_query.items()}


def merge_results(parts: list[Results]) -> Results:
    """One Results holding every metric of ``parts`` (in their order), their notes once each, partial if any is."""
    per_query: PerQuery = {}
    notes: list[str] = []
    for part in parts:
        per_query.update({name: dict(part[name]) for name in part})
        notes += [n for n in part.notes if n not in notes]
    return Results(per_query, notes, partial=any(p.partial for p in parts))
