"""`eccv-caption push` with the real huggingface_hub client against a local fake of the Hub's HTTP API."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

import eccv_metric
from eccv_caption_dataset.hub_folder import build
from eccv_metric import EVALUATE_MODULE_DIR


class FakeHub(BaseHTTPRequestHandler):
    """Answers the endpoints create_repo / create_branch / upload_folder call; records what they send."""

    calls: list = []
    files: dict = {}
    deleted: list = []

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, payload, status=200):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        """The tree listing upload_folder(delete_patterns=...) asks for: the repo's current files."""
        path = self.path.split("?")[0]
        FakeHub.calls.append(("GET", path, self.headers.get("Authorization")))
        if "/tree/" in path:
            repo = path.split("/tree/")[0].removeprefix("/api/")
            files = FakeHub.files.get(repo, {})
            return self._reply(
                [{"type": "file", "path": name, "size": len(data), "oid": "0" * 40} for name, data in files.items()]
            )
        return self._reply({"error": f"unexpected {path}"}, 404)

    def do_POST(self):  # noqa: N802
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        FakeHub.calls.append(("POST", path, self.headers.get("Authorization")))
        if path == "/api/repos/create":
            req = json.loads(data)
            FakeHub.calls.append(("CREATE", req))
            kind = {"dataset": "datasets/", "space": "spaces/"}.get(req.get("type"), "")
            return self._reply({"url": f"http://{self.headers['Host']}/{kind}{req.get('organization')}/{req['name']}"})
        if path == "/api/validate-yaml":
            return self._reply({})
        if "/preupload/" in path:
            files = json.loads(data)["files"]
            return self._reply(
                {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}
            )
        if "/commit/" in path:
            repo = path.split("/commit/")[0].removeprefix("/api/")
            for line in data.splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    FakeHub.files.setdefault(repo, {})[item["value"]["path"]] = base64.b64decode(
                        item["value"]["content"]
                    )
                if item["key"] == "deletedFile":
                    FakeHub.deleted.append((repo, item["value"]["path"]))
                    FakeHub.files.get(repo, {}).pop(item["value"]["path"], None)
            host = self.headers["Host"]
            return self._reply({"commitUrl": f"http://{host}/{repo}/commit/{'a' * 40}", "commitOid": "a" * 40})
        if "/branch/" in path:
            return self._reply({})
        return self._reply({"error": f"unexpected {path}"}, 404)


@pytest.fixture()
def hub():
    FakeHub.calls, FakeHub.files, FakeHub.deleted = [], {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run_cli(args, endpoint, tmp_path):
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_fake_token", "HF_HOME": str(tmp_path / "hf")}
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run(
        [sys.executable, "-m", "eccv_metric.cli", "push", *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("push") / "ds"
    build(out, log=lambda _: None)
    return out


def test_push_sends_byte_identical_files(hub, dataset_dir, tmp_path):
    stale = {  # an earlier push: files the folders no longer have go, .gitattributes stays
        "datasets/me/eccv-caption": {
            ".gitattributes": b"*.parquet filter=lfs",
            "data/coco-i2t-qrels/x.parquet": b"old",
        },
        "spaces/me/eccv_map_at_r": {".gitattributes": b"*", "eccv_metric/cli.py": b"old", "hf_evaluate.py": b"old"},
    }
    FakeHub.files = {repo: dict(files) for repo, files in stale.items()}
    done = run_cli(
        [
            "--dataset-dir",
            str(dataset_dir),
            "--dataset-repo",
            "me/eccv-caption",
            "--space-repo",
            "me/eccv_map_at_r",
            "--private",
        ],
        hub,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sent = dict(FakeHub.files["datasets/me/eccv-caption"])
    assert sent.pop(".gitattributes") == stale["datasets/me/eccv-caption"][".gitattributes"]
    local = {p.relative_to(dataset_dir).as_posix(): p.read_bytes() for p in dataset_dir.rglob("*") if p.is_file()}
    assert sent == local and "data/positives/test-00000-of-00001.parquet" in sent
    assert sorted(FakeHub.deleted) == [
        ("datasets/me/eccv-caption", "data/coco-i2t-qrels/x.parquet"),
        ("spaces/me/eccv_map_at_r", "eccv_metric/cli.py"),
        ("spaces/me/eccv_map_at_r", "hf_evaluate.py"),
    ]
    card = sent["README.md"].decode()  # the usage snippets now load the repo it was pushed to
    assert 'load_dataset("me/eccv-caption", "positives"' in card and 'from_dataset("me/eccv-caption")' in card
    assert 'load_dataset("ds"' not in card
    space = FakeHub.files["spaces/me/eccv_map_at_r"]
    for name in ("eccv_map_at_r.py", "README.md", "app.py", "requirements.txt"):
        assert space[name] == (EVALUATE_MODULE_DIR / name).read_bytes()
    package = Path(eccv_metric.__file__).parent
    assert space["eccv_metric/api/metrics.py"] == (package / "api" / "metrics.py").read_bytes()
    table4 = "data/eccv_caption_paper_table4.csv"
    assert space[f"eccv_metric/{table4}"] == (package / table4).read_bytes()
    assert not any(name.endswith((".whl", ".pyc")) for name in space)
    creates = [c[1] for c in FakeHub.calls if c[0] == "CREATE"]
    assert {(c["type"], c.get("sdk"), c.get("visibility")) for c in creates} == {
        ("dataset", None, "private"),
        ("space", "gradio", "private"),
    }
    sent_token = [c for c in FakeHub.calls if c[0] == "POST" or (c[0] == "GET" and "/tree/" in c[1])]
    assert all(c[2] == "Bearer hf_fake_token" for c in sent_token)
    assert ".gitattributes" in space and not {"eccv_metric/cli.py", "hf_evaluate.py"} & set(space)


def test_dry_run_lists_and_sends_nothing(hub, dataset_dir, tmp_path):
    done = run_cli(["--dataset-dir", str(dataset_dir), "--dataset-repo", "me/x", "--dry-run"], hub, tmp_path)
    assert done.returncode == 0, done.stderr
    assert FakeHub.calls == []
    listed = [line.strip().split(" (")[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    assert sorted(listed) == sorted(
        p.relative_to(dataset_dir).as_posix() for p in dataset_dir.rglob("*") if p.is_file()
    )


def test_revision_creates_the_branch_and_commits_there(hub, dataset_dir, tmp_path):
    done = run_cli(["--dataset-dir", str(dataset_dir), "--dataset-repo", "me/x", "--revision", "v1"], hub, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    paths = [c[1] for c in FakeHub.calls if c[0] == "POST"]
    assert "/api/datasets/me/x/branch/v1" in paths and "/api/datasets/me/x/commit/v1" in paths


def test_push_refuses_a_folder_that_is_not_a_build(tmp_path, hub):
    done = run_cli(["--dataset-dir", str(tmp_path), "--dataset-repo", "me/x"], hub, tmp_path)
    assert done.returncode == 2 and "not a built dataset folder" in done.stderr
    assert Path(tmp_path).exists()


def test_the_space_script_is_named_after_the_space(hub, dataset_dir, tmp_path):
    """evaluate.load("<user>/<space>") fetches <space>.py: the script is pushed under the Space's name."""
    done = run_cli(["--space-repo", "me/retrieval-metrics"], hub, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    space = FakeHub.files["spaces/me/retrieval-metrics"]
    assert space["retrieval-metrics.py"] == (EVALUATE_MODULE_DIR / "eccv_map_at_r.py").read_bytes()
    assert "eccv_map_at_r.py" not in space
    calls = len(FakeHub.calls)
    card = (dataset_dir / "README.md").read_text()
    args = ["--dataset-dir", str(dataset_dir), "--dataset-repo", "me/y", "--space-repo", "me/eccv.map"]
    done = run_cli(args, hub, tmp_path)
    assert done.returncode == 2 and "no '.'" in done.stderr and len(FakeHub.calls) == calls  # refused first
    assert (dataset_dir / "README.md").read_text() == card


def test_staged_space_runs_from_its_own_files(tmp_path):
    """As the Hub builds it: requirements.txt (PyPI names only) first, then the app with the package beside it."""
    from eccv_caption_dataset.push import stage_space

    space = stage_space(tmp_path / "space")
    requirements = (space / "requirements.txt").read_text().split()
    assert all("/" not in r and not r.endswith(".whl") for r in requirements)
    code = (
        "import eccv_metric, app; "
        f"assert eccv_metric.__file__.startswith({str(space)!r}), eccv_metric.__file__; "
        "answer = app.space.score(None, app.EXAMPLE, [], ['eccv_r1'], '1', True); print(answer.message)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=space, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith("scored 2 i2t and 2 t2i ranked lists (partial")


def test_a_real_build_is_a_build_and_a_changed_one_is_not(hub, dataset_dir, tmp_path):
    from eccv_caption_dataset.push import check_build

    files = check_build(dataset_dir)
    assert files == sorted(p.relative_to(dataset_dir).as_posix() for p in dataset_dir.rglob("*") if p.is_file())
    done = run_cli(["--dataset-dir", str(dataset_dir.parent), "--dataset-repo", "me/x", "--dry-run"], hub, tmp_path)
    assert done.returncode == 2 and "is not a built dataset folder" in done.stderr and FakeHub.calls == []
    assert "would upload" not in done.stdout
    done = run_cli(["--dataset-dir", str(dataset_dir), "--dataset-repo", "eccv", "--dry-run"], hub, tmp_path)
    assert done.returncode == 2 and "--dataset-repo 'eccv' is not a Hub repo id" in done.stderr


def test_push_without_network_is_one_line_naming_what_failed(dataset_dir, tmp_path):
    import socket

    with socket.socket() as sock:  # a port nothing listens on: connections are refused at once
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = (dataset_dir / "README.md").read_bytes()
    done = run_cli(["--dataset-dir", str(dataset_dir), "--dataset-repo", "me/x"], closed, tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert (dataset_dir / "README.md").read_bytes() == card  # nothing local changes before an upload succeeds
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: push to dataset me/x failed: could not reach the Hub at {closed} (")
    assert done.stderr.rstrip().endswith(
        "check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE), then push again"
    )
