"""Differential tests against the official eccv_caption package (the oracle).

Three layers:
- stored official outputs on *full* 5K rankings of seeded matrices
  (scripts/oracle_fixtures.py; the official needs ~70 s and ~11 GB per matrix);
- live official runs on top-K lists of a full matrix;
- live official per-query values on full rankings of query subsets (cheap, so
  they also cover ties, float16 and extra gallery ids).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import Metrics
from tests.fixtures import INSTANCES
from tests.fixtures import MATRICES
from tests.fixtures import ROOT
from tests.fixtures import make_scores
from tests.fixtures import matrix_digest
from tests.fixtures import ranked_indices

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from eccv_caption import _metrics as off

TOL = 1e-12
FIXTURE = ROOT / "tests" / "data" / "official_full_rankings.json"
TOP_TARGETS = ("eccv_r1", "eccv_map_at_r", "eccv_rprecision", "coco_5k_recalls", "cxc_recalls")


def assert_same(official: dict, ours: dict) -> None:
    """Every key the official returns is in ours with the same value (<= 1e-12)."""
    assert official, "the official returned nothing"
    for name, by_dir in official.items():
        assert name in ours, name
        for direction, value in by_dir.items():
            assert abs(float(value) - ours[name][direction]) <= TOL, (name, direction, value, ours[name][direction])


# -- stored official outputs on full rankings ------------------------------------------


@pytest.fixture(scope="module")
def stored():
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("name", sorted(MATRICES))
def test_full_rankings_match_stored_official_outputs(gt, stored, name):
    entry = stored["matrices"][name]
    scores = make_scores(gt, name)
    assert matrix_digest(scores) == entry["sha256"], "the seeded matrix changed: rerun scripts/oracle_fixtures.py"
    uncapped = Metrics(instances_json=INSTANCES, pm_r_cap=None)
    ours = uncapped.compute_all_metrics_from_scores(scores, target_metrics=stored["targets"], Ks=stored["Ks"])
    assert set(entry["results"]) >= {"coco_1k_r20", "cxc_r20", "pmrp", "eccv_map_at_r"}
    assert_same(entry["results"], ours)


# -- live official runs on top-K lists ----------------------------------------------------


@pytest.fixture(scope="module")
def gauss_ranked(scores_gauss):
    """Stable descending argsort (the reference ranking), first 100 items of every row and column."""
    return ranked_indices(scores_gauss, 100)


def as_dicts(gt, idx_pair, depth):
    i2t_idx, t2i_idx = idx_pair
    i2t = {int(q): gt.caption_ids[r[:depth]].tolist() for q, r in zip(gt.image_ids, i2t_idx, strict=True)}
    t2i = {int(q): gt.image_ids[r[:depth]].tolist() for q, r in zip(gt.caption_ids, t2i_idx, strict=True)}
    return i2t, t2i


@pytest.mark.parametrize("depth,ks", [(50, (1, 5, 10)), (100, (1, 3, 20, 50))])
def test_topk_lists_official_vs_rankings_vs_scores(gt, metrics, official, scores_gauss, gauss_ranked, depth, ks):
    i2t, t2i = as_dicts(gt, gauss_ranked, depth)
    expected = official.compute_all_metrics(i2t, t2i, target_metrics=TOP_TARGETS, Ks=ks)
    assert_same(expected, metrics.compute_all_metrics(i2t, t2i, TOP_TARGETS, ks))
    assert_same(expected, metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=TOP_TARGETS, Ks=ks))
    recalls = official.compute_all_metrics(i2t, t2i, target_metrics=("eccv_recalls",), Ks=ks)
    assert set(recalls) == {f"eccv_r{k}" for k in ks}
    assert_same(recalls, metrics.compute_all_metrics(i2t, t2i, ("eccv_recalls",), ks))


def test_official_readme_recipe_miscounts_coco_1k_and_we_refuse(gt, metrics, official, scores_gauss, gauss_ranked):
    """Top-50 lists filtered to a fold can hold fewer than K items: the official silently counts a miss."""
    i2t, t2i = as_dicts(gt, gauss_ranked, 50)
    theirs = official.compute_all_metrics(i2t, t2i, target_metrics=("coco_1k_recalls",), Ks=(1, 5, 10))
    exact = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=("coco_1k_recalls",))
    assert theirs["coco_1k_r1"] == pytest.approx(exact["coco_1k_r1"], abs=TOL)
    assert theirs["coco_1k_r10"]["t2i"] < exact["coco_1k_r10"]["t2i"] - 1e-3
    with pytest.raises(EvaluationError, match="R@5 needs 5 items of the query's COCO 1K fold"):
        metrics.compute_all_metrics(i2t, t2i, ("coco_1k_recalls",))
    full_depth = metrics.compute_all_metrics(i2t, t2i, ("coco_1k_r1",))
    assert full_depth["coco_1k_r1"] == pytest.approx(exact["coco_1k_r1"], abs=TOL)


# -- live official per-query values on full rankings of query subsets --------------------


def subset(gt, n_img=120, n_cap=400, seed=0):
    """Image and caption query positions: half ECCV queries, half others."""
    rng = np.random.default_rng(seed)
    picks = []
    for direction, n in (("i2t", n_img), ("t2i", n_cap)):
        eccv = gt.positives["eccv"][direction].query
        rest = np.setdiff1d(np.arange(len(gt.query_index(direction))), eccv)
        picks.append(np.sort(np.concatenate([rng.choice(eccv, n // 2, False), rng.choice(rest, n // 2, False)])))
    return picks


def full_subset_rankings(scores, image_ids, caption_ids, img_rows, cap_cols):
    """Full stable rankings of some rows (image queries) and columns (caption queries)."""
    i2t = {int(image_ids[r]): caption_ids[np.argsort(-scores[r], kind="stable")].tolist() for r in img_rows}
    t2i = {int(caption_ids[c]): image_ids[np.argsort(-scores[:, c], kind="stable")].tolist() for c in cap_cols}
    return {"i2t": i2t, "t2i": t2i}


def official_per_query(gt, ranked, pm_lists=None):
    """Per-query values from the official functions, one query at a time: {metric: {dir: {id: value}}}."""
    out: dict = {}

    def put(metric, direction, qid, value):
        out.setdefault(metric, {}).setdefault(direction, {})[qid] = float(value)

    for direction in ("i2t", "t2i"):
        lists = {
            b: gt.positives[b][direction].to_id_lists(gt.query_index(direction).ids, gt.gallery_index(direction).ids)
            for b in ("coco", "cxc", "eccv")
        }
        gallery_fold = gt.gallery_fold(direction)
        folds = {f: set(gt.gallery_index(direction).ids[gallery_fold == f].tolist()) for f in range(5)}
        qfold = dict(zip(gt.query_index(direction).ids.tolist(), gt.query_fold(direction).tolist(), strict=True))
        for qid in ranked[direction]:
            one = {qid: ranked[direction][qid]}
            for k in (1, 5, 10):
                put(f"coco_5k_r{k}", direction, qid, off.compute_r_at_k(one, {qid: lists["coco"][qid]}, k))
                one_gt = {qid: lists["coco"][qid]}
                put(f"coco_1k_r{k}", direction, qid, off.compute_coco1k_r_at_k(one, one_gt, folds[qfold[qid]], k))
                if qid in lists["cxc"]:
                    put(f"cxc_r{k}", direction, qid, off.compute_r_at_k(one, {qid: lists["cxc"][qid]}, k))
            if qid in lists["eccv"]:
                for name, value in off.compute_eccv_metrics(one, {qid: lists["eccv"][qid]}).items():
                    put(name, direction, qid, value)
            if pm_lists is not None and qid in pm_lists[direction]:
                put("pmrp", direction, qid, off.compute_rprecision(one, {qid: pm_lists[direction][qid]}))
    return out


def compare_per_query(expected, ours):
    checked = 0
    for metric, by_dir in expected.items():
        for direction, values in by_dir.items():
            got = dict(zip(ours[metric][direction].query_ids.tolist(), ours[metric][direction].values, strict=True))
            for qid, value in values.items():
                assert abs(got[qid] - value) <= TOL, (metric, direction, qid, value, got[qid])
                checked += 1
    return checked


PER_QUERY_TARGETS = ("coco_1k_recalls", "coco_5k_recalls", "cxc_recalls", "eccv_map_at_r", "eccv_rprecision", "eccv_r1")


@pytest.mark.parametrize("name,dtype", [("gauss", np.float32), ("ties", np.float32), ("weak", np.float16)])
def test_full_rankings_per_query_on_subsets(gt, metrics, name, dtype):
    scores = make_scores(gt, name).astype(dtype)
    if dtype == np.float16:
        assert len(np.unique(scores[0])) < 10_000  # float16: 25,000 scores, plenty of ties
    img_rows, cap_cols = subset(gt)
    ranked = full_subset_rankings(scores, gt.image_ids, gt.caption_ids, img_rows, cap_cols)
    expected = official_per_query(gt, ranked)
    ours = metrics.per_query_from_scores(scores, target_metrics=PER_QUERY_TARGETS)
    assert compare_per_query(expected, ours) > 5000


def test_extra_gallery_ids_are_negatives(gt, metrics):
    """Extra images/captions in the score matrix are ranked as negatives; COCO 1K ignores them."""
    rng = np.random.default_rng(5)
    base = make_scores(gt, "gauss")
    n_xi, n_xc = 40, 300
    scores = np.empty((5000 + n_xi, 25000 + n_xc), np.float32)
    scores[:5000, :25000] = base
    scores[5000:, :] = rng.standard_normal((n_xi, 25000 + n_xc), dtype=np.float32) + 2.0
    scores[:5000, 25000:] = rng.standard_normal((5000, n_xc), dtype=np.float32) + 2.0
    image_ids = np.concatenate([gt.image_ids, 10_000_000 + np.arange(n_xi)])
    caption_ids = np.concatenate([gt.caption_ids, 20_000_000 + np.arange(n_xc)])
    img_rows, cap_cols = subset(gt, 60, 200, seed=1)
    ranked = full_subset_rankings(scores, image_ids, caption_ids, img_rows, cap_cols)
    expected = official_per_query(gt, ranked)
    ours = metrics.per_query_from_scores(scores, image_ids, caption_ids, PER_QUERY_TARGETS)
    assert compare_per_query(expected, ours) > 2000
    plain = metrics.compute_all_metrics_from_scores(base, target_metrics=("coco_1k_recalls", "coco_5k_r1"))
    extra = metrics.compute_all_metrics_from_scores(scores, image_ids, caption_ids, ("coco_1k_recalls", "coco_5k_r1"))
    assert extra["coco_1k_r5"] == plain["coco_1k_r5"]
    assert extra["coco_5k_r1"]["i2t"] < plain["coco_5k_r1"]["i2t"]


def test_gallery_order_does_not_matter_without_ties(gt, metrics):
    scores = make_scores(gt, "gauss").astype(np.float64)
    scores += np.random.default_rng(3).standard_normal(scores.shape) * 1e-6  # no ties
    targets = PER_QUERY_TARGETS
    reference = metrics.compute_all_metrics_from_scores(scores, target_metrics=targets)
    rng = np.random.default_rng(4)
    pi, pc = rng.permutation(5000), rng.permutation(25000)
    permuted = metrics.compute_all_metrics_from_scores(scores[pi][:, pc], gt.image_ids[pi], gt.caption_ids[pc], targets)
    assert permuted == reference


def test_ties_follow_the_given_gallery_order(gt, metrics):
    """All scores equal: the ranking is the gallery order given, as a stable sort gives."""
    scores = np.zeros((5000, 25000), np.float32)
    first = metrics.compute_all_metrics_from_scores(scores, target_metrics=("coco_5k_r1",))
    # i2t: every image ranks caption 0 first, a positive of image 0 only; t2i: image 0 first, positive of 5 captions
    assert first["coco_5k_r1"] == {"i2t": 1 / 5000, "t2i": 5 / 25000}
    rev_c, rev_i = gt.caption_ids[::-1], gt.image_ids[::-1]
    last = metrics.compute_all_metrics_from_scores(scores, rev_i, rev_c, ("coco_5k_r1",))
    assert last["coco_5k_r1"] == {"i2t": 1 / 5000, "t2i": 5 / 25000}
    i2t = {int(q): rev_c[:10].tolist() for q in gt.image_ids}
    t2i = {int(q): rev_i[:10].tolist() for q in gt.caption_ids}
    assert metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1",)) == last


def test_float16_equals_float32_of_the_same_values(gt, metrics):
    scores16 = make_scores(gt, "weak").astype(np.float16)
    targets = ("coco_1k_recalls", "coco_5k_recalls", "eccv_map_at_r", "eccv_rprecision", "eccv_r1", "pmrp")
    a = metrics.compute_all_metrics_from_scores(scores16, target_metrics=targets)
    b = metrics.compute_all_metrics_from_scores(scores16.astype(np.float32), target_metrics=targets)
    assert a == b


def test_per_query_means_are_the_reported_numbers(gt, metrics, scores_gauss):
    targets = ("coco_1k_recalls", "coco_5k_recalls", "cxc_recalls", "eccv_map_at_r", "eccv_rprecision", "pmrp")
    per_query = metrics.per_query_from_scores(scores_gauss, target_metrics=targets)
    results = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=targets)
    for name, by_dir in per_query.items():
        for direction, qs in by_dir.items():
            assert float(np.mean(qs.values)) == results[name][direction]
            assert len(qs.query_ids) == len(qs.values) == len(np.unique(qs.query_ids))


def test_memory_layout_does_not_matter(gt, metrics):
    """C-ordered, Fortran-ordered (e.g. a transposed product) and strided matrices give the same numbers."""
    scores = make_scores(gt, "weak")
    targets = ("coco_1k_recalls", "coco_5k_r1", "eccv_map_at_r", "cxc_r1")
    reference = metrics.compute_all_metrics_from_scores(scores, target_metrics=targets)
    fortran = np.asfortranarray(scores)
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    assert metrics.compute_all_metrics_from_scores(fortran, target_metrics=targets) == reference
    wide = np.zeros((5000, 50000), np.float32)
    wide[:, ::2] = scores
    assert metrics.compute_all_metrics_from_scores(wide[:, ::2], target_metrics=targets) == reference
