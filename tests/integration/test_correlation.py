"""CxC Spearman bootstrap correlation: constructed cases, scipy as the oracle for rho, the sampling protocol."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from eccv_metric import EvaluationError
from eccv_metric import Metrics
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.measures.correlation import bootstrap_spearman
from eccv_metric.measures.correlation import spearman_rows

CXC = "../shared/data/cxc"


def test_hand_computed_rho_with_ties():
    # x ranks (1, 2.5, 2.5, 4), y ranks (1, 3, 2, 4): sum dx*dy = 4.5, sum dx^2 = 4.5, sum dy^2 = 5
    rho = spearman_rows(np.array([[1.0, 2.0, 2.0, 3.0]]), np.array([[1.0, 3.0, 2.0, 4.0]]))
    assert rho[0] == pytest.approx(4.5 / np.sqrt(4.5 * 5), abs=1e-15)


def test_rho_equals_scipy_on_tie_heavy_rows():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, size=(50, 40)).astype(float) / 2  # CxC-like ratings: many ties
    y = rng.integers(0, 4, size=(50, 40)).astype(float)
    expected = [stats.spearmanr(a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(spearman_rows(x, y), expected, rtol=0, atol=1e-12)


def _ratings(n_queries: int, per_query: int, seed: int = 0) -> Ratings:
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_queries), per_query)
    return Ratings("sts", q, rng.permutation(len(q)) + 10_000, rng.integers(0, 11, len(q)) / 2)


def test_model_equal_to_ratings_gives_one_and_independent_scores_about_zero():
    ratings = _ratings(400, 3)
    assert bootstrap_spearman(ratings, ratings.score, 200, seed=1).mean == pytest.approx(1.0, abs=1e-12)
    assert bootstrap_spearman(ratings, -ratings.score, 200, seed=1).mean == pytest.approx(-1.0, abs=1e-12)
    population = _ratings(6000, 3)  # 18,000 pairs: their own rho with independent noise is ~ N(0, 0.0075)
    noise = np.random.default_rng(3).standard_normal(len(population.score))
    result = bootstrap_spearman(population, noise, 1000, seed=1)
    assert abs(result.mean) < 0.03 and 0.005 < result.std < 0.03  # a sample of 3,000 pairs: sd ~ 1/sqrt(2999)


def test_each_sample_takes_half_the_queries_and_one_pair_each():
    """Similarity = query id: each sample's rho is then that of its chosen pairs; check the protocol per sample."""
    ratings = _ratings(41, 4, seed=2)
    sims = ratings.id_2.astype(float)  # distinct per pair: identifies the chosen pair
    first = bootstrap_spearman(ratings, sims, 300, seed=7)
    again = bootstrap_spearman(ratings, sims, 300, seed=7)
    other = bootstrap_spearman(ratings, sims, 300, seed=8)
    assert np.array_equal(first.samples, again.samples) and not np.array_equal(first.samples, other.samples)
    # reproduce the draws: with 41 queries, half = 20 distinct queries and one pair of each per sample
    rng = np.random.default_rng(7)
    keys = rng.random((300, 41))
    chosen = np.argpartition(keys, 19, axis=1)[:, :20]
    assert all(len(set(row)) == 20 for row in chosen.tolist())
    pick = rng.integers(0, np.full(chosen.shape, 4))
    pairs = chosen * 4 + pick  # ratings are grouped by query, 4 pairs each
    expected = [stats.spearmanr(ratings.score[p], sims[p]).statistic for p in pairs]
    np.testing.assert_allclose(first.samples, expected, rtol=0, atol=1e-12)


def test_undefined_rho_and_bad_similarities_raise():
    ratings = _ratings(20, 2)
    with pytest.raises(EvaluationError, match="constant"):
        bootstrap_spearman(ratings, np.ones(len(ratings.score)), 10)
    bad = ratings.score.copy()
    bad[5] = np.inf
    with pytest.raises(EvaluationError, match="NaN or inf"):
        bootstrap_spearman(ratings, bad, 10)
    with pytest.raises(EvaluationError, match="similarities for"):
        bootstrap_spearman(ratings, ratings.score[:-1], 10)
    with pytest.raises(EvaluationError, match="n_resamples"):
        bootstrap_spearman(ratings, ratings.score, 0)
    for seed in (-1, 1.5, True):
        with pytest.raises(EvaluationError, match="seed"):
            bootstrap_spearman(ratings, ratings.score, 10, seed)


@pytest.mark.parametrize("kind", ["sts", "sis", "sits"])
def test_real_ratings_through_a_pair_scorer(gt, kind):
    """A pair scorer that returns the human rating gives rho 1 on the real files; the rating plus noise less."""
    metrics = Metrics(ground_truth=gt, cxc_source=CXC)
    ratings = metrics.cxc_ratings(kind)
    lookup = {(a, b): s for a, b, s in zip(ratings.id_1.tolist(), ratings.id_2.tolist(), ratings.score, strict=True)}

    def oracle(a, b):
        return np.array([lookup[p] for p in zip(a.tolist(), b.tolist(), strict=True)])

    assert metrics.cxc_correlation(kind, oracle, 100).mean == pytest.approx(1.0, abs=1e-12)
    noisy = metrics.cxc_correlation(kind, lambda a, b: oracle(a, b) + np.random.default_rng(0).normal(0, 2, len(a)))
    assert 0.3 < noisy.mean < 0.95
