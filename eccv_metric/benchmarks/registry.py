"""Benchmarks as data: what a benchmark is, and the registry every layer reads its names from.

A :class:`Benchmark` is a declarative definition, in the spirit of MTEB's
``TaskMetadata``: which collection of items it lives on, its tasks (one per
direction: the relation that gives each query its positives, an optional
restriction of the gallery, whether a query's own item is left out), which
metric kinds apply, its default metrics, its citation (the section whose
words it follows), license and the dataset configs that carry it. The engine
never names a benchmark: adding one is adding an entry to
:mod:`eccv_metric.benchmarks.definitions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

from eccv_metric.core.errors import EvaluationError
from eccv_metric.measures.kinds import METRIC_KINDS

RETRIEVAL = ("recall", "map_at_r", "rprecision", "medr", "meanr")


@dataclass(frozen=True)
class Task:
    """One direction of a benchmark.

    ``relation``: the name of the positives in the collection (resolved by
    :class:`~eccv_metric.benchmarks.resources.Resources`); a tuple of names is
    the mean over several relations (PCME's PMRP over zeta 0, 1, 2).
    ``restriction``: ``coco_1k_folds`` (a query sees only its fold's items) or
    ``original_pool`` (FG's test images only); ``exclude_self``: the query's own
    item is left out of its gallery (intramodal retrieval).
    """

    direction: str
    relation: str | tuple[str, ...]
    restriction: str | None = None
    exclude_self: bool = False


@dataclass(frozen=True)
class Benchmark:
    """A benchmark definition (see the module docstring). Metric names: ``<name>_r<K>``, ``<name>_recalls``
    (R@K for every K asked), ``<name>_<kind>``, unless ``names`` gives a kind another name (``pmrp``)."""

    name: str
    collection: str
    tasks: tuple[Task, ...]
    title: str
    description: str
    citation: str
    kinds: tuple[str, ...] = RETRIEVAL
    default: tuple[str, ...] = ("recalls",)
    names: Mapping[str, str] = field(default_factory=dict)
    configs: tuple[str, ...] = ()
    license: str = ""
    needs: str = ""  # what must be available beyond the ids: "categories", "CxC ratings", "FG files"
    texts: str = ""  # which caption texts a model encodes for it, when not the collection's own
    paper: str = ""  # the paper's words this definition follows (section quoted), for the protocol table
    official: str = ""  # what the official code does, where it differs

    @property
    def directions(self) -> tuple[str, ...]:
        return tuple(task.direction for task in self.tasks)

    def task(self, direction: str) -> Task:
        for task in self.tasks:
            if task.direction == direction:
                return task
        raise EvaluationError(f"{self.name} has no {direction} direction; it has {', '.join(self.directions)}")

    def metric_name(self, kind: str, k: int | None = None) -> str:
        """The user-facing name of one metric of this benchmark."""
        if kind in self.names:
            return self.names[kind]
        if kind == "recall":
            return f"{self.name}_r{k}"
        return f"{self.name}_{kind}"

    def metric_names(self, ks: tuple[int, ...] = (1, 5, 10)) -> list[str]:
        """Every metric name of this benchmark (R@K for the given Ks), in display order."""
        out = []
        for kind in self.kinds:
            if kind == "recall":
                out += [self.metric_name(kind, k) for k in ks]
            elif kind != "spearman_std":
                out.append(self.metric_name(kind))
                if kind == "spearman":
                    out.append(self.metric_name("spearman_std"))
        return out


class Registry:
    """The benchmarks by name, in display order."""

    def __init__(self, benchmarks: list[Benchmark]):
        self._by_name: dict[str, Benchmark] = {}
        for bench in benchmarks:
            if bench.name in self._by_name:
                raise ValueError(f"benchmark {bench.name!r} is defined twice")
            unknown = [k for k in bench.kinds if k not in METRIC_KINDS]
            if unknown:
                raise ValueError(f"{bench.name}: unknown metric kinds {unknown}")
            self._by_name[bench.name] = bench

    def __iter__(self):  # noqa: ANN204
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str) -> Benchmark:
        if name not in self._by_name:
            raise EvaluationError(f"unknown benchmark {name!r}; known: {', '.join(self._by_name)}")
        return self._by_name[name]

    def index(self, name: str) -> int:
        return list(self._by_name).index(name)
