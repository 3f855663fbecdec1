"""A pair scorer's scores as the engine's inputs: the same :func:`~eccv_metric.api.many.evaluate_benchmarks` call,
and so the same table, as a dual encoder's embeddings.

- a rerank: a :class:`eccv_metric.TwoStage` per collection (the first stage's embeddings, each direction's
  :class:`eccv_metric.Reranked`: the candidates and their final scores), and one per ``coco_1k="within"`` table;
- an exhaustive run: a :class:`~eccv_metric.inputs.matrix.ScoreMatrix` of every image x caption score;
- CxC SITS under a rerank: :func:`rated_scores`, the final scores of the rated pairs themselves (each scored by the
  pair scorer whatever the first stage ranks), as :class:`~eccv_metric.inputs.pairs.RatedPairs`.

The final score: the pair head's raw score (``itm``), plus the first stage's similarity (``itm+itc``: LAVIS's
``score + topk_sim``, float32).
"""

from __future__ import annotations

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.pairs import RatedPairs
from eccv_metric.inputs.reranked import Reranked
from eccv_metric.inputs.twostage import TwoStage
from eccv_metric.models.pairs.candidates import Candidates
from eccv_metric.models.pairs.pairset import PairSet


def rows_of(collection: Collection, kind: str, ids: np.ndarray) -> np.ndarray:
    """The row (in an item set holding ``ids``) of each dense item of ``collection``'s ``kind`` (-1: none)."""
    index = collection.index(kind)
    dense = index.positions(np.asarray(ids))
    out = np.full(len(index), -1, np.int64)
    out[dense[dense >= 0]] = np.flatnonzero(dense >= 0)
    return out


def pair_rows(cands: Candidates, image_ids: np.ndarray, caption_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(image rows, caption rows), in item sets of these ids, of each (query, candidate) pair (the candidates'
    shape)."""
    view = cands.view
    queries = np.broadcast_to(cands.queries[:, None], cands.items.shape)
    image = rows_of(view.collection, "image", image_ids)
    caption = rows_of(view.collection, "caption", caption_ids)
    if view.query_kind == "image":
        return image[queries], caption[cands.items]
    return image[cands.items], caption[queries]


def final(raw: np.ndarray, sims: np.ndarray | None, rule: str) -> np.ndarray:
    """The final score of each pair under ``rule`` (float32)."""
    if rule == "itm" or sims is None:
        return raw.astype(np.float32, copy=True)
    with np.errstate(over="ignore"):
        out = raw.astype(np.float32) + sims.astype(np.float32)
    if not np.isfinite(out).all():
        raise EvaluationError("score_rule= itm+itc: a pair score plus its first-stage similarity overflows float32")
    return out


def reranked(cands: Candidates, pairs: PairSet, raw: np.ndarray, rule: str) -> Reranked:
    """One direction's :class:`eccv_metric.Reranked`: the candidates (ids, first-stage order) and final scores."""
    images, captions = pair_rows(cands, pairs.image_ids, pairs.caption_ids)
    scores = raw[pairs.positions(images.ravel(), captions.ravel())].reshape(cands.items.shape)
    view = cands.view
    return Reranked(view.queries.ids[cands.queries], view.gallery.ids[cands.items], final(scores, cands.sims, rule))


def two_stage(first: Embeddings, tables: dict[str, Candidates], pairs: PairSet, raw: np.ndarray, rule: str) -> TwoStage:
    """The :class:`eccv_metric.TwoStage` of a collection's candidate tables (``{direction: Candidates}``)."""
    return TwoStage(first, **{d: reranked(c, pairs, raw, rule) for d, c in tables.items()})


def score_matrix(
    pairs: PairSet, raw: np.ndarray, rule: str, first: Embeddings | None, collection: Collection
) -> ScoreMatrix:
    """Every image x caption score (an exhaustive run), plus the first stage's similarity under ``itm+itc`` (its
    rows are the pair set's: the same item sets)."""
    matrix = raw.reshape(pairs.n_images, pairs.n_captions)
    if rule == "itm+itc" and first is not None:
        scorer = first.scorer(View("i2t", collection))
        step = max(1, scorer.rows_per_block(scorer.n_gallery, False))
        sims = np.empty_like(matrix)
        for start in range(0, pairs.n_images, step):
            sims[start : start + step] = scorer.block(np.arange(start, min(start + step, pairs.n_images)), None)
        matrix = final(matrix, sims, rule)
    return ScoreMatrix(matrix, pairs.image_ids, pairs.caption_ids)


def rated_scores(collection: Collection, captions: np.ndarray, images: np.ndarray, scores: np.ndarray) -> RatedPairs:
    """CxC SITS's rated (caption, image) pairs (dense items of ``collection``) with their final scores, as the
    engine's :class:`~eccv_metric.inputs.pairs.RatedPairs`: every rated pair scored by the pair scorer itself,
    whatever the first stage ranks."""
    caption_ids = collection.index("caption").ids[np.asarray(captions, np.int64)]
    image_ids = collection.index("image").ids[np.asarray(images, np.int64)]
    return RatedPairs(caption_ids, image_ids, np.asarray(scores), what="cxc_sits: rated pairs")
