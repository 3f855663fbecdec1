"""R@K for deep K from a score matrix against a brute force written here (full stable argsort of sampled queries).

Above K = 1,000 the engine reads R@K off the exact rank of each query's first
positive instead of a K-deep top-K; both sides of that switch are checked, and
K = a sampled query's rank and one less, on tie-heavy scores in Karpathy order
and with permuted ids plus extra gallery ids.
"""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import EvaluationError

BENCHES = ("coco", "cxc", "eccv")


def brute_force(gt, given, rows, cols, direction, queries, bench) -> np.ndarray:
    """0-based position of the first positive of each sampled dense query (by a full stable argsort)."""
    q_all, g_all = gt.positives[bench][direction].pairs()
    n_gallery = len(gt.caption_ids) if direction == "i2t" else len(gt.image_ids)
    row_of = np.full(max(len(gt.image_ids), len(gt.caption_ids)), -1)
    row_of[queries] = np.arange(len(queries))
    positive = np.zeros((len(queries), n_gallery + 1), dtype=bool)  # last column: extra gallery ids
    keep = row_of[q_all] >= 0
    positive[row_of[q_all[keep]], g_all[keep]] = True
    dense_of_pos = rows if direction == "i2t" else cols
    where = np.zeros(dense_of_pos.max() + 1, dtype=np.int64)  # given position of each dense query
    where[dense_of_pos[dense_of_pos >= 0]] = np.flatnonzero(dense_of_pos >= 0)
    block = given[where[queries]] if direction == "i2t" else given[:, where[queries]].T
    order = np.argsort(-block, axis=1, kind="stable")
    gallery = cols if direction == "i2t" else rows  # dense id at each given gallery position (-1: extra)
    hit = np.take_along_axis(positive, gallery[order], axis=1)  # -1 reads the always-False last column
    assert hit.any(axis=1).all()
    return hit.argmax(axis=1)


@pytest.fixture(scope="module")
def tie_heavy(scores_gauss):
    return np.round(scores_gauss * 2).astype(np.float32) / 2


@pytest.mark.parametrize("layout", ["karpathy", "permuted-extra"])
def test_deep_recalls_match_a_full_sort(metrics, gt, tie_heavy, layout):
    rows, cols = np.arange(len(gt.image_ids)), np.arange(len(gt.caption_ids))
    given, image_ids, caption_ids = tie_heavy, gt.image_ids, gt.caption_ids
    if layout == "permuted-extra":
        rng = np.random.default_rng(8)
        rows, cols = rng.permutation(rows), rng.permutation(cols)
        extra = np.full((len(rows), 300), 2.0, dtype=np.float32)  # extra captions outscoring most test ones
        given = np.concatenate([tie_heavy[rows][:, cols], extra], axis=1)
        cols = np.concatenate([cols, np.full(300, -1)])
        image_ids = gt.image_ids[rows]
        caption_ids = np.concatenate([gt.caption_ids[cols[:-300]], 10**9 + np.arange(300)])
    rng = np.random.default_rng(9)
    firsts = {}
    for direction in ("i2t", "t2i"):
        for bench in BENCHES:
            queries = np.sort(rng.choice(gt.positives[bench][direction].query, 150, replace=False))
            firsts[bench, direction] = queries, brute_force(gt, given, rows, cols, direction, queries, bench)
    ranks = firsts["coco", "t2i"][1] + 1
    deep = np.sort(ranks[ranks > 1002])
    assert len(deep), "no sampled query ranks its positive deep enough"
    ks = sorted({1000, 1001, 24_999, int(deep[0]) - 1, int(deep[0]), int(deep[-1]) - 1, int(deep[-1])})
    names = [f"{b}_5k_r{k}" if b == "coco" else f"{b}_r{k}" for b in BENCHES for k in ks]
    got = metrics.per_query_from_scores(given, image_ids, caption_ids, names)
    for (bench, direction), (queries, first) in firsts.items():
        for k in ks:
            name = f"{bench}_5k_r{k}" if bench == "coco" else f"{bench}_r{k}"
            result = got[name][direction]
            dense = (gt.images if direction == "i2t" else gt.captions).positions(result.query_ids)
            values = dict(zip(dense.tolist(), result.values.tolist(), strict=True))
            want = (first < k).astype(float).tolist()
            assert [values[q] for q in queries.tolist()] == want, (name, direction)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_deep_recall_refuses_non_finite_scores_naming_the_cell(metrics, scores_gauss, value):
    scores = scores_gauss  # the shared matrix: one cell changed, restored below (no 0.5 GB copy)
    kept = scores[17, 100]
    scores[17, 100] = value
    try:
        shown = "NaN" if np.isnan(value) else str(value)
        for name, direction in (("coco_5k_r2000", "i2t"), ("coco_5k_r1500", "t2i")):  # the matrix: refused whole
            with pytest.raises(EvaluationError, match=rf"^scores= holds {shown} at row 17, column 100"):
                metrics.per_query_from_scores(scores, target_metrics=(name,), directions=direction)
    finally:
        scores[17, 100] = kept
