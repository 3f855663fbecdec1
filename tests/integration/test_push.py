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

    def log_message(self, *args):  # keep test output quiet
        pass

    def _reply(self, payload, status=200):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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
            host = self.headers["Host"]
            return self._reply({"commitUrl": f"http://{host}/{repo}/commit/{'a' * 40}", "commitOid": "a" * 40})
        if "/branch/" in path:
            return self._reply({})
        return self._reply({"error": f"unexpected {path}"}, 404)


@pytest.fixture()
def hub():
    FakeHub.calls, FakeHub.files = [], {}
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
    sent = FakeHub.files["datasets/me/eccv-caption"]
    local = {p.relative_to(dataset_dir).as_posix(): p.read_bytes() for p in dataset_dir.rglob("*") if p.is_file()}
    assert sent == local and "data/positives/test-00000-of-00001.parquet" in sent
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
    assert all(c[2] == "Bearer hf_fake_token" for c in FakeHub.calls if c[0] == "POST")


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
