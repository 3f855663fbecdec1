"""What an input is asked to rank: a :class:`View` (queries of one modality against a gallery of one modality).

A view is the ranking every metric of a benchmark direction reads: e.g.
"test images against the test captions" (COCO 5K, CxC, ECCV and PM i2t share
it), "test captions against the captions of their own COCO 1K fold" or
"captions against the other captions" (CxC t2t: the query's own item is
left out). Inputs (ranked lists, score matrices, embeddings) answer views;
benchmarks make them; neither knows the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eccv_metric.core.ids import IdIndex

ITEM_KINDS = ("image", "caption")
DIRECTION_KINDS = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}


class Collection(Protocol):
    """Items of one benchmark family: the test images and captions (dense indices over their ids)."""

    name: str

    def index(self, kind: str) -> IdIndex: ...


@dataclass(frozen=True, eq=False)
class View:
    """Queries of one modality ranked against a gallery of one modality of a collection.

    ``query_group`` / ``gallery_group`` (restricted views, e.g. COCO 1K folds or
    FG's original image pool): query q is ranked only against the gallery items
    whose group equals its own; gallery items of group -1 (and items an input
    gives beyond the collection) take no part. Unrestricted views rank against
    every gallery item an input gives, extra distractor ids included.
    ``exclude_self``: queries and gallery are the same items and a query's own
    item is left out of its gallery.
    """

    direction: str
    collection: Collection
    restriction: str | None = None
    query_group: np.ndarray | None = None
    gallery_group: np.ndarray | None = None
    exclude_self: bool = False

    @property
    def query_kind(self) -> str:
        return DIRECTION_KINDS[self.direction][0]

    @property
    def gallery_kind(self) -> str:
        return DIRECTION_KINDS[self.direction][1]

    @property
    def queries(self) -> IdIndex:
        return self.collection.index(self.query_kind)

    @property
    def gallery(self) -> IdIndex:
        return self.collection.index(self.gallery_kind)

    @property
    def restricted(self) -> bool:
        return self.gallery_group is not None

    @property
    def key(self) -> tuple:
        """Views with equal keys are the same ranking."""
        return (self.direction, id(self.collection), self.restriction, self.exclude_self)

    def unrestricted(self) -> View:
        """The same queries against the whole gallery."""
        return View(self.direction, self.collection, exclude_self=self.exclude_self)

    def groups(self) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """(dense queries, dense gallery items or None for all) of each group, queries ascending."""
        if not self.restricted:
            return [(np.arange(len(self.queries)), None)]
        qgroup = np.zeros(len(self.queries), np.int64) if self.query_group is None else self.query_group
        out = []
        for g in np.unique(qgroup[qgroup >= 0]).tolist():
            out.append((np.flatnonzero(qgroup == g), np.flatnonzero(self.gallery_group == g)))
        return out

    def gallery_sizes(self, queries: np.ndarray, n_given: int) -> np.ndarray:
        """How many items each query is ranked against (``n_given`` gallery items given when unrestricted)."""
        if not self.restricted:
            sizes = np.full(len(queries), n_given, dtype=np.int64)
        else:
            counts = np.bincount(self.gallery_group[self.gallery_group >= 0])
            qgroup = np.zeros(len(self.queries), np.int64) if self.query_group is None else self.query_group
            group = qgroup[queries]
            sizes = np.where(group >= 0, counts[np.clip(group, 0, len(counts) - 1)], 0).astype(np.int64)
        return sizes - self.exclude_self
