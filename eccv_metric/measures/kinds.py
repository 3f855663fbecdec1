"""What each kind of metric is: its label, scale, direction of improvement, aggregate and what it needs.

The registry of benchmarks names metrics after these kinds (``<benchmark>_r<K>``,
``<benchmark>_map_at_r``...); every front end formats a value through
:func:`format_value`, so a number is shown the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    ``scale``: ``fraction`` (in [0, 1], shown in percent), ``rank`` (1-based
    ranks, shown as they are) or ``correlation`` (in [-1, 1], shown as is).
    ``needs``: ``first_hit`` (the rank of the first positive within K items),
    ``depth`` (the first R items of the ranking), ``rank`` (the exact rank of
    the first positive) or ``pairs`` (similarities of rated pairs).
    """

    key: str
    label: str
    scale: str
    higher_is_better: bool
    aggregate: str
    needs: str
    formula: str


METRIC_KINDS: dict[str, MetricKind] = {
    k.key: k
    for k in (
        MetricKind(
            "recall", "R@K", "fraction", True, "mean", "first_hit", "R@K(q) = 1[a positive is among the first K]"
        ),
        MetricKind("rprecision", "R-Precision", "fraction", True, "mean", "depth", "R-P(q) = (1/R) sum_{i<=R} rel(i)"),
        MetricKind(
            "map_at_r",
            "mAP@R",
            "fraction",
            True,
            "mean",
            "depth",
            "mAP@R(q) = (1/R) sum_{i<=R} rel(i) P@i, P@i = (1/i) sum_{j<=i} rel(j)",
        ),
        MetricKind(
            "capped_rprecision",
            "PMRP",
            "fraction",
            True,
            "mean",
            "depth",
            "(1/m) sum_{i<=m} rel(i), m = min(R, cap)",
        ),
        MetricKind("medr", "MedR", "rank", False, "median", "rank", "median over queries of the best positive's rank"),
        MetricKind("meanr", "MeanR", "rank", False, "mean", "rank", "mean over queries of the best positive's rank"),
        MetricKind(
            "spearman",
            "Spearman rho",
            "correlation",
            True,
            "mean",
            "pairs",
            "mean over bootstrap samples of Spearman's rho (ratings vs similarities)",
        ),
        MetricKind("spearman_std", "rho std", "correlation", False, "std", "pairs", "std of rho over the samples"),
    )
}


def format_value(scale: str, value: float, width: int = 0) -> str:
    """One number as every front end shows it: fractions in percent (2 decimals), ranks as they are (2 decimals:
    a median can be x.5, a mean anything), correlations as they are (3 decimals)."""
    if scale == "fraction":
        text = f"{100 * value:.2f}"
    elif scale == "rank":
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text:>{width}}"


SCALE_NOTE = {"fraction": "percent", "rank": "rank", "correlation": "rho"}
