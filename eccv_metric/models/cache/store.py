"""The embedding store: the one owner of cache keys, whole-set hits, shared items, batches and resuming.

For each item set of a plan, in order, the store gives its embeddings (float32, one row per item, the
set's order):

- an item already encoded in this run for another set (the 5,000 test images are in ``coco_5k`` and in
  MSCOCO-FG's gallery; an image is known by its origin and id, a text by its string) is not encoded again:
  its row is copied;
- a set whose whole entry is in the cache (:class:`~eccv_metric.models.cache.entries.EmbeddingCache`, checked
  before use) is read,
  nothing encoded;
- otherwise the items not shared (the whole set, or the rest as a subset with an entry of its own) are cut
  into fixed ranges ``[start, start + step)`` (``step``: the batch size, ``text_batch_size`` for captions;
  several batches for an encoder that batches itself; captions: ranges of their length order, longest first,
  for an encoder that pads to the longest, :mod:`eccv_metric.models.encoding.text_batches`), the ranges an
  interrupted run finished are read back, the others encoded
  (:func:`~eccv_metric.models.encoding.encode.encode_batches`) and each saved at once; the finished set becomes the
  entry.

The key of an entry: the model's identity (weights, configs, preprocessing), the items' label and digest
(images: their batch size and decoder, PIL or ``decode="gpu"``'s nvJPEG and tensor preprocessing; captions:
their batch size and order: each can move an embedding by float rounding), the device type, the precision and this
package's version. An encoder without an identity (a Python object) is never cached.

Each entry is one folder of the cache (:mod:`eccv_metric.models.cache.entries`: its files, and the checks
before it is used); each finished batch is written to it at once, the finished set last.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Container
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from eccv_metric.core import progress
from eccv_metric.core.about import __version__
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.cache.entries import EmbeddingCache
from eccv_metric.models.cache.entries import cache_key
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.data.items import DECODER
from eccv_metric.models.data.items import Items
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.encoding.decode import Decoder
from eccv_metric.models.encoding.decode import decoded_batches
from eccv_metric.models.encoding.encode import Bounds
from eccv_metric.models.encoding.encode import encode_batches
from eccv_metric.models.encoding.shared import feeder
from eccv_metric.models.encoding.text_batches import given_order
from eccv_metric.models.encoding.text_batches import sorts
from eccv_metric.models.encoding.text_batches import text_order
from eccv_metric.models.families.encoder import Encoder

CHUNK = 8  # batches handed at once to an encoder that batches (and length-sorts) itself


def batch_bounds(n: int, step: int) -> list[Bounds]:
    return [(s, min(s + step, n)) for s in range(0, n, step)]


class EmbeddingStore:
    """Embeddings of item sets by one encoder (see the module docstring); ``root``: the cache's folder (a
    :class:`~eccv_metric.models.cache.folder.CacheFolder`: the run's, whose writes it shares), None: no cache."""

    def __init__(
        self,
        encoder: Encoder,
        root: str | Path | CacheFolder | None,
        batch_size: int,
        workers: int,
        text_batch_size: int,
        decoder: Decoder | None = None,
    ):
        self.encoder = encoder
        cached = root is not None and encoder.identity is not None
        self.folder = root if isinstance(root, CacheFolder) or not cached else CacheFolder(root)  # the run's writes
        self.root = self.folder.root if cached else None  # type: ignore[union-attr]
        self.batch_size = batch_size
        self.text_batch_size = text_batch_size
        self.decoder = decoder  # images decoded on the GPU (decode="gpu"); None: PIL in the workers
        self.workers = workers
        self.seen: dict[tuple, tuple[ItemSet, int]] = {}  # an item (Items.keys) -> the set and row that has it
        self.companions: list[EmbeddingStore] = []  # fed this store's prepared image batches (models.encoding.shared)
        self.received: dict[str, dict[Bounds, tuple[np.ndarray, str]]] = {}  # by cache key: batches fed, by whom
        self.entries: dict[str, EmbeddingCache] = {}  # by cache key (entry)
        # batch number -> whether this process encodes it (models.parallel: several processes fill one entry, each
        # its own batches, and one assembles it); None: every batch
        self.deal: Callable[[int], bool] | None = None

    def embed(self, sets: list[ItemSet], items: dict[ItemSet, Items]) -> tuple[dict[ItemSet, np.ndarray], dict]:
        """(embeddings of each set, what made them: per set label, counts, digest and cache folder)."""
        report, done = {}, {}
        for s in sets:
            keys = items[s].keys
            fresh, part, entry = self.part(items[s], self.seen)
            values, meta = self.values(part, entry) if fresh else (None, {"encoded": 0, "resumed": 0, "cached": False})
            if len(fresh) < len(keys):  # in its order: the rows encoded now, the others from the set that had them
                fresh_rows = set(fresh)
                by_set: dict[ItemSet, tuple[list[int], list[int]]] = {}  # that set -> (rows here, rows there)
                for row, key in enumerate(keys):
                    if row not in fresh_rows:
                        first, at = self.seen[key]
                        by_set.setdefault(first, ([], []))[0].append(row)
                        by_set[first][1].append(at)
                dims = {done[first].shape[1] for first in by_set} | ({values.shape[1]} if values is not None else set())
                if len(dims) != 1:
                    raise EvaluationError(f"item sets came back with different dimensions {sorted(dims)}")
                out = np.empty((len(keys), dims.pop()), dtype=np.float32)
                if values is not None:
                    out[fresh] = values
                for first, (here, there) in by_set.items():
                    out[here] = done[first][there]
                values = out
            done[s] = values
            for row, key in enumerate(keys):
                self.seen.setdefault(key, (s, row))
            counts = {"items": len(keys), "dimensions": int(done[s].shape[1]), "shared": len(keys) - len(fresh)}
            report[s.label] = {**meta, **counts, "digest": items[s].digest, "cache": str(entry.dir) if entry else None}
        self.received.clear()  # batches fed for a part this run did not encode (its whole set was cached)
        return done, report

    def size(self, items: Items) -> int:
        """Items per batch of this set: images ``batch_size``, captions ``text_batch_size``."""
        return self.batch_size if items.texts is None else self.text_batch_size

    def order(self, items: Items) -> np.ndarray | None:
        """The captions' encoding order (length order for an encoder that pads to the longest); images: None."""
        return None if items.texts is None else text_order(items.texts, sorts(self.encoder))

    def batching(self, items: Items) -> dict:
        """What of the batching can change an embedding by float rounding (a kernel's shape): images their batch
        size, captions their batch size and order."""
        if items.texts is None:
            return {"batch_size": self.batch_size}
        return {"text_batch_size": self.text_batch_size, "text_order": "length" if sorts(self.encoder) else "given"}

    def key(self, items: Items) -> dict:
        return {
            **self.batching(items),
            "model": self.encoder.identity,
            "items": items.item_set.label,
            "digest": items.digest,
            "decoder": self.decoding() if items.texts is None else None,
            "device": self.encoder.device.split(":")[0],
            "precision": self.encoder.precision,
            "package": __version__,
        }

    def decoding(self) -> object:
        """What decodes and prepares the images (it can move an embedding by rounding): the key's ``decoder``."""
        return f"Pillow {version('pillow')}: {DECODER}" if self.decoder is None else self.decoder.describe

    def entry(self, items: Items) -> EmbeddingCache | None:
        """The cache entry of ``items`` (one object per key in this store: a finished entry is read and checked
        once); None without a cache."""
        if self.root is None:
            return None
        key = self.key(items)
        name = cache_key(key)
        if name not in self.entries:
            self.entries[name] = EmbeddingCache(key, self.folder, len(items.ids))
        return self.entries[name]

    def part(self, items: Items, seen: Container) -> tuple[list[int], Items, EmbeddingCache | None]:
        """The rows of ``items`` this run reads or encodes (all of them when its whole entry is finished: an
        earlier run cached it; else those no earlier set of the run had: ``seen``), as an item set, and its entry."""
        whole = self.entry(items)
        fresh = [row for row, key in enumerate(items.keys) if key not in seen]
        if whole is not None and whole.finished() is not None:
            fresh = list(range(len(items.keys)))
        part = items if len(fresh) == len(items.keys) else items.rows(fresh)
        return fresh, part, whole if part is items else self.entry(part)

    def answers(self, sets: list[ItemSet], items: dict[ItemSet, Items]) -> bool:
        """Whether :meth:`embed` would read every set from the cache, encoding nothing (each entry it would read
        is finished and checked): then the model need not be loaded (:mod:`eccv_metric.models.cache.recall`)."""
        seen: set = set()
        for s in sets:
            fresh, _, entry = self.part(items[s], seen)
            if fresh and (entry is None or entry.finished() is None):
                return False
            seen.update(items[s].keys)
        return True

    def has_finished(self, items: Items) -> bool:
        """Whether this store's cache holds every embedding of ``items`` (a finished entry, checked)."""
        entry = self.entry(items)
        return entry is not None and entry.finished() is not None

    def receive(self, items: Items, bounds: Bounds, rows: np.ndarray, by: str) -> None:
        """One batch of ``items`` encoded by this store's model from the prepared images of another store (of
        model ``by``: :mod:`eccv_metric.models.encoding.shared`), taken as encoded when this store's run reaches
        ``items``."""
        self.received.setdefault(cache_key(self.key(items)), {})[bounds] = (rows, by)

    def values(self, items: Items, entry: EmbeddingCache | None) -> tuple[np.ndarray, dict]:
        """Every item's embedding (config order) and what made them: from the entry, resumed, encoded now."""
        hit = entry.finished() if entry is not None else None
        if hit is not None:
            made = {k: v for k, v in hit[1].items() if k != "key"}
            return hit[0], {**made, "encoded": 0, "resumed": 0, "cached": True}
        step = self.size(items) * (CHUNK if self.encoder.batches_itself else 1)
        bounds = batch_bounds(len(items.ids), step)
        parts = entry.resumed(bounds) if entry is not None else {}
        handed = self.received.pop(cache_key(self.key(items)), {})  # fed by stores sharing the decode
        shared = {b: rows for b, (rows, _) in handed.items() if b in set(bounds) and b not in parts}
        decoded_by: dict[str, int] = {}  # whose decode fed how many items (a chain: several models)
        for start, stop in shared:
            who = handed[(start, stop)][1]
            decoded_by[who] = decoded_by.get(who, 0) + stop - start
        todo = [b for i, b in enumerate(bounds) if b not in parts and b not in shared and self.mine(i)]
        order = self.order(items)
        what = f"{items.item_set.collection} {items.item_set.kind}s ({items.item_set.label})"
        with progress.bar(f"encoding {what}", total=len(items.ids), unit="item") as bar:
            bar.update(sum(e - s for s, e in [*parts, *shared]))
            feed = feeder(self, items) if items.texts is None and todo else None
            gpu = self.decoder is not None and items.texts is None and bool(todo)
            raw = decoded_batches(self.encoder, items, todo, self.workers, self.decoder, feed) if gpu else None  # type: ignore[arg-type]
            encoded = encode_batches(self.encoder, items, todo, self.workers, order, raw, feed)
            values, meta = self.collect(encoded, entry, bounds, parts, bar, items, order, shared)
        if shared:
            meta["shared_decode"] = {"items": sum(e - s for s, e in shared), "decoded_by": decoded_by}
        return values, meta

    def mine(self, batch: int) -> bool:
        """Whether this process encodes batch number ``batch`` of a set (:attr:`deal`)."""
        return self.deal is None or self.deal(batch)

    def collect(
        self, encoded: Iterator[tuple[Bounds, np.ndarray]], entry: EmbeddingCache | None, bounds: list[Bounds],
        parts: dict[Bounds, np.ndarray], bar: Any, items: Items, order: np.ndarray | None,
        shared: dict[Bounds, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, dict]:  # fmt: skip
        """Each batch kept as it comes (in the entry at once: a killed run resumes from it), then the whole set
        (captions back from their encoding order to the set's), stored as the finished entry. ``shared``: the
        batches another store's decode fed this one (encoded in this run, from its prepared images)."""
        started = time.perf_counter()
        resumed = sum(e - s for s, e in parts)
        parts = {**parts, **(shared or {})}
        if entry is not None and bounds:
            entry.begin()
        for (start, stop), rows in encoded:
            if entry is not None:
                entry.keep((start, stop), rows)
            parts[(start, stop)] = rows
            bar.update(stop - start)
        if self.deal is not None:  # dealt (models.parallel): other processes write the rest, one assembles
            written = sum(stop - start for start, stop in parts) - resumed
            return None, {"items": len(items.ids), "encoded": written, "resumed": resumed}  # type: ignore[return-value]
        dims = {a.shape[1] for a in parts.values()}
        if len(dims) > 1:
            raise EvaluationError(f"{self.encoder.spec}: a set's batches came back with dimensions {sorted(dims)}")
        values = np.concatenate([parts[b] for b in bounds]) if bounds else np.zeros((0, 0), np.float32)
        if order is not None:  # batches were cut in encoding order: rows back in the set's order
            values = given_order(values, order)
        meta = {
            "items": len(values),
            "dimensions": int(values.shape[1]) if values.ndim == 2 else 0,
            "batch_size": self.size(items),
            **({"order": self.batching(items)["text_order"]} if items.texts is not None else {}),
            "encoded": len(values) - resumed,
            "resumed": resumed,
            "seconds": round(time.perf_counter() - started, 3),
        }
        if entry is not None:
            entry.finish(values, meta)
        return values, {**meta, "cached": False}
