"""A query's view: what a run retrieved for one query, each item marked by every benchmark of the family.

::

    from eccv_metric import Embeddings
    from eccv_metric.explore import query_view

    view = query_view(Embeddings(images, captions), "eccv", "i2t", 391895)
    for item in view.items:
        print(item.rank, item.id, item.score, item.marks)  # {"eccv": True, "coco_5k": False, "cxc": False, ...}
    view.values  # {"eccv_map_at_r": 0.53, "coco_5k_r1": 0.0, ...}: the query's per-query values

The first call on a run loads its table for the benchmark direction (every query's top items from the engine,
their marks, the per-query values: :mod:`eccv_metric.explore.table`), kept on the run; every later query of it
is a lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.explore.runs import run_of
from eccv_metric.explore.table import DEPTH
from eccv_metric.explore.table import QueryTable
from eccv_metric.explore.table import load_table


@dataclass(frozen=True)
class Item:
    """One ranked item: its 1-based rank, id, whether it is an item of the benchmark (``inside``; False: a
    distractor the run ranked, never a positive), score (None: the run holds none), whether the tie rule placed it
    (it ties the item before it), its marks (benchmark name -> positive of the query) and the pair's CxC rating
    (None: not rated)."""

    rank: int
    id: int
    inside: bool
    score: float | None
    tied: bool
    marks: dict[str, bool]
    rating: float | None


@dataclass(frozen=True)
class QueryView:
    """What :func:`query_view` returns. ``marked``: the benchmarks marking the items (name -> title);
    ``queries_of``: the benchmarks the query is a query of (has positives under); ``n_positives``: its R under
    each; ``values``: its per-query values (metric -> value); ``list_length``: how many items its list holds (the
    gallery's size for scores); ``rating_kind``: the CxC ratings beside the items (``sits``...), None: none."""

    run: str
    benchmark: str
    direction: str
    query_id: int
    query_kind: str
    item_kind: str
    items: tuple[Item, ...]
    marked: dict[str, str]
    queries_of: tuple[str, ...]
    n_positives: dict[str, int]
    values: dict[str, float]
    list_length: int
    rating_kind: str | None
    depth: int  # the items asked for (k)


def table_of(
    run: object, benchmark: str, direction: str, resources: Resources | None = None, depth: int = DEPTH
) -> QueryTable:
    """The run's :class:`~eccv_metric.explore.table.QueryTable` of a benchmark direction, loaded once per run."""
    loaded = run_of(run)
    resources = resources if resources is not None else ResourceOptions().resources()
    key = (benchmark, direction, depth, id(resources))
    if key not in loaded.tables:
        loaded.tables[key] = load_table(loaded, benchmark, direction, resources, depth)
    return loaded.tables[key]  # type: ignore[return-value]


def query_view(
    run: object,
    benchmark: str,
    direction: str,
    query_id: int,
    k: int = DEPTH,
    resources: Resources | None = None,
) -> QueryView:
    """Query ``query_id``'s top ``k`` items in ``run`` on ``benchmark`` / ``direction``, each marked by every
    benchmark of the family ranking the same view, with the query's per-query values (see the module docstring).

    ``run``: a :class:`~eccv_metric.explore.runs.Run` (:func:`~eccv_metric.explore.runs.read_run`) or an input
    (:class:`~eccv_metric.inputs.given.Rankings`, :class:`~eccv_metric.inputs.matrix.ScoreMatrix`,
    :class:`~eccv_metric.inputs.embeddings.Embeddings`, :class:`~eccv_metric.inputs.twostage.TwoStage`; its table
    is kept as long as the input lives); ``resources``: the ground truth
    (default: the ``eccv_caption`` wheel's, as ``evaluate``'s).
    """
    table = table_of(run, benchmark, direction, resources, k)
    return view_of(table, table.row(query_id))


def view_of(table: QueryTable, row: int) -> QueryView:
    """The :class:`QueryView` of a table's row."""
    marked = {m.name: m.title for m in table.members if m.name in table.marks}
    items = []
    for j in range(min(table.depth, int(table.lengths[row]))):
        score = None if table.scores is None else float(table.scores[row, j])
        rating = None if table.ratings is None or np.isnan(table.ratings[row, j]) else float(table.ratings[row, j])
        items.append(
            Item(
                j + 1,
                int(table.items[row, j]),
                bool(table.inside[row, j]),
                score,
                bool(table.tied[row, j]) if table.tied is not None else False,
                {name: bool(table.marks[name][row, j]) for name in marked},
                rating,
            )
        )
    values = {m: float(v[row]) for m, v in table.values.items() if not np.isnan(v[row])}
    return QueryView(
        table.run,
        table.benchmark,
        table.direction,
        int(table.query_ids[row]),
        table.view.query_kind,
        table.view.gallery_kind,
        tuple(items),
        marked,
        tuple(name for name in marked if table.is_query[name][row]),
        {name: int(table.n_positives[name][row]) for name in marked},
        values,
        int(table.lengths[row]),
        table.rating_kind,
        table.depth,
    )
