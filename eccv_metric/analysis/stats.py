"""Uncertainty over queries and agreement between metrics.

- :func:`bootstrap_ci`: percentile bootstrap confidence interval of a mean over
  queries (resampling queries with replacement; optionally within groups such
  as COCO 1K folds, which keeps each fold's size: stratified bootstrap).
- :func:`paired_test`: two systems scored on the same queries; the per-query
  differences ``d = a - b`` are tested for a zero mean, two-sided, by a
  randomization (sign-flip) test or a paired bootstrap.
- :func:`kendall_tau_b`: rank correlation with ties (tau-b).
- :func:`holm`: Holm-Bonferroni adjusted p-values for several tests at once.

All resampling is seeded and vectorised in chunks of resamples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview

_CHUNK = 256


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
    """``n_resamples`` in [1, 1,000,000] (memory grows with it) and ``confidence`` in (0, 1)."""
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise EvaluationError(f"n_resamples must be an integer, not {n_resamples!r:.40}")
    if not 1 <= n_resamples <= MAX_RESAMPLES:
        raise EvaluationError(f"n_resamples must be between 1 and {MAX_RESAMPLES:,}, not {n_resamples}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float, np.floating)):
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


def resample_means(values: np.ndarray, n_resamples: int, seed: int = 0, groups: np.ndarray | None = None) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of ``values`` (within each group if given)."""
    values = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    strata = _strata(len(values), groups)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, _CHUNK):
        b = min(_CHUNK, n_resamples - start)
        total = np.zeros(b)
        for idx in strata:
            draws = rng.integers(0, len(idx), size=(b, len(idx)))
            total += values[idx][draws].sum(axis=1)
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
        rng = np.random.default_rng(seed + 1)
        extreme = 0
        for start in range(0, n_resamples, _CHUNK):
            k = min(_CHUNK, n_resamples - start)
            signs = rng.integers(0, 2, size=(k, len(d))) * 2 - 1
            extreme += int((np.abs((signs * d).mean(axis=1)) >= abs(observed) - tol).sum())
    elif method == "bootstrap":
        extreme = int((np.abs(boot - observed) >= abs(observed) - tol).sum())
    else:
        raise EvaluationError(f"method must be 'randomization' or 'bootstrap', not {method!r}")
    alpha = (1 - confidence) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha])
    return PairedResult(observed, float(low), float(high), (1 + extreme) / (1 + n_resamples), method, n_resamples)


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
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    iu = np.triu_indices(len(x), k=1)
    dx = (np.greater(x[:, None], x[None, :]).astype(np.int8) - np.less(x[:, None], x[None, :]))[iu]
    dy = (np.greater(y[:, None], y[None, :]).astype(np.int8) - np.less(y[:, None], y[None, :]))[iu]
    n0 = len(dx)
    n1, n2 = int((dx == 0).sum()), int((dy == 0).sum())
    denom = np.sqrt(float(n0 - n1) * float(n0 - n2))
    return float((dx * dy).sum() / denom) if denom > 0 else float("nan")


def tau_matrix(table: dict[str, dict[str, float]], metrics: list[str]) -> dict[str, dict[str, float]]:
    """tau-b between every pair of metrics over the models of ``table[model][metric]``."""
    models = list(table)
    cols = {m: np.array([table[r].get(m, np.nan) for r in models], dtype=np.float64) for m in metrics}
    return {m1: {m2: kendall_tau_b(cols[m1], cols[m2]) for m2 in metrics} for m1 in metrics}
