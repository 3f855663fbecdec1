"""Similarities from embeddings: ``scores = image_embeddings @ caption_embeddings.T`` (cosine with ``normalize``).

The image-caption matrix (5,000 x 25,000 float32 = 0.5 GB) is computed once
with one matrix product, in the embeddings' float type (float16 / bfloat16 are
upcast to float32), and handed to the score-matrix path: the ranking is the
one that path gives on the same similarities (stable descending, the item
given first wins ties).

Identical embeddings always get identical scores: a float32 BLAS product may
round the same dot product differently at different positions of the output
(measured: duplicated rows of a 3,000 x 512 matrix disagree in the last bit in
about one row in three), which would turn the tie rule into noise for the
duplicate captions of COCO. So each distinct embedding is scored once
(:func:`distinct_rows`) and its scores are copied to its duplicates. Beyond
that, the last bits of a float similarity are BLAS's (they may depend on the
block and thread layout, as in any float matrix product); exact, reproducible
ties need integer-valued embeddings or the caller's own score matrix.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview


def as_embeddings(values: object, what: str) -> np.ndarray:
    """A 2-D float32/float64 array from numpy or torch (bfloat16 / float16 upcast); no NaN or inf."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        tensor = values.detach().cpu()  # type: ignore[attr-defined]
        if str(getattr(tensor, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            tensor = tensor.float()
        values = tensor.numpy()
    arr = np.asarray(values)
    if arr.dtype not in (np.float16, np.float32, np.float64):
        raise EvaluationError(f"{what} must be floats (float16/32/64), not {arr.dtype}")
    if arr.ndim != 2 or 0 in arr.shape:
        raise EvaluationError(f"{what} must be a non-empty 2-D (items x dimensions) array, got shape {arr.shape}")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise EvaluationError(f"{what}: rows {preview(np.flatnonzero(bad))} hold NaN or inf")
    return arr


def prepare(values: object, what: str, normalize: bool = False) -> np.ndarray:
    """Checked embeddings (:func:`as_embeddings`), scaled to unit L2 norm when ``normalize``."""
    arr = as_embeddings(values, what)
    return _unit(arr, what) if normalize else arr


def similarities(image_embeddings: object, caption_embeddings: object, normalize: bool = False) -> np.ndarray:
    """``scores[i, j] = <image_i, caption_j>`` (cosine when ``normalize``: rows scaled to unit L2 norm first)."""
    images = as_embeddings(image_embeddings, "image embeddings")
    captions = as_embeddings(caption_embeddings, "caption embeddings")
    if images.shape[1] != captions.shape[1]:
        raise EvaluationError(
            f"image embeddings have {images.shape[1]} dimensions but caption embeddings {captions.shape[1]}"
        )
    dtype = np.result_type(images.dtype, captions.dtype)
    images, captions = images.astype(dtype, copy=False), captions.astype(dtype, copy=False)
    if normalize:
        images, captions = _unit(images, "image embeddings"), _unit(captions, "caption embeddings")
    images, image_copies = distinct_rows(images)
    captions, caption_copies = distinct_rows(captions)
    scores = images @ captions.T
    if image_copies is not None:
        scores = scores.take(image_copies, axis=0)
    if caption_copies is not None:
        scores = scores.take(caption_copies, axis=1)
    return scores


def distinct_rows(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(distinct rows, copies)`` with ``arr == distinct[copies]``; ``(arr, None)`` when no row repeats.

    Rows are compared bit for bit (``-0.0`` counts as ``0.0``), by hashing each
    row's bytes once (about 0.1 s for 31,244 x 512 float32).
    """
    canon = np.ascontiguousarray(arr + arr.dtype.type(0))  # -0.0 + 0.0 == 0.0
    keys = canon.view(np.dtype((np.void, canon.itemsize * canon.shape[1])))[:, 0].tolist()
    seen: dict[bytes, int] = {}
    copies = np.fromiter((seen.setdefault(key, len(seen)) for key in keys), dtype=np.int64, count=len(keys))
    if len(seen) == len(keys):
        return arr, None
    firsts = np.unique(copies, return_index=True)[1]
    return arr[firsts], copies


def _unit(arr: np.ndarray, what: str) -> np.ndarray:
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EvaluationError(f"{what}: rows {preview(np.flatnonzero(norms[:, 0] == 0))} are zero (no cosine)")
    return arr / norms
