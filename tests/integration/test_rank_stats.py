"""MedR / MeanR against a brute-force full stable argsort written here, on tie-heavy and float matrices."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import EvaluationError
from tests.fixtures import ranked_indices

SETS = ("coco_5k", "coco_1k", "cxc", "eccv")


def brute_ranks(gt, scores, image_ids, caption_ids, bench, direction, queries, fold):
    """1-based rank of the best-ranked positive: full stable descending argsort of the query's row."""
    rel = gt.positives[bench][direction]
    q_ids = image_ids if direction == "i2t" else caption_ids
    g_ids = caption_ids if direction == "i2t" else image_ids
    g_dense = gt.gallery_index(direction).positions(g_ids)
    q_index = {int(q): k for k, q in enumerate(q_ids)}
    out = []
    for q in queries:
        k = int(np.searchsorted(rel.query, q))
        positives = rel.indices[rel.indptr[k] : rel.indptr[k + 1]]
        row = (
            scores[q_index[int(gt.query_index(direction).ids[q])]]
            if direction == "i2t"
            else scores[:, q_index[int(gt.query_index(direction).ids[q])]]
        )
        keep = np.ones(len(row), bool)
        if fold:
            qfold = gt.query_fold(direction)[q]
            keep = (g_dense >= 0) & (gt.gallery_fold(direction)[np.maximum(g_dense, 0)] == qfold)
        cols = np.flatnonzero(keep)
        order = cols[np.argsort(-row[cols], kind="stable")]
        is_pos = np.isin(g_dense[order], positives)  # an extra id (-1) is never a positive
        out.append(int(np.argmax(is_pos)) + 1)
    return np.array(out, dtype=float)


def check(metrics, gt, scores, image_ids, caption_ids, rng):
    targets = [f"{s}_{stat}" for s in SETS for stat in ("medr", "meanr")]
    per_query = metrics.per_query_from_scores(scores, image_ids, caption_ids, targets)
    means = metrics.compute_all_metrics_from_scores(scores, image_ids, caption_ids, targets)
    for rset in SETS:
        for direction in ("i2t", "t2i"):
            got = per_query[f"{rset}_medr"][direction]
            rel = gt.positives["coco" if rset.startswith("coco") else rset][direction]
            assert (got.query_ids == gt.query_index(direction).ids[rel.query]).all()
            sample = rng.choice(len(rel.query), size=min(60, len(rel.query)), replace=False)
            bench = "coco" if rset.startswith("coco") else rset
            want = brute_ranks(
                gt, scores, image_ids, caption_ids, bench, direction, rel.query[sample], rset == "coco_1k"
            )
            assert (got.values[sample] == want).all(), (rset, direction)
            assert means[f"{rset}_medr"][direction] == float(np.median(got.values))
            assert means[f"{rset}_meanr"][direction] == float(np.mean(got.values))


def test_integer_scores_heavy_ties(metrics, gt):
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 4, size=(5000, 25000)).astype(np.float32)  # exact, tie-heavy
    scores[gt.caption_image, np.arange(25000)] += rng.integers(0, 2, size=25000)
    check(metrics, gt, scores, gt.image_ids, gt.caption_ids, rng)


def test_float_scores_permuted_and_extra_ids_and_column_major(metrics, gt, scores_gauss):
    rng = np.random.default_rng(6)
    perm_i, perm_c = rng.permutation(5000), rng.permutation(25000)
    extra = rng.standard_normal((5000, 7), dtype=np.float32) + 3
    scores = np.concatenate([scores_gauss[perm_i][:, perm_c], extra[perm_i]], axis=1)
    caption_ids = np.concatenate([gt.caption_ids[perm_c], [900_000_001 + i for i in range(7)]])
    check(metrics, gt, scores, gt.image_ids[perm_i], caption_ids, rng)
    check(metrics, gt, np.asfortranarray(scores_gauss), gt.image_ids, gt.caption_ids, rng)


def test_from_lists_equals_the_matrix_where_a_positive_is_listed(metrics, gt, scores_gauss):
    """Top-50 lists of the queries whose best positive is in their top 50 (partial): the matrix's ranks."""
    targets = ["coco_5k_medr", "coco_5k_meanr", "eccv_meanr"]
    exact = metrics.per_query_from_scores(scores_gauss, target_metrics=targets)
    tops = dict(zip(("i2t", "t2i"), ranked_indices(scores_gauss, 50), strict=True))  # full stable order, cut
    listed = {}
    for d, gallery in (("i2t", gt.caption_ids), ("t2i", gt.image_ids)):
        ranks = exact["coco_5k_medr"][d]
        keep = ranks.query_ids[ranks.values <= 50]
        rows = gt.query_index(d).positions(keep)
        listed[d] = {int(q): gallery[tops[d][r]].tolist() for q, r in zip(keep, rows, strict=True)}
    from_lists = metrics.per_query(listed["i2t"], listed["t2i"], targets, partial=True)
    for t in targets:
        for d in ("i2t", "t2i"):
            got, want = from_lists[t][d], exact[t][d]
            keep = np.isin(want.query_ids, got.query_ids)
            assert keep.sum() > 100 and (got.values == want.values[keep]).all() and (got.values <= 50).all()
    first_only = {q: v[:1] for q, v in listed["i2t"].items()}
    first_only.update({int(q): gt.caption_ids[tops["i2t"][k, :1]].tolist() for k, q in enumerate(gt.image_ids)})
    with pytest.raises(EvaluationError, match=r"i2t coco_5k_medr: the ranked lists of \d+ query image\(s\) hold no"):
        metrics.per_query(first_only, None, ["coco_5k_medr"])
