"""Scores that overflow or underflow: finite embeddings whose dot products overflow, or underflow to zero, are refused
with the fix (normalize=True, float64), never ranked as ties (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors


@pytest.mark.parametrize(
    ("dtype", "scale", "metric", "advice"),
    [
        (np.float32, 1e20, "coco_5k_r1", "normalize=True (cosine similarity) or float64 embeddings"),
        (np.float64, 1e160, "coco_5k_r1", "normalize=True (cosine similarity)"),
        (np.float64, 1e160, "coco_5k_medr", "normalize=True (cosine similarity)"),
    ],
)
def test_overflowing_products_are_named_with_the_fix(world, res, dtype, scale, metric, advice):
    img, cap = vectors(world)
    source = Embeddings(img.astype(dtype) * scale, cap.astype(dtype) * scale)
    with pytest.raises(EvaluationError, match="overflow") as info:
        quiet_evaluate(source, metric, resources=res)
    assert "the embeddings are finite" in str(info.value)
    assert str(info.value).endswith(advice)
    scaled = Embeddings(img.astype(dtype) * scale, cap.astype(dtype) * scale, normalize=True)
    got = quiet_evaluate(scaled, metric, resources=res).means()
    assert got == quiet_evaluate(Embeddings(img, cap, normalize=True), metric, resources=res).means()


@pytest.mark.parametrize("budget", [None, 10])  # one product, and blocks of a product too large for one
def test_products_that_underflow_to_zero_are_refused(world, res, monkeypatch, budget):
    if budget is not None:
        monkeypatch.setattr("eccv_metric.inputs.embeddings.MATRIX_BUDGET", budget)
    img, cap = (v.astype(np.float64) * 2.0**-540 for v in vectors(world))  # finite, non-zero; products are 0.0
    for metric in ("coco_5k_medr", "coco_5k_r1"):
        with pytest.raises(EvaluationError, match="dot product of the embeddings is 0.0.*underflow.*normalize=True"):
            quiet_evaluate(Embeddings(img, cap), metric, resources=res)
    assert quiet_evaluate(Embeddings(img, cap, normalize=True), "coco_5k_medr", resources=res).means()
