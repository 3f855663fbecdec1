"""A submission as the Hub's eval results: ``.eval_results/*.yaml`` files and the card's ``model-index``.

The files follow the hub docs' "Evaluation Results" page and hub-docs ``eval_results.yaml``: a list with one entry
per file, ``dataset: {id, task_id, revision}``, ``value``, ``date`` (the run's, a string), ``source: {url, name}``
(the details commit that holds the per-query values behind the number; without details, the project's
repository), ``notes`` (precision, similarity, model revision: short, never a local path). One file per task,
named with the benchmark's owner so that two benchmarks (``me/eccv-caption``, ``other/eccv-caption``) never share
a file: ``.eval_results/<owner>--<name>--<task id>.yaml`` (a repo id holds no ``--``, so the name cannot be read
two ways). Every entry is checked by the spec's rules (:func:`entry_problems`) before anything is sent. The
``model-index`` follows hub-docs ``modelcard.md``, written through huggingface_hub's card API.
"""

from __future__ import annotations

import math
import re

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.eval_tasks import DIRECTIONS
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import SPLIT
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.repos import is_repo_id
from eccv_metric.hub.submission import Submission

FOLDER = ".eval_results"
PROJECT_URL = "https://github.com/naver-ai/eccv-caption"  # the evidence of --no-details: the official code
# the model-index's task.type (a Hub task id) of each direction
TASK_TYPES = {
    "i2t": "image-to-text",
    "t2i": "text-to-image",
    "t2t": "sentence-similarity",
    "i2i": "image-feature-extraction",
}
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")


def file_name(dataset_repo: str, task: HubTask) -> str:
    """``.eval_results/<owner>--<name>--<task id>.yaml``: the benchmark's owner in the name (see the docstring)."""
    owner, name = dataset_repo.split("/")
    return f"{FOLDER}/{owner}--{name}--{task.id}.yaml"


def source(sub: Submission, details_url: str | None) -> dict[str, str]:
    """The entries' ``source``: the details commit, or (no details) the project's repository."""
    by = f"MTEB, {sub.package}" if sub.producer == "MTEB" else sub.package
    if details_url is not None:
        return {"url": details_url, "name": f"Per-query details ({by})"}
    return {"url": PROJECT_URL, "name": by}


def entry(sub: Submission, task: HubTask, value: float, details_url: str | None) -> dict:
    """One entry of the Hub's eval-results format (the value in the task's unit)."""
    dataset = {"id": sub.dataset_repo, "task_id": task.id}
    if sub.dataset_revision:
        dataset["revision"] = sub.dataset_revision
    out: dict = {"dataset": dataset, "value": shown(task, value)}
    if sub.date:
        out["date"] = sub.date
    out["source"] = source(sub, details_url)
    if sub.setup:
        out["notes"] = sub.setup
    return out


def eval_files(sub: Submission, details_url: str | None, tasks: set[str] | None = None) -> dict[str, str]:
    """``{path in the model repo: YAML text}``, one file per task (``tasks``: only these task ids); each entry
    checked by :func:`entry_problems` (an EvaluationError naming the file, before anything is sent)."""
    out = {}
    for task, value in sub.values:
        if tasks is not None and task.id not in tasks:
            continue
        item = entry(sub, task, value, details_url)
        problems = entry_problems(item)
        if problems:
            raise EvaluationError(f"{file_name(sub.dataset_repo, task)} would not be valid: {'; '.join(problems)}")
        out[file_name(sub.dataset_repo, task)] = yaml.safe_dump([item], sort_keys=False, allow_unicode=True)
    return out


def entry_problems(item: object, where: str = "[0]") -> list[str]:
    """What the hub docs' eval-results spec refuses in one entry (required ``dataset.id``, ``dataset.task_id``,
    ``value``; ``source.url`` when there is a source; strings where strings go), in the Hub's words."""
    if not isinstance(item, dict):
        return [f"{where}: an entry is a mapping"]
    problems = []
    dataset = item.get("dataset")
    if not isinstance(dataset, dict):
        return [f"{where}.dataset: required, a mapping with id and task_id"]
    if not is_repo_id(dataset.get("id")):
        problems.append(f"{where}.dataset.id: a Hub dataset id <owner>/<name> is required")
    for key, required in (("task_id", True), ("revision", False), ("config", False), ("split", False)):
        if (required or key in dataset) and not isinstance(dataset.get(key), str):
            problems.append(f"{where}.dataset.{key}: expected string, received {_kind(dataset.get(key))}")
    value = item.get("value")
    if type(value) not in (int, float) or not math.isfinite(value):
        problems.append(f"{where}.value: expected a finite number, received {_kind(value)}")
    if "date" in item and not (isinstance(item["date"], str) and ISO_DATE.fullmatch(item["date"])):
        problems.append(f"{where}.date: expected an ISO-8601 date string, received {_kind(item['date'])}")
    if "source" in item:
        src = item["source"]
        url = src.get("url") if isinstance(src, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            problems.append(f"{where}.source.url: expected a URL string, received {_kind(url)}")
        for key in ("name", "user", "org"):
            if isinstance(src, dict) and key in src and not isinstance(src[key], str):
                problems.append(f"{where}.source.{key}: expected string, received {_kind(src[key])}")
    for key in ("notes", "verifyToken"):
        if key in item and not isinstance(item[key], str):
            problems.append(f"{where}.{key}: expected string, received {_kind(item[key])}")
    return problems


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _entries_of(data: bytes) -> list[dict]:
    """The entries of an ``.eval_results`` file ([] for one that is no list of mappings)."""
    try:
        items = yaml.safe_load(data)
    except yaml.YAMLError:
        return []
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _for(item: dict, dataset_repo: str) -> str | None:
    """The task id of an entry for ``dataset_repo`` (None: an entry of another benchmark, or no task)."""
    dataset = item.get("dataset") if isinstance(item.get("dataset"), dict) else {}
    task = dataset.get("task_id")
    return task if dataset.get("id") == dataset_repo and isinstance(task, str) else None


def stale(existing: dict[str, bytes], sub: Submission, registered: set[str]) -> list[str]:
    """The files a commit deletes: only this package's own for the benchmark (``<owner>--<name>--<task>.yaml``,
    holding that task's entry and nothing else) whose task the benchmark's ``eval.yaml`` no longer lists (the Hub
    reports them invalid). Every other file stays, whoever wrote it (:func:`others` names those it should know)."""
    owner, name = sub.dataset_repo.split("/")
    prefix = f"{FOLDER}/{owner}--{name}--"
    out = []
    for path, data in sorted(existing.items()):
        task = path.removeprefix(prefix).removesuffix(".yaml")
        if not path.startswith(prefix) or not path.endswith(".yaml") or task in registered:
            continue
        items = _entries_of(data)
        if items and all(_for(item, sub.dataset_repo) == task for item in items):
            out.append(path)
    return out


def others(existing: dict[str, bytes], sub: Submission, new: set[str]) -> list[str]:
    """Files of another name than this commit writes holding an entry for the benchmark and a task published now
    (an older name of this package's, ``<name>_<task>.yaml``, or a file of the repo's owner): they stay, and the
    task has two entries until one is removed (a reader shows neither where they disagree)."""
    published = {task.id for task, _ in sub.values}
    return [path for path, data in sorted(existing.items()) if path not in new
            and any(_for(item, sub.dataset_repo) in published for item in _entries_of(data))]  # fmt: skip


def model_index(sub: Submission, details_url: str | None, tasks: set[str] | None = None) -> list:
    """The ``EvalResult`` of each task (huggingface_hub's model-index form), values as in the eval results."""
    from huggingface_hub import EvalResult

    src = source(sub, details_url)
    return [
        EvalResult(
            task_type=TASK_TYPES[task.direction],
            task_name=f"{DIRECTIONS[task.direction].capitalize()} "
            + ("similarity" if task.scale == "correlation" else "retrieval"),
            dataset_type=sub.dataset_repo,
            dataset_name=NAME,
            dataset_config=task.config,
            dataset_split=SPLIT,
            dataset_revision=sub.dataset_revision,
            metric_type=task.metric,
            metric_name=f"{task.title}, {task.unit}",
            metric_value=shown(task, value),
            source_name=src["name"],
            source_url=src["url"],
        )
        for task, value in sub.values
        if tasks is None or task.id in tasks
    ]


def _key(result: object) -> tuple:
    """What makes two model-index results the same result: task, dataset, config, split and metric."""
    names = ("task_type", "dataset_type", "dataset_config", "dataset_split", "metric_type")
    return tuple(getattr(result, name, None) for name in names)


def updated_card(text: str | None, sub: Submission, details_url: str | None, tasks: set[str] | None = None) -> str:
    """The model card with its ``model-index`` holding these results (a result of the same task, dataset,
    config, split and metric is replaced, others are kept), through huggingface_hub's ``ModelCard``: the other
    metadata keep their values and order, the text below the YAML is kept as it is (YAML comments are not).
    A card huggingface_hub cannot read (broken YAML, a model-index of another shape) is one line naming it."""
    from huggingface_hub import ModelCard

    text = text or ""
    if not text.lstrip().startswith("---"):  # no metadata block yet: an empty one above the text as it is
        text = "---\n{}\n---\n" + text
    try:
        card = ModelCard(text)
        results = list(card.data.eval_results or [])
    except (ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise EvaluationError(
            f"the model card README.md of {sub.model_repo} has YAML metadata huggingface_hub cannot read "
            f"({type(exc).__name__}: {why}): fix the YAML between its '---' lines, or drop model_index= to "
            "publish the eval results alone"
        ) from None
    for new in model_index(sub, details_url, tasks):
        same = next((i for i, old in enumerate(results) if _key(old) == _key(new)), None)
        if same is None:
            results.append(new)
        else:
            results[same] = new
    card.data.eval_results = results
    card.data.model_name = card.data.model_name or sub.model_repo.split("/")[1]
    return str(card)


def describe(sub: Submission) -> str:
    """Who wrote the numbers, for a commit description: the producer, the package and the public model spec."""
    by = "MTEB's predictions scored by " if sub.producer == "MTEB" else ""
    return f"{by}{sub.package} (`{sub.public_spec}`)"
