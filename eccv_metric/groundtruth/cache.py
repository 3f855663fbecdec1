"""On-disk cache of the wheel's ground truth as compact arrays: ``Metrics()`` without parsing JSON.

Parsing and checking the ``eccv_caption`` wheel's seven files takes about
0.5 s; the same arrays read back from one ``.npz`` take a few milliseconds.
The cache file is named by the sha256 of the wheel files and of this format,
so a different wheel (or a change of this layout) never reads a stale entry;
it is written atomically (never half-written), and any unreadable entry is
ignored and rebuilt. Folder: ``$ECCV_CAPTION_CACHE`` or ``$HF_HOME`` (default
``~/.cache/huggingface``), then ``eccv_caption_sources/ground_truth``;
``ECCV_CAPTION_NO_GT_CACHE=1`` turns the cache off. A read-only cache folder
just means no cache.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eccv_metric.core.download import default_cache_dir
from eccv_metric.core.files import atomic_open

FORMAT = "eccv_metric ground truth arrays v1"


def cache_file(digests: Mapping[str, str]) -> Path | None:
    """Where the ground truth of files with these sha256 digests is cached (None: cache turned off)."""
    if os.environ.get("ECCV_CAPTION_NO_GT_CACHE"):
        return None
    key = hashlib.sha256("\n".join([FORMAT, *(f"{k}={v}" for k, v in sorted(digests.items()))]).encode())
    return default_cache_dir() / "ground_truth" / f"wheel_{key.hexdigest()[:24]}.npz"


def load_arrays(path: Path | None) -> dict[str, np.ndarray] | None:
    """The cached arrays, or None when there is no readable entry of this format."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as arrays:
            data = {name: arrays[name] for name in arrays.files}
        return data if str(data["format"]) == FORMAT else None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def save_arrays(arrays: Mapping[str, np.ndarray], path: Path | None) -> None:
    """Write the arrays (plus the format tag) atomically; a folder that cannot be written is skipped."""
    if path is None:
        return
    try:
        with atomic_open(path, "wb") as fout:
            np.savez(fout, format=np.array(FORMAT), **arrays)
    except OSError:
        return
