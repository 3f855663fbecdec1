"""The files of one run beside its results, checked before ``push-results`` publishes them: its per-query values
(the same run: the digest its provenance recorded, or each number's aggregate over them) and its evidence folder
(``evaluate --evidence``: the run's own by the digest of its manifest, every file whole)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.provenance import json_digest
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import load_evidence
from eccv_metric.hub.eval_tasks import HubTask

PER_QUERY = 'the per-query JSON of `evaluate --per-query` {metric: {direction: {"query_ids", "values"}}}'


def read_per_query(path: str, results: str, values: list[tuple[HubTask, float]], digest: object) -> dict:
    """The per-query values of the same run as the numbers ``values`` of the results file ``results``: the digest
    its provenance recorded, or (a file written before digests) each published number's aggregate over them; one
    line when they differ."""
    raw = require_object(read_json(path, PER_QUERY), path, PER_QUERY)
    if "provenance" in raw or any(not isinstance(v, dict) or not all(isinstance(e, dict) for e in v.values())
                                  for v in raw.values()):  # fmt: skip
        raise EvaluationError(f"{path} is not per-query values ({PER_QUERY}): give the file of evaluate --per-query")
    another = f"{path} holds the per-query values of another run than {results}"
    if isinstance(digest, str):
        if digest != json_digest(raw):
            raise EvaluationError(f"{another} (its digest differs from the one the results recorded); {_SAME}")
    for task, value in values:
        entry = raw.get(task.metric, {}).get(task.direction)
        if entry is None:
            raise EvaluationError(f"{path} has no per-query values of {task.metric}/{task.direction}, a published "
                                  f"number of {results}; {_SAME}")  # fmt: skip
        held = _arrays(path, task.metric, task.direction, entry)[1]
        aggregate = {"mean": np.mean, "median": np.median, "std": np.std}.get(entry.get("aggregate", "mean"))
        got = float(aggregate(held)) if aggregate is not None else math.nan
        if not math.isclose(got, value, rel_tol=1e-12, abs_tol=1e-15):
            raise EvaluationError(
                f"{another}: its {task.metric}/{task.direction} values give {got}, the results {value}; {_SAME}"
            )
    for metric, by_dir in raw.items():
        for direction, entry in by_dir.items():
            _arrays(path, metric, direction, entry)
    return raw


_SAME = "give the --per-query file evaluate wrote in the same run as the results"


def read_run_evidence(
    results: str, provenance: dict, notes: list[str], given: str | Path | None, digest: object
) -> Evidence | None:
    """The evidence folder of the run of the results file ``results`` (``given``, or the one its ``provenance``
    records), checked to be this run's (the digest of its manifest) and whole (every file's sha256, dtype and
    shape); None, with a line in ``notes``, when the run kept none or its folder is gone."""
    recorded = provenance.get("evidence") if isinstance(provenance.get("evidence"), dict) else {}
    folder = given if given is not None else recorded.get("folder")
    if folder is None:
        notes.append(
            f"no evidence: {results} was scored without evaluate --evidence DIR, so the details hold per-query "
            "values only (anyone can check a number is their mean, not recompute it)"
        )
        return None
    if given is None and not Path(str(folder)).is_dir():
        notes.append(f"no evidence: the run's evidence folder {folder} is gone (give evidence= where it is now); "
                         "the details hold per-query values only")  # fmt: skip
        return None
    found = load_evidence(folder)
    if not isinstance(digest, str):
        raise EvaluationError(f"{results} records no evidence digest (evaluate ran without --evidence): {folder} "
                              "cannot be matched with its numbers; evaluate again with --evidence DIR")  # fmt: skip
    if found.digest != digest:
        raise EvaluationError(
            f"{folder} is the evidence of another run than {results} (its evidence.json is not the one the "
            "results' digest records); give the --evidence folder of the same run"
        )
    for part in found.inputs:
        part.arrays()  # every file checked before anything is sent
    return found


def _arrays(path: str, metric: str, direction: str, entry: dict) -> tuple[np.ndarray, np.ndarray]:
    """(query ids, values) of one metric/direction of a per-query file, checked: ids whole numbers, values
    finite, one value per id."""
    ids, values = entry.get("query_ids"), entry.get("values")
    where = f"{path}: {metric}/{direction}"
    if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values) or not ids:
        raise EvaluationError(f"{where}: expected as many query_ids as values (a non-empty list each)")
    if any(type(i) is not int or abs(i) >= 2**63 for i in ids):
        raise EvaluationError(f"{where}: query_ids must be whole numbers (64-bit)")
    if any(type(v) not in (int, float) or not math.isfinite(v) for v in values):
        raise EvaluationError(f"{where}: values must be finite numbers")
    return np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float64)
