"""Glue between the ``evaluate`` module ``eccv_map_at_r`` and the library (no metric math here).

Ranked lists go through evaluate's Arrow cache, but not through its slow
per-element encoder: a validated batch becomes one Arrow table (list<int64>
predictions, int64 references, string directions) written as is, and is read
back as Arrow (format ``"arrow"``) and handed to the library as numpy arrays.
Scores and embeddings never go through Arrow: they are keyword arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.ids import int_ids
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.inputs.choose import input_from_parts
from eccv_metric.inputs.list_ids import ranked_to_arrays
from eccv_metric.measures.results import Results

DIRECTIONS = tuple(DIRECTION_KINDS)
# the keyword arguments of compute(), as the module's users know them
MODULE_WORDS = {
    "rankings": "predictions / references / directions",
    "scores": "scores=",
    "caption_scores": "caption_scores=",
    "image_scores": "image_scores=",
    "image_embeddings": "image_embeddings=",
    "caption_embeddings": "caption_embeddings=",
    "image_ids": "image_ids=",
    "caption_ids": "caption_ids=",
    "normalize": "normalize=",
}


def check_keywords(given: Iterable[str], compute: Callable) -> None:
    """Keywords ``compute`` does not take are one line in evaluate's words, naming them and the accepted ones (not
    a ``TypeError`` from deep inside evaluate)."""
    accepted = [name for name in inspect.signature(compute).parameters if name != "self"]
    unknown = sorted(set(given) - set(accepted))
    if "rerank" in unknown:  # a two-stage result: the library's and the CLI's, not the module's
        raise EvaluationError(
            "the evaluate module does not score two-stage results (rerank=): use Python, "
            "eccv_metric.evaluate(eccv_metric.TwoStage(first_stage, i2t=...)), or the CLI, eccv-caption evaluate "
            "--scores FIRST.npy --rerank i2t=FILE.npz"
        )
    if unknown:
        raise EvaluationError(f"Bad inputs for evaluation module: {unknown}; compute() takes {', '.join(accepted)}")


def batch_table(predictions: object, references: object, directions: object, schema: pa.Schema) -> pa.Table:
    """Validate one batch and build its Arrow table; float or string ids are refused (evaluate would truncate)."""
    if predictions is None or references is None or directions is None:
        raise EvaluationError("each batch needs predictions (ranked ids), references (query ids) and directions")
    refs = int_ids(references, "references (query ids)", ndim=1)
    n = len(refs)
    dirs = pa.array([directions] * n if isinstance(directions, str) else directions, type=pa.string())
    if len(dirs) != n or len(predictions) != n:  # type: ignore[arg-type]
        raise EvaluationError(
            f"predictions ({len(predictions)}), references ({n}) and directions ({len(dirs)}) "  # type: ignore[arg-type]
            "must have one entry per query"
        )
    known = pc.fill_null(pc.is_in(dirs, value_set=pa.array(DIRECTIONS)), False)
    bad = pc.invert(known).to_numpy(zero_copy_only=False)
    if bad.any():
        raise EvaluationError(
            f"directions must be 'i2t', 't2i', 't2t' or 'i2i', got {sorted(set(dirs.filter(bad).to_pylist()))[:5]}"
        )
    flat, lengths = ranked_to_arrays(predictions, refs, "query")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise EvaluationError("more than 2^31 ranked ids in one batch: add them in several batches")
    columns = {
        "predictions": pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat)),
        "references": pa.array(refs),
        "directions": dirs,
    }
    return pa.Table.from_pydict(columns, schema=schema)


def arrays_by_direction(predictions: object, references: object, directions: object) -> dict[str, tuple]:
    """Arrow columns read back from the cache -> ``{direction: (query_ids, flat ids, lengths)}``."""
    pred = _combine(predictions)
    refs = _combine(references).to_numpy(zero_copy_only=False)
    dirs = _combine(directions)
    offsets = pred.offsets.to_numpy()
    flat = pred.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]] if len(refs) else np.zeros(0, np.int64)
    lengths = np.diff(offsets)
    out = {}
    for direction in DIRECTIONS:
        mask = pc.equal(dirs, direction).to_numpy(zero_copy_only=False) if len(refs) else np.zeros(0, bool)
        rows = np.flatnonzero(mask)
        if len(rows) == 0:
            continue
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        if hi - lo == len(rows):  # one contiguous block of queries: slices, no copies
            start, stop = offsets[lo] - offsets[0], offsets[hi] - offsets[0]
            out[direction] = (refs[lo:hi], flat[start:stop], lengths[lo:hi])
        else:
            out[direction] = (refs[mask], flat[np.repeat(mask, lengths)], lengths[mask])
    return out


def _combine(column: object) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column, pa.Table):
        return _combine(column.column(0))
    if isinstance(column, pa.Array):
        return column
    return pa.array(column)


def nest(flat: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """``{'eccv_map_at_r/i2t': x}`` -> the official nested form ``{'eccv_map_at_r': {'i2t': x}}``."""
    out: dict[str, dict[str, float]] = {}
    for key, value in flat.items():
        name, direction = key.rsplit("/", 1)
        out.setdefault(name, {})[direction] = value
    return out


def module_benchmarks(target_metrics: object, ks: object, benchmark: object, config: object) -> object:
    """The module's ``benchmark=`` and config as the one rule reads them (:mod:`eccv_metric.benchmarks.request`).

    ``benchmark=`` adds its default metrics to ``target_metrics``, as ``--benchmarks`` and ``evaluate()``'s
    ``benchmarks=`` do. A registered config (``evaluate.load(path, "mscoco_fg")``) is the module's own benchmark:
    scored when neither is given; ``target_metrics`` given beside it must be metrics of its collection (an ECCV
    Caption name on the MSCOCO-FG config is refused, not silently scored on another collection).
    """
    if benchmark is not None or config not in REGISTRY:
        return benchmark
    if target_metrics is None:
        return config
    collection = REGISTRY.get(config).collection  # type: ignore[arg-type]
    wrong = [r.name for r in parse_targets(target_metrics, ks, None) if r.benchmark.collection != collection]  # type: ignore[arg-type]
    if wrong:
        family = ", ".join(b.name for b in REGISTRY if b.collection == collection)
        raise EvaluationError(
            f"target_metrics {', '.join(wrong[:3])} are not metrics of {config} (the module's config): its metrics "
            f"are named after {family}; load the module without a config for the others"
        )
    return None


def compute(
    arrays: dict[str, tuple],
    parts: Mapping[str, object],
    target_metrics: object,
    ks: object,
    resources: Resources,
    benchmark: object = None,
    partial: bool = False,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> Results:
    """The module's compute: ranked lists (Arrow arrays) or the keyword inputs, scored by :func:`evaluate`.

    ``benchmark``: benchmarks whose default metrics are added to ``target_metrics`` (:func:`module_benchmarks`).
    """
    parts = dict(parts)
    parts["rankings"] = arrays or None
    source = input_from_parts(parts, MODULE_WORDS)
    return evaluate(
        source,
        target_metrics,  # type: ignore[arg-type]
        ks,  # type: ignore[arg-type]
        benchmarks=benchmark,  # type: ignore[arg-type]
        resources=resources,
        partial=partial,
        n_resamples=n_resamples,
        seed=seed,
    )
