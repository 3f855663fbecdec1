"""A tiny offline stand-in for the Hugging Face Hub: ``evaluate.load``, huggingface_hub's reads, commits and
pull requests, and the benchmark leaderboard, at the HTTP boundary (nothing below it is faked).

What evaluate 0.4.6 asks of the Hub (evaluate/loading.py HubEvaluationModuleFactory,
evaluate/utils/file_utils.py get_from_cache) is only:

    HEAD {HF_ENDPOINT}/spaces/<user>/<space>/resolve/<revision>/<file>   -> 200 + ETag (or 404)
    GET  {HF_ENDPOINT}/spaces/<user>/<space>/resolve/<revision>/<file>   -> the bytes

with <revision> first "v0.4.6" (evaluate's own version: a 404 there makes it retry "main").
This server answers those for staged Space folders (and dataset / model repos: ``/datasets/<id>/resolve/...``,
``/<id>/resolve/...``; a ``Range: bytes=a-b`` asked is answered 206 with those bytes, as the Hub does: HfFileSystem
reads a large Parquet file's footer so), the JSON API routes a huggingface_hub client uses for the same repos
(``/api/<kind>/<id>`` and ``/api/<kind>/<id>/revision/<rev>``, ``<rev>`` also ``refs/pr/<n>`` or a past commit;
``blobs=true``: sizes, blob ids and the LFS sha256 of Parquet files; ``expand=evalResults``: a model's eval results as
the Hub parses them, an invalid file reported there), folder listings (``/api/<kind>/<id>/tree/<rev>
[/<path>]``: what ``HfFileSystem``, so ``load_dataset``, reads), ``/api/whoami-v2``, ``POST
/api/repos/create``, the write routes of ``HfApi.create_commit`` (``POST /api/validate-yaml``,
``/api/<kind>/<id>/preupload/<rev>`` (with each file's current ``oid``, so an unchanged file is no change),
``/api/<kind>/<id>/commit/<rev>`` with ``create_pr=1`` for a pull request; a large file through the LFS batch API
as huggingface_hub sends it: ``POST /[<kind>/]<id>.git/info/lfs/objects/batch``, ``PUT`` of its bytes, ``verify``),
the pull requests of a repo
(``GET /api/<kind>/<id>/discussions``) and the leaderboards of a benchmark dataset (``GET
/api/datasets/<id>/leaderboard``), and logs every request it sees. ``hub.failing``: parts of paths answered with a
status (some of the Hub's reads failing mid-run: huggingface_hub retries a 5xx for seconds, a 403 at once). The rules
of the write side (tokens, owners, pull requests, what a commit may hold) are in
:mod:`tests.integration.fake_hub_store` and :mod:`tests.integration.fake_hub_rules`, the leaderboards' in
:mod:`tests.integration.fake_hub_board`.

It is also a *proxy trap*: point HTTPS_PROXY/HTTP_PROXY at it (with NO_PROXY=127.0.0.1,localhost)
and any request that would have left the machine arrives here as ``CONNECT host:443`` (or an
absolute-URI GET), is logged, and is refused with 403. Nothing is ever forwarded.

Usage as a library::

    with FakeHub({"user/toy_metric": "/path/to/folder"}) as hub:
        env = hub.client_env(tmpdir)      # HF_ENDPOINT, caches in tmpdir, proxy trap, counts off
        ...run evaluate.load("user/toy_metric") in a subprocess with env...
        print(hub.log)                    # [(method, path, status), ...]

    with FakeHub({}, models={"me/clip": folder}, datasets={"me/eccv": build}, tokens={"hf_me": ("me", True)},
                 allow_listed={"me/eccv"}):
        ...                               # hub.store.commits: what each commit sent

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
from urllib.parse import parse_qs
from urllib.parse import unquote
from urllib.parse import urlsplit

from tests.integration.fake_hub_board import eval_results
from tests.integration.fake_hub_board import leaderboard
from tests.integration.fake_hub_rules import stored_with_lfs
from tests.integration.fake_hub_rules import validate_card
from tests.integration.fake_hub_store import FAKE_COMMIT
from tests.integration.fake_hub_store import HubError
from tests.integration.fake_hub_store import Store

KINDS = ("models", "datasets", "spaces")
# /api/<kind>/<owner>/<name>[/<action>[/<rev>]]: the API routes (the revision is one %-quoted segment)
API = re.compile(
    r"^/api/(?P<kind>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+?)(?:/(?P<action>[a-z]+)(?:/(?P<rev>[^/]+))?)?/?$"
)
# /api/<kind>/<owner>/<name>/tree/<rev>[/<path>]: a folder's listing (what HfFileSystem, so load_dataset, reads)
TREE = re.compile(
    r"^/api/(?P<kind>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?$"
)
# [/<kind>]/<owner>/<name>/resolve/<rev>/<file>: a file (models have no kind in the path)
RESOLVE = re.compile(r"^(?:/(?P<kind>spaces|datasets))?/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
# [/<kind>]/<owner>/<name>.git/info/lfs/objects/batch: the LFS batch API (huggingface_hub.lfs.post_lfs_batch_info)
LFS_BATCH = re.compile(r"^(?:/(?P<kind>spaces|datasets))?/(?P<repo>[^/]+/[^/]+)\.git/info/lfs/objects/batch$")
# where the batch answer sends an object's bytes (PUT) and its verify call (POST): the fake's storage
LFS_OBJECT = re.compile(r"^/fake-lfs/(?P<oid>[0-9a-f]{64})(?P<verify>/verify)?$")


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
        *,
        models: dict[str, str | os.PathLike] | None = None,
        datasets: dict[str, str | os.PathLike] | None = None,
        tokens: dict[str, tuple[str, bool]] | None = None,
        allow_listed: set[str] | frozenset[str] = frozenset(),
        refuse: dict[str, str] | None = None,
    ):
        """``spaces`` (also served as datasets, as before), ``models``, ``datasets``: repo id -> folder;
        ``tokens``: token -> (user, may write); None: no token is checked (read-only use); ``allow_listed``: the
        benchmark datasets on the Hub's allow-list; ``refuse``: path -> the Hub's message for a commit holding it."""
        self.spaces = {repo: Path(folder) for repo, folder in spaces.items()}
        repos = {(kind, repo): folder for repo, folder in self.spaces.items() for kind in ("spaces", "datasets")}
        repos |= {("models", repo): Path(folder) for repo, folder in (models or {}).items()}
        repos |= {("datasets", repo): Path(folder) for repo, folder in (datasets or {}).items()}
        self.store = Store(repos, set(revisions), tokens, set(allow_listed), dict(refuse or {}))
        self.revisions = self.store.revisions
        self.log: list[tuple[str, str, int]] = []
        self.escaped: list[tuple[str, str]] = []  # requests meant for other hosts (proxy trap)
        self.user_agents: list[str] = []  # User-Agent of each request, same order as log
        self.failing: dict[str, int] = {}  # a request whose path holds a key is answered its status (the Hub failing)
        self._lock = threading.RLock()
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

            def _json(self, payload: object, status: int = 200) -> None:
                self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json"})

            def _error(self, status: int, code: str, message: str) -> None:
                body = json.dumps({"error": message}).encode()
                headers = {"Content-Type": "application/json", "X-Error-Message": message}
                if code:
                    headers["X-Error-Code"] = code
                self._send(status, body, headers)

            def _trap(self) -> None:
                with hub._lock:
                    hub.escaped.append((self.command, self.path))
                self._send(403, b"fake_hub: outside traffic refused\n", {"Connection": "close"})
                self.close_connection = True

            def _token(self) -> str | None:
                auth = self.headers.get("Authorization", "")
                return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None

            def do_CONNECT(self):  # an https request that a proxy-aware client tried to send elsewhere
                self._trap()

            def do_HEAD(self):
                self._route()

            def do_GET(self):
                self._route()

            def do_POST(self):
                self._route()

            def do_DELETE(self):  # HfApi.delete_repo
                self._route()

            def do_PUT(self):  # an LFS object's upload (the href the batch API gave)
                self._route()

            def _body(self) -> bytes:
                """The request's body: Content-Length bytes, or a chunked body (a file streamed by the client)."""
                if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                out = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    chunk = self.rfile.read(size + 2)[:size]
                    if size == 0:
                        return out
                    out += chunk

            def _route(self):
                if self.path.startswith(("http://", "https://")):  # absolute URI: a proxied plain-http request
                    return self._trap()
                sends = self.command in ("POST", "DELETE", "PUT")
                body = self._body() if sends else b""
                failed = next((status for part, status in hub.failing.items() if part in unquote(self.path)), None)
                if failed is not None:
                    return self._error(failed, "", f"fake_hub: failing with {failed}")
                parts = urlsplit(self.path)
                try:
                    with hub._lock:
                        return self._answer(parts.path, parse_qs(parts.query), body)
                except HubError as exc:
                    return self._error(exc.status, exc.code, exc.message)

            def _answer(self, raw: str, query: dict, body: bytes):
                token = self._token()
                hub.store.user(token)  # an unknown token is refused on every route
                if self.command == "POST" and raw == "/api/validate-yaml":
                    errors = validate_card(json.loads(body)["content"])
                    return self._json({"errors": [{"message": e} for e in errors]}, 400 if errors else 200)
                if self.command == "GET" and raw == "/api/whoami-v2":
                    return self._json(hub.store.whoami(token))
                if self.command == "POST" and raw == "/api/repos/create":
                    req = json.loads(body)
                    kind = {"dataset": "datasets", "space": "spaces"}.get(req.get("type"), "models")
                    repo = f"{req.get('organization')}/{req['name']}"
                    hub.store.create(kind, repo, token)
                    return self._json({"url": f"{hub.url}/{'' if kind == 'models' else kind + '/'}{repo}"})
                if self.command == "DELETE" and raw == "/api/repos/delete":
                    req = json.loads(body)
                    kind = {"dataset": "datasets", "space": "spaces"}.get(req.get("type"), "models")
                    hub.store.delete(kind, f"{req.get('organization')}/{req['name']}", token)
                    return self._json({})
                m = LFS_BATCH.match(raw)
                if m and self.command == "POST":
                    kind, objects = m["kind"] or "models", json.loads(body)["objects"]
                    found = hub.store.lfs_batch(kind, unquote(m["repo"]), objects, token, f"{hub.url}/fake-lfs")
                    answer = json.dumps({"transfer": "basic", "objects": found}).encode()
                    return self._send(200, answer, {"Content-Type": "application/vnd.git-lfs+json"})
                m = LFS_OBJECT.match(raw)
                if m and self.command == "PUT" and not m["verify"]:
                    hub.store.lfs_put(m["oid"], body)
                    return self._send(200)
                if m and self.command == "POST" and m["verify"]:
                    if m["oid"] not in hub.store.lfs:
                        return self._error(404, "", f"LFS object {m['oid']} was not uploaded")
                    return self._json({})
                m = TREE.match(raw)
                if m and self.command == "GET":
                    path = unquote(m["path"] or "").strip("/")
                    deep = query.get("recursive", ["false"])[0].lower() == "true"
                    return self._tree(m["kind"], unquote(m["repo"]), unquote(m["rev"]), path, deep)
                m = API.match(raw)
                if m:
                    return self._api(m["kind"], unquote(m["repo"]), m["action"], unquote(m["rev"] or ""), query, body)
                m = RESOLVE.match(raw)
                if m and self.command in ("GET", "HEAD"):
                    name = "/".join(unquote(part) for part in m["file"].split("/"))
                    return self._resolve(m["kind"] or "models", unquote(m["repo"]), unquote(m["rev"]), name)
                return self._error(404, "EntryNotFound", f"fake_hub: no route for {unquote(raw)}")

            def _api(self, kind: str, repo: str, action: str | None, rev: str, query: dict, body: bytes):
                token = self._token()
                if self.command == "GET" and action in (None, "revision"):
                    blobs = query.get("blobs", [""])[0].lower() == "true"
                    return self._info(kind, repo, rev or "main", blobs, query.get("expand", []))
                if self.command == "GET" and kind == "datasets" and action == "leaderboard":
                    return self._json(leaderboard(hub.store, repo, query, token))
                if self.command == "GET" and action == "discussions":
                    return self._json(hub.store.discussions(kind, repo, query, token))
                if self.command == "POST" and action == "preupload":
                    current = hub.store.files(kind, repo, rev or "main", token)[1]
                    files = json.loads(body)["files"]
                    modes = []
                    for f in files:  # the file's id where it is already there (an LFS file's sha256, a regular
                        lfs, data = stored_with_lfs(f["path"], f["size"]), current.get(f["path"])  # one's blob id)
                        oid = None if data is None else hashlib.sha256(data).hexdigest() if lfs else git_blob_sha1(data)
                        mode = "lfs" if lfs else "regular"  # an unchanged file is skipped by the client
                        modes.append({"path": f["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
                    return self._json({"files": modes})
                if self.command == "POST" and action == "commit":
                    items = [json.loads(line) for line in body.splitlines() if line.strip()]
                    create_pr = query.get("create_pr") == ["1"]
                    done = hub.store.commit(kind, repo, rev, create_pr, items, token)
                    prefix = "" if kind == "models" else f"{kind}/"
                    answer = {"commitUrl": f"{hub.url}/{prefix}{repo}/commit/{done['sha']}", "commitOid": done["sha"]}
                    if create_pr:
                        answer["pullRequestUrl"] = f"{hub.url}/{prefix}{repo}/discussions/{done['pr']}"
                    return self._json(answer)
                return self._error(404, "", f"fake_hub: no route for {self.command} /api/{kind}/{repo}/{action}")

            def _resolve(self, kind: str, repo: str, rev: str, name: str):
                sha, files = hub.store.files(kind, repo, rev, self._token())
                if name not in files:
                    return self._error(404, "EntryNotFound", f"{name} does not exist on {rev}")
                data = files[name]
                ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
                headers = {"Content-Type": ctype, "ETag": f'"{git_blob_sha1(data)}"', "X-Repo-Commit": sha,
                           "Accept-Ranges": "bytes"}  # fmt: skip
                wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
                if self.command != "GET" or wanted is None or not any(wanted.groups()):
                    return self._send(200, data, headers)
                # one range, as HfFileSystem asks for a Parquet file's footer and blocks: 206 with those bytes
                first, last = wanted.groups()
                start = int(first) if first else max(len(data) - int(last), 0)
                end = min(int(last) if first and last else len(data) - 1, len(data) - 1)
                if start >= len(data):
                    return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return self._send(
                    206, data[start : end + 1], {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"}
                )

            def _tree(self, kind: str, repo: str, rev: str, path: str, recursive: bool):
                """The files and folders under ``path`` at ``rev`` (all below it with ``recursive``)."""
                files = hub.store.files(kind, repo, rev, self._token())[1]
                prefix = f"{path}/" if path else ""
                below = {name: data for name, data in files.items() if name.startswith(prefix)}
                if path and not below:
                    return self._error(404, "EntryNotFound", f"{path} does not exist on {rev}")
                entries: dict[str, dict] = {}
                for name, data in sorted(below.items()):
                    parts = name[len(prefix) :].split("/")
                    for depth in range(1, len(parts)):  # the folders on the way
                        folder = prefix + "/".join(parts[:depth])
                        if recursive or depth == 1:
                            entries.setdefault(
                                folder, {"type": "directory", "oid": "0" * 40, "size": 0, "path": folder}
                            )
                    if recursive or len(parts) == 1:
                        entry = {"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": name}
                        if stored_with_lfs(name, len(data)):
                            digest = hashlib.sha256(data).hexdigest()
                            entry["lfs"] = {"oid": digest, "size": len(data), "pointerSize": 134}
                        entries[name] = entry
                return self._json(list(entries.values()))

            def _info(self, kind: str, repo: str, rev: str, blobs: bool = False, expand: list[str] = ()):
                """The repo's info; with ``expand``, only the fields asked (``evalResults``: the Hub's parse of a
                model's ``.eval_results`` files, :func:`tests.integration.fake_hub_board.eval_results`)."""
                sha, files = hub.store.files(kind, repo, rev, self._token())
                if expand:
                    info = {"_id": git_blob_sha1(repo.encode())[:24], "id": repo, "sha": sha}
                    for name in expand:
                        if name not in ("evalResults", "sha") or kind != "models":
                            return self._error(400, "", f"Invalid expand value: {name}")
                        if name == "evalResults":
                            info["evalResults"] = eval_results(hub.store, repo, rev, self._token())
                    return self._json(info)
                siblings = [{"rfilename": f} for f in sorted(files)]
                if blobs:  # sizes, git blob ids; large files (Parquet...) are stored with LFS (their sha256)
                    for s in siblings:
                        data = files[s["rfilename"]]
                        s.update(size=len(data), blobId=git_blob_sha1(data))
                        if stored_with_lfs(s["rfilename"], len(data)):
                            digest = hashlib.sha256(data).hexdigest()
                            s["lfs"] = {"sha256": digest, "size": len(data), "pointerSize": 134}
                info = {"id": repo, "sha": sha, "private": False, "siblings": siblings}
                if kind == "datasets":
                    info["tags"] = ["benchmark:official"] if repo in hub.store.allow_listed else []
                return self._json(info | ({"sdk": "gradio"} if kind == "spaces" else {}))

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
                # with hf_xet installed huggingface_hub uploads large files to Xet storage, a service of its own this
                # fake does not serve; without it, the LFS batch API the Hub also takes (and serves here)
                "HF_HUB_DISABLE_XET": "1",
                "HTTP_PROXY": self.url,
                "HTTPS_PROXY": self.url,
                "http_proxy": self.url,
                "https_proxy": self.url,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        return env
