"""The first stage of a rerank: each query's k best gallery items by the first stage, with their similarities.

The candidates come from the engine's own top-k kernel (:func:`eccv_metric.kernels.topk.top_ranked`: exact,
ties in the gallery's given order) over the first stage's :class:`~eccv_metric.inputs.embeddings.Embeddings`,
the input the two-stage ranking then reads for every other item, so the candidates are that ranking's first k
items and their similarities its scores (as the ranking's blocks held them: the same bits). One table per collection
and direction serves every benchmark ranking that collection's whole gallery (the 5K split's: coco_5k, cxc,
eccv, pm*, and coco_1k restricted to its folds); ``coco_1k="within"`` adds a table of each query's top k within
its fold. Only the queries a requested metric reads are reranked (MSCOCO-FG's i2t: its 5,000 annotated images,
not the 31,244 of its gallery).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.view import View
from eccv_metric.engine.plan import Job
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.kernels.topk import top_ranked
from eccv_metric.models.pairs.options import FOLDS


@dataclass
class Candidates:
    """One direction's reranked queries (dense items of the collection), their ``k`` candidates (dense gallery
    items, in the first stage's order) and the first stage's similarity of each; ``within``: the restriction
    whose groups they were chosen in (None: the whole gallery)."""

    direction: str
    view: View
    queries: np.ndarray
    items: np.ndarray
    sims: np.ndarray
    within: str | None = None


def reranked_views(jobs: list[Job], coco_1k: str) -> dict[tuple[str, str | None], tuple[View, np.ndarray]]:
    """``(direction, restriction reranked within or None)`` -> (the view its candidates are chosen in, the dense
    queries a requested metric reads), for the image-caption jobs of one collection."""
    out: dict[tuple[str, str | None], tuple[View, np.ndarray]] = {}
    for job in jobs:
        if job.view is None or job.direction not in ("i2t", "t2i"):
            continue
        view = job.view
        within = view.restriction if view.restricted and coco_1k == "within" and view.restriction == FOLDS else None
        chosen = view if within is not None else view.unrestricted()
        key = (job.direction, within)
        queries = np.unique(np.concatenate([rel.query for rel in job.relevances]).astype(np.int64))
        if key in out:
            queries = np.union1d(out[key][1], queries)
            chosen = out[key][0]
        out[key] = (chosen, queries)
    return out


def gallery_sizes(
    views: dict[tuple[str, str | None], tuple[View, np.ndarray]], emb: Embeddings | None
) -> dict[str, int]:
    """The smallest gallery each reranked ranking chooses its candidates in, in words: what ``rerank_k`` may not
    exceed. ``emb``: the first stage's rows (None: the collections' items, known before any model loads)."""
    out = {}
    for (direction, within), (view, queries) in views.items():
        name = f"{view.collection.name} {direction}"
        if within is None:
            out[name] = len(view.gallery) if emb is None else int(emb.n_rows(view.gallery_kind) or 0)
        else:
            sizes = view.gallery_sizes(queries, 0)
            out[f"{name} within {within}"] = int(sizes.min()) if len(sizes) else 0
    return out


def candidates(emb: Embeddings, view: View, queries: np.ndarray, k: int, within: str | None) -> Candidates:
    """Each of ``queries``' (dense) ``k`` first gallery items by ``emb`` in ``view`` (its whole gallery, or each
    query's group of it when ``within``), and their similarities."""
    scorer = emb.scorer(view)
    qrow = emb.mapping(view.collection, view.query_kind)[1]
    gdense, grow = emb.mapping(view.collection, view.gallery_kind)
    rows = qrow[queries]
    if (rows < 0).any():
        raise EvaluationError(f"{view.direction}: the first stage has no row for queries {preview(queries[rows < 0])}")
    top = np.empty((len(queries), k), np.int64)
    sims = np.empty((len(queries), k), np.float32)
    if within is None:
        found, bad, values = top_ranked(scorer, rows, k)
        if not bad.any():
            top[:], sims[:] = found, values
    else:
        bad = np.zeros(len(queries), bool)
        qgroup = np.zeros(len(view.queries), np.int64) if view.query_group is None else view.query_group
        for group in np.unique(qgroup[queries]).tolist():
            members = np.flatnonzero(qgroup[queries] == group)
            pool = np.sort(grow[view.gallery_group == group])
            found, bad[members], values = top_ranked(scorer, rows[members], k, pool)
            if not bad[members].any():
                top[members], sims[members] = found, values
    if bad.any():
        ids = view.queries.ids[queries[bad]]
        raise EvaluationError(f"{view.direction}: the first stage's scores of queries {preview(ids)} are not finite")
    return Candidates(view.direction, view, queries, gdense[top], sims, within)
