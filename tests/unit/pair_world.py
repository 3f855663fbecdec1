"""Pair scorers with a known answer over the model path's synthetic world (tests/unit/model_world.py).

:class:`DotPairs` scores a pair by the integer dot product of fixed small-integer vectors of its image (from its
pixels) and its caption (from its text): ties everywhere. Its optional first stage (``encode_images`` /
``encode_texts``) embeds the same items by other integer vectors (cosine similarity). The brute forces here
recompute every score from the world's pixels and texts, apart from the package.
"""

from __future__ import annotations

import io

import numpy as np

from tests.unit.model_world import caption_text
from tests.unit.model_world import png


def image_vector(image: object) -> np.ndarray:
    pixels = np.asarray(image, np.int64).reshape(-1, 3)
    return pixels[:5].sum(0) % 4


def text_vector(text: str) -> np.ndarray:
    return np.array([len(text) % 4, text.count("a") % 3, sum(map(ord, text)) % 4], np.int64)


def first_image(image: object) -> np.ndarray:
    pixels = np.asarray(image, np.int64).reshape(-1, 3)
    return (pixels[5:9].sum(0) % 3 + 1).astype(np.float32)


def first_text(text: str) -> np.ndarray:
    return np.array([len(text) % 3 + 1, text.count("e") % 3 + 1, sum(map(ord, text)) % 3 + 1], np.float32)


class DotPairs:
    """A pair scorer (a Python object): ``score_pairs`` = integer dot products; counts the pairs it scores."""

    def __init__(self) -> None:
        self.pairs = 0

    def score_pairs(self, images, texts):  # noqa: ANN001, ANN201
        self.pairs += len(texts)
        return np.array([float(image_vector(i) @ text_vector(t)) for i, t in zip(images, texts, strict=True)])


class DotPairsWithFirst(DotPairs):
    """:class:`DotPairs` with its own first stage."""

    def encode_images(self, images):  # noqa: ANN001, ANN201
        return np.stack([first_image(i) for i in images])

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return np.stack([first_text(t) for t in texts])


def pil(image_id: int) -> object:
    from PIL import Image

    return Image.open(io.BytesIO(png(image_id))).convert("RGB")


def brute_scores(world) -> np.ndarray:  # noqa: ANN001
    """Every (image, caption) score of the world's 5K-like split, from its pixels and texts."""
    images = np.stack([image_vector(pil(i)) for i in world.image_ids])
    texts = np.stack([text_vector(caption_text(c)) for c in world.caption_ids])
    return (images @ texts.T).astype(np.float32)


def brute_first(world) -> np.ndarray:  # noqa: ANN001
    """The first stage's cosine similarity of every (image, caption) pair (float32, as the engine computes it)."""
    images = np.stack([first_image(pil(i)) for i in world.image_ids])
    texts = np.stack([first_text(caption_text(c)) for c in world.caption_ids])
    images /= np.linalg.norm(images, axis=1, keepdims=True)
    texts /= np.linalg.norm(texts, axis=1, keepdims=True)
    return images @ texts.T


def lavis(itm: np.ndarray, first: np.ndarray, k_i2t: int, k_t2i: int, rule: str = "itm+itc") -> tuple:
    """LAVIS's ``compute_sim_matrix``, re-implemented: per query its top k by the first stage (a stable sort:
    ties in the gallery's order), one pass over those k pairs, final = ITM (+ the first stage's similarity);
    every other entry -100. Returns the (images x captions) i2t matrix and the (captions x images) t2i matrix."""
    i2t = np.full(itm.shape, -100.0, np.float32)
    for q in range(itm.shape[0]):
        top = np.argsort(-first[q], kind="stable")[:k_i2t]
        i2t[q, top] = itm[q, top] + (first[q, top] if rule == "itm+itc" else 0)
    t2i = np.full(itm.T.shape, -100.0, np.float32)
    for q in range(itm.shape[1]):
        top = np.argsort(-first[:, q], kind="stable")[:k_t2i]
        t2i[q, top] = itm[top, q] + (first[top, q] if rule == "itm+itc" else 0)
    return i2t, t2i
