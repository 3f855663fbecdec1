"""Every Python code block of the README, the metric card and the dataset card runs as written.

Blocks are taken from the Markdown (```python fences). A block of ``>>>`` lines is a doctest (its outputs are
checked); any other block runs in its own interpreter (a fresh process, a temporary working folder, a timeout)
and must exit 0. The dataset card is the one a real build writes (COCO captions and images from
../shared/data, the wheel's positives) with ``repo_id`` set to the built folder, so its
``load_dataset("<repo>", ...)`` calls read that folder: the only substitution, made by the builder itself.
A README block that reads ``"eccv_caption_hf"`` (the folder its build command writes) finds that build there.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from tests.docs_blocks import page_name
from tests.docs_blocks import pages
from tests.fixtures import SHARED

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = {**{page_name(path): path for path in pages()}, "metric card": EVALUATE_MODULE_DIR / "README.md"}


def python_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def cases() -> list[tuple[str, int]]:
    return [(name, i) for name, path in DOCS.items() for i in range(len(python_blocks(path.read_text())))]


# README blocks stand in for a model with structured inputs: numbers at chance level would teach a newcomer
# to ignore the warning that catches row-order mix-ups, so there it is an error
NO_CHANCE = "import warnings, eccv_metric; warnings.simplefilter('error', eccv_metric.ChanceLevelWarning)\n"


def run_block(code: str, where: str, tmp_path: Path) -> None:
    """A doctest block in this process, any other block in a fresh interpreter (timeout 15 min)."""
    if any(line.lstrip().startswith(">>>") for line in code.splitlines()):
        test = doctest.DocTestParser().get_doctest(code, {}, where, where, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted and not result.failed, f"{where}: doctest failed"
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets")}
    env["HF_DATASETS_OFFLINE"] = env["HF_HUB_OFFLINE"] = "1"  # the examples need no network
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{where} failed:\n{code}\n{done.stderr[-3000:]}"


def test_the_docs_have_their_blocks():
    assert sum(n != "metric card" for n, _ in cases()) >= 2 and [n for n, _ in cases()].count("metric card") >= 2


@pytest.mark.slow
@pytest.mark.parametrize("doc,index", cases())
def test_block_runs_as_written(doc, index, tmp_path, request):
    code = python_blocks(DOCS[doc].read_text())[index]
    if '"eccv_caption_hf"' in code:  # the folder the README's `eccv-caption build --output eccv_caption_hf` writes
        folder, _ = request.getfixturevalue("dataset_card")
        (tmp_path / "eccv_caption_hf").symlink_to(folder)
    run_block(code if doc == "metric card" else NO_CHANCE + code, f"{doc} block {index + 1}", tmp_path)


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
        run_block(code, f"dataset card block {index + 1}", tmp_path)
