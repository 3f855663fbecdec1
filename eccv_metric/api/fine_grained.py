"""``FineGrainedMetrics``: deprecated; ``Metrics(fg_source=...)`` with ``target_metrics=["mscoco_fg_recalls"]``
(or ``evaluate(..., benchmarks=["mscoco_fg"])``) reaches the same benchmarks through the same methods.

Kept importable so that existing code runs: it is :class:`~eccv_metric.api.metrics.Metrics` on one FG
collection, whose ``target_metrics`` default to ``<benchmark>_recalls`` and must name a benchmark of that
collection (``<bench>``, ``<bench>_original_pool``, ``mscoco_fg_original_texts``), and it warns
(:class:`DeprecationWarning`) when built.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

from eccv_metric.api.metrics import Metrics
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.core.errors import EvaluationError
from eccv_metric.groundtruth.fg import FineGrained
from eccv_metric.groundtruth.split import GroundTruth

FG_COLLECTIONS = tuple(c.name for c in REGISTRY.collections() if c.source_option == "fg_source")


class FineGrainedMetrics(Metrics):
    """Deprecated: MSCOCO-FG or Flickr30K-FG through the ``Metrics`` methods (see the module docstring).

    Parameters
    ----------
    benchmark: ``"mscoco_fg"`` or ``"flickr30k_fg"``.
    source: the ``fg_source`` of :class:`Metrics`.
    ground_truth: the COCO test split, for MSCOCO-FG's caption ids (default: the ``eccv_caption`` wheel).
    """

    def __init__(
        self, benchmark: str = "mscoco_fg", source: str | Path | None = None, ground_truth: GroundTruth | None = None
    ):
        warnings.warn(
            "FineGrainedMetrics is deprecated: use Metrics(fg_source=...) with target_metrics such as "
            f"['{benchmark}_recalls'], or evaluate(..., benchmarks=['{benchmark}'])",
            DeprecationWarning,
            stacklevel=2,
        )
        if benchmark not in FG_COLLECTIONS:
            raise EvaluationError(f"unknown benchmark {benchmark!r}; known: {', '.join(FG_COLLECTIONS)}")
        super().__init__(ground_truth=ground_truth, fg_source=source)
        self.benchmark = benchmark
        self.fg: FineGrained = self.resources.collection(benchmark)  # type: ignore[assignment]
        self.default_targets = (f"{benchmark}_recalls",)

    def _targets(self, target_metrics: Iterable[str] | str | None, ks: Iterable[int]) -> Iterable[str] | str:
        # the inherited methods' default is the official targets: here it means "this collection's default"
        default = target_metrics is None or target_metrics is DEFAULT_TARGETS
        names = list(self.default_targets) if default else target_metrics
        requests = parse_targets(names, ks)
        family = [b.name for b in REGISTRY if b.collection == self.benchmark]
        wrong = [r.name for r in requests if r.benchmark.collection != self.benchmark]
        if wrong:
            raise EvaluationError(
                f"unknown target metric {wrong[0]!r} for {self.benchmark}; valid: <benchmark>_r<K>, "
                f"<benchmark>_recalls, _map_at_r, _rprecision, _medr, _meanr with benchmarks {', '.join(family)}"
            )
        return [r.name for r in requests]
