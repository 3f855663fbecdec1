"""One evaluation request, parsed and validated once: what every front end maps its transport onto.

A :class:`Request` holds the metrics asked for (resolved against the registry), the image-caption
directions to score, whether missing queries are allowed (``partial``) and the bootstrap of the CxC
correlations (``n_resamples``, ``seed``). :meth:`Request.parse` is the one place where

- metric names and Ks are checked (:mod:`eccv_metric.benchmarks.names`);
- **metrics beside benchmarks, the one rule**: the request scores the metrics named *and* the default metrics
  of every benchmark named (:meth:`~eccv_metric.benchmarks.registry.Benchmark.default_metric_names`), each
  once, in registry order: ``metrics=["eccv_r1"], benchmarks=["coco_5k"]`` is ``eccv_r1`` and
  ``coco_5k_r1/r5/r10``; a benchmark never removes a metric, a metric never hides a benchmark.
  ``"eccv_caption"`` (the official package) stands for the official defaults;
- the defaults follow the input when nothing is asked: the official five metrics (COCO 1K/5K R@1, CxC R@1,
  ECCV R@1 and mAP@R) for an input that gives an image-caption direction, the benchmarks an input was made
  for when it says (MTEB predictions name their subsets), else every ranking benchmark of the intramodal
  directions it gives (t2t: ``coco_t2t``, ``cxc_t2t``; i2i: ``cxc_i2i``);
- booleans and integers are checked (:mod:`eccv_metric.core.options`).

The CLI (flags), ``evaluate()`` and ``evaluate_model`` (keywords), the evaluate module (keywords), the Space
(boxes) and ``Metrics`` (the official signature) only translate their transport into these arguments and word
the errors; a front end may show the rule its own way, never to another outcome: the Space fills its metrics
box with a picked benchmark's defaults (what the rule adds anyway); the evaluate module's config
(``evaluate.load(path, "mscoco_fg")``) is a default, scored when neither metrics nor benchmarks are named;
the model path's default is every benchmark whose items the data has (a model can serve them all).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import MetricRequest
from eccv_metric.benchmarks.names import name_list
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.core.options import require_int
from eccv_metric.core.view import DIRECTION_KINDS

OFFICIAL = "eccv_caption"  # as a benchmark name: the official package's default metrics
CROSS_MODAL = ("i2t", "t2i")
MAX_RESAMPLES = 100_000  # the CxC bootstrap's bound (measures.correlation)


def benchmark_names(benchmarks: Iterable[str] | str | None) -> list[str] | None:
    """Benchmark names (``"eccv_caption"`` included), each checked against the registry; None stays None."""
    if benchmarks is None:
        return None
    names = [benchmarks] if isinstance(benchmarks, str) else benchmarks
    if isinstance(names, dict) or not isinstance(names, Iterable):
        raise EvaluationError(f"benchmarks must be a benchmark name or a list of names, not {benchmarks!r:.40}")
    out = list(dict.fromkeys(names))
    for name in out:
        if name != OFFICIAL:
            REGISTRY.get(name)  # unknown: one line naming the known ones
    return out


def parse_directions(directions: Iterable[str] | str | None) -> tuple[str, ...] | None:
    """``"i2t"``, ``"t2i"`` or a list of them (each once); None: every direction the input gives."""
    if directions is None:
        return None
    given: Any = [directions] if isinstance(directions, str) else directions
    if isinstance(given, dict) or not isinstance(given, Iterable):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i', not {directions!r:.40}")
    given = list(given)
    if not given or any(d not in CROSS_MODAL for d in given) or len(set(given)) != len(given):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i' (each once), not {given!r:.60}")
    return tuple(given)


def default_benchmarks(given: Sequence[str] | None = None, made_for: Sequence[str] = ()) -> list[str]:
    """The benchmarks scored when neither metrics nor benchmarks are asked (see the module docstring).

    ``given``: the directions the input can rank (None: unknown); ``made_for``: the benchmarks the input
    says it was made for. Empty: the official defaults.
    """
    if made_for:
        return list(dict.fromkeys(made_for))
    if given is None or not given or any(d in CROSS_MODAL for d in given):
        return []
    return [b.name for b in REGISTRY if set(b.directions) <= set(given) and "spearman" not in b.default]


@dataclass(frozen=True)
class Request:
    """One evaluation request (see the module docstring): build it with :meth:`parse`."""

    metrics: tuple[MetricRequest, ...]
    directions: tuple[str, ...] | None = None  # image-caption directions to score (None: all the input gives)
    partial: bool = False
    n_resamples: int = N_RESAMPLES
    seed: int = SEED

    @classmethod
    def parse(
        cls,
        metrics: Iterable[str] | str | None = None,
        ks: object = KS,
        *,
        benchmarks: Iterable[str] | str | None = None,
        directions: Iterable[str] | str | None = None,
        partial: object = False,
        n_resamples: object = N_RESAMPLES,
        seed: object = SEED,
        given: Sequence[str] | None = None,
        made_for: Sequence[str] = (),
    ) -> Request:
        """Check every argument once; ``given`` / ``made_for`` describe the input (for the defaults)."""
        bench_names = benchmark_names(benchmarks)
        names = name_list(metrics)
        if metrics is None and bench_names is None:
            bench_names = default_benchmarks(given, made_for) or [OFFICIAL]
        if bench_names is not None and OFFICIAL in bench_names:  # the official five, beside what else is asked
            names += DEFAULT_TARGETS
            bench_names = [b for b in bench_names if b != OFFICIAL]
        requests = parse_targets(names, ks, bench_names or None)  # nothing asked at all: "target_metrics is empty"
        wanted = parse_directions(directions)  # asked for: scored, or refused naming what the input lacks
        if wanted is None and given is not None and any(d in CROSS_MODAL for d in given):
            wanted = tuple(d for d in CROSS_MODAL if d in given)  # not asked: the image-caption ones it gives
        return cls(
            tuple(requests),
            wanted,
            require_bool(partial, "partial"),
            require_int(n_resamples, "n_resamples", 1, MAX_RESAMPLES),
            require_int(seed, "seed", 0),
        )

    @property
    def names(self) -> list[str]:
        """The output names, in registry order."""
        return [r.name for r in self.metrics]


def directions_given(source: object) -> list[str]:
    """The directions an input can rank (told from the input alone, before any resource loads)."""
    return [d for d in DIRECTION_KINDS if source.cannot_direction(d) is None]  # type: ignore[attr-defined]
