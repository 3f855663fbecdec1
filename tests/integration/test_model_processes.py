"""The model path in processes of its own (the unit layer's tiny models and synthetic world, moved here because
each starts Python or worker processes, seconds apart): workers from a fork server (a GPU run's) decode to the
same bits; a whole model run imports neither datasets, evaluate nor the official package (the GPU machines'
case); a Hub spec with no network fails at once, in one line; a warm rerun imports neither torch nor
transformers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tests.unit.conftest as unit_layer
from tests.unit.model_world import run_model

ROOT = Path(__file__).resolve().parents[2]
# the unit layer's fixtures: the synthetic world, its built folder with pixels, a tiny random CLIP
world = unit_layer.world
data = unit_layer.data
clip = unit_layer.clip


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    return run_model(model, data, world, tmp_path, **kwargs)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("least_piece", [16, 1])
def test_clean_workers_give_the_same_embeddings(world, data, clip, tmp_path, monkeypatch, least_piece):
    """Workers from a fork server (what a GPU run uses) decode to the same bits as the main process, whole
    batches or each batch read in pieces (``least_piece=1``: batches of 8 in pieces of 3, 3 and 2)."""
    from eccv_metric.models import evaluate_model

    monkeypatch.setattr("eccv_metric.models.encoding.workers.LEAST_PIECE", least_piece)
    one = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"], cache=False, save_embeddings=tmp_path / "a")
    monkeypatch.setenv("ECCV_CAPTION_WORKER_START", "forkserver")
    two = evaluate_model(f"hf:{clip}", data, benchmarks=["coco_5k"], resources=world.resources(), workers=2,
                         batch_size=8, cache=False, save_embeddings=tmp_path / "b")  # fmt: skip
    name = "image_embeddings.npy"
    assert np.array_equal(np.load(tmp_path / "a" / "coco_5k" / name), np.load(tmp_path / "b" / "coco_5k" / name))
    assert two.results.means() == one.results.means()


@pytest.mark.parametrize(("workers", "started"), [(2, True), (0, False)])
def test_the_fork_server_starts_while_the_model_loads(clip, workers, started):
    """A run whose image workers come from a fork server (a GPU's; forced here) starts it when the device is
    known, before the model loads (its imports run beside the load), preloading the family's image
    preprocessing; a run without workers starts none."""
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from multiprocessing import forkserver
from eccv_metric.models.families.spec import load_model
load_model("hf:{clip}", "cpu", workers={workers})
server = forkserver._forkserver
print("STARTED", server._forkserver_pid is not None, sorted(server._preload_modules))
"""
    env = {**os.environ, "ECCV_CAPTION_WORKER_START": "forkserver"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("STARTED"))
    assert line.startswith(f"STARTED {started}")
    if started:
        assert "'transformers.image_processing_utils'" in line and "'torch'" in line


def test_a_sweep_starts_the_fork_server_before_reading_its_models(clip):
    """Several models: the fork server starts (preloading their families' worker modules) before their image
    preprocessing is read to group them (image_key imports the libraries: the server's imports run beside)."""
    code = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from multiprocessing import forkserver
from eccv_metric.models import many
from eccv_metric.models.run import RunOptions
seen = []
many.image_key = lambda model, options: seen.append(forkserver._forkserver._forkserver_pid is not None)
many.load_groups(["hf:{clip}", "hf:{clip}"], RunOptions(device="cpu", workers=2))
print("SEEN", seen, sorted(forkserver._forkserver._preload_modules))
"""
    env = {**os.environ, "ECCV_CAPTION_WORKER_START": "forkserver"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("SEEN"))
    assert line.startswith("SEEN [True, True]") and "'transformers.image_processing_utils'" in line


def test_model_path_runs_without_datasets_evaluate_or_the_official_package(world, data, clip, tmp_path):
    """The GPU machines that run benchmark_models.py have torch and transformers but neither datasets nor evaluate:
    a whole model run (items from a built folder, encoding, scoring) imports none of them, nor pandas (which
    numpy's view of a pyarrow column imported: 0.13 s of every run)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = f"""
import sys
for name in ("datasets", "evaluate", "eccv_caption", "torchvision"):
    sys.modules[name] = None
sys.path.insert(0, {str(root)!r})
from pathlib import Path
from eccv_metric.models import evaluate_model
from tests.unit.world import make_world
world = make_world(Path({str(tmp_path / "w")!r}))
out = evaluate_model("hf:{clip}", {str(data)!r}, benchmarks=["coco_5k", "cxc_t2t"], resources=world.resources(),
                     workers=0, cache=False, n_resamples=10)
print("OK", sorted(out.results.means())[:2], "pandas" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "OK ['coco_5k_r1', 'coco_5k_r10'] False" in out.stdout


@pytest.mark.parametrize("prefix", ["hf", "st"])
def test_a_hub_spec_without_network_fails_at_once(prefix, tmp_path):
    """An unreachable Hub (HF_ENDPOINT on a closed local port): one error line naming HF_HUB_OFFLINE=1 and a local
    folder; the libraries' retries (27 s / 78 s) never start."""
    env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{_closed_port()}", "HF_HOME": str(tmp_path / "hf"),
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    env.pop("HF_HUB_OFFLINE", None)
    code = f"""
import eccv_metric.models
try:
    eccv_metric.models.load_model("{prefix}:someone/some-model", device="cpu")
except eccv_metric.EvaluationError as exc:
    print("ERR", exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    [line] = [x for x in out.stdout.splitlines() if x.startswith("ERR")]
    assert line.startswith(f"ERR {prefix}:someone/some-model: cannot reach the Hugging Face Hub at http://127.0.0.1:")
    assert line.endswith("and the model is not in the local cache: connect, set HF_HUB_OFFLINE=1 to use cached "
                         "models only, or give a local folder")  # fmt: skip
    assert "Retrying" not in out.stderr


@pytest.mark.parametrize("where", ["a local folder", "an offline Hub snapshot", "an unreachable Hub's snapshot"])
def test_a_warm_rerun_imports_neither_torch_nor_transformers(where, world, data, clip, tmp_path):
    """The second run of the same model and benchmarks in a fresh Python finds every embedding cached and the
    model's description remembered (eccv_metric.models.cache.recall): it scores without importing torch,
    transformers or PIL, with the first run's numbers and identity (a Hub model: its snapshot in the Hugging
    Face cache layout that offline mode, or a Hub that cannot be reached, reads)."""
    import json
    import shutil

    hub = tmp_path / "hub"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_CACHE": str(hub), "ECCV_CAPTION_PROGRESS": "0"}
    env.pop("HF_HUB_OFFLINE", None)
    spec, commit = f"hf:{clip}", None
    if where != "a local folder":
        commit = "0123456789abcdef" * 2 + "01234567"
        shutil.copytree(clip, hub / "models--me--clip" / "snapshots" / commit)
        (hub / "models--me--clip" / "refs").mkdir()
        (hub / "models--me--clip" / "refs" / "main").write_text(commit)
        spec = "hf:me/clip"
        if where == "an offline Hub snapshot":
            env["HF_HUB_OFFLINE"] = "1"
        else:  # a load reads the local cache; so does the rerun, after one refused connection
            env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    code = f"""
import json, sys
from pathlib import Path
from eccv_metric.models import evaluate_model
from tests.unit.world import make_world
world = make_world(Path({str(tmp_path / "w")!r}))
out = evaluate_model({spec!r}, {str(data)!r}, benchmarks=["coco_5k", "cxc_t2t"], resources=world.resources(),
                     workers=0, device="cpu", cache_dir={str(tmp_path / "cache")!r}, n_resamples=10)
modules = [m for m in ("torch", "transformers", "PIL") if m in sys.modules]
print("RESULT " + json.dumps({{"means": out.results.means(), "loaded": out.provenance["model_loaded"],
      "identity": out.provenance["identity"], "modules": modules}}))
"""

    def run() -> dict:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])

    first, second = run(), run()
    assert first["loaded"] is True and first["modules"] == ["torch", "transformers", "PIL"]
    assert second["loaded"] is False and second["modules"] == []
    assert second["means"] == first["means"] and second["identity"] == first["identity"]
    assert first["identity"]["weights_from"] == "files" and first["identity"]["spec"] == spec
    assert first["identity"].get("revision") == (None if where == "a local folder" else commit)


def test_a_warm_rerun_of_a_hub_model_asks_the_hub_for_its_commit_only(world, data, clip, tmp_path):
    """Online, the second run asks the Hub (a local stand-in at the HTTP boundary) one thing, the commit of
    the model's config.json, finds that commit's snapshot as the first run's load left it, and scores from
    the cache without loading the model; the numbers and identity are the first run's. Once the Hub has a
    new commit (other weights), the next run loads it."""
    import json
    import shutil

    from tests.integration.fake_hub import FakeHub
    from tests.integration.fake_hub_store import FAKE_COMMIT
    from tests.unit.model_world import tiny_clip

    served = Path(shutil.copytree(clip, tmp_path / "served"))

    code = f"""
import json, sys
from pathlib import Path
from eccv_metric.models import evaluate_model
from tests.unit.world import make_world
world = make_world(Path({str(tmp_path / "w")!r}))
out = evaluate_model("hf:me/clip", {str(data)!r}, benchmarks=["coco_5k"], resources=world.resources(),
                     workers=0, device="cpu", cache_dir={str(tmp_path / "cache")!r}, n_resamples=10)
modules = [m for m in ("torch", "transformers") if m in sys.modules]
print("RESULT " + json.dumps({{"means": out.results.means(), "loaded": out.provenance["model_loaded"],
      "identity": out.provenance["identity"], "modules": modules}}))
"""
    with FakeHub({}, models={"me/clip": served}) as hub:
        env = {**hub.client_env(tmp_path / "home"), "PYTHONPATH": str(ROOT), "ECCV_CAPTION_PROGRESS": "0"}

        def run() -> dict:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
            assert out.returncode == 0, out.stderr[-2000:]
            return json.loads(next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])

        first = run()
        hub.log.clear()
        second = run()
        asked = list(hub.log)
        tiny_clip(served, seed=1)
        hub.store.heads[("models", "me/clip")] = "f" * 40
        third = run()
    assert first["loaded"] is True and second["loaded"] is False and second["modules"] == []
    assert second["means"] == first["means"] and second["identity"] == first["identity"]
    assert [(method, path) for method, path, _ in asked] == [("HEAD", "/me/clip/resolve/main/config.json")]
    assert third["loaded"] is True and third["identity"]["revision"] == "f" * 40
    assert first["identity"]["revision"] == FAKE_COMMIT  # the commit the load was pinned to (transformers 5 sets none)
    assert third["identity"]["weights"] != first["identity"]["weights"] and third["means"] != first["means"]


def test_a_hub_that_answers_no_is_not_recalled_past(world, data, clip, tmp_path):
    """A Hub answer other than the commit (here: main's new commit has no config.json) is not taken for a Hub
    that cannot be reached: the model is loaded, and the run ends as its load does (an error naming the file),
    never with the remembered snapshot's numbers."""
    import shutil

    from tests.integration.fake_hub import FakeHub

    served = Path(shutil.copytree(clip, tmp_path / "served"))
    code = f"""
from pathlib import Path
from eccv_metric.models import evaluate_model
from tests.unit.world import make_world
world = make_world(Path({str(tmp_path / "w")!r}))
out = evaluate_model("hf:me/clip", {str(data)!r}, benchmarks=["coco_5k"], resources=world.resources(),
                     workers=0, device="cpu", cache_dir={str(tmp_path / "cache")!r}, n_resamples=10)
print("RESULT", out.provenance["model_loaded"])
"""
    with FakeHub({}, models={"me/clip": served}) as hub:
        env = {**hub.client_env(tmp_path / "home"), "PYTHONPATH": str(ROOT), "ECCV_CAPTION_PROGRESS": "0"}

        def run() -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)

        first = run()
        (served / "config.json").unlink()
        hub.store.heads[("models", "me/clip")] = "e" * 40
        second = run()
    assert first.returncode == 0 and "RESULT True" in first.stdout, first.stderr[-2000:]
    assert second.returncode != 0 and "RESULT" not in second.stdout
    assert "config.json" in second.stderr.splitlines()[-1]


@pytest.mark.parametrize("prefix", ["hf", "st", "st on a transformers repo"])
def test_a_hub_model_loaded_online_loads_and_is_recalled_offline(prefix, world, data, clip, tmp_path):
    """A load pinned to the commit the Hub names for main downloads by that commit, which leaves no local main
    ref; the ref is recorded as the libraries record it, so that offline (HF_HUB_OFFLINE=1) the model loads
    from the cache at that commit and a rerun is recalled, with the online run's numbers and identity. A
    transformers repo (no modules.json) loaded through st: is pinned by its config.json, the same way."""
    import json
    import shutil

    from tests.integration.fake_hub import FakeHub
    from tests.integration.fake_hub_store import FAKE_COMMIT
    from tests.unit.model_world import tiny_st

    served = Path(shutil.copytree(clip, tmp_path / "served")) if prefix == "hf" else tiny_st(tmp_path / "served")
    if prefix == "st on a transformers repo":
        served = tmp_path / "served_bert"  # tiny_st's BERT, saved by transformers
    bench = ["coco_5k"] if prefix == "hf" else ["coco_t2t"]
    prefix = prefix[:2]
    code = f"""
import json, sys
from pathlib import Path
from eccv_metric.models import evaluate_model
from tests.unit.world import make_world
world = make_world(Path({str(tmp_path / "w")!r}))
out = evaluate_model("{prefix}:me/model", {str(data)!r}, benchmarks={bench!r}, resources=world.resources(),
                     workers=0, device="cpu", cache_dir=sys.argv[1], n_resamples=10)
print("RESULT " + json.dumps({{"means": out.results.means(), "loaded": out.provenance["model_loaded"],
      "identity": out.provenance["identity"]}}))
"""
    with FakeHub({}, models={"me/model": served}) as hub:
        env = {**hub.client_env(tmp_path / "home"), "PYTHONPATH": str(ROOT), "ECCV_CAPTION_PROGRESS": "0"}

        def run(cache: str, **more: str) -> dict:
            out = subprocess.run([sys.executable, "-c", code, str(tmp_path / cache)], capture_output=True, text=True,
                                 timeout=300, env={**env, **more})  # fmt: skip
            assert out.returncode == 0, out.stderr[-2000:]
            return json.loads(next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:])

        online = run("a")
        offline = run("b", HF_HUB_OFFLINE="1")  # another embedding cache: the model must load
        recalled = run("b", HF_HUB_OFFLINE="1")
    assert online["identity"]["revision"] == FAKE_COMMIT and online["identity"]["weights_from"] == "files"
    assert offline["loaded"] is True and recalled["loaded"] is False
    assert offline["identity"] == online["identity"] == recalled["identity"]
    assert offline["means"] == online["means"] == recalled["means"]
