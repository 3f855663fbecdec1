"""The pair stage's cache: one file per block of a pair set's raw pair-head scores, resumable and shared.

An entry is a folder ``<cache root>/pairs/<sha256 of its key>/`` (the key: what changes a pair's score and which
pairs are scored, the pair set's own digest included; see :func:`~eccv_metric.models.pairs.stage.block_key`)
holding ``key.json`` and one ``block-<b>.npz`` per finished block: the block's scores (float32, one per pair, the
pair set's order), the sha256 of those scores (:func:`~eccv_metric.models.cache.entries.array_digest`, the
embedding cache's checksum), the sha256 of the pairs they score
(:meth:`~eccv_metric.models.pairs.pairset.PairSet.digest`), and the entry that scored them (its key's sha256) with
the model's spec. Each file is written whole to a temporary name and renamed
(:func:`~eccv_metric.core.files.atomic_open`): a run killed mid-block leaves no trace of it; several processes
(torchrun ranks, independent jobs, two runs at once) write their blocks side by side and a reader sees a whole
file or none. A block counts as present (:meth:`BlockCache.has`) when its file names this entry, and is used
(:meth:`BlockCache.read`) only when it names this entry (a file copied from another model's entry, another first
stage's or another pair set's, is not), both digests match (its pairs, its bytes), and its scores are finite and
one per pair; anything else is named in one :class:`~eccv_metric.models.cache.entries.CacheWarning` line (with
the model that scored it, where that is another) and computed again. Every selection that changes the pairs has
an entry of its own, so two runs never discard each other's blocks. Raw scores are stored (the score rule adds
the first stage's similarity afterwards), so one entry serves ``itm`` and ``itm+itc``.
"""

from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np

from eccv_metric.core.files import atomic_open
from eccv_metric.core.files import write_json_atomic
from eccv_metric.models.cache.entries import array_digest
from eccv_metric.models.cache.entries import cache_key
from eccv_metric.models.cache.entries import canonical
from eccv_metric.models.cache.entries import difference
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.cache.folder import CacheWarning

FOLDER = "pairs"  # under the embedding cache's root


class BlockCache:
    """The blocks of one pair set scored by one pair scorer (see the module docstring)."""

    def __init__(self, key: dict, folder: CacheFolder, model: str):
        self.expected = canonical(key)
        self.folder = folder  # the run's cache folder: every write through it (one warning if it cannot be written)
        self.entry = cache_key(key)  # what each block file carries: the entry that scored it
        self.model = model  # the pair scorer's spec, carried too (to name it where its block turns up elsewhere)
        self.dir = folder.root / FOLDER / self.entry
        self.writable = True  # False: a file that does not match could not be removed
        self._checked = False

    def path(self, block: int) -> Path:
        return self.dir / f"block-{block:07d}.npz"

    def has(self, block: int) -> bool:
        """Whether a file of this entry is there for ``block`` (its pairs and bytes not yet checked: :meth:`read`
        checks them; a file of another entry or one that cannot be read is not counted, :meth:`read` names it)."""
        self.check_key()
        path = self.path(block)
        if not path.is_file():
            return False
        try:
            with np.load(path, allow_pickle=False) as stored:
                return str(stored["entry"]) == self.entry
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
            return False

    def check_key(self) -> None:
        """A folder whose ``key.json`` names another key (copied from another model or data) is warned about and
        removed, once."""
        if self._checked:
            return
        self._checked = True
        try:
            stored = json.loads((self.dir / "key.json").read_text())
        except (OSError, ValueError):
            return  # no key yet (a new entry), or one being written: the blocks' own digests decide
        if stored != self.expected:
            self.discard(
                self.dir, f"the pair scorer and items it stands for ({difference(stored, self.expected)} differs)"
            )

    def read(self, block: int, pairs: str, n: int) -> np.ndarray | None:
        """The scores of ``block`` when its file holds ``n`` finite scores of the pairs whose digest is ``pairs``
        and its bytes match its checksum; else None (a file that does not match is warned about and removed)."""
        self.check_key()
        path = self.path(block)
        if not path.is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as stored:
                scores, digest, scored = stored["scores"], str(stored["digest"]), str(stored["pairs"])
                entry = str(stored["entry"]) if "entry" in stored.files else None
                model = str(stored["model"]) if "model" in stored.files else None
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            self.discard(path, f"a finished block (unreadable: {type(exc).__name__})")
            return None
        why = None
        if entry != self.entry:
            why = self.foreign(entry, model)
        elif scored != pairs:
            why = "the pairs this block scores (the file of another block of this entry)"
        elif scores.dtype != np.float32 or scores.shape != (n,):
            why = f"a block of {n} scores ({scores.dtype} of shape {scores.shape})"
        elif array_digest(scores) != digest:
            why = "its checksum (the scores changed on disk)"
        elif not np.isfinite(scores).all():
            why = "finite scores"
        if why is not None:
            self.discard(path, why)
            return None
        return scores

    def write(self, block: int, scores: np.ndarray, pairs: str) -> None:
        """Keep a finished block (atomically; nothing when the cache cannot be written)."""
        if not self.writable:
            return
        if not (self.dir / "key.json").is_file():
            self.folder.write(lambda: write_json_atomic(self.dir / "key.json", self.expected))

        def save() -> None:
            with atomic_open(self.path(block), "wb", encoding=None) as fout:
                np.savez(fout, scores=scores, digest=np.array(array_digest(scores)), pairs=np.array(pairs),
                         entry=np.array(self.entry), model=np.array(self.model))  # fmt: skip

        self.folder.write(save)

    def foreign(self, entry: str | None, model: str | None) -> str:
        """Why a block file of another entry is not used, naming the model that scored it."""
        if entry is None:
            return "this entry (the file names no entry: a block written before blocks carried their entry)"
        return (
            f"this entry ({self.model}, entry {self.entry[:12]}): it holds the scores of {model or 'another model'} "
            f"for entry {entry[:12]} (a file copied from another entry: another model, first stage or pair set)"
        )

    def discard(self, path: Path, why: str) -> None:
        """Warn once that ``path`` does not match, then remove it (or, when it cannot be removed, stop writing)."""
        try:
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
            tail = "scoring it again"
        except OSError as exc:
            self.writable = False
            tail = f"scoring it again without the cache (it cannot be replaced: {type(exc).__name__})"
        warnings.warn(f"cache {path} does not match {why}: {tail}", CacheWarning, stacklevel=4)
