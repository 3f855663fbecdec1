"""COCO 1K R@K against a brute force written here: a full stable argsort of each fold's block.

The engine reads COCO 1K off the 5K lists where they decide it and ranks
only the other queries again within their fold; these tests check both paths
(depths of the 5K lists from 1 to 50, continuous and tie-heavy scores, and
permuted ids) against the brute force.
"""

from __future__ import annotations

import numpy as np
import pytest

KS = (1, 5, 10)


def brute_force_1k(gt, given: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query COCO 1K R@K (K in KS), indexed by dense query, by a full stable argsort of each fold's block.

    ``given[i, j]`` scores dense image ``rows[i]`` and dense caption ``cols[j]``; ties break by given order.
    """
    inverse_rows, inverse_cols = np.argsort(rows), np.argsort(cols)
    out = {}
    for direction in ("i2t", "t2i"):
        firsts = np.empty(len(rows) if direction == "i2t" else len(cols), dtype=np.int64)
        for fold in range(5):
            img_pos = np.sort(inverse_rows[1000 * fold : 1000 * (fold + 1)])  # given positions of the fold's images
            cap_pos = np.sort(inverse_cols[5000 * fold : 5000 * (fold + 1)])
            block = given[np.ix_(img_pos, cap_pos)]
            block = block if direction == "i2t" else block.T
            order = np.argsort(-block, axis=1, kind="stable")
            img_dense, cap_dense = rows[img_pos], cols[cap_pos]
            if direction == "i2t":
                positive = gt.caption_image[cap_dense][order] == img_dense[:, None]
                firsts[img_dense] = positive.argmax(axis=1)
            else:
                positive = img_dense[order] == gt.caption_image[cap_dense][:, None]
                firsts[cap_dense] = positive.argmax(axis=1)
        for k in KS:
            out[f"coco_1k_r{k}/{direction}"] = (firsts < k).astype(np.float64)
    return out


def assert_matches(gt, got: dict, want: dict[str, np.ndarray]) -> None:
    for key, values in want.items():
        name, direction = key.split("/")
        result = got[name][direction]
        dense = (gt.images if direction == "i2t" else gt.captions).positions(result.query_ids)
        np.testing.assert_array_equal(result.values, values[dense], err_msg=key)


@pytest.fixture(scope="module")
def tie_heavy(scores_gauss):
    return np.round(scores_gauss * 2).astype(np.float32) / 2


@pytest.mark.parametrize(
    ("kind", "others"),
    [
        ("continuous", ()),  # no 5K lists: every query ranked within its fold
        ("continuous", ("pmrp",)),  # 5K lists of depth 50
        ("tie-heavy", ("eccv_r1",)),  # depth 1: most queries ranked again
        ("tie-heavy", ("coco_5k_r5", "eccv_map_at_r")),
    ],
)
def test_coco_1k_matches_brute_force(metrics, gt, scores_gauss, tie_heavy, kind, others):
    scores = scores_gauss if kind == "continuous" else tie_heavy
    want = brute_force_1k(gt, scores, np.arange(len(gt.image_ids)), np.arange(len(gt.caption_ids)))
    got = metrics.per_query_from_scores(scores, target_metrics=("coco_1k_recalls", *others), Ks=KS)
    assert_matches(gt, got, want)


def test_coco_1k_with_permuted_ids_matches_brute_force(metrics, gt, tie_heavy):
    rng = np.random.default_rng(5)
    rows, cols = rng.permutation(len(gt.image_ids)), rng.permutation(len(gt.caption_ids))
    given = tie_heavy[rows][:, cols]
    got = metrics.per_query_from_scores(
        given, gt.image_ids[rows], gt.caption_ids[cols], ("coco_1k_recalls", "eccv_r1"), Ks=KS
    )
    assert_matches(gt, got, brute_force_1k(gt, given, rows, cols))
