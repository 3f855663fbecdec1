"""The Hub's leaderboard of the benchmark, read back: ``eccv-caption leaderboard --from-hub DATASET_REPO``.

The hub docs' "Accessing Benchmark Leaderboard Data" page: ``GET /api/datasets/{id}/leaderboard`` (huggingface_hub's
``HfApi.get_dataset_leaderboard``, called with ``base_model_only=False``: fine-tuned models too) ranks the models
with results for the benchmark, one entry each with the file its score came from and, for a result still in an
open pull request, that pull request's number. An entry carries one task's value; a model's other tasks are in
its other ``.eval_results/*.yaml`` files, so each model's files are read (at ``refs/pr/<n>`` for a pull
request's entry), parsed as the Hub parses them, and the entries for this dataset and a task its ``eval.yaml``
lists are kept. Values go back to the results-file form (fractions) and join the paper's table like a
``--with`` file. A model whose files cannot be read is skipped with a note; a dataset the Hub keeps no
leaderboard for is one line.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable

import yaml

from eccv_metric.analysis.leaderboard import from_results
from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import read_back
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import first_line
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure
from eccv_metric.hub.repos import status_of

AGAIN = "run the leaderboard again"
Results = dict[str, dict[str, float]]


def hub_results(
    dataset_repo: str, taken: Iterable[str] = (), token: str | None = None, log: Callable[[str], None] = print
) -> dict[str, Results]:
    """``{model name: {metric: {direction: fraction}}}`` of every model on the Hub's leaderboard of
    ``dataset_repo`` that has a leaderboard column (an i2t/t2i pair); a name in ``taken`` gets `` (Hub)``."""
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    check_repo_id(dataset_repo, "from_hub", "you/eccv-caption")
    what = f"leaderboard --from-hub {dataset_repo}"
    token = token or get_token()
    api = HfApi(token=token)
    try:
        entries = _entries(api, dataset_repo, what, token)
        tasks = _tasks(api, dataset_repo, what)
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        raise EvaluationError(hub_failure(exc, what, AGAIN, refused="log in with `hf auth login`")) from None
    names = {name.casefold() for name in taken}
    out: dict[str, Results] = {}
    for model, pr in dict.fromkeys((e["model"], e["pr"]) for e in entries):
        name = model + (f" (PR #{pr})" if pr else "")
        try:
            results = _model_results(api, model, pr, dataset_repo, tasks)
        except Exception as exc:
            if not from_the_hub(exc):
                raise
            log(f"skipped {name}: its {FOLDER} files could not be read ({status_of(exc) or first_line(exc)})")
            continue
        if not from_results(results):
            log(f"skipped {name}: no metric with both i2t and t2i values among its results")
            continue
        name += " (Hub)" if name.casefold() in names else ""
        names.add(name.casefold())
        out[name] = results
    log(f"{dataset_repo} on the Hub: {len(entries)} leaderboard entries, {len(out)} models shown")
    return out


def _entries(api: object, repo: str, what: str, token: str | None) -> list[dict]:
    """The leaderboard's entries as ``{"model", "pr"}`` (huggingface_hub's call, or its HTTP call where the
    installed huggingface_hub has none)."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        if hasattr(api, "get_dataset_leaderboard"):
            rows = api.get_dataset_leaderboard(repo, base_model_only=False)
            return [{"model": r.model_id, "pr": r.pull_request} for r in rows]
        from huggingface_hub.utils import build_hf_headers
        from huggingface_hub.utils import get_session
        from huggingface_hub.utils import hf_raise_for_status

        url = f"{api.endpoint}/api/datasets/{repo}/leaderboard"  # type: ignore[attr-defined]
        answer = get_session().get(url, headers=build_hf_headers(token=token), params={"base_model": False})
        hf_raise_for_status(answer)
        return [{"model": r["modelId"], "pr": r.get("pullRequest")} for r in answer.json()]
    except RepositoryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the dataset {repo} was not found on the Hub (or is private or gated: log in with "
            f"`hf auth login`); check the repo id, then {AGAIN}"
        ) from None
    except HfHubHTTPError as exc:
        if status_of(exc) != 404:
            raise
        raise EvaluationError(
            f"{what}: the Hub keeps no leaderboard for {repo} (it keeps them for benchmarks on its allow-list "
            "that have results); publish results with `eccv-caption push-results`, or rank your files with --with"
        ) from None


def _tasks(api: object, repo: str, what: str) -> dict:
    """The tasks of the dataset's ``eval.yaml`` this package knows (task id -> task)."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = api.hf_hub_download(repo, "eval.yaml", repo_type="dataset")  # type: ignore[attr-defined]
        with open(path, encoding="utf-8") as fin:
            ids = task_ids(fin.read())
    except EntryNotFoundError:
        raise EvaluationError(
            f"{what}: {repo} has no eval.yaml (not a benchmark `eccv-caption build` wrote); give the dataset repo "
            f"the build was pushed to, then {AGAIN}"
        ) from None
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(f"{what}: the eval.yaml of {repo} is not one ({str(exc).splitlines()[0]})") from None
    return {task_id: BY_ID[task_id] for task_id in ids if task_id in BY_ID}


def _model_results(api: object, model: str, pr: int | None, dataset: str, tasks: dict) -> Results:
    """A model's values for the benchmark's tasks, from its ``.eval_results/*.yaml`` files (as fractions)."""
    revision = f"refs/pr/{pr}" if pr else None
    info = api.model_info(model, revision=revision)  # type: ignore[attr-defined]
    files = [s.rfilename for s in info.siblings or [] if s.rfilename.startswith(f"{FOLDER}/")]
    out: Results = {}
    for file in sorted(f for f in files if f.endswith((".yaml", ".yml"))):
        path = api.hf_hub_download(model, file, revision=revision)  # type: ignore[attr-defined]
        with open(path, encoding="utf-8") as fin:
            try:
                items = yaml.safe_load(fin)
            except yaml.YAMLError:
                continue  # the Hub skips a file it cannot parse, and so does this
        for item in items if isinstance(items, list) else []:
            data = item.get("data", item) if isinstance(item, dict) else {}
            where = data.get("dataset") if isinstance(data.get("dataset"), dict) else {}
            task = tasks.get(where.get("task_id")) if where.get("id") == dataset else None
            value = data.get("value")
            if task is not None and type(value) in (int, float):
                out.setdefault(task.metric, {})[task.direction] = read_back(task, value)
    return out
