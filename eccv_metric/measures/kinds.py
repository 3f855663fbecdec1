"""What each kind of metric is and does: its label, scale, direction of improvement, aggregate, what it needs, and
its behaviour: how deep a list it reads, how it scores, what random rankings give.

The registry of benchmarks names metrics after these kinds (``<benchmark>_r<K>``,
``<benchmark>_map_at_r``...); every front end formats a value through
:func:`format_value`, so a number is shown the same way everywhere. The engine
(:mod:`eccv_metric.engine.run`) and the chance check (:mod:`eccv_metric.api.chance`) read a kind's
``reads``, ``score``, ``short`` and ``chance`` and never branch on its name: adding a kind is its formulas
(:mod:`eccv_metric.measures.formulas`) and its line in :data:`METRIC_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from eccv_metric.measures import formulas

Array = np.ndarray


@dataclass(frozen=True)
class MetricKind:
    """One kind of metric.

    ``scale``: ``fraction`` (in [0, 1], shown in percent), ``rank`` (1-based
    ranks, shown as they are) or ``correlation`` (in [-1, 1], shown as is).
    ``needs``: ``first_hit`` (the rank of the first positive within K items),
    ``depth`` (the first R items of the ranking), ``rank`` (the exact rank of
    the first positive) or ``pairs`` (similarities of rated pairs).

    Behaviour (None where the kind has none): ``reads(k, cap, n_positives)``: how many items of each query's
    list a job reads (``n_positives``: a relevance's, one per query; :meth:`depth`: the most over several
    relevances); ``score(hits, first, n_positives, available, sizes, k, cap, width)``: per-query values and the
    mask of queries a list cannot decide (``width``: how many terms a sum along a list runs over, None: as the
    hits give, :func:`~eccv_metric.measures.formulas.map_at_r`); ``short(k, cap, sizes, where)``: what such a
    list lacks, in words; ``chance(n, r, k, cap)``: per-query mean and variance under a random ranking of ``n``
    items with ``r`` positives; ``chance_bound(n, r, k)``: a cheap upper bound of that mean (checked first).
    """

    key: str
    label: str
    scale: str
    higher_is_better: bool
    aggregate: str
    needs: str
    formula: str
    reads: Callable[[int | None, int | None, Array], Array] | None = None
    score: Callable[..., tuple[Array, Array]] | None = None
    short: Callable[[int | None, int | None, object, str], str] | None = None
    chance: Callable[[Array, Array, int | None, int | None], tuple[Array, Array]] | None = None
    chance_bound: Callable[[object, object, int], object] | None = None

    def depth(self, k: int | None, cap: int | None, n_positives: Sequence[Array]) -> int:
        """How many items of each list a job reads at most, over the queries of every relevance (at least 1)."""
        assert self.reads is not None
        return max((int(self.reads(k, cap, n).max(initial=1)) for n in n_positives), default=1)


def _k_deep(k: int | None, cap: int | None, n_positives: Array) -> Array:
    return np.full(len(n_positives), min(k, formulas.NO_HIT), dtype=np.int64)  # type: ignore[type-var]


def _r_deep(k: int | None, cap: int | None, n_positives: Array) -> Array:
    return np.asarray(n_positives, dtype=np.int64)


def _capped_r_deep(k: int | None, cap: int | None, n_positives: Array) -> Array:
    return _r_deep(k, cap, n_positives) if cap is None else np.minimum(n_positives, cap).astype(np.int64)


def _recall_short(k: int | None, cap: int | None, sizes: object, where: str) -> str:
    items = int(np.max(formulas.capped_k(k, sizes), initial=0))  # type: ignore[arg-type]
    return f"R@{k} needs {items} items{where} or a positive among them"


def _recall_chance(n: Array, r: Array, k: int | None, cap: int | None) -> tuple[Array, Array]:
    p = formulas.recall_at_chance(n, r, k)  # type: ignore[arg-type]
    return p, p * (1 - p)


def _rank_chance(n: Array, r: Array, k: int | None, cap: int | None) -> tuple[Array, Array]:
    return formulas.first_rank_at_chance(n, np.maximum(r, 1.0))  # a scored query has a positive


def _map_chance(n: Array, r: Array, k: int | None, cap: int | None) -> tuple[Array, Array]:
    mean = formulas.map_at_r_at_chance(np.maximum(n, 1.0), np.maximum(r, 1.0))
    return mean, mean  # values in [0, 1]: Var <= E[X^2] <= E[X]


def _rprecision_chance(n: Array, r: Array, k: int | None, cap: int | None) -> tuple[Array, Array]:
    n, r = np.maximum(n, 1.0), np.maximum(r, 1.0)
    return formulas.rprecision_at_chance(n, r, r if cap is None else np.minimum(r, cap))


METRIC_KINDS: dict[str, MetricKind] = {
    k.key: k
    for k in (
        MetricKind(
            "recall",
            "R@K",
            "fraction",
            True,
            "mean",
            "first_hit",
            "R@K(q) = 1[a positive is among the first K]",
            _k_deep,
            lambda hits, first, n_pos, available, sizes, k, cap, _: formulas.recall_at_k(first, available, k, sizes),
            _recall_short,
            _recall_chance,
            lambda n, r, k: k * r / np.maximum(n - k + 1, 1),  # union bound: p_q <= K R / (n - K + 1)
        ),
        MetricKind(
            "rprecision",
            "R-Precision",
            "fraction",
            True,
            "mean",
            "depth",
            "R-P(q) = (1/R) sum_{i<=R} rel(i)",
            _r_deep,
            lambda hits, first, n_pos, available, sizes, k, cap, _: formulas.r_precision(hits, n_pos, available),
            lambda k, cap, sizes, where: "R-Precision needs the first R items (R = its number of positives)",
            _rprecision_chance,
        ),
        MetricKind(
            "map_at_r",
            "mAP@R",
            "fraction",
            True,
            "mean",
            "depth",
            "mAP@R(q) = (1/R) sum_{i<=R} rel(i) P@i, P@i = (1/i) sum_{j<=i} rel(j)",
            _r_deep,
            lambda hits, first, n_pos, available, sizes, k, cap, w: formulas.map_at_r(hits, n_pos, available, w),
            lambda k, cap, sizes, where: "mAP@R needs the first R items (R = its number of positives)",
            _map_chance,
        ),
        MetricKind(
            "capped_rprecision",
            "PMRP",
            "fraction",
            True,
            "mean",
            "depth",
            "(1/m) sum_{i<=m} rel(i), m = min(R, cap)",
            _capped_r_deep,
            lambda hits, first, n_pos, available, sizes, k, cap, _: formulas.r_precision(hits, n_pos, available, cap),
            lambda k, cap, sizes, where: (
                f"PMRP needs the first min(R, {cap}) items" if cap else "PMRP needs the first R items"
            ),
            _rprecision_chance,
        ),
        MetricKind(
            "medr",
            "MedR",
            "rank",
            False,
            "median",
            "rank",
            "median over queries of the best positive's rank",
            chance=_rank_chance,
        ),
        MetricKind(
            "meanr",
            "MeanR",
            "rank",
            False,
            "mean",
            "rank",
            "mean over queries of the best positive's rank",
            chance=_rank_chance,
        ),
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
