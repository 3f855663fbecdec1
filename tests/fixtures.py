"""Shared, seeded test inputs: score matrices over the real test ids and their rankings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.split import GroundTruth

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
INSTANCES = SHARED / "coco" / "instances_karpathy_test.json"

# name -> (seed, boost on COCO pairs, boost on ECCV pairs, quantisation step or 0)
MATRICES = {
    "gauss": (11, 2.0, 1.0, 0.0),
    "ties": (12, 1.5, 1.0, 0.5),
    "weak": (13, 0.7, 0.3, 0.0),
}


def make_scores(gt: GroundTruth, name: str, step: float | None = None) -> np.ndarray:
    """A seeded float32 (5,000 x 25,000) matrix in Karpathy order: noise plus boosts on positives; ``step``: its
    quantisation step instead of the matrix's own."""
    seed, coco_boost, eccv_boost, own_step = MATRICES[name]
    step = own_step if step is None else step
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((len(gt.image_ids), len(gt.caption_ids)), dtype=np.float32)
    scores[gt.caption_image, np.arange(len(gt.caption_ids))] += np.float32(coco_boost)
    q, g = gt.positives["eccv"]["i2t"].pairs()
    scores[q, g] += np.float32(eccv_boost)
    if step:
        scores = (np.round(scores / step) * step).astype(np.float32)
    return scores


def matrix_digest(scores: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(scores).tobytes()).hexdigest()


def ranked_indices(scores: np.ndarray, depth: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stable descending argsort of rows (i2t) and columns (t2i), optionally truncated."""
    if depth is not None:
        return stable_top(scores, depth), stable_top(scores.T, depth)
    i2t = np.argsort(-scores, axis=1, kind="stable")
    t2i = np.argsort(-scores.T, axis=1, kind="stable")
    return i2t, t2i


def stable_top(scores: np.ndarray, depth: int, block: int = 500) -> np.ndarray:
    """``np.argsort(-scores, axis=1, kind="stable")[:, :depth]`` (finite scores), without sorting whole rows.

    Written apart from the engine's top-k (tests/unit/test_fixtures_top.py holds it to the full sort): per block
    of rows, ``np.partition`` finds each row's depth-th highest score ``t``; every item scoring ``>= t`` (at least
    ``depth`` of them, ties at ``t`` included) is sorted by (row, score descending, column ascending) with
    ``np.lexsort``, which is what a stable descending sort of the row gives, and the first ``depth`` are kept.
    """
    n_rows, n_cols = scores.shape
    if depth <= 0 or depth >= n_cols:
        if not np.isfinite(scores).all():
            raise ValueError("stable_top takes finite scores only")
        return np.argsort(-scores, axis=1, kind="stable")[:, : max(depth, 0)]
    out = np.empty((n_rows, depth), dtype=np.int64)
    for start in range(0, n_rows, block):
        part = np.ascontiguousarray(scores[start : start + block])  # a column-major view: one block copied
        if not np.isfinite(part).all():
            raise ValueError("stable_top takes finite scores only")
        kth = -np.partition(-part, depth - 1, axis=1)[:, depth - 1 : depth]
        rows, cols = np.nonzero(part >= kth)
        order = np.lexsort((cols, -part[rows, cols], rows))
        rows, cols = rows[order], cols[order]
        first = np.searchsorted(rows, np.arange(len(part)))
        out[start : start + len(part)] = cols[first[:, None] + np.arange(depth)]
    return out


def rankings(
    gt: GroundTruth, scores: np.ndarray, depth: int | None = None, image_ids=None, caption_ids=None
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Official-format rankings ``{query id: [gallery ids]}`` from a score matrix."""
    image_ids = gt.image_ids if image_ids is None else np.asarray(image_ids)
    caption_ids = gt.caption_ids if caption_ids is None else np.asarray(caption_ids)
    i2t_idx, t2i_idx = ranked_indices(scores, depth)
    i2t = {int(q): caption_ids[row].tolist() for q, row in zip(image_ids, i2t_idx, strict=True)}
    t2i = {int(q): image_ids[row].tolist() for q, row in zip(caption_ids, t2i_idx, strict=True)}
    return i2t, t2i


def full_rankings(gt: GroundTruth, scores: np.ndarray) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    return rankings(gt, scores, None)


def write_pm_files(gt: GroundTruth, folder: str | Path, zeta: int = 2) -> None:
    """PM lists in the released official format (pm_image_to_caption.json, pm_caption_to_image.json)."""
    pm = PlausibleMatch(gt, zeta)
    folder = Path(folder)
    for direction, name in (("i2t", "pm_image_to_caption.json"), ("t2i", "pm_caption_to_image.json")):
        pos = pm.relevance(direction).to_positives()
        query_ids = gt.query_index(direction).ids
        gallery_ids = gt.gallery_index(direction).ids
        lists = pos.to_id_lists(query_ids, gallery_ids)
        (folder / name).write_text(json.dumps({str(k): v for k, v in lists.items()}))
