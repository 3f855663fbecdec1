"""The synthetic world (tests/unit/world.py) as a benchmark dataset: the model path's built-like folder
(tests/unit/model_world.py) with the ``positives`` config a build writes (direction, query_id and the coco, cxc, eccv
lists; the t2i rows in caption order), the images' COCO ``categories``, and the ``eval.yaml`` of the tasks those
configs register, so a model run reads its ground truth from the folder, ``push-results`` finds its tasks and
``verify`` reads the same ground truth back (locally, or from the fake Hub at a revision)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from eccv_metric.hub.eval_tasks import eval_yaml
from eccv_metric.hub.eval_tasks import registered
from tests.unit.model_world import write_data
from tests.unit.world import World

LIST = pa.list_(pa.int64())
CARD = """---
configs:
- config_name: positives
  data_files:
  - split: test
    path: data/positives/test-*.parquet
  default: true
- config_name: images
  data_files:
  - split: test
    path: data/images/test-*.parquet
- config_name: captions
  data_files:
  - split: test
    path: data/captions/test-*.parquet
---

# A tiny synthetic ECCV Caption
"""


def write_benchmark(world: World, folder: Path) -> Path:
    """The world's benchmark dataset folder (see the module docstring)."""
    write_data(world, folder)
    write_ground_truth(world, folder)
    (folder / "eval.yaml").write_text(eval_yaml(registered(["positives", "images", "captions"], ["pm"])))
    (folder / "README.md").write_text(CARD)
    return folder


def write_ground_truth(world: World, folder: Path) -> Path:
    """The ``positives`` config of the world and its images' ``categories`` (added to the images config, or an
    images config of ids and categories alone): what ``GroundTruth.from_dataset`` reads."""
    rows: dict[str, list] = {"direction": [], "query_id": [], "coco": [], "cxc": [], "eccv": []}
    for direction, queries in (("i2t", world.image_ids), ("t2i", world.caption_ids)):
        for query in queries:
            rows["direction"].append(direction)
            rows["query_id"].append(query)
            for bench in ("coco", "cxc", "eccv"):
                rows[bench].append(list(world.lists[bench][direction].get(query, [])))
    (folder / "data" / "positives").mkdir(parents=True, exist_ok=True)
    schema = {"direction": pa.string(), "query_id": pa.int64(), "coco": LIST, "cxc": LIST, "eccv": LIST}
    table = pa.table({k: pa.array(v, schema[k]) for k, v in rows.items()})
    pq.write_table(table, folder / "data" / "positives" / "test-0.parquet")
    path = folder / "data" / "images" / "test-0.parquet"
    images = pq.read_table(path) if path.is_file() else pa.table({"image_id": pa.array(world.image_ids, pa.int64())})
    names = [[f"c{c}" for c in sorted(world.categories.get(i, ()))] for i in images.column("image_id").to_pylist()]
    images = images.append_column("categories", pa.array(names, pa.list_(pa.string())))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(images, path, row_group_size=7)
    return folder
