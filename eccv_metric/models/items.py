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

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.media import ItemSource
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.core.view import DIRECTION_KINDS


@dataclass(frozen=True)
class ItemSet:
    """One set of items to encode once, shared by every benchmark that needs it."""

    collection: str
    kind: str  # image / caption
    source: ItemSource

    @property
    def label(self) -> str:
        column = self.source.text_column or self.source.pixel_column
        return f"{self.source.config}.{column}"


# the registry's collections with their item sources (benchmarks.collections): collection -> kind -> source
ITEM_SOURCES: dict[str, dict[str, ItemSource]] = {
    entry.name: dict(entry.item_sources) for entry in REGISTRY.collections() if entry.item_sources
}


def item_sets(bench: Benchmark) -> list[ItemSet]:
    """The item sets a benchmark's directions read (images and / or captions of its collection)."""
    kinds = dict.fromkeys(kind for task in bench.tasks for kind in DIRECTION_KINDS[task.direction])
    table = REGISTRY.collection(bench.collection).item_sources
    if not table:
        raise KeyError(f"{bench.name}: collection {bench.collection!r} names no item sources (its registry entry)")
    out = []
    for kind in sorted(kinds, key=("image", "caption").index):
        source = table[kind]
        if kind == "caption" and bench.texts:
            source = ItemSource(source.config, source.id_column, text_column=bench.texts)
        out.append(ItemSet(bench.collection, kind, source))
    return out
