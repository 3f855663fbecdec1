"""Two tiny models' runs published with their evidence on the fake Hub, shared by the tests that read a published
run back (``verify --from-hub``: tests/integration/test_verify_hub.py; ``explore --from-hub`` and the Space's
published-model boxes: tests/integration/test_explore_hub.py).

:func:`make_runs` (once per test run: the ``published_runs`` fixture of tests/integration/conftest.py, shared by the
xdist workers): the synthetic world's benchmark folder (its CxC ratings included), a dual encoder
(tests/unit/model_world.py's CLIP) and a pair scorer (tests/unit/pair_world.py's BLIP reranking its own ITC), each
run with ``evaluate --model ... -o --per-query --evidence`` on ``eccv_caption`` and ``eccv``. :func:`pushed_hub`:
the fake Hub holding the benchmark ``me/world`` and the model repos ``me/clip``, ``me/blip``, each run pushed
(``--direct``) with its evidence, this process's huggingface_hub pointed at it. The rest: a forger's tools (a
details commit rewritten, an evidence file replaced and its manifest made to match, a ``results.json`` sealed
again, me/clip's details made another model's, a model repo pointing at them) and the leaderboard's rows as
printed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from eccv_metric.cli.main import main
from eccv_metric.core.provenance import json_digest
from tests.integration.fake_hub import FakeHub
from tests.integration.hub_client import point_at

TOKENS = {"hf_me": ("me", True)}
MODELS = ("clip", "blip")


def make_runs(root: Path) -> None:
    """The world's benchmark folder, the two models and each model's run under ``root`` (``runs.json`` lists them)."""
    from tests.unit.bench_world import write_benchmark
    from tests.unit.model_world import tiny_clip
    from tests.unit.pair_world import tiny_blip
    from tests.unit.world import make_world

    world = make_world(root / "world")
    data = write_benchmark(world, root / "data")
    write_ratings(world, data)
    models = {"clip": tiny_clip(root / "clip"), "blip": tiny_blip(root / "blip")}
    out: dict = {"data": str(data), "models": {name: str(folder) for name, folder in models.items()}}
    for name, folder in models.items():
        run = root / f"run_{name}"
        args = ["evaluate", "--model", f"hf:{folder}", "--data", str(data), "--benchmarks", "eccv_caption", "eccv",
                "--workers", "0", "--cache-dir", str(root / "cache"), "-q", "--n-resamples", "20"]  # fmt: skip
        args += ["--rerank-k", "8"] if name == "blip" else []
        files = [str(run / n) for n in ("r.json", "pq.json", "ev")]
        assert main([*args, "-o", files[0], "--per-query", files[1], "--evidence", files[2]]) == 0
        out[name] = files
    (root / "runs.json").write_text(json.dumps(out))


def write_ratings(world: object, data: Path) -> None:
    """The world's CxC ratings as the build's ``cxc_ratings`` config (a real build holds them: the ratings shown
    beside the marks are then the benchmark's, at its revision, never downloaded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from eccv_caption_dataset.tables import cxc_ratings

    rows = list(cxc_ratings(world.cxc_dir, world.gt))  # type: ignore[attr-defined]
    types = {"id_1": pa.int64(), "id_2": pa.int64(), "score": pa.float32()}
    table = pa.table({k: pa.array([r[k] for r in rows], types.get(k, pa.string())) for k in rows[0]})
    (data / "data" / "cxc_ratings").mkdir(parents=True)
    pq.write_table(table, data / "data" / "cxc_ratings" / "test-0.parquet")


def read_runs(root: Path) -> dict:
    """What :func:`make_runs` made: ``data`` (the benchmark folder), ``models`` (name -> folder), and per model its
    results, per-query and evidence paths."""
    return json.loads((root / "runs.json").read_text())


@contextlib.contextmanager
def pushed_hub(runs: dict, tmp_path: Path, monkeypatch: object) -> Iterator[FakeHub]:
    """The fake Hub holding me/world and me/clip, me/blip with each run pushed (see the module docstring)."""
    repos = {}
    for name in MODELS:
        repos[f"me/{name}"] = tmp_path / "repos" / name
        repos[f"me/{name}"].mkdir(parents=True)
        (repos[f"me/{name}"] / "README.md").write_text(f"# {name}\n")
    datasets = {"me/world": runs["data"]}
    with FakeHub({}, models=repos, datasets=datasets, tokens=TOKENS, allow_listed={"me/world"}) as fake:
        point_at(fake, tmp_path / "home", monkeypatch)
        fake.home = tmp_path / "home"
        for name in MODELS:
            res, pq, _ = runs[name]
            push = ["push-results", res, "--per-query", pq, "--dataset-repo", "me/world", "--direct", "-q"]
            assert main([*push, "--model-repo", f"me/{name}"]) == 0
        yield fake


def tree_of(hub: FakeHub, repo: str) -> dict[str, bytes]:
    """The files of a repo's last commit (the fake Hub's record of it)."""
    return [c for c in hub.store.commits if c["repo"] == repo][-1]["tree"]


def republish(hub: FakeHub, details: dict[str, bytes], entries: dict[str, bytes]) -> None:
    """A forger's commits: ``details`` to the details repo, then the model's files ``entries`` (their source.url
    naming that commit) as the model repo's new head."""
    shas = {}
    for repo, files in (("me/details_me__clip", details), ("me/clip", entries)):
        first = [c for c in hub.store.commits if c["repo"] == repo][0]
        if repo == "me/clip":
            files = {p: d.replace(shas["me/details_me__clip"][0].encode(), shas["me/details_me__clip"][1].encode())
                     for p, d in files.items()}  # fmt: skip
        sha = hashlib.sha1(repr((repo, len(hub.store.commits), sorted(files.items()))).encode()).hexdigest()
        hub.store.commits.append({**first, "sha": sha, "tree": dict(files)})
        shas[repo] = (first["sha"], sha)
    folder = hub.store.repos[("models", "me/clip")]  # main: the model repo's folder and head, as a commit leaves them
    for path in [p for p in folder.rglob("*") if p.is_file()]:
        path.unlink()
    for path, data in entries.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data.replace(shas["me/details_me__clip"][0].encode(),
                                                 shas["me/details_me__clip"][1].encode()))  # fmt: skip
    hub.store.heads[("models", "me/clip")] = shas["me/clip"][1]


def npy(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data))


def npy_bytes(values: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, values)
    return out.getvalue()


def forge_manifest(tree: dict[str, bytes], path: str) -> None:
    """The manifest's record of ``path`` (and the details' digest of the manifest) made to match its new bytes, as a
    forger would."""
    manifest = json.loads(tree["evidence/evidence.json"])
    values = npy(tree[path])
    record = manifest["files"][path.removeprefix("evidence/")]
    record.update(dtype=str(values.dtype), shape=list(values.shape), sha256=hashlib.sha256(tree[path]).hexdigest(),
                  bytes=len(tree[path]))  # fmt: skip
    tree["evidence/evidence.json"] = json.dumps(manifest).encode()
    summary = json.loads(tree["results.json"])
    summary["provenance"]["digests"]["evidence"] = json_digest(manifest)
    tree["results.json"] = json.dumps(resealed(summary)).encode()


def resealed(summary: dict) -> dict:
    """A details ``results.json`` sealed again after an edit, as a forger would (push-results' seal is a digest of
    the other fields' canonical JSON, which anyone can compute)."""
    fields = {k: v for k, v in summary.items() if k != "seal"}
    return {**fields, "seal": json_digest(fields)}


def as_another(details: dict[str, bytes], repo: str, added: dict | None = None, model: bool = True) -> dict:
    """me/clip's details as a forger makes them another model's: ``results.json`` naming ``repo`` (its provenance's
    model ``hf:<repo>``, with ``model``), the evidence's manifest with the keys ``added`` (and naming that model too,
    with ``model``), every digest and seal computed again."""
    tree = dict(details)
    summary = json.loads(tree["results.json"])
    summary["model_repo"] = repo
    if model:
        summary["provenance"] = {**summary["provenance"], "model": f"hf:{repo}"}
    if added is not None:
        manifest = json.loads(tree["evidence/evidence.json"]) | added
        if model:
            manifest["run"] = {**manifest["run"], "model": f"hf:{repo}"}
        tree["evidence/evidence.json"] = json.dumps(manifest).encode()
        summary["provenance"]["digests"] = {**summary["provenance"]["digests"], "evidence": json_digest(manifest)}
    tree["results.json"] = json.dumps(resealed(summary)).encode()
    return tree


def forger(hub: FakeHub, repo: str, entries: dict[str, bytes], details: dict[str, bytes] | None = None) -> None:
    """A model repo ``repo`` holding ``entries`` at main (as files left there), and with ``details`` a details repo
    ``<repo>_details`` holding them at a commit ``entries`` name in place of me/clip's details commit."""
    if details is not None:
        folder = hub.home.parent / "forged" / f"{repo}_details"
        for path, data in details.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
        sha = hashlib.sha1(repr(sorted(details.items())).encode()).hexdigest()
        hub.store.repos[("datasets", f"{repo}_details")] = folder
        hub.store.heads[("datasets", f"{repo}_details")] = sha
        clip = [c for c in hub.store.commits if c["repo"] == "me/details_me__clip"][-1]["sha"]
        entries = {p: d.replace(f"me/details_me__clip/tree/{clip}".encode(), f"{repo}_details/tree/{sha}".encode())
                   for p, d in entries.items()}  # fmt: skip
    folder = hub.home.parent / "forged" / repo
    for path, data in entries.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    hub.store.repos[("models", repo)] = folder


def board_rows(printed: str) -> dict[str, str]:
    """The leaderboard's Hub rows: model -> its trust mark (the text after the numbers)."""
    return {line[:44].strip(): " ".join(t for t in line[44:].split() if not t[0].isdigit() and t != "-")
            for line in printed.splitlines() if line.startswith(("me/", "spam/")) and "  " in line}  # fmt: skip
