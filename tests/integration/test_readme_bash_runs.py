"""Every ``eccv-caption`` line of the README's ```bash blocks that needs no network, GPU or model runs as pasted.

The lines run in order, in one fresh folder, through bash and the installed ``eccv-caption`` command (this
checkout's code on ``PYTHONPATH``), offline. The folder holds what the README's lines name, made here: seeded
stand-ins for a model's outputs over the real test ids (``rankings.json``, ``a.json`` / ``b.json``: top-50 lists;
``sims.npy``: a float16 score matrix; ``img.npy`` / ``cap.npy``, ``fg_img.npy`` / ``fg_cap.npy``: embeddings; the
id files), and its placeholders as links into ../shared/data (``path/to/cxc``, ``path/to/fg``,
``path/to/instances_val2014.json``, ``path/to/sources``): the only substitution. The three ``build`` lines are
alternatives (each needs the folder not to exist), so the folder is removed before each. Each line must exit 0
with no error line and no traceback. The lines only parsed, and why: tests/docs_blocks.py (PARSE_ONLY).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import Resources
from eccv_metric.groundtruth.split import GroundTruth
from tests.docs_blocks import ALSO_RUN
from tests.docs_blocks import PARSE_ONLY
from tests.docs_blocks import ROOT
from tests.docs_blocks import bash_lines
from tests.docs_blocks import cli_calls
from tests.docs_blocks import command
from tests.fixtures import INSTANCES
from tests.fixtures import SHARED
from tests.fixtures import make_scores
from tests.fixtures import rankings


def write_inputs(folder: Path) -> None:
    """The files the README's lines read (see the module docstring)."""
    gt = GroundTruth.from_wheel()
    scores = make_scores(gt, "gauss")
    i2t, t2i = rankings(gt, scores, depth=50)
    for name, lists in (
        ("rankings.json", t2i),
        ("a.json", t2i),
        ("b.json", {k: v[1:] + v[:1] for k, v in t2i.items()}),
    ):
        (folder / name).write_text(json.dumps({"i2t": i2t, "t2i": lists}))
    np.save(folder / "sims.npy", scores.astype(np.float16))
    del scores
    (folder / "image_ids.txt").write_text("\n".join(map(str, gt.image_ids.tolist())))
    (folder / "caption_ids.txt").write_text("\n".join(map(str, gt.caption_ids.tolist())))
    rng = np.random.default_rng(0)
    images = rng.standard_normal((len(gt.image_ids), 16)).astype(np.float32)
    np.save(folder / "img.npy", images)
    np.save(folder / "cap.npy", images[gt.caption_image] + rng.standard_normal((len(gt.caption_ids), 16), np.float32))
    fg = Resources(gt, fg_source=SHARED / "mscoco_fg").collection("mscoco_fg")
    np.save(folder / "fg_img.npy", rng.standard_normal((len(fg.index("image")), 16)).astype(np.float32))
    np.save(folder / "fg_cap.npy", rng.standard_normal((len(fg.index("caption")), 16)).astype(np.float32))
    links = {
        "cxc": SHARED / "cxc",
        "fg": SHARED / "mscoco_fg",
        "instances_val2014.json": INSTANCES,
        "sources": SHARED,
    }
    (folder / "path" / "to").mkdir(parents=True)
    for name, target in links.items():
        (folder / "path" / "to" / name).symlink_to(target)


def runs() -> list[str]:
    """The commands run, in README order: every line not in PARSE_ONLY, and the eccv-caption commands of ALSO_RUN."""
    out = []
    for line in bash_lines():
        written = command(line)
        if written not in PARSE_ONLY:
            out.append(written)
        elif written in ALSO_RUN:
            out += [" ".join(["eccv-caption", *argv]) for argv in cli_calls(line)]
    return out


@pytest.mark.slow
def test_every_offline_readme_shell_line_runs_as_pasted(tmp_path):
    folder = tmp_path / "newcomer"
    folder.mkdir()
    write_inputs(folder)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_DATASETS_CACHE": str(tmp_path / "hf_datasets")}
    env["HF_DATASETS_OFFLINE"] = env["HF_HUB_OFFLINE"] = "1"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # this venv's eccv-caption
    env["ECCV_CAPTION_PROGRESS"] = "0"
    commands = runs()
    assert sum(c.startswith("eccv-caption") for c in commands) >= 20
    for line in commands:
        if line.startswith("eccv-caption build "):  # alternatives: each writes the one folder anew
            shutil.rmtree(folder / "eccv_caption_hf", ignore_errors=True)
        done = subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=900)
        said = done.stdout[-2000:] + done.stderr[-3000:]
        assert done.returncode == 0, f"{line}\n{said}"
        assert "error:" not in done.stderr and "Traceback" not in done.stderr, f"{line}\n{said}"
    assert (folder / "tau.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((folder / "a_results.json").read_text())["eccv_map_at_r"]["i2t"] > 0
