"""A run's view of one benchmark direction, loaded once: every query's top items, their marks, its values.

:func:`load_table` asks the run's input for the top ``depth`` items of every query of the benchmark direction
(the engine's own ``top``, :mod:`eccv_metric.inputs`: the ranking ``evaluate`` scores, its tie rule included),
marks each listed item with the positives of every benchmark of the family ranking the same view
(:mod:`eccv_metric.explore.family`: the relations the engine reads), looks up each pair's CxC rating, and holds
the per-query values of the family's metrics, from ``evaluate`` on the same input (what ``evaluate --per-query``
writes); a run that brings its own (a published run's) has them checked equal, query for query, to the engine's
on its input, and is refused where one differs (its evidence does not vouch for them). Everything is an array
over the queries, so a query's view (:func:`eccv_metric.explore.view.query_view`) and a query set
(:mod:`eccv_metric.explore.sets`) are lookups.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import resolve_name
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.defaults import KS
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import View
from eccv_metric.evidence.check import count_differing
from eccv_metric.explore.family import Member
from eccv_metric.explore.family import browsable
from eccv_metric.explore.family import family
from eccv_metric.explore.family import pair_ratings
from eccv_metric.explore.runs import Run
from eccv_metric.inputs.given import Rankings
from eccv_metric.measures.results import QueryScores

DEPTH = 10
MAX_DEPTH = 100
IMAGE_CAPTION = ("i2t", "t2i")


@dataclass
class QueryTable:
    """One run on one benchmark direction (see the module docstring); row ``r`` is query ``query_ids[r]``.

    ``items[r, j]``: the id of the item ranked ``j + 1`` (-1 past the list's end; a distractor the run ranked
    keeps the id the run gave it, and ``inside[r, j]`` is False); ``scores``: their scores (None: ranked lists
    given without); ``tied``: the item ties the one before it (the tie rule ordered them); ``lengths``: how many
    items each list holds; ``marks[name][r, j]``: the item is a positive of the query under that benchmark;
    ``is_query[name][r]``: the query is one of that benchmark's (it has positives); ``n_positives[name]``: its R;
    ``ratings``: the pair's CxC rating (NaN: not rated); ``values[metric]``: per-query values on the rows (NaN:
    no value for that query); ``per_query[metric]``: the metric's values on all its queries (the run's number is
    their aggregate).
    """

    run: str
    benchmark: str
    direction: str
    view: View
    queries: np.ndarray  # dense, ascending
    query_ids: np.ndarray
    items: np.ndarray
    inside: np.ndarray
    scores: np.ndarray | None
    tied: np.ndarray | None
    lengths: np.ndarray
    members: list[Member]
    marks: dict[str, np.ndarray]
    is_query: dict[str, np.ndarray]
    n_positives: dict[str, np.ndarray]
    ratings: np.ndarray | None
    rating_kind: str | None
    values: dict[str, np.ndarray]
    per_query: dict[str, QueryScores]  # every query of each metric (its number: their mean, MedR their median)
    notes: list[str] = field(default_factory=list)

    @property
    def depth(self) -> int:
        return self.items.shape[1]

    def row(self, query_id: int) -> int:
        """The row of a query id; an error names the benchmark direction when it is not one of its queries."""
        index = self.view.queries
        dense = int(index.positions(np.asarray([query_id]))[0]) if _is_int(query_id) else -1
        pos = int(np.searchsorted(self.queries, dense)) if dense >= 0 else len(self.queries)
        if pos < len(self.queries) and self.queries[pos] == dense:
            return pos
        kind = self.view.query_kind
        article = "an" if kind == "image" else "a"
        if dense < 0:
            raise EvaluationError(
                f"query {query_id!r:.30}: not {article} {kind} id of {self.benchmark} (its {self.direction} queries "
                f"are {len(self.queries):,} {kind} ids, e.g. {int(self.query_ids[0])})"
            )
        raise EvaluationError(
            f"query {query_id}: {article} {kind} of the collection but not a {self.direction} query of "
            f"{self.benchmark} in {self.run} (no positives under it, or no ranked list in the run)"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def load_table(run: Run, benchmark: str, direction: str, resources: Resources, depth: int = DEPTH) -> QueryTable:
    """:class:`QueryTable` of ``run`` on ``benchmark`` / ``direction`` (see the module docstring)."""
    if not _is_int(depth) or not 1 <= depth <= MAX_DEPTH:
        raise EvaluationError(f"k: the items shown per query must be a whole number in 1..{MAX_DEPTH}, not {depth!r}")
    bench = browsable(benchmark, direction)
    source = run.input_for(bench)
    why = source.cannot_direction(direction)  # type: ignore[attr-defined]
    if why is not None:
        raise EvaluationError(f"{run.name}: {why}")
    problem = run.order_problem(bench, resources)
    if problem is not None:
        raise EvaluationError(f"{run.name}: {problem}: nothing is shown from evidence in doubt")
    view = resources.view(bench, bench.task(direction))
    members = family(bench, direction, resources)
    own = members[0].relation
    queries = np.asarray(own.query, dtype=np.int64)  # type: ignore[attr-defined]
    given = source.given_queries(view)  # type: ignore[attr-defined]
    if given is not None:
        queries = queries[np.isin(queries, given)]
    if not len(queries):
        raise EvaluationError(f"{run.name}: no {direction} query of {bench.name} has a ranked list in it")
    per_query, notes = per_query_values(run, source, members, direction, resources)
    lists = source.top(view, depth, queries)  # type: ignore[attr-defined]
    rows = lists.rows(queries, view.queries, bench.name)
    width = min(depth, lists.items.shape[1])
    dense = np.full((len(queries), depth), -1, dtype=np.int64)
    dense[:, :width] = lists.items[rows, :width]
    lengths = np.asarray(lists.lengths)[rows].astype(np.int64)
    listed = np.arange(depth)[None, :] < lengths[:, None]
    dense[~listed] = -1
    items = np.where(dense >= 0, view.gallery.ids[np.maximum(dense, 0)], -1)
    _given_ids(source, view, queries, depth, dense < 0, listed, items)
    scores = tied = None
    if lists.scores is not None:
        scores = np.full((len(queries), depth), np.nan)
        scores[:, :width] = lists.scores[rows, :width]
        scores[~listed] = np.nan
    if lists.ties is not None:
        tied = np.zeros((len(queries), depth), dtype=bool)
        tied[:, :width] = lists.ties[rows, :width]
    marks, is_query, n_positives = {}, {}, {}
    for member in members:
        if not member.available:
            notes.append(f"{member.title}: not marked ({member.why})")
            continue
        mark = np.zeros((len(queries), depth), dtype=bool)
        count = np.zeros(len(queries), dtype=np.int64)
        sub = member.relation.restrict(queries)  # type: ignore[union-attr]
        at = np.searchsorted(queries, sub.query)
        if len(at):
            mark[at] = sub.hits(dense[at]) & listed[at]
            count[at] = sub.n_positives
        is_query[member.name] = np.isin(queries, sub.query)
        marks[member.name], n_positives[member.name] = mark, count
    rater, why = pair_ratings(bench, view, resources)
    ratings = None if rater is None else rater.lookup(queries[:, None], dense)
    if why is not None:
        notes.append(why)
    return QueryTable(
        run.name, bench.name, direction, view, queries, view.queries.ids[queries], items, dense >= 0, scores, tied,
        lengths, members, marks, is_query, n_positives, ratings, None if rater is None else rater.kind,
        on_rows(per_query, view, queries), per_query, notes,
    )  # fmt: skip


def _given_ids(
    source: object, view: View, queries: np.ndarray, depth: int, outside: np.ndarray, listed: np.ndarray,
    items: np.ndarray,
) -> None:  # fmt: skip
    """The ids the run gave the items outside the benchmark (distractors a score matrix or embeddings rank as
    negatives), written into ``items``: the rows of those queries ranked again (the engine's ``top_positions``)."""
    outside = outside & listed
    rows = np.flatnonzero(outside.any(axis=1))
    if not len(rows) or view.restricted or not hasattr(source, "top_positions"):
        return
    positions = source.top_positions(view, depth, queries[rows])  # type: ignore[attr-defined]
    given = np.asarray(source.given_ids(view.collection, view.gallery_kind), np.int64)  # type: ignore[attr-defined]
    width = positions.shape[1]
    found = np.full((len(rows), items.shape[1]), -1, dtype=np.int64)
    found[:, :width] = given[positions]
    items[rows] = np.where(outside[rows], found, items[rows])


def metrics_of(members: list[Member]) -> list[str]:
    """The per-query metrics of the family: each available member's defaults (R@K at the default Ks) and R@1."""
    out: list[str] = []
    for member in (m for m in members if m.available):
        for name in [*REGISTRY.get(member.name).default_metric_names(), member.r1]:
            out += [r.name for r in resolve_name(name, KS)]
    return list(dict.fromkeys(out))


def per_query_values(
    run: Run, source: object, members: list[Member], direction: str, resources: Resources
) -> tuple[dict[str, QueryScores], list[str]]:
    """The family's per-query values in ``direction`` (:func:`metrics_of`): ``evaluate``'s on the run's input, all
    at once, else metric by metric (a metric ranked lists cannot decide is left out with its reason), and the
    notes; a run's own values (:attr:`Run.per_query`) checked equal to them (:func:`check_own`)."""
    wanted = metrics_of(members)
    found, notes = {}, []
    try:
        got = _evaluate(source, wanted, direction, resources)
        found = {m: got[m][direction] for m in got if direction in got[m]}
    except EvaluationError:
        for metric in wanted:
            try:
                got = _evaluate(source, [metric], direction, resources)
            except EvaluationError as exc:
                notes.append(f"{metric}: no per-query values ({exc})")
                continue
            found.update({m: got[m][direction] for m in got if direction in got[m]})
    if run.per_query is not None:
        notes += check_own(run, found, direction)
    return found, notes


def check_own(run: Run, found: dict[str, QueryScores], direction: str) -> list[str]:
    """The run's own per-query values in ``direction`` against the engine's on its input: every one equal (the
    same queries, the same values, exactly), else one line naming the metric, how many differ and a query; the
    note saying which values were checked."""
    own = [m for m in found if direction in (run.per_query.get(m) or {})]  # type: ignore[union-attr]
    for metric in own:
        entry = run.per_query[metric][direction]  # type: ignore[index]
        ids, values = np.asarray(entry["query_ids"], np.int64), np.asarray(entry["values"], np.float64)
        got = found[metric]
        differing, published = count_differing(ids, values, got.query_ids, got.values)
        if differing:
            raise EvaluationError(
                f"{run.name}: {differing:,} of its {published:,} published per-query values of {metric} {direction} "
                f"are not what its evidence gives{_first_differing(ids, values, got)}: its evidence does not vouch "
                "for them (eccv-caption verify recomputes every number)"
            )
    if not own:
        return [f"{run.name}: none of its published per-query values is of {direction}: the values are its evidence's"]
    rest = [m for m in found if m not in own]
    note = f"{run.name}: the per-query values of {', '.join(own)} are as published, equal to its evidence's"
    return [note + (f"; {', '.join(rest)}: from its evidence (not published)" if rest else "")]


def _first_differing(ids: np.ndarray, values: np.ndarray, got: QueryScores) -> str:
    by_id = dict(zip(np.asarray(got.query_ids).tolist(), np.asarray(got.values).tolist(), strict=True))
    for query, value in zip(ids.tolist(), values.tolist(), strict=True):
        if by_id.get(query) != value:
            return f" (query {query}: published {value:g}, evidence {by_id.get(query, 'none')})"
    missing = sorted(set(by_id) - set(ids.tolist()))
    return f" (query {missing[0]}: not published)" if missing else ""


def on_rows(scores: dict[str, QueryScores], view: View, queries: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric's values on the rows of ``queries`` (dense, ascending; NaN where a query has none)."""
    out = {}
    for metric, entry in scores.items():
        dense = view.queries.positions(np.asarray(entry.query_ids, np.int64)).astype(np.int64)
        pos = np.minimum(np.searchsorted(queries, dense), len(queries) - 1)
        ok = (dense >= 0) & (queries[pos] == dense)
        column = np.full(len(queries), np.nan)
        column[pos[ok]] = np.asarray(entry.values, np.float64)[ok]
        out[metric] = column
    return out


def _evaluate(source: object, names: list[str], direction: str, resources: Resources) -> Mapping:
    with warnings.catch_warnings():  # chance level is a number's property, not the view's
        warnings.simplefilter("ignore", ChanceLevelWarning)
        return evaluate(
            source,  # type: ignore[arg-type]
            names,
            KS,
            resources=resources,
            directions=direction if direction in IMAGE_CAPTION else None,
            partial=isinstance(source, Rankings),
        )
