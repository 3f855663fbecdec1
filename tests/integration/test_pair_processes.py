"""A model run on several processes (torchrun, gloo on this CPU): the same numbers and the same block bits as one
process, a pair scorer's and a dual encoder's; a run killed part-way (SIGKILL) resumes on one process to the same
bits. Each test starts torchrun (two Python processes importing torch: seconds). Every process runs torch on one
thread (OMP_NUM_THREADS=1, what torchrun gives each rank): on a CPU, torch's kernels may round differently with
another number of threads (measured here on the tiny CLIP: 2 threads and 1 give embeddings a few ulps apart), which
is the library's, not the blocks'."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tests.unit.conftest as unit_layer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "integration" / "pair_torchrun.py"
world = unit_layer.world
data = unit_layer.data
clip = unit_layer.clip
BENCHES = ["coco_5k", "coco_1k", "eccv"]


def _settings(tmp_path: Path, data: Path, name: str, **extra: object) -> Path:
    settings = {
        "data": str(data),
        "world": str(tmp_path / "worlds"),
        "out": str(tmp_path / f"{name}.json"),
        "model": "torch-pairs",
        "benchmarks": BENCHES,
        "block": 300,
        "rerank_k": 12,
        "pair_batch_size": 64,
        "batch_size": 8,
        "text_batch_size": 8,
        **extra,
    }
    path = tmp_path / f"{name}-settings.json"
    path.write_text(json.dumps(settings))
    return path


def _launch(settings: Path, processes: int) -> subprocess.Popen:
    env = {**os.environ, "ECCV_CAPTION_PROGRESS": "0", "OMP_NUM_THREADS": "1"}
    if processes == 1:
        cmd = [sys.executable, str(SCRIPT), str(settings)]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
               str(SCRIPT), str(settings)]  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip


def _run(settings: Path, processes: int) -> dict:
    proc = _launch(settings, processes)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, (out + err)[-3000:]
    assert out.count("DONE") == processes
    return json.loads(Path(json.loads(settings.read_text())["out"]).read_text())


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (torchrun starts its workers in sessions of their own)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        out.append(todo.pop())
        todo += parents.get(out[-1], [])
    return out


def _blocks(cache: Path) -> dict[str, np.ndarray]:
    return {p.name: np.load(p)["scores"] for p in sorted((cache / "pairs").glob("*/block-*.npz"))}


def _embeddings(cache: Path) -> dict[str, np.ndarray]:
    return {p.parent.name: np.load(p) for p in sorted(cache.glob("*/embeddings.npy"))}


@pytest.fixture(scope="module")
def clean(world, data, tmp_path_factory):
    """One process, a cold cache: the numbers, the pair blocks and the first stage's embeddings every other run
    must give (a rerank of the tiny torch scorer with its own first stage, small blocks)."""
    folder = tmp_path_factory.mktemp("clean")
    out = _run(_settings(folder, data, "one", cache_dir=str(folder / "cache")), 1)
    return out, _blocks(folder / "cache"), _embeddings(folder / "cache")


def test_two_processes_give_the_bits_of_one(clean, data, tmp_path):
    """torchrun with 2 ranks (gloo): every pair block and every first-stage embedding has the bits of a 1-process
    run (each rank encodes its batches of the first stage, rank 0 assembles them, every rank picks the same
    candidates, the blocks are dealt), and so have the numbers; rank 0 scores, the provenance says how."""
    one, b1, e1 = clean
    two = _run(_settings(tmp_path, data, "two", cache_dir=str(tmp_path / "c2")), 2)
    assert two["means"] == one["means"] and one["provenance"]["protocol"]["name"] == "rerank"
    assert two["provenance"]["parallel"] == {"how": "torchrun", "world_size": 2, "rank": 0, "backend": "gloo"}
    b2, e2 = _blocks(tmp_path / "c2"), _embeddings(tmp_path / "c2")
    assert len(b1) > 2 and b1.keys() == b2.keys() and all(np.array_equal(b1[k], b2[k]) for k in b1)
    assert e1 and e1.keys() == e2.keys() and all(np.array_equal(e1[k], e2[k]) for k in e1)


def test_killed_two_process_run_resumes_on_one(clean, data, tmp_path):
    """A 2-process run killed (SIGKILL, every process) once some blocks are written, then resumed by one process:
    the blocks written are kept (not computed again), and every block and number equals a clean run."""
    one, b1, _ = clean
    cache = tmp_path / "killed"
    proc = _launch(_settings(tmp_path, data, "killed", cache_dir=str(cache), sleep=0.3), 2)
    deadline = time.monotonic() + 300
    while len(list(cache.glob("pairs/*/block-*.npz"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    for pid in _tree(proc.pid):  # SIGKILL: no process finishes its block or cleans up
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.communicate(timeout=60)
    kept = len(_blocks(cache))
    assert 2 <= kept < len(b1)
    resumed = _run(_settings(tmp_path, data, "resumed", cache_dir=str(cache)), 1)
    assert resumed["provenance"]["pairs"]["blocks_cached"] >= kept
    assert resumed["means"] == one["means"]
    b2 = _blocks(cache)
    assert b1.keys() == b2.keys() and all(np.array_equal(b1[k], b2[k]) for k in b1)


def test_a_dual_encoder_on_two_processes(world, data, clip, tmp_path):
    """A dual encoder's batches are dealt to the ranks the same way: the embeddings' bits and the numbers of one
    process."""
    extra = {"model": f"hf:{clip}", "benchmarks": ["coco_5k", "cxc_t2t"]}
    one = _run(_settings(tmp_path, data, "one", cache_dir=str(tmp_path / "c1"), **extra), 1)
    two = _run(_settings(tmp_path, data, "two", cache_dir=str(tmp_path / "c2"), **extra), 2)
    assert two["means"] == one["means"] and two["provenance"]["parallel"]["world_size"] == 2
    e1, e2 = _embeddings(tmp_path / "c1"), _embeddings(tmp_path / "c2")
    assert len(e1) == 2 and e1.keys() == e2.keys() and all(np.array_equal(e1[k], e2[k]) for k in e1)


def test_two_runs_writing_one_cache_at_once(clean, data, tmp_path):
    """Two independent runs started together on one cache folder: both finish with the numbers of a clean run, and
    every block file left holds one run's whole block (files appear by rename only: nothing stale is served)."""
    one, b1, _ = clean
    shared = str(tmp_path / "shared")
    procs = [_launch(_settings(tmp_path, data, f"r{k}", cache_dir=shared, sleep=0.05), 1) for k in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (out + err)[-3000:]
    for k in range(2):
        assert json.loads((tmp_path / f"r{k}.json").read_text())["means"] == one["means"]
    b2 = _blocks(tmp_path / "shared")
    assert b1.keys() == b2.keys() and all(np.array_equal(b1[k], b2[k]) for k in b1)
    assert not list((tmp_path / "shared").glob("pairs/*/.*.tmp"))
