"""The first step of a model run: from a :class:`~eccv_metric.benchmarks.request.Request` to the item sets to
encode, what each benchmark needs, and what cannot be scored (no torch, nothing encoded).

Before the model loads (:func:`make_plan`): the output folder is checked, every benchmark of the request gets
its item sets (:func:`~eccv_metric.models.data.items.item_sets`), the resources are chosen (the data's own unless
given: :func:`~eccv_metric.models.data.source.default_resources`), each benchmark is checked against the data (its
configs, the CxC ratings it needs) and its sets are made exact (only the items its views rank). Once the
model is loaded (:meth:`Plan.fit`): the model encodes each benchmark's kinds, each item set is read once and
every item has its pixels or text. A benchmark that fails a check is an error naming it and the next
step, or, when nothing was asked (``skip_unavailable``: every benchmark the items allow), a skip with that
reason. A set restricted to a pool is replaced by its whole set when another benchmark needs the whole; sets
come captions first, so a text side that fails does so before any image is encoded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.data.items import Items
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.data.items import item_sets
from eccv_metric.models.data.source import DataSource
from eccv_metric.models.data.source import default_resources
from eccv_metric.models.families.encoder import Encoder

EVERY = tuple(REGISTRY.names())  # what a model run scores when nothing is asked (``made_for=``: each one's defaults)
KIND_WORDS = {"image": "images", "caption": "texts"}
EMBEDDING_FILES = {f"{kind}_{what}.npy" for kind in ("image", "caption") for what in ("embeddings", "ids")}


@dataclass
class Plan:
    """What a model run encodes and scores (see the module docstring)."""

    request: Request
    source: DataSource
    resources: Resources
    skip_unavailable: bool
    wanted: dict[str, list[ItemSet]] = field(default_factory=dict)  # benchmark -> its item sets
    skipped: dict[str, str] = field(default_factory=dict)  # benchmark -> why it is not scored
    items: dict[ItemSet, Items] = field(default_factory=dict)

    @property
    def sets(self) -> list[ItemSet]:
        """Every item set to encode, once, captions first."""
        distinct = dict.fromkeys(s for sets in self.wanted.values() for s in sets)
        return sorted(distinct, key=lambda s: s.kind != "caption")

    def fit(self, encoder: Encoder) -> Plan:
        """The benchmarks this model can encode whose items all have pixels / texts (each set read once)."""
        for name, sets in list(self.wanted.items()):
            lacking = [s.kind for s in sets if s.kind not in encoder.kinds]
            why = (
                f"{name}: {encoder.spec} encodes no {' or '.join(KIND_WORDS[k] for k in lacking)} "
                f"(it has {' and '.join(KIND_WORDS[k] for k in encoder.kinds)} only)"
            )
            if not lacking:
                for s in sets:
                    self.items[s] = self.items[s] if s in self.items else self.source.read(s)
                why = next((m for m in (self.source.missing(name, self.items[s]) for s in sets) if m), None)
            if lacking or why is not None:  # not scored: an error, or (nothing asked) a skip with its reason
                if not self.skip_unavailable:
                    raise EvaluationError(why)
                self.skipped[name] = why  # type: ignore[assignment]
                del self.wanted[name]
        if not self.wanted:
            raise EvaluationError("no benchmark can be scored: " + "; ".join(self.skipped.values()))
        whole = {s for sets in self.wanted.values() for s in sets if s.only is None}
        self.wanted = {n: [s.whole if s.whole in whole else s for s in sets] for n, sets in self.wanted.items()}
        return self


def make_plan(
    request: Request,
    source: DataSource,
    skip_unavailable: bool,
    resources: Resources | None = None,
    resource_options: ResourceOptions | None = None,
    save_embeddings: str | Path | None = None,
) -> Plan:
    """The plan before the model loads (see the module docstring)."""
    if save_embeddings is not None:
        check_output_folder(save_embeddings)
    benches = [REGISTRY.get(n) for n in dict.fromkeys(r.benchmark.name for r in request.metrics)]
    sets = {bench.name: item_sets(bench) for bench in benches}
    res = resources if resources is not None else default_resources(source, resource_options)
    plan = Plan(request, source, res, skip_unavailable)
    for bench in benches:
        why = source.lacks(bench, sets[bench.name], res)
        try:  # each set made exact: only the items the benchmark's views rank
            sets[bench.name] = [source.resolve(bench, s, res) for s in sets[bench.name]] if why is None else []
        except EvaluationError as exc:  # the resources of a restricted view (FG files) cannot be read
            why = f"{bench.name}: {exc}"
        if why is not None and not skip_unavailable:
            raise EvaluationError(why)
        if why is not None:
            plan.skipped[bench.name] = why
        else:
            plan.wanted[bench.name] = sets[bench.name]
    return plan


def check_output_folder(folder: str | Path) -> None:
    """``save_embeddings=``: a new folder, or one an earlier run wrote (replaced whole); else an error."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise EvaluationError(f"save_embeddings= {path} is a file: give a folder (it receives <set>/*_embeddings.npy)")
    entries = sorted(path.iterdir()) if path.is_dir() else []
    foreign = [p.name for p in entries if not (p.is_dir() and {f.name for f in p.iterdir()} <= EMBEDDING_FILES)]
    if foreign:
        raise EvaluationError(
            f"save_embeddings= {path} holds {foreign[0]}, which no earlier save_embeddings= wrote: give a new "
            "folder (an earlier one is replaced whole)"
        )
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise EvaluationError(f"save_embeddings= {path}: cannot create it under {parent}")
