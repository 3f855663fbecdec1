"""Ks are whole numbers: Python, numpy and torch-like integers (0-d arrays and tensors included) are Ks; floats,
float arrays and tensors and booleans are refused, never truncated (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors


class ZeroDimTensor:
    """A torch-like 0-d tensor (torch is not imported): ``__index__`` works for integer values only."""

    ndim = 0

    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value

    def __index__(self):
        if isinstance(self.value, float):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return self.value

    def __int__(self):
        return int(self.value)  # what the old code used: truncates 5.7 to 5

    def __repr__(self):
        return f"tensor({self.value})"


@pytest.mark.parametrize(
    "ks",
    [np.float64(5.7), np.array(5.7), [np.array(5.7)], ZeroDimTensor(5.7), [ZeroDimTensor(5.7)], [5.0], [np.float32(5)]],
    ids=["np.float64", "0-d float array", "[0-d float array]", "float tensor", "[float tensor]", "[5.0]", "[f32]"],
)
def test_non_integral_ks_are_refused_not_truncated(world, res, ks):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="Ks must be"):
        quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res)


@pytest.mark.parametrize("ks", [np.array(5), np.int32(5), ZeroDimTensor(5), [ZeroDimTensor(5)], [np.array(5)]])
def test_integer_scalars_arrays_and_tensors_are_ks(world, res, ks):
    img, cap = vectors(world)
    got = quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res).means()
    want = quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", 5, resources=res).means()
    assert got == want and list(got) == ["coco_5k_r5"]


@pytest.mark.parametrize("ks", [[True], np.array(True), [np.array(True)], [np.bool_(True)]])
def test_boolean_ks_are_refused(world, res, ks):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="Ks must be"):
        quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res)
