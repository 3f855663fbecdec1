"""Integration tests: the real ground truth and source files, the official oracle, seeded 5K score matrices."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

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


def shared_folder(tmp_path_factory, name: str, make) -> Path:
    """``make(folder)`` run once per test run, shared by the xdist workers: the first to ask builds it under a file
    lock in the run's common temporary folder, the others wait and read it. Returns ``<run>/<name>``."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    out, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            make(out)
            done.write_text("")
    return out


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """One real build of the dataset folder from ../shared/data (every config), shared by the tests and the
    workers (about 30 s, once per run)."""
    from eccv_caption_dataset.hub_folder import build

    def make(folder: Path) -> None:
        report = build(folder / "eccv_caption", source_dir=SHARED, log=lambda _: None)
        (folder / "report.json").write_text(json.dumps(report))

    folder = shared_folder(tmp_path_factory, "shared_build", make)
    return folder / "eccv_caption", json.loads((folder / "report.json").read_text())


@pytest.fixture(scope="session")
def published_runs(tmp_path_factory) -> dict:
    """Two tiny models' runs with their evidence, to publish on the fake Hub (tests/integration/published_world.py):
    made once per test run and shared by the workers (about 7 s)."""
    from tests.integration.published_world import make_runs
    from tests.integration.published_world import read_runs

    return read_runs(shared_folder(tmp_path_factory, "published_runs", make_runs))


@pytest.fixture(scope="session")
def pixel_build(tmp_path_factory, gt):
    """A build whose 5,000 images all have pixels, once per run for every module that reads one (the model CLI,
    MTEB): synthetic 8x8 PNGs (``tests.integration.hashing.image_pixels``: pixel (0, 0) stores the image id, the
    rest seeded noise for a tiny CLIP), with the real captions, instances, positives and CxC ratings (the real
    pixels are not in ../shared/data)."""
    from eccv_caption_dataset.hub_folder import build
    from tests.integration.hashing import image_pixels

    def make(folder: Path) -> None:
        src = folder / "sources"
        (src / "val2014").mkdir(parents=True)
        (src / "cxc").mkdir()
        for name in ("captions_karpathy_test.json", "instances_karpathy_test.json"):
            (src / name).symlink_to(SHARED / "coco" / name)
        for name in ("sits_test.csv", "sts_test.csv", "sis_test.csv"):
            (src / "cxc" / name).symlink_to(SHARED / "cxc" / name)
        for image_id in gt.image_ids.tolist():
            (src / "val2014" / f"COCO_val2014_{image_id:012d}.jpg").write_bytes(image_pixels(image_id))
        configs = ["images", "captions", "positives", "cxc_ratings"]
        report = build(folder / "eccv_caption", source_dir=src, configs=configs, log=lambda _: None)
        assert report["mteb_skipped"] == {} and not report.get("images_missing"), report

    return shared_folder(tmp_path_factory, "pixel_build", make) / "eccv_caption"


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through playwright, one per test module (the Space's browser tests)."""
    from playwright.sync_api import sync_playwright

    from tests.integration.test_space import CHROMIUM
    from tests.integration.test_space import CHROMIUM_ARGS

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install -y chromium"
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
