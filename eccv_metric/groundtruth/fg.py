"""MSCOCO-FG and Flickr30K-FG (Chen, Yao and Jin, SIGIR '23, "Rethinking Benchmarks for Cross-modal
Image-text Retrieval", doi:10.1145/3539618.3591758, arXiv:2304.10824): refined captions and enlarged image
galleries.

Sources (github.com/cwj1412/MSCOCO-Flikcr30K_FG, no license file): ``Annotations/<X>_FG_ann.json``
(``{image key: [5 refined captions]}``) and ``Images/<X>_FG_img_filenames.npy`` (the gallery); their
paths, sha256 and home are registry data (:mod:`eccv_metric.benchmarks.collections`), passed in here.

Canonical order (what rows of embeddings / scores mean when no ids are given): gallery = the
``*_img_filenames.npy`` order; captions = the annotation file's keys in file order, each key's captions
in list order.

Ids (integers, as everywhere in the package):
- images: the number in the file name: COCO ids for ``COCO_val2014_<12 digits>.jpg`` and the
  ``unlabeled2017`` distractors ``<12 digits>.jpg``, Flickr photo ids for ``<digits>.jpg`` of
  Flickr30K; a gallery whose ids collide is refused (none do: Flickr30K-FG's Flickr ids are
  1,989,609 and up, COCO ids at most 581,929).
- captions (the collection entry chooses the rule): MSCOCO-FG caption k of an image refines that
  image's k-th COCO caption in ascending caption id order, so it keeps that COCO caption id
  (:func:`coco_caption_ids`); Flickr30K has no caption ids, so caption k of Flickr photo f is
  ``10 * f + k`` (:func:`photo_caption_ids`).

Relation: a caption's positive is its image (t2i: every refined caption against the whole gallery);
an annotated image's positives are its 5 captions (i2t: against all refined captions). The annotated
images are the benchmark's "original pool" (the 5,000 / 1,000 test images), the rest distractors.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from eccv_metric.core.download import SourceFile
from eccv_metric.core.download import default_cache_dir
from eccv_metric.core.download import download
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.files import find_below
from eccv_metric.core.folder import is_built_folder
from eccv_metric.core.folder import read_config
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.positives import Positives
from eccv_metric.groundtruth.split import GroundTruth

CAPTIONS_PER_IMAGE = 5


@dataclass(frozen=True)
class FineGrained:
    """One FG benchmark: gallery and captions in canonical order (see the module docstring)."""

    name: str
    images: IdIndex
    image_files: np.ndarray
    captions: IdIndex
    caption_image: np.ndarray  # dense gallery index of each caption's image
    texts: tuple[str, ...]
    source: str = ""

    def index(self, kind: str) -> IdIndex:
        return self.images if kind == "image" else self.captions

    @property
    def query_images(self) -> np.ndarray:
        """Dense gallery indices of the annotated (query) images, in annotation order."""
        return self.caption_image[::CAPTIONS_PER_IMAGE]

    @cached_property
    def original_pool(self) -> np.ndarray:
        """Group of each gallery image for the original-pool protocol: 0 for the annotated test images, -1 else."""
        group = np.full(len(self.images), -1, dtype=np.int64)
        group[self.query_images] = 0
        return group

    def positives(self, direction: str) -> Positives:
        """t2i: each caption's image; i2t: each annotated image's 5 captions."""
        caption = np.arange(len(self.captions))
        if direction == "t2i":
            return Positives.from_pairs(caption, self.caption_image, len(self.images))
        return Positives.from_pairs(self.caption_image, caption, len(self.captions))


_FILE_ID = re.compile(r"(?:.*/)?(?:[^/]*_)?([0-9]+)\.[A-Za-z]+")


def image_id(file_name: str) -> int | None:
    """``COCO_val2014_000000391895.jpg`` / ``000000063032.jpg`` / ``1007129816.jpg`` -> the number (ASCII digits)."""
    match = _FILE_ID.fullmatch(file_name)
    return int(match.group(1)) if match else None


CaptionIds = Callable[[np.ndarray], np.ndarray]  # annotated image ids -> their captions' ids (images x 5)


def photo_caption_ids(image_ids: np.ndarray) -> np.ndarray:
    """Caption k of photo f: ``10 * f + k`` (Flickr30K has no caption ids)."""
    return np.asarray(image_ids, np.int64)[:, None] * 10 + np.arange(CAPTIONS_PER_IMAGE)


def coco_caption_ids(gt: GroundTruth | None) -> CaptionIds:
    """The rule "caption k of an image keeps the image's k-th COCO caption id, ascending" on the split ``gt``
    (default: the ``eccv_caption`` wheel's)."""
    return lambda image_ids: _coco_caption_ids(image_ids, gt if gt is not None else GroundTruth.from_wheel())


def _find(
    name: str, files: tuple[SourceFile, ...], home: str, source: str | Path | None, cache_dir: str | Path | None
) -> list[Path]:
    paths = []
    names = ", ".join(f.name for f in files)
    for file in files:
        if source is None:
            cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            hint = f"give fg_source= (a folder holding {file.name} and the other {name} file, or a built dataset)"
            paths.append(download(home + file.path, cache / "fg" / file.name, sha256=file.sha256, hint=hint))
            continue
        found = find_below(source, file.name) if Path(source).is_dir() else []
        if not found:
            raise EvaluationError(
                f"{source}: no {file.name} below it; give fg_source= (a folder holding the {name} sources "
                f"{names}, or a built dataset)"
            )
        paths.append(found[0])
    return paths


def load_fg(
    name: str,
    files: tuple[SourceFile, SourceFile],
    home: str,
    caption_ids: CaptionIds,
    source: str | Path | None = None,
    cache_dir: str | Path | None = None,
) -> FineGrained:
    """Read an FG collection from a built dataset folder, a folder holding its two files, or the canonical files.

    ``files``: the annotation JSON and the gallery's file-name .npy (paths below ``home``, sha256);
    ``caption_ids``: the collection's caption id rule (:func:`coco_caption_ids`, :func:`photo_caption_ids`).
    """
    if is_built_folder(source, f"{name}_gallery") or (source is not None and _hub_id(source)):
        return _from_dataset(name, source)  # type: ignore[arg-type]
    ann_path, files_path = _find(name, files, home, source, cache_dir)
    files_array = np.load(files_path, allow_pickle=False)
    if files_array.ndim != 1 or files_array.dtype.kind != "U":
        raise EvaluationError(
            f"{files_path}: expected a 1-D array of file names, got {files_array.dtype} {files_array.shape}"
        )
    ids = [image_id(f) for f in files_array.tolist()]
    if None in ids:
        bad = [f for f, i in zip(files_array.tolist(), ids, strict=True) if i is None]
        raise EvaluationError(f"{files_path}: file names without an id: {preview(bad)}")
    images = IdIndex(np.asarray(ids, np.int64), f"{name} image")  # refuses colliding ids
    expected = "a JSON object {image key: [5 captions]}"
    ann = require_object(read_json(ann_path, expected), ann_path, expected)
    keys = list(ann)
    query_ids = np.asarray([image_id(k + ".jpg") or -1 for k in keys], np.int64)
    dense = images.positions(query_ids)
    if (dense < 0).any():
        missing = np.asarray(keys)[dense < 0]
        raise EvaluationError(f"{ann_path}: annotated images missing from the gallery: {preview(missing)}")
    texts = []
    for key, caps in ann.items():
        if not isinstance(caps, list) or len(caps) != CAPTIONS_PER_IMAGE or not all(isinstance(c, str) for c in caps):
            raise EvaluationError(f"{ann_path}: {key}: expected {CAPTIONS_PER_IMAGE} caption strings")
        texts.extend(caps)
    caption_image = np.repeat(dense, CAPTIONS_PER_IMAGE).astype(np.int64)
    return FineGrained(
        name,
        images,
        files_array,
        IdIndex(np.asarray(caption_ids(query_ids), np.int64).ravel(), f"{name} caption"),
        caption_image,
        tuple(texts),
        str(ann_path),
    )


def _hub_id(source: str | Path) -> bool:
    return not Path(source).exists() and str(source).count("/") == 1


def _from_dataset(name: str, source: str | Path) -> FineGrained:
    """A folder built by ``eccv-caption build`` (or its Hub repo): its ``<name>_gallery`` and ``_captions`` configs."""

    def read(config: str, columns: list[str]) -> dict:
        table = read_config(source, config, columns)
        if table is None:
            raise EvaluationError(f"{source}: no data/{config}/*.parquet")
        return table.to_pydict()

    gallery = read(f"{name}_gallery", ["image_id", "file_name"])
    captions = read(f"{name}_captions", ["caption_id", "image_id", "caption"])
    images = IdIndex(np.asarray(gallery["image_id"], np.int64), f"{name} image")
    caption_image = images.require(np.asarray(captions["image_id"], np.int64), f"{name} captions").astype(np.int64)
    return FineGrained(
        name,
        images,
        np.asarray(gallery["file_name"]),
        IdIndex(np.asarray(captions["caption_id"], np.int64), f"{name} caption"),
        caption_image,
        tuple(captions["caption"]),
        f"{source} ({name} configs)",
    )


def _coco_caption_ids(image_ids: np.ndarray, gt: GroundTruth) -> np.ndarray:
    """The 5 COCO caption ids of each image, ascending (images x 5)."""
    dense = gt.images.require(image_ids, "MSCOCO-FG images")
    order = np.lexsort((gt.caption_ids, gt.caption_image))  # by image, then caption id
    per_image = gt.caption_ids[order].reshape(len(gt.images), CAPTIONS_PER_IMAGE)
    return per_image[dense]
