"""The Hub's leaderboard of the benchmark, read back: ``eccv-caption leaderboard --from-hub DATASET_REPO``, and two
published models' details for ``compare --from-hub``.

The hub docs' "Accessing Benchmark Leaderboard Data" page: ``GET /api/datasets/{id}/leaderboard`` ranks the models
with results for the benchmark, one entry each with the file its score came from and, for a result still in an
open pull request, that pull request's number; each task of ``eval.yaml`` is its own leaderboard (the first by
default). It is asked once per task (``task_id``; ``base_model=false``: fine-tuned models too), so a model that
published any task is found, and each model's files are then read for every task (at ``refs/pr/<n>`` for a pull
request's entry) by :mod:`eccv_metric.hub.published`, values out of range left out with a note. A model whose
files cannot be read is skipped with a note; a dataset the Hub keeps no leaderboard for is one line.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.published import Published
from eccv_metric.hub.published import read_details
from eccv_metric.hub.published import read_published
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import first_line
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure
from eccv_metric.hub.repos import status_of

AGAIN = "run the leaderboard again"


def _api(token: str | None) -> object:
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    return HfApi(token=token or get_token())


def _hub_call(what: str, again: str, call: Callable[[], object]) -> object:
    """``call()`` with the Hub's failures as one line."""
    try:
        return call()
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        raise EvaluationError(hub_failure(exc, what, again, refused="log in with `hf auth login`")) from None


def hub_board(
    dataset_repo: str, taken: Iterable[str] = (), token: str | None = None, log: Callable[[str], None] = print
) -> dict[str, Published]:
    """``{row name: Published}`` of every model on the Hub's leaderboards of ``dataset_repo`` (every task); a
    pull request's row is ``<model> (PR #<n>)``, a name in ``taken`` gets `` (Hub)``."""
    check_repo_id(dataset_repo, "from_hub", "you/eccv-caption")
    what = f"leaderboard --from-hub {dataset_repo}"
    api = _api(token)
    tasks = _hub_call(what, AGAIN, lambda: _tasks(api, dataset_repo, what, AGAIN))
    entries = _hub_call(what, AGAIN, lambda: _entries(api, dataset_repo, list(tasks), what))  # type: ignore[arg-type]
    names = {name.casefold() for name in taken}
    out: dict[str, Published] = {}
    for model, pr in dict.fromkeys(entries):  # type: ignore[arg-type]
        name = model + (f" (PR #{pr})" if pr else "")
        try:
            published = read_published(api, model, f"refs/pr/{pr}" if pr else None, dataset_repo, tasks, log)  # type: ignore[arg-type]
        except Exception as exc:
            if not from_the_hub(exc):
                raise
            log(f"skipped {name}: its {FOLDER} files could not be read ({status_of(exc) or first_line(exc)})")
            continue
        if not published.results:
            log(f"skipped {name}: none of its values for {dataset_repo} can be shown")
            continue
        name += " (Hub)" if name.casefold() in names else ""
        names.add(name.casefold())
        out[name] = published
    found = len(dict.fromkeys(entries))  # type: ignore[arg-type]
    log(f"{dataset_repo} on the Hub: {found} models or pull requests on the leaderboards of its {len(tasks)} tasks, "  # type: ignore[arg-type]
        f"{len(out)} shown")  # fmt: skip
    return out


def _entries(api: object, repo: str, tasks: list[str], what: str) -> list[tuple[str, int | None]]:
    """(model, pull request) of every entry of every task's leaderboard, in rank order task after task."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import RepositoryNotFoundError
    from huggingface_hub.utils import build_hf_headers
    from huggingface_hub.utils import get_session
    from huggingface_hub.utils import hf_raise_for_status

    url = f"{api.endpoint}/api/datasets/{repo}/leaderboard"  # type: ignore[attr-defined]
    headers = build_hf_headers(token=api.token)  # type: ignore[attr-defined]
    out = []
    try:
        for task in tasks:
            answer = get_session().get(url, headers=headers, params={"base_model": False, "task_id": task})
            hf_raise_for_status(answer)
            out += [(r["modelId"], r.get("pullRequest")) for r in answer.json()]
    except RepositoryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the dataset {repo} was not found on the Hub (or is private or gated: log in with "
            f"`hf auth login`); check the repo id, then {AGAIN}"
        ) from None
    except HfHubHTTPError as exc:
        if status_of(exc) != 404:
            raise
        raise EvaluationError(
            f"{what}: the Hub keeps no leaderboard for {repo} (it keeps them for benchmarks on its allow-list, "
            "tagged benchmark:official); publish results with `eccv-caption push-results`, or rank your files "
            "with --with"
        ) from None
    return out


def _tasks(api: object, repo: str, what: str, again: str) -> dict:
    """The tasks of the dataset's ``eval.yaml`` this package knows (task id -> task); ``again``: how to retry."""
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.errors import LocalEntryNotFoundError
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        path = api.hf_hub_download(repo, "eval.yaml", repo_type="dataset")  # type: ignore[attr-defined]
        with open(path, encoding="utf-8") as fin:
            ids = task_ids(fin.read())
    except RepositoryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the dataset {repo} was not found on the Hub (or is private or gated: log in with "
            f"`hf auth login`); check the repo id, then {again}"
        ) from None
    except LocalEntryNotFoundError as exc:  # the Hub did not answer (offline) and no copy is cached: no verdict
        raise EvaluationError(hub_failure(exc, what, again)) from None
    except EntryNotFoundError:
        raise EvaluationError(
            f"{what}: {repo} has no eval.yaml (not a benchmark `eccv-caption build` wrote); give the dataset repo "
            f"the build was pushed to, then {again}"
        ) from None
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(f"{what}: the eval.yaml of {repo} is not one ({str(exc).splitlines()[0]})") from None
    return {task_id: BY_ID[task_id] for task_id in ids if task_id in BY_ID}


def board_details(
    board: dict[str, Published], names: list[str], token: str | None = None
) -> dict[str, tuple[dict, dict]]:
    """The per-query details (values, ``results.json``) of the rows ``names`` that published them."""
    api = _api(token)
    out = {}
    for name in names:
        commit = board[name].details_commit()
        if commit is not None:
            what = f"leaderboard --significance: the details of {name}"
            out[name] = _hub_call(what, AGAIN, lambda c=commit: read_details(api, *c))  # type: ignore[misc]
    return out


def model_details(
    spec: str, dataset_repo: str | None, token: str | None = None, log: Callable[[str], None] = print
) -> tuple[dict, dict]:
    """``compare --from-hub``: (per-query values, ``results.json``) behind a model's published numbers.
    ``spec``: ``ORG/MODEL`` (main) or ``ORG/MODEL@REVISION`` (``@refs/pr/1``); ``dataset_repo``: the benchmark
    (default: the only one with details among the model's results)."""
    model, _, revision = spec.partition("@")
    check_repo_id(model, "from_hub", "org/model")
    what = f"compare --from-hub {spec}"
    again = "run compare again"
    api = _api(token)
    datasets = [dataset_repo] if dataset_repo else _hub_call(what, again, lambda: _datasets_of(api, model, revision))
    if len(datasets) != 1:  # type: ignore[arg-type]
        listed = ", ".join(datasets) if datasets else "none"  # type: ignore[arg-type]
        raise EvaluationError(f"{what}: give dataset_repo=, the benchmark to compare on ({model} has eval results "
                              f"with details for: {listed})")  # fmt: skip
    dataset = datasets[0]  # type: ignore[index]
    tasks = _hub_call(what, again, lambda: _tasks(api, dataset, what, again))
    published = _hub_call(what, again, lambda: read_published(api, model, revision or None, dataset, tasks, log))  # type: ignore[arg-type]
    commit = published.details_commit()  # type: ignore[attr-defined]
    if commit is None:
        raise EvaluationError(
            f"{what}: its eval results for {dataset} point at no details (published with --no-details, or by "
            "hand): compare needs the per-query values; compare local --per-query files instead"
        )
    return _hub_call(what, again, lambda: read_details(api, *commit))  # type: ignore[return-value]


def _datasets_of(api: object, model: str, revision: str) -> list[str]:
    """The benchmark datasets the model's eval results name with a details source."""
    from eccv_metric.hub import details as det

    info = api.model_info(model, revision=revision or None)  # type: ignore[attr-defined]
    found: list[str] = []
    for s in info.siblings or []:
        if s.rfilename.startswith(f"{FOLDER}/") and s.rfilename.endswith((".yaml", ".yml")):
            path = api.hf_hub_download(model, s.rfilename, revision=revision or info.sha)  # type: ignore[attr-defined]
            with open(path, encoding="utf-8") as fin:
                try:
                    items = yaml.safe_load(fin)
                except yaml.YAMLError:
                    continue
            for item in items if isinstance(items, list) else []:
                src = item.get("source") if isinstance(item, dict) and isinstance(item.get("source"), dict) else {}
                dataset = (item.get("dataset") or {}).get("id") if isinstance(item, dict) else None
                if det.parse_tree_url(src.get("url")) and isinstance(dataset, str) and dataset not in found:
                    found.append(dataset)
    return found
