"""Plausible Match (PM) positives from COCO category presence (PCME, Chun et al. 2021).

Image ``g`` is a plausible match of image ``q`` when their category sets differ
in at most ``zeta`` categories (Hamming distance of the presence vectors):
``|C(q) symmetric-difference C(g)| <= zeta``. A caption query uses its image's
set; an image query's positives are the captions of its PM images. Images
without any instance annotation are neither queries nor positives, and by
default a query's own image (and so its own captions) is left out; queries
left with no positive are not scored. These defaults (zeta=2, own pairs
excluded) reproduce the released official pm_*.json files.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from eccv_metric.core.defaults import PM_INCLUDE_OWN
from eccv_metric.core.defaults import PM_R_CAP
from eccv_metric.core.defaults import PM_ZETA
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.core.options import require_int
from eccv_metric.core.positives import Positives
from eccv_metric.groundtruth.split import GroundTruth

MISSING_CATEGORIES = (
    "pmrp needs COCO categories: pass instances_json= (a COCO-format instances file such as "
    "instances_val2014.json, or a built dataset folder)"
)


@dataclass(frozen=True)
class PMOptions:
    """How PM positives and PMRP are defined (defaults: the ECCV Caption code's released PM files).

    ``zeta``: largest category distance of a plausible match; ``include_own``:
    whether a query's own image (and its captions) count; ``r_cap``: PMRP
    uses R = min(R, r_cap) (None: uncapped R-Precision).
    """

    zeta: int = PM_ZETA
    include_own: bool = PM_INCLUDE_OWN
    r_cap: int | None = PM_R_CAP

    def __post_init__(self) -> None:
        object.__setattr__(self, "zeta", require_int(self.zeta, "pm_zeta", 0))
        object.__setattr__(self, "include_own", require_bool(self.include_own, "pm_include_own"))
        if self.r_cap is not None:
            object.__setattr__(self, "r_cap", require_int(self.r_cap, "pm_r_cap", 1))


class PlausibleMatch:
    """PM relation between the test images, and its relevance for each direction."""

    def __init__(self, gt: GroundTruth, zeta: int = PM_ZETA, include_own: bool = PM_INCLUDE_OWN):
        if gt.image_categories is None:
            raise EvaluationError(MISSING_CATEGORIES)
        cats = gt.image_categories.astype(np.float32)
        annotated = gt.image_categories.any(axis=1)
        sizes = cats.sum(axis=1)
        distance = sizes[:, None] + sizes[None, :] - 2 * (cats @ cats.T)
        match = (distance <= zeta + 0.5) & annotated[:, None] & annotated[None, :]
        if not include_own:
            np.fill_diagonal(match, False)
        self.gt = gt
        self.match = match
        self.annotated = annotated
        self._relevance: dict[str, ImageLevelRelevance] = {}

    def relevance(self, direction: str) -> ImageLevelRelevance:
        """The relevance of one direction, built once (its counts cost a 5,000 x 5,000 product)."""
        if direction not in self._relevance:
            self._relevance[direction] = ImageLevelRelevance(self.match, self.gt.caption_image, direction)
        return self._relevance[direction]


@dataclass(frozen=True)
class ImageLevelRelevance:
    """Positives defined by an image x image relation, seen from image or caption queries."""

    match: np.ndarray
    caption_image: np.ndarray
    direction: str
    only: np.ndarray | None = None  # restrict the queries to these dense indices

    def restrict(self, queries: np.ndarray) -> ImageLevelRelevance:
        out = ImageLevelRelevance(self.match, self.caption_image, self.direction, np.asarray(queries))
        out.__dict__["_counts"] = self._counts  # the same counts: not recomputed
        out.__dict__["_flat"] = self._flat  # the same tables
        return out

    @cached_property
    def _image_counts(self) -> np.ndarray:
        """Positives of each image, as the direction counts them (captions for i2t, images for t2i)."""
        if self.direction == "i2t":
            per_image = np.bincount(self.caption_image, minlength=len(self.match))
            return self.match.astype(np.int64) @ per_image
        return self.match.sum(axis=1)

    @cached_property
    def _counts(self) -> np.ndarray:
        counts = self._image_counts
        return counts if self.direction == "i2t" else counts[self.caption_image]

    @cached_property
    def query(self) -> np.ndarray:
        query = np.flatnonzero(self._counts > 0).astype(np.int32)
        return query if self.only is None else query[np.isin(query, self.only)]

    @cached_property
    def n_positives(self) -> np.ndarray:
        return self._counts[self.query]

    def hits(self, items: np.ndarray) -> np.ndarray:
        """``hits[k, i]``: is ``items[k, i]`` a positive of ``query[k]``."""
        return self.lookup(self.query[:, None], items)

    def lookup(self, q: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Whether gallery item ``g`` (dense, or -1: not one) is a positive of query ``q`` (broadcast): one gather
        from the flattened relation at ``row(q) + column(g)``."""
        flat, row_start, column = self._flat
        g = np.asarray(g)
        hit = flat.take(row_start[q] + column[g])
        if g.size and g.min() < 0:
            hit &= g >= 0
        return hit

    @cached_property
    def _flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the image x image relation flattened; where the row of each query starts; the column of each gallery
        item, one more entry for -1) as int32 where they fit."""
        n = len(self.match)
        dtype = np.int32 if self.match.size < 2**31 else np.int64
        image, own = self.caption_image.astype(dtype), np.arange(n, dtype=dtype)
        query_image, gallery_image = (own, image) if self.direction == "i2t" else (image, own)
        return np.ascontiguousarray(self.match).ravel(), query_image * n, np.append(gallery_image, 0).astype(dtype)

    def positive_mask(self, part: np.ndarray, columns: np.ndarray, col_of_dense: np.ndarray) -> np.ndarray:
        """Bool (len(part) x len(columns)): is block column j (dense gallery ``columns[j]``, -1 extra) a positive."""
        return self.lookup(self.query[part][:, None], columns[None, :])

    def to_positives(self) -> Positives:
        """Materialise the lists as CSR (large: about 10M caption pairs with the defaults)."""
        img_q, img_g = np.nonzero(self.match)
        if self.direction == "i2t":
            pair, caption = _captions_of(img_g, self.caption_image)
            return Positives.from_pairs(img_q[pair], caption, len(self.caption_image))
        pair, caption = _captions_of(img_q, self.caption_image)
        return Positives.from_pairs(caption, img_g[pair], len(self.match))


def _captions_of(images: np.ndarray, caption_image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expand a list of images to (index into ``images``, caption) pairs, one per caption."""
    order = np.argsort(caption_image, kind="stable")
    starts = np.searchsorted(caption_image[order], np.arange(caption_image.max() + 2))
    counts = starts[images + 1] - starts[images]
    pair = np.repeat(np.arange(len(images)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return pair, order[starts[images][pair] + offsets]
