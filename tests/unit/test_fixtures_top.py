"""The tests' partial stable sort (tests.fixtures.stable_top) equals a full stable argsort, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures import stable_top


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("depth", [0, 1, 3, 17, 60, 64, 200])
def test_stable_top_equals_a_full_stable_argsort(dtype, depth):
    rng = np.random.default_rng(depth)
    tied = rng.integers(-3, 4, (37, 64)).astype(dtype)  # heavy ties at every cut
    tied[0] = 0
    tied[1, ::2] = -0.0  # -0.0 and 0.0 are equal: the earlier column first
    smooth = rng.standard_normal((37, 64)).astype(dtype)
    for rows in (tied, smooth, np.asfortranarray(tied)):
        want = np.argsort(-rows, axis=1, kind="stable")[:, :depth]
        np.testing.assert_array_equal(stable_top(rows, depth, block=5), want)


def test_stable_top_refuses_what_it_cannot_order():
    rows = np.zeros((2, 5), np.float32)
    rows[1, 2] = np.nan
    for depth in (2, 5):  # a partial sort and a whole one
        with pytest.raises(ValueError, match="finite"):
            stable_top(rows, depth)
