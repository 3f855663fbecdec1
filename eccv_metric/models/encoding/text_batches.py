"""Captions in batches of similar length, tokenised ahead of the model.

A caption batch costs its longest caption times its size (models that pad to the longest pad every caption
to it), so captions are encoded in length order: :func:`text_order` sorts them by their length in
characters, longest first (a stable sort: ties keep the given order; the order is a function of the texts
alone, so a resumed run cuts the same batches), as sentence-transformers' ``encode`` does; the embeddings go
back to the given order afterwards (:func:`given_order`). Characters stand in for tokens: counting tokens
would tokenise every caption twice, and for the BPE and word-piece tokenizers of CLIP-style models the two
orders differ only among captions of nearly the same length. Encoders that pad to a fixed length (SigLIP's
``max_length``, open_clip's context length) gain nothing from it and keep the given order.

Batch boundaries are fixed ranges of that order (``[start, start + text_batch_size)``), as for images; the
cache key records the text batch size and the order. On a GPU the tokenizer runs in a thread one batch ahead
of the model (:func:`~eccv_metric.models.encoding.background.ahead`), on the host, while the GPU encodes this batch; on
a CPU, where both compete for the same cores, groups of batches are tokenised, then encoded (``CPU_GROUP``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from eccv_metric.models.encoding.background import ahead
from eccv_metric.models.families.encoder import Encoder

# captions per forward pass when text_batch_size= is not given, by device type: on a CPU, batches of 256 ran
# at the speed of larger ones (the tests' tiny CLIP, 2-core VM); a GPU wants large batches to fill itself
DEFAULT_TEXT_BATCH = {"cpu": 256, "cuda": 1024, "mps": 512}
# on a CPU the tokenizer and the model share the cores: a tokenizer thread beside torch's OpenMP threads (which
# spin between parallel regions) ran 1.4x slower than tokenising 16 batches, then encoding them (2-core VM)
CPU_GROUP = 16


def default_text_batch_size(device: str) -> int:
    return DEFAULT_TEXT_BATCH.get(device.split(":")[0], 256)


def sorts(encoder: Encoder) -> bool:
    """Whether this encoder's caption batches are cut in length order (it pads each batch to its longest)."""
    return bool(getattr(encoder, "sort_texts", False))


def text_order(texts: list[str], by_length: bool) -> np.ndarray:
    """Positions of the captions in encoding order: longest first (stable) when ``by_length``, else as given."""
    if not by_length:
        return np.arange(len(texts), dtype=np.int64)
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    return np.argsort(-lengths, kind="stable")


def given_order(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rows encoded in ``order`` (row k is caption ``order[k]``) back in the given order."""
    if np.array_equal(order, np.arange(len(order))):
        return values
    out = np.empty_like(values)
    out[order] = values
    return out


def encode_text_batches(
    encoder: Encoder, texts: list[str], order: np.ndarray, todo: list[tuple[int, int]]
) -> Iterator[tuple[tuple[int, int], Any]]:
    """``((start, stop), embeddings)`` of the captions at ``order[start:stop]`` for each range of ``todo``.

    Encoders that split tokenising from the forward pass (``tokenize`` / ``encode_tokens``) tokenise ahead (a
    thread on a GPU, groups of batches on a CPU: module docstring); others get ``encode_texts`` on each batch.
    """
    tokenize = getattr(encoder, "tokenize", None)
    encode_tokens = getattr(encoder, "encode_tokens", None)

    def batch(start: int, stop: int) -> list[str]:
        return [texts[i] for i in order[start:stop].tolist()]

    if tokenize is None or encode_tokens is None:
        for start, stop in todo:
            yield (start, stop), encoder.encode_texts(batch(start, stop))
        return
    if encoder.device.split(":")[0] == "cpu":  # no thread: tokenise a group of batches, then encode them
        for g in range(0, len(todo), CPU_GROUP):
            group = todo[g : g + CPU_GROUP]
            tokens = [tokenize(batch(start, stop)) for start, stop in group]
            for bounds, t in zip(group, tokens, strict=True):
                yield bounds, encode_tokens(t)
        return
    tokenized = (((start, stop), tokenize(batch(start, stop))) for start, stop in todo)
    for bounds, tokens in ahead(tokenized, depth=2):
        yield bounds, encode_tokens(tokens)
