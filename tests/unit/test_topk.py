"""The top-k kernel against a full stable argsort written here, on the float values that break bit tricks.

``_by_score`` orders float32 candidates by one sort of packed 64-bit keys
(float64 and float16: a stable argsort). The reference is
``np.argsort(-row, kind="stable")``, which treats -0.0 and 0.0 as equal and
keeps ties in column order.
"""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric.core.errors import EvaluationError
from eccv_metric.kernels import topk
from eccv_metric.kernels import topk_choice
from eccv_metric.kernels.topk import order_by_score as _by_score
from eccv_metric.kernels.topk import stable_topk

STRATEGIES = [None, *topk_choice.STRATEGIES]  # None: the one calibrated (or forced by the environment)


def special_values(dtype: type) -> np.ndarray:
    """Signed zeros, the smallest subnormal and normal, the largest finite value, 1 and its neighbours."""
    f = np.finfo(dtype)
    one = dtype(1)
    values = [0.0, f.smallest_subnormal, f.tiny, f.max, one, 0.5, np.nextafter(one, dtype(2))]
    return np.array([v for x in values for v in (x, -x)], dtype=dtype)


def special_rows(rng: np.random.Generator, n_rows: int, n_cols: int, dtype: type) -> np.ndarray:
    """Rows drawn from the special values (many ties), some with a random finite value mixed in."""
    rows = rng.choice(special_values(dtype), (n_rows, n_cols))
    mixed = rng.random((n_rows, n_cols)) < 0.2
    rows[mixed] = rng.standard_normal(int(mixed.sum())).astype(dtype)
    return rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_by_score_is_a_stable_descending_sort(dtype):
    rng = np.random.default_rng(3)
    for trial in range(40):
        rows = special_rows(rng, 7, 60, dtype)
        width = int(rng.integers(1, 60))
        cols = np.sort(np.stack([rng.choice(60, width, replace=False) for _ in range(7)]), axis=1).astype(np.int32)
        reference = np.take_along_axis(cols, np.argsort(-rows[np.arange(7)[:, None], cols], 1, kind="stable"), 1)
        np.testing.assert_array_equal(_by_score(rows, np.arange(7), cols), reference, err_msg=f"trial {trial}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("k", [1, 5, 30, 49, 59])  # k < 60 items: the partition path, not a full sort
def test_stable_topk_equals_a_full_stable_argsort(dtype, k):
    rng = np.random.default_rng(k)
    rows = special_rows(rng, 50, 60, dtype)
    top, bad = stable_topk(rows, k)
    assert not bad.any()
    np.testing.assert_array_equal(top, np.argsort(-rows, axis=1, kind="stable")[:, :k])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_stable_topk_flags_rows_with_non_finite_values(value):
    rows = special_rows(np.random.default_rng(0), 6, 40, np.float32)
    rows[2, 7] = value
    for k in (1, 10, 40):
        assert np.flatnonzero(stable_topk(rows, k)[1]).tolist() == [2]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("n_cols", [2_000, 2_011, 4_127])  # a last chunk that is full, or shorter
@pytest.mark.parametrize("k", [1, 7, 31, 62])  # chunk widths 64 / 32 / 16 / 8 (4 * k * width <= n_cols)
def test_long_rows_through_chunk_maxima_equal_a_full_stable_argsort(dtype, n_cols, k, strategy):
    rng = np.random.default_rng(n_cols + k)
    rows = special_rows(rng, 40, n_cols, dtype)
    rows[0] = dtype(1)  # every item tied
    rows[1] = 0.0  # signed zeros only: equal scores
    rows[1, rng.random(n_cols) < 0.5] = -0.0
    rows[2, -1] = np.finfo(dtype).max  # the best item in the last, possibly short, chunk
    rows[3] = rng.integers(0, 3, n_cols)  # thousands tied at the k-th value, in every chunk
    rows[4] = np.arange(n_cols)  # increasing: the top-k sits in the last chunks
    rows[5] = -np.arange(n_cols)  # decreasing: in the first ones
    rows[6, ::9] = 7  # exactly one maximum in many chunks, more chunks tied at their maximum than k
    rows[7] = -1 - np.arange(n_cols) % 1000  # negative scores, and the best item in the last chunk:
    rows[7, -1] = 5  # a short last chunk's missing columns must rank below every score
    top, bad = stable_topk(rows, k, strategy=strategy)
    assert not bad.any()
    np.testing.assert_array_equal(top, np.argsort(-rows, axis=1, kind="stable")[:, :k])


@pytest.mark.parametrize("strategy", topk_choice.STRATEGIES)
@pytest.mark.parametrize(("n_cols", "k"), [(60, 5), (2_011, 7), (2_011, 31)])  # a short row; chunks of 64 / 16
def test_the_ties_past_a_top_k_are_those_of_a_full_stable_argsort(n_cols, k, strategy):
    """The items past each row's top-k that score its k-th score (the tie note's group at a list's end): their
    count always, and which they are where at most the cap (issue 59: counted in the top-k's own pass)."""
    rng = np.random.default_rng(n_cols * k)
    rows = special_rows(rng, 30, n_cols, np.float32)
    rows[0] = 1.0  # every item tied
    rows[1] = np.round(rng.standard_normal(n_cols), 1)  # a group at the k-th value, in chunks not taken too
    rows[2, ::9] = 7  # one maximum in many chunks, more chunks tied at their maximum than k
    rows[3] = np.arange(n_cols)  # no tie
    cap = 6
    top, bad, past = topk.ranked_rows(rows, k, strategy=strategy, past=cap)
    assert not bad.any() and past is not None
    full = np.argsort(-rows, axis=1, kind="stable")
    np.testing.assert_array_equal(top, full[:, :k])
    for i, row in enumerate(rows):
        want = set(np.flatnonzero(row == row[full[i, k - 1]]).tolist()) - set(full[i, :k].tolist())
        assert past.count[i] == len(want), i
        assert past.kept()[i] == (len(want) <= cap), i
        if len(want) <= cap:
            assert sorted(past.items[past.start[i] : past.start[i + 1]].tolist()) == sorted(want), i


def test_the_ties_past_each_list_follow_its_query_through_blocks_and_a_gallery(monkeypatch):
    """ranked_top puts each block's ties past the lists back in the order the queries were asked, as gallery
    positions (a restricted gallery), whichever blocks ran them."""
    from eccv_metric.kernels.scorers import MatrixScorer

    monkeypatch.setattr("eccv_metric.kernels.scorers.TOPK_ELEMENTS", 3 * 40)  # three rows per block
    rng = np.random.default_rng(5)
    scores = np.round(rng.standard_normal((23, 50)), 0).astype(np.float32)
    query_pos, gallery_pos = rng.permutation(23)[:17], np.sort(rng.permutation(50)[:40])
    found = topk.ranked_top(MatrixScorer(scores), query_pos, 4, gallery_pos, past=8)
    top, _, want = topk.ranked_rows(scores[query_pos][:, gallery_pos], 4, past=8)
    np.testing.assert_array_equal(found.top, gallery_pos[top])
    np.testing.assert_array_equal(found.past.count, want.count)
    for i in range(len(query_pos)):
        got = found.past.items[found.past.start[i] : found.past.start[i + 1]]
        assert sorted(got.tolist()) == sorted(gallery_pos[want.items[want.start[i] : want.start[i + 1]]].tolist())


def test_groups_ranked_in_one_pass_carry_the_ties_past_their_own_lists(monkeypatch):
    """top_ranked_groups (issue 60: queries of similar depth ranked together, a block holding several groups read
    once) gives each group its own depth's lists and the ties past them (issue 59), in the group's query order, as
    gallery positions: what ranked_rows gives the group's rows alone."""
    from eccv_metric.kernels.scorers import MatrixScorer

    monkeypatch.setattr("eccv_metric.kernels.scorers.TOPK_ELEMENTS", 3 * 40)  # three rows per block: groups mixed
    rng = np.random.default_rng(6)
    scores = np.round(rng.standard_normal((23, 50)), 0).astype(np.float32)
    query_pos, gallery_pos = rng.permutation(23)[:17], np.sort(rng.permutation(50)[:40])
    group = rng.integers(0, 3, len(query_pos))
    ks, pasts = [2, 9, 5], [8, 0, 64]
    found = topk.top_ranked_groups(MatrixScorer(scores), query_pos, ks, group, gallery_pos, None, None, pasts)
    for g, (k, cap) in enumerate(zip(ks, pasts, strict=True)):
        rows = query_pos[group == g]
        top, _, want = topk.ranked_rows(scores[rows][:, gallery_pos], k, past=cap)
        np.testing.assert_array_equal(found[g].top, gallery_pos[top])
        assert not found[g].bad.any() and (found[g].past is None) == (cap == 0)
        if cap:
            np.testing.assert_array_equal(found[g].past.count, want.count)
            for i in range(len(rows)):
                got = found[g].past.items[found[g].past.start[i] : found[g].past.start[i + 1]]
                assert sorted(got.tolist()) == sorted(gallery_pos[want.items[want.start[i] : want.start[i + 1]]])


def test_the_ties_past_a_constant_matrix_are_counted_in_memory_bounded_by_the_lists():
    """Every item of a constant matrix ties with every list's last one: each row's count is the rest of the row,
    and no row keeps items past its cap, so the ties past the lists take memory bounded by the lists, not by the
    n_queries x n_gallery pairs of equal scores (a block's pairs kept whole until the end took 21.8 GB and an OOM
    kill in CI on a 25,000 x 25,000 constant case)."""
    import tracemalloc

    from eccv_metric.kernels.scorers import MatrixScorer

    n_q, n_g, k, cap = 1_200, 20_000, 12, 64
    scores = np.zeros((n_q, n_g), np.float32)
    tracemalloc.start()
    try:
        found = topk.top_ranked_groups(MatrixScorer(scores), np.arange(n_q), [k], np.zeros(n_q, np.int64), pasts=[cap])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(found[0].top, np.tile(np.arange(k), (n_q, 1)))
    np.testing.assert_array_equal(found[0].past.count, np.full(n_q, n_g - k))
    assert len(found[0].past.items) == 0
    pairs = 2 * 8 * n_q * (n_g - k)  # every (row, column) pair past the lists as int64
    assert peak < pairs / 2, (peak, pairs)  # the blocks in flight (about 70 MB) are all it holds


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("col", [0, 1_000, 2_010])  # first chunk, a middle one, the short last one
def test_long_rows_with_non_finite_values_are_flagged(value, col, strategy):
    rows = special_rows(np.random.default_rng(1), 6, 2_011, np.float32)
    rows[3, col] = value
    for k in (1, 7, 62):
        assert np.flatnonzero(stable_topk(rows, k, strategy=strategy)[1]).tolist() == [3]


@pytest.fixture
def fresh_choices(monkeypatch):
    """No strategy forced by the environment, none kept from earlier tests (and none left to later ones)."""
    monkeypatch.delenv(topk_choice.ENV, raising=False)
    topk_choice.forget()
    yield
    topk_choice.forget()


def test_the_first_long_block_times_every_strategy_and_keeps_the_fastest(fresh_choices, monkeypatch):
    timed = []
    runs = {name: getattr(topk, f"{name}_topk".replace("chunks", "chunked")) for name in topk_choice.STRATEGIES}
    for name, fn in runs.items():
        monkeypatch.setattr(
            topk, fn.__name__, lambda *a, _fn=fn, _name=name, **kw: timed.append(_name) or _fn(*a, **kw)
        )
    rows = special_rows(np.random.default_rng(5), 30, 3_000, np.float32)
    reference = np.argsort(-rows, axis=1, kind="stable")[:, :20]
    np.testing.assert_array_equal(stable_topk(rows, 20)[0], reference)
    assert sorted(timed) == sorted(list(topk_choice.STRATEGIES) * topk_choice.ROUNDS)
    (choice,) = topk_choice.chosen().values()
    assert choice.strategy in topk_choice.STRATEGIES and "30 x 3,000 float32" in choice.why
    timed.clear()
    np.testing.assert_array_equal(stable_topk(rows[::-1], 20)[0], reference[::-1])  # same kind: no new timing
    assert timed == [choice.strategy]


def test_a_block_with_nan_is_not_used_to_choose(fresh_choices):
    rows = special_rows(np.random.default_rng(6), 8, 3_000, np.float32)
    rows[2, 5] = np.nan
    assert np.flatnonzero(stable_topk(rows, 20)[1]).tolist() == [2]
    assert topk_choice.chosen() == {}


@pytest.mark.parametrize("strategy", topk_choice.STRATEGIES)
def test_the_environment_forces_a_strategy(fresh_choices, monkeypatch, strategy):
    monkeypatch.setenv(topk_choice.ENV, strategy.upper())
    rows = special_rows(np.random.default_rng(7), 8, 3_000, np.float32)
    np.testing.assert_array_equal(stable_topk(rows, 20)[0], np.argsort(-rows, axis=1, kind="stable")[:, :20])
    assert topk_choice.chosen() == {}  # forced: nothing timed


def test_an_unknown_strategy_is_refused_with_the_choices(fresh_choices, monkeypatch):
    rows = np.zeros((2, 3_000), np.float32)
    with pytest.raises(EvaluationError, match="strategy='fast'.*auto, chunks, partition"):
        stable_topk(rows, 20, strategy="fast")
    monkeypatch.setenv(topk_choice.ENV, "fast")
    with pytest.raises(EvaluationError, match="ECCV_METRIC_TOPK='fast'"):
        stable_topk(rows, 20)
