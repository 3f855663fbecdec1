"""``Metrics`` is the one compatibility shim: FG benchmarks through its methods, CxC correlations through the
engine, ``FineGrainedMetrics`` a deprecated alias that warns; on the synthetic world."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import FineGrainedMetrics
from eccv_metric import Metrics
from tests.unit.world import int_embeddings


@pytest.fixture(scope="module")
def metrics(world):
    return Metrics(ground_truth=world.gt, cxc_source=world.cxc_dir, fg_source=world.fg_dir)


def test_fine_grained_metrics_warns_and_equals_metrics(world, metrics):
    with pytest.warns(DeprecationWarning, match="Metrics\\(fg_source=...\\)"):
        old = FineGrainedMetrics("mscoco_fg", world.fg_dir, world.gt)
    fg = world.fg["mscoco_fg"]
    rng = np.random.default_rng(0)
    gallery = int_embeddings(rng, fg["gallery"])
    captions = int_embeddings(rng, fg["captions"])
    images = np.stack([gallery[i] for i in fg["gallery"]])
    caps = np.stack([captions[c] for c in fg["captions"]])
    targets = ["mscoco_fg_recalls", "mscoco_fg_map_at_r", "mscoco_fg_original_pool_r1"]
    got = metrics.compute_all_metrics_from_embeddings(images, caps, fg["gallery"], fg["captions"], targets)
    assert old.compute_all_metrics_from_embeddings(images, caps, fg["gallery"], fg["captions"], targets) == got
    assert set(old.compute_all_metrics_from_embeddings(images, caps, fg["gallery"], fg["captions"])) == {
        "mscoco_fg_r1",
        "mscoco_fg_r5",
        "mscoco_fg_r10",
    }
    with pytest.raises(EvaluationError, match="unknown target metric 'coco_5k_r1' for mscoco_fg"):
        old.compute_all_metrics_from_embeddings(images, caps, target_metrics=["coco_5k_r1"])


def test_cxc_correlation_runs_through_the_engine(world, metrics):
    rng = np.random.default_rng(1)
    vectors = int_embeddings(rng, world.caption_ids, 4)
    captions = np.stack([vectors[c] for c in world.caption_ids]).astype(np.float64)
    want = metrics.per_query_from_embeddings(caption_embeddings=captions, target_metrics=["cxc_sts_spearman"])

    def pair_scores(ids_1: np.ndarray, ids_2: np.ndarray) -> np.ndarray:
        return np.asarray([vectors[a] @ vectors[b] for a, b in zip(ids_1.tolist(), ids_2.tolist(), strict=True)])

    rho = metrics.cxc_correlation("sts", pair_scores)
    assert np.array_equal(rho.samples, want["cxc_sts_spearman"]["t2t"].values)
    assert rho.mean == want["cxc_sts_spearman"]["t2t"].value and rho.kind == "sts"
    with pytest.raises(EvaluationError, match="NaN or inf"):
        metrics.cxc_correlation("sts", lambda a, b: np.full(len(a), np.nan))
    with pytest.raises(EvaluationError, match="kind must be one of"):
        metrics.cxc_correlation("xyz", pair_scores)


def test_each_compute_method_is_the_means_of_its_per_query_twin():
    for name in ("", "_from_scores", "_from_embeddings"):
        compute, per_query = getattr(Metrics, "compute_all_metrics" + name), getattr(Metrics, "per_query" + name)
        assert compute.__name__ == "compute_all_metrics" + name and compute.__doc__
        assert inspect.signature(compute).parameters == inspect.signature(per_query).parameters
        assert inspect.signature(compute).return_annotation == "ResultsDict"
    official = list(inspect.signature(Metrics.compute_all_metrics).parameters)
    assert official[:6] == ["self", "i2t_retrieved_items", "t2i_retrieved_items", "target_metrics", "Ks", "verbose"]
