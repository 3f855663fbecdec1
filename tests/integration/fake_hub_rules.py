"""What the fake Hub finds wrong, as the real Hub does: ``eval.yaml`` (refused at commit) and ``.eval_results/*.yaml``
files (taken at commit, reported as invalid when read: :mod:`tests.integration.fake_hub_board`).

Written from the hub docs alone (``docs/hub/eval-results.md``: "Eval.yaml specification", "Adding Evaluation
Results"; hub-docs ``eval_results.yaml``; huggingface.js ``packages/tasks/src/eval.ts``), never from this
package's code, so that a file the package gets wrong is found wrong here as the Hub would find it. Messages follow
the Hub's form (``Invalid input: expected string, received null at [18].source.url``).

- ``eval.yaml``: a mapping with ``name``, ``description`` and ``evaluation_framework`` (one of the Hub's list)
  strings and a non-empty ``tasks`` list of mappings, each with a string ``id`` (unique), and ``config`` /
  ``split`` strings where given;
- ``.eval_results/*.yaml``: a list of mappings, each with ``dataset`` (``id`` and ``task_id`` strings,
  ``revision`` a string where given), a numeric ``value`` (not NaN), ``date`` a string where given, ``source``
  with a string ``url`` where given (``name`` / ``user`` / ``org`` strings), ``notes`` a string where given; the
  ``task_id`` a task of the dataset's ``eval.yaml`` when the dataset is a benchmark the fake Hub holds;
- large files (:func:`stored_with_lfs`): a file with a suffix of the ``.gitattributes`` the Hub gives a new repo
  (``*.parquet filter=lfs ...``), or over 10 MiB, goes through the LFS batch API (``"uploadMode": "lfs"`` in the
  preupload answer); sent as a regular file instead, the commit is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import yaml

# huggingface.js packages/tasks/src/eval.ts, EVALUATION_FRAMEWORKS (2026-08-21)
FRAMEWORKS = {
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "ifstruct", "pier", "redline-bench",
    "archipelago", "benchflow", "apex-evals", "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator",
    "yc-bench", "open-asr-leaderboard", "mdpbench", "real5-omnidocbench", "parsebench", "video-mme-v2", "claw-eval",
    "researchclawbench", "pbench", "wildclawbench", "wbench", "nanofold", "mmmu", "extractbench",
}  # fmt: skip


# the suffixes of the .gitattributes the Hub writes into a new repo (filter=lfs), and the size above which the Hub
# takes a file through LFS only (its "files larger than 10 MiB" rule); a repo's own .gitattributes is not read here
LFS_SUFFIXES = (".7z", ".arrow", ".bin", ".ckpt", ".gz", ".h5", ".msgpack", ".npy", ".npz", ".onnx", ".parquet",
                ".pickle", ".pkl", ".pt", ".pth", ".safetensors", ".tar", ".zip")  # fmt: skip
LFS_SIZE = 10 * 1024 * 1024


def stored_with_lfs(path: str, size: int) -> bool:
    """Whether the Hub takes this file through LFS (``uploadMode: lfs``): its suffix, or its size. An empty file is
    always regular (huggingface_hub sends it so, whatever the Hub says)."""
    return size > 0 and (path.endswith(LFS_SUFFIXES) or size > LFS_SIZE)


def _got(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "nan" if isinstance(value, float) and math.isnan(value) else "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def _expect(kind: str, value: object, at: str) -> str | None:
    ok = {
        "string": isinstance(value, str),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value),
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }[kind]
    return None if ok else f"Invalid input: expected {kind}, received {_got(value)} at {at}"


def _strings(errors: list[str], mapping: dict, keys: tuple[str, ...], at: str, required: bool) -> None:
    """Each of ``keys`` a string (only where present unless ``required``)."""
    for key in keys:
        if required or key in mapping:
            problem = _expect("string", mapping.get(key), f"{at}{key}")
            if problem is not None:
                errors.append(problem)


def eval_yaml_errors(text: bytes) -> list[str]:
    """Why the Hub refuses an ``eval.yaml`` (empty: it is accepted)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"Invalid YAML in eval.yaml: {str(exc).splitlines()[0]}"]
    if not isinstance(data, dict):
        return [f"Invalid input: expected object, received {_got(data)} at eval.yaml"]
    errors: list[str] = []
    _strings(errors, data, ("name", "description", "evaluation_framework"), "", required=True)
    framework = data.get("evaluation_framework")
    if isinstance(framework, str) and framework not in FRAMEWORKS:
        errors.append(f"Invalid enum value at evaluation_framework: {framework!r} is not a supported framework")
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return [*errors, f"Invalid input: expected a non-empty array, received {_got(tasks)} at tasks"]
    seen = set()
    for i, task in enumerate(tasks):
        problem = _expect("object", task, f"tasks[{i}]")
        if problem is not None:
            errors.append(problem)
            continue
        _strings(errors, task, ("id",), f"tasks[{i}].", required=True)
        _strings(errors, task, ("config", "split"), f"tasks[{i}].", required=False)
        if task.get("id") in seen:
            errors.append(f"Duplicate task id {task.get('id')!r} at tasks[{i}].id")
        seen.add(task.get("id"))
    return errors


def eval_results_errors(text: bytes, tasks_of: Callable[[str], list[str] | None]) -> list[str]:
    """Why the Hub finds an ``.eval_results/*.yaml`` file invalid; ``tasks_of(dataset)``: the task ids of a benchmark's
    ``eval.yaml`` (None: no benchmark the fake Hub holds)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"Invalid YAML: {str(exc).splitlines()[0]}"]
    if not isinstance(data, list):
        return [f"Invalid input: expected array, received {_got(data)} at root"]
    errors: list[str] = []
    for i, item in enumerate(data):
        at = f"[{i}]"
        problem = _expect("object", item, at)
        if problem is not None:
            errors.append(problem)
            continue
        dataset = item.get("dataset")
        problem = _expect("object", dataset, f"{at}.dataset")
        if problem is not None:
            errors.append(problem)
        else:
            _strings(errors, dataset, ("id", "task_id"), f"{at}.dataset.", required=True)
            _strings(errors, dataset, ("revision", "config", "split"), f"{at}.dataset.", required=False)
            known = tasks_of(dataset["id"]) if isinstance(dataset.get("id"), str) else None
            task = dataset.get("task_id")
            if known is not None and isinstance(task, str) and task not in known:
                errors.append(
                    f"Invalid task_id {task!r}: not a task of {dataset['id']}'s eval.yaml at {at}.dataset.task_id"
                )
        problem = _expect("number", item.get("value"), f"{at}.value")
        if problem is not None:
            errors.append(problem)
        _strings(errors, item, ("date", "notes", "verifyToken"), f"{at}.", required=False)
        if "source" in item:
            source = item["source"]
            problem = _expect("object", source, f"{at}.source")
            if problem is not None:
                errors.append(problem)
            else:
                _strings(errors, source, ("url",), f"{at}.source.", required=True)
                _strings(errors, source, ("name", "user", "org"), f"{at}.source.", required=False)
    return errors


def validate_card(content: str) -> list[str]:
    """What the Hub's ``/api/validate-yaml`` would object to in a card's YAML (unreadable YAML, model-index)."""
    if not content.startswith("---"):
        return []
    try:
        meta = yaml.safe_load(content.split("\n---", 1)[0].removeprefix("---")) or {}
    except yaml.YAMLError as exc:
        return [f"Invalid YAML metadata: {str(exc).splitlines()[0]}"]
    errors = []
    for model in meta.get("model-index") or [] if isinstance(meta, dict) else []:
        for result in model.get("results") or []:
            if not result.get("task", {}).get("type"):
                errors.append("model-index: a result has no task.type")
            if not {"type", "name"} <= set(result.get("dataset") or {}):
                errors.append("model-index: a result's dataset needs type and name")
            if not all({"type", "value"} <= set(m) for m in result.get("metrics") or [{}]):
                errors.append("model-index: a metric needs type and value")
    return errors
