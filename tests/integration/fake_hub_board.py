"""The fake Hub's benchmark leaderboards, as the hub docs' "Accessing Benchmark Leaderboard Data" page describes them.

``GET /api/datasets/<id>/leaderboard``: only a benchmark on the Hub's allow-list (``benchmark:official``) with an
``eval.yaml`` has one (404 otherwise); each task of its ``eval.yaml`` is its own leaderboard, the first by
default, another by ``task_id`` (the embed's ``leaderboard_task_id``: an assumption of this fake, the page names no
parameter of the API). Entries come from every model's ``.eval_results/*.yaml`` files on main and in open pull
requests (with the pull request's number), a file the Hub would refuse left out; by default only models that
declare no ``base_model`` (``base_model=false``: every model), best value first, each with ``rank``, ``modelId``,
``value``, ``filename``, ``verified``, ``source``, ``author``, ``pullRequest`` and ``notes``.
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
    task = query.get("task_id", [tasks[0]])[0]
    if task not in tasks:
        raise HubError(404, "", f"{dataset} has no task {task}")
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
