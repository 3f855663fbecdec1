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


class FirstOnly:
    """A dual encoder (a Python object): DotPairsWithFirst's first stage alone, to give as first_stage=."""

    def encode_images(self, images):  # noqa: ANN001, ANN201
        return DotPairsWithFirst().encode_images(images)

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return DotPairsWithFirst().encode_texts(texts)


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


class TorchPairs:
    """A tiny seeded torch pair scorer implementing the :class:`~eccv_metric.models.families.pair_scorer.PairScorer`
    protocol (image states once per image, pairs naming them by index), with its own first stage: real float
    arithmetic, so equal bits across processes and batchings are a property of the runner, not of integers."""

    def __init__(self, seed: int = 0, first: bool = True, sleep: float = 0.0):
        import torch

        from eccv_metric.models.families.encoder import FunctionEncoder

        torch.manual_seed(seed)
        self.vision = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(2))
        self.words = torch.nn.EmbeddingBag(128, 16)
        self.head = torch.nn.Sequential(torch.nn.Linear(32 + 16, 24), torch.nn.Tanh(), torch.nn.Linear(24, 1))
        self.image_proj = torch.nn.Linear(32, 6)
        self.text_proj = torch.nn.Linear(16, 6)
        self.sleep = sleep
        self.calls = 0
        self.spec = f"python:TorchPairs(seed={seed})"
        self.identity = {"name": "torch-pairs", "seed": seed}
        self.device = "cpu"
        self.precision = "fp32"
        self.prepare_image = prepare
        self.image_preprocessing = {"prepare": "8x8 RGB / 255"}
        self.text_length = 32
        self.score_rules = ("itm", "itm+itc")
        self.notes = ("a test model",)
        self.first_stage = None
        if first:
            self.first_stage = FunctionEncoder(
                "python:TorchPairs.first", ("image", "caption"), texts=self.encode_texts, images=self.encode_images,
                prepare_image=prepare, identity={**self.identity, "part": "first"},
            )  # fmt: skip

    def tokens(self, texts: list[str]):  # noqa: ANN201
        import torch

        ids = [torch.tensor([ord(c) % 128 for c in t[: self.text_length]] or [0]) for t in texts]
        offsets = torch.tensor([0, *np.cumsum([len(i) for i in ids])[:-1].tolist()])
        return torch.cat(ids), offsets

    def image_states(self, prepared):  # noqa: ANN001, ANN201
        import torch

        with torch.inference_mode():
            return self.vision(prepared).flatten(1)

    def score_pairs(self, states, image_index, texts):  # noqa: ANN001, ANN201
        import time

        import torch

        self.calls += 1
        if self.sleep:
            time.sleep(self.sleep)
        with torch.inference_mode():
            words = self.words(*self.tokens(texts))
            index = torch.as_tensor(np.asarray(image_index), dtype=torch.long)
            return self.head(torch.cat([states[index], words], dim=1))[:, 0]

    def encode_images(self, prepared):  # noqa: ANN001, ANN201
        import torch

        with torch.inference_mode():
            return self.image_proj(self.vision(prepared).flatten(1))

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        import torch

        with torch.inference_mode():
            return self.text_proj(self.words(*self.tokens(texts)))


def prepare(image: object):  # noqa: ANN201
    """An 8x8 RGB PIL image as a (3, 8, 8) float tensor in [0, 1] (picklable: DataLoader workers run it)."""
    import torch

    return torch.from_numpy(np.asarray(image, np.float32).transpose(2, 0, 1) / 255.0)
