"""What the Hub tests share: a real benchmark build, real numbers with their per-query values, results files with
the provenance ``evaluate --model`` records, the fake Hub holding a model repo, and the CLI run against it.

The numbers are the demo's (``eccv-caption evaluate --demo -o --per-query``: the official five and ECCV's three,
every per-query value); a second model's are the first's per-query values scaled (so its numbers differ and are
still their means). Digests are recomputed here from their definition (sha256 of the JSON text, keys sorted, no
spaces), never with the package's function.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import yaml

from eccv_caption_dataset.hub_folder import build
from tests.integration.fake_hub import FAKE_COMMIT
from tests.integration.fake_hub import FakeHub

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"hf_me": ("me", True), "hf_other": ("other", True), "hf_read": ("me", False)}
CARD = "---\nlicense: mit\ntags:\n- clip\nlibrary_name: transformers\n---\n\n# My CLIP\n\nKept as it is.\n"
PROVENANCE = {  # what evaluate --model records (eccv_metric.models.run), for a Hub model and Hub data
    "date": "2026-08-25T10:30:00Z",
    "model": "hf:me/clip",
    "identity": {"spec": "hf:me/clip", "library": "transformers 5.0", "revision": "f" * 40, "weights": "ab" * 32},
    "data": "me/eccv-caption",
    "data_revision": FAKE_COMMIT,
    "package": "eccv-caption-hf 0.2.0",
    "device": "cpu",
    "precision": "fp32",
    "similarity": "cosine",
    "items": {"images.image": {"cache": "/home/me/.cache/huggingface/eccv_caption/x"}},
}


def sha256_of(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def cli(env: dict, *args: str, token: str | None = "hf_me") -> subprocess.CompletedProcess:
    env = dict(env) | ({"HF_TOKEN": token} if token else {})
    return subprocess.run(
        [sys.executable, "-m", "eccv_metric.cli", *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


def one_line(done: subprocess.CompletedProcess, start: str, end: str) -> None:
    """One ``error:`` line (huggingface_hub's progress bars of large-file uploads before it are no message)."""
    bars = ("%|", "it/s]", "B/s]")  # a tqdm bar's marks
    lines = [line for line in done.stderr.splitlines() if line.strip() and not any(m in line for m in bars)]
    said = "".join(f"{line}\n" for line in lines)
    assert done.returncode == 2 and "Traceback" not in said and said.count("\n") == 1, done.stderr
    assert said.startswith(f"error: {start}") and said.rstrip().endswith(end), done.stderr


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "eccv-caption"
    build(out, log=lambda _: None, repo_id="me/eccv-caption")
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[dict, dict]:
    """Real numbers and their per-query values: the demo's (results JSON in fractions, per-query JSON)."""
    home = tmp_path_factory.mktemp("demo")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(home), "HF_HUB_OFFLINE": "1"}
    args = ["evaluate", "--demo", "--benchmarks", "eccv_caption", "eccv", "-o", str(home / "r.json")]
    done = cli(env, *args, "--per-query", str(home / "pq.json"), "--quiet", token=None)
    assert done.returncode == 0, done.stderr[-2000:]
    numbers = {k: v for k, v in json.loads((home / "r.json").read_text()).items() if k != "provenance"}
    return numbers, json.loads((home / "pq.json").read_text())


def scaled(run: tuple[dict, dict], factor: float) -> tuple[dict, dict]:
    """Another model's run: every per-query value times ``factor``, the numbers their means (as evaluate makes them)."""
    numbers, per_query = run
    new_pq = {
        m: {d: {**e, "values": [v * factor for v in e["values"]]} for d, e in by.items()} for m, by in per_query.items()
    }
    new = {m: {d: float(np.mean(new_pq[m][d]["values"])) for d in by} for m, by in numbers.items()}
    return new, new_pq


def sealed(results: dict, per_query: dict | None = None) -> dict:
    """A results file's payload with the digests evaluate records: of its numbers, its per-query values and every
    other field of its provenance (the seal)."""
    numbers = {k: v for k, v in results.items() if k != "provenance"}
    provenance = {k: v for k, v in results["provenance"].items() if k != "digests"}
    digests = {"results": sha256_of(numbers), "provenance": sha256_of(provenance)}
    if per_query is not None:
        digests["per_query"] = sha256_of(per_query)
    return {**numbers, "provenance": {**provenance, "digests": digests}}


def write_run(folder: Path, run: tuple[dict, dict], name: str = "res", **provenance: object) -> tuple[Path, Path]:
    """A results file (numbers, provenance with digests) and its per-query file, as one run of evaluate writes them."""
    numbers, per_query = run
    folder.mkdir(parents=True, exist_ok=True)
    results, pq = folder / f"{name}.json", folder / f"{name}_pq.json"
    results.write_text(json.dumps(sealed({**numbers, "provenance": {**PROVENANCE, **provenance}}, per_query)))
    pq.write_text(json.dumps(per_query))
    return results, pq


@pytest.fixture()
def hub(tmp_path, bench, monkeypatch):
    """The fake Hub: model me/clip (a card, a config), the benchmark me/eccv-caption (allow-listed) and its fork
    other/eccv-caption, and me/plain, a dataset without eval.yaml. huggingface_hub's clients in this process send
    large files through the LFS batch API, as those of ``client_env`` do (no Xet: see FakeHub.client_env)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    model = tmp_path / "repos" / "clip"
    model.mkdir(parents=True)
    (model / "README.md").write_text(CARD)
    (model / "config.json").write_text("{}")
    plain = tmp_path / "repos" / "plain"
    plain.mkdir()
    (plain / "README.md").write_text("# data\n")
    datasets = {"me/eccv-caption": bench, "other/eccv-caption": bench, "me/plain": plain}
    allow = {"me/eccv-caption", "other/eccv-caption"}
    with FakeHub({}, models={"me/clip": model}, datasets=datasets, tokens=TOKENS, allow_listed=allow) as fake:
        fake.env = fake.client_env(tmp_path / "home")
        fake.model = model
        yield fake


@pytest.fixture()
def here(hub, monkeypatch, tmp_path):
    """The fake Hub for huggingface_hub in this process (what ``client_env`` does for a subprocess, without the cost
    of one): its endpoint, a cache of its own, the token of ``me`` (``HF_TOKEN``)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", hub.url)  # as HF_ENDPOINT sets both when huggingface_hub is imported
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.url + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("HF_TOKEN", "hf_me")
    monkeypatch.setenv("ECCV_CAPTION_PROGRESS", "0")
    return hub


def add_model(hub: FakeHub, repo: str, card: str = CARD) -> Path:
    folder = hub.model.parent / repo.replace("/", "__")
    folder.mkdir()
    (folder / "README.md").write_text(card)
    hub.store.repos[("models", repo)] = folder
    return folder


def printed_files(stdout: str) -> dict[str, str]:
    """The files a dry run prints, ``--- <path>`` then the file."""
    out, name = {}, None
    for line in stdout.splitlines():
        if line.startswith("--- "):
            name = line[4:]
            out[name] = ""
        elif line.startswith(("would ", "note: ", "not published")):
            name = None
        elif name is not None:
            out[name] += line + "\n"
    return out


def fetch(url: str) -> bytes:
    """A URL's bytes, straight from the fake Hub's HTTP (no proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=30) as answer:
        return answer.read()


def resolve(hub: FakeHub, source_url: str, path: str) -> bytes:
    """A file of the details commit a ``source.url`` (``<endpoint>/datasets/<repo>/tree/<sha>``) points at."""
    assert source_url.startswith(f"{hub.url}/datasets/") and "/tree/" in source_url, source_url
    base, sha = source_url.split("/tree/")
    assert len(sha) == 40
    return fetch(f"{base}/resolve/{sha}/{path}")


def parquet_rows(data: bytes) -> tuple[list[int], list[float]]:
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    assert table.column_names == ["query_id", "value"]
    assert str(table.schema.field("query_id").type) == "int64" and str(table.schema.field("value").type) == "double"
    return table.column("query_id").to_pylist(), table.column("value").to_pylist()


def entries(files: dict[str, bytes]) -> dict[str, dict]:
    """``{task id: entry}`` of every ``.eval_results`` file."""
    out = {}
    for path, data in files.items():
        if path.startswith(".eval_results/"):
            for item in yaml.safe_load(data):
                out[f"{item['dataset']['id']}:{item['dataset']['task_id']}"] = item
    return out
