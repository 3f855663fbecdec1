"""Crisscrossed Captions (Parekh et al., EACL 2021, arXiv:2004.15020): ratings and intramodal ground truth.

CxC rates pairs of test-split items 0-5 (``agg_score``): caption-image
(SITS), caption-caption (STS) and image-image (SIS). Keys in the CSVs:
``COCO_val2014:sentid:<caption id>`` and ``COCO_val2014_<12-digit image id>.jpg``.

Intramodal retrieval positives (the CxC paper's thresholds): a caption pair
with STS >= 3, an image pair with SIS >= 2.5. Pairs are **undirected** by
default: a pair is a positive of both its items, and a pair rated in both
orders (SIS has 2,863 such pairs, 512 of them on both sides of 2.5) is a
positive when either rating reaches the threshold. ``directed=True`` reads
the first column as the query instead.

Where the ratings come from (the same lookup as ``eccv-caption build``): a
built dataset folder (its ``cxc_ratings`` config), a folder holding the CSVs
(searched recursively; a user's copies, read as they are), or the canonical
files of the CxC repository, downloaded once into the cache and checked by sha256.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.download import default_cache_dir
from eccv_metric.download import download
from eccv_metric.errors import EvaluationError
from eccv_metric.positives import IdIndex
from eccv_metric.positives import Positives

CXC_RAW = "https://raw.githubusercontent.com/google-research-datasets/Crisscrossed-Captions/master/data/"
# sha256 of the test CSVs of google-research-datasets/Crisscrossed-Captions (data/, master)
CXC_SHA256 = {
    "sits_test.csv": "f92fd6d36329fb52fd5429eb5c2211f0ab3ad86bb737323f415375a144697ce6",
    "sts_test.csv": "33eea25bf41061c513ef4b39282aaf64bdf9b17ff233e343a6d6ae44d73e0272",
    "sis_test.csv": "01f2ceb349414aff84065c0548837d1630408283601a5c97d86c2f6681cc1571",
}
KINDS = {"sits": ("caption", "image"), "sts": ("caption", "caption"), "sis": ("image", "image")}
THRESHOLDS = {"sits": 3.0, "sts": 3.0, "sis": 2.5}


@dataclass(frozen=True)
class Ratings:
    """One CxC rating file: ``score[k]`` rates the pair (``id_1[k]``, ``id_2[k]``); id_1 is the query column."""

    kind: str
    id_1: np.ndarray
    id_2: np.ndarray
    score: np.ndarray
    source: str = ""

    def within(self, first: IdIndex, second: IdIndex) -> Ratings:
        """The pairs whose two items are test-split items (the CSVs of the test split hold only those)."""
        keep = (first.positions(self.id_1) >= 0) & (second.positions(self.id_2) >= 0)
        if not keep.any():
            raise EvaluationError(f"{self.source}: no {self.kind.upper()} pair of test-split items")
        return Ratings(self.kind, self.id_1[keep], self.id_2[keep], self.score[keep], self.source)


def parse_key(key: str) -> tuple[str, int] | None:
    """``COCO_val2014:sentid:123`` -> (caption, 123); ``COCO_val2014_000000391895.jpg`` -> (image, 391895)."""
    if ":sentid:" in key:
        tail = key.rsplit(":", 1)[1]
        return ("caption", int(tail)) if tail.isdigit() else None
    stem = key.rsplit("_", 1)[-1]
    if key.startswith("COCO_") and stem.endswith(".jpg") and stem[:-4].isdigit():
        return "image", int(stem[:-4])
    return None


def read_csv(path: str | Path, kind: str) -> Ratings:
    """Read ``<kind>_test.csv``; a malformed line raises an error naming the file and line."""
    first, second, scores = [], [], []
    want = KINDS[kind]
    with open(path, newline="", encoding="utf-8") as fin:
        reader = csv.reader(fin)
        header = next(reader, None)
        if header is None or len(header) < 3 or header[2] != "agg_score":
            raise EvaluationError(f"{path}: not a CxC ratings CSV (header {header!r:.80})")
        for line, row in enumerate(reader, start=2):
            keys = [parse_key(k) for k in row[:2]] if len(row) >= 3 else [None]
            try:
                score = float(row[2])
            except (ValueError, IndexError):
                score = float("nan")
            if None in keys or tuple(k[0] for k in keys) != want or not 0 <= score <= 5:  # type: ignore[index]
                raise EvaluationError(f"{path}, line {line}: not a {kind.upper()} rating of {want}: {row!r:.120}")
            first.append(keys[0][1])  # type: ignore[index]
            second.append(keys[1][1])  # type: ignore[index]
            scores.append(score)
    return Ratings(kind, np.asarray(first, np.int64), np.asarray(second, np.int64), np.asarray(scores), str(path))


def _from_dataset(folder: Path, kind: str) -> Ratings | None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted((folder / "data" / "cxc_ratings").glob("*.parquet"))
    if not files:
        return None
    table = pq.ParquetDataset([str(f) for f in files]).read(columns=["kind", "id_1", "id_2", "score"])
    table = table.filter(pc.equal(table["kind"], kind))
    return Ratings(
        kind,
        table["id_1"].to_numpy().astype(np.int64),
        table["id_2"].to_numpy().astype(np.int64),
        np.round(table["score"].to_numpy().astype(np.float64), 2),  # stored as float32; the CSVs have 2 decimals
        f"{folder} (cxc_ratings config)",
    )


def load_ratings(kind: str, source: str | Path | None = None, cache_dir: str | Path | None = None) -> Ratings:
    """The ``kind`` (sits / sts / sis) test ratings from ``source`` (see the module docstring)."""
    if kind not in KINDS:
        raise EvaluationError(f"unknown CxC rating kind {kind!r}; known: {', '.join(KINDS)}")
    name = f"{kind}_test.csv"
    if source is None:
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        path = download(CXC_RAW + name, cache / "cxc" / name, sha256=CXC_SHA256[name])
        return read_csv(path, kind)
    source = Path(source)
    if source.is_file():
        return read_csv(source, kind)
    if not source.is_dir():
        raise EvaluationError(f"{source}: no such file or folder (CxC ratings: a built dataset or the CSVs)")
    built = _from_dataset(source, kind)
    if built is not None:
        return built
    found = sorted(source.rglob(name))
    if not found:
        raise EvaluationError(f"{source}: neither a built dataset (data/cxc_ratings) nor a folder holding {name}")
    return read_csv(found[0], kind)


def intramodal_positives(ratings: Ratings, index: IdIndex, directed: bool = False) -> Positives:
    """Positives of the ``sts`` (captions) or ``sis`` (images) task over ``index`` (self pairs never count)."""
    a, b = index.positions(ratings.id_1), index.positions(ratings.id_2)
    keep = (a >= 0) & (b >= 0) & (a != b) & (ratings.score >= THRESHOLDS[ratings.kind])
    a, b = a[keep], b[keep]
    if not directed:
        a, b = np.concatenate([a, b]), np.concatenate([b, a])
    return Positives.from_pairs(a, b, len(index))
