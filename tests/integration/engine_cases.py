"""Seeded inputs whose per-query outputs are frozen in tests/data/engine_digests.json.

Shared by ``scripts/engine_digests.py`` (which writes the digests on a trusted
engine) and ``tests/test_engine_digests.py`` (which requires identical values).
"""

from __future__ import annotations

import hashlib

import numpy as np

from eccv_metric import Metrics
from eccv_metric.measures.results import QueryScores
from tests.fixtures import make_scores
from tests.fixtures import ranked_indices

SCORE_TARGETS = (
    "coco_1k_recalls",
    "coco_5k_recalls",
    "cxc_recalls",
    "eccv_recalls",
    "eccv_map_at_r",
    "eccv_rprecision",
    "pmrp",
    "coco_1k_medr",
    "coco_5k_medr",
    "cxc_medr",
    "eccv_medr",
)
KS = (1, 5, 10, 20)
LIST_TARGETS = ("coco_5k_recalls", "cxc_recalls", "eccv_recalls", "eccv_map_at_r", "eccv_rprecision", "pmrp")
LIST_KS = (1, 5, 10)
CASES = ("gauss", "ties", "float16", "permuted", "extra_ids", "lists_dict", "lists_arrays")


def _shuffled(metrics: Metrics, scores: np.ndarray, extra: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matrix with rows / columns permuted (and extra distractor ids with random scores inserted)."""
    gt = metrics.gt
    rng = np.random.default_rng(21 if extra else 20)
    image_ids, caption_ids = gt.image_ids.astype(np.int64), gt.caption_ids.astype(np.int64)
    if extra:
        n_img, n_cap = 300, 1000
        scores = np.concatenate([scores, rng.standard_normal((n_img, scores.shape[1]), dtype=np.float32)], axis=0)
        scores = np.concatenate([scores, rng.standard_normal((len(scores), n_cap), dtype=np.float32)], axis=1)
        image_ids = np.concatenate([image_ids, 10**9 + np.arange(n_img)])
        caption_ids = np.concatenate([caption_ids, 2 * 10**9 + np.arange(n_cap)])
    rows, cols = rng.permutation(len(image_ids)), rng.permutation(len(caption_ids))
    return np.ascontiguousarray(scores[rows][:, cols]), image_ids[rows], caption_ids[cols]


def run_case(
    metrics: Metrics, name: str, gauss: np.ndarray | None = None, top: tuple[np.ndarray, np.ndarray] | None = None
) -> dict[str, dict[str, QueryScores]]:
    """Per-query values of one case (``gauss`` / ``top``: the continuous matrix and its top-50 column indices
    per row and per column, if the caller holds them already)."""
    gt = metrics.gt
    if name == "ties":
        base = make_scores(gt, "ties")
    else:
        base = gauss if gauss is not None else make_scores(gt, "gauss")
    if name in ("gauss", "ties"):
        return metrics.per_query_from_scores(base, target_metrics=SCORE_TARGETS, Ks=KS)
    if name == "float16":
        return metrics.per_query_from_scores(base.astype(np.float16), target_metrics=SCORE_TARGETS, Ks=KS)
    if name in ("permuted", "extra_ids"):
        scores, image_ids, caption_ids = _shuffled(metrics, base, name == "extra_ids")
        return metrics.per_query_from_scores(scores, image_ids, caption_ids, target_metrics=SCORE_TARGETS, Ks=KS)
    if top is None:
        top = ranked_indices(base, 50)
    i2t, t2i = gt.caption_ids[top[0]], gt.image_ids[top[1]]
    if name == "lists_arrays":
        return metrics.per_query_from_arrays((gt.image_ids, i2t), (gt.caption_ids, t2i), LIST_TARGETS, LIST_KS)
    i2t_dict = {int(q): row.tolist() for q, row in zip(gt.image_ids, i2t, strict=True)}
    t2i_dict = {int(q): row.tolist() for q, row in zip(gt.caption_ids, t2i, strict=True)}
    return metrics.per_query(i2t_dict, t2i_dict, LIST_TARGETS, LIST_KS)


def digests(per_query: dict[str, dict[str, QueryScores]]) -> dict[str, str]:
    """``{"metric/direction": sha256 of (query ids as int64, values as float64)}``."""
    out = {}
    for metric, by_dir in per_query.items():
        for direction, scores in by_dir.items():
            digest = hashlib.sha256(np.asarray(scores.query_ids, dtype=np.int64).tobytes())
            digest.update(np.asarray(scores.values, dtype=np.float64).tobytes())
            out[f"{metric}/{direction}"] = digest.hexdigest()
    return out


TASK_CASES = ("cxc_i2i_int_embeddings", "cxc_i2i_int_matrix", "mscoco_fg_int_embeddings", "flickr30k_fg_int_embeddings")


def _ints(seed: int, n: int, dim: int = 8) -> np.ndarray:
    """Integer-valued embeddings in -2..2 (exact dot products, heavy ties)."""
    return np.random.default_rng(seed).integers(-2, 3, (n, dim)).astype(np.float32)


def run_task_case(name: str) -> dict[str, dict[str, QueryScores]]:
    """Per-query values of one task case (inputs as frozen in tests/data/task_digests.json)."""
    from eccv_metric import FineGrainedMetrics
    from tests.fixtures import SHARED

    if name.startswith("cxc_i2i"):
        metrics = Metrics(cxc_source=SHARED / "cxc")
        images = _ints(1, 5000)
        if name.endswith("embeddings"):
            names = ["cxc_i2i_r1", "cxc_i2i_r5", "cxc_i2i_r10", "cxc_i2i_r50", "cxc_i2i_medr", "cxc_i2i_meanr"]
            return metrics.per_query_from_embeddings(images, None, target_metrics=names)
        names = ["cxc_i2i_r1", "cxc_i2i_r5", "cxc_i2i_r10", "cxc_i2i_medr", "cxc_i2i_meanr"]
        return metrics.per_query_from_scores(None, image_scores=(images @ images.T), target_metrics=names)
    bench = name.removesuffix("_int_embeddings")
    fg = FineGrainedMetrics(bench, SHARED / "mscoco_fg")
    images, captions = _ints(2, len(fg.fg.images.ids), 6), _ints(3, len(fg.fg.captions.ids), 6)
    names = [f"{bench}_r1", f"{bench}_r5", f"{bench}_r10", f"{bench}_r50", f"{bench}_medr", f"{bench}_meanr"]
    return fg.per_query_from_embeddings(images, captions, target_metrics=names)
