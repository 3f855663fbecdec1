"""Integration tests: the real ground truth and source files, the official oracle, seeded 5K score matrices."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

from eccv_metric import Metrics
from eccv_metric.kernels.topk import stable_topk
from tests.fixtures import INSTANCES
from tests.fixtures import SHARED
from tests.fixtures import make_scores


@pytest.fixture(scope="session", autouse=True)
def real_data() -> None:
    """The data gate: integration tests fail (never skip) without ../shared/data beside the project."""
    if not INSTANCES.is_file():
        pytest.fail(f"real test data missing: expected {SHARED} beside the project (see README)", pytrace=False)


@pytest.fixture(scope="session")
def metrics() -> Metrics:
    return Metrics(instances_json=INSTANCES)


@pytest.fixture(scope="session")
def gt(metrics):
    return metrics.gt


@pytest.fixture(scope="session")
def official():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from eccv_caption import Metrics as Official
    return Official()


@pytest.fixture(scope="session")
def scores_gauss(gt) -> np.ndarray:
    return make_scores(gt, "gauss")


@pytest.fixture(scope="session")
def top50(gt, scores_gauss):
    """Top-50 rankings of the gauss matrix (our own top-k; for input-validation tests)."""
    i2t_idx, _ = stable_topk(scores_gauss, 50)
    t2i_idx, _ = stable_topk(np.ascontiguousarray(scores_gauss.T), 50)
    i2t = {int(q): gt.caption_ids[row].tolist() for q, row in zip(gt.image_ids, i2t_idx, strict=True)}
    t2i = {int(q): gt.image_ids[row].tolist() for q, row in zip(gt.caption_ids, t2i_idx, strict=True)}
    return i2t, t2i


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """One real build of the dataset folder from ../shared/data (every config), shared by the tests.

    Under pytest-xdist the workers share it too: the first to ask builds it (about a minute) under a file
    lock in the run's common temporary folder, the others wait and read its report.
    """
    from filelock import FileLock

    from eccv_caption_dataset.hub_folder import build

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    out = root / "shared_build" / "eccv_caption"
    done = root / "shared_build" / "report.json"
    with FileLock(str(root / "shared_build.lock")):
        if not done.is_file():
            report = build(out, source_dir=SHARED, log=lambda _: None)
            done.write_text(json.dumps(report))
    return out, json.loads(done.read_text())
