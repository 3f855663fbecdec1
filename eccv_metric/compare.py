"""Compare two systems from their per-query results (``eccv-caption evaluate --per-query``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.stats import bootstrap_ci
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

    Queries are aligned by id (both systems must cover the same queries). COCO 1K
    metrics are resampled within their folds (stratified bootstrap).
    """
    rows = []
    for metric in [m for m in a if m in b]:
        for direction in [d for d in a[metric] if d in b[metric]]:
            qa, qb = a[metric][direction], b[metric][direction]
            ids_a, ids_b = np.asarray(qa["query_ids"]), np.asarray(qb["query_ids"])
            if set(ids_a.tolist()) != set(ids_b.tolist()):
                raise EvaluationError(f"{metric}/{direction}: the two systems were scored on different queries")
            order_b = np.argsort(ids_b)[np.searchsorted(np.sort(ids_b), ids_a)]
            va, vb = np.asarray(qa["values"], float), np.asarray(qb["values"], float)[order_b]
            groups = None
            if metric.startswith("coco_1k"):
                gt = gt or GroundTruth.from_wheel()
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
    return rows


def compare_files(a: str | Path, b: str | Path, *args: object) -> list[dict]:
    return compare(json.loads(Path(a).read_text()), json.loads(Path(b).read_text()), *args)  # type: ignore[arg-type]
