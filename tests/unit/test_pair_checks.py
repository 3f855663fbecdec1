"""A pair scorer's output is checked where it is taken (eccv_metric.models.pairs.checks): one finite number per
pair comes back as a float32 copy; the wrong count, a 2-way logit pair, non-numeric values, NaN, an infinity
and a buffer the model reuses are each one error line naming the model."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric.models.pairs.checks import ScoreTaker
from eccv_metric.models.pairs.checks import checked_scores

SPEC = "python:tests.Model"


@pytest.mark.parametrize(
    "raw",
    [
        [1, 2.5, -3],
        (1.0, 2.5, -3.0),
        np.array([1, 2.5, -3], dtype=np.float64),
        np.array([[1], [2.5], [-3]], dtype=np.float16),
        np.array([1, 2, -3], dtype=np.int32),
    ],
)
def test_numbers_come_back_as_a_float32_copy(raw):
    out = checked_scores(raw, 3, SPEC)
    assert out.dtype == np.float32 and out.shape == (3,) and out.flags.owndata
    np.testing.assert_array_equal(out, np.array([1, 2.5 if not np.asarray(raw).dtype.kind == "i" else 2, -3]))
    if isinstance(raw, np.ndarray):
        assert not np.shares_memory(out, raw)


def test_torch_tensors_of_any_float_dtype():
    import torch

    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        out = checked_scores(torch.tensor([0.5, -1.25], dtype=dtype), 2, SPEC)
        np.testing.assert_array_equal(out, np.array([0.5, -1.25], np.float32))


@pytest.mark.parametrize(
    ("raw", "n", "match"),
    [
        ([1.0, 2.0], 3, r"returned shape \(2,\) for 3 pairs; it must return one score per pair, shape \(3,\)$"),
        (np.zeros((3, 2)), 3, r"returned shape \(3, 2\) for 3 pairs; .* \(a 2-way ITM head's logits\? take"),
        (np.zeros((1, 3)), 3, r"returned shape \(1, 3\) for 3 pairs; it must return one score per pair, shape \(3,\)$"),
        (["a", "b"], 2, r"returned string values; a pair scorer returns one number per pair"),
        (np.array([1, None], dtype=object), 2, r"returned Python object values"),
        (np.array([True, False]), 2, r"returned boolean values"),
        (np.array([1j, 2]), 2, r"returned complex values"),
        ([1.0, float("nan"), 2.0], 3, r"returned NaN for 1 of 3 pairs; every pair needs a finite score$"),
        ([1.0, float("inf"), float("-inf")], 3, r"returned an infinity for 2 of 3 pairs"),
        ([float("nan"), float("inf")], 2, r"returned NaN or an infinity for 2 of 2 pairs"),
        (np.array([1e300, 1.0]), 2, r"returned an infinity \(as float32\) for 1 of 2 pairs"),
        (None, 1, r"returned a NoneType; a pair scorer returns one number per pair"),
        ("0.5", 1, r"returned a str"),
        ([[1.0], [2.0, 3.0]], 2, r"returned a list numpy cannot read"),
    ],
)
def test_bad_output_is_one_line_naming_the_model(raw, n, match):
    with pytest.raises(EvaluationError, match=rf"^{SPEC}: score_pairs {match}") as err:
        checked_scores(raw, n, SPEC)
    assert "\n" not in str(err.value)


def test_a_reused_buffer_is_refused_a_fresh_array_each_call_is_not():
    take = ScoreTaker(SPEC)
    for i in range(3):  # a fresh array each call
        np.testing.assert_array_equal(take(np.full(4, float(i)), 4), np.full(4, i, np.float32))
    buffer = np.zeros(4)

    def reusing(value: float) -> np.ndarray:  # a model that writes into one preallocated array
        buffer[:] = value
        return buffer

    take = ScoreTaker(SPEC)
    first = take(reusing(1.0), 4)
    with pytest.raises(EvaluationError, match=rf"^{SPEC}: score_pairs returned a buffer it reuses \(this call's "):
        take(reusing(2.0), 4)
    np.testing.assert_array_equal(first, np.ones(4, np.float32))  # what was taken stays as it was
    # a view of the same storage, and a buffer overwritten after it was returned (the next output a copy)
    take = ScoreTaker(SPEC)
    big = np.arange(8.0)
    take(big[:4], 4)
    with pytest.raises(EvaluationError, match="a buffer it reuses"):
        take(big[2:6], 4)
    take = ScoreTaker(SPEC)
    kept = np.ones(4)
    take(kept, 4)
    kept[0] = 5.0
    with pytest.raises(EvaluationError, match="a buffer it reuses"):
        take(np.ones(4), 4)


def test_a_reused_torch_buffer_is_refused():
    import torch

    buffer = torch.zeros(4)
    take = ScoreTaker(SPEC)
    take(buffer, 4)
    buffer.fill_(3.0)
    with pytest.raises(EvaluationError, match="a buffer it reuses"):
        take(buffer, 4)
    take = ScoreTaker(SPEC)
    take(torch.zeros(4), 4)
    take(torch.ones(4), 4)  # fresh tensors: fine
