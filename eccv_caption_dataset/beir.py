"""The BEIR / MTEB layout of a built folder: item tables, the qrels of every subset, and alias configs.

Derived from the folder's own ``images``, ``captions``, ``positives`` (and,
when built, ``cxc_ratings``) Parquet, so nothing is read twice from the sources;
the subsets and their positives come from the registry
(:mod:`eccv_metric.benchmarks.subsets`, :class:`~eccv_metric.benchmarks.resources.Resources`):

- ``beir-images`` / ``beir-captions``: one row per test item, columns ``id``
  (``image-<COCO image id>`` / ``caption-<COCO caption id>``: the two id
  spaces cannot collide), ``modality`` (``image`` / ``text``), ``text``,
  ``image``; written as five files, one per COCO 1K fold, in Karpathy order.
- ``<subset>-qrels`` for every subset whose positives the folder gives:
  ``query-id``, ``corpus-id``, integer ``score`` (1; ``cxc_graded``: the SITS
  rating rounded half up).
- ``<subset>-corpus`` / ``<subset>-queries``: YAML aliases of the item files
  (a COCO 1K fold subset: that fold's file), so no data is stored twice; only
  when every image the subset ranks has pixels (see :mod:`.mteb_layout`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eccv_caption_dataset.mteb_layout import ITEM_CONFIG
from eccv_caption_dataset.mteb_layout import plan
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.benchmarks.subsets import Subset
from eccv_metric.core.folder import read_config
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.formats.qrels import cxc_grades
from eccv_metric.formats.qrels import relevance
from eccv_metric.groundtruth.split import N_FOLDS
from eccv_metric.groundtruth.split import GroundTruth

ITEM_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "modality": datasets.Value("string"),
        "text": datasets.Value("string"),
        "image": datasets.Image(),
    }
)
QRELS_FEATURES = datasets.Features(
    {"query-id": datasets.Value("string"), "corpus-id": datasets.Value("string"), "score": datasets.Value("int32")}
)
QRELS_FILE = "test-00000-of-00001.parquet"


def item_file(fold: int) -> str:
    return f"items-{fold:05d}-of-{N_FOLDS:05d}.parquet"


def _prefixed(kind: str, ids: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar(f"{kind}-"), pc.cast(ids, pa.string()), "")


def _items(kind: str, ids: pa.ChunkedArray, modality: str, text: object, image: object) -> pa.Table:
    n = len(ids)
    columns = {"id": _prefixed(kind, ids), "modality": pa.array([modality] * n), "text": text, "image": image}
    return pa.table(columns, schema=ITEM_FEATURES.arrow_schema)


def item_tables(folder: Path) -> dict[str, tuple[pa.Table, np.ndarray, int]]:
    """``{config: (items, COCO 1K fold of each row, rows without pixels)}`` for the configs the folder has."""
    out = {}
    images = read_config(folder, "images", ["image_id", "image", "coco_1k_fold"])
    if images is not None:
        text = pa.nulls(images.num_rows, pa.string())
        pixels = pc.struct_field(images["image"].combine_chunks(), "bytes")
        missing = int(pc.sum(pc.or_kleene(pc.is_null(images["image"]), pc.is_null(pixels))).as_py() or 0)
        table = _items("image", images["image_id"], "image", text, images["image"])
        out[ITEM_CONFIG["image"]] = (table, images["coco_1k_fold"].to_numpy(), missing)
    captions = read_config(folder, "captions", ["caption_id", "caption", "coco_1k_fold"])
    if captions is not None:
        image = pa.nulls(captions.num_rows, ITEM_FEATURES.arrow_schema.field("image").type)
        table = _items("caption", captions["caption_id"], "text", captions["caption"], image)
        out[ITEM_CONFIG["caption"]] = (table, captions["coco_1k_fold"].to_numpy(), 0)
    return out


def qrels_table(resources: Resources, sub: Subset) -> pa.Table:
    """The qrels of one subset: its benchmark's positives (registry relation), queries in Karpathy order."""
    gt = resources.gt
    bench = REGISTRY.get(sub.benchmark)
    task = bench.task(sub.direction)
    qkind, gkind = DIRECTION_KINDS[sub.direction]
    positives = resources.positives(bench, task.relation, sub.direction)  # type: ignore[arg-type]
    query_ids = gt.index(qkind).ids
    lists = positives.to_id_lists(query_ids, gt.index(gkind).ids)
    if sub.fold is not None:
        query_ids = query_ids[gt.fold(qkind) == sub.fold]
    grades = cxc_grades(resources.ratings("sits"), sub.direction) if sub.grading == "sits" else None
    queries, docs, scores = [], [], []
    for query in query_ids.tolist():
        for doc in lists.get(query, ()):
            queries.append(query)
            docs.append(doc)
            scores.append(relevance(grades, sub.direction, query, doc))
    return pa.table(
        {
            "query-id": _prefixed(qkind, pa.array(queries, pa.int64())),
            "corpus-id": _prefixed(gkind, pa.array(docs, pa.int64())),
            "score": pa.array(scores, pa.int32()),
        },
        schema=QRELS_FEATURES.arrow_schema,
    )


def write_beir(
    folder: Path, write: Callable[[pa.Table, Path, int | None], int], image_rows: int
) -> tuple[dict[str, dict], dict[str, str]]:
    """Write the layout into ``folder/data`` with ``write(table, path, rows_per_group)``.

    Returns (card infos of every config, in card order; {subset: why it was not written}).
    """
    infos: dict[str, dict] = {}
    items = item_tables(folder)
    for name, (table, folds, _) in items.items():
        size = 0
        for fold in range(N_FOLDS):
            part = table.filter(pa.array(folds == fold))
            size += write(part, folder / "data" / name / item_file(fold), image_rows if "image" in name else None)
        infos[name] = _info(table, ITEM_FEATURES, size) | {"path": f"data/{name}/items-*.parquet"}
    written, skipped = plan(folder, {name: (missing, table.num_rows) for name, (table, _, missing) in items.items()})
    if written:
        resources = ResourceOptions(GroundTruth.from_dataset(folder)).resources()
        for sub, complete in written:
            files = item_file(sub.fold) if sub.fold is not None else "items-*.parquet"
            for role, kind in (("corpus", sub.kinds[1]), ("queries", sub.kinds[0])) if complete else ():
                infos[f"{sub.name}-{role}"] = {"alias": ITEM_CONFIG[kind], "path": f"data/{ITEM_CONFIG[kind]}/{files}"}
            table = qrels_table(resources, sub)
            name = f"{sub.name}-qrels"
            size = write(table, folder / "data" / name / QRELS_FILE, None)
            infos[name] = _info(table, QRELS_FEATURES, size) | {"path": f"data/{name}/test-*.parquet"}
    return infos, skipped


def _info(table: pa.Table, features: datasets.Features, size: int) -> dict:
    return {"features": features, "rows": table.num_rows, "num_bytes": table.nbytes, "download_size": size}
