"""Rows of every config, built from the resolved sources (plain Python/numpy, no datasets here)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from eccv_caption_dataset.paper import REMOVED_CAPTIONS
from eccv_caption_dataset.paper import REMOVED_IMAGES
from eccv_caption_dataset.sources import Sources
from eccv_caption_dataset.sources import jpeg_size
from eccv_caption_dataset.sources import read_json
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core import progress
from eccv_metric.core.positives import Positives
from eccv_metric.groundtruth.categories import load_instance_categories
from eccv_metric.groundtruth.cxc import CXC_FILES
from eccv_metric.groundtruth.cxc import RATING_ITEMS
from eccv_metric.groundtruth.cxc import read_csv
from eccv_metric.groundtruth.cxc import sits_positives
from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.split import GroundTruth


def ground_truth(sources: Sources) -> GroundTruth:
    gt = GroundTruth.from_wheel(data_dir=sources.wheel_dir)
    if sources.instances_json is not None:
        gt = gt.with_categories(*load_instance_categories(sources.instances_json, gt.image_ids))
    return gt


def caption_texts(sources: Sources, gt: GroundTruth) -> dict[int, str]:
    raw = read_json(sources.captions_json)  # type: ignore[arg-type]
    wanted = set(gt.caption_ids.tolist())
    texts = {int(a["id"]): str(a["caption"]) for a in raw["annotations"] if int(a["id"]) in wanted}
    missing = wanted - set(texts)
    if missing:
        raise ValueError(f"{sources.captions_json} lacks {len(missing)} test captions, e.g. {sorted(missing)[:5]}")
    return texts


def image_records(sources: Sources, gt: GroundTruth) -> dict[int, dict]:
    """file_name / coco_url / width / height per test image, from the captions JSON when given."""
    records = {
        int(i): {
            "file_name": f"COCO_val2014_{int(i):012d}.jpg",
            "coco_url": f"http://images.cocodataset.org/val2014/COCO_val2014_{int(i):012d}.jpg",
            "width": None,
            "height": None,
        }
        for i in gt.image_ids
    }
    if sources.captions_json is not None:
        for img in read_json(sources.captions_json)["images"]:
            rec = records.get(int(img["id"]))
            if rec is not None:
                rec.update({k: img[k] for k in ("file_name", "coco_url", "width", "height") if k in img})
    return records


def eccv_query_masks(gt: GroundTruth) -> tuple[np.ndarray, np.ndarray]:
    is_img = np.zeros(len(gt.image_ids), bool)
    is_img[gt.positives["eccv"]["i2t"].query] = True
    is_cap = np.zeros(len(gt.caption_ids), bool)
    is_cap[gt.positives["eccv"]["t2i"].query] = True
    return is_img, is_cap


def image_rows(sources: Sources, gt: GroundTruth, embed: set[int] | None, report: dict) -> Iterator[dict]:
    """One row per test image; ``image`` holds the JPEG where it is available (and wanted)."""
    records = image_records(sources, gt)
    names = gt.category_names
    is_query, _ = eccv_query_masks(gt)
    missing = []
    ids = gt.image_ids.tolist()
    shown = progress.iterate(ids, "downloading images", unit="img") if sources.download_images else ids
    for k, image_id in enumerate(shown):
        rec = records[image_id]
        data = sources.image_bytes(rec["file_name"]) if embed is None or image_id in embed else None
        if data is None and (embed is None or image_id in embed):
            missing.append(image_id)
        if data is not None and rec["width"] is None:
            size = jpeg_size(data)
            rec["width"], rec["height"] = size if size else (None, None)
        cats = None
        if gt.image_categories is not None:
            cats = [names.get(int(c), str(int(c))) for c in np.flatnonzero(gt.image_categories[k])]
        yield {
            "image_id": image_id,
            "file_name": rec["file_name"],
            "coco_url": rec["coco_url"],
            "image": {"bytes": data, "path": rec["file_name"]} if data is not None else None,
            "width": rec["width"],
            "height": rec["height"],
            "coco_1k_fold": int(gt.image_fold[k]),
            "is_eccv_query": bool(is_query[k]),
            "removed_in_eccv": image_id in REMOVED_IMAGES,
            "categories": cats,
        }
    report["images_missing"] = missing


def caption_rows(sources: Sources, gt: GroundTruth, removed: set[int] | None = None) -> Iterator[dict]:
    """One row per test caption; ``removed`` defaults to the paper's appendix C.1 list."""
    removed = REMOVED_CAPTIONS if removed is None else removed
    texts = caption_texts(sources, gt)
    _, is_query = eccv_query_masks(gt)
    for k, caption_id in enumerate(gt.caption_ids.tolist()):
        yield {
            "caption_id": caption_id,
            "image_id": int(gt.image_ids[gt.caption_image[k]]),
            "caption": texts[caption_id],
            "coco_1k_fold": int(gt.caption_fold[k]),
            "is_eccv_query": bool(is_query[k]),
            "removed_in_eccv": caption_id in removed,
        }


def cxc_sits_positives(cxc_dir: Path, gt: GroundTruth) -> dict[str, Positives]:
    """CxC positives from the raw SITS ratings: score >= 3, caption and image both in the test split."""
    return sits_positives(read_csv(Path(cxc_dir) / "sits_test.csv", "sits"), gt.captions, gt.images)


def cxc_ratings(cxc_dir: Path, gt: GroundTruth, kinds: tuple[str, ...] = ("sits", "sts", "sis")) -> Iterator[dict]:
    """Raw graded CxC rows whose two items are both in the test split (read by the metric package's parser)."""
    for name in CXC_FILES:
        kind = name.split("_")[0]
        if kind not in kinds:
            continue
        type_1, type_2 = RATING_ITEMS[kind]
        ratings = read_csv(Path(cxc_dir) / name, kind)
        keep = (gt.index(type_1).positions(ratings.id_1) >= 0) & (gt.index(type_2).positions(ratings.id_2) >= 0)
        methods = np.asarray(ratings.method, dtype=object)
        for k in np.flatnonzero(keep).tolist():
            yield {
                "kind": kind,
                "id_1": int(ratings.id_1[k]),
                "type_1": type_1,
                "id_2": int(ratings.id_2[k]),
                "type_2": type_2,
                "score": float(ratings.score[k]),
                "sampling_method": str(methods[k]) if len(methods) else "",
            }


def positive_rows(
    sources: Sources, gt: GroundTruth, pm_zeta: int = 2, pm_include_own: bool = False, report: dict | None = None
) -> Iterator[dict]:
    """One row per query and direction with its COCO, CxC, ECCV and PM positive id lists.

    With the CxC CSVs, also the intramodal rows: ``t2t`` (STS >= 3) and ``i2i``
    (SIS >= 2.5), one per query with a positive, in the ``cxc`` column only.
    """
    lists = {b: gt.positives[b] for b in ("coco", "eccv")}
    lists["cxc"] = cxc_sits_positives(sources.cxc_dir, gt) if sources.cxc_dir is not None else gt.positives["cxc"]
    if report is not None:
        report["cxc_source"] = "sits_test.csv" if sources.cxc_dir is not None else "eccv_caption wheel"
    pm_rel = PlausibleMatch(gt, pm_zeta, pm_include_own) if gt.image_categories is not None else None
    for direction in ("i2t", "t2i"):  # PM lists hold ~10M pairs a direction (the build's config bar shows the step)
        q_ids, g_ids = gt.query_index(direction).ids, gt.gallery_index(direction).ids
        per_bench = {b: _rows_of(lists[b][direction], g_ids, q_ids) for b in lists}
        pm_rows = None
        if pm_rel is not None:
            pm_rows = _rows_of(pm_rel.relevance(direction).to_positives(), g_ids, q_ids)
        if pm_rows is not None:  # no categories (48 images, their captions): unknown, not "no match"
            annotated = gt.image_categories.any(axis=1)  # type: ignore[union-attr]
            query_annotated = annotated if direction == "i2t" else annotated[gt.caption_image]
            pm_rows = [row if ok else None for row, ok in zip(pm_rows, query_annotated.tolist(), strict=True)]
        for k, query_id in enumerate(q_ids.tolist()):
            yield {
                "direction": direction,
                "query_id": query_id,
                "coco": per_bench["coco"][k],
                "cxc": per_bench["cxc"][k],
                "eccv": per_bench["eccv"][k],
                "pm": pm_rows[k] if pm_rows is not None else None,
            }
    if (
        sources.cxc_dir is not None
    ):  # the registry's intramodal benchmarks (undirected; see eccv_metric.groundtruth.cxc)
        yield from intramodal_rows(ResourceOptions(gt, cxc_source=sources.cxc_dir).resources())


def intramodal_rows(resources: Resources) -> Iterator[dict]:
    """``t2t`` rows (every caption: ``coco`` = its co-captions, MS-COCO's text-to-text; ``cxc`` = co-captions plus
    STS >= 3, CxC t2t) and ``i2i`` rows (the images with an SIS >= 2.5 pair: ``cxc``), in Karpathy order."""
    gt = resources.gt
    for direction, columns in (("t2t", {"coco": "coco_t2t", "cxc": "cxc_t2t"}), ("i2i", {"cxc": "cxc_i2i"})):
        lists = {}
        for column, name in columns.items():
            bench = REGISTRY.get(name)
            task = bench.task(direction)
            rel = resources.positives(bench, task.relation, direction)  # type: ignore[arg-type]
            ids = gt.index(resources.view(bench, task).query_kind).ids
            lists[column] = rel.to_id_lists(ids, ids)
        index = gt.index("caption" if direction == "t2t" else "image")
        given = np.fromiter(set().union(*lists.values()), dtype=np.int64)
        for query_id in given[np.argsort(index.positions(given))].tolist():
            yield {
                "direction": direction,
                "query_id": query_id,
                "coco": lists.get("coco", {}).get(query_id, []),
                "cxc": lists["cxc"].get(query_id, []),
                "eccv": [],
                "pm": None,
            }


def _rows_of(pos: Positives, gallery_ids: np.ndarray, query_ids: np.ndarray) -> list[list[int]]:
    """Positive id lists (outside ids included) for every query, [] where there are none."""
    lists = pos.to_id_lists(query_ids, gallery_ids)
    return [lists.get(q, []) for q in query_ids.tolist()]
