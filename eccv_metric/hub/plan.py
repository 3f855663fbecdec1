"""What ``push-results`` would commit, asked of the Hub before anything is sent: the one plan the push and its dry
run follow, so the dry run prints the commits the push makes.

Everything the Hub can tell before a commit is asked here (a token with write access, your rights on each repo, the
model repo, your open pull request on each repo, the benchmark's ``eval.yaml`` and its tasks, whether the benchmark
is on the Hub's allow-list, the details repo holding this model's details, a local build against the Hub repo's
files); then every file is made and checked (each entry by the spec's rules, the card by huggingface_hub). Each
file is an ``add``, a ``replace`` or ``unchanged`` at the revision the commit goes to (:meth:`Target.change`: the
same bytes are left out of the commit by huggingface_hub). A commit deletes only this package's own files for the
benchmark whose task ``eval.yaml`` no longer lists (:func:`~eccv_metric.hub.eval_results.stale`); a file of
another name holding an entry for a task published now stays, said in a note.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub import details as det
from eccv_metric.hub.build_check import same_build
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_results import eval_files
from eccv_metric.hub.eval_results import others
from eccv_metric.hub.eval_results import stale
from eccv_metric.hub.eval_results import updated_card
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.submission import Submission
from eccv_metric.hub.targets import Target
from eccv_metric.hub.targets import account
from eccv_metric.hub.targets import check_rights
from eccv_metric.hub.targets import find_target

AGAIN = "run push-results again"
DOCS = "https://huggingface.co/docs/hub/eval-results"
PLACEHOLDER = "0" * 40  # the details commit before it exists: the URL's shape, for the checks
OFFICIAL = "benchmark:official"


def titles(sub: Submission) -> tuple[str, str]:
    """The pull requests' titles (the model repo's, the details repo's): how a rerun finds yours."""
    return f"{NAME} eval results on {sub.dataset_repo}", f"{NAME} details of {sub.model_repo} on {sub.dataset_repo}"


@dataclass
class Plan:
    """The commits of one submission: the details repo's (``details``: None with ``--no-details``) and the model
    repo's, each with its target (main, your open pull request, or a new one) and its files."""

    sub: Submission
    model: Target
    details: Target | None
    details_files: dict[str, bytes]
    registered: set[str]  # the task ids of the benchmark's eval.yaml
    deleted: list[str] = field(default_factory=list)
    evidence: dict[str, Path] = field(default_factory=dict)  # evidence/ path in the details repo -> the local file
    card_text: str | None = None  # the model card now (with --model-index); None: no model-index written
    with_model_index: bool = False

    def details_url(self, endpoint: str, sha: str | None = None) -> str | None:
        """The entries' ``source.url``: the details commit ``sha``; without one, the details head when the commit
        would change nothing there (no new commit: the URL is known), else None (known once committed)."""
        if self.details is None:
            return None
        if sha is None and self.details.exists and not self.details_changes():
            sha = self.details.head
        return det.tree_url(endpoint, self.details.repo, sha) if sha else None

    def model_files(self, url: str | None) -> dict[str, str]:
        """The model repo's files for a details URL (``url`` None with details: the placeholder commit)."""
        if self.details is not None and url is None:
            from huggingface_hub import constants

            url = det.tree_url(constants.ENDPOINT, self.details.repo, PLACEHOLDER)
        files = eval_files(self.sub, url, self.registered)
        if self.with_model_index:
            files["README.md"] = updated_card(self.card_text, self.sub, url, self.registered)
        return files

    def details_changes(self) -> dict[str, str]:
        """``{path: add | replace}`` of the details commit: its files and the evidence's (each read from disk once,
        to compare it with what the details repo holds), unchanged files left out."""
        if self.details is None:
            return {}
        out = self.changes(self.details, self.details_files, [])
        for path, local in self.evidence.items():
            how = self.details.change(path, local.read_bytes())
            if how != "unchanged":
                out[path] = how
        return out

    def details_sizes(self) -> dict[str, int]:
        """The details commit's files' sizes in bytes (the evidence's read from disk)."""
        sizes = {path: len(data) for path, data in self.details_files.items()}
        return sizes | {path: local.stat().st_size for path, local in self.evidence.items()}

    @staticmethod
    def changes(target: Target, files: dict[str, bytes], deleted: list[str]) -> dict[str, str]:
        """``{path: add | replace | delete}`` of a commit: what it sends (unchanged files left out)."""
        out = {path: target.change(path, data) for path, data in files.items()}
        return {path: how for path, how in out.items() if how != "unchanged"} | dict.fromkeys(deleted, "delete")


def make_plan(
    api: object,
    sub: Submission,
    direct: bool,
    with_model_index: bool,
    details_repo: str | None,
    details: bool,
    log: Callable[[str], None],
) -> Plan:
    """Every read and check before the first commit (see the module docstring); notes said through ``log``."""
    what = f"push-results to model {sub.model_repo}"
    user = account(api)
    model_title, details_title = titles(sub)
    model = find_target(api, sub.model_repo, "model", direct, model_title, user)
    if not model.exists:
        raise EvaluationError(
            f"{what} failed: the model repo {sub.model_repo} was not found on the Hub (or is private to another "
            f"account); check model_repo= (`hf repo create {sub.model_repo}` makes it, if it is yours), then {AGAIN}"
        )
    check_rights(model, user, "drop direct= to open a pull request instead", what)
    registered = _benchmark(api, sub, what, log)
    dropped = [task.id for task, _ in sub.values if task.id not in registered]
    if dropped:
        log(f"not published (the eval.yaml of {sub.dataset_repo} does not list them): {', '.join(dropped)}")
    target = None
    if details:
        repo = details_repo or det.default_repo(user.name, sub.model_repo)
        target = find_target(api, repo, "dataset", user.may_write(repo), details_title, user)
        check_rights(target, user, "", f"push-results details to dataset {repo}")
        _check_details_repo(api, target, sub, what)
    made = det.with_repo(det.details_files(sub), target.repo) if target else {}
    card_text = _card(api, model) if with_model_index else None
    plan = Plan(sub, model, target, made, registered, card_text=card_text, with_model_index=with_model_index)
    plan.evidence = det.evidence_files(sub) if target else {}
    files = plan.model_files(None)  # every entry and the card checked before anything is sent
    if not set(files) - {"README.md"}:
        raise EvaluationError(
            f"{what}: the eval.yaml of {sub.dataset_repo} lists none of the results' tasks; push a build that "
            f"has their configs there (`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`)"
        )
    existing = _eval_files_at(api, model, set(files))
    plan.deleted = stale(existing, sub, registered)
    for path in others(existing, sub, set(files)):
        log(f"note: {path} on {model.label} also holds entries for {sub.dataset_repo}'s tasks published now: it "
            "stays (not a file push-results writes; remove it if it is an older push of yours): until then those "
            "tasks have two entries")  # fmt: skip
    return plan


def _benchmark(api: object, sub: Submission, what: str, log: Callable[[str], None]) -> set[str]:
    """The task ids the benchmark dataset's ``eval.yaml`` lists; the allow-list note; a local build checked
    against the repo's files (its revision published when they are the same)."""
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.errors import RepositoryNotFoundError

    push = f"`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`"
    try:
        info = api.dataset_info(sub.dataset_repo, files_metadata=sub.local_build is not None)  # type: ignore[attr-defined]
        path = api.hf_hub_download(sub.dataset_repo, "eval.yaml", repo_type="dataset", revision=info.sha)  # type: ignore[attr-defined]
    except RepositoryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the benchmark dataset {sub.dataset_repo} was not found on the Hub (or is private); "
            f"check dataset_repo=, or push the build there ({push}), then {AGAIN}"
        ) from None
    except EntryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the dataset {sub.dataset_repo} has no eval.yaml, so it registers no tasks; push a "
            f"build of this version there ({push}), then {AGAIN}"
        ) from None
    try:
        with open(path, encoding="utf-8") as fin:
            registered = set(task_ids(fin.read()))
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(
            f"{what} failed: the eval.yaml of {sub.dataset_repo} is not one ({str(exc).splitlines()[0]}); push a "
            f"build there ({push}), then {AGAIN}"
        ) from None
    if OFFICIAL not in (info.tags or []):
        log(
            f"note: {sub.dataset_repo} is not on the Hub's benchmark allow-list (no {OFFICIAL} tag): the results "
            f"show on the model page and on no leaderboard until the Hub lists it ({DOCS}#registering-a-benchmark)"
        )
    if sub.local_build is not None:
        sub.dataset_revision = same_build(info, sub, push, log)
    return registered


def _check_details_repo(api: object, target: Target, sub: Submission, what: str) -> None:
    """A details repo holding another model's or another benchmark's details, or files that are no details at
    all (a dataset, the benchmark itself), is not overwritten; an empty repo (the Hub's ``.gitattributes``) is
    taken."""
    if det.RESULTS_JSON not in target.files:
        held = sorted(name for name in target.files if name != ".gitattributes")
        if held:
            shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
            raise EvaluationError(
                f"{what}: the details repo {target.repo} holds files that are no details ({shown}; no "
                f"{det.RESULTS_JSON}): give details_repo= a new or empty repo, then {AGAIN}"
            )
        return
    revision = target.revision or target.head
    path = api.hf_hub_download(target.repo, det.RESULTS_JSON, repo_type="dataset", revision=revision)  # type: ignore[attr-defined]
    with open(path, encoding="utf-8") as fin:
        try:
            held = json.load(fin)
        except ValueError:
            held = {}
    dataset = (held.get("dataset") or {}).get("id") if isinstance(held, dict) else None
    model = held.get("model_repo") if isinstance(held, dict) else None
    if (model, dataset) != (sub.model_repo, sub.dataset_repo):
        raise EvaluationError(
            f"{what}: the details repo {target.repo} holds the details of {model} on {dataset}, not of "
            f"{sub.model_repo} on {sub.dataset_repo}: give details_repo= another repo, then {AGAIN}"
        )


def _eval_files_at(api: object, target: Target, new: set[str]) -> dict[str, bytes]:
    """The ``.eval_results`` files at the target's revision that this commit does not write (the files it may
    delete, and those it names in a note)."""
    out = {}
    for name in target.files:
        if name.startswith(f"{FOLDER}/") and name not in new and name.endswith((".yaml", ".yml")):
            path = api.hf_hub_download(target.repo, name, revision=target.revision or target.head)  # type: ignore[attr-defined]
            with open(path, "rb") as fin:
                out[name] = fin.read()
    return out


def _card(api: object, target: Target) -> str | None:
    """The model card's text at the target's revision; None when the repo has none."""
    if "README.md" not in target.files:
        return None
    path = api.hf_hub_download(target.repo, "README.md", revision=target.revision or target.head)  # type: ignore[attr-defined]
    with open(path, encoding="utf-8") as fin:
        return fin.read()
