"""A small synthetic world with every source the package reads: a 5-fold split, ECCV / CxC / COCO lists, COCO
categories, CxC rating CSVs, MSCOCO-FG and Flickr30K-FG files; and integer-valued embeddings over it.

Everything is written here from a seed, in the sources' own formats, so the unit tests need neither
``../shared/data`` nor the network, and the brute force (``tests/unit/brute.py``) reads the same raw
values the package parses.
"""

from __future__ import annotations

import csv
import json
import warnings
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np

from eccv_metric import GroundTruth
from eccv_metric import Resources
from eccv_metric import Results
from eccv_metric import evaluate
from eccv_metric.groundtruth.plausible import PMOptions

N_IMAGES = 20
PER_IMAGE = 5
N_FOLDS = 5
DIM = 3


@dataclass
class World:
    image_ids: list[int]
    caption_ids: list[int]
    caption_image: dict[int, int]  # caption id -> image id
    lists: dict[str, dict[str, dict[int, list[int]]]]  # benchmark -> direction -> {query id: [positive ids]}
    categories: dict[int, set[int]]  # annotated images only
    ratings: dict[str, list[tuple[int, int, float]]]  # sts / sis / sits rows (id_1, id_2, score)
    cxc_dir: Path
    fg_dir: Path
    fg: dict[str, dict] = field(default_factory=dict)  # bench -> {"gallery": [...], "captions": [...], "image_of": {}}
    gt: GroundTruth | None = None

    def resources(self, r_cap: int | None = 50, zeta: int = 2) -> Resources:
        return Resources(
            self.gt,
            pm=PMOptions(zeta, False, r_cap),
            cxc_source=self.cxc_dir,
            fg_source=self.fg_dir,
        )

    def fold(self, kind: str, ident: int) -> int:
        image = ident if kind == "image" else self.caption_image[ident]
        return self.image_ids.index(image) // (N_IMAGES // N_FOLDS)


def _caption_key(c: int) -> str:
    return f"COCO_val2014:sentid:{c}"


def _image_key(i: int) -> str:
    return f"COCO_val2014_{i:012d}.jpg"


def make_world(folder: Path, seed: int = 7) -> World:
    rng = np.random.default_rng(seed)
    image_ids = [100 + 7 * i for i in range(N_IMAGES)]
    caption_ids = [1000 + 3 * k for k in range(N_IMAGES * PER_IMAGE)]
    caption_image = {c: image_ids[k // PER_IMAGE] for k, c in enumerate(caption_ids)}
    coco = {
        "i2t": {img: caption_ids[k * PER_IMAGE : (k + 1) * PER_IMAGE] for k, img in enumerate(image_ids)},
        "t2i": {c: [caption_image[c]] for c in caption_ids},
    }
    # CxC SITS ratings; the "cxc" lists are its pairs >= 3 (as the wheel's lists are)
    sits = [(int(c), int(i), float(rng.choice([1.0, 2.5, 3.0, 4.0, 5.0]))) for c, i in
            zip(rng.choice(caption_ids, 150), rng.choice(image_ids, 150), strict=True)]  # fmt: skip
    sits = list({(c, i): (c, i, s) for c, i, s in sits}.values())
    cxc: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for c, i, s in sits:
        if s >= 3:
            cxc["t2i"].setdefault(c, []).append(i)
            cxc["i2t"].setdefault(i, []).append(c)
    # ECCV: a few queries each way, one image query with a positive outside the split (counts in R)
    eccv: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for img in rng.choice(image_ids, 8, replace=False).tolist():
        eccv["i2t"][img] = sorted(set(rng.choice(caption_ids, int(rng.integers(1, 9)), replace=False).tolist()))
    eccv["i2t"][image_ids[0]] = sorted(set(eccv["i2t"].get(image_ids[0], [])) | {999_999})
    for cap in rng.choice(caption_ids, 12, replace=False).tolist():
        eccv["t2i"][cap] = sorted(set(rng.choice(image_ids, int(rng.integers(1, 4)), replace=False).tolist()))
    lists = {"coco": coco, "cxc": cxc, "eccv": eccv}
    categories = {
        img: set(rng.choice(6, int(rng.integers(1, 4)), replace=False).tolist())
        for img in image_ids
        if img not in image_ids[:2]  # two images without instance annotations
    }
    cxc_dir = folder / "cxc"
    cxc_dir.mkdir(parents=True, exist_ok=True)
    ratings = {"sits": sits}
    for kind, ids, n in (("sts", caption_ids, 160), ("sis", image_ids, 50)):
        pairs = sorted({tuple(int(x) for x in rng.choice(ids, 2, replace=False)) for _ in range(n)})
        pairs += [(b, a) for a, b in pairs[:15]]  # pairs rated in both orders
        scores = rng.choice([0.0, 1.5, 2.4, 2.5, 3.0, 3.6, 5.0], size=len(pairs))
        ratings[kind] = [(a, b, float(s)) for (a, b), s in zip(pairs, scores, strict=True)]
    for kind, rows in ratings.items():
        keys = (_caption_key, _image_key) if kind == "sits" else (
            (_caption_key, _caption_key) if kind == "sts" else (_image_key, _image_key)
        )  # fmt: skip
        with open(cxc_dir / f"{kind}_test.csv", "w", newline="") as fout:
            writer = csv.writer(fout)
            writer.writerow(["caption1" if kind != "sis" else "image1", "item2", "agg_score", "sampling_method"])
            writer.writerows([keys[0](a), keys[1](b), f"{s:.2f}", "synthetic"] for a, b, s in rows)
    world = World(image_ids, caption_ids, caption_image, lists, categories, ratings, cxc_dir, folder / "fg")
    world.gt = GroundTruth.from_id_lists(caption_ids, lists, categories)
    _write_fg(world, rng)
    return world


def _write_fg(world: World, rng: np.random.Generator) -> None:
    """MSCOCO-FG over the world's images (annotation order shuffled, 30 distractors) and a Flickr30K-FG."""
    folder = world.fg_dir
    (folder / "Annotations").mkdir(parents=True, exist_ok=True)
    (folder / "Images").mkdir(parents=True, exist_ok=True)
    order = rng.permutation(N_IMAGES).tolist()
    annotated = [world.image_ids[k] for k in order]
    ann = {f"COCO_val2014_{img:012d}": [f"refined {img} {j}" for j in range(PER_IMAGE)] for img in annotated}
    distractors = [50_000 + 11 * k for k in range(30)]
    gallery_names = [f"COCO_val2014_{i:012d}.jpg" for i in world.image_ids] + [f"{d:012d}.jpg" for d in distractors]
    gallery_names = [gallery_names[k] for k in rng.permutation(len(gallery_names))]
    gallery = [
        int(name.rsplit("_", 1)[-1].split(".")[0]) if "val2014" in name else int(name[:12]) for name in gallery_names
    ]
    by_image = {img: sorted(c for c in world.caption_ids if world.caption_image[c] == img) for img in annotated}
    captions = [c for img in annotated for c in by_image[img]]
    (folder / "Annotations" / "MSCOCO_FG_ann.json").write_text(json.dumps(ann))
    np.save(folder / "Images" / "MSCOCO_FG_img_filenames.npy", np.asarray(gallery_names))
    world.fg["mscoco_fg"] = {
        "gallery": gallery,
        "captions": captions,
        "image_of": {c: world.caption_image[c] for c in captions},
        "annotated": annotated,
    }
    flickr = [1_989_609 + 13 * k for k in range(8)]
    ann_f = {str(f): [f"flickr {f} {j}" for j in range(PER_IMAGE)] for f in flickr}
    names_f = [f"{f}.jpg" for f in flickr] + [f"{60_000 + 5 * k:012d}.jpg" for k in range(12)]
    names_f = [names_f[k] for k in rng.permutation(len(names_f))]
    (folder / "Annotations" / "Flickr30K_FG_ann.json").write_text(json.dumps(ann_f))
    np.save(folder / "Images" / "Flickr30K_FG_img_filenames.npy", np.asarray(names_f))
    captions_f = [10 * f + j for f in flickr for j in range(PER_IMAGE)]
    world.fg["flickr30k_fg"] = {
        "gallery": [int(n.split(".")[0]) for n in names_f],
        "captions": captions_f,
        "image_of": {c: c // 10 for c in captions_f},
        "annotated": flickr,
    }


def int_embeddings(rng: np.random.Generator, ids: list[int], dim: int = DIM) -> dict[int, np.ndarray]:
    """Integer-valued vectors in -2..2 (exact float dot products; many ties)."""
    values = rng.integers(-2, 3, (len(ids), dim)).astype(np.float32)
    return {i: values[k] for k, i in enumerate(ids)}


def vectors(world: World, seed: int = 5, dim: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Integer-valued image and caption embeddings of the world, rows in the world's order."""
    rng = np.random.default_rng(seed)
    img = int_embeddings(rng, world.image_ids, dim)
    cap = int_embeddings(rng, world.caption_ids, dim)
    return np.stack([img[i] for i in world.image_ids]), np.stack([cap[c] for c in world.caption_ids])


def quiet_evaluate(*args: object, **kwargs: object) -> Results:
    """``evaluate`` without its warnings (the small world's random rankings are at chance level)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(*args, **kwargs)  # type: ignore[arg-type]
