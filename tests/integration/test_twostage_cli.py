"""A k = 128 rerank of the real 5K split through files and ``eccv-caption evaluate --rerank``: a seeded first stage
(embeddings over the real test ids) and each direction's top 128 rescored; the CLI's numbers equal Python's
TwoStage, R@1/5/10 equal a count over the candidates written here, and MedR / MeanR carry the note that the first
stage decides them past the candidates."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np

from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import Reranked
from eccv_metric import TwoStage
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.formats.reranked import save_reranked
from tests.fixtures import INSTANCES

K = 128
METRICS = [
    "coco_5k_recalls",
    "coco_1k_recalls",
    "eccv_map_at_r",
    "eccv_rprecision",
    "eccv_r1",
    "pmrp",
    "coco_5k_medr",
    "coco_5k_meanr",
]


def top_k(queries: np.ndarray, gallery: np.ndarray, k: int) -> np.ndarray:
    """Each query's k best gallery rows by dot product (block by block; the order within them does not matter)."""
    out = np.empty((len(queries), k), np.int64)
    for start in range(0, len(queries), 1000):
        block = queries[start : start + 1000] @ gallery.T
        out[start : start + 1000] = np.argpartition(-block, k, axis=1)[:, :k]
    return out


def test_a_k128_rerank_of_the_5k_split_through_the_cli(tmp_path, gt, metrics, capsys):
    rng = np.random.default_rng(50)
    images = rng.standard_normal((len(gt.image_ids), 32), dtype=np.float32)
    captions = images[gt.caption_image] + 1.5 * rng.standard_normal((len(gt.caption_ids), 32), dtype=np.float32)
    np.save(tmp_path / "images.npy", images)
    np.save(tmp_path / "captions.npy", captions)
    stages, counted = {}, {}
    for direction, queries, gallery, q_ids, g_ids in (
        ("i2t", images, captions, gt.image_ids, gt.caption_ids),
        ("t2i", captions, images, gt.caption_ids, gt.image_ids),
    ):
        top = top_k(queries, gallery, K)
        first = np.einsum("qd,qkd->qk", queries, gallery[top])
        final = first + rng.standard_normal(top.shape, dtype=np.float32)  # "ITM + ITC"
        stages[direction] = Reranked(q_ids, g_ids[top], final)
        save_reranked(tmp_path / f"{direction}.npz", stages[direction])
        order = np.lexsort((top, -final.astype(np.float64)), axis=1)  # final score, then gallery position
        ranked = np.take_along_axis(top, order, axis=1)
        if direction == "i2t":
            hits = gt.caption_image[ranked] == np.arange(len(q_ids))[:, None]
        else:
            hits = ranked == gt.caption_image[:, None]
        counted[direction] = {k: float(hits[:, :k].any(axis=1).mean()) for k in (1, 5, 10)}
    argv = ["evaluate", "--image-embeddings", str(tmp_path / "images.npy"), "--caption-embeddings"]
    argv += [str(tmp_path / "captions.npy"), "--rerank", f"i2t={tmp_path / 'i2t.npz'}", "--rerank"]
    argv += [f"t2i={tmp_path / 't2i.npz'}", "--instances-json", str(INSTANCES), "--metrics", *METRICS, "--json"]
    assert main(argv) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChanceLevelWarning)
        want = evaluate(TwoStage(Embeddings(images, captions), **stages), METRICS, resources=metrics.resources)
    assert got == want.means()
    for direction in ("i2t", "t2i"):
        assert {k: got[f"coco_5k_r{k}"][direction] for k in (1, 5, 10)} == counted[direction]
    tail = [
        line for line in out.err.splitlines() if "the first stage's order past each query's reranked candidates" in line
    ]
    assert [line[:13] for line in tail] == ["warning: i2t:", "warning: t2i:"], out.err
    assert all("coco_5k_medr" in line and "coco_5k_meanr" in line for line in tail)
    assert not re.search(r"\bcoco_5k_r1\b", tail[0])  # R@1 reads the candidates only
