"""The BEIR / MTEB layout configs of a built folder, read with load_dataset, scored by pytrec_eval and ranx."""

from __future__ import annotations

import numpy as np
import pytest
from datasets import load_dataset

from eccv_metric.formats import trec
from tests.integration.test_trec import KS
from tests.integration.test_trec import third_party


@pytest.fixture(scope="module")
def load(built, tmp_path_factory):
    folder, _ = built
    cache = tmp_path_factory.mktemp("hf_cache")

    def read(config, split="test"):
        return load_dataset(str(folder), config, split=split, cache_dir=str(cache))

    return read


def test_items_configs_have_corpus_and_test_splits(load, gt):
    captions = load("beir-captions", "corpus")
    assert captions.num_rows == 25000 and captions.column_names == ["id", "modality", "text", "image"]
    assert captions[0]["id"] == f"caption-{gt.caption_ids[0]}" and captions[0]["modality"] == "text"
    assert captions[0]["text"] and captions[0]["image"] is None
    images = load("beir-images", "test")
    assert images.num_rows == 5000 and images[0]["id"] == f"image-{gt.image_ids[0]}"
    assert load("beir-images", "corpus")["id"] == images["id"]
    with_pixels = images.filter(lambda r: r["image"] is not None)
    assert with_pixels.num_rows == 43 and type(with_pixels[0]["image"]).__module__.startswith("PIL")


def test_qrels_pair_counts_are_the_papers(load):
    counts = {}
    for bench in ("coco", "cxc", "eccv"):
        for direction in ("i2t", "t2i"):
            qrels = load(f"{bench}-{direction}-qrels")
            assert qrels.column_names == ["query-id", "corpus-id", "score"]
            counts[bench, direction] = (len(set(qrels["query-id"])), qrels.num_rows)
    assert counts["eccv", "i2t"] == (1261, 22550) and counts["eccv", "t2i"] == (1332, 11279)
    assert counts["cxc", "i2t"][1] == counts["cxc", "t2i"][1] == 35585
    assert counts["coco", "i2t"] == (5000, 25000) and counts["coco", "t2i"] == (25000, 25000)
    grades = set(load("cxc-t2i-qrels")["score"])
    assert grades <= {3, 4, 5} and len(grades) == 3  # graded by the SITS rating


@pytest.mark.parametrize("bench", ["coco", "cxc", "eccv"])
def test_harnesses_on_our_qrels_config_agree_with_the_engine(load, metrics, top50, bench):
    targets = [f"{'coco_5k' if bench == 'coco' else bench}_r{k}" for k in KS]
    if bench == "eccv":
        targets += ["eccv_map_at_r", "eccv_rprecision"]
    ours = metrics.per_query(*top50, targets, KS)
    for direction, rankings in zip(("i2t", "t2i"), top50, strict=True):
        table = load(f"{bench}-{direction}-qrels").to_dict()
        qrels: dict[str, dict[str, int]] = {}
        for q, d, s in zip(table["query-id"], table["corpus-id"], table["score"], strict=True):
            qrels.setdefault(q, {})[d] = s
        run = {}
        for line in trec.run_lines(rankings, direction):
            q, _, d, _, s, _ = line.split()
            if q in qrels:
                run.setdefault(q, {})[d] = float(s)
        tre, rx = third_party(qrels, run, {len(v) for v in qrels.values()})
        for target in targets:
            per_query = ours[target][direction]
            prefix = "image-" if direction == "i2t" else "caption-"
            qids = [prefix + str(q) for q in per_query.query_ids.tolist()]
            if target.rsplit("_r", 1)[-1].isdigit():
                k = target.rsplit("_r", 1)[1]
                pairs = [(tre[q][f"success_{k}"], rx[f"hit_rate@{k}"][q]) for q in qids]
            elif target == "eccv_rprecision":
                pairs = [(tre[q]["Rprec"], rx["r-precision"][q]) for q in qids]
            else:
                pairs = [(tre[q][f"map_cut_{len(qrels[q])}"], rx[f"map@{len(qrels[q])}"][q]) for q in qids]
            theirs = np.array(pairs)
            assert np.abs(per_query.values[:, None] - theirs).max() <= 1e-12, (bench, direction, target)
