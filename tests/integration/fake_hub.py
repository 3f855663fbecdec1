"""A tiny offline stand-in for the Hugging Face Hub, enough for ``evaluate.load("<user>/<space>")``.

What evaluate 0.4.6 asks of the Hub (evaluate/loading.py HubEvaluationModuleFactory,
evaluate/utils/file_utils.py get_from_cache) is only:

    HEAD {HF_ENDPOINT}/spaces/<user>/<space>/resolve/<revision>/<file>   -> 200 + ETag (or 404)
    GET  {HF_ENDPOINT}/spaces/<user>/<space>/resolve/<revision>/<file>   -> the bytes

with <revision> first "v0.4.6" (evaluate's own version: a 404 there makes it retry "main").
This server answers those for staged Space folders, plus the two small JSON API routes a
huggingface_hub client would use for the same repo (/api/spaces/<id> and
/api/spaces/<id>/revision/<rev>), and logs every request it sees.

It is also a *proxy trap*: point HTTPS_PROXY/HTTP_PROXY at it (with NO_PROXY=127.0.0.1,localhost)
and any request that would have left the machine arrives here as ``CONNECT host:443`` (or an
absolute-URI GET), is logged, and is refused with 403. Nothing is ever forwarded.

Usage as a library::

    with FakeHub({"user/toy_metric": "/path/to/folder"}) as hub:
        env = hub.client_env(tmpdir)      # HF_ENDPOINT, caches in tmpdir, proxy trap, counts off
        ...run evaluate.load("user/toy_metric") in a subprocess with env...
        print(hub.log)                    # [(method, path, status), ...]

(Copied from the packaging research, /work/notes/packaging.md section 3; used by test_packaging.py.)
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import re
import threading
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote
from urllib.parse import urlsplit

FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
RESOLVE = re.compile(r"^/(?P<kind>spaces|datasets)/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
API_INFO = re.compile(r"^/api/(?P<kind>spaces|datasets)/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<rev>[^/]+))?/?$")


def git_blob_sha1(data: bytes) -> str:
    """The ETag the Hub gives a regular (non-LFS) file: its git blob id."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(
        self,
        spaces: dict[str, str | os.PathLike],
        revisions: tuple[str, ...] = ("main", FAKE_COMMIT),
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.spaces = {repo: Path(folder) for repo, folder in spaces.items()}
        self.revisions = set(revisions)
        self.log: list[tuple[str, str, int]] = []
        self.escaped: list[tuple[str, str]] = []  # requests meant for other hosts (proxy trap)
        self.user_agents: list[str] = []  # User-Agent of each request, same order as log
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # quiet; we keep our own log
                pass

            def _record(self, status: int) -> None:
                with hub._lock:
                    hub.log.append((self.command, self.path, status))
                    hub.user_agents.append(self.headers.get("User-Agent", ""))

            def _send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
                self._record(status)
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD" and body:
                    self.wfile.write(body)

            def _error(self, status: int, code: str, message: str) -> None:
                body = json.dumps({"error": message}).encode()
                self._send(
                    status, body, {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message}
                )

            def _trap(self) -> None:
                with hub._lock:
                    hub.escaped.append((self.command, self.path))
                self._send(403, b"fake_hub: outside traffic refused\n", {"Connection": "close"})
                self.close_connection = True

            def do_CONNECT(self):  # an https request that a proxy-aware client tried to send elsewhere
                self._trap()

            def do_HEAD(self):
                self._route()

            def do_GET(self):
                self._route()

            def _route(self):
                if self.path.startswith(("http://", "https://")):  # absolute URI: a proxied plain-http request
                    return self._trap()
                path = unquote(urlsplit(self.path).path)
                m = RESOLVE.match(path)
                if m:
                    return self._resolve(m["repo"], m["rev"], m["file"])
                m = API_INFO.match(path)
                if m:
                    return self._info(m["repo"], m["rev"] or "main")
                return self._error(404, "EntryNotFound", f"fake_hub: no route for {path}")

            def _repo(self, repo: str) -> Path | None:
                return hub.spaces.get(repo)

            def _resolve(self, repo: str, rev: str, name: str):
                folder = self._repo(repo)
                if folder is None:  # the Hub answers 401 for a missing (or private) repo without a token
                    return self._error(401, "RepositoryNotFound", "Repository not found")
                if rev not in hub.revisions:
                    return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                file = (folder / name).resolve()
                if folder.resolve() not in file.parents or not file.is_file():
                    return self._error(404, "EntryNotFound", f"{name} does not exist on {rev}")
                data = file.read_bytes()
                ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
                return self._send(
                    200,
                    data,
                    {
                        "Content-Type": ctype,
                        "ETag": f'"{git_blob_sha1(data)}"',
                        "X-Repo-Commit": FAKE_COMMIT,
                        "Accept-Ranges": "bytes",
                    },
                )

            def _info(self, repo: str, rev: str):
                folder = self._repo(repo)
                if folder is None:
                    return self._error(401, "RepositoryNotFound", "Repository not found")
                if rev not in hub.revisions:
                    return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
                body = json.dumps(
                    {
                        "id": repo,
                        "sha": FAKE_COMMIT,
                        "sdk": "gradio",
                        "private": False,
                        "siblings": [{"rfilename": f} for f in files],
                    }
                ).encode()
                return self._send(200, body, {"Content-Type": "application/json"})

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread:
            self._thread.join(5)

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def client_env(self, home: str | os.PathLike, base: dict | None = None) -> dict[str, str]:
        """An environment for a client process: this hub as the endpoint, every cache under ``home``,
        outside traffic trapped, no token, no download-count ping, no offline switches."""
        home = Path(home)
        env = dict(os.environ if base is None else base)
        for var in (
            "HF_TOKEN",
            "HUGGING_FACE_HUB_TOKEN",
            "HF_HUB_OFFLINE",
            "HF_DATASETS_OFFLINE",
            "HF_EVALUATE_OFFLINE",
            "TRANSFORMERS_OFFLINE",
            "HF_MODULES_CACHE",
            "HF_EVALUATE_CACHE",
            "HF_METRICS_CACHE",
            "HF_DATASETS_CACHE",
            "HF_HUB_CACHE",
            "HUGGINGFACE_HUB_CACHE",
            "HF_SCRIPTS_VERSION",
            "XDG_CACHE_HOME",
        ):
            env.pop(var, None)
        env.update(
            {
                "HF_ENDPOINT": self.url,
                "HF_HOME": str(home / "hf_home"),  # evaluate: modules/, evaluate/downloads/; hub: token, hub/
                "HF_MODULES_CACHE": str(home / "modules"),  # evaluate_modules/ + datasets_modules/ land here
                "HF_EVALUATE_CACHE": str(home / "evaluate"),  # the (etag-hashed) downloaded scripts
                "HF_DATASETS_CACHE": str(home / "datasets"),
                "HF_UPDATE_DOWNLOAD_COUNTS": "0",  # else a HEAD to s3.amazonaws.com on every load
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
                "HTTP_PROXY": self.url,
                "HTTPS_PROXY": self.url,
                "http_proxy": self.url,
                "https_proxy": self.url,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        return env
