"""A model's results as the Hub's eval results: ``.eval_results/*.yaml`` files and the card's ``model-index``.

What is published comes from a results file of ``eccv-caption evaluate --model SPEC --data DATASET -o
res.json``: its numbers and its ``provenance`` (the model spec, the data and its revision, the package
version). A file without provenance (scored from ``--scores``, ``--rankings``, embeddings, or written by hand)
names no model and is refused, as is a metric or direction the benchmark does not register. Nothing here
talks to the Hub (:mod:`eccv_metric.hub.publish` does).

The files follow the hub docs' "Evaluation Results" page (and hub-docs ``eval_results.yaml``): a list with one
entry per file, ``dataset: {id, task_id, revision}``, ``value``, ``source: {url, name}``, ``notes``; one file
per task, ``.eval_results/<dataset name>_<task id>.yaml``. The ``model-index`` follows hub-docs
``modelcard.md``, written through huggingface_hub's card API (``ModelCard``, ``EvalResult``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import yaml

from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.about import PYPI_URL
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.hub.eval_tasks import DIRECTIONS
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import SPLIT
from eccv_metric.hub.eval_tasks import TASKS
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.eval_tasks import task_of
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import is_repo_id

RESULTS = "the results JSON of `eccv-caption evaluate --model SPEC --data DATASET -o res.json`"
EVALUATE = "write it with `eccv-caption evaluate --model SPEC --data DATASET_REPO -o res.json`"
FOLDER = ".eval_results"
HUB_SPECS = ("hf:", "st:", "open_clip:hf-hub:")  # model specs whose rest is a Hub model repo
# the model-index's task.type (a Hub task id) of each direction
TASK_TYPES = {
    "i2t": "image-to-text",
    "t2i": "text-to-image",
    "t2t": "sentence-similarity",
    "i2i": "image-feature-extraction",
}
RANGES = {"fraction": (0.0, 1.0), "correlation": (-1.0, 1.0), "rank": (1.0, math.inf)}


@dataclass
class Submission:
    """What one results file publishes: where (model repo, benchmark dataset) and which values (as res.json
    holds them: fractions), with the provenance recorded beside them."""

    path: str
    model_repo: str
    model_spec: str
    dataset_repo: str
    dataset_revision: str | None
    package: str
    values: list[tuple[HubTask, float]]
    left_out: list[str] = field(default_factory=list)  # metric/direction pairs that are no task of the benchmark
    setup: str = ""  # precision, similarity, model revision: the notes of each entry
    model_from_spec: bool = False

    @property
    def version(self) -> str:
        return self.package.removeprefix(DISTRIBUTION).strip()

    @property
    def source(self) -> dict[str, str]:
        return {"url": f"{PYPI_URL}{self.version}/" if self.version else PYPI_URL, "name": self.package}


def read_submission(path: str | Path, model_repo: str | None = None, dataset_repo: str | None = None) -> Submission:
    """Check a results file and say what it publishes; every refusal is one line naming the file or keyword."""
    path = str(path)
    raw = require_object(read_json(path, RESULTS), path, RESULTS)
    provenance = raw.get("provenance")
    if provenance is None:
        raise EvaluationError(
            f"{path} holds no provenance (results scored from --scores, --rankings or embeddings, or written by "
            f"hand, name no model): push-results publishes a model's results; {EVALUATE}"
        )
    spec = provenance.get("model") if isinstance(provenance, dict) else None
    if not isinstance(spec, str) or not spec.strip():
        raise EvaluationError(f"{path}: its provenance names no model (no 'model' spec); {EVALUATE}")
    package = provenance.get("package")
    if not isinstance(package, str) or not package.startswith(DISTRIBUTION):
        raise EvaluationError(f"{path}: its provenance names no {DISTRIBUTION} version ('package'); {EVALUATE}")
    dataset, revision = _dataset(path, provenance, dataset_repo)
    repo, from_spec = _model_repo(spec, model_repo)
    values, left_out = _values(path, raw)
    return Submission(path, repo, spec, dataset, revision, package, values, left_out, _setup(provenance), from_spec)


def _dataset(path: str, provenance: dict, given: str | None) -> tuple[str, str | None]:
    """The benchmark dataset: the Hub repo the numbers were scored on (with its revision), or ``given`` for a
    local build; a Hub repo other than the one scored is refused."""
    data, revision = provenance.get("data"), provenance.get("data_revision")
    on_hub = isinstance(revision, str) and is_repo_id(data)  # the model path records a revision for Hub data only
    if given is not None:
        check_repo_id(given, "dataset_repo", "you/eccv-caption")
        if on_hub and given != data:
            raise EvaluationError(
                f"{path} was scored on the Hub dataset {data}, not dataset_repo= {given}: drop dataset_repo= "
                f"(or evaluate on {given})"
            )
        return given, revision if on_hub else None
    if not on_hub:
        raise EvaluationError(
            f"{path} was scored on the local folder {data!r}: give dataset_repo=, the Hub dataset repo that "
            "build was pushed to (its eval.yaml registers the tasks)"
        )
    return data, revision  # type: ignore[return-value]


def suggested_repo(spec: str) -> str | None:
    """The Hub model repo a spec loads (``hf:ORG/MODEL``, ``st:ORG/MODEL``, ``open_clip:hf-hub:ORG/MODEL``)."""
    for prefix in HUB_SPECS:
        rest = spec.removeprefix(prefix)
        if spec.startswith(prefix) and is_repo_id(rest):
            return rest
    return None


def _model_repo(spec: str, given: str | None) -> tuple[str, bool]:
    if given is not None:
        check_repo_id(given, "model_repo", "you/your-model")
        return given, False
    suggested = suggested_repo(spec)
    if suggested is None:
        raise EvaluationError(
            f"the results' model {spec!r} names no Hub model repo: give model_repo= ORG/MODEL, the repo the "
            "results are published to"
        )
    return suggested, True


def _values(path: str, raw: dict) -> tuple[list[tuple[HubTask, float]], list[str]]:
    """(task, value) of every metric and direction that is a task; the others, named; bad values refused."""
    values, left_out = [], []
    for metric, by_dir in raw.items():
        if metric == "provenance":
            continue
        try:
            bench, kind = metric_info(metric)
        except EvaluationError:
            raise EvaluationError(
                f"{path}: {metric!r} is not a metric the benchmark registers (`eccv-caption benchmarks` lists "
                f"them); {EVALUATE}"
            ) from None
        by_dir = require_object(by_dir, path, f"{metric} to map directions to values")
        for direction, value in by_dir.items():
            if direction not in bench.directions:
                raise EvaluationError(
                    f"{path}: {metric} has no direction {direction!r} (it has {', '.join(bench.directions)})"
                )
            low, high = RANGES[kind.scale]
            if type(value) not in (int, float) or not low <= value <= high:
                raise EvaluationError(
                    f"{path}: {metric}/{direction} = {value!r:.30} is not a {kind.scale} in [{low:g}, {high:g}] "
                    "(results files hold fractions, as evaluate -o writes them)"
                )
            task = task_of(metric, direction)
            if task is None:
                left_out.append(f"{metric}/{direction}")
            else:
                values.append((task, float(value)))
    values.sort(key=lambda item: TASKS.index(item[0]))  # the order of eval.yaml
    if not values:
        raise EvaluationError(
            f"{path} holds none of the benchmark's tasks (headline metrics such as eccv_map_at_r, eccv_r1, "
            "coco_5k_r1, cxc_r1 in a direction): evaluate with --benchmarks eccv_caption or --metrics eccv_map_at_r "
            "eccv_rprecision eccv_r1"
        )
    return values, left_out


def _setup(provenance: dict) -> str:
    identity = provenance.get("identity") if isinstance(provenance.get("identity"), dict) else {}
    parts = [f"model {provenance['model']}"]
    if isinstance(identity.get("revision"), str):
        parts.append(f"revision {identity['revision'][:12]}")
    parts += [str(provenance[k]) for k in ("precision",) if isinstance(provenance.get(k), str)]
    if isinstance(provenance.get("similarity"), str):
        parts.append(f"{provenance['similarity']} similarity")
    return ", ".join(parts)


def file_name(sub: Submission, task: HubTask) -> str:
    return f"{FOLDER}/{sub.dataset_repo.split('/')[1]}_{task.id}.yaml"


def entry(sub: Submission, task: HubTask, value: float) -> dict:
    """One entry of the Hub's eval-results format (the value in the task's unit)."""
    dataset = {"id": sub.dataset_repo, "task_id": task.id}
    if sub.dataset_revision:
        dataset["revision"] = sub.dataset_revision
    return {
        "dataset": dataset,
        "value": shown(task, value),
        "source": sub.source,
        "notes": f"{task.title}, {task.unit}; {sub.setup}",
    }


def eval_files(sub: Submission, tasks: set[str] | None = None) -> dict[str, str]:
    """``{path in the model repo: YAML text}``, one file per task (``tasks``: only these task ids)."""
    return {
        file_name(sub, task): yaml.safe_dump([entry(sub, task, value)], sort_keys=False, allow_unicode=True)
        for task, value in sub.values
        if tasks is None or task.id in tasks
    }


def model_index(sub: Submission, tasks: set[str] | None = None) -> list:
    """The ``EvalResult`` of each task (huggingface_hub's model-index form), values as in the eval results."""
    from huggingface_hub import EvalResult

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
            source_name=sub.source["name"],
            source_url=sub.source["url"],
        )
        for task, value in sub.values
        if tasks is None or task.id in tasks
    ]


def _key(result: object) -> tuple:
    """What makes two model-index results the same result: task, dataset, config, split and metric."""
    names = ("task_type", "dataset_type", "dataset_config", "dataset_split", "metric_type")
    return tuple(getattr(result, name, None) for name in names)


def updated_card(text: str | None, sub: Submission, tasks: set[str] | None = None) -> str:
    """The model card with its ``model-index`` holding these results (a result of the same task, dataset,
    config, split and metric is replaced, others are kept), through huggingface_hub's ``ModelCard``: the other
    metadata keep their values and order, the text below the YAML is kept as it is (YAML comments are not)."""
    from huggingface_hub import ModelCard

    text = text or ""
    if not text.lstrip().startswith("---"):  # no metadata block yet: an empty one above the text as it is
        text = "---\n{}\n---\n" + text
    try:
        card = ModelCard(text)
    except ValueError as exc:
        raise EvaluationError(
            f"the model card (README.md) of {sub.model_repo} cannot be read by huggingface_hub ({exc}): fix its "
            "YAML, or drop model_index= to publish the eval results alone"
        ) from None
    results = list(card.data.eval_results or [])
    for new in model_index(sub, tasks):
        same = next((i for i, old in enumerate(results) if _key(old) == _key(new)), None)
        if same is None:
            results.append(new)
        else:
            results[same] = new
    card.data.eval_results = results
    card.data.model_name = card.data.model_name or sub.model_repo.split("/")[1]
    return str(card)
