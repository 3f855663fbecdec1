"""Uncertainty over queries and agreement between metrics.

- :func:`bootstrap_ci`: percentile bootstrap confidence interval of a mean over
  queries (resampling queries with replacement; optionally within groups such
  as COCO 1K folds, which keeps each fold's size: stratified bootstrap).
- :func:`paired_test`: two systems scored on the same queries; the per-query
  differences ``d = a - b`` are tested for a zero mean, two-sided, by a
  randomization (sign-flip) test or a paired bootstrap.
- :func:`kendall_tau_b`: rank correlation with ties (tau-b).
- :func:`holm`: Holm-Bonferroni adjusted p-values for several tests at once.

All resampling is seeded and vectorised in chunks of resamples. A resampled
mean depends only on how often each distinct value is drawn, so values with
few distinct levels (R@K: 0 and 1) are resampled by drawing those counts
(multinomial per stratum; binomial sign counts for the randomization test):
the same distribution at O(distinct values) per resample instead of
O(queries). The work, resamples x (distinct values or queries), is bounded
by :data:`MAX_DRAWS`; beyond it the error says how many resamples fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.options import require_int

_CHUNK = 256
_BLOCK = 1 << 22  # random draws per chunk of resamples
MAX_DRAWS = 4_000_000_000  # random draws one resampling may take (about a minute)


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    confidence: float
    n_resamples: int


@dataclass(frozen=True)
class PairedResult:
    """Mean difference a - b, its bootstrap interval, and the two-sided p-value of 'no difference'."""

    diff: float
    low: float
    high: float
    p_value: float
    method: str
    n_resamples: int


MAX_RESAMPLES = 1_000_000


def check_resampling(n_resamples: object, confidence: object) -> None:
    """``n_resamples`` in [1, 1,000,000] (Python or numpy integer) and ``confidence`` in (0, 1)."""
    require_int(n_resamples, "n_resamples", 1, MAX_RESAMPLES)
    if isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, (int, float, np.integer, np.floating)):
        raise EvaluationError(f"confidence must be a number in (0, 1), not {confidence!r:.40}")
    if not 0 < float(confidence) < 1:
        raise EvaluationError(f"confidence must be in (0, 1) (e.g. 0.95), not {confidence}")


def _check_values(values: np.ndarray, what: str) -> None:
    if values.ndim != 1 or len(values) == 0:
        raise EvaluationError(f"{what} must be a non-empty 1-D array of per-query scores")
    if not np.isfinite(values).all():
        raise EvaluationError(f"{what} hold NaN or inf (at positions {preview(np.flatnonzero(~np.isfinite(values)))})")


def _strata(n: int, groups: np.ndarray | None) -> list[np.ndarray]:
    if groups is None:
        return [np.arange(n)]
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise EvaluationError(f"groups must give one group per query ({n}), got shape {groups.shape}")
    return [np.flatnonzero(groups == g) for g in np.unique(groups)]


def _levels(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct values, their counts) when there are few enough to draw counts (at most an eighth of the values)."""
    distinct, counts = np.unique(values, return_counts=True)
    return (distinct, counts) if 8 * len(distinct) <= len(values) else None


def _check_work(n_resamples: int, cost: int, what: str) -> None:
    if n_resamples * cost > MAX_DRAWS:
        raise EvaluationError(
            f"{what}: {n_resamples:,} resamples x {cost:,} random draws each exceed {MAX_DRAWS:,}; "
            f"use at most {max(1, MAX_DRAWS // cost):,} resamples (n_resamples / --n-resamples)"
        )


def resample_means(values: np.ndarray, n_resamples: int, seed: int = 0, groups: np.ndarray | None = None) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of ``values`` (within each group if given)."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    plans = [(idx, _levels(values[idx])) for idx in _strata(len(values), groups)]
    cost = sum(len(idx) if levels is None else len(levels[0]) for idx, levels in plans)
    _check_work(n_resamples, cost, "bootstrap")
    chunk = max(_CHUNK, _BLOCK // max(1, cost))
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        total = np.zeros(b)
        for idx, levels in plans:
            if levels is None:
                draws = rng.integers(0, len(idx), size=(b, len(idx)))
                total += values[idx][draws].sum(axis=1)
            else:  # how often each distinct value is drawn
                distinct, counts = levels
                total += rng.multinomial(len(idx), counts / len(idx), size=b) @ distinct
        out[start : start + b] = total / len(values)
    return out


def bootstrap_ci(
    values: np.ndarray,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> Interval:
    """Percentile bootstrap interval of the mean of per-query ``values``."""
    values = np.asarray(values, dtype=np.float64)
    _check_values(values, "values")
    check_resampling(n_resamples, confidence)
    means = resample_means(values, n_resamples, seed, groups)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(values.mean()), float(low), float(high), confidence, n_resamples)


def paired_test(
    a: np.ndarray,
    b: np.ndarray,
    n_resamples: int = 10_000,
    seed: int = 0,
    method: str = "randomization",
    confidence: float = 0.95,
    groups: np.ndarray | None = None,
) -> PairedResult:
    """Is mean(a) != mean(b) on the same queries?

    ``randomization``: under the null each difference's sign is arbitrary;
    ``p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + B)`` over B random sign
    vectors ``s``. ``bootstrap``: resample queries;
    ``p = (1 + #{|mean(d*) - mean(d)| >= |mean(d)|}) / (1 + B)``.
    The interval is the percentile bootstrap interval of the mean difference.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise EvaluationError("a and b must be per-query scores of the same queries, in the same order")
    _check_values(a, "a")
    _check_values(b, "b")
    check_resampling(n_resamples, confidence)
    d = a - b
    observed = float(d.mean())
    boot = resample_means(d, n_resamples, seed, groups)
    tol = 1e-12 * max(1.0, abs(observed))
    if method == "randomization":
        extreme = _sign_flips(d, n_resamples, seed + 1, abs(observed) - tol)
    elif method == "bootstrap":
        extreme = int((np.abs(boot - observed) >= abs(observed) - tol).sum())
    else:
        raise EvaluationError(f"method must be 'randomization' or 'bootstrap', not {method!r}")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return PairedResult(observed, float(low), float(high), (1 + extreme) / (1 + n_resamples), method, n_resamples)


def _sign_flips(d: np.ndarray, n_resamples: int, seed: int, threshold: float) -> int:
    """How many of ``n_resamples`` random sign vectors s give ``|mean(s * d)| >= threshold``.

    With few distinct ``|d|`` levels, the sum is drawn as ``sum_j |d_j| (2 H_j - c_j)`` with
    ``H_j ~ Binomial(c_j, 1/2)`` (c_j: how many differences have that size; zeros add nothing).
    """
    rng = np.random.default_rng(seed)
    size = np.abs(d)
    levels = _levels(size[size > 0]) if (size > 0).any() else (np.zeros(1), np.zeros(1, np.int64))
    cost = len(d) if levels is None else len(levels[0])
    _check_work(n_resamples, cost, "randomization test")
    chunk = max(_CHUNK, _BLOCK // max(1, cost))
    extreme = 0
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        if levels is None:
            signs = rng.integers(0, 2, size=(k, len(d))) * 2 - 1
            means = (signs * d).mean(axis=1)
        else:
            distinct, counts = levels
            means = ((2 * rng.binomial(counts, 0.5, size=(k, len(counts))) - counts) @ distinct) / len(d)
        extreme += int((np.abs(means) >= threshold).sum())
    return extreme


def holm(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni step-down adjusted p-values (family-wise error rate), in the input order.

    With p sorted ascending, ``p_adj(i) = max_{j <= i} min(1, (m - j + 1) * p(j))`` (1-based, m tests);
    rejecting where ``p_adj <= alpha`` controls the FWER at ``alpha``.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or not np.isfinite(p).all() or ((p < 0) | (p > 1)).any():
        raise EvaluationError("p-values must be a list of numbers in [0, 1]")
    order = np.argsort(p, kind="stable")
    m = len(p)
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b: ``(C - D) / sqrt((n0 - n1) * (n0 - n2))``.

    C / D = concordant / discordant pairs, n0 = n(n-1)/2, n1 / n2 = pairs tied
    in x / in y. Items with a NaN in either are left out (missing); +-inf are
    ordinary extreme values (compared, not subtracted). NaN when undefined
    (fewer than two items, or a constant column).

    Knight's algorithm, O(n log^2 n) time and O(n) memory: sort by (x, y);
    D = the inversions of y in that order (pairs tied in x are in order, so
    never counted); with n3 = pairs tied in both, ``C + D = n0 - n1 - n2 + n3``.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = len(x)
    rx = np.unique(x, return_inverse=True)[1].ravel().astype(np.int64)
    ry = np.unique(y, return_inverse=True)[1].ravel().astype(np.int64)
    order = np.lexsort((ry, rx))
    n0 = n * (n - 1) // 2
    n1, n2 = _tied_pairs(rx), _tied_pairs(ry)
    n3 = _tied_pairs(rx * (n + 1) + ry)
    discordant = _inversions(ry[order])
    denom = np.sqrt(float(n0 - n1) * float(n0 - n2))
    return float((n0 - n1 - n2 + n3 - 2 * discordant) / denom) if denom > 0 else float("nan")


def _tied_pairs(keys: np.ndarray) -> int:
    counts = np.unique(keys, return_counts=True)[1].astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _inversions(a: np.ndarray) -> int:
    """Pairs i < j with a[i] > a[j], for non-negative int64 ``a`` (bottom-up merge sort, vectorised per level)."""
    n = len(a)
    a = a.copy()
    total, width = 0, 1
    pos = np.arange(n)
    while width < n:
        block = pos // (2 * width)
        right = pos % (2 * width) >= width
        keys = block * (n + 1) + a  # each width-run of ``a`` is sorted: so are the left runs' keys, concatenated
        left_keys = keys[~right]
        not_greater = np.searchsorted(left_keys, keys[right], side="right")
        left_end = np.searchsorted(left_keys, (block[right] + 1) * (n + 1), side="left")
        total += int((left_end - not_greater).sum())
        a = np.sort(keys) % (n + 1)  # merge each pair of runs
        width *= 2
    return total


def tau_matrix(table: dict[str, dict[str, float]], metrics: list[str]) -> dict[str, dict[str, float]]:
    """tau-b between every pair of metrics over the models of ``table[model][metric]``."""
    models = list(table)
    cols = {m: np.array([table[r].get(m, np.nan) for r in models], dtype=np.float64) for m in metrics}
    return {m1: {m2: kendall_tau_b(cols[m1], cols[m2]) for m2 in metrics} for m1 in metrics}
