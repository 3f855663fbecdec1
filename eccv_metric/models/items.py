"""Which items a benchmark needs, and where their pixels and texts come from: data, keyed by collection.

The sources are registry data: each collection entry's ``item_sources``
(:mod:`eccv_metric.benchmarks.collections`, :class:`~eccv_metric.benchmarks.media.ItemSource`): for each
item kind, the built dataset config that lists the items in order, its id column, and its pixel
(``datasets.Image``) or text column. A benchmark's ``texts`` field (e.g. ``original_caption`` for
``mscoco_fg_original_texts``) replaces the caption column. Images whose pixels a build does not embed
(COCO unlabeled2017 distractors, Flickr30K photos, or COCO val2014 images of a build made without them) are
looked up by file name in the image folders / zips given (``images=``); ``PIXEL_ORIGINS``
(:mod:`eccv_metric.benchmarks.media`) names, per ``source`` column value, what provides them. Nothing here
imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.media import ItemSource
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.core.view import DIRECTION_KINDS

if TYPE_CHECKING:
    from eccv_metric.benchmarks.resources import Resources


@dataclass(frozen=True)
class ItemSet:
    """One set of items to encode once, shared by every benchmark that needs it."""

    collection: str
    kind: str  # image / caption
    source: ItemSource
    restriction: str | None = None  # only the items a restricted view ranks (FG's original pool)

    @property
    def label(self) -> str:
        column = self.source.text_column or self.source.pixel_column
        return f"{self.source.config}.{column}" + (f"[{self.restriction}]" if self.restriction else "")

    @property
    def whole(self) -> ItemSet:
        """The same items without the restriction."""
        return replace(self, restriction=None)


# the registry's collections with their item sources (benchmarks.collections): collection -> kind -> source
ITEM_SOURCES: dict[str, dict[str, ItemSource]] = {
    entry.name: dict(entry.item_sources) for entry in REGISTRY.collections() if entry.item_sources
}


def item_sets(bench: Benchmark, resources: Resources | None = None) -> list[ItemSet]:
    """The item sets a benchmark's directions read (images and / or captions of its collection); with
    ``resources``, only the items its views rank (:func:`ranked_ids`: MSCOCO-FG's original pool ranks the
    5,000 test images, not the distractors)."""
    kinds = dict.fromkeys(kind for task in bench.tasks for kind in DIRECTION_KINDS[task.direction])
    table = REGISTRY.collection(bench.collection).item_sources
    if not table:
        raise KeyError(f"{bench.name}: collection {bench.collection!r} names no item sources (its registry entry)")
    out = []
    for kind in sorted(kinds, key=("image", "caption").index):
        source = table[kind]
        if kind == "caption" and bench.texts:
            source = ItemSource(source.config, source.id_column, text_column=bench.texts)
        item_set = ItemSet(bench.collection, kind, source)
        if resources is not None and ranked_ids(bench, kind, resources) is not None:
            item_set = replace(item_set, restriction=restriction_of(bench, kind))
        out.append(item_set)
    return out


def restriction_of(bench: Benchmark, kind: str) -> str | None:
    """The restriction every task reading ``kind`` items shares (None: some task reads them unrestricted)."""
    names = {t.restriction for t in bench.tasks if kind in DIRECTION_KINDS[t.direction]}
    return names.pop() if len(names) == 1 else None


def ranked_ids(bench: Benchmark, kind: str, resources: Resources) -> np.ndarray | None:
    """The ids of the ``kind`` items the benchmark's views rank, when that is not every item of the collection
    (queries or gallery items of a group >= 0 of each restricted view), else None."""
    if restriction_of(bench, kind) is None:
        return None
    index = resources.collection(bench.collection).index(kind)
    taken = np.zeros(len(index), dtype=bool)
    for task in bench.tasks:
        view = resources.view(bench, task)
        for side, group in ((view.query_kind, view.query_group), (view.gallery_kind, view.gallery_group)):
            if side == kind:
                taken |= True if group is None else group >= 0
    return None if taken.all() else index.ids[taken]
