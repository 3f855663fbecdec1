"""Compare two systems from their per-query results (``eccv-caption evaluate --per-query``), for every benchmark.

A metric is compared when it is a mean over queries (every R@K, mAP@R,
R-Precision, PMRP, MeanR of every registered benchmark); the others are
skipped with the reason (MedR is a median; a correlation's values are
bootstrap samples, whose mean and spread are already its estimate and
uncertainty). Queries are aligned by id; both systems must cover the same
queries, and every id must be a query of its metric on its benchmark (told from the benchmark's ground truth,
:class:`~eccv_metric.benchmarks.resources.Resources`: the FG files for MSCOCO-FG / Flickr30K-FG, the CxC ratings
for CxC t2t / i2i, COCO categories for PM, as ``evaluate`` reads them). COCO 1K metrics are resampled within
their folds (stratified bootstrap), and only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eccv_metric.analysis.stats import bootstrap_ci
from eccv_metric.analysis.stats import check_resampling
from eccv_metric.analysis.stats import holm
from eccv_metric.analysis.stats import paired_test
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.benchmarks.names import resolve_name
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core import progress
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import INT64_MAX
from eccv_metric.core.ids import require_unique
from eccv_metric.core.ids import too_large
from eccv_metric.core.jsonio import int_list
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.engine.plan import plan
from eccv_metric.groundtruth.split import GroundTruth

PER_QUERY_FORMAT = (
    'the per-query JSON of `eccv-caption evaluate --per-query` {metric: {direction: {"query_ids", "values"}}}'
)


def comparable(metric: str) -> str | None:
    """Why a metric's per-query values are not compared (None: they are)."""
    bench, kind = metric_info(metric)
    if kind.aggregate == "median":
        return "a median (compare tests differences of means: use *_meanr)"
    if kind.needs == "pairs":
        return "a correlation: its values are bootstrap samples, not queries"
    return None


def compare(
    a: Mapping[str, Mapping[str, Mapping]],
    b: Mapping[str, Mapping[str, Mapping]],
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    method: str = "randomization",
    gt: GroundTruth | None = None,
    skipped: dict[str, str] | None = None,
    resources: Resources | None = None,
) -> list[dict]:
    """One row per comparable metric and direction found in both: means, CIs, mean difference, paired p-value.

    ``p_holm``: the p-values adjusted over all rows of the comparison
    (Holm-Bonferroni), for claims about several metrics at once. ``skipped``
    (filled in when given): metric -> why it was not compared. ``resources``: the ground truth that tells each
    metric's queries (default: ``gt``'s, or the wheel's, with CxC and FG from their canonical files).
    """
    check_resampling(n_resamples, confidence)
    if resources is None:
        resources = ResourceOptions(ground_truth=gt).resources()
    gt = resources.gt
    rows = []
    for metric in progress.iterate([m for m in a if m in b], "comparing", unit="metric", tick=True):
        reason = comparable(metric)
        if reason is not None:
            if skipped is not None:
                skipped[metric] = reason
            continue
        for direction in [d for d in a[metric] if d in b[metric]]:
            ids_a, va = per_query_arrays(a, metric, direction, resources, "A")
            ids_b, vb = per_query_arrays(b, metric, direction, resources, "B")
            if len(ids_a) != len(ids_b) or (np.sort(ids_a) != np.sort(ids_b)).any():
                raise EvaluationError(f"{metric}/{direction}: the two systems were scored on different queries")
            order_b = np.argsort(ids_b)[np.searchsorted(np.sort(ids_b), ids_a)]
            vb = vb[order_b]
            groups = strata(metric, direction, ids_a, gt)
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
                    "stratified": groups is not None,
                }
            )
    if not rows:
        why = "; ".join(f"{m}: {r}" for m, r in (skipped or {}).items())
        raise EvaluationError("the two files share no comparable metric/direction" + (f" ({why})" if why else ""))
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
    return rows


def strata(metric: str, direction: str, ids: np.ndarray, gt: GroundTruth) -> np.ndarray | None:
    """The groups a metric's queries are resampled within: COCO 1K's folds (stratified bootstrap), else None."""
    bench, _ = metric_info(metric)
    if not any(t.restriction == "coco_1k_folds" for t in bench.tasks):
        return None
    kind = DIRECTION_KINDS[direction][0]
    return gt.fold(kind)[gt.index(kind).positions(ids)]


def intervals(
    per_query: Mapping[str, Mapping[str, Mapping]],
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    resources: Resources | None = None,
) -> list[dict]:
    """One system's bootstrap interval of each comparable metric and direction, as :func:`compare` makes each
    side's (the same checks of the values, the same strata, the same seed): rows of ``metric``, ``direction``,
    ``mean``, ``low``, ``high``, ``n_queries``, ``stratified``."""
    check_resampling(n_resamples, confidence)
    resources = resources if resources is not None else ResourceOptions().resources()
    rows = []
    for metric, by_dir in per_query.items():
        if comparable(metric) is not None:
            continue
        for direction in by_dir:
            ids, values = per_query_arrays(per_query, metric, direction, resources, "the run")
            groups = strata(metric, direction, ids, resources.gt)
            ci = bootstrap_ci(values, n_resamples, confidence, seed, groups)
            rows.append({"metric": metric, "direction": direction, "mean": ci.mean, "low": ci.low, "high": ci.high,
                         "n_queries": len(values), "stratified": groups is not None})  # fmt: skip
    return rows


def per_query_arrays(
    results: Mapping, metric: str, direction: str, resources: Resources, label: str
) -> tuple[np.ndarray, np.ndarray]:
    """(query ids, finite values) of one metric/direction; ids must be distinct queries of the metric."""
    where = f"{label} {metric}/{direction}"
    bench, kind = metric_info(metric)
    if direction not in bench.directions:
        raise EvaluationError(f"{where}: {bench.name} has no {direction} direction ({', '.join(bench.directions)})")
    entry = results[metric][direction]
    if not isinstance(entry, dict) or not {"query_ids", "values"} <= set(entry) <= {"query_ids", "values", "aggregate"}:
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
    low, high = (0.0, 1.0) if kind.scale == "fraction" else (1.0, np.inf)
    outside = (vals < low) | (vals > high)
    if outside.any():
        raise EvaluationError(
            f"{where}: values outside [{low:g}, {high:g}] (a {kind.label} per query; fractions, not percent) for "
            f"queries {preview(ids_arr[outside])}"
        )
    require_unique(ids_arr, f"{where} query")
    wrong = ~np.isin(ids_arr, metric_queries(resources, metric, direction))
    if wrong.any():
        raise EvaluationError(
            f"{where}: {int(wrong.sum())} id(s) are not queries of this metric: {preview(ids_arr[wrong])}"
        )
    return ids_arr, vals


def metric_queries(resources: Resources, metric: str, direction: str) -> np.ndarray:
    """The ids of every query a metric can score in a direction (what ``evaluate`` scores without ``partial``):
    the queries with positives of each relation it reads, on its benchmark's collection (a ranking metric)."""
    try:
        jobs = [j for j in plan(resolve_name(metric, ()), resources, (direction,)) if j.direction == direction]
    except (EvaluationError, OSError) as exc:
        raise EvaluationError(
            f"{metric}/{direction}: its queries are told from its ground truth, as evaluate read it: {exc}"
        ) from None
    found = [job.view.queries.ids[rel.query] for job in jobs if job.view is not None for rel in job.relevances]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)


def compare_files(a: str | Path, b: str | Path, *args: object, **kwargs: object) -> list[dict]:
    """:func:`compare` of two per-query JSON files (errors name the file)."""
    loaded = [require_object(read_json(p, PER_QUERY_FORMAT), p, PER_QUERY_FORMAT) for p in (a, b)]
    for path, results in zip((a, b), loaded, strict=True):
        if set(results) and set(results) <= set(DIRECTION_KINDS):
            raise EvaluationError(
                f"{path} is a rankings file (evaluate --rankings), not per-query values: give the per-query file "
                "(evaluate --per-query)"
            )
        for metric, by_dir in results.items():
            require_object(by_dir, path, f"{metric} to map directions to per-query values")
            if metric == "provenance" or any(type(v) in (int, float) for v in by_dir.values()):
                raise EvaluationError(
                    f"{path} is a results file (evaluate -o), not per-query values: give the per-query file "
                    "(evaluate --per-query)"
                )
            try:
                metric_info(metric)
            except EvaluationError:
                raise EvaluationError(
                    f"{path}: unknown metric {metric!r} (not a metric of a registered benchmark)"
                ) from None
            for direction, entry in by_dir.items():  # ids numpy cannot hold: named with the file, not as A / B
                ids = entry.get("query_ids") if isinstance(entry, dict) else None
                big = (
                    next((i for i in ids if type(i) is int and abs(i) > INT64_MAX), None)
                    if isinstance(ids, list)
                    else None
                )
                if big is not None:
                    raise EvaluationError(f"{path}: {too_large(f'{metric}/{direction} query_ids', big)}")
    return compare(loaded[0], loaded[1], *args, **kwargs)  # type: ignore[arg-type]
