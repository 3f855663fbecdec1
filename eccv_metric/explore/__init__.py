"""Look at a model's retrievals: a query's top items marked by every benchmark of the family, and query sets.

A room of the library of its own, over the engine's inputs (:mod:`eccv_metric.inputs`: their ``top``) and the
ground truth (:class:`~eccv_metric.benchmarks.resources.Resources`); no gradio, no HTML: the Space's Browse tab
(:mod:`eccv_metric.hub.browse`) and ``eccv-caption explore`` (:mod:`eccv_metric.cli.explore`) translate it.

- :mod:`~eccv_metric.explore.runs`: a run (its files, or an input made in Python);
- :mod:`~eccv_metric.explore.family`: the benchmarks that mark a view, the pairs' CxC ratings;
- :mod:`~eccv_metric.explore.table`: one run on one benchmark direction, loaded once;
- :mod:`~eccv_metric.explore.view`: a query's view (:func:`query_view`);
- :mod:`~eccv_metric.explore.sets`: query sets, filters over the per-query values;
- :mod:`~eccv_metric.explore.media`: the items' pixels and texts, thumbnails.
"""

from eccv_metric.explore.runs import Run
from eccv_metric.explore.runs import read_run
from eccv_metric.explore.runs import run_of
from eccv_metric.explore.sets import QuerySet
from eccv_metric.explore.sets import query_sets
from eccv_metric.explore.view import Item
from eccv_metric.explore.view import QueryView
from eccv_metric.explore.view import query_view
from eccv_metric.explore.view import table_of

__all__ = ["Item", "QuerySet", "QueryView", "Run", "query_sets", "query_view", "read_run", "run_of", "table_of"]
