"""Plausible Match positives from real COCO categories, and PMRP against the official code."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from eccv_metric import Metrics
from eccv_metric import PlausibleMatch
from tests.fixtures import INSTANCES
from tests.fixtures import write_pm_files

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from eccv_caption import Metrics as Official
    from eccv_caption import _metrics as off


@pytest.fixture(scope="module")
def pm(gt):
    return PlausibleMatch(gt)


def test_paper_facts_on_real_categories(gt, pm):
    """Largest lists as the official README states; 48 unannotated images; 226 annotated ones without PM."""
    i2t, t2i = pm.relevance("i2t"), pm.relevance("t2i")
    assert int(i2t.n_positives.max()) == 13380 and int(t2i.n_positives.max()) == 2676
    assert int((~pm.annotated).sum()) == 48
    no_pm = pm.annotated & ~pm.match.any(axis=1)
    assert int(no_pm.sum()) == 226
    assert len(i2t.query) == 4952 - 226 and len(t2i.query) == 5 * (4952 - 226)


def official_style_pm(gt, zeta=2):
    """The official data_tools recipe, transcribed: 90-dim codes, per-row Hamming distance loop."""
    raw = json.loads(INSTANCES.read_text())
    test = set(gt.image_ids.tolist())
    codes: dict[int, list[int]] = {}
    for ann in raw["annotations"]:
        iid = int(ann["image_id"])
        if iid in test:
            code = codes.setdefault(iid, [0] * 90)
            code[int(ann["category_id"]) - 1] = 1
    ids = list(codes)
    mat = np.array([codes[i] for i in ids], dtype=bool)
    pairs = {}
    for row, iid in enumerate(ids):
        close = np.count_nonzero(mat != mat[row], axis=1) <= zeta
        pairs[iid] = {ids[j] for j in np.flatnonzero(close)} - {iid}
    return pairs


def test_pm_relation_equals_the_official_recipe(gt, pm):
    expected = official_style_pm(gt)
    ours = {int(gt.image_ids[q]): set(gt.image_ids[np.flatnonzero(pm.match[q])].tolist()) for q in range(5000)}
    for iid, matched in expected.items():
        assert ours[iid] == matched, iid
    assert all(not v for k, v in ours.items() if k not in expected)  # unannotated: no PM at all


def test_pm_options(gt, pm):
    own = PlausibleMatch(gt, include_own=True)
    assert (own.match.sum(axis=1) == pm.match.sum(axis=1) + pm.annotated).all()
    strict = PlausibleMatch(gt, zeta=0)
    assert (strict.match <= pm.match).all() and strict.match.sum() < pm.match.sum()
    i2t = pm.relevance("i2t")
    csr = pm.relevance("t2i").to_positives()
    assert np.array_equal(csr.query, pm.relevance("t2i").query)
    assert np.array_equal(csr.n_positives, pm.relevance("t2i").n_positives)
    assert i2t.n_positives.sum() == 5 * pm.match.sum()


@pytest.fixture(scope="module")
def pm_lists(gt, pm):
    """Default PM lists in the official {id: [ids]} form (about 12M caption pairs)."""
    return {
        d: pm.relevance(d).to_positives().to_id_lists(gt.query_index(d).ids, gt.gallery_index(d).ids)
        for d in ("i2t", "t2i")
    }


def test_pmrp_top50_matches_official_rprecision(metrics, scores_gauss, top50, pm_lists):
    """PMRP with R capped at 50 (the paper's protocol) == the official R-Precision on top-50 lists."""
    i2t, t2i = top50
    expected = {
        "i2t": off.compute_rprecision(i2t, pm_lists["i2t"]),
        "t2i": off.compute_rprecision(t2i, pm_lists["t2i"]),
    }
    for result in (
        metrics.compute_all_metrics(i2t, t2i, ("pmrp",)),
        metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=("pmrp",)),
    ):
        for d in ("i2t", "t2i"):
            assert abs(result["pmrp"][d] - expected[d]) <= 1e-12


def test_pm_files_through_extra_file_dir(gt, top50, tmp_path):
    """The official constructor argument: released-format PM files (zeta=0 keeps them small here)."""
    write_pm_files(gt, tmp_path, zeta=0)
    i2t, t2i = top50
    official = Official(extra_file_dir=str(tmp_path)).compute_all_metrics(i2t, t2i, target_metrics=("pmrp",))
    expected = {d: float(official[d]) for d in ("i2t", "t2i")}  # the official files pmrp under 'i2t'/'t2i' keys
    from_files = Metrics(extra_file_dir=tmp_path).compute_all_metrics(i2t, t2i, ("pmrp",))
    from_categories = Metrics(instances_json=INSTANCES, pm_zeta=0).compute_all_metrics(i2t, t2i, ("pmrp",))
    for d in ("i2t", "t2i"):
        assert abs(from_files["pmrp"][d] - expected[d]) <= 1e-12
        assert abs(from_categories["pmrp"][d] - expected[d]) <= 1e-12


def test_uncapped_pmrp_per_query_on_full_rankings(gt, scores_gauss, pm_lists):
    """pm_r_cap=None == the official R-Precision on full rankings (subset of queries)."""
    uncapped = Metrics(instances_json=INSTANCES, pm_r_cap=None)
    ours = uncapped.per_query_from_scores(scores_gauss, target_metrics=("pmrp",))["pmrp"]
    lists = pm_lists
    rng = np.random.default_rng(9)
    for direction in ("i2t", "t2i"):
        qs = ours[direction]
        picks = rng.choice(len(qs.query_ids), 40, replace=False)
        picks = np.union1d(picks, [int(np.argmax([len(lists[direction][int(q)]) for q in qs.query_ids]))])
        for k in picks:
            qid = int(qs.query_ids[k])
            if direction == "i2t":
                row = gt.images.positions(np.array([qid]))[0]
                ranked = gt.caption_ids[np.argsort(-scores_gauss[row], kind="stable")].tolist()
            else:
                col = gt.captions.positions(np.array([qid]))[0]
                ranked = gt.image_ids[np.argsort(-scores_gauss[:, col], kind="stable")].tolist()
            expected = off.compute_rprecision({qid: ranked}, {qid: lists[direction][qid]})
            assert abs(expected - qs.values[k]) <= 1e-12, (direction, qid)
