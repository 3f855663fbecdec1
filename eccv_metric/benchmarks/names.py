"""Metric names users type, read through the registry: ``eccv_map_at_r``, ``coco_1k_r5``, ``cxc_t2t_recalls``...

``<benchmark>_r<K>`` for any K >= 1, ``<benchmark>_recalls`` (R@K for every K
in ``Ks``), ``<benchmark>_<kind>`` for the benchmark's other kinds
(``map_at_r``, ``rprecision``, ``medr``, ``meanr``) and the names a benchmark
gives its own kinds (``pmrp``, ``cxc_sts_spearman``). Unknown names raise (the
official package silently ignores them).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.core.defaults import KS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.kinds import MetricKind

_RK = re.compile(r"(.+)_r([1-9][0-9]*)")


@dataclass(frozen=True)
class MetricRequest:
    """One metric to compute: its output name, benchmark, kind and (R@K) K."""

    name: str
    benchmark: Benchmark
    kind: str
    k: int | None = None

    @property
    def spec(self) -> MetricKind:
        return METRIC_KINDS[self.kind]


def parse_ks(ks: object) -> tuple[int, ...]:
    """Ks: an int (Python or numpy, a 0-d integer array or tensor) or an iterable of them, each >= 1.

    Only whole numbers are K: each is read with ``operator.index`` (never ``int()``, which truncates 5.7 to 5);
    bools, floats (``5.0`` too), float arrays / tensors and strings are refused.
    """
    if hasattr(ks, "__index__") and not isinstance(ks, (bool, np.bool_)) and getattr(ks, "ndim", 0) == 0:
        ks = (ks,)
    if isinstance(ks, (str, bytes, Mapping)) or not isinstance(ks, Iterable):
        raise EvaluationError(f"Ks must be a positive integer or a list of them, not {ks!r:.40}")
    out = [_whole_k(k) for k in ks]
    return tuple(sorted(set(out)))


def _whole_k(k: object) -> int:
    """One K as a Python int; anything but a positive whole number (of an integer type) raises naming it."""
    if isinstance(k, (bool, np.bool_)) or getattr(k, "dtype", None) == np.bool_ or getattr(k, "ndim", 0):
        raise EvaluationError(f"Ks must be positive integers, not {k!r:.40}")
    try:
        value = operator.index(k)  # type: ignore[arg-type]
    except TypeError:
        raise EvaluationError(
            f"Ks must be positive integers (whole numbers of an integer type), not {k!r:.40}"
        ) from None
    if isinstance(value, bool) or value < 1:  # a bool tensor's index is a bool
        raise EvaluationError(f"Ks must be positive integers, not {k!r:.40}")
    return int(value)


def resolve_name(name: str, ks: tuple[int, ...]) -> list[MetricRequest]:
    """The metrics one name asks for (``*_recalls`` expands to every K)."""
    if not isinstance(name, str):
        raise EvaluationError(f"target metric names must be strings, not {name!r:.40}")
    fixed = REGISTRY.fixed_names()
    if name in fixed:
        bench, kind = fixed[name]
        if kind == "spearman_std":
            bench, kind = bench, "spearman"  # a correlation always comes with its std
        return [MetricRequest(bench.metric_name(kind), bench, kind)]
    if name.endswith("_recalls") and name[: -len("_recalls")] in REGISTRY:
        bench = REGISTRY.get(name[: -len("_recalls")])
        if "recall" in bench.kinds:
            if not ks:
                raise EvaluationError(f"{name} needs at least one K: Ks is empty")
            return [MetricRequest(bench.metric_name("recall", k), bench, "recall", k) for k in ks]
    match = _RK.fullmatch(name)
    if match and match.group(1) in REGISTRY and "recall" in REGISTRY.get(match.group(1)).kinds:
        bench = REGISTRY.get(match.group(1))
        k = int(match.group(2))
        return [MetricRequest(bench.metric_name("recall", k), bench, "recall", k)]
    raise EvaluationError(
        f"unknown target metric {name!r}; valid: <benchmark>_r<K>, <benchmark>_recalls, <benchmark>_map_at_r, "
        f"_rprecision, _medr, _meanr, pmrp, cxc_<sts|sis|sits>_spearman, with benchmarks "
        f"{', '.join(b.name for b in REGISTRY if 'recall' in b.kinds)} (`eccv-caption benchmarks` lists them)"
    )


def name_list(target_metrics: object) -> list[str]:
    """``target_metrics`` as a list: a name, or an iterable of names (None: none); anything else is refused."""
    if isinstance(target_metrics, str):
        return [target_metrics]
    if target_metrics is None:
        return []
    if isinstance(target_metrics, Iterable) and not isinstance(target_metrics, Mapping):
        return list(target_metrics)
    raise EvaluationError(
        f"target_metrics must be a metric name or a list of names, not {type(target_metrics).__name__}"
    )


def parse_targets(
    target_metrics: Iterable[str] | str | None = None,
    ks: object = KS,
    benchmarks: Iterable[str] | str | None = None,
) -> list[MetricRequest]:
    """The metrics asked for, each once, in registry order (defaults: the official ones, or each benchmark's)."""
    names = name_list(target_metrics)
    parsed_ks = parse_ks(ks)
    if benchmarks is not None:
        for bench_name in [benchmarks] if isinstance(benchmarks, str) else list(benchmarks):
            names += REGISTRY.get(bench_name).default_metric_names()
    elif target_metrics is None:
        names = list(DEFAULT_TARGETS)
    if not names:
        raise EvaluationError("target_metrics is empty")
    requests: dict[str, MetricRequest] = {}
    for name in names:
        for request in resolve_name(name, parsed_ks):
            requests.setdefault(request.name, request)
    return sorted(requests.values(), key=_order)


def _order(request: MetricRequest) -> tuple:
    bench = request.benchmark
    return (REGISTRY.index(bench.name), bench.kinds.index(request.kind), request.k or 0)


def metric_info(name: str) -> tuple[Benchmark, MetricKind]:
    """(benchmark, kind) of an output name such as ``eccv_map_at_r``, ``coco_1k_r5`` or ``cxc_sts_spearman_std``."""
    fixed = REGISTRY.fixed_names()
    if name in fixed:
        bench, kind = fixed[name]
        return bench, METRIC_KINDS[kind]
    match = _RK.fullmatch(name)
    if match and match.group(1) in REGISTRY and "recall" in REGISTRY.get(match.group(1)).kinds:
        return REGISTRY.get(match.group(1)), METRIC_KINDS["recall"]
    raise EvaluationError(f"unknown metric {name!r}")


def metric_label(name: str) -> str:
    """A metric name as a reader reads it, made from the registry: the benchmark's title and the kind's label
    (``coco_1k_r1``: ``COCO 1K R@1``, ``eccv_map_at_r``: ``ECCV Caption mAP@R``, ``coco_5k_recalls``:
    ``COCO 5K R@K``, ``pm_zeta0_r1``: ``PMRP, zeta = 0: R@1``); a name it does not know is returned as given."""
    if name.endswith("_recalls") and name[: -len("_recalls")] in REGISTRY:
        bench, what = REGISTRY.get(name[: -len("_recalls")]), "R@K"
    else:
        try:
            bench, kind = metric_info(name)
        except EvaluationError:
            return name
        what = f"R@{name.rsplit('_r', 1)[1]}" if kind.key == "recall" else kind.label
    if what in bench.title:  # pmrp: "PMRP"; pmrp_zeta0: "PMRP, zeta = 0"
        return bench.title
    return f"{bench.title}: {what}" if "," in bench.title else f"{bench.title} {what}"
