"""The pair stage: blocks of a pair set scored by a pair scorer, fast and bounded.

For the blocks a process computes (:mod:`eccv_metric.models.parallel.world` deals them), in order: each block's
images (the distinct image rows of its pairs, image-major) are decoded and prepared by the model path's
DataLoader (:mod:`eccv_metric.models.encoding.workers`: worker processes, ``batch_size`` images at a time); each
image batch becomes the pair head's image states once (:meth:`PairScorer.image_states`); the block's pairs of
those images are then scored ``pair_batch_size`` at a time, each pair naming its image by index into the
states (no tensor ever holds pixels or states per pair beyond one batch of pairs). Captions are tokenised once
per set when the scorer can (``tokenize`` / ``score_tokens``). On a GPU each batch's scores come back to the
host while the next batch runs (:func:`~eccv_metric.models.encoding.background.lagged`). Each block's scores
are checked (:class:`~eccv_metric.models.pairs.checks.ScoreTaker`: one finite float32 per pair, copied at once,
a reused output buffer refused) and written to the cache as
soon as the block is whole (:mod:`eccv_metric.models.pairs.blocks`). Memory: the model, one image batch's
states, one batch of pairs, one block's scores (64 KB) and the DataLoader's prefetched images.

The batching is fixed by the block, ``batch_size`` and ``pair_batch_size`` (a pair batch never spans two image
batches), so a block's bits do not depend on which process computes it or what it computed before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from importlib.metadata import version
from typing import Any

import numpy as np

from eccv_metric.core.about import __version__
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.data.items import DECODER
from eccv_metric.models.data.items import Items
from eccv_metric.models.encoding.background import lagged
from eccv_metric.models.encoding.encode import ImageItems
from eccv_metric.models.encoding.workers import image_batches
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.pairs.blocks import BlockCache
from eccv_metric.models.pairs.checks import ScoreTaker
from eccv_metric.models.pairs.pairset import PairSet


@dataclass
class Side:
    """One collection's pair set with its items (the rows its pairs name) and its cache entry."""

    name: str
    pairs: PairSet
    images: Items
    captions: Items
    cache: BlockCache | None
    scores: np.ndarray | None = None  # the raw scores of every pair, once every block is read or computed
    tokens: Any = None
    blocks_cached: int = 0
    blocks_computed: int = 0
    done: dict[int, np.ndarray] = field(default_factory=dict)


def block_key(
    scorer: PairScorer, first: dict | None, protocol: str, k: int | None, pairs: PairSet, images: Items,
    captions: Items, batch_size: int, pair_batch_size: int,
) -> dict:  # fmt: skip
    """What changes a pair's raw score (the key of a pair set's cache entry): the scorer's identity,
    preprocessing, caption length, precision and device type, the items, the batching (float rounding), the
    block size; and which pairs are scored: the pair set itself (its digest: every selection that changes it, the
    benchmarks and their queries, ``coco_1k``, CxC SITS's rated pairs, has an entry of its own) and what chose it
    (protocol, first stage, k). Each block also checks its own pairs."""
    return {
        "scorer": scorer.identity,
        "image_preprocessing": scorer.image_preprocessing,
        "decoder": f"Pillow {version('pillow')}: {DECODER}",
        "text_length": scorer.text_length,
        "precision": scorer.precision,
        "device": scorer.device.split(":")[0],
        "images": [images.item_set.label, images.digest],
        "captions": [captions.item_set.label, captions.digest],
        "batch_size": batch_size,
        "pair_batch_size": pair_batch_size,
        "pairs_per_block": pairs.block_size,
        "pair_set": pairs.describe(),
        "protocol": protocol,
        "first_stage": first,
        "rerank_k": k,
        "package": __version__,
    }


class PairStage:
    """Scores blocks with one pair scorer (see the module docstring)."""

    def __init__(self, scorer: PairScorer, batch_size: int, pair_batch_size: int, workers: int):
        self.scorer = scorer
        self.batch_size = batch_size
        self.pair_batch_size = pair_batch_size
        self.workers = workers
        self.by_tokens = callable(getattr(scorer, "tokenize", None)) and callable(getattr(scorer, "score_tokens", None))

    def run(self, side: Side, blocks: list[int], done: Callable[[int, int], None]) -> Iterator[tuple[int, np.ndarray]]:
        """``(block, raw scores)`` for each of ``blocks`` of ``side`` in turn, each written to its cache at once;
        ``done(block, pairs)`` is called as each finishes."""
        if not blocks:
            return
        if self.by_tokens and side.tokens is None:
            side.tokens = self.scorer.tokenize(list(side.captions.texts or []))  # type: ignore[attr-defined]
        plans = [self.plan(side.pairs, b) for b in blocks]
        rows = np.concatenate([r for plan in plans for r, _, _ in plan[2]]) if plans else np.zeros(0, np.int64)
        images = side.images
        locations = images.locations or []
        dataset = ImageItems([locations[r] for r in rows], images.ids[rows], self.scorer.prepare_image,
                             images.item_set.source.pixel_column)  # fmt: skip
        bounds, at = [], 0
        for plan in plans:
            for batch_rows, _, _ in plan[2]:
                bounds.append((at, at + len(batch_rows)))
                at += len(batch_rows)
        loaded = image_batches(dataset, bounds, self.workers, self.scorer.device)
        sizes = {b: len(plan[0]) for b, plan in zip(blocks, plans, strict=True)}
        take = ScoreTaker(self.scorer.spec)  # each batch checked and copied as it comes (models.pairs.checks)
        buffers: dict[int, np.ndarray] = {}
        filled: dict[int, int] = {}
        for (b, start, stop), values in lagged(self.raw(side, blocks, plans, loaded)):
            if b not in buffers:
                buffers[b], filled[b] = np.empty(sizes[b], np.float32), 0
            buffers[b][start:stop] = take(values, stop - start)
            filled[b] += stop - start
            if filled[b] == len(buffers[b]):
                scores = buffers.pop(b)
                if side.cache is not None:
                    side.cache.write(b, scores, side.pairs.digest(b))
                done(b, len(scores))
                yield b, scores

    def plan(self, pairs: PairSet, block: int) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, int, int]]]:
        """A block's (image rows, caption rows) and its image batches: (distinct image rows, first pair, end)."""
        images, captions = pairs.block(block)
        distinct, first = np.unique(images, return_index=True)
        ends = np.append(first[1:], len(images))
        batches = []
        for s in range(0, len(distinct), self.batch_size):
            e = min(s + self.batch_size, len(distinct))
            batches.append((distinct[s:e], int(first[s]), int(ends[e - 1])))
        return images, captions, batches

    def raw(
        self, side: Side, blocks: list[int], plans: list, loaded: Iterator
    ) -> Iterator[tuple[tuple[int, int, int], Any]]:
        """The scorer's raw output for each batch of pairs: ``((block, start, stop), scores)``."""
        texts = side.captions.texts or []
        for b, (images, captions, batches) in zip(blocks, plans, strict=True):
            for batch_rows, first, end in batches:
                _, (_, prepared, errors) = next(loaded)
                if errors:
                    more = f" (and {len(errors) - 1} more in this batch)" if len(errors) > 1 else ""
                    raise EvaluationError(errors[0] + more)
                states = self.scorer.image_states(prepared)
                local = np.searchsorted(batch_rows, images[first:end])
                for start in range(first, end, self.pair_batch_size):
                    stop = min(start + self.pair_batch_size, end)
                    index, caps = local[start - first : stop - first], captions[start:stop]
                    if self.by_tokens:
                        out = self.scorer.score_tokens(states, index, side.tokens, caps)  # type: ignore[attr-defined]
                    else:
                        out = self.scorer.score_pairs(states, index, [texts[c] for c in caps])
                    yield (b, start, stop), out


class Pace:
    """Pairs scored against the clock: the rate after the first block (its start-up left out) and the time the
    rest would take."""

    def __init__(self, todo: int):
        self.todo = todo
        self.started = time.perf_counter()
        self.pairs = 0
        self.blocks = 0
        self.first: tuple[float, int] | None = None  # (when the first block finished, pairs by then)

    def add(self, pairs: int) -> None:
        self.pairs += pairs
        self.blocks += 1
        if self.first is None:
            self.first = (time.perf_counter(), self.pairs)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    @property
    def rate(self) -> float:
        """Pairs per second: after the first block when two are done, else overall."""
        now = time.perf_counter()
        if self.first is not None and self.blocks >= 2 and now > self.first[0]:
            return (self.pairs - self.first[1]) / (now - self.first[0])
        return self.pairs / max(now - self.started, 1e-9)

    def estimate(self) -> float:
        """Seconds the pairs not yet scored would take at :attr:`rate`."""
        return max(self.todo - self.pairs, 0) / max(self.rate, 1e-9)


def duration(seconds: float) -> str:
    """A duration in words: ``42 s``, ``17 min``, ``3.2 h``, ``2.1 days``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
