"""What the fake Hub holds and does behind its HTTP routes: repos, pull requests, commits, tokens, leaderboards.

Repos are folders (a commit to main writes into the folder); a pull request is its base's files plus the
files committed to it. The rules are the real Hub's, as far as the clients here can tell:

- a token the Hub does not know is 401 "Invalid credentials in Authorization header"; a missing repo is 404
  ``RepoNotFound`` (401 without a token); an unknown revision 404 ``RevisionNotFound``;
- a commit needs a token (401 without), a write token (403 for a read token), and for ``main`` the repo's
  owner (403 for anyone else: they open a pull request, ``create_pr=1``); a ``parentCommit`` that is not
  the head of main is 412;
- ``/api/datasets/<id>/leaderboard`` ranks, for a dataset with an ``eval.yaml``, every model's
  ``.eval_results/*.yaml`` entry for it and the first task of its ``eval.yaml`` (main and open pull requests,
  the latter with their number), best value first; a dataset without ``eval.yaml`` has no leaderboard (404).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import yaml

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


@dataclass
class Store:
    """The fake Hub's state. ``repos``: (kind, repo id) -> folder, kind ``models`` / ``datasets`` / ``spaces``;
    ``tokens``: token -> (user, may write), None: nothing checked (read-only use)."""

    repos: dict[tuple[str, str], Path]
    revisions: set[str]
    tokens: dict[str, tuple[str, bool]] | None = None
    heads: dict[tuple[str, str], str] = field(default_factory=dict)
    prs: dict[tuple[str, str], list[PullRequest]] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)

    def user(self, token: str | None) -> tuple[str, bool] | None:
        """The token's (user, may write); an unknown token is refused as the Hub refuses it."""
        if token is None or self.tokens is None:
            return None
        if token not in self.tokens:
            raise HubError(401, "", "Invalid credentials in Authorization header")
        return self.tokens[token]

    def folder(self, kind: str, repo: str, token: str | None) -> Path:
        folder = self.repos.get((kind, repo))
        if folder is None:  # the Hub answers 401 for a missing (or private) repo without a token
            raise HubError(404 if self.user(token) else 401, "RepoNotFound", "Repository not found")
        return folder

    def head(self, kind: str, repo: str) -> str:
        return self.heads.get((kind, repo), FAKE_COMMIT)

    def files(self, kind: str, repo: str, rev: str, token: str | None) -> tuple[str, dict[str, bytes]]:
        """(commit sha, {path: bytes}) of a repo at a revision: main (or its sha), or ``refs/pr/<n>``."""
        folder = self.folder(kind, repo, token)
        for pr in self.prs.get((kind, repo), []):
            if rev in (f"refs/pr/{pr.num}", pr.sha):
                return pr.sha, dict(pr.files)
        if rev not in self.revisions | {self.head(kind, repo)}:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        return self.head(kind, repo), files

    def commit(self, kind: str, repo: str, rev: str, create_pr: bool, items: list[dict], token: str | None) -> dict:
        """Apply one commit (the ndjson items of ``POST /api/<kind>/<repo>/commit/<rev>``); its record."""
        folder = self.folder(kind, repo, token)
        who = self.user(token)
        if self.tokens is not None and who is None:
            raise HubError(401, "", "You must be authenticated to commit")
        if who is not None and not who[1]:
            raise HubError(403, "", "Your token is read-only: it may not create commits or pull requests")
        owner = repo.split("/")[0]
        if who is not None and not create_pr and who[0] != owner:
            raise HubError(403, "", f"You don't have the rights to commit to {repo}: open a pull request instead")
        header = next(i["value"] for i in items if i["key"] == "header")
        files = {i["value"]["path"]: base64.b64decode(i["value"]["content"]) for i in items if i["key"] == "file"}
        if any(i["key"] not in ("header", "file") for i in items):
            raise HubError(400, "", "the fake Hub takes regular files only")
        parent = header.get("parentCommit")
        if not create_pr and parent is not None and parent != self.head(kind, repo):
            raise HubError(412, "", "A commit has happened since the parent commit: pull and commit again")
        sha = hashlib.sha1(repr((kind, repo, len(self.commits), sorted(files.items()))).encode()).hexdigest()
        record = {
            "kind": kind,
            "repo": repo,
            "revision": rev,
            "create_pr": create_pr,
            "summary": header.get("summary"),
            "description": header.get("description"),
            "parent": parent,
            "files": files,
            "user": who[0] if who else None,
            "pr": None,
            "sha": sha,
        }
        if create_pr:
            prs = self.prs.setdefault((kind, repo), [])
            base = self.files(kind, repo, parent or self.head(kind, repo), token)[1]
            prs.append(PullRequest(len(prs) + 1, sha, {**base, **files}))
            record["pr"] = len(prs)
        else:
            for path, data in files.items():
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                (folder / path).write_bytes(data)
            self.heads[(kind, repo)] = sha
        self.commits.append(record)
        return record

    def leaderboard(self, dataset: str, token: str | None) -> list[dict]:
        """The entries of a benchmark's leaderboard (see the module docstring)."""
        eval_yaml = self.files("datasets", dataset, "main", token)[1].get("eval.yaml")
        if eval_yaml is None:
            raise HubError(404, "", f"{dataset} has no leaderboard")
        task = yaml.safe_load(eval_yaml)["tasks"][0]["id"]
        rows = []
        for (kind, repo), _ in sorted(self.repos.items()):
            if kind != "models":
                continue
            versions = [(None, self.files(kind, repo, "main", token)[1])]
            versions += [(pr.num, pr.files) for pr in self.prs.get((kind, repo), [])]
            for pr, files in versions:
                for path, data in sorted(files.items()):
                    if not (path.startswith(".eval_results/") and path.endswith(".yaml")):
                        continue
                    for item in yaml.safe_load(data) or []:
                        if item["dataset"]["id"] == dataset and item["dataset"]["task_id"] == task:
                            rows.append(_entry(repo, path, pr, item))
        rows.sort(key=lambda r: -r["value"])
        return [{"rank": i + 1, **row} for i, row in enumerate(rows)]


def _entry(repo: str, path: str, pr: int | None, item: dict) -> dict:
    out = {
        "modelId": repo,
        "value": item["value"],
        "filename": path,
        "verified": False,
        "author": {"type": "user", "name": repo.split("/")[0], "fullname": repo.split("/")[0], "avatarUrl": ""},
        "pullRequest": pr,
        "notes": item.get("notes"),
    }
    if "source" in item:
        out["source"] = {**item["source"], "isExternal": True}
    return out


def validate_card(content: str) -> list[str]:
    """What the Hub's ``/api/validate-yaml`` would object to in a model card's YAML (model-index only)."""
    if not content.startswith("---"):
        return []
    meta = yaml.safe_load(content.split("\n---", 1)[0].removeprefix("---")) or {}
    errors = []
    for model in meta.get("model-index") or []:
        for result in model.get("results") or []:
            if not result.get("task", {}).get("type"):
                errors.append("model-index: a result has no task.type")
            if not {"type", "name"} <= set(result.get("dataset") or {}):
                errors.append("model-index: a result's dataset needs type and name")
            if not all({"type", "value"} <= set(m) for m in result.get("metrics") or [{}]):
                errors.append("model-index: a metric needs type and value")
    return errors
