"""Every page of the documentation runs as a newcomer runs it: README.md and each page of the site (docs/, in
mkdocs.yml's order), its ```python and ```bash blocks in order, in one fresh folder per page, offline.

A page's blocks make their own inputs; where a page reads another page's output it says so in a line, and the
block named in ``PAGE_INPUTS`` runs first. Placeholders (``path/to/cxc``...) are links into ../shared/data
(``PLACEHOLDERS``: the only substitution); ``eccv_caption_hf``, where a page reads it without building it, is the
session's real build of ../shared/data. A ```python block runs in a fresh interpreter (a block of ``>>>`` lines is
a doctest), with a ``ChanceLevelWarning`` as an error: the pages' stand-ins carry structure. Every ``eccv-caption``
line not in ``PARSE_ONLY`` runs through bash and the installed command (this checkout's code on ``PYTHONPATH``);
the ``build`` lines of a page are alternatives, so the folder is removed before each. A ```python block holding a
key of ``PY_NOT_RUN`` (weights from the Hub, a sketch) is only compiled. Each must exit 0 with no
``error:`` line and no traceback, and every ``warning:`` a line prints must be explained on its page (the page holds
the warning's words). The lines only parsed, and why: tests/docs_blocks.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_blocks import ALSO_RUN
from tests.docs_blocks import PAGE_INPUTS
from tests.docs_blocks import PARSE_ONLY
from tests.docs_blocks import PLACEHOLDERS
from tests.docs_blocks import ROOT
from tests.docs_blocks import bash_lines
from tests.docs_blocks import blocks
from tests.docs_blocks import cli_calls
from tests.docs_blocks import command
from tests.docs_blocks import not_run
from tests.docs_blocks import page_name
from tests.docs_blocks import pages
from tests.docs_blocks import python_blocks
from tests.docs_blocks import run_block
from tests.fixtures import SHARED

RUNNABLE = [path for path in pages() if any(language in ("python", "bash") for language, _ in blocks(path.read_text()))]
NO_CHANCE = "import warnings, eccv_metric; warnings.simplefilter('error', eccv_metric.ChanceLevelWarning)\n"
BUILD = "eccv-caption build "
# files a page's recipe must leave behind (a sign its last steps really ran)
LEAVES = {
    "docs/guides/command-line.md": ["rankings_results.json", "fg_cap.npy"],
    "docs/guides/trec-mteb.md": ["run_i2t.json", "predictions/ECCVCaption_coco_t2t-t2t_predictions.json"],
    "docs/guides/comparing.md": ["tau.png", "a_pq.json", "b_pq.json"],
    "docs/data/index.md": ["eccv_caption_hf/README.md"],
    "docs/guides/retrievals.md": ["report.html"],
    "docs/guides/verify.md": ["evidence/evidence.json"],
}


def runs(body: str) -> list[str]:
    """The commands of one ```bash block that run: every line not in PARSE_ONLY, and ALSO_RUN's eccv-caption
    commands."""
    out = []
    for line in bash_lines(f"```bash\n{body}```\n"):
        written = command(line)
        if written not in PARSE_ONLY:
            out.append(written)
        elif written in ALSO_RUN:
            out += [" ".join(["eccv-caption", *argv]) for argv in cli_calls(line)]
    return out


def steps(page: Path) -> list[tuple[str, str]]:
    """(language, body) of what runs for a page, in order: the blocks it names as its inputs, then its own."""
    named = [
        ("python", python_blocks((ROOT / other).read_text())[i]) for other, i in PAGE_INPUTS.get(page_name(page), [])
    ]
    return named + [(lang, body) for lang, body in blocks(page.read_text()) if lang in ("python", "bash")]


def warning_words(stderr: str) -> list[str]:
    """The words of each ``warning:`` line (its direction and numbers left out) a page must hold."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("warning:"):
            text = re.sub(r"^(i2t|t2i|t2t|i2i): ", "", line.removeprefix("warning:").strip())
            out.append(re.split(r"[(;:]", text)[0].strip())
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=page_name)
def test_each_page_runs_in_order_as_written(page, tmp_path, request):
    folder = tmp_path / "newcomer"
    (folder / "path" / "to").mkdir(parents=True)
    for placeholder, target in PLACEHOLDERS.items():
        (folder / placeholder).symlink_to((SHARED / target).resolve())
    todo = steps(page)
    commands = [line for lang, body in todo if lang == "bash" for line in runs(body)]
    reads = [
        body for lang, body in todo if lang == "python" and not not_run(body)
    ] + commands  # what runs, parse-only lines left out
    if any("eccv_caption_hf" in step for step in reads) and not any(line.startswith(BUILD) for line in commands):
        built, _ = request.getfixturevalue("built")  # the session's real build of ../shared/data
        (folder / "eccv_caption_hf").symlink_to(built)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets")}
    env["HF_DATASETS_OFFLINE"] = env["HF_HUB_OFFLINE"] = "1"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # this venv's eccv-caption
    env["ECCV_CAPTION_PROGRESS"] = "0"
    printed = []
    for index, (lang, body) in enumerate(todo):
        if lang == "python":
            if not not_run(body):  # the blocks only compiled (tests/unit/test_docs_bash.py): PY_NOT_RUN
                run_block(body, f"{page_name(page)} block {index + 1}", folder, env, prefix=NO_CHANCE)
            continue
        for line in runs(body):
            if line.startswith(BUILD):  # alternatives: each writes the one folder anew
                shutil.rmtree(folder / "eccv_caption_hf", ignore_errors=True)
            done = subprocess.run(
                ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=900
            )
            said = done.stdout[-2000:] + done.stderr[-3000:]
            assert done.returncode == 0, f"{page_name(page)}: {line}\n{said}"
            assert "error:" not in done.stderr and "Traceback" not in done.stderr, f"{page_name(page)}: {line}\n{said}"
            printed += [(line, words) for words in warning_words(done.stderr)]
    text = " ".join(page.read_text().split())
    for line, words in printed:
        assert words in text, f"{page_name(page)}: `{line}` prints a warning the page does not explain: {words!r}"
    for left in LEAVES.get(page_name(page), []):
        assert (folder / left).is_file(), f"{page_name(page)} left no {left}"


def test_every_page_input_and_left_file_names_a_page():
    names = {page_name(path) for path in pages()}
    assert set(PAGE_INPUTS) <= names and set(LEAVES) <= names
    for page, named in PAGE_INPUTS.items():
        for other, index in named:
            assert index < len(python_blocks((ROOT / other).read_text())), (page, other, index)
            assert Path(other).name in (ROOT / page).read_text(), f"{page} must say where its inputs come from"
