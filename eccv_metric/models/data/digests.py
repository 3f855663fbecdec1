"""Content digests of the files items come from (Parquet files of a local build, images in ``images=``
folders), each file read once: the embedding cache's key follows what the files hold, not their names.

A file's sha256 is remembered in ``<cache root>/file_digests.json`` under its resolved path with its size,
modification time, change time (``st_ctime_ns``: set by the system on every write or ``touch``, never by the
user) and inode; while all four are unchanged the file is trusted to hold what was hashed, and any change
hashes it again. Members of an ``images=`` zip are known by the CRC-32 and size the zip's directory records
for them and the zip's own path, size and times (the directory is read on every run, nothing decompressed).
Without a cache root (``cache=False``) nothing is remembered: every file is hashed. The memo is written through
the run's :class:`~eccv_metric.models.cache.folder.CacheFolder` (a write that fails: one warning for the run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from eccv_metric.core.download import sha256_file
from eccv_metric.core.files import write_json_atomic
from eccv_metric.models.cache.folder import CacheFolder

MEMO = "file_digests.json"


def stamp(path: str | Path) -> list[int]:
    """What must not change for a remembered digest to hold: size, mtime, ctime (ns), inode."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class FileDigests:
    """sha256 of files, remembered by their stamp under ``root`` (the cache's folder: the run's
    :class:`~eccv_metric.models.cache.folder.CacheFolder` or a path; see the module docstring); None: no memo."""

    def __init__(self, root: str | Path | CacheFolder | None = None):
        self.folder = root if isinstance(root, CacheFolder) or root is None else CacheFolder(root)
        self.path = self.folder.root / MEMO if self.folder is not None else None
        self.known: dict[str, list] = {}
        self.changed = False
        if self.path is not None and self.path.is_file():
            try:
                loaded = json.loads(self.path.read_text())
            except (OSError, ValueError):
                loaded = {}
            self.known = loaded if isinstance(loaded, dict) else {}

    def of(self, path: str | Path) -> str:
        """The file's sha256 (read now unless remembered with the same stamp)."""
        name = os.path.realpath(path)
        now = stamp(name)
        seen = self.known.get(name)
        if isinstance(seen, list) and len(seen) == 2 and seen[0] == now:
            return str(seen[1])
        digest = sha256_file(name)
        if stamp(name) == now:  # not written while it was read
            self.known[name] = [now, digest]
            self.changed = True
        return digest

    def save(self) -> None:
        """Write the memo (atomically; a memo that cannot be written only costs hashing again: the folder warns)."""
        if self.folder is None or self.path is None or not self.changed:
            return
        path, known = self.path, self.known
        if self.folder.write(lambda: write_json_atomic(path, known)):
            self.changed = False
