"""The on-disk embedding cache: a second run of the same model encodes nothing, a killed run resumes.

Location: ``$ECCV_CAPTION_CACHE`` or ``<huggingface_hub HF_HOME>/eccv_caption/embeddings``. One folder per
key: sha256 of the model's identity (spec, library and version, weights digest, preprocessing), the items'
digest (data revision or Parquet digest, item ids, column), the device type, the precision and this
package's version. Each finished batch is written at once (``partial/<start>-<stop>.npy``, atomically);
when every batch is there they become ``embeddings.npy`` and ``meta.json`` (what made them), and the
partial files go. Nothing half-written is ever read: files appear by rename only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from eccv_metric.core.files import atomic_open
from eccv_metric.core.files import write_json_atomic


def cache_root() -> Path:
    given = os.environ.get("ECCV_CAPTION_CACHE")
    if given:
        return Path(given)
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "eccv_caption" / "embeddings"


def cache_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:40]


class EmbeddingCache:
    """One item set encoded by one model (see the module docstring); ``root=None``: the default root."""

    def __init__(self, payload: dict, root: str | Path | None = None):
        self.payload = payload
        self.dir = Path(root if root is not None else cache_root()) / cache_key(payload)
        self.partial = self.dir / "partial"

    def is_finished(self) -> bool:
        """Whether every item's embedding is stored (told from the files, nothing read)."""
        return (self.dir / "embeddings.npy").is_file() and (self.dir / "meta.json").is_file()

    def finished(self) -> tuple[np.ndarray, dict] | None:
        if not self.is_finished():
            return None
        return np.load(self.dir / "embeddings.npy"), json.loads((self.dir / "meta.json").read_text())

    def batches(self) -> dict[tuple[int, int], Path]:
        """Finished batches of an interrupted run: (start, stop) -> file."""
        out = {}
        for path in self.partial.glob("*.npy") if self.partial.is_dir() else ():
            start, _, stop = path.stem.partition("-")
            if start.isdigit() and stop.isdigit():
                out[(int(start), int(stop))] = path
        return out

    def save_batch(self, start: int, stop: int, values: np.ndarray) -> None:
        self.partial.mkdir(parents=True, exist_ok=True)
        with atomic_open(self.partial / f"{start:09d}-{stop:09d}.npy", "wb", encoding=None) as fout:
            np.save(fout, values)

    def finish(self, values: np.ndarray, meta: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.dir / "meta.json", {**meta, "key": self.payload})
        with atomic_open(self.dir / "embeddings.npy", "wb", encoding=None) as fout:
            np.save(fout, values)
        shutil.rmtree(self.partial, ignore_errors=True)
