"""How results are shown: one number formatter for every front end (CLI table, Space, cards), by metric kind.

Fractions (R@K, mAP@R, R-Precision, PMRP) in percent, ranks (MedR, MeanR) as
they are, correlations (Spearman's rho) as they are; the unit is named in the
table's last column.
"""

from __future__ import annotations

from collections.abc import Mapping

from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.measures.kinds import SCALE_NOTE
from eccv_metric.measures.kinds import format_value

Means = Mapping[str, Mapping[str, float]]


def scale_of(metric: str) -> str:
    """``fraction``, ``rank`` or ``correlation`` for a metric name (unknown names: fraction)."""
    try:
        return metric_info(metric)[1].scale
    except ValueError:
        return "fraction"


def shown(metric: str, value: float) -> str:
    """A value as every front end shows it (see :func:`eccv_metric.measures.kinds.format_value`)."""
    return format_value(scale_of(metric), value)


def display_value(metric: str, value: float) -> float:
    """The number a table shows, as a float (percent for fractions), rounded to 2 decimals (3 for rho)."""
    return float(shown(metric, value))


def directions_of(results: Means) -> list[str]:
    present = {d for by_dir in results.values() for d in by_dir}
    return [d for d in DIRECTION_KINDS if d in present] or ["i2t", "t2i"]


def recall_curves(results: Means) -> list[dict]:
    """R@K curves of the results: one point ``{"K", "R@K (%)", "series"}`` per K, for each benchmark and direction
    with R@K at two or more Ks (what a plot of R@K against K shows)."""
    families: dict[str, list[str]] = {}
    for name in results:
        bench, kind = metric_info(name)
        if kind.key == "recall":
            families.setdefault(bench.name, []).append(name)
    return [
        {"K": int(name.rsplit("_r", 1)[1]), "R@K (%)": 100 * value, "series": f"{bench} {d}"}
        for bench, names in families.items()
        if len(names) > 1
        for name in names
        for d, value in results[name].items()
    ]


def format_table(results: Means) -> str:
    """Results as a plain-text table: one row per metric, one column per direction, and the unit."""
    width = max([len("metric")] + [len(k) for k in results])
    directions = directions_of(results)
    header = f"{'metric':<{width}}" + "".join(f"  {d:>7}" for d in directions) + "  unit"
    lines = [header, "-" * len(header)]
    for name, by_dir in results.items():
        cells = [shown(name, by_dir[d]) if d in by_dir else "-" for d in directions]
        lines.append(f"{name:<{width}}" + "".join(f"  {c:>7}" for c in cells) + f"  {SCALE_NOTE[scale_of(name)]}")
    return "\n".join(lines)
