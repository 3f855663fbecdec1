"""What the fake Hub holds and does behind its HTTP routes: repos, pull requests, commits, tokens, accounts.

Repos are folders (a commit to main writes into the folder); a pull request is its base's files plus the
files committed to it. The rules are the real Hub's, as far as the clients here can tell:

- a token the Hub does not know is 401 "Invalid credentials in Authorization header"; a missing repo is 404
  ``RepoNotFound`` (401 without a token); an unknown revision 404 ``RevisionNotFound``;
- a commit needs a token (401 without), a write token (403 for a read token), and for ``main`` the repo's
  owner (403 for anyone else: they open a pull request, ``create_pr=1``); a ``parentCommit`` that is not
  the head of main is 412;
- pull requests belong to their author and stay open: ``GET /api/<kind>/<repo>/discussions`` lists them (by
  ``author``, ``type``, ``status``), a commit to ``refs/pr/<n>`` is taken from the pull request's author or the
  repo's owner only (403 otherwise; 412 when its ``parentCommit`` is not the pull request's head);
- large files come as the client sends them: ``POST /<repo>.git/info/lfs/objects/batch`` (a write token), a ``PUT``
  of the bytes to the answer's ``href`` (checked against their sha256), the ``verify`` call, then the commit's
  ``lfsFile`` item naming the object by its sha256 (:attr:`Store.lfs`); an ``lfsFile`` of an object never uploaded,
  or a regular ``file`` the Hub takes through LFS only, is a 400;
- every commit is checked as the Hub checks it (:mod:`tests.integration.fake_hub_rules`): an ``eval.yaml`` the Hub
  would refuse makes the whole commit a 400, nothing of it applied; an invalid ``.eval_results/*.yaml`` file is
  taken, as the Hub takes it, and reported when read (:func:`tests.integration.fake_hub_board.eval_results`);
- ``POST /api/repos/create`` makes a repo in the token's own namespace (403 elsewhere, 409 when it exists),
  ``DELETE /api/repos/delete`` removes one (403 elsewhere, 404 when there is none);
- ``/api/whoami-v2`` names the token's user and role; a dataset on the allow-list (``allow_listed``) carries
  the ``benchmark:official`` tag. The leaderboards are :mod:`tests.integration.fake_hub_board`.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import yaml

from tests.integration.fake_hub_rules import eval_yaml_errors
from tests.integration.fake_hub_rules import stored_with_lfs

FAKE_COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubError(Exception):
    """An answer of the fake Hub other than 200: status, X-Error-Code, message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class PullRequest:
    num: int
    sha: str
    files: dict[str, bytes]
    author: str | None = None
    title: str = ""
    status: str = "open"


@dataclass
class Store:
    """The fake Hub's state. ``repos``: (kind, repo id) -> folder, kind ``models`` / ``datasets`` / ``spaces``;
    ``tokens``: token -> (user, may write), None: nothing checked (read-only use); ``allow_listed``: benchmark
    datasets on the Hub's allow-list; ``refuse``: path -> message, a rule of the Hub the clients cannot know
    (the commit holding that path is a 400)."""

    repos: dict[tuple[str, str], Path]
    revisions: set[str]
    tokens: dict[str, tuple[str, bool]] | None = None
    allow_listed: set[str] = field(default_factory=set)
    refuse: dict[str, str] = field(default_factory=dict)
    heads: dict[tuple[str, str], str] = field(default_factory=dict)
    prs: dict[tuple[str, str], list[PullRequest]] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)
    created: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)  # repos removed (DELETE /api/repos/delete)
    lfs: dict[str, bytes] = field(default_factory=dict)  # the LFS objects uploaded: sha256 -> bytes

    def user(self, token: str | None) -> tuple[str, bool] | None:
        """The token's (user, may write); an unknown token is refused as the Hub refuses it."""
        if token is None or self.tokens is None:
            return None
        if token not in self.tokens:
            raise HubError(401, "", "Invalid credentials in Authorization header")
        return self.tokens[token]

    def whoami(self, token: str | None) -> dict:
        who = self.user(token)
        if who is None:
            raise HubError(401, "", "Invalid user token.")
        role = "write" if who[1] else "read"
        return {"type": "user", "name": who[0], "orgs": [], "auth": {"type": "access_token",
                "accessToken": {"displayName": "fake", "role": role}}}  # fmt: skip

    def folder(self, kind: str, repo: str, token: str | None) -> Path:
        folder = self.repos.get((kind, repo))
        if folder is None:  # the Hub answers 401 for a missing (or private) repo without a token
            raise HubError(404 if self.user(token) else 401, "RepoNotFound", "Repository not found")
        return folder

    def head(self, kind: str, repo: str) -> str:
        return self.heads.get((kind, repo), FAKE_COMMIT)

    def pull_request(self, kind: str, repo: str, rev: str) -> PullRequest | None:
        return next((p for p in self.prs.get((kind, repo), []) if rev in (f"refs/pr/{p.num}", p.sha)), None)

    def files(self, kind: str, repo: str, rev: str, token: str | None) -> tuple[str, dict[str, bytes]]:
        """(commit sha, {path: bytes}) of a repo at a revision: main (or its sha), ``refs/pr/<n>`` or a past commit."""
        folder = self.folder(kind, repo, token)
        pr = self.pull_request(kind, repo, rev)
        if pr is not None:
            return pr.sha, dict(pr.files)
        past = next((c for c in self.commits if (c["kind"], c["repo"], c["sha"]) == (kind, repo, rev)), None)
        if past is not None:
            return rev, dict(past["tree"])
        if rev not in self.revisions | {self.head(kind, repo)}:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        return self.head(kind, repo), files

    def create(self, kind: str, repo: str, token: str | None) -> None:
        """``POST /api/repos/create``: a repo in the token's namespace, an empty folder."""
        who = self.user(token)
        if who is None:
            raise HubError(401, "", "You must be authenticated to create a repo")
        if not who[1] or repo.split("/")[0] != who[0]:
            raise HubError(403, "", f"You don't have the rights to create a repo under {repo.split('/')[0]}")
        if (kind, repo) in self.repos:
            raise HubError(409, "", "You already created this repo")
        self.repos[(kind, repo)] = Path(tempfile.mkdtemp(prefix="fake-hub-repo-"))
        self.created.append((kind, repo))

    def delete(self, kind: str, repo: str, token: str | None) -> None:
        """``DELETE /api/repos/delete``: a repo of the token's namespace removed (404 when there is none)."""
        who = self.user(token)
        if who is None or not who[1] or repo.split("/")[0] != who[0]:
            raise HubError(403, "", f"You don't have the rights to delete {repo}")
        if (kind, repo) not in self.repos:
            raise HubError(404, "RepoNotFound", f"Repository Not Found for url: {repo}")
        shutil.rmtree(self.repos.pop((kind, repo)), ignore_errors=True)
        self.deleted.append((kind, repo))

    def tasks_of(self, dataset: str) -> list[str] | None:
        """The task ids of a dataset's ``eval.yaml`` on main (None: no such benchmark here)."""
        if ("datasets", dataset) not in self.repos:
            return None
        data = self.files("datasets", dataset, "main", None)[1].get("eval.yaml")
        tasks = (yaml.safe_load(data) or {}).get("tasks") if data else None
        return [t.get("id") for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else None

    def lfs_batch(self, kind: str, repo: str, objects: list[dict], token: str | None, href: str) -> list[dict]:
        """``POST /<repo>.git/info/lfs/objects/batch`` (operation upload, transfer basic): each object with the
        ``upload`` and ``verify`` actions, no actions when it is already stored (the client skips its upload)."""
        self.folder(kind, repo, token)
        who = self.user(token)
        if self.tokens is not None and who is None:
            raise HubError(401, "", "You must be authenticated to upload large files")
        if who is not None and not who[1]:
            raise HubError(403, "", "Your token is read-only: it may not upload files")
        out = []
        for obj in objects:
            oid, size = obj["oid"], obj["size"]
            answer = {"oid": oid, "size": size, "authenticated": True}
            if oid not in self.lfs:
                answer["actions"] = {"upload": {"href": f"{href}/{oid}"}, "verify": {"href": f"{href}/{oid}/verify"}}
            out.append(answer)
        return out

    def lfs_put(self, oid: str, data: bytes) -> None:
        """The bytes of an LFS object (the upload action's ``PUT``): stored when they are the named sha256."""
        if hashlib.sha256(data).hexdigest() != oid:
            raise HubError(400, "", f"the uploaded bytes are not the LFS object {oid}")
        self.lfs[oid] = data

    def check(self, kind: str, files: dict[str, bytes]) -> None:
        """The Hub's checks of a commit's files (see the module docstring): a 400 naming the first problem."""
        for path, data in files.items():
            if path in self.refuse:
                raise HubError(400, "", self.refuse[path])
            errors = eval_yaml_errors(data) if kind == "datasets" and path == "eval.yaml" else []
            if errors:
                raise HubError(400, "", f"{path}: {errors[0]}")

    def commit(self, kind: str, repo: str, rev: str, create_pr: bool, items: list[dict], token: str | None) -> dict:
        """Apply one commit (the ndjson items of ``POST /api/<kind>/<repo>/commit/<rev>``); its record."""
        folder = self.folder(kind, repo, token)
        who = self.user(token)
        if self.tokens is not None and who is None:
            raise HubError(401, "", "You must be authenticated to commit")
        if who is not None and not who[1]:
            raise HubError(403, "", "Your token is read-only: it may not create commits or pull requests")
        owner = repo.split("/")[0]
        pr = self.pull_request(kind, repo, rev) if rev.startswith("refs/pr/") else None
        if rev.startswith("refs/pr/") and (pr is None or pr.status != "open"):
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev} (no open pull request)")
        if who is not None and pr is not None and who[0] not in (pr.author, owner):
            raise HubError(403, "", f"Only the author of pull request #{pr.num} or {owner} may commit to it")
        if who is not None and not create_pr and pr is None and who[0] != owner:
            raise HubError(403, "", f"You don't have the rights to commit to {repo}: open a pull request instead")
        header = next(i["value"] for i in items if i["key"] == "header")
        files = {i["value"]["path"]: base64.b64decode(i["value"]["content"]) for i in items if i["key"] == "file"}
        large = [path for path, data in files.items() if stored_with_lfs(path, len(data))]
        if large:
            raise HubError(400, "", f"Your push was rejected because {large[0]} must be stored with LFS: upload it "
                                    "through the LFS batch API")  # fmt: skip
        lfs = {i["value"]["path"]: i["value"]["oid"] for i in items if i["key"] == "lfsFile"}
        missing = [path for path, oid in lfs.items() if oid not in self.lfs]
        if missing:
            raise HubError(400, "", f"Your push was rejected because an LFS pointer pointed to a file that does not "
                                    f"exist: {missing[0]}")  # fmt: skip
        files |= {path: self.lfs[oid] for path, oid in lfs.items()}
        deleted = [i["value"]["path"] for i in items if i["key"] == "deletedFile"]
        if any(i["key"] not in ("header", "file", "lfsFile", "deletedFile") for i in items):
            raise HubError(400, "", "the fake Hub takes regular files, LFS files and deletions only")
        parent = header.get("parentCommit")
        if pr is not None and parent is not None and parent != pr.sha:
            raise HubError(412, "", "A commit has happened on the pull request since the parent commit")
        if not create_pr and pr is None and parent is not None and parent != self.head(kind, repo):
            raise HubError(412, "", "A commit has happened since the parent commit: pull and commit again")
        base = pr.files if pr is not None else self.files(kind, repo, parent or self.head(kind, repo), token)[1]
        missing = [p for p in deleted if p not in base]
        if missing:
            raise HubError(404, "EntryNotFound", f"A file with this name doesn't exist: {missing[0]}")
        tree = {p: d for p, d in {**base, **files}.items() if p not in deleted}
        self.check(kind, files)
        sha = hashlib.sha1(repr((kind, repo, len(self.commits), sorted(tree.items()))).encode()).hexdigest()
        record = {"kind": kind, "repo": repo, "revision": rev, "create_pr": create_pr, "summary": header.get("summary"),
                  "description": header.get("description"), "parent": parent, "files": files, "lfs": sorted(lfs),
                  "deleted": deleted, "user": who[0] if who else None, "pr": pr.num if pr else None, "sha": sha,
                  "tree": tree}  # fmt: skip
        if create_pr:
            prs = self.prs.setdefault((kind, repo), [])
            prs.append(PullRequest(len(prs) + 1, sha, tree, who[0] if who else None, header.get("summary") or ""))
            record["pr"] = len(prs)
        elif pr is not None:
            pr.sha, pr.files = sha, tree
        else:
            for path in deleted:
                (folder / path).unlink()
            for path, data in files.items():
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                (folder / path).write_bytes(data)
            self.heads[(kind, repo)] = sha
        self.commits.append(record)
        return record

    def discussions(self, kind: str, repo: str, query: dict, token: str | None) -> dict:
        """``GET /api/<kind>/<repo>/discussions``: the pull requests, filtered as huggingface_hub asks."""
        self.folder(kind, repo, token)
        author, status = (query.get(k, [None])[0] for k in ("author", "status"))
        found = [
            {
                "num": pr.num,
                "title": pr.title,
                "status": pr.status,
                "isPullRequest": True,
                "author": {"name": pr.author or "deleted"},
                "createdAt": "2026-01-01T00:00:00.000Z",
                "repo": {"name": repo, "type": kind.removesuffix("s")},
            }
            for pr in self.prs.get((kind, repo), [])
            if author in (None, pr.author) and status in (None, "all", pr.status)
            and query.get("type", ["all"])[0] in ("all", "pull_request")
        ]  # fmt: skip
        return {"discussions": found[::-1], "count": len(found), "start": 0}
