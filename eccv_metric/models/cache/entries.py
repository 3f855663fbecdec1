"""One entry of the embedding cache: an item set encoded by one model, as a folder named by its key.

The cache: ``$ECCV_CAPTION_CACHE`` or ``<huggingface_hub HF_HOME>/eccv_caption/embeddings``, one folder per
key, named by its sha256 (:class:`EmbeddingCache`; what the key holds: :mod:`eccv_metric.models.cache.store`).
Each finished batch is written at once (``partial/<start>-<stop>.<sha256>.npy``, atomically, beside
``partial/key.json``; the name carries the checksum of the array it holds, so the two appear in one rename);
when every batch is there they become ``embeddings.npy`` and ``meta.json`` (what made them, with the key and
the checksum of the array, :data:`CHECKSUM`), and the partial files go. Nothing half-written is ever read:
files appear by rename only. An entry is used only when it is what the key says: ``meta.json``'s key equals
the key expected, the array has one finite row per item and the dimensions ``meta.json`` records, its
checksum (:func:`array_digest`: its dtype, shape and bytes) is the one recorded (rows moved, bytes changed on
disk), and every file reads; a finished batch likewise, against the checksum in its name. Anything else (a
folder copied from another model or data, a damaged file, an entry or batch of an earlier version, which
recorded no checksum) is named in one :class:`CacheWarning` line and encoded afresh; an entry that cannot be
replaced (a read-only cache) is left alone and not written. Every write goes through the run's
:class:`~eccv_metric.models.cache.folder.CacheFolder` (a full disk: one warning, the run goes on without
writing).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import warnings
from pathlib import Path

import numpy as np

from eccv_metric.core.files import atomic_open
from eccv_metric.core.files import write_json_atomic
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.cache.folder import CacheWarning
from eccv_metric.models.encoding.encode import Bounds

CHECKSUM = "array_sha256"  # meta.json's field: array_digest of embeddings.npy's array
BATCH = re.compile(r"(\d{9})-(\d{9})(?:\.([0-9a-f]{64}))?\.npy")  # a batch file's name (no checksum: earlier versions)
EARLIER = "its checksum (none recorded: written by an earlier version)"


def cache_root() -> Path:
    given = os.environ.get("ECCV_CAPTION_CACHE")
    if given:
        return Path(given)
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "eccv_caption" / "embeddings"


def canonical(payload: dict) -> dict:
    """The key as JSON would give it back (what ``meta.json`` stores, compared as stored)."""
    return json.loads(json.dumps(payload, sort_keys=True, default=str))


def cache_key(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:40]


def array_digest(values: np.ndarray) -> str:
    """The sha256 of an array's dtype, shape and bytes (C order): what a cache file holds, checked before it is used
    (a valid file whose rows moved or whose bytes changed on disk no longer matches). About 1.8 GB/s here (2-core VM:
    34 ms for 30,000 x 512 float32), a few percent of a warm rerun."""
    values = np.ascontiguousarray(values)
    digest = hashlib.sha256(f"{values.dtype.str}{values.shape}".encode())
    digest.update(memoryview(values).cast("B"))
    return digest.hexdigest()


def batch_name(bounds: Bounds, values: np.ndarray) -> str:
    """The file name of a finished batch: its rows ``[start, stop)`` and the checksum of its array."""
    return f"{bounds[0]:09d}-{bounds[1]:09d}.{array_digest(values)}.npy"


def difference(stored: object, expected: object, at: str = "key") -> str | None:
    """The first place (a dotted path) where two keys differ, or None."""
    if isinstance(stored, dict) and isinstance(expected, dict):
        for name in sorted(set(stored) | set(expected)):
            if name not in stored or name not in expected:
                return f"{at}.{name}"
            found = difference(stored[name], expected[name], f"{at}.{name}")
            if found:
                return found
        return None
    return None if stored == expected else at


class EmbeddingCache:
    """One item set (``rows`` items) encoded by one model (see the module docstring); ``root``: the cache's folder
    (a :class:`~eccv_metric.models.cache.folder.CacheFolder`: the run's, whose writes it shares; None: the
    default root)."""

    def __init__(self, payload: dict, root: str | Path | CacheFolder | None = None, rows: int | None = None):
        self.payload = payload
        self.expected = canonical(payload)
        self.rows = rows
        self.folder = root if isinstance(root, CacheFolder) else CacheFolder(root if root is not None else cache_root())
        self.dir = self.folder.root / cache_key(payload)
        self.partial = self.dir / "partial"
        self.writable = True  # False: an entry that does not match could not be removed (a read-only cache)
        self.hit: tuple[np.ndarray, dict] | None = None

    def finished(self) -> tuple[np.ndarray, dict] | None:
        """(embeddings, what made them) of a finished entry that matches (read once), else None."""
        if self.hit is not None:
            return self.hit
        if not (self.dir / "meta.json").is_file():  # written last: until then the entry is unfinished
            return None
        values, meta, why = self._read()
        if why is not None:
            self.discard(self.dir, why)
            return None
        self.hit = (values, meta)  # type: ignore[assignment]
        return self.hit

    def _read(self) -> tuple[np.ndarray | None, dict, str | None]:
        try:
            meta = json.loads((self.dir / "meta.json").read_text())
            values = np.load(self.dir / "embeddings.npy", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            return None, {}, f"its files (unreadable: {type(exc).__name__})"
        if not isinstance(meta, dict) or meta.get("key") != self.expected:
            where = difference(meta.get("key") if isinstance(meta, dict) else None, self.expected)
            return None, {}, f"the model and items it stands for ({where} differs)"
        recorded = meta.get(CHECKSUM)
        recorded = recorded if isinstance(recorded, str) else ""  # "": none (an earlier version's entry)
        why = self.check_rows(values, self.rows, meta.get("dimensions"), recorded, "meta.json")
        return values, {k: v for k, v in meta.items() if k != CHECKSUM}, why

    @staticmethod
    def check_rows(
        values: np.ndarray, rows: int | None, dims: object = None, checksum: str | None = None, where: str = ""
    ) -> str | None:
        """Why an array is not ``rows`` finite float32 embeddings (of ``dims`` dimensions when known) whose
        :func:`array_digest` is ``checksum`` (recorded in ``where``; "": none recorded), or None."""
        if values.dtype != np.float32 or values.ndim != 2:
            return f"an array of embeddings ({values.dtype} of shape {values.shape})"
        if rows is not None and len(values) != rows:
            return f"the items ({len(values)} rows for {rows} items)"
        if dims is not None and values.shape[1] != dims:
            return f"its meta.json ({values.shape[1]} dimensions, not {dims})"
        if not np.isfinite(values).all():
            return "finite embeddings (NaN or inf rows)"
        if checksum == "":
            return EARLIER
        if checksum is not None and array_digest(values) != checksum:
            return f"its checksum (the array's sha256 is not the one {where} records: its rows or bytes changed)"
        return None

    def discard(self, path: Path, why: str) -> None:
        """Warn once that ``path`` does not match, then remove it (or, when it cannot be removed, stop writing)."""
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            tail = "re-encoding"
        except OSError as exc:
            self.writable = False
            tail = f"re-encoding without the cache (it cannot be replaced: {type(exc).__name__})"
        warnings.warn(f"cache {path} does not match {why}: {tail}", CacheWarning, stacklevel=4)

    def resumed(self, bounds: list[Bounds]) -> dict[Bounds, np.ndarray]:
        """The batches of ``bounds`` an interrupted run of this key finished (each checked against the checksum
        in its name; one that does not match is warned about and removed: encoded again)."""
        if not self.partial.is_dir():
            return {}
        names = sorted(p.name for p in self.partial.iterdir())
        if "key.json" not in names and not any(BATCH.fullmatch(name) for name in names):
            return {}  # made, its first write never done (a run stopped at once, a full disk): nothing to resume
        try:
            stored = json.loads((self.partial / "key.json").read_text())
        except (OSError, ValueError):
            stored = None
        if stored != self.expected:
            where = difference(stored, self.expected)
            self.discard(self.partial, f"the model and items it stands for ({where} differs)")
            return {}
        wanted = set(bounds)
        files: dict[Bounds, list[tuple[Path, str]]] = {}
        for name in names:
            path, named = self.partial / name, BATCH.fullmatch(name)
            if named and not named[3]:  # an earlier version's batches: the folder is warned about once
                self.discard(self.partial, EARLIER.replace("its checksum", "its batches' checksums"))
                return {}
            if named and (int(named[1]), int(named[2])) in wanted:
                files.setdefault((int(named[1]), int(named[2])), []).append((path, named[3]))
        out = {}
        for (start, stop), found in sorted(files.items()):
            for path, checksum in found:  # two runs at once may each have written one: the first that matches
                try:
                    values = np.load(path, allow_pickle=False)
                    why = self.check_rows(values, stop - start, None, checksum, "its file name")
                except (OSError, ValueError, EOFError) as exc:
                    why = f"a finished batch (unreadable: {type(exc).__name__})"
                if why is None:
                    out[(start, stop)] = values
                    break
                self.discard(path, why)
        return out

    def begin(self) -> None:
        """Mark the partial folder as this key's (``partial/key.json``) before its first batch is kept."""
        if self.writable and not (self.partial / "key.json").is_file():
            self.folder.write(lambda: write_json_atomic(self.partial / "key.json", self.expected))

    def keep(self, bounds: Bounds, values: np.ndarray) -> None:
        """One finished batch, named by its rows and its checksum (a killed run resumes from it)."""
        if self.writable:
            self.folder.write(lambda: save_array(self.partial / batch_name(bounds, values), values))

    def finish(self, values: np.ndarray, meta: dict) -> None:
        """The finished entry: its array, then ``meta.json`` (with the key and the array's checksum; written last:
        the mark of a finished entry); the partial files go."""
        if not self.writable or not self.folder.write(lambda: save_array(self.dir / "embeddings.npy", values)):
            return
        made = {**meta, "key": self.expected, CHECKSUM: array_digest(values)}
        if self.folder.write(lambda: write_json_atomic(self.dir / "meta.json", made)):
            shutil.rmtree(self.partial, ignore_errors=True)


def save_array(path: Path, values: np.ndarray) -> None:
    """An array as a ``.npy`` file, written atomically."""
    with atomic_open(path, "wb", encoding=None) as fout:
        np.save(fout, values)
