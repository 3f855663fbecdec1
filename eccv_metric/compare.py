"""Compare two systems from their per-query results (``eccv-caption evaluate --per-query``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.jsonio import int_list
from eccv_metric.jsonio import read_json
from eccv_metric.jsonio import require_object
from eccv_metric.positives import require_unique
from eccv_metric.stats import bootstrap_ci
from eccv_metric.stats import check_resampling
from eccv_metric.stats import holm
from eccv_metric.stats import paired_test


def compare(
    a: dict,
    b: dict,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "randomization",
    gt: GroundTruth | None = None,
) -> list[dict]:
    """One row per metric and direction found in both: means, CIs, mean difference, paired p-value.

    ``p_holm``: the p-values adjusted over all rows of the comparison
    (Holm-Bonferroni), for claims about several metrics at once.

    Queries are aligned by id (both systems must cover the same queries). COCO 1K
    metrics are resampled within their folds (stratified bootstrap).
    """
    check_resampling(n_resamples, confidence)
    gt = gt or GroundTruth.from_wheel()
    rows = []
    for metric in [m for m in a if m in b]:
        for direction in [d for d in a[metric] if d in b[metric]]:
            ids_a, va = per_query_arrays(a, metric, direction, gt, "A")
            ids_b, vb = per_query_arrays(b, metric, direction, gt, "B")
            if len(ids_a) != len(ids_b) or (np.sort(ids_a) != np.sort(ids_b)).any():
                raise EvaluationError(f"{metric}/{direction}: the two systems were scored on different queries")
            order_b = np.argsort(ids_b)[np.searchsorted(np.sort(ids_b), ids_a)]
            vb = vb[order_b]
            groups = None
            if metric.startswith("coco_1k"):
                groups = gt.query_fold(direction)[gt.query_index(direction).positions(ids_a)]
            ci_a = bootstrap_ci(va, n_resamples, confidence, seed, groups)
            ci_b = bootstrap_ci(vb, n_resamples, confidence, seed, groups)
            test = paired_test(va, vb, n_resamples, seed, method, confidence, groups)
            rows.append(
                {
                    "metric": metric,
                    "direction": direction,
                    "a": ci_a.mean,
                    "a_low": ci_a.low,
                    "a_high": ci_a.high,
                    "b": ci_b.mean,
                    "b_low": ci_b.low,
                    "b_high": ci_b.high,
                    "diff": test.diff,
                    "diff_low": test.low,
                    "diff_high": test.high,
                    "p_value": test.p_value,
                    "n_queries": len(va),
                }
            )
    if not rows:
        raise EvaluationError("the two files share no metric/direction")
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
    return rows


PER_QUERY_FORMAT = (
    'the per-query JSON of `eccv-caption evaluate --per-query` {metric: {direction: {"query_ids", "values"}}}'
)
_BENCH = (("coco_1k_", "coco"), ("coco_5k_", "coco"), ("cxc_r", "cxc"), ("eccv_", "eccv"))


def metric_queries(metric: str, direction: str, gt: GroundTruth) -> np.ndarray:
    """Dense indices of the queries a metric scores (all test queries of the direction when not known)."""
    if direction not in ("i2t", "t2i"):
        raise EvaluationError(f"{metric}: unknown direction {direction!r}")
    if metric.endswith("_medr"):
        raise EvaluationError(f"{metric} is a median: compare tests differences of means (use *_meanr)")
    for prefix, bench in _BENCH:
        if metric.startswith(prefix):
            return gt.positives[bench][direction].query.astype(np.int64)
    if metric == "pmrp":  # PM queries depend on the categories given: any test query
        return np.arange(len(gt.query_index(direction)))
    raise EvaluationError(f"unknown metric {metric!r} in the per-query file")


def per_query_arrays(
    results: dict, metric: str, direction: str, gt: GroundTruth, label: str
) -> tuple[np.ndarray, np.ndarray]:
    """(query ids, finite values) of one metric/direction; ids must be distinct queries of that metric."""
    where = f"{label} {metric}/{direction}"
    entry = results[metric][direction]
    if not isinstance(entry, dict) or set(entry) != {"query_ids", "values"}:
        raise EvaluationError(f"{where}: expected {{'query_ids': [...], 'values': [...]}}")
    ids = int_list(entry["query_ids"], label, f"{metric}/{direction} query_ids")
    values = entry["values"]
    if not isinstance(values, list) or any(type(v) not in (int, float) for v in values):
        raise EvaluationError(f"{where}: values must be a list of numbers")
    ids_arr, vals = np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float64)
    if len(ids_arr) != len(vals) or not len(ids_arr):
        raise EvaluationError(f"{where}: {len(ids_arr)} query ids but {len(vals)} values (one value per query)")
    if not np.isfinite(vals).all():
        bad = ids_arr[~np.isfinite(vals)]
        raise EvaluationError(f"{where}: non-finite values (NaN or inf) for queries {preview(bad)}")
    require_unique(ids_arr, f"{where} query")
    dense = gt.query_index(direction).positions(ids_arr)
    wrong = (dense < 0) | ~np.isin(dense, metric_queries(metric, direction, gt))
    if wrong.any():
        bad = ids_arr[wrong]
        raise EvaluationError(f"{where}: {len(bad)} id(s) are not queries of this metric: {preview(bad)}")
    return ids_arr, vals


def compare_files(a: str | Path, b: str | Path, *args: object) -> list[dict]:
    loaded = [require_object(read_json(p, PER_QUERY_FORMAT), p, PER_QUERY_FORMAT) for p in (a, b)]
    for path, results in zip((a, b), loaded, strict=True):
        for metric, by_dir in results.items():
            require_object(by_dir, path, f"{metric} to map directions to per-query values")
    return compare(loaded[0], loaded[1], *args)  # type: ignore[arg-type]
