"""Which items a benchmark needs, and where their pixels and texts come from: data, keyed by collection.

The sources are registry data: each collection entry's ``item_sources``
(:mod:`eccv_metric.benchmarks.collections`, :class:`~eccv_metric.benchmarks.media.ItemSource`): for each
item kind, the built dataset config that lists the items in order, its id column, and its pixel
(``datasets.Image``) or text column. A benchmark's ``texts`` field (e.g. ``original_caption`` for
``mscoco_fg_original_texts``) replaces the caption column. Images whose pixels a build does not embed
(COCO unlabeled2017 distractors, Flickr30K photos, or COCO val2014 images of a build made without them) are
looked up by file name in the image folders / zips given (``images=``); ``PIXEL_ORIGINS``
(:mod:`eccv_metric.benchmarks.media`) names, per ``source`` column value, what provides them. An image item
becomes the 8-bit RGB picture :data:`DECODER` says. Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import replace

import numpy as np

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
    restriction: str | None = None  # the restriction of the views reading them (FG's original pool)...
    only: frozenset[int] | None = None  # ... when it leaves items out: the ids they rank (else every item)

    @property
    def whole(self) -> ItemSet:
        """The same items without the restriction."""
        return replace(self, restriction=None, only=None)

    @property
    def label(self) -> str:
        column = self.source.text_column or self.source.pixel_column
        return f"{self.source.config}.{column}" + (f"[{self.restriction}]" if self.only is not None else "")


# the registry's collections with their item sources (benchmarks.collections): collection -> kind -> source
ITEM_SOURCES: dict[str, dict[str, ItemSource]] = {
    entry.name: dict(entry.item_sources) for entry in REGISTRY.collections() if entry.item_sources
}


def item_sets(bench: Benchmark) -> list[ItemSet]:
    """The item sets a benchmark's directions read (images and / or captions of its collection), each marked
    with the restriction every task reading it shares (the data source resolves it against the resources:
    :meth:`~eccv_metric.models.data.source.DataSource.read`)."""
    kinds = dict.fromkeys(kind for task in bench.tasks for kind in DIRECTION_KINDS[task.direction])
    table = REGISTRY.collection(bench.collection).item_sources
    if not table:
        raise KeyError(f"{bench.name}: collection {bench.collection!r} names no item sources (its registry entry)")
    out = []
    for kind in sorted(kinds, key=("image", "caption").index):
        source = table[kind]
        if kind == "caption" and bench.texts:
            source = ItemSource(source.config, source.id_column, text_column=bench.texts)
        restrictions = {t.restriction for t in bench.tasks if kind in DIRECTION_KINDS[t.direction]}
        out.append(ItemSet(bench.collection, kind, source, restrictions.pop() if len(restrictions) == 1 else None))
    return out


Location = tuple  # ("parquet", file, row group, row) | ("file", path) | ("zip", zip path, member) | ("missing", origin)


@dataclass
class Items:
    """One item set read from the data: ids in the config's order, texts or image locations, a digest, and what
    each item is across item sets (``keys``: a text by its string, an image by its origin and id: COCO val2014
    image 391895 of the 5K split and of MSCOCO-FG's gallery is one image, encoded once)."""

    item_set: ItemSet
    ids: np.ndarray
    texts: list[str] | None
    locations: list[Location] | None
    digest: str
    keys: list[tuple]

    def rows(self, rows: list[int]) -> Items:
        """The items at ``rows`` (in that order), as an item set of their own (its digest names the rows)."""
        pick = np.asarray(rows, dtype=np.int64)
        digest = hashlib.sha256(f"{self.digest}|subset".encode() + pick.tobytes()).hexdigest()
        texts = None if self.texts is None else [self.texts[r] for r in rows]
        locations = None if self.locations is None else [self.locations[r] for r in rows]
        return Items(self.item_set, self.ids[pick], texts, locations, digest, [self.keys[r] for r in rows])


# how an image item becomes the RGB picture a model's preprocessing gets (part of the cache key of image items)
DECODER = "PIL convert RGB; 16-bit grayscale scaled by 255/65535"
