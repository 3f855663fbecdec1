"""Where a commit of ``push-results`` goes on the Hub, read before anything is sent: main, or your open pull request.

One submission per model, kept current: a rerun finds the pull request you opened before on the repo (open, by
you, with the title this package gives it for this benchmark dataset) and adds a commit to it (``revision=
"refs/pr/<n>"``, its head as the parent) instead of opening another; with none, a new one is opened
(``create_pr=True``). ``direct`` commits to main, with main's head as the parent (a change in between is a 412,
never an overwrite). Whether you may write is checked from ``whoami`` before the first commit (a read token, a
repo of another account or of an organization where you are no writer): one line, nothing sent.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import field

from eccv_metric.core import progress
from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.repos import status_of

WRITE_ROLES = ("write", "admin", "contributor")


@dataclass
class Account:
    """The token's user: its name, the organizations it may write to, whether the token may write at all."""

    name: str
    orgs: tuple[str, ...] = ()
    read_only: bool = False

    def may_write(self, repo: str) -> bool:
        owner = repo.split("/")[0]
        return not self.read_only and (owner == self.name or owner in self.orgs)


def account(api: object) -> Account:
    """``whoami``: the user, the organizations with a write role, the token's role (fine-grained: not told)."""
    info = api.whoami()  # type: ignore[attr-defined]
    orgs = tuple(o["name"] for o in info.get("orgs") or [] if o.get("roleInOrg") in WRITE_ROLES and "name" in o)
    role = ((info.get("auth") or {}).get("accessToken") or {}).get("role")
    return Account(str(info.get("name")), orgs, role == "read")


@dataclass
class Target:
    """One repo a commit goes to: main (``direct``), your open pull request ``pr``, or a new pull request."""

    repo: str
    repo_type: str  # "model" or "dataset"
    direct: bool
    exists: bool = True
    pr: int | None = None
    head: str | None = None  # the parent of the commit: main's head, or the pull request's
    files: list[str] = field(default_factory=list)  # the files at that revision
    blobs: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # path -> (git blob id, LFS sha256)

    @property
    def revision(self) -> str | None:
        return f"refs/pr/{self.pr}" if self.pr is not None else None

    @property
    def label(self) -> str:
        return f"{self.repo_type} {self.repo}"

    def change(self, path: str, data: bytes) -> str:
        """What a commit does with ``data`` at ``path``: ``add``, ``replace``, or ``unchanged`` (the same bytes are
        there: huggingface_hub leaves the file out of the commit, as it compares the Hub's id of the file, its LFS
        sha256 or its git blob id, with its own)."""
        if path not in self.blobs:
            return "add"
        blob, lfs = self.blobs[path]
        same = (
            hashlib.sha256(data).hexdigest() == lfs
            if lfs
            else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob
        )
        return "unchanged" if same else "replace"

    def where(self) -> str:
        if self.direct:
            return ("create and commit to " if not self.exists else "commit to main of ") + self.label
        if self.pr is not None:
            return f"add a commit to your pull request #{self.pr} on {self.label}"
        return f"open a pull request on {self.label}"


def find_target(api: object, repo: str, repo_type: str, direct: bool, title: str, user: Account | None) -> Target:
    """The target of a commit to ``repo`` (see the module docstring); ``title``: the pull request's, by which
    your earlier one is found. A repo that does not exist is one only a direct commit can make (yours)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.repo_info(repo, repo_type=repo_type, files_metadata=True)  # type: ignore[attr-defined]
    except RepositoryNotFoundError:
        return Target(repo, repo_type, direct, exists=False)
    target = Target(repo, repo_type, direct)
    _at(target, info)
    if direct or user is None:
        return target
    mine = [
        d.num
        for d in api.get_repo_discussions(  # type: ignore[attr-defined]
            repo, author=user.name, discussion_type="pull_request", discussion_status="open", repo_type=repo_type
        )
        if d.title == title and d.author == user.name
    ]
    if mine:
        target.pr = max(mine)
        _at(target, api.repo_info(repo, repo_type=repo_type, revision=target.revision, files_metadata=True))  # type: ignore[attr-defined]
    return target


def _at(target: Target, info: object) -> None:
    """The target's head and files from a ``repo_info(files_metadata=True)``."""
    siblings = info.siblings or []  # type: ignore[attr-defined]
    target.head, target.files = info.sha, [s.rfilename for s in siblings]  # type: ignore[attr-defined]
    target.blobs = {s.rfilename: (s.blob_id, s.lfs.sha256 if s.lfs else None) for s in siblings}


def check_rights(target: Target, user: Account, flag: str, what: str) -> None:
    """Refuse, before anything is sent, a commit the Hub would refuse: a read token; main of a repo you may not
    write (``flag``: how to ask for a pull request instead); a repo to create outside your namespaces."""
    if user.read_only:
        raise EvaluationError(
            f"{what}: the token of {user.name} is read-only: it may neither commit nor open pull requests; log in "
            "with `hf auth login` or set HF_TOKEN to a token with write access, then run push-results again"
        )
    if not target.exists and not user.may_write(target.repo):
        raise EvaluationError(
            f"{what}: the {target.label} does not exist and {user.name} may not create it (another account's "
            f"namespace); give a repo of yours, then run push-results again"
        )
    if target.direct and target.exists and not user.may_write(target.repo):
        raise EvaluationError(
            f"{what}: {user.name} may not commit to main of {target.label} (another account's repo): {flag}, then "
            "run push-results again"
        )


def commit(api: object, target: Target, operations: list, message: str, description: str) -> tuple[str, str]:
    """Send one commit to the target; (its commit sha, a line saying what happened). Files that did not change
    are left out by huggingface_hub; nothing changed at all: no commit, the head's sha. A repo made for the
    commit is deleted again when the Hub refuses the commit (nothing half-written: no empty repo left behind); not
    when the answer was lost (a timeout: the commit may have been applied). huggingface_hub's bars (``Upload N LFS
    files``) follow this package's rule: drawn only when someone watches (:mod:`eccv_metric.core.progress`)."""
    import contextlib

    with contextlib.nullcontext() if progress.enabled() else progress.libraries_quiet():
        return _commit(api, target, operations, message, description)


def _commit(api: object, target: Target, operations: list, message: str, description: str) -> tuple[str, str]:
    import logging

    if not target.exists:
        api.create_repo(target.repo, repo_type=target.repo_type, exist_ok=True)  # type: ignore[attr-defined]
    said = logging.getLogger("huggingface_hub.hf_api")
    level = said.level
    said.setLevel(logging.ERROR)  # its "No files have been modified" warning: said here, in our words
    try:
        info = api.create_commit(  # type: ignore[attr-defined]
            target.repo,
            operations,
            repo_type=target.repo_type,
            commit_message=message,
            commit_description=description,
            revision=target.revision,
            create_pr=not target.direct and target.pr is None,
            parent_commit=target.head,
        )
    except Exception as exc:
        refused = (status_of(exc) or 0) in range(400, 500)  # the Hub answered no: nothing of the commit applied
        if not target.exists and refused:  # the repo this call made holds nothing: not left behind empty
            try:
                api.delete_repo(target.repo, repo_type=target.repo_type, missing_ok=True)  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 (the commit's own error is the one to say)
                pass
        raise
    finally:
        said.setLevel(level)
    if target.head is not None and info.oid == target.head:
        return info.oid, f"nothing changed on {target.label}: its files are already these (commit {info.oid[:12]})"
    if info.pr_url:
        return info.oid, f"opened pull request {info.pr_url} ({target.label})"
    if target.pr is not None:
        return info.oid, f"added commit {info.oid[:12]} to your pull request #{target.pr} on {target.label}"
    return info.oid, f"committed {info.commit_url}"
