"""On-disk cache of the wheel's ground truth as compact arrays: ``Metrics()`` without parsing JSON.

Parsing and checking the ``eccv_caption`` wheel's seven files takes about
0.5 s; the same arrays read back from one ``.npz`` take a few milliseconds.
The cache file is named by the sha256 of the wheel files and of this format,
so a different wheel (or a change of this layout) never reads a stale entry;
it is written to a temporary file and renamed (never half-written), and any
unreadable entry is ignored and rebuilt. Folder: ``$ECCV_CAPTION_CACHE`` or
``$HF_HOME`` (default ``~/.cache/huggingface``), then
``eccv_caption_sources/ground_truth``; ``ECCV_CAPTION_NO_GT_CACHE=1`` turns
the cache off. A read-only cache folder just means no cache.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eccv_metric.download import default_cache_dir
from eccv_metric.groundtruth import DIRECTIONS
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import IdIndex
from eccv_metric.positives import Positives

FORMAT = "eccv_metric ground truth arrays v1"


def cache_file(digests: Mapping[str, str]) -> Path | None:
    """Where the ground truth of files with these sha256 digests is cached (None: cache turned off)."""
    if os.environ.get("ECCV_CAPTION_NO_GT_CACHE"):
        return None
    key = hashlib.sha256("\n".join([FORMAT, *(f"{k}={v}" for k, v in sorted(digests.items()))]).encode())
    return default_cache_dir() / "ground_truth" / f"wheel_{key.hexdigest()[:24]}.npz"


def load(path: Path | None, source: str) -> GroundTruth | None:
    """The cached ground truth, or None when there is no readable entry."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as arrays:
            data = {name: arrays[name] for name in arrays.files}
        if str(data["format"]) != FORMAT:
            return None
        images = IdIndex(data["image_ids"], "image")
        captions = IdIndex(data["caption_ids"], "caption")
        positives: dict[str, dict[str, Positives]] = {}
        for bench in data["benchmarks"].tolist():
            positives[bench] = {}
            for direction in DIRECTIONS:
                key = f"{bench}_{direction}"
                n_gallery = len(captions) if direction == "i2t" else len(images)
                outside_q, outside_n, outside_ids = (data[f"{key}_outside_{part}"] for part in ("query", "n", "ids"))
                pieces = np.split(outside_ids, np.cumsum(outside_n)[:-1]) if len(outside_q) else []
                outside = {int(q): tuple(v.tolist()) for q, v in zip(outside_q.tolist(), pieces, strict=True)}
                positives[bench][direction] = Positives(
                    data[f"{key}_query"], data[f"{key}_indptr"], data[f"{key}_indices"], n_gallery, outside
                )
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    return GroundTruth(images, captions, data["caption_image"], positives, source=source)


def save(gt: GroundTruth, path: Path | None) -> None:
    """Write ``gt``'s ids and positive lists to ``path`` atomically; a folder that cannot be written is skipped."""
    if path is None:
        return
    arrays: dict[str, np.ndarray] = {
        "format": np.array(FORMAT),
        "image_ids": gt.image_ids,
        "caption_ids": gt.caption_ids,
        "caption_image": gt.caption_image,
        "benchmarks": np.array(list(gt.positives)),
    }
    for bench, by_dir in gt.positives.items():
        for direction, rel in by_dir.items():
            key = f"{bench}_{direction}"
            arrays.update({f"{key}_query": rel.query, f"{key}_indptr": rel.indptr, f"{key}_indices": rel.indices})
            outside = sorted(rel.outside.items())
            arrays[f"{key}_outside_query"] = np.array([q for q, _ in outside], dtype=np.int64)
            arrays[f"{key}_outside_n"] = np.array([len(v) for _, v in outside], dtype=np.int64)
            arrays[f"{key}_outside_ids"] = np.array([i for _, v in outside for i in v], dtype=np.int64)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fout:
                np.savez(fout, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        return
