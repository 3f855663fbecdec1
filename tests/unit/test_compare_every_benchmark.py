"""``compare`` takes the per-query file ``evaluate --per-query`` writes for every registered benchmark."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import Embeddings
from eccv_metric import evaluate
from eccv_metric.analysis.compare import compare_files
from tests.unit.test_matrix import EXTRA_CAPTIONS
from tests.unit.test_matrix import items
from tests.unit.world import int_embeddings


def _per_query(world, collection: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    images, captions = items(world, collection)
    img = int_embeddings(rng, images)
    cap = int_embeddings(rng, captions + EXTRA_CAPTIONS)
    source = Embeddings(np.stack(list(img.values())), np.stack(list(cap.values())), images, captions + EXTRA_CAPTIONS)
    names = [name for bench in REGISTRY if bench.collection == collection for name in bench.metric_names((1, 5))]
    return evaluate(source, names, (1, 5), resources=world.resources(), n_resamples=20).per_query_json()


@pytest.mark.parametrize("collection", ["coco_5k", "mscoco_fg", "flickr30k_fg"])
def test_every_per_query_file_is_accepted(world, tmp_path, collection):
    paths = []
    for seed in (1, 2):
        path = tmp_path / f"{collection}_{seed}.json"
        path.write_text(json.dumps(_per_query(world, collection, seed)))
        paths.append(path)
    skipped: dict[str, str] = {}
    rows = compare_files(*paths, 200, 0.95, 0, "randomization", resources=world.resources(), skipped=skipped)
    compared = {r["metric"] for r in rows}
    expected = {
        name
        for bench in REGISTRY
        if bench.collection == collection
        for name in bench.metric_names((1, 5))
        if not name.endswith(("_medr", "_spearman", "_spearman_std"))
    }
    assert compared == expected
    assert all(name.endswith(("_medr", "_spearman", "_spearman_std")) for name in skipped)
    assert all(0 <= r["p_value"] <= 1 and r["a_low"] <= r["a"] <= r["a_high"] for r in rows)
    stratified = {r["metric"] for r in rows if r["stratified"]}
    assert stratified == {m for m in compared if m.startswith("coco_1k")}
