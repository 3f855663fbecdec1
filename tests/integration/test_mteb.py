"""mteb itself (2.x, its own loader and evaluate) on built folders, unmodified, against this project's R@K.

One subprocess (``tests/integration/mteb_run.py``: mteb and torch stay out of this process) runs
``mteb.evaluate`` with a weight-free hashing encoder (``tests/integration/hashing.py``: exact integer
scores, so torch and numpy agree bit for bit) on:

- the session's real build (``built``: 43 of 5,000 images have pixels, so only its text subsets are
  written): ``cxc_t2t-t2t``;
- the session's build whose 5,000 images all have pixels (``pixel_build``, tests/integration/conftest.py:
  synthetic PNGs whose first pixel stores the image id; the real captions, positives and CxC ratings):
  ``eccv-i2t``, ``eccv-t2i``, ``coco_1k_fold3-t2i``, ``cxc_i2i-i2i`` without ties, and ``eccv-i2t`` with
  duplicate captions tied.

MTEB's ``hit_rate_at_k`` must equal our R@K: from our own scoring of the same embeddings (Embeddings:
the engine's stable rule, where nothing ties), from an independent ranking by trec_eval's rule (score,
then document id descending as strings), and from MTEB's saved predictions read by ``eccv-caption
evaluate --run``. With ties, MTEB's values equal ours under trec_eval's rule, and the stable rule moves
some of them (the measured count is asserted). About 2 minutes (mteb 60-80 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from eccv_caption_dataset.hub_folder import build
from eccv_metric import Embeddings
from eccv_metric import GroundTruth
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.formats.mteb import read_predictions
from tests.fixtures import ROOT
from tests.fixtures import SHARED
from tests.integration.hashing import Hashing

DEEP = (1, 5, 10, 50)  # cross-modal runs: 50 >= ECCV's largest R (48), so mAP@R is decided from the predictions
SHALLOW = (1, 5, 10)  # t2t over 25,000 captions: kept small (MTEB keeps 11 documents, the query's own included)
KINDS = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}


@pytest.fixture(scope="module")
def mteb_runs(built, pixel_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("mteb")
    folder, _ = built
    specs = [
        f"{folder}|no-ties|{','.join(map(str, SHALLOW))}|cxc_t2t-t2t",
        f"{pixel_build}|no-ties|{','.join(map(str, DEEP))}|eccv-i2t,eccv-t2i,coco_1k_fold3-t2i,cxc_i2i-i2i",
        f"{pixel_build}|ties|{','.join(map(str, DEEP))}|eccv-i2t",
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HOME": str(out / "hf"),
        "MTEB_CACHE": str(out / "mteb_cache"),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.mteb_run", str(out), *specs],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out, json.loads((out / "scores.json").read_text())


def trec_order_top(hashing: Hashing, direction: str, query_ids, doc_ids, depth: int) -> dict[int, list[int]]:
    """An independent ranking: every score exactly (integers), ordered by score then doc id string descending."""
    qkind, dkind = KINDS[direction]
    docs = hashing.embed(dkind, doc_ids.tolist(), "document")
    string_rank = np.argsort(np.argsort(doc_ids.astype(str)))  # larger = later as a string
    out = {}
    for start in range(0, len(query_ids), 1000):
        block = query_ids[start : start + 1000]
        scores = (hashing.embed(qkind, block.tolist(), "query") @ docs.T).astype(np.int64)
        key = scores * len(doc_ids) + string_rank  # score first, then the id string: both descending
        top = np.argpartition(-key, depth - 1, axis=1)[:, :depth]
        top = np.take_along_axis(top, np.argsort(-np.take_along_axis(key, top, axis=1), axis=1), axis=1)
        out.update({int(q): doc_ids[row].tolist() for q, row in zip(block, top, strict=True)})
    return out


def hit_rates(mteb_scores: dict, ks) -> np.ndarray:
    return np.array([mteb_scores[f"hit_rate_at_{k}"] for k in ks])


def ours(source, bench: str, direction: str, ks, resources, queries=None) -> np.ndarray:
    """Our R@K means (over ``queries`` when given: a fold)."""
    cross = [direction] if direction in ("i2t", "t2i") else None  # an Embeddings object serves one direction here
    results = evaluate(source, [f"{bench}_r{k}" for k in ks], ks, resources=resources, directions=cross, partial=True)
    values = []
    for k in ks:
        per_query = results[f"{bench}_r{k}"][direction]
        keep = np.ones(len(per_query.values), bool) if queries is None else np.isin(per_query.query_ids, queries)
        values.append(per_query.values[keep].mean())
    return np.array(values)


@pytest.mark.slow  # reads the module's one mteb process (about 45 CPU-s): out of the developer's loop
@pytest.mark.heavy(
    "pays for the module's one mteb process (mteb_runs): mteb, torch and transformers imported in a fresh Python "
    "(mteb stays out of the test process), 25,000 caption queries ranked against 25,000 captions (cxc_t2t) and the "
    "pixel build's five cross-modal tasks, the run every MTEB check of the module reads"
)
def test_mteb_loads_the_real_build_and_its_hit_rates_are_our_r_at_k(built, mteb_runs):
    folder, _ = built
    out, scores = mteb_runs
    mteb = scores["no-ties"]["ECCVCaption_cxc_t2t-t2t"]["cxc_t2t-t2t"]
    resources = Resources(GroundTruth.from_dataset(folder))
    gt = resources.gt
    predictions = read_predictions(out / "no-ties" / "ECCVCaption_cxc_t2t-t2t_predictions.json")
    assert len(predictions.raw["t2t"]) == 25000 and all(len(v) == 11 for v in predictions.raw["t2t"].values())
    # MTEB ranked exactly as our scoring does (a sample of queries, every list compared in full)
    sample = gt.caption_ids[::13]
    expected = trec_order_top(Hashing(folder, ties=False), "t2t", sample, gt.caption_ids, 11)
    assert {q: predictions.raw["t2t"][q] for q in expected} == expected
    theirs = hit_rates(mteb, SHALLOW)
    assert np.abs(ours(predictions, "cxc_t2t", "t2t", SHALLOW, resources) - theirs).max() <= 5e-6
    assert theirs[0] > 0.05  # a real ranking, not noise


@pytest.fixture(scope="module")
def pixel_resources(pixel_build):
    return Resources(GroundTruth.from_dataset(pixel_build))


@pytest.mark.slow  # reads the module's one mteb process (about 45 CPU-s): out of the developer's loop
def test_cross_modal_hit_rates_equal_our_r_at_k_without_ties(pixel_build, pixel_resources, mteb_runs):
    out, scores = mteb_runs
    gt = pixel_resources.gt
    hashing = Hashing(pixel_build, ties=False)
    images, captions = gt.image_ids.tolist(), gt.caption_ids.tolist()
    i2t = Embeddings(hashing.embed("image", images, "query"), hashing.embed("caption", captions, "document"))
    t2i = Embeddings(hashing.embed("image", images, "document"), hashing.embed("caption", captions, "query"))
    checked = {}
    for task, bench, direction, source in (("eccv-i2t", "eccv", "i2t", i2t), ("eccv-t2i", "eccv", "t2i", t2i)):
        theirs = hit_rates(scores["no-ties"][f"ECCVCaption_{task}"][task], DEEP)
        mine = ours(source, bench, direction, DEEP, pixel_resources)
        assert np.abs(mine - theirs).max() <= 5e-6, (task, mine, theirs)
        preds = out / "no-ties" / f"ECCVCaption_{task}_predictions.json"
        assert np.abs(ours(read_predictions(preds), bench, direction, DEEP, pixel_resources) - mine).max() <= 1e-12
        checked[task] = theirs
    fold = gt.caption_ids[gt.caption_fold == 3]
    theirs = hit_rates(scores["no-ties"]["ECCVCaption_coco_1k_fold3-t2i"]["coco_1k_fold3-t2i"], DEEP)
    assert np.abs(ours(t2i, "coco_1k", "t2i", DEEP, pixel_resources, fold) - theirs).max() <= 5e-6
    # intramodal (the query left out): an independent ranking by trec_eval's rule, no ties
    theirs = hit_rates(scores["no-ties"]["ECCVCaption_cxc_i2i-i2i"]["cxc_i2i-i2i"], DEEP)
    lists = trec_order_top(hashing, "i2i", gt.image_ids, gt.image_ids, 51)
    assert np.abs(ours(Rankings(i2i=lists), "cxc_i2i", "i2i", DEEP, pixel_resources) - theirs).max() <= 5e-6
    assert min(v[0] for v in checked.values()) > 0.3 and theirs[0] > 0.1


@pytest.mark.slow  # reads the module's one mteb process (about 45 CPU-s): out of the developer's loop
def test_ties_follow_trec_eval_order_and_the_stable_rule_differs(pixel_build, pixel_resources, mteb_runs, tmp_path):
    out, scores = mteb_runs
    gt = pixel_resources.gt
    theirs = hit_rates(scores["ties"]["ECCVCaption_eccv-i2t"]["eccv-i2t"], DEEP)
    hashing = Hashing(pixel_build, ties=True)
    queries = gt.image_ids[gt.positives["eccv"]["i2t"].query]
    by_trec = ours(
        Rankings(i2t=trec_order_top(hashing, "i2t", queries, gt.caption_ids, 50)), "eccv", "i2t", DEEP, pixel_resources
    )
    assert np.abs(by_trec - theirs).max() <= 5e-6
    # the predictions through the CLI: the full metrics, ties ordered as MTEB scored them
    preds = out / "ties" / "ECCVCaption_eccv-i2t_predictions.json"
    result = tmp_path / "r.json"
    metrics = [f"eccv_r{k}" for k in DEEP] + ["eccv_map_at_r", "eccv_rprecision"]
    ground_truth = ["--ground-truth", str(pixel_build)]
    assert main(["evaluate", "--run", str(preds), "--metrics", *metrics, *ground_truth, "-o", str(result)]) == 0
    cli = json.loads(result.read_text())
    assert np.abs(np.array([cli[f"eccv_r{k}"]["i2t"] for k in DEEP]) - theirs).max() <= 5e-6
    lists = Rankings(i2t=trec_order_top(hashing, "i2t", queries, gt.caption_ids, 50))
    direct = evaluate(lists, ["eccv_map_at_r", "eccv_rprecision"], resources=pixel_resources).means()
    assert cli["eccv_map_at_r"] == direct["eccv_map_at_r"] and cli["eccv_rprecision"] == direct["eccv_rprecision"]
    # the stable rule (the given order among equal scores: Karpathy order) on the same embeddings
    stable = Embeddings(
        hashing.embed("image", gt.image_ids.tolist(), "query"),
        hashing.embed("caption", gt.caption_ids.tolist(), "document"),
    )
    by_stable = ours(stable, "eccv", "i2t", DEEP, pixel_resources)
    moved = np.abs(by_stable - by_trec) > 1e-12
    assert moved.tolist() == [True, False, False, False], (by_stable, by_trec)  # R@1 0.97621 vs 0.97542


@pytest.mark.slow  # reads the module's one mteb process (about 45 CPU-s): out of the developer's loop
def test_fold_predictions_score_coco_1k_only(pixel_build, mteb_runs, capsys):
    out, scores = mteb_runs
    preds = str(out / "no-ties" / "ECCVCaption_coco_1k_fold3-t2i_predictions.json")
    base = ["evaluate", "--run", preds, "--ground-truth", str(pixel_build), "--partial"]
    assert main([*base, "--metrics", "coco_5k_r1"]) == 2
    assert "ranked each query within its COCO 1K fold only" in capsys.readouterr().err
    assert main([*base, "--metrics", "coco_1k_r1", "coco_1k_r5"]) == 0
    assert main([*base, "--ties", "stable", "--metrics", "coco_1k_r1"]) == 2
    assert "MTEB predictions hold no ranks" in capsys.readouterr().err


def test_a_build_without_every_images_pixels_says_which_subsets_are_complete_and_why(built, tmp_path):
    """43 of 5,000 images have pixels in ../shared/data: the build log and mteb's tasks() say what is missing
    (pixels) and how to get it (--download, a val2014 folder or zip), not just that a subset is missing."""
    lines: list[str] = []
    src = tmp_path / "src"
    src.mkdir()
    (src / "captions_karpathy_test.json").symlink_to(SHARED / "coco" / "captions_karpathy_test.json")
    (src / "coco").symlink_to(SHARED / "coco" / "val2014")  # a linked folder of the 43 images
    build(tmp_path / "out", source_dir=src, configs=["positives", "captions", "images"], log=lines.append)
    assert "MTEB subsets complete: 1 of 23 (coco_t2t-t2t)" in lines
    pixels = next(line for line in lines if line.startswith("  not complete, coco_1k_fold0-i2t, "))
    assert "and 15 more: qrels only: 4,957 of the 5,000 images have no pixels" in pixels
    assert "build with --download or a source folder (or val2014.zip) holding every test image" in pixels
    assert any(line.startswith("  not complete, cxc_graded-i2t,") and "CxC" in line for line in lines)

    folder, _ = built  # tasks() runs in a subprocess: mteb stays out of this process
    code = "from eccv_caption_dataset.mteb import tasks; import sys; tasks(sys.argv[1], names=['eccv-i2t'])"
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last.startswith(f"eccv_metric.EvaluationError: {folder} has no complete subset"), (
        last
    )
    assert "eccv-i2t: only its qrels are built: images it ranks have no pixels in this build" in last
    assert "rebuild with --download, or --source-dir holding the val2014 folder or val2014.zip" in last
