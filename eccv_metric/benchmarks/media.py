"""Where a collection's items' pixels and texts come from, as data a collection entry carries.

An :class:`ItemSource` names, for one kind of item (images or captions) of a collection, the built dataset
config that lists the items in the collection's order, its id column, and its text column (captions) or its
pixel column (a ``datasets.Image``), file-name column and origin column (images). The model path
(:mod:`eccv_metric.models`) reads these from the registry (``CollectionEntry.item_sources``) to find what a
benchmark's items look like; :data:`PIXEL_ORIGINS` says, per origin, what provides pixels a build does not
embed. Nothing here imports a model library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ItemSource:
    """Where one kind of item of a collection comes from (see the module docstring)."""

    config: str
    id_column: str
    text_column: str | None = None  # captions: the text a model encodes
    pixel_column: str | None = None  # images: the datasets.Image column ({bytes, path})
    file_column: str | None = None  # images: the file name looked up in images= folders / zips
    origin_column: str | None = None  # images: val2014 / unlabeled2017 / flickr30k (None: all val2014)


def image_source(config: str, origin: str | None = None) -> ItemSource:
    """Images listed by a gallery-style config (``image_id``, ``image``, ``file_name``; ``origin``: its column)."""
    return ItemSource(config, "image_id", pixel_column="image", file_column="file_name", origin_column=origin)


def caption_source(config: str) -> ItemSource:
    """Captions listed by a captions-style config (``caption_id``, ``caption``)."""
    return ItemSource(config, "caption_id", text_column="caption")


PIXEL_ORIGINS = {
    "val2014": "COCO val2014 images: images= <val2014 folder or val2014.zip>, or a build with its images config",
    "unlabeled2017": "COCO unlabeled2017 images: images= <unlabeled2017 folder or unlabeled2017.zip>",
    "flickr30k": "Flickr30K images: images= <flickr30k-images folder or zip>",
}
