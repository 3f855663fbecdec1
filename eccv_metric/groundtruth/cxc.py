"""Crisscrossed Captions (Parekh et al., EACL 2021, arXiv:2004.15020): ratings and the relations built on them.

CxC rates pairs of test-split items 0-5 (``agg_score``): caption-image
(SITS), caption-caption (STS) and image-image (SIS). Keys in the CSVs:
``COCO_val2014:sentid:<caption id>`` and ``COCO_val2014_<12-digit image id>.jpg``.

Retrieval positives (the CxC paper's thresholds, section 3): a caption-image
pair with SITS >= 3, a caption pair with STS >= 3, an image pair with SIS >= 2.5.
Intramodal pairs are **undirected** by default: a pair is a positive of both
its items, and a pair rated in both orders (SIS has 2,863 such pairs, 512 of
them on both sides of 2.5) is a positive when either rating reaches the
threshold. ``directed=True`` reads the first column as the query instead.

Where the ratings come from (the same lookup as ``eccv-caption build``): a
built dataset folder or Hub repo (its ``cxc_ratings`` config), a folder
holding the CSVs (searched recursively; a user's copies, read as they are),
or the canonical files of the CxC repository, downloaded once into the cache
and checked by sha256. This module is the one parser of the CSVs: the
dataset builder reads them through it too.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.core.download import default_cache_dir
from eccv_metric.core.download import download
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import find_below
from eccv_metric.core.files import read_text
from eccv_metric.core.folder import is_built_folder
from eccv_metric.core.folder import read_config
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.positives import Positives

CXC_RAW = "https://raw.githubusercontent.com/google-research-datasets/Crisscrossed-Captions/master/data/"
# sha256 of the test CSVs of google-research-datasets/Crisscrossed-Captions (data/, master)
CXC_SHA256 = {
    "sits_test.csv": "f92fd6d36329fb52fd5429eb5c2211f0ab3ad86bb737323f415375a144697ce6",
    "sts_test.csv": "33eea25bf41061c513ef4b39282aaf64bdf9b17ff233e343a6d6ae44d73e0272",
    "sis_test.csv": "01f2ceb349414aff84065c0548837d1630408283601a5c97d86c2f6681cc1571",
}
CXC_FILES = tuple(CXC_SHA256)
RATING_ITEMS = {"sits": ("caption", "image"), "sts": ("caption", "caption"), "sis": ("image", "image")}
THRESHOLDS = {"sits": 3.0, "sts": 3.0, "sis": 2.5}
_CAPTION_KEY = re.compile(r"[^:]*:sentid:([0-9]+)")
_IMAGE_KEY = re.compile(r"COCO_[A-Za-z0-9]+_([0-9]+)\.jpg")
MISSING_HINT = (
    "give cxc_source= (a folder with the CxC CSVs sts_test.csv, sis_test.csv, sits_test.csv, or a built dataset)"
)


@dataclass(frozen=True)
class Ratings:
    """One CxC rating file: ``score[k]`` rates the pair (``id_1[k]``, ``id_2[k]``); id_1 is the query column."""

    kind: str
    id_1: np.ndarray
    id_2: np.ndarray
    score: np.ndarray
    source: str = ""
    method: tuple[str, ...] = ()  # the CSV's sampling_method column (when read from a CSV or a built folder)

    def within(self, first: IdIndex, second: IdIndex) -> Ratings:
        """The pairs whose two items are test-split items (the CSVs of the test split hold only those)."""
        keep = (first.positions(self.id_1) >= 0) & (second.positions(self.id_2) >= 0)
        if not keep.any():
            raise EvaluationError(f"{self.source}: no {self.kind.upper()} pair of test-split items")
        method = tuple(np.asarray(self.method, dtype=object)[keep].tolist()) if self.method else ()
        return Ratings(self.kind, self.id_1[keep], self.id_2[keep], self.score[keep], self.source, method)


def parse_key(key: str) -> tuple[str, int] | None:
    """``COCO_val2014:sentid:123`` -> (caption, 123); ``COCO_val2014_000000391895.jpg`` -> (image, 391895).

    ASCII decimal digits only (``str.isdigit`` would also take other scripts' digits).
    """
    match = _CAPTION_KEY.fullmatch(key)
    if match:
        return "caption", int(match.group(1))
    match = _IMAGE_KEY.fullmatch(key)
    if match:
        return "image", int(match.group(1))
    return None


def read_csv(path: str | Path, kind: str) -> Ratings:
    """Read ``<kind>_test.csv``; a malformed line raises an error naming the file and line."""
    first, second, scores, methods = [], [], [], []
    want = RATING_ITEMS[kind]
    reader = csv.reader(io.StringIO(read_text(path), newline=""))  # a few MB; a missing file says so
    header = next(reader, None)
    if header is None or len(header) < 3 or header[2] != "agg_score":
        raise EvaluationError(f"{path}: not a CxC ratings CSV (header {header!r:.80}); {MISSING_HINT}")
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
        methods.append(row[3] if len(row) > 3 else "")
    return Ratings(
        kind,
        np.asarray(first, np.int64),
        np.asarray(second, np.int64),
        np.asarray(scores),
        str(path),
        tuple(methods),
    )


def _from_dataset(source: str | Path, kind: str) -> Ratings | None:
    import pyarrow.compute as pc

    table = read_config(source, "cxc_ratings", ["kind", "id_1", "id_2", "score", "sampling_method"])
    if table is None:
        return None
    table = table.filter(pc.equal(table["kind"], kind))
    return Ratings(
        kind,
        table["id_1"].to_numpy().astype(np.int64),
        table["id_2"].to_numpy().astype(np.int64),
        np.round(table["score"].to_numpy().astype(np.float64), 2),  # stored as float32; the CSVs have 2 decimals
        f"{source} (cxc_ratings config)",
        tuple(table["sampling_method"].to_pylist()),
    )


def load_ratings(kind: str, source: str | Path | None = None, cache_dir: str | Path | None = None) -> Ratings:
    """The ``kind`` (sits / sts / sis) test ratings from ``source`` (see the module docstring)."""
    if kind not in RATING_ITEMS:
        raise EvaluationError(f"unknown CxC rating kind {kind!r}; known: {', '.join(RATING_ITEMS)}")
    name = f"{kind}_test.csv"
    if source is None:
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        path = download(CXC_RAW + name, cache / "cxc" / name, sha256=CXC_SHA256[name], hint=MISSING_HINT)
        return read_csv(path, kind)
    path = Path(source)
    if path.is_file():
        return read_csv(path, kind)
    if path.is_dir() and not is_built_folder(path, "cxc_ratings"):
        found = find_below(path, name)
        if not found:
            raise EvaluationError(
                f"{source}: neither a built dataset (data/cxc_ratings) nor a folder holding {name}; {MISSING_HINT}"
            )
        return read_csv(found[0], kind)
    try:
        built = _from_dataset(source, kind)
    except EvaluationError as exc:  # neither a local file or folder nor a readable Hub dataset repo
        if path.exists():
            raise
        why = str(exc).removeprefix(f"{source}: ")
        raise type(exc)(f"{source}: no such file or folder, and {why}; {MISSING_HINT}") from None  # HubReadError too
    if built is None:
        raise EvaluationError(
            f"{source}: the built dataset has no cxc_ratings config (build it with the CxC CSVs); or {MISSING_HINT}"
        )
    return built


def intramodal_positives(ratings: Ratings, index: IdIndex, directed: bool = False) -> Positives:
    """Positives of the ``sts`` (captions) or ``sis`` (images) ratings over ``index`` (self pairs never count)."""
    a, b = index.positions(ratings.id_1), index.positions(ratings.id_2)
    keep = (a >= 0) & (b >= 0) & (a != b) & (ratings.score >= THRESHOLDS[ratings.kind])
    a, b = a[keep], b[keep]
    if not directed:
        a, b = np.concatenate([a, b]), np.concatenate([b, a])
    return Positives.from_pairs(a, b, len(index))


def sits_positives(ratings: Ratings, captions: IdIndex, images: IdIndex) -> dict[str, Positives]:
    """CxC image-caption positives from the SITS ratings: score >= 3, caption and image both in the split."""
    c, i = captions.positions(ratings.id_1), images.positions(ratings.id_2)
    keep = (c >= 0) & (i >= 0) & (ratings.score >= THRESHOLDS["sits"])
    return {
        "i2t": Positives.from_pairs(i[keep], c[keep], len(captions)),
        "t2i": Positives.from_pairs(c[keep], i[keep], len(images)),
    }


def co_caption_positives(caption_image: np.ndarray) -> Positives:
    """MS-COCO's own caption-to-caption relation: the other captions of the query's image (never itself)."""
    order = np.argsort(caption_image, kind="stable")
    image_sorted = caption_image[order]
    starts = np.searchsorted(image_sorted, image_sorted, side="left")
    ends = np.searchsorted(image_sorted, image_sorted, side="right")
    counts = ends - starts
    q = np.repeat(order, counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    g = order[np.repeat(starts, counts) + offsets]
    keep = q != g
    return Positives.from_pairs(q[keep], g[keep], len(caption_image))
