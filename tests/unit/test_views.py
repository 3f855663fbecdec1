"""Views no registered benchmark uses yet (a restricted intramodal view: folds and the query left out) against brute
force, through every input: the engine's generality is tested, not only the combinations the registry holds."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric.core.view import View
from eccv_metric.measures.formulas import first_hit
from tests.unit import brute
from tests.unit.world import int_embeddings


def _views(world):
    gt = world.gt
    for direction, kind in (("t2t", "caption"), ("i2i", "image")):
        fold = gt.fold(kind).astype(np.int64)
        yield View(direction, gt, "coco_1k_folds", fold, fold, exclude_self=True), kind


@pytest.mark.parametrize("source_kind", ["scores", "embeddings", "lists"])
def test_restricted_intramodal_views_equal_a_full_sort(world, source_kind):
    rng = np.random.default_rng(5)
    vec = int_embeddings(rng, world.image_ids) | {
        ("c", c): v for c, v in int_embeddings(rng, world.caption_ids).items()
    }

    def vector(kind, ident):
        return vec[ident] if kind == "image" else vec[("c", ident)]

    images = np.stack([vector("image", i) for i in world.image_ids])
    captions = np.stack([vector("caption", c) for c in world.caption_ids])
    for view, kind in _views(world):
        ids = world.image_ids if kind == "image" else world.caption_ids

        def score(q, g, kind=kind):
            return float(np.dot(vector(kind, q), vector(kind, g)))

        full = {q: brute.ranking(q, ids, lambda g, q=q: score(q, g)) for q in ids}  # own item included
        if source_kind == "scores":
            source = ScoreMatrix(caption_scores=captions @ captions.T, image_scores=images @ images.T)
        elif source_kind == "embeddings":
            source = Embeddings(images, captions)
        else:
            source = Rankings(**{view.direction: full})
        queries = np.arange(len(ids))
        lists = source.top(view, 7, queries)
        for q_dense, q in enumerate(ids):
            fold = world.fold(kind, q)
            want = [g for g in full[q] if g != q and world.fold(kind, g) == fold]
            row = lists.rows(np.array([q_dense]), view.queries, "test")[0]
            got = [ids[d] for d in lists.items[row][: lists.lengths[row]] if d >= 0][:7]
            assert got == want[:7], (view.direction, q)
        # exact first-positive ranks within the fold, the query left out: positives = the next id of its fold
        positives = {}
        for q in ids:
            mates = [g for g in ids if g != q and world.fold(kind, g) == world.fold(kind, q)]
            positives[q] = {mates[-1]}
        from eccv_metric.core.positives import Positives

        index = world.gt.index(kind)
        q_dense = index.positions(np.array(list(positives)))
        g_dense = index.positions(np.array([next(iter(v)) for v in positives.values()]))
        rel = Positives.from_pairs(q_dense, g_dense, len(index))
        want_ranks = [
            brute.first_rank(
                [g for g in full[q] if g != q and world.fold(kind, g) == world.fold(kind, q)], positives[q]
            )
            for q in index.ids[rel.query]
        ]
        got_ranks = source.first_ranks(view, rel, "test")
        assert got_ranks.tolist() == want_ranks, view.direction
        if source_kind == "lists":
            lists = source.top(view, len(ids), rel.query)
            hits = lists.hits(rel, lists.rows(rel.query, view.queries, "test"))
            assert (first_hit(hits) + 1).tolist() == want_ranks
