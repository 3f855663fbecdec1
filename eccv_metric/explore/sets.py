"""Query sets worth looking at, each a filter over a table's per-query values (:mod:`eccv_metric.explore.table`).

- :func:`false_negatives`: COCO counts the top item wrong (R@1 = 0 under the original pairs) while ECCV Caption,
  CxC or PM counts it right (R@1 = 1): the false negatives of COCO's annotation that ECCV Caption (Chun et al.
  2022, section 1 and figure 1), CxC (Parekh et al. 2021, section 1) and PCME's Plausible Match argue from;
- :func:`better`: queries where run A does better than run B on a metric (R@1: A right and B wrong), and with
  the runs swapped the reverse;
- :func:`worst`: the ``n`` worst queries by a metric (lowest first; a rank metric's highest first);
- :func:`sample`: ``n`` queries drawn at random with a seed (numpy's ``default_rng(seed)``, without replacement).

Each is a :class:`QuerySet`: its queries (rows of the table and ids), how many it holds, and its rule in words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.errors import EvaluationError
from eccv_metric.explore.table import QueryTable

COCO = ("coco_5k", "coco_t2t")  # the original COCO pairs, on the views that have them
WORST = 100
SAMPLE = 20


@dataclass(frozen=True)
class QuerySet:
    """Queries of a table: ``rows`` (of the table the set was made on) and ``query_ids``, in the set's order;
    ``name``: an id (``coco_wrong_eccv_right``, ``a_better``, ``worst``, ``sample``); ``title`` and ``rule``: what
    it holds, in words."""

    name: str
    title: str
    rule: str
    rows: np.ndarray
    query_ids: np.ndarray

    @property
    def count(self) -> int:
        return len(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def _set(table: QueryTable, name: str, title: str, rule: str, rows: np.ndarray) -> QuerySet:
    rows = np.asarray(rows, dtype=np.int64)
    return QuerySet(name, title, rule, rows, table.query_ids[rows])


def _values(table: QueryTable, metric: str) -> np.ndarray:
    if metric not in table.values:
        known = ", ".join(table.values) or "none"
        raise EvaluationError(f"{table.run}: no per-query values of {metric} on {table.benchmark} {table.direction} "
                              f"(it has {known})")  # fmt: skip
    return table.values[metric]


def _coco(table: QueryTable) -> str | None:
    """The member holding the original COCO pairs on this view, when it is marked (None: none)."""
    return next((m for m in COCO if any(x.name == m and x.available for x in table.members)), None)


def false_negatives(table: QueryTable, under: str) -> QuerySet:
    """Queries whose top item COCO counts wrong and benchmark ``under`` counts right (see the module docstring)."""
    coco = _coco(table)
    member = next((m for m in table.members if m.name == under and m.available), None)
    if coco is None or member is None or under == coco:
        marked = ", ".join(m.name for m in table.members if m.available and m.name != coco)
        raise EvaluationError(
            f"{table.benchmark} {table.direction}: COCO's false negatives need the COCO pairs and {under} on the same "
            f"view; this one has {marked or 'no other benchmark'}{'' if coco else ' and no COCO pairs'}"
        )
    r1_coco = _values(table, REGISTRY.get(coco).metric_name("recall", 1))
    r1 = _values(table, member.r1)
    rows = np.flatnonzero((r1_coco == 0) & (r1 == 1))
    title = f"COCO counts the top item wrong, {member.title} counts it right"
    return _set(table, f"coco_wrong_{under}_right", title, f"{coco}_r1 = 0 and {member.r1} = 1", rows)


def false_negative_sets(table: QueryTable) -> list[QuerySet]:
    """:func:`false_negatives` under every other available member of the view (none without COCO pairs)."""
    coco = _coco(table)
    if coco is None:
        return []
    return [false_negatives(table, m.name) for m in table.members if m.available and m.name != coco]


def _aligned(a: QueryTable, b: QueryTable) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``a`` and ``b`` holding the same queries (a's order); the tables must be of one benchmark view."""
    if (a.benchmark, a.direction) != (b.benchmark, b.direction) or a.view.collection is not b.view.collection:
        raise EvaluationError(
            f"{b.run} is shown on {b.benchmark} {b.direction} and {a.run} on {a.benchmark} {a.direction}: compare "
            "two runs on one benchmark direction and one ground truth"
        )
    _, rows_a, rows_b = np.intersect1d(a.queries, b.queries, assume_unique=True, return_indices=True)
    return rows_a, rows_b


def better(a: QueryTable, b: QueryTable, metric: str | None = None) -> QuerySet:
    """Queries where run ``a`` does better than run ``b`` on ``metric`` (default: the benchmark's R@1, so A counts
    the top item right and B wrong); queries both runs have, in the benchmark's order."""
    metric = metric or REGISTRY.get(a.benchmark).metric_name("recall", 1)
    rows_a, rows_b = _aligned(a, b)
    va, vb = _values(a, metric)[rows_a], _values(b, metric)[rows_b]
    lower = metric_info(metric)[1].scale == "rank"  # a rank: lower is better
    wins = (va < vb) if lower else (va > vb)
    rows = rows_a[wins & ~np.isnan(va) & ~np.isnan(vb)]
    if metric.endswith("_r1"):
        title, rule = f"{a.run} right, {b.run} wrong", f"{metric}: {a.run} 1, {b.run} 0"
    else:
        title, rule = f"{a.run} better than {b.run}", f"{metric}: {a.run} {'<' if lower else '>'} {b.run}"
    return _set(a, "a_better", title, rule, rows)


def default_metric(table: QueryTable) -> str:
    """The benchmark's first default metric with per-query values (``coco_5k_recalls``: R@1)."""
    bench = REGISTRY.get(table.benchmark)
    names = bench.default_metric_names()
    first = bench.metric_name("recall", 1) if names[0].endswith("_recalls") else names[0]
    return first if first in table.values else next(iter(table.values), first)


def worst(table: QueryTable, metric: str | None = None, n: int = WORST) -> QuerySet:
    """The ``n`` worst queries by ``metric`` (default: the benchmark's first default metric), worst first (ties in
    the benchmark's order); queries without a value are left out."""
    metric = metric or default_metric(table)
    n = _count(n, "n")
    values = _values(table, metric)
    lower = metric_info(metric)[1].scale == "rank"
    rows = np.flatnonzero(~np.isnan(values))
    order = np.argsort(-values[rows] if lower else values[rows], kind="stable")
    title = f"the {min(n, len(rows)):,} worst queries by {metric}"
    rule = f"{metric} {'highest' if lower else 'lowest'} first, {n:,} at most"
    return _set(table, "worst", title, rule, rows[order][:n])


def sample(table: QueryTable, n: int = SAMPLE, seed: int = 0) -> QuerySet:
    """``n`` queries drawn at random (``numpy.random.default_rng(seed)``, without replacement), in the
    benchmark's order."""
    n = _count(n, "n")
    seed = _count(seed, "seed", 0)
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(table.queries), min(n, len(table.queries)), replace=False))
    title = f"{len(rows):,} queries at random (seed {seed})"
    return _set(table, "sample", title, f"numpy default_rng({seed}).choice, {n:,} at most", rows)


def every(table: QueryTable) -> QuerySet:
    """Every query of the table, in the benchmark's order."""
    rows = np.arange(len(table.queries))
    return _set(table, "all", f"all {len(rows):,} queries", "every query", rows)


def query_sets(table: QueryTable, other: QueryTable | None = None, n: int = WORST, seed: int = 0) -> list[QuerySet]:
    """The sets worth looking at: COCO's false negatives under each benchmark of the view, A better than B and B
    better than A (with ``other``), the worst ``n`` by the benchmark's default metric, ``n`` at random."""
    out = false_negative_sets(table)
    if other is not None:
        out += [better(table, other), _swapped(table, other)]
    return out + [worst(table, None, n), sample(table, n, seed)]


def _swapped(a: QueryTable, b: QueryTable) -> QuerySet:
    """B better than A, as rows of ``a`` (the queries B wins, shown on A's table)."""
    found = better(b, a)
    rows = np.searchsorted(a.queries, b.queries[found.rows])
    return QuerySet("b_better", found.title, found.rule, rows, found.query_ids)


def _count(value: object, what: str, low: int = 1) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
        raise EvaluationError(f"{what} must be a whole number >= {low}, not {value!r:.30}")
    return int(value)
