"""Benchmarks as data: what a benchmark is, and the registry every layer reads its names from.

Four kinds of entries, each checked when the registry is built:

- :class:`CollectionEntry`: a collection of items (images and captions): what they are, their ids and
  canonical order, the source files with sha256 and canonical home, where pixels and texts come from,
  the dataset configs that carry it and how it is loaded;
- :class:`Relation`: a named callable giving the positives of each query in one direction of a collection;
- :class:`Restriction`: a named callable grouping queries and gallery (a query sees only its group);
- :class:`Benchmark`.

A :class:`Benchmark` is a declarative definition, in the spirit of MTEB's
``TaskMetadata``: which collection of items it lives on, its tasks (one per
direction: the relation that gives each query its positives, an optional
restriction of the gallery, whether a query's own item is left out), which
metric kinds apply, its default metrics, its citation (the section whose
words it follows), license and the dataset configs that carry it. The engine
never names a benchmark: adding one is adding an entry to
:mod:`eccv_metric.benchmarks.definitions`; adding a collection is adding a :class:`CollectionEntry`
(:mod:`eccv_metric.benchmarks.collections`) and the relations on it
(:mod:`eccv_metric.benchmarks.relations`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Protocol

import numpy as np

from eccv_metric.benchmarks.media import ItemSource
from eccv_metric.core.defaults import KS
from eccv_metric.core.download import SourceFile
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.groundtruth.cxc import RATING_ITEMS
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.measures.kinds import METRIC_KINDS

RETRIEVAL = ("recall", "map_at_r", "rprecision", "medr", "meanr")
CORRELATION = "spearman"  # its tasks name a CxC rating kind (sts / sis / sits), not a relation


class Loaded(Protocol):
    """What a collection loader, relation or restriction reads: the loaded ground truth and options (the
    :class:`~eccv_metric.benchmarks.resources.Resources` in use)."""

    gt: GroundTruth
    pm: PMOptions
    cxc_directed: bool

    def source(self, option: str) -> str | Path | None: ...

    def collection(self, name: str) -> Collection: ...

    def ratings(self, kind: str) -> Ratings: ...

    def plausible(self, zeta: int) -> PlausibleMatch: ...


@dataclass(frozen=True)
class CollectionEntry:
    """A collection of items benchmarks live on (see the module docstring).

    ``load(entry, loaded)`` returns the items (a :class:`~eccv_metric.core.view.Collection`); ``source_option``
    names the keyword of :class:`~eccv_metric.benchmarks.resources.Resources` that points at its files (a
    folder, a built dataset or its Hub repo; None: ``home`` + each file's path, downloaded once and
    sha256-checked). ``items``, ``ids``, ``order``: what the items are, how their integer ids are made, the
    canonical order (what rows of embeddings or scores mean when no ids are given). ``media``: where the
    pixels and the texts a model encodes come from, in words; ``item_sources``: the same as data (item kind
    -> :class:`~eccv_metric.benchmarks.media.ItemSource`, read by the model path). ``configs``: the dataset
    configs that carry it, each
    with its column types (``features``: config -> {column: type name}) for the dataset builder.
    """

    name: str
    title: str
    load: Callable[[CollectionEntry, Loaded], Collection]
    items: str
    ids: str
    order: str
    media: str
    files: tuple[SourceFile, ...] = ()
    home: str = ""
    source_option: str = ""
    configs: Mapping[str, str] = field(default_factory=dict)  # config name -> its description
    features: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # config name -> {column: type}
    citation: str = ""
    license: str = ""
    item_sources: Mapping[str, ItemSource] = field(default_factory=dict)  # "image" / "caption" -> its source


@dataclass(frozen=True)
class Relation:
    """Named positives: ``build(loaded, collection, direction)`` gives each query of a direction its positives
    (:class:`~eccv_metric.core.positives.Positives` or a relevance with ``to_positives``), on the collections
    named in ``collections``."""

    name: str
    collections: tuple[str, ...]
    build: Callable[[Loaded, Collection, str], object]
    description: str = ""


@dataclass(frozen=True)
class Restriction:
    """A named grouping: ``groups(loaded, collection, view)`` -> (group of each query, group of each gallery
    item); a query is ranked only against the gallery items of its own group (-1: in no group)."""

    name: str
    label: str  # what a group is, in messages: "COCO 1K fold"
    groups: Callable[[Loaded, Collection, View], tuple[np.ndarray, np.ndarray]]


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
    # what must be available beyond the ids ("CxC ratings (cxc_source=)"): keywords written ``name=``, so that
    # each front end shows its own words (core.errors.in_words: the CLI's flags)
    needs: str = ""
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

    def default_metric_names(self) -> list[str]:
        """The metric names this benchmark scores by default (``<name>_recalls``: R@K at every K asked)."""
        return [self.metric_name(kind) if kind in self.kinds else f"{self.name}_{kind}" for kind in self.default]

    def metric_names(self, ks: tuple[int, ...] = KS) -> list[str]:
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
    """Collections, relations, restrictions and benchmarks by name, in display order; each benchmark is checked
    against the others when it is added (unknown collection, relation, restriction or metric kind: ValueError)."""

    def __init__(
        self,
        benchmarks: list[Benchmark],
        collections: tuple[CollectionEntry, ...] = (),
        relations: tuple[Relation, ...] = (),
        restrictions: tuple[Restriction, ...] = (),
    ):
        self._by_name: dict[str, Benchmark] = {}
        self._collections: dict[str, CollectionEntry] = {}
        self._relations: dict[str, Relation] = {}
        self._restrictions: dict[str, Restriction] = {}
        for entry in collections:
            self.add_collection(entry)
        for relation in relations:
            self.add_relation(relation)
        for restriction in restrictions:
            self.add_restriction(restriction)
        for bench in benchmarks:
            self.add(bench)

    # -- adding entries ------------------------------------------------------------------------------------------

    def add_collection(self, entry: CollectionEntry, replace: bool = False) -> None:
        """Add a collection (``replace``: in place of the entry of that name, e.g. its files at a mirror)."""
        if entry.name in self._collections and not replace:
            raise ValueError(f"collection {entry.name!r} is defined twice")
        taken = {c for name, other in self._collections.items() if name != entry.name for c in other.configs}
        if taken & set(entry.configs):
            raise ValueError(f"{entry.name}: configs {sorted(taken & set(entry.configs))} belong to another collection")
        self._collections[entry.name] = entry

    def add_relation(self, relation: Relation) -> None:
        if relation.name in self._relations:
            raise ValueError(f"relation {relation.name!r} is defined twice")
        unknown = [c for c in relation.collections if c not in self._collections]
        if unknown:
            raise ValueError(f"relation {relation.name!r}: unknown collections {unknown}")
        self._relations[relation.name] = relation

    def add_restriction(self, restriction: Restriction) -> None:
        if restriction.name in self._restrictions:
            raise ValueError(f"restriction {restriction.name!r} is defined twice")
        self._restrictions[restriction.name] = restriction

    def add(self, bench: Benchmark) -> None:
        """Add a benchmark after checking every name it uses."""
        if bench.name in self._by_name:
            raise ValueError(f"benchmark {bench.name!r} is defined twice")
        unknown = [k for k in bench.kinds if k not in METRIC_KINDS]
        if unknown:
            raise ValueError(f"{bench.name}: unknown metric kinds {unknown}")
        if bench.collection not in self._collections:
            raise ValueError(f"{bench.name}: unknown collection {bench.collection!r}")
        for task in bench.tasks:
            names = task.relation if isinstance(task.relation, tuple) else (task.relation,)
            for name in names:
                if CORRELATION in bench.kinds:
                    if name not in RATING_ITEMS:
                        raise ValueError(f"{bench.name}: {name!r} is not a CxC rating kind ({', '.join(RATING_ITEMS)})")
                elif name not in self._relations:
                    raise ValueError(f"{bench.name}: unknown relation {name!r}")
                elif bench.collection not in self._relations[name].collections:
                    raise ValueError(f"{bench.name}: relation {name!r} is not defined on {bench.collection}")
            if task.restriction is not None and task.restriction not in self._restrictions:
                raise ValueError(f"{bench.name}: unknown restriction {task.restriction!r}")
        self._by_name[bench.name] = bench

    @contextmanager
    def scoped(self) -> Iterator[Registry]:
        """Entries added inside the ``with`` block are gone after it (tests, experiments)."""
        saved = (dict(self._by_name), dict(self._collections), dict(self._relations), dict(self._restrictions))
        try:
            yield self
        finally:
            self._by_name, self._collections, self._relations, self._restrictions = saved

    # -- reading entries -----------------------------------------------------------------------------------------

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

    def fixed_names(self) -> dict[str, tuple[Benchmark, str]]:
        """Every metric name without a K (``eccv_map_at_r``, ``pmrp``...) -> (benchmark, kind)."""
        return {bench.metric_name(kind): (bench, kind) for bench in self for kind in bench.kinds if kind != "recall"}

    def collections(self) -> list[CollectionEntry]:
        return list(self._collections.values())

    def collection(self, name: str) -> CollectionEntry:
        if name not in self._collections:
            raise EvaluationError(f"unknown collection {name!r}; known: {', '.join(self._collections)}")
        return self._collections[name]

    def relation(self, name: str) -> Relation:
        if name not in self._relations:
            raise EvaluationError(f"unknown relation {name!r}; known: {', '.join(self._relations)}")
        return self._relations[name]

    def restriction(self, name: str) -> Restriction:
        if name not in self._restrictions:
            raise EvaluationError(f"unknown restriction {name!r}; known: {', '.join(self._restrictions)}")
        return self._restrictions[name]

    def restriction_label(self, name: str | None) -> str:
        """How messages name one group of a restriction ("" for none)."""
        if name is None:
            return ""
        return self._restrictions[name].label if name in self._restrictions else name
