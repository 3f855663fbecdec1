"""Embeddings input: the same numbers as the score-matrix path on the same similarities, through every path."""

from __future__ import annotations

import json

import evaluate
import numpy as np
import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric.cli.main import main
from eccv_metric.hub.evaluate_glue import nest
from eccv_metric.kernels.scorers import EmbeddingScorer
from tests.unit.brute import numbers

TARGETS = (
    "coco_1k_recalls",
    "coco_5k_recalls",
    "cxc_r1",
    "eccv_r1",
    "eccv_map_at_r",
    "eccv_rprecision",
    "coco_5k_medr",
)


@pytest.fixture(scope="module")
def integer_embeddings(gt):
    """Integer-valued embeddings: exact dot products, heavy ties; captions near their image."""
    rng = np.random.default_rng(21)
    images = rng.integers(-2, 3, size=(5000, 8)).astype(np.float32)
    images[:, 0] = 3  # no zero row: every cosine is defined
    captions = images[gt.caption_image] + rng.integers(-2, 3, size=(25000, 8)).astype(np.float32)
    return images, captions


def distinct_in_order(rows):
    """(distinct rows in order of first occurrence, index of each row's distinct row)."""
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    return rows[first[order]], position[inverse.ravel()]


def test_integer_embeddings_equal_the_score_path(metrics, integer_embeddings):
    images, captions = integer_embeddings
    expected = metrics.compute_all_metrics_from_scores(images @ captions.T, target_metrics=TARGETS)
    assert metrics.compute_all_metrics_from_embeddings(images, captions, target_metrics=TARGETS) == expected
    # cosines are inexact: identical unit vectors must still tie, so each distinct one is scored once (in order
    # of first occurrence, the same matrix product the engine does) and copied to its duplicates
    unit_i, copies_i = distinct_in_order(images / np.linalg.norm(images, axis=1, keepdims=True))
    unit_c, copies_c = distinct_in_order(captions / np.linalg.norm(captions, axis=1, keepdims=True))
    cosine = metrics.compute_all_metrics_from_scores((unit_i @ unit_c.T)[copies_i][:, copies_c], target_metrics=TARGETS)
    assert (
        metrics.compute_all_metrics_from_embeddings(images, captions, target_metrics=TARGETS, normalize=True) == cosine
    )


def test_float_embeddings_permuted_with_extra_gallery_items(metrics, gt):
    rng = np.random.default_rng(22)
    images = rng.standard_normal((5000, 32), dtype=np.float32)
    captions = images[gt.caption_image] + rng.standard_normal((25000, 32), dtype=np.float32)
    perm_i, perm_c = rng.permutation(5000), rng.permutation(25000)
    extra = rng.standard_normal((9, 32), dtype=np.float32)
    image_ids = np.concatenate([gt.image_ids[perm_i], 900_000_000 + np.arange(9)])
    emb_i = np.concatenate([images[perm_i], extra])
    got = metrics.compute_all_metrics_from_embeddings(
        emb_i, captions[perm_c], image_ids, gt.caption_ids[perm_c], TARGETS
    )
    scores = emb_i @ captions[perm_c].T
    assert got == metrics.compute_all_metrics_from_scores(scores, image_ids, gt.caption_ids[perm_c], TARGETS)


def test_cli_and_evaluate_module_take_embeddings(metrics, integer_embeddings, tmp_path, capsys):
    images, captions = integer_embeddings
    np.save(tmp_path / "i.npy", images)
    np.save(tmp_path / "c.npy", captions.astype(np.float16))  # float16 is upcast
    expected = metrics.compute_all_metrics_from_embeddings(images, captions.astype(np.float16), target_metrics=TARGETS)
    out = tmp_path / "r.json"
    args = ["evaluate", "--image-embeddings", tmp_path / "i.npy", "--caption-embeddings", tmp_path / "c.npy"]
    assert main([str(a) for a in args] + ["--metrics", *TARGETS, "-o", str(out)]) == 0
    assert numbers(out) == expected
    module = evaluate.load(str(EVALUATE_MODULE_DIR))
    flat = module.compute(
        image_embeddings=images, caption_embeddings=captions.astype(np.float16), target_metrics=TARGETS
    )
    assert nest(flat) == expected
    capsys.readouterr()


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda i, c: (i[:, :7], c), "image embeddings have 7 dimensions but caption embeddings 8"),
        (lambda i, c: (i.astype(np.int32), c), "image embeddings must be floats"),
        (lambda i, c: (i, c.astype(np.longdouble)), r"caption embeddings must be floats \(float16/32/64\)"),
        (lambda i, c: (i, c[0]), r"caption embeddings must be a non-empty 2-D"),
        (lambda i, c: (np.where(np.arange(5000)[:, None] == 3, np.nan, i), c), "image embeddings: rows 3 hold NaN"),
    ],
)
def test_bad_embeddings(metrics, integer_embeddings, change, message):
    images, captions = change(*integer_embeddings)
    with pytest.raises(EvaluationError, match=message):
        metrics.compute_all_metrics_from_embeddings(images, captions)


def test_zero_rows_have_no_cosine(metrics, integer_embeddings):
    images, captions = integer_embeddings
    zero = images.copy()
    zero[11] = 0
    with pytest.raises(EvaluationError, match="image embeddings: rows 11 are zero"):
        metrics.compute_all_metrics_from_embeddings(zero, captions, normalize=True)


def test_identical_embeddings_get_identical_scores():
    """A float32 BLAS product rounds duplicated rows differently (about one row in three here); the tie rule
    (the item given first wins) needs them equal, so duplicates are scored once and copied."""
    rng = np.random.default_rng(4)
    for n, dim in ((200, 64), (3000, 512)):
        emb = rng.standard_normal((n, dim)).astype(np.float32)
        dups = rng.choice(np.arange(1, n), n // 4, replace=False)
        emb[dups] = emb[0]
        emb[dups[:5]] = -0.0 * emb[dups[:5]] + emb[0]  # -0.0 entries count as 0.0
        scores = Embeddings(emb[: n // 2], emb).pair_scorer(("image", "caption")).block(np.arange(n // 2), None)
        assert (scores[:, dups] == scores[:, [0]]).all()
        half = dups[dups < n // 2]
        assert (scores[half] == scores[[0]]).all()
        scorer = EmbeddingScorer(emb, emb)
        for rows in (np.arange(n), np.arange(7, 70), np.array([3])):
            block = scorer.block(rows, None)
            assert (block[:, dups] == block[:, [0]]).all()
            assert block.shape == (len(rows), n)
        cols = np.array([5, dups[0], 0])
        assert np.array_equal(scorer.block(np.arange(9), cols), scorer.block(np.arange(9), None)[:, cols])


MEMORY_PROBE = """
import json, sys
import numpy as np
def hwm_kb():  # this address space's peak: ru_maxrss would carry the parent's (pytest's) peak over the exec
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
from eccv_metric import Metrics
metrics = Metrics()
gt = metrics.gt
rng = np.random.default_rng(0)
extra = 45_000
images = rng.standard_normal((len(gt.image_ids) + extra, 16), dtype=np.float32)
if sys.argv[1] == "duplicate":
    images[-1] = images[0]
captions = rng.standard_normal((len(gt.caption_ids), 16), dtype=np.float32)
ids = np.concatenate([gt.image_ids, 10**9 + np.arange(extra)])
before = hwm_kb()
out = metrics.compute_all_metrics_from_embeddings(
    images, captions, ids, target_metrics=["coco_1k_r1", "coco_5k_r1", "eccv_map_at_r", "coco_5k_medr"]
)
print(json.dumps({"peak_kb": hwm_kb(), "before_kb": before, "out": out}))
"""


@pytest.mark.slow
def test_cross_modal_embeddings_with_45k_distractors_stay_within_1_2_gb():
    """The 50,000 x 25,000 similarities (5 GB) are never held: blocks of queries, whole process <= 1.2 GB,
    and a duplicated row (which makes the distinct-row bookkeeping kick in) does not double it."""
    import subprocess
    import sys

    results = {}
    for case in ("distinct", "duplicate"):
        done = subprocess.run([sys.executable, "-c", MEMORY_PROBE, case], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        results[case] = json.loads(done.stdout.strip().splitlines()[-1])
        assert results[case]["peak_kb"] <= 1.2e6, (case, results[case]["peak_kb"])
    assert results["duplicate"]["peak_kb"] < 1.5 * results["distinct"]["peak_kb"]  # a duplicate does not double it
