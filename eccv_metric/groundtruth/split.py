"""The COCO Karpathy 5K test split as compact integer arrays: ids, folds, positive lists, categories.

Ids (COCO image ids, COCO caption ids) are mapped to dense indices: images in
Karpathy order (order of first appearance of their captions), captions in the
order of ``coco_test_ids.npy``. Positive lists are CSR arrays over dense
indices. The same structure is built from the ``eccv_caption`` wheel's data
files (:meth:`GroundTruth.from_wheel`), from a built dataset folder or Hub
repo (:meth:`GroundTruth.from_dataset`) or from any id lists
(:meth:`GroundTruth.from_id_lists`, e.g. a small synthetic split in tests).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np

from eccv_metric.core.download import sha256_file
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.folder import read_config
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.jsonio import id_keys
from eccv_metric.core.jsonio import int_list
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.positives import Positives
from eccv_metric.groundtruth import cache
from eccv_metric.groundtruth.categories import categories_matrix
from eccv_metric.groundtruth.categories import dataset_categories
from eccv_metric.groundtruth.categories import load_instance_categories

DIRECTIONS = ("i2t", "t2i")
BENCHMARKS = ("coco", "cxc", "eccv")
N_FOLDS = 5

# sha256 of the data files of eccv_caption 0.1.0 (PyPI, MIT): the ground truth we verify against.
WHEEL_FILES = {
    "coco_test_ids.npy": "edf99145aaed260188fd9384c1329ed287fca0e9b92e4e59de46660667932a15",
    "original_image_to_caption.json": "17e7673206edefd9cd227e8fafb703eba375671e43dd202a33b51567ebd4593e",
    "original_caption_to_image.json": "646c37bf5148480d854a3d135b1f3646cc7fa2bd0f84ed7499e264f09338e0fa",
    "cxc_image_to_caption.json": "e567e46b527901bb87ad9cf6511d005e5ad80620a968db1b3314bce23c917a61",
    "cxc_caption_to_image.json": "95fa65de2171c2d5df8769b46770cb74b9d4e09522d0c255e5d166c56028d125",
    "eccv_image_to_caption.json": "47b822df8932da569a471a557f49e7b45465dac3728c2e2922f7bfbd25399242",
    "eccv_caption_to_image.json": "3f1d209e7fc4100acc4092818125884d1523582ccebf950a4f89ff71babe281a",
}
WHEEL_PREFIX = {"coco": "original", "cxc": "cxc", "eccv": "eccv"}


def wheel_data_dir() -> Path:
    """Folder of the installed ``eccv_caption`` package's data files (without importing it)."""
    spec = importlib.util.find_spec("eccv_caption")
    if spec is None or not spec.submodule_search_locations:
        raise EvaluationError("the ground truth comes from the `eccv_caption` package: pip install eccv_caption==0.1.0")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def load_id_lists(path: Path) -> dict[int, list[int]]:
    """Read an official ``{id: [ids]}`` JSON file: canonical integer keys, lists of integer ids."""
    expected = 'a JSON object {"<query id>": [<positive ids>]}'
    raw = require_object(read_json(path, expected), path, expected)
    keys = id_keys(raw, path, "query id")
    return {k: int_list(v, path, f"the list of query {k}") for k, v in zip(keys.tolist(), raw.values(), strict=True)}


@dataclass(frozen=True)
class GroundTruth:
    """The test split: ids, folds, positive lists and (optionally) COCO categories.

    ``positives[benchmark][direction]`` with benchmark in ``coco``, ``cxc``,
    ``eccv`` (plus ``pm`` when PM lists were given as files) and direction
    ``i2t`` (image query -> caption positives) or ``t2i``.
    ``image_categories`` is a bool matrix (images x category ids) or ``None``.
    """

    name: ClassVar[str] = "coco_5k"

    images: IdIndex
    captions: IdIndex
    caption_image: np.ndarray
    positives: dict[str, dict[str, Positives]]
    image_categories: np.ndarray | None = None
    source: str = ""
    category_names: dict[int, str] = field(default_factory=dict)

    def index(self, kind: str) -> IdIndex:
        return self.images if kind == "image" else self.captions

    @property
    def image_ids(self) -> np.ndarray:
        return self.images.ids

    @property
    def caption_ids(self) -> np.ndarray:
        return self.captions.ids

    @cached_property
    def caption_fold(self) -> np.ndarray:
        n = len(self.captions)
        return (np.arange(n) // (n // N_FOLDS)).astype(np.int8)

    @cached_property
    def image_fold(self) -> np.ndarray:
        fold = np.full(len(self.images), -1, dtype=np.int8)
        fold[self.caption_image] = self.caption_fold
        return fold

    def fold(self, kind: str) -> np.ndarray:
        """COCO 1K fold of each dense item of a modality."""
        return self.image_fold if kind == "image" else self.caption_fold

    def query_fold(self, direction: str) -> np.ndarray:
        return self.fold("image" if direction == "i2t" else "caption")

    def gallery_fold(self, direction: str) -> np.ndarray:
        return self.fold("caption" if direction == "i2t" else "image")

    def query_index(self, direction: str) -> IdIndex:
        return self.images if direction == "i2t" else self.captions

    def gallery_index(self, direction: str) -> IdIndex:
        return self.captions if direction == "i2t" else self.images

    @classmethod
    def from_id_lists(
        cls,
        caption_ids: Iterable[int],
        lists: Mapping[str, Mapping[str, Mapping[int, Iterable[int]]]],
        image_categories: Mapping[int, Iterable[int]] | None = None,
        source: str = "",
        category_names: Mapping[int, str] | None = None,
    ) -> GroundTruth:
        """Build from the caption ids in Karpathy order and ``lists[benchmark][direction]``.

        ``lists['coco']['t2i']`` must give every caption exactly one image; the
        images are ordered by first appearance of their captions. Folds are
        consecutive fifths of the caption order and every image's captions must
        fall in one fold.
        """
        captions = IdIndex(np.asarray(list(caption_ids), dtype=np.int64), "caption")
        if len(captions) % N_FOLDS:
            raise EvaluationError(f"{len(captions)} captions cannot form {N_FOLDS} equal folds")
        coco_t2i = lists["coco"]["t2i"]
        missing = [c for c in captions.ids.tolist() if len(list(coco_t2i.get(c, ()))) != 1]
        if missing:
            raise EvaluationError(f"COCO caption->image lists must give one image per caption: {preview(missing)}")
        cap_img_ids = np.fromiter((next(iter(coco_t2i[c])) for c in captions.ids.tolist()), np.int64, len(captions))
        _, first = np.unique(cap_img_ids, return_index=True)
        images = IdIndex(cap_img_ids[np.sort(first)], "image")
        caption_image = images.positions(cap_img_ids)

        positives: dict[str, dict[str, Positives]] = {}
        for bench, by_dir in lists.items():
            positives[bench] = {
                "i2t": Positives.from_id_lists(by_dir["i2t"], images, captions, f"{bench} i2t"),
                "t2i": Positives.from_id_lists(by_dir["t2i"], captions, images, f"{bench} t2i"),
            }
        cats = None
        if image_categories is not None:
            cats = categories_matrix(image_categories, images)
        gt = cls(images, captions, caption_image, positives, cats, source, dict(category_names or {}))
        fold_of_caption = np.full(len(images), -1, dtype=np.int64)
        fold_of_caption[caption_image] = gt.caption_fold
        if (fold_of_caption[caption_image] != gt.caption_fold).any():
            raise EvaluationError("an image's captions span two COCO 1K folds: caption order is not Karpathy order")
        return gt

    @classmethod
    def from_wheel(
        cls, instances_json: str | Path | None = None, data_dir: str | Path | None = None, verify: bool = True
    ) -> GroundTruth:
        """Load the ground truth shipped in the ``eccv_caption`` wheel (checked by sha256).

        ``instances_json``: a COCO-format instances file (e.g. instances_val2014.json)
        whose categories enable PMRP.
        """
        data = Path(data_dir) if data_dir is not None else wheel_data_dir()
        digests = {name: sha256_file(data / name) for name in WHEEL_FILES}
        if verify:
            for name, digest in WHEEL_FILES.items():
                if digests[name] != digest:
                    raise EvaluationError(f"{data / name} is not the eccv_caption 0.1.0 file (sha256 mismatch)")
        path = cache.cache_file(digests)
        arrays = cache.load_arrays(path)
        gt = None if arrays is None else _from_arrays(arrays, str(data))
        if gt is None:
            gt = cls._parse_wheel(data)
            cache.save_arrays(_to_arrays(gt), path)
        if instances_json is None:
            return gt
        return gt.with_categories(*load_instance_categories(instances_json, gt.image_ids))

    @classmethod
    def _parse_wheel(cls, data: Path) -> GroundTruth:
        """The wheel's JSON lists, parsed and checked (about 0.5 s; the cache keeps the result)."""
        caption_ids = np.load(data / "coco_test_ids.npy").astype(np.int64)
        lists = {
            bench: {
                "i2t": load_id_lists(data / f"{prefix}_image_to_caption.json"),
                "t2i": load_id_lists(data / f"{prefix}_caption_to_image.json"),
            }
            for bench, prefix in WHEEL_PREFIX.items()
        }
        return cls.from_id_lists(caption_ids, lists, source=str(data))

    @classmethod
    def from_dataset(cls, source: str | Path, token: str | None = None) -> GroundTruth:
        """Load from a built ECCV Caption dataset: a local folder or a Hub dataset repo id.

        Reads the ``positives`` config (its t2i rows give the captions in
        Karpathy order) and, when present, the ``images`` config's categories.
        Only the needed Parquet columns are read (no image bytes).
        """
        columns = ["direction", "query_id", "coco", "cxc", "eccv"]
        table = read_config(source, "positives", columns, token)
        if table is None:
            raise EvaluationError(f"{source}: no data/positives/*.parquet (build it with `eccv-caption build`)")
        rows = table.to_pydict()
        lists: dict[str, dict[str, dict[int, list[int]]]] = {b: {"i2t": {}, "t2i": {}} for b in BENCHMARKS}
        caption_ids = []
        for k, direction in enumerate(rows["direction"]):
            if direction not in DIRECTIONS:  # CxC intramodal rows (t2t, i2i)
                continue
            query = rows["query_id"][k]
            if direction == "t2i":
                caption_ids.append(query)
            for bench in BENCHMARKS:
                if rows[bench][k]:
                    lists[bench][direction][query] = rows[bench][k]
        cats, names = dataset_categories(source, token) or (None, None)
        gt = cls.from_id_lists(caption_ids, lists, cats, source=str(source), category_names=names)
        if cats is None:  # no images config: the positives config's PM lists (zeta 2, own image left out)
            pm = _pm_lists(source, token)
            if pm is not None:
                gt = gt.with_positives("pm", pm)
        return gt

    def with_categories(
        self, image_categories: Mapping[int, Iterable[int]], names: Mapping[int, str] | None = None
    ) -> GroundTruth:
        return GroundTruth(
            self.images,
            self.captions,
            self.caption_image,
            self.positives,
            categories_matrix(image_categories, self.images),
            self.source,
            dict(names or self.category_names),
        )

    def with_positives(self, bench: str, by_dir: Mapping[str, Mapping[int, Iterable[int]]]) -> GroundTruth:
        """A copy with one more benchmark's lists (e.g. the released PM files)."""
        positives = dict(self.positives)
        positives[bench] = {
            "i2t": Positives.from_id_lists(by_dir["i2t"], self.images, self.captions, f"{bench} i2t"),
            "t2i": Positives.from_id_lists(by_dir["t2i"], self.captions, self.images, f"{bench} t2i"),
        }
        return GroundTruth(
            self.images,
            self.captions,
            self.caption_image,
            positives,
            self.image_categories,
            self.source,
            self.category_names,
        )


def _pm_lists(source: str | Path, token: str | None) -> dict[str, dict[int, list[int]]] | None:
    """The ``pm`` column of a built dataset's positives config (None when the build had no COCO instances)."""
    table = read_config(source, "positives", ["direction", "query_id", "pm"], token)
    rows = table.to_pydict() if table is not None else {"pm": []}
    if not any(rows["pm"]):
        return None
    out: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for direction, query, pm in zip(rows["direction"], rows["query_id"], rows["pm"], strict=True):
        if direction in out and pm:
            out[direction][query] = pm
    return out


def _to_arrays(gt: GroundTruth) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {
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
    return arrays


def _from_arrays(data: Mapping[str, np.ndarray], source: str) -> GroundTruth | None:
    try:
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
    except (KeyError, ValueError, EvaluationError):
        return None
    return GroundTruth(images, captions, data["caption_image"], positives, source=source)
