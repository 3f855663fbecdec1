"""What a model published for the benchmark, read back from the Hub: its ``.eval_results`` entries and details.

A model repo's ``.eval_results/*.yaml`` files (at main, a pull request ``refs/pr/<n>`` or any revision) are
parsed as the Hub parses them (a file it cannot parse is skipped); the entries for one benchmark dataset and a
task its ``eval.yaml`` lists are kept. Each value is checked against its task's range (percent in [0, 100],
Spearman's rho in [-1, 1], finite): one that is not is left out with a note, never shown as a number, as every
other reader of results here does. An entry whose ``source.url`` is a details commit
(:func:`eccv_metric.hub.details.parse_tree_url`) leads to the per-query values behind it, read back as ``compare``
reads ``--per-query`` files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub import details as det
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import read_back
from eccv_metric.hub.eval_tasks import value_problem

Results = dict[str, dict[str, float]]


@dataclass
class Published:
    """One model's published numbers for a benchmark (fractions, as results files hold them) and where their
    details are."""

    model: str
    revision: str | None = None  # None: main
    results: Results = field(default_factory=dict)
    details: dict[str, tuple[str, str]] = field(default_factory=dict)  # task id -> (details repo, commit)
    files: dict[str, str] = field(default_factory=dict)  # task id -> the .eval_results file it came from
    revisions: dict[str, str | None] = field(default_factory=dict)  # task id -> the benchmark's dataset.revision
    values: dict[str, float] = field(default_factory=dict)  # task id -> the value as published (its task's unit)

    def details_commit(self) -> tuple[str, str] | None:
        """The one details commit behind every number (None: none, or numbers from several commits)."""
        commits = set(self.details.values())
        return commits.pop() if len(commits) == 1 and len(self.details) == len(self.files) else None


def read_published(
    api: object, model: str, revision: str | None, dataset: str, tasks: dict[str, HubTask], log: Callable[[str], None]
) -> Published:
    """A model's entries for ``dataset`` at ``revision`` (see the module docstring); bad values noted and left out."""
    info = api.model_info(model, revision=revision)  # type: ignore[attr-defined]
    names = sorted(s.rfilename for s in info.siblings or [] if s.rfilename.startswith(f"{FOLDER}/"))
    out = Published(model, revision)
    shown = model + (f"@{revision}" if revision else "")
    for file in (n for n in names if n.endswith((".yaml", ".yml"))):
        path = api.hf_hub_download(model, file, revision=revision or info.sha)  # type: ignore[attr-defined]
        with open(path, encoding="utf-8") as fin:
            try:
                items = yaml.safe_load(fin)
            except yaml.YAMLError:
                continue  # the Hub skips a file it cannot parse, and so does this
        for item in items if isinstance(items, list) else []:
            data = item.get("data", item) if isinstance(item, dict) else {}
            where = data.get("dataset") if isinstance(data.get("dataset"), dict) else {}
            task = tasks.get(where.get("task_id")) if where.get("id") == dataset else None
            if task is None:
                continue
            value = data.get("value")
            problem = value_problem(task, value)
            if problem is not None:
                log(f"note: left out {shown}'s {task.id} from {file}: {problem}")
                continue
            out.results.setdefault(task.metric, {})[task.direction] = read_back(task, value)  # type: ignore[arg-type]
            out.files[task.id] = file
            out.revisions[task.id] = where.get("revision") if isinstance(where.get("revision"), str) else None
            out.values[task.id] = float(value)  # type: ignore[arg-type]
            src = data.get("source") if isinstance(data.get("source"), dict) else {}
            commit = det.parse_tree_url(src.get("url"))
            if commit is not None:
                out.details[task.id] = commit
    return out


def read_details(api: object, repo: str, sha: str) -> tuple[dict, dict]:
    """(per-query values, ``results.json``) of a details commit."""
    where = f"the details {repo}@{sha[:12]}"
    info = api.dataset_info(repo, revision=sha)  # type: ignore[attr-defined]
    names = {s.rfilename for s in info.siblings or []}
    if det.RESULTS_JSON not in names:
        raise EvaluationError(f"{where} hold no {det.RESULTS_JSON}: not a details repo push-results wrote")

    def fetch(name: str) -> bytes:
        path = api.hf_hub_download(repo, name, repo_type="dataset", revision=sha)  # type: ignore[attr-defined]
        with open(path, "rb") as fin:
            return fin.read()

    summary = det.read_results_json(fetch(det.RESULTS_JSON), where)
    parquet = {name: fetch(det.PARQUET.format(config=name)) for name in summary["configs"]
               if det.PARQUET.format(config=name) in names}  # fmt: skip
    return det.per_query_from(summary, parquet, where), summary
