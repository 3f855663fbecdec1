"""The dataset builder on the real sources in ../shared/data, and the folder it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from eccv_caption_dataset.hub_folder import build
from eccv_metric import REGISTRY
from eccv_metric import GroundTruth
from eccv_metric import Metrics
from eccv_metric.benchmarks.subsets import subsets
from eccv_metric.groundtruth.cxc import load_ratings
from eccv_metric.groundtruth.split import load_id_lists
from eccv_metric.groundtruth.split import wheel_data_dir
from tests.fixtures import INSTANCES
from tests.fixtures import SHARED


def read(folder, config, columns=None):
    return pq.read_table(sorted((folder / "data" / config).glob("*.parquet")), columns=columns).to_pydict()


def test_counts_folds_and_order(built, gt):
    folder, report = built
    positives = 30000 + 25000 + 4791  # i2t, t2i, then every caption (t2t) and the i2i queries with a positive
    fg = {"mscoco_fg_captions": 25000, "mscoco_fg_gallery": 31244, "flickr30k_fg_captions": 5000}
    fg["flickr30k_fg_gallery"] = 6867
    main = {"images": 5000, "captions": 25000, "positives": positives, "cxc_ratings": 135597}
    assert report["built"] == main | fg
    images = read(folder, "images", ["image_id", "coco_1k_fold", "is_eccv_query"])
    captions = read(folder, "captions", ["caption_id", "image_id", "coco_1k_fold", "is_eccv_query"])
    assert images["image_id"] == gt.image_ids.tolist() and captions["caption_id"] == gt.caption_ids.tolist()
    assert np.bincount(images["coco_1k_fold"]).tolist() == [1000] * 5
    assert captions["coco_1k_fold"] == [k // 5000 for k in range(25000)]
    assert sum(images["is_eccv_query"]) == 1261 and sum(captions["is_eccv_query"]) == 1332
    raw = json.loads((SHARED / "coco" / "captions_karpathy_test.json").read_text())
    assert captions["image_id"] == [a["image_id"] for a in raw["annotations"]]


def test_positives_equal_the_wheel_and_the_papers_counts(built):
    folder, report = built
    rows = read(folder, "positives")
    assert report["cxc_source"] == "sits_test.csv"  # CxC rebuilt from the raw SITS ratings
    for bench, prefix in (("coco", "original"), ("cxc", "cxc"), ("eccv", "eccv")):
        for direction, name in (("i2t", "image_to_caption"), ("t2i", "caption_to_image")):
            ours = {
                q: lst
                for q, d, lst in zip(rows["query_id"], rows["direction"], rows[bench], strict=True)
                if d == direction and lst
            }
            wheel = load_id_lists(wheel_data_dir() / f"{prefix}_{name}.json")
            assert ours == {k: sorted(set(v)) for k, v in wheel.items()}, (bench, direction)
    eccv_i2t = [lst for d, lst in zip(rows["direction"], rows["eccv"], strict=True) if d == "i2t" and lst]
    eccv_t2i = [lst for d, lst in zip(rows["direction"], rows["eccv"], strict=True) if d == "t2i" and lst]
    assert (len(eccv_i2t), sum(map(len, eccv_i2t))) == (1261, 22550)
    assert (len(eccv_t2i), sum(map(len, eccv_t2i))) == (1332, 11279)
    cxc_t2i = [lst for d, lst in zip(rows["direction"], rows["cxc"], strict=True) if d == "t2i" and lst]
    assert (len(cxc_t2i), sum(map(len, cxc_t2i))) == (24972, 35585)
    pm_sizes = {
        d: max(len(p or []) for dd, p in zip(rows["direction"], rows["pm"], strict=True) if dd == d)
        for d in ("i2t", "t2i")
    }
    assert pm_sizes == {"i2t": 13380, "t2i": 2676}


def test_images_embed_what_is_available_in_small_row_groups(built):
    folder, report = built
    path = next((folder / "data" / "images").glob("*.parquet"))
    meta = pq.ParquetFile(path).metadata
    assert max(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) <= 100
    table = pq.read_table(path, columns=["image_id", "image", "width", "categories"]).to_pydict()
    with_pixels = [i for i, im in zip(table["image_id"], table["image"], strict=True) if im is not None]
    local = sorted(int(p.stem.rsplit("_", 1)[1]) for p in (SHARED / "coco" / "val2014").glob("*.jpg"))
    assert sorted(with_pixels) == local and len(local) == 43
    assert len(report["images_missing"]) == 5000 - 43
    assert sum(c is None or c == [] for c in table["categories"]) == 48  # images without COCO instances


def test_dataset_card_is_generated(built):
    from huggingface_hub import DatasetCard

    folder, report = built
    text = (folder / "README.md").read_text()
    card = DatasetCard(text)  # huggingface_hub's card classes parse and type the YAML
    header = card.data.to_dict()
    assert header["license"] == ["cc-by-4.0", "mit", "other"] and "image-to-text" in header["task_categories"]
    assert header["size_categories"] == ["100K<n<1M"]  # cxc_ratings: 135,597 rows
    configs = {c["config_name"]: c for c in header["configs"]}
    qrels = {f"{s.name}-qrels" for s in subsets()}  # every subset's qrels; corpus / queries where no image is
    aliases = {f"{s.name}-{role}" for s in subsets() if "image" not in s.kinds for role in ("corpus", "queries")}
    beir = {"beir-images", "beir-captions"} | qrels | aliases
    fg = {f"{b}_{p}" for b in ("mscoco_fg", "flickr30k_fg") for p in ("captions", "gallery")}
    assert set(configs) == {"images", "captions", "positives", "cxc_ratings"} | beir | fg
    assert configs["positives"]["default"] and "**no license file**" in text
    assert configs["captions"]["data_files"] == [{"split": "test", "path": "data/captions/test-*.parquet"}]
    assert header["license_name"] == "eccv-caption-parts" and header["license_link"] == "LICENSE.md"
    assert (
        "| MSCOCO-FG / Flickr30K-FG captions and gallery lists | **no license file**"
        in (folder / "LICENSE.md").read_text()
    )
    assert {i["config_name"] for i in header["dataset_info"]} == set(configs) - aliases  # aliases: no sizes
    for info in header["dataset_info"]:
        paths = sorted((folder / "data" / info["config_name"]).glob("*.parquet"))
        arrow = sum(
            datasets.Dataset.from_parquet(str(p), cache_dir=str(folder.parent / "pq_cache")).data.nbytes for p in paths
        )
        assert info["splits"][0]["num_examples"] == sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
        assert abs(info["splits"][0]["num_bytes"] - arrow) <= 0.001 * arrow  # Arrow bytes, datasets' convention
        assert info["download_size"] == sum(p.stat().st_size for p in paths)
        assert [s["name"] for s in info["splits"]] == ["test"] and info["dataset_size"] == info["splits"][0][
            "num_bytes"
        ]
    positives = {i["config_name"]: i for i in header["dataset_info"]}["positives"]
    assert positives["splits"][0]["num_bytes"] > 4 * positives["download_size"]
    assert "| VSE-infinity (WSL grid) | 42.41 |" in text and "@inproceedings{lin2014coco" in text
    assert "https://arxiv.org/abs/2204.03359" in text and "<this repo>" not in text and "- nothing" not in text
    assert f"{len(report['images_missing']):,} of the 5,000 images are stored without pixels" in text
    assert 'load_dataset("eccv_caption", "positives"' in text and "| image pixels | Flickr photos" in text


def test_eval_yaml_registers_every_headline_task(built):
    """A full build is a Hub benchmark of every headline number: eval.yaml's tasks name configs it has."""
    folder, _ = built
    meta = yaml.safe_load((folder / "eval.yaml").read_text())
    assert set(meta) == {"name", "description", "evaluation_framework", "tasks"} and meta["name"] == "ECCV Caption"
    assert meta["evaluation_framework"] == "mteb"  # one of huggingface.js eval.ts's list (eccv_metric.hub.eval_tasks)
    both = [f"{m}_{d}" for m in ("eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_r1", "coco_1k_r1", "cxc_r1",
                                 "pmrp", "mscoco_fg_r1", "flickr30k_fg_r1") for d in ("i2t", "t2i")]  # fmt: skip
    correlations = ["cxc_sts_spearman_t2t", "cxc_sis_spearman_i2i", "cxc_sits_spearman_t2i"]
    assert [t["id"] for t in meta["tasks"]] == both + correlations
    card = yaml.safe_load((folder / "README.md").read_text().split("\n---\n")[0][4:])
    splits = {c["config_name"]: [f["split"] for f in c["data_files"]] for c in card["configs"]}
    assert all(splits[t["config"]] == [t["split"]] == ["test"] for t in meta["tasks"])
    assert {t["config"] for t in meta["tasks"]} == {
        "positives",
        "mscoco_fg_captions",
        "flickr30k_fg_captions",
        "cxc_ratings",
    }
    text = (folder / "README.md").read_text()
    assert "| `pmrp_i2t` | PMRP, image-to-text | `positives` | `test` | percent (0-100) |" in text
    assert "| `cxc_sis_spearman_i2i` | CxC SIS Spearman's rho, image-to-image | `cxc_ratings` | `test` |" in text


def test_parquet_is_written_as_the_hub_writes_it(built):
    """datasets' own writer: row groups <= ~100 MB of Arrow data (100 rows for images), page index, CDC."""
    folder, _ = built
    for config in ("positives", "images", "cxc_ratings", "beir-images", "eccv-i2t-qrels"):
        parquet = pq.ParquetFile(next((folder / "data" / config).glob("*.parquet")))
        meta = parquet.metadata
        assert b"content_defined_chunking" in meta.metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            assert group.total_byte_size <= 100 * 2**20
            columns = [group.column(c) for c in range(group.num_columns)]
            assert all(c.has_offset_index for c in columns)  # page index (datasets: no statistics on image bytes)
            assert all(c.has_column_index for c in columns if c.path_in_schema != "image.bytes")
            if config in ("images", "beir-images"):
                assert group.num_rows <= 100


def test_intramodal_rows_and_ratings_equal_the_csvs(built, gt):
    """t2t / i2i rows = the CxC tasks from the CSVs; the cxc_ratings config gives the same ratings as the CSVs."""
    folder, _ = built
    rows = read(folder, "positives", ["direction", "query_id", "cxc", "coco", "pm"])
    for kind, direction in (("sts", "t2t"), ("sis", "i2i")):
        from_csv = load_ratings(kind, SHARED / "cxc")
        from_folder = load_ratings(kind, folder)
        order = lambda r: np.lexsort((r.id_2, r.id_1))  # noqa: E731
        for field in ("id_1", "id_2", "score"):
            assert np.array_equal(
                getattr(from_csv, field)[order(from_csv)], getattr(from_folder, field)[order(from_folder)]
            )
        resources = Metrics(ground_truth=gt, cxc_source=SHARED / "cxc").resources
        index = gt.index("caption" if kind == "sts" else "image")
        for column, name in (("cxc", f"cxc_{direction}"), ("coco", "coco_t2t")):
            if column == "coco" and direction == "i2i":
                continue
            bench = REGISTRY.get(name)
            want = resources.positives(bench, bench.task(direction).relation, direction).to_id_lists(
                index.ids, index.ids
            )
            ours = {
                q: c
                for q, d, c in zip(rows["query_id"], rows["direction"], rows[column], strict=True)
                if d == direction
            }
            assert ours == want, (column, name)
    t2t = [q for q, d in zip(rows["query_id"], rows["direction"], strict=True) if d == "t2t"]
    assert t2t == gt.caption_ids.tolist()  # every caption, in Karpathy order
    assert all(p is None for d, p in zip(rows["direction"], rows["pm"], strict=True) if d in ("t2t", "i2i"))
    # a Metrics on the built folder finds the ratings there by itself
    assert Metrics(ground_truth=GroundTruth.from_dataset(folder)).cxc_ratings("sts").source.endswith("config)")


def test_fg_configs_equal_the_files_and_score_the_same(built, gt):
    """The FG configs hold the benchmark as its files define it; Metrics(fg_source=...) reads them back."""
    from eccv_metric import Metrics
    from eccv_metric import Resources

    folder, _ = built
    for bench, sources in (("mscoco_fg", {"val2014": 5000, "unlabeled2017": 26244}), ("flickr30k_fg", None)):
        files = Resources(gt, fg_source=SHARED / "mscoco_fg").collection(bench)
        gallery = read(folder, f"{bench}_gallery", ["image_id", "file_name", "source", "coco_url", "image"])
        captions = read(folder, f"{bench}_captions")
        assert gallery["image_id"] == files.images.ids.tolist() and gallery["file_name"] == files.image_files.tolist()
        assert captions["caption_id"] == files.captions.ids.tolist() and captions["caption"] == list(files.texts)
        assert captions["image_id"] == files.images.ids[files.caption_image].tolist()
        counts = {s: gallery["source"].count(s) for s in set(gallery["source"])}
        assert counts == (sources or {"flickr30k": 1000, "unlabeled2017": 5867})
        embedded = [i for i, img in zip(gallery["image_id"], gallery["image"], strict=True) if img is not None]
        assert len(embedded) == (43 if bench == "mscoco_fg" else 0)  # the real val2014 JPEGs in ../shared
        if bench == "mscoco_fg":
            url = gallery["coco_url"][gallery["file_name"].index("000000063032.jpg")]
            assert url == "http://images.cocodataset.org/unlabeled2017/000000063032.jpg"
        rng = np.random.default_rng(0)
        images = rng.standard_normal((len(files.images), 4)).astype(np.float32)
        caps = rng.standard_normal((len(files.captions), 4)).astype(np.float32)
        targets = [f"{bench}_recalls"]
        from_folder = Metrics(fg_source=folder).compute_all_metrics_from_embeddings(
            images, caps, target_metrics=targets
        )
        from_files = Metrics(ground_truth=gt, fg_source=SHARED / "mscoco_fg")
        assert from_folder == from_files.compute_all_metrics_from_embeddings(images, caps, target_metrics=targets)
    texts = read(folder, "mscoco_fg_captions", ["caption_id", "original_caption"])
    assert texts["original_caption"][texts["caption_id"].index(659308)] == (
        "A group of people posing with half a dozen large cupcakes"
    )


def test_load_dataset_offline_every_config(built):
    folder, _ = built
    script = f"""
import json
from datasets import load_dataset
out = {{}}
for config in ("images", "captions", "positives", "cxc_ratings", "mscoco_fg_captions", "flickr30k_fg_gallery"):
    ds = load_dataset({str(folder)!r}, config, split="test")
    out[config] = [ds.num_rows, {{k: repr(v) for k, v in ds.features.items()}}]
img = load_dataset({str(folder)!r}, "images", split="test").filter(lambda r: r["image"] is not None)
out["decoded"] = [type(img[0]["image"]).__module__, img[0]["image"].size[0] == img[0]["width"]]
print(json.dumps(out))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(folder.parent / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["positives"][0] == 59791 and out["positives"][1]["eccv"] == "List(Value('int64'))"
    assert out["images"][1]["image"].startswith("Image(") and out["cxc_ratings"][0] == 135597
    assert out["decoded"] == ["PIL.JpegImagePlugin", True]
    assert out["mscoco_fg_captions"][0] == 25000 and out["flickr30k_fg_gallery"][1]["image"].startswith("Image(")


def test_metrics_from_the_dataset_equal_metrics_from_the_wheel(built, metrics, top50):
    folder, _ = built
    from_dataset = Metrics(ground_truth=GroundTruth.from_dataset(folder))
    i2t, t2i = top50
    targets = ("eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_recalls", "cxc_recalls", "pmrp")
    assert from_dataset.compute_all_metrics(i2t, t2i, targets) == metrics.compute_all_metrics(i2t, t2i, targets)


def test_no_sources_builds_the_wheel_positives_and_says_what_it_skipped(tmp_path):
    messages = []
    report = build(tmp_path / "out", log=messages.append)
    assert report["built"] == {"positives": 30000}
    assert set(report["skipped"]) >= {"images", "captions", "cxc_ratings", "pm"}
    assert any("instances" in m for m in messages)
    rows = read(tmp_path / "out", "positives", ["pm", "cxc"])
    assert all(p is None for p in rows["pm"]) and sum(map(len, rows["cxc"])) == 2 * 35585
    # the qrels need no item configs; the subsets that need CxC ratings are named with that reason
    assert report["beir"]["eccv-t2i-qrels"] == 11279 and "cxc_t2t-t2t-qrels" not in report["beir"]
    assert report["mteb_skipped"]["eccv-t2i"].startswith("qrels only: no captions config")
    assert report["mteb_skipped"]["cxc_t2t-t2t"].startswith("needs the CxC ratings")


def test_a_failed_build_leaves_nothing_behind(tmp_path):
    sources = tmp_path / "src"
    sources.mkdir()
    (sources / "captions_val2014.json").write_text('{"images": [], "annotations": []}')  # lacks the test captions
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="lacks 25000 test captions"):
        build(out, source_dir=sources, configs=["captions"], log=lambda _: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build(out, log=lambda _: None)
    assert (out / "keep.txt").read_text() == "mine"


def test_cli_build(tmp_path):
    from eccv_metric.cli.main import main

    assert main(["build", "--output", str(tmp_path / "b"), "--configs", "positives"]) == 0
    assert (tmp_path / "b" / "data" / "positives").is_dir() and (tmp_path / "b" / "README.md").is_file()
    assert main(["build", "--output", str(tmp_path / "b"), "--configs", "positives"]) == 2  # exists


def test_instances_json_categories_match_gt(built, gt):
    folder, _ = built
    table = read(folder, "images", ["image_id", "categories"])
    raw = json.loads(INSTANCES.read_text())
    names = {c["id"]: c["name"] for c in raw["categories"]}
    expected = {}
    for ann in raw["annotations"]:
        expected.setdefault(ann["image_id"], set()).add(names[ann["category_id"]])
    for image_id, cats in zip(table["image_id"], table["categories"], strict=True):
        assert set(cats or []) == expected.get(image_id, set())


def test_removed_in_eccv_flags_exactly_the_papers_items_and_pm_is_null_without_categories(built):
    folder, _ = built
    captions = read(folder, "captions", ["caption_id", "removed_in_eccv"])
    flagged = {c for c, r in zip(captions["caption_id"], captions["removed_in_eccv"], strict=True) if r}
    assert flagged == {
        607516, 607486, 433639, 248212, 469834, 462530, 469102, 743575, 246706, 61717, 500797, 19273, 630298,
        576409, 390637, 296557, 450553, 44809, 610564, 359139, 218995, 609235, 143250, 375316, 712683, 75083,
        625605, 620511, 613949, 129825, 605566, 634829,
    }  # fmt: skip
    assert None not in captions["removed_in_eccv"]
    images = read(folder, "images", ["image_id", "removed_in_eccv", "categories"])
    assert [i for i, r in zip(images["image_id"], images["removed_in_eccv"], strict=True) if r] == [578492]
    no_categories = {i for i, c in zip(images["image_id"], images["categories"], strict=True) if not c}
    rows = read(folder, "positives", ["direction", "query_id", "pm"])
    null_i2t = {
        q for d, q, p in zip(rows["direction"], rows["query_id"], rows["pm"], strict=True) if d == "i2t" and p is None
    }
    null_t2i = sum(d == "t2i" and p is None for d, p in zip(rows["direction"], rows["pm"], strict=True))
    assert null_i2t == no_categories and len(no_categories) == 48 and null_t2i == 5 * 48


def test_instances_json_accepts_a_built_folder(built, metrics, top50, capsys, tmp_path):
    """`--instances-json <built folder>` reads the categories of its images config (no `Is a directory`)."""
    from eccv_metric.cli.main import main

    folder, _ = built
    assert Metrics(instances_json=folder).compute_all_metrics(*top50, ["pmrp"]) == metrics.compute_all_metrics(
        *top50, ["pmrp"]
    )
    out = tmp_path / "r.json"
    assert main(["evaluate", "--demo", "--metrics", "pmrp", "--instances-json", str(folder), "-o", str(out)]) == 0
    assert set(json.loads(out.read_text())["pmrp"]) == {"i2t", "t2i"}
    capsys.readouterr()
