"""A model run's evidence written from what it returns: :func:`save_evidence` (``evaluate --model ... --evidence``)."""

from __future__ import annotations

from pathlib import Path

from eccv_metric.core.errors import EvaluationError
from eccv_metric.evidence.layout import model_record
from eccv_metric.evidence.layout import write_evidence


def save_evidence(out: object, folder: str | Path) -> str:
    """Write the evidence of a model run (``out``: :func:`~eccv_metric.models.evaluate_model`'s
    :class:`~eccv_metric.models.options.ModelResults`) to ``folder``: every engine call's input, the run's scoring
    options, ground-truth options and model (its spec and revision) from its provenance. Records it in
    ``out.provenance["evidence"]`` (the folder, its size) and returns the manifest's digest (the results'
    ``digests.evidence``)."""
    provenance = out.provenance  # type: ignore[attr-defined]
    inputs = getattr(out, "inputs", None)
    if not inputs:
        raise EvaluationError("evidence= has nothing to keep: this process scored nothing (a shard or a torchrun rank)")
    scoring = provenance.get("scoring") or {}
    run = model_record(provenance)
    run |= {k: provenance.get(k) for k in ("precision", "similarity", "ranking", "kind") if provenance.get(k)}
    protocol = provenance.get("protocol")
    if isinstance(protocol, dict):
        run["protocol"] = {k: protocol.get(k) for k in ("name", "rerank_k", "score_rule", "coco_1k")}
        first = protocol.get("first_stage") if isinstance(protocol.get("first_stage"), dict) else {}
        if first:
            run["first_stage"] = {"own": first.get("own"), "similarity": first.get("similarity")}
    manifest, digest = write_evidence(
        folder,
        inputs,
        n_resamples=int(scoring.get("n_resamples", 1000)),
        seed=int(scoring.get("seed", 0)),
        resources=provenance.get("resources"),
        run=run,
    )
    size = sum(int(f["bytes"]) for f in manifest["files"].values())
    provenance["evidence"] = {"folder": str(Path(folder).resolve()), "bytes": size}
    return digest
