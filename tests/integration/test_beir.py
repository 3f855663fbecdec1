"""The BEIR / MTEB layout of a built folder, read with load_dataset, scored by pytrec_eval and ranx.

The real build (``built``) has pixels for 43 of its 5,000 images: every subset's qrels are written, the
text subsets (``cxc_t2t-t2t``, ``coco_t2t-t2t``) are complete, and the image subsets have no corpus /
queries aliases (the card says why). test_mteb.py runs mteb itself on it and on a build with every pixel.
"""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

from eccv_metric import REGISTRY
from eccv_metric.benchmarks.subsets import not_offered
from eccv_metric.benchmarks.subsets import subsets
from eccv_metric.formats import trec
from tests.integration.test_trec import KS
from tests.integration.test_trec import third_party

IMAGE_SUBSETS = [s.name for s in subsets() if "image" in s.kinds]


@pytest.fixture(scope="module")
def load(built, tmp_path_factory):
    folder, _ = built
    cache = tmp_path_factory.mktemp("hf_cache")

    def read(config, split="test"):
        return load_dataset(str(folder), config, split=split, cache_dir=str(cache))

    return read


@pytest.fixture(scope="module")
def header(built):
    text = (built[0] / "README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1])


def test_items_are_one_file_per_coco_1k_fold_in_karpathy_order(built, load, gt):
    folder, _ = built
    captions = load("beir-captions")
    assert captions.num_rows == 25000 and captions.column_names == ["id", "modality", "text", "image"]
    assert captions["id"] == [f"caption-{c}" for c in gt.caption_ids.tolist()]
    assert captions[0]["modality"] == "text" and captions[0]["text"] and captions[0]["image"] is None
    images = load("beir-images")
    assert images["id"] == [f"image-{i}" for i in gt.image_ids.tolist()]
    with_pixels = images.filter(lambda r: r["image"] is not None)
    assert with_pixels.num_rows == 43 and type(with_pixels[0]["image"]).__module__.startswith("PIL")
    for name, kind, ids, folds in (
        ("beir-images", "image", gt.image_ids, gt.image_fold),
        ("beir-captions", "caption", gt.caption_ids, gt.caption_fold),
    ):
        files = sorted((folder / "data" / name).glob("*.parquet"))
        assert [p.name for p in files] == [f"items-{f:05d}-of-00005.parquet" for f in range(5)]
        for fold, path in enumerate(files):
            assert pq.read_table(path, columns=["id"])["id"].to_pylist() == [f"{kind}-{i}" for i in ids[folds == fold]]


def test_configs_are_mteb_names_over_the_same_files(header, built):
    """<subset>-corpus / -queries alias the item files; one split each; aliases carry no dataset_info."""
    configs = {c["config_name"]: c["data_files"] for c in header["configs"]}
    infos = {i["config_name"]: i for i in header["dataset_info"]}
    assert all(len(files) == 1 and files[0]["split"] == "test" for files in configs.values())
    for name in ("cxc_t2t-t2t", "coco_t2t-t2t"):
        assert configs[f"{name}-corpus"] == configs[f"{name}-queries"] == configs["beir-captions"]
        assert f"{name}-corpus" not in infos and f"{name}-qrels" in infos
    assert all(i["dataset_size"] == i["splits"][0]["num_bytes"] for i in infos.values())  # counted once
    assert not any(f"{name}-corpus" in configs or f"{name}-queries" in configs for name in IMAGE_SUBSETS)
    assert all(f"{name}-qrels" in configs for name in IMAGE_SUBSETS)  # ground truth needs no pixels
    assert "query" not in configs and "title" not in str(infos["beir-captions"]["features"])  # mteb's pitfalls
    card = (built[0] / "README.md").read_text()
    assert "4,957 of the 5,000 images have no pixels (MTEB's image pipeline needs every image)" in card
    assert "from eccv_caption_dataset.mteb import tasks" in card
    named = {c for bench in REGISTRY for c in bench.configs}  # the registry's configs exist in a full build
    assert named <= set(configs), named - set(configs)
    for bench in REGISTRY:  # every benchmark is a subset or named with its reason
        assert (
            any(s.benchmark == bench.name for s in subsets()) or f"`{bench.name}`" in card.split("without a subset")[1]
        )
        assert (not_offered(bench) is None) == any(s.benchmark == bench.name for s in subsets())


def test_qrels_pair_counts_are_the_papers(load):
    counts = {}
    for bench in ("coco_5k", "cxc", "eccv", "cxc_extended"):
        for direction in ("i2t", "t2i"):
            qrels = load(f"{bench}-{direction}-qrels")
            assert qrels.column_names == ["query-id", "corpus-id", "score"]
            assert set(qrels["score"]) == {1}  # every benchmark is binary
            counts[bench, direction] = (len(set(qrels["query-id"])), qrels.num_rows)
    assert counts["eccv", "i2t"] == (1261, 22550) and counts["eccv", "t2i"] == (1332, 11279)
    assert counts["cxc", "i2t"][1] == counts["cxc", "t2i"][1] == 35585
    assert counts["cxc_extended", "i2t"][1] == 35585 + 29  # the 29 COCO pairs rated below 3
    assert counts["coco_5k", "i2t"] == (5000, 25000) and counts["coco_5k", "t2i"] == (25000, 25000)
    folds = [load(f"coco_1k_fold{f}-t2i-qrels") for f in range(5)]
    assert sum(q.num_rows for q in folds) == 25000 and {q.num_rows for q in folds} == {5000}
    assert load("coco_t2t-t2t-qrels").num_rows == 25000 * 4 and load("cxc_i2i-i2i-qrels").num_rows > 0


def test_cxc_grades_agree_with_the_trec_export(load, tmp_path):
    """One CxC grading everywhere: cxc binary, cxc_graded = SITS rounded half up, in the dataset and the TREC files."""
    from eccv_metric.cli.main import main
    from tests.fixtures import SHARED

    for direction in ("i2t", "t2i"):
        graded = load(f"cxc_graded-{direction}-qrels").to_dict()
        binary = load(f"cxc-{direction}-qrels").to_dict()
        assert list(zip(graded["query-id"], graded["corpus-id"], strict=True)) == list(
            zip(binary["query-id"], binary["corpus-id"], strict=True)
        )
        assert set(graded["score"]) == {3, 4, 5}
        for name, table in (("cxc_graded", graded), ("cxc", binary)):
            path = tmp_path / f"{name}.{direction}.qrels"
            args = ["export-trec", "--qrels", name, "--direction", direction, "--cxc-source", str(SHARED / "cxc")]
            assert main([*args, "-o", str(path)]) == 0
            lines = [line.split() for line in path.read_text().splitlines()]
            assert sorted((q, d, int(r)) for q, _, d, r in lines) == sorted(
                zip(table["query-id"], table["corpus-id"], table["score"], strict=True)
            )


@pytest.mark.parametrize("bench", ["coco_5k", "cxc", "eccv"])
def test_harnesses_on_our_qrels_config_agree_with_the_engine(load, metrics, top50, bench):
    targets = [f"{bench}_r{k}" for k in KS]
    if bench == "eccv":
        targets += ["eccv_map_at_r", "eccv_rprecision"]
    ours = metrics.per_query(*top50, targets, KS)
    for direction, rankings in zip(("i2t", "t2i"), top50, strict=True):
        table = load(f"{bench}-{direction}-qrels").to_dict()
        qrels: dict[str, dict[str, int]] = {}
        for q, d, s in zip(table["query-id"], table["corpus-id"], table["score"], strict=True):
            qrels.setdefault(q, {})[d] = s
        sample = set(list(qrels)[:: 5 if len(qrels) > 6000 else 1])  # 25,000 caption queries: every fifth
        qrels = {q: d for q, d in qrels.items() if q in sample}
        run = {}
        for line in trec.run_lines(rankings, direction):
            q, _, d, _, s, _ = line.split()
            if q in qrels:
                run.setdefault(q, {})[d] = float(s)
        tre, rx = third_party(qrels, run, {len(v) for v in qrels.values()})
        for target in targets:
            per_query = ours[target][direction]
            prefix = "image-" if direction == "i2t" else "caption-"
            keep = [k for k, q in enumerate(per_query.query_ids.tolist()) if prefix + str(q) in sample]
            qids = [prefix + str(q) for q in per_query.query_ids[keep].tolist()]
            assert len(qids) == len(qrels)
            if target.rsplit("_r", 1)[-1].isdigit():
                k = target.rsplit("_r", 1)[1]
                pairs = [(tre[q][f"success_{k}"], rx[f"hit_rate@{k}"][q]) for q in qids]
            elif target == "eccv_rprecision":
                pairs = [(tre[q]["Rprec"], rx["r-precision"][q]) for q in qids]
            else:
                pairs = [(tre[q][f"map_cut_{len(qrels[q])}"], rx[f"map@{len(qrels[q])}"][q]) for q in qids]
            theirs = np.array(pairs)
            assert np.abs(per_query.values[keep][:, None] - theirs).max() <= 1e-12, (bench, direction, target)
