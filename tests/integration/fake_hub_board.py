"""The fake Hub's benchmark leaderboards and a model's eval results as the Hub serves them.

``GET /api/datasets/<id>/leaderboard``, as the hub docs' "Accessing Benchmark Leaderboard Data" page and
huggingface_hub's ``get_dataset_leaderboard`` describe it: only a benchmark on the Hub's allow-list
(``benchmark:official``) with an ``eval.yaml`` has one (404 otherwise). Its one documented parameter is
``base_model`` (by default only models that declare no ``base_model``; ``base_model=false``: every model). The page
names no way to ask for one task of several: this fake serves the first task of ``eval.yaml`` (an assumption: the
Hub's UI shows one task at a time) and takes no other parameter. Entries come from every model's
``.eval_results/*.yaml`` files on main and in open pull requests (with the pull request's number), a file the Hub
finds invalid left out, best value first, each with ``rank``, ``modelId``, ``value``, ``filename``, ``verified``,
``source``, ``author``, ``pullRequest`` and ``notes``.

``GET /api/models/<id>[/revision/<rev>]?expand=evalResults`` (:func:`eval_results`): the Hub's parse of the files
at that revision, as huggingface_hub's tests of the API format show it: each entry ``{"filename", "verified",
"data", "pullRequest"}``; a file the Hub finds invalid (:func:`tests.integration.fake_hub_rules.eval_results_errors`)
is accepted at commit, as the Hub accepts it, and reported here in its place as ``{"filename", "error"}`` in the
Hub's words (huggingface_hub PR #4924: ``"✖ Invalid input: expected string, received null\n  → at
[18].source.url"``).
"""

from __future__ import annotations

import math

import yaml

from tests.integration.fake_hub_rules import eval_results_errors
from tests.integration.fake_hub_store import HubError
from tests.integration.fake_hub_store import Store


def _has_base_model(files: dict[str, bytes]) -> bool:
    card = files.get("README.md", b"").decode(errors="replace")
    if not card.startswith("---"):
        return False
    try:
        meta = yaml.safe_load(card.split("\n---", 1)[0].removeprefix("---")) or {}
    except yaml.YAMLError:
        return False
    return isinstance(meta, dict) and bool(meta.get("base_model"))


def leaderboard(store: Store, dataset: str, query: dict, token: str | None) -> list[dict]:
    """The entries of one task's leaderboard of a benchmark (see the module docstring)."""
    files = store.files("datasets", dataset, "main", token)[1]
    tasks = store.tasks_of(dataset)
    if dataset not in store.allow_listed or "eval.yaml" not in files or not tasks:
        raise HubError(404, "", f"{dataset} has no leaderboard")
    unknown = set(query) - {"base_model"}
    if unknown:  # no parameter the page documents: a client sending one would rely on what no document says
        raise HubError(400, "", f"fake_hub: the leaderboard API documents no parameter {sorted(unknown)[0]!r}")
    task = tasks[0]
    every_model = query.get("base_model", ["true"])[0].lower() == "false"
    rows = []
    for (kind, repo), _ in sorted(store.repos.items()):
        if kind != "models":
            continue
        main = store.files(kind, repo, "main", token)[1]
        if not every_model and _has_base_model(main):
            continue
        versions = [(None, main)] + [(p.num, p.files) for p in store.prs.get((kind, repo), []) if p.status == "open"]
        for pr, tree in versions:
            for path, data in sorted(tree.items()):
                if not (path.startswith(".eval_results/") and path.endswith((".yaml", ".yml"))):
                    continue
                if eval_results_errors(data, store.tasks_of):  # served files the Hub flags: no entry
                    continue
                for item in yaml.safe_load(data) or []:
                    if item["dataset"]["id"] == dataset and item["dataset"]["task_id"] == task:
                        rows.append(_entry(repo, path, pr, item))
    rows.sort(key=lambda r: (math.isnan(r["value"]), -r["value"]))
    return [{"rank": i + 1, **row} for i, row in enumerate(rows)]


def eval_results(store: Store, repo: str, rev: str, token: str | None) -> list[dict]:
    """A model's ``evalResults`` at a revision (see the module docstring); ``pullRequest``: the pull request's
    number when the revision is one's."""
    pr = store.pull_request("models", repo, rev)
    out: list[dict] = []
    for path, data in sorted(store.files("models", repo, rev, token)[1].items()):
        if not (path.startswith(".eval_results/") and path.endswith((".yaml", ".yml"))):
            continue
        errors = eval_results_errors(data, store.tasks_of)
        if errors:
            message, _, at = errors[0].rpartition(" at ")
            out.append({"filename": path, "error": f"✖ {message}\n  → at {at}" if message else f"✖ {errors[0]}"})
            continue
        for item in yaml.safe_load(data) or []:
            out.append({"filename": path, "verified": False, "data": item, "pullRequest": pr.num if pr else None})
    return out


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
