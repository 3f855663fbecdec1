"""Which items a benchmark needs, and where their pixels and texts come from: data, keyed by collection.

One table, :data:`ITEM_SOURCES`: for each registry collection (``Benchmark.collection``) and item kind,
the built dataset config that lists the items in order, its id column, and its pixel (``datasets.Image``)
or text column. A benchmark's ``texts`` field (e.g. ``original_caption`` for ``mscoco_fg_original_texts``)
replaces the caption column. Images whose pixels a build does not embed (COCO unlabeled2017 distractors,
Flickr30K photos, or COCO val2014 images of a build made without them) are looked up by file name in the
image folders / zips given (``images=``); :data:`PIXEL_ORIGINS` names, per ``source`` column value, what
provides them. Nothing here imports torch; the table can move into the registry unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.core.view import DIRECTION_KINDS


@dataclass(frozen=True)
class ItemSource:
    """Where one kind of item of a collection comes from (a built config; see the module docstring)."""

    config: str
    id_column: str
    text_column: str | None = None  # captions: the text a model encodes
    pixel_column: str | None = None  # images: the datasets.Image column ({bytes, path})
    file_column: str | None = None  # images: the file name looked up in images= folders / zips
    origin_column: str | None = None  # images: val2014 / unlabeled2017 / flickr30k (None: all val2014)


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


def _images(config: str, origin: str | None = None) -> ItemSource:
    return ItemSource(config, "image_id", pixel_column="image", file_column="file_name", origin_column=origin)


def _captions(config: str) -> ItemSource:
    return ItemSource(config, "caption_id", text_column="caption")


ITEM_SOURCES: dict[str, dict[str, ItemSource]] = {
    "coco_5k": {"image": _images("images"), "caption": _captions("captions")},
    "mscoco_fg": {"image": _images("mscoco_fg_gallery", "source"), "caption": _captions("mscoco_fg_captions")},
    "flickr30k_fg": {
        "image": _images("flickr30k_fg_gallery", "source"),
        "caption": _captions("flickr30k_fg_captions"),
    },
}
PIXEL_ORIGINS = {
    "val2014": "COCO val2014 images: images= <val2014 folder or val2014.zip>, or a build with its images config",
    "unlabeled2017": "COCO unlabeled2017 images: images= <unlabeled2017 folder or unlabeled2017.zip>",
    "flickr30k": "Flickr30K images: images= <flickr30k-images folder or zip>",
}


def item_sets(bench: Benchmark) -> list[ItemSet]:
    """The item sets a benchmark's directions read (images and / or captions of its collection)."""
    kinds = dict.fromkeys(kind for task in bench.tasks for kind in DIRECTION_KINDS[task.direction])
    table = ITEM_SOURCES.get(bench.collection)
    if table is None:
        raise KeyError(f"{bench.name}: no item source for collection {bench.collection!r} (eccv_metric.models.items)")
    out = []
    for kind in sorted(kinds, key=("image", "caption").index):
        source = table[kind]
        if kind == "caption" and bench.texts:
            source = ItemSource(source.config, source.id_column, text_column=bench.texts)
        out.append(ItemSet(bench.collection, kind, source))
    return out
