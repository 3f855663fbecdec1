"""Every Python code block of the metric card and of the dataset card a build writes runs as written (the README's
and the docs site's pages run, in order, in tests/integration/test_docs_recipes.py).

Blocks are taken from the Markdown (```python fences). A block of ``>>>`` lines is a doctest (its outputs are
checked); any other block runs in its own interpreter (a fresh process, a temporary working folder, a timeout)
and must exit 0. The dataset card is the one a real build writes (COCO captions and images from
../shared/data, the wheel's positives) with ``repo_id`` set to the built folder, so its
``load_dataset("<repo>", ...)`` calls read that folder: the only substitution, made by the builder itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from tests.docs_blocks import ROOT
from tests.docs_blocks import python_blocks
from tests.docs_blocks import run_block
from tests.fixtures import SHARED

CARD = EVALUATE_MODULE_DIR / "README.md"


def offline(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets")}
    env["HF_DATASETS_OFFLINE"] = env["HF_HUB_OFFLINE"] = "1"  # the examples need no network
    return env


def test_the_metric_card_has_its_blocks():
    assert len(python_blocks(CARD.read_text())) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(python_blocks(CARD.read_text()))))
def test_metric_card_block_runs_as_written(index, tmp_path):
    code = python_blocks(CARD.read_text())[index]
    run_block(code, f"metric card block {index + 1}", tmp_path, offline(tmp_path))


@pytest.fixture(scope="module")
def dataset_card(tmp_path_factory) -> tuple[Path, str]:
    from eccv_caption_dataset.hub_folder import build

    root = tmp_path_factory.mktemp("card")
    sources = root / "sources"  # links, not copies: the COCO captions and images of ../shared/data
    sources.mkdir()
    (sources / "captions_karpathy_test.json").symlink_to(SHARED / "coco" / "captions_karpathy_test.json")
    (sources / "val2014").symlink_to(SHARED / "coco" / "val2014")
    folder = root / "eccv_caption"
    build(folder, source_dir=sources, configs=["positives", "captions", "images"], repo_id=str(folder), log=print)
    return folder, (folder / "README.md").read_text()


def test_dataset_card_blocks_run_as_written(dataset_card, tmp_path):
    folder, card = dataset_card
    blocks = python_blocks(card)
    assert len(blocks) >= 2 and all(str(folder) in block for block in blocks)  # usage, BEIR / MTEB layout
    for index, code in enumerate(blocks):
        run_block(code, f"dataset card block {index + 1}", tmp_path, offline(tmp_path))
