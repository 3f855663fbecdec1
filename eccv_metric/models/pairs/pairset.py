"""The pairs a pair scorer scores for one collection's images and captions, cut into fixed blocks.

A :class:`PairSet` holds (image row, caption row) pairs of two item sets, image-major (by image row, then
caption row), each pair once: a rerank's is the union of every direction's candidates (an image query's k
captions, a caption query's k images; a pair both name is scored once and serves both) and the rated pairs
CxC SITS reads; an exhaustive run's is every pair (``every=True``: never materialised, 125M pairs for the 5K
split). Its blocks are ``[b * PAIRS_PER_BLOCK, (b + 1) * PAIRS_PER_BLOCK)`` of that order: a constant, so
the blocks (and their bits) are the same however many processes compute them. Image-major blocks compute
each image's states once per block (once per run but at the block edges), so no block re-runs the vision
encoder per caption query; :data:`PAIRS_PER_BLOCK` is large against the pairs of one image (768 in a k=128
rerank of the 5K split) and small enough that an interrupted run loses seconds to minutes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import field

import numpy as np

# pairs per block: 16,384 pairs are 2-4 s of a tiny model on a CPU, seconds of BLIP base on a GPU; the 5K split's
# k=128 rerank is 235 blocks (dealt to 8 GPUs: 29-30 each), its exhaustive run 7,630
PAIRS_PER_BLOCK = 16_384


@dataclass
class PairSet:
    """Pairs of ``n_images`` image rows and ``n_captions`` caption rows (see the module docstring): ``keys``
    ascending ``image * n_captions + caption``, or every pair (``keys`` None)."""

    n_images: int
    n_captions: int
    keys: np.ndarray | None
    image_ids: np.ndarray
    caption_ids: np.ndarray
    block_size: int = field(default_factory=lambda: PAIRS_PER_BLOCK)  # the constant (read when made: tests patch it)

    @classmethod
    def of(cls, images: np.ndarray, captions: np.ndarray, image_ids: np.ndarray, caption_ids: np.ndarray) -> PairSet:
        """The distinct pairs ``(images[i], captions[i])`` (rows), image-major."""
        n_c = len(caption_ids)
        keys = np.unique(np.asarray(images, np.int64) * n_c + np.asarray(captions, np.int64))
        return cls(len(image_ids), n_c, keys, np.asarray(image_ids), np.asarray(caption_ids))

    @classmethod
    def every(cls, image_ids: np.ndarray, caption_ids: np.ndarray) -> PairSet:
        """Every (image, caption) pair (an exhaustive run)."""
        return cls(len(image_ids), len(caption_ids), None, np.asarray(image_ids), np.asarray(caption_ids))

    @property
    def n_pairs(self) -> int:
        return self.n_images * self.n_captions if self.keys is None else len(self.keys)

    @property
    def n_blocks(self) -> int:
        return -(-self.n_pairs // self.block_size)

    def bounds(self, block: int) -> tuple[int, int]:
        start = block * self.block_size
        return start, min(start + self.block_size, self.n_pairs)

    def block(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(image rows, caption rows) of a block's pairs, image-major."""
        start, stop = self.bounds(block)
        keys = np.arange(start, stop, dtype=np.int64) if self.keys is None else self.keys[start:stop]
        return keys // self.n_captions, keys % self.n_captions

    def describe(self) -> dict:
        """What identifies the whole set (its cache entry's key holds it): how many pairs, and the sha256 of the
        items and of every pair (``every``: all pairs of the items)."""
        h = hashlib.sha256(f"{self.n_images}x{self.n_captions}|{'every' if self.keys is None else 'keys'}|".encode())
        h.update(np.ascontiguousarray(self.image_ids, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.caption_ids, dtype=np.int64).tobytes())
        if self.keys is not None:
            h.update(np.ascontiguousarray(self.keys, dtype=np.int64).tobytes())
        return {"pairs": self.n_pairs, "sha256": h.hexdigest()}

    def digest(self, block: int) -> str:
        """The sha256 of the (image id, caption id) pairs a block scores: a block file holds it and is used only
        for the same pairs."""
        images, captions = self.block(block)
        h = hashlib.sha256(f"{self.bounds(block)}|".encode())
        h.update(np.ascontiguousarray(self.image_ids[images], dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.caption_ids[captions], dtype=np.int64).tobytes())
        return h.hexdigest()

    def positions(self, images: np.ndarray, captions: np.ndarray) -> np.ndarray:
        """Where pairs (rows) sit in the set's order; each must be in the set."""
        keys = np.asarray(images, np.int64) * self.n_captions + np.asarray(captions, np.int64)
        if self.keys is None:
            return keys
        at = np.searchsorted(self.keys, keys)
        if len(keys) and (at.max(initial=0) >= len(self.keys) or not np.array_equal(self.keys[at], keys)):
            raise AssertionError("a pair outside the pair set was looked up")  # a bug, never bad input
        return at
