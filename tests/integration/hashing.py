"""A deterministic, weight-free hashing encoder with exact integer scores (numpy only; mteb_run.py wraps it).

Text: the distinct lower-cased word tokens, each a signed one-hot at blake2b(token) % DIM (a bag of words).
An image: the bag of words of its first caption; which image it is comes from its pixels (the synthetic
test images store their COCO id in pixel (0, 0)). Queries and documents are embedded differently:

    query    = [K * bow, 1]
    document = [bow, u]          score = K * (bow_q . bow_d) + u,  0 <= u < K

``u`` orders documents of equal word overlap. ``ties=False``: u is the rank of the document's id, so
no two documents of a query tie. ``ties=True``: captions get the rank of their *text*, so duplicate
captions (the same text) tie exactly, as identical embeddings do; images keep distinct u. Every value
is an integer below 2**24, so float32 and float64 products are exact in any summation order: torch
(MTEB) and numpy (this project) compute the same scores bit for bit.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

DIM = 256
K = 1 << 15
_TOKEN = re.compile(r"[a-z0-9]+")


def bow(text: str) -> np.ndarray:
    vec = np.zeros(DIM, np.float32)
    for token in sorted(set(_TOKEN.findall(text.lower()))):
        n = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
        vec[n % DIM] += 1.0 if n >> 63 else -1.0
    return vec


def image_pixels(image_id: int, size: int = 8) -> bytes:
    """A ``size`` x ``size`` PNG whose pixel (0, 0) is the image id (24 bits) and the rest noise seeded by it: the
    synthetic test images (the hashing encoder reads the id; a tiny CLIP sees distinct images)."""
    import io

    from PIL import Image

    pixels = np.random.default_rng(image_id).integers(0, 256, (size, size, 3), dtype=np.uint8)
    pixels[0, 0] = ((image_id >> 16) & 255, (image_id >> 8) & 255, image_id & 255)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def image_id_of(image) -> int:  # noqa: ANN001
    r, g, b = image.convert("RGB").getpixel((0, 0))
    return (r << 16) | (g << 8) | b


class Hashing:
    """The encoder's state: every caption text (and each image's first caption), read from a built folder."""

    def __init__(self, folder: str | Path, ties: bool):
        captions = pq.read_table(sorted((Path(folder) / "data" / "captions").glob("*.parquet"))).to_pydict()
        self.text = dict(zip(captions["caption_id"], captions["caption"], strict=True))
        self.image_text: dict[int, str] = {}
        for image_id, text in zip(captions["image_id"], captions["caption"], strict=True):
            self.image_text.setdefault(image_id, text)
        self.ties = ties
        self.caption_u = {c: k for k, c in enumerate(sorted(self.text))}
        if ties:
            texts = {t: k for k, t in enumerate(sorted(set(self.text.values())))}
            self.caption_u = {c: texts[t] for c, t in self.text.items()}
        self.image_u = {i: k for k, i in enumerate(sorted(self.image_text))}
        self._bow: dict[str, np.ndarray] = {}

    def _words(self, text: str) -> np.ndarray:
        if text not in self._bow:
            self._bow[text] = bow(text)
        return self._bow[text]

    def embed(self, kind: str, ids: list[int], role: str, texts: list[str] | None = None) -> np.ndarray:
        """Rows for ``ids`` (caption or image ids) as queries or documents (float32, exact integers); captions
        embed ``texts`` when given (what a harness passed), else their own text."""
        if texts is None:
            texts = [self.text[i] if kind == "caption" else self.image_text[i] for i in ids]
        words = np.stack([self._words(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)
        if role == "query":
            return np.hstack([K * words, np.ones((len(ids), 1), np.float32)])
        u = self.caption_u if kind == "caption" else self.image_u
        return np.hstack([words, np.array([[u[i]] for i in ids], np.float32).reshape(-1, 1)])
