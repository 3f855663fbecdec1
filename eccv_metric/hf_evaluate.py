"""Glue between the ``evaluate`` module ``eccv_map_at_r`` and the library (no metric math here).

Ranked lists go through evaluate's Arrow cache, but not through its slow
per-element encoder: a validated batch becomes one Arrow table (list<int64>
predictions, int64 references, string directions) written as is, and is read
back as Arrow (format ``"arrow"``) and handed to the library as numpy arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eccv_metric import EVALUATE_MODULE_DIR  # noqa: F401 (re-exported)
from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import DIRECTIONS
from eccv_metric.metrics import Metrics
from eccv_metric.metrics import Results
from eccv_metric.ranking import int_ids
from eccv_metric.ranking import ranked_to_arrays

_METRICS: dict[tuple, Metrics] = {}
_FG: dict[tuple, object] = {}
FG_BENCHMARKS = ("mscoco_fg", "flickr30k_fg")


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
        raise EvaluationError(f"directions must be 'i2t' or 't2i', got {sorted(set(dirs.filter(bad).to_pylist()))[:5]}")
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


def flatten(results: Results) -> dict[str, float]:
    """``{'eccv_map_at_r': {'i2t': x}}`` -> ``{'eccv_map_at_r/i2t': x}``."""
    return {f"{name}/{d}": value for name, by_dir in results.items() for d, value in by_dir.items()}


def nest(flat: Mapping[str, float]) -> Results:
    """The inverse of :func:`flatten`: the official nested form."""
    out: Results = {}
    for key, value in flat.items():
        name, direction = key.rsplit("/", 1)
        out.setdefault(name, {})[direction] = value
    return out


def metrics_for(
    ground_truth: str | Path | None = None,
    instances_json: str | Path | None = None,
    pm_zeta: int = 2,
    pm_include_own: bool = False,
    pm_r_cap: int | None = 50,
    cxc_source: str | Path | None = None,
    cxc_directed: bool = False,
) -> Metrics:
    """A cached :class:`Metrics` for a ground-truth source (default: the eccv_caption wheel)."""
    key = (str(ground_truth), str(instances_json), pm_zeta, pm_include_own, pm_r_cap, str(cxc_source), cxc_directed)
    if key not in _METRICS:
        gt = None
        if ground_truth is not None:
            from eccv_metric.groundtruth import GroundTruth

            gt = GroundTruth.from_dataset(ground_truth)
        _METRICS[key] = Metrics(
            instances_json=instances_json,
            ground_truth=gt,
            pm_zeta=pm_zeta,
            pm_include_own=pm_include_own,
            pm_r_cap=pm_r_cap,
            cxc_source=cxc_source,
            cxc_directed=cxc_directed,
        )
    return _METRICS[key]


def fine_grained_per_query(
    benchmark: str,
    source: str | Path | None,
    arrays: dict[str, tuple],
    inputs: Mapping[str, object],
    image_ids: object,
    caption_ids: object,
    target_metrics: object,
    ks: object,
    normalize: bool,
) -> dict:
    """MSCOCO-FG / Flickr30K-FG for the evaluate module: ranked lists (Arrow arrays), scores or embeddings."""
    from eccv_metric.fg_metrics import FineGrainedMetrics

    key = (benchmark, str(source))
    if key not in _FG:
        _FG[key] = FineGrainedMetrics(benchmark, source)
    fg = _FG[key]
    given = [name for name, value in inputs.items() if value is not None]
    if arrays and given:
        raise EvaluationError("give one input: ranked lists, scores or embeddings")
    if arrays:
        lists = {}
        for direction, (refs, flat, lengths) in arrays.items():
            bounds = np.cumsum(lengths)[:-1]
            lists[direction] = dict(zip(refs.tolist(), np.split(flat, bounds), strict=True))
        return fg.per_query(lists.get("i2t"), lists.get("t2i"), target_metrics, ks)  # type: ignore[attr-defined]
    if inputs["scores"] is not None:
        return fg.per_query_from_scores(inputs["scores"], image_ids, caption_ids, target_metrics, ks)  # type: ignore[attr-defined]
    if inputs["image_embeddings"] is None or inputs["caption_embeddings"] is None:
        raise EvaluationError(f"{benchmark}: pass ranked lists, scores, or both image and caption embeddings")
    return fg.per_query_from_embeddings(  # type: ignore[attr-defined]
        inputs["image_embeddings"],
        inputs["caption_embeddings"],
        image_ids,
        caption_ids,
        target_metrics,
        ks,
        normalize=normalize,
    )
