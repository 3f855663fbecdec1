"""The BEIR / MTEB (Any2AnyRetrieval) layout of a built folder: items and qrels configs.

Derived from the folder's own ``images``, ``captions``, ``positives`` (and,
when built, ``cxc_ratings``) Parquet, so nothing is read twice from the sources:

- ``beir-images`` / ``beir-captions``: one row per test item, columns ``id``
  (``image-<COCO image id>`` / ``caption-<COCO caption id>``: the two id
  spaces cannot collide), ``modality`` (``image`` / ``text``), ``text``,
  ``image``. Each has two splits over the same files: ``corpus`` (what a
  retrieval harness searches) and ``test`` (where it reads its queries), so
  ``load_dataset(repo, "beir-captions")["corpus"]`` is the i2t corpus and
  ``load_dataset(repo, "beir-images")["test"]`` its queries.
- ``<benchmark>-<direction>-qrels`` for benchmark ``coco``, ``cxc``, ``eccv``
  and direction ``i2t`` / ``t2i``: ``query-id``, ``corpus-id``, integer
  ``score``. COCO and ECCV pairs are binary (1). CxC pairs (SITS rating >= 3)
  are graded by their rating rounded half up (3, 4 or 5) when the CxC CSVs
  were built in, else 1. Harnesses keep only the queries that have qrels.
  (PM lists, ~10M pairs a direction, stay in ``positives``.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eccv_metric.core.folder import read_config

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
BENCHMARKS = ("coco", "cxc", "eccv")
KIND = {"i2t": ("image", "caption"), "t2i": ("caption", "image")}
ITEM_FILE = "items-00000-of-00001.parquet"
QRELS_FILE = "test-00000-of-00001.parquet"


def _prefixed(kind: str, ids: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar(f"{kind}-"), pc.cast(ids, pa.string()), "")


def _items(kind: str, ids: pa.ChunkedArray, modality: str, text: object, image: object) -> pa.Table:
    n = len(ids)
    columns = {"id": _prefixed(kind, ids), "modality": pa.array([modality] * n), "text": text, "image": image}
    return pa.table(columns, schema=ITEM_FEATURES.arrow_schema)


def item_tables(folder: Path) -> dict[str, pa.Table]:
    """``beir-images`` and ``beir-captions`` tables (only for the configs the folder has)."""
    out = {}
    images = read_config(folder, "images", ["image_id", "image"])
    if images is not None:
        text = pa.nulls(images.num_rows, pa.string())
        out["beir-images"] = _items("image", images["image_id"], "image", text, images["image"])
    captions = read_config(folder, "captions", ["caption_id", "caption"])
    if captions is not None:
        image = pa.nulls(captions.num_rows, ITEM_FEATURES.arrow_schema.field("image").type)
        out["beir-captions"] = _items("caption", captions["caption_id"], "text", captions["caption"], image)
    return out


def _cxc_grades(folder: Path) -> dict[tuple[int, int], int]:
    """(caption id, image id) -> SITS rating rounded half up, from the built ``cxc_ratings``."""
    ratings = read_config(folder, "cxc_ratings", ["kind", "id_1", "type_1", "id_2", "score"])
    if ratings is None:
        return {}
    sits = ratings.filter(pc.equal(ratings["kind"], "sits")).to_pydict()
    grades = {}
    for id_1, type_1, id_2, score in zip(sits["id_1"], sits["type_1"], sits["id_2"], sits["score"], strict=True):
        caption, image = (id_1, id_2) if type_1 == "caption" else (id_2, id_1)
        grades[(caption, image)] = max(grades.get((caption, image), 0), int(np.floor(score + 0.5)))
    return grades


def qrels_tables(folder: Path) -> dict[str, pa.Table]:
    """``<benchmark>-<direction>-qrels`` tables from the folder's ``positives`` config."""
    positives = read_config(folder, "positives", ["direction", "query_id", *BENCHMARKS])
    if positives is None:
        return {}
    grades = _cxc_grades(folder)
    out = {}
    for direction, (qkind, gkind) in KIND.items():
        rows = positives.filter(pc.equal(positives["direction"], direction))
        for bench in BENCHMARKS:
            lists = rows[bench].combine_chunks()
            lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
            queries = np.repeat(rows["query_id"].to_numpy(), lengths)
            docs = pc.list_flatten(lists).to_numpy()
            score = np.ones(len(docs), dtype=np.int32)
            if bench == "cxc" and grades:
                pairs = zip(queries.tolist(), docs.tolist(), strict=True)
                keys = pairs if direction == "t2i" else ((c, i) for i, c in pairs)
                score = np.fromiter((grades.get(k, 1) for k in keys), np.int32, len(docs))
            out[f"{bench}-{direction}-qrels"] = pa.table(
                {
                    "query-id": _prefixed(qkind, pa.array(queries)),
                    "corpus-id": _prefixed(gkind, pa.array(docs)),
                    "score": pa.array(score),
                },
                schema=QRELS_FEATURES.arrow_schema,
            )
    return out


def write_beir(folder: Path, write: Callable[[pa.Table, Path, int | None], int], image_rows: int) -> dict[str, dict]:
    """Write the BEIR configs into ``folder/data`` with ``write(table, path, rows_per_group)``; card infos."""
    written = {}
    for name, table in item_tables(folder).items():
        size = write(table, folder / "data" / name / ITEM_FILE, image_rows if name == "beir-images" else None)
        written[name] = _info(table, ITEM_FEATURES, size, ("corpus", "test")) | {"files": "items-*.parquet"}
    for name, table in qrels_tables(folder).items():
        size = write(table, folder / "data" / name / QRELS_FILE, None)
        written[name] = _info(table, QRELS_FEATURES, size, ("test",))
    return written


def _info(table: pa.Table, features: datasets.Features, size: int, splits: tuple[str, ...]) -> dict:
    return {
        "features": features,
        "rows": table.num_rows,
        "num_bytes": table.nbytes,
        "download_size": size,
        "splits": splits,
    }


def yaml_configs(infos: dict[str, dict]) -> list[dict]:
    """The card's ``configs`` entries: item configs expose the same files as ``corpus`` and ``test``."""
    return [
        {
            "config_name": name,
            "data_files": [
                {"split": split, "path": f"data/{name}/{info.get('files', 'test-*.parquet')}"}
                for split in info["splits"]
            ],
        }
        for name, info in infos.items()
    ]


CARD_SECTION = """\
## BEIR / MTEB layout

`beir-images` and `beir-captions` (columns `id`, `modality`, `text`, `image`;
splits `corpus` and `test` over the same rows) and `<benchmark>-<direction>-qrels`
(`query-id`, `corpus-id`, `score`) for `coco`, `cxc`, `eccv` x `i2t`, `t2i`.
Ids carry their modality (`image-391895`, `caption-770337`). CxC qrels are
graded by the SITS rating rounded half up (3-5); the others are binary.

```python
from datasets import load_dataset

corpus = load_dataset(REPO, "beir-captions", split="corpus")   # i2t: search the captions
queries = load_dataset(REPO, "beir-images", split="test")      # ... with the images
qrels = load_dataset(REPO, "eccv-i2t-qrels", split="test")     # ECCV Caption positives
```

An MTEB `AbsTaskAny2AnyRetrieval` task reads configs named `corpus`, `query`
and `qrels` from one repo; point a task at this one by overriding its
`load_data` with the three calls above (`self.corpus[split]`,
`self.queries[split]`, `self.relevant_docs[split]`, queries filtered to those
in the qrels). Metric names: COCO R@K is MTEB's `hit_rate_at_k` /
trec_eval's `success_K` (MTEB's `recall_at_k` is IR recall); ECCV
R-Precision is `Rprec`; mAP@R is trec_eval's `map_cut` at each query's own R.
"""
