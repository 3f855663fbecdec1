"""The Hub's leaderboard of the benchmark, read back: ``eccv-caption leaderboard --from-hub DATASET_REPO``, and two
published models' details for ``compare --from-hub``.

The hub docs' "Accessing Benchmark Leaderboard Data" page: ``GET /api/datasets/{id}/leaderboard`` (huggingface_hub's
``HfApi.get_dataset_leaderboard``) ranks the models with results for the benchmark, one entry each with the file
its score came from and, for a result still in an open pull request, that pull request's number. It is read as
huggingface_hub reads it, with its one documented parameter (``base_model=false``: fine-tuned models too) and no
other: neither the page nor huggingface_hub names a way to ask for one task's leaderboard when ``eval.yaml`` lists
several, so which task the answer ranks is the Hub's choice and a model absent from it (one that published none of
that task) is not found here; that is said in the summary line. Each model found is then read for every task (at
``refs/pr/<n>`` for a pull request's entry) by :mod:`eccv_metric.hub.published`: invalid files, values out of range,
entries that disagree and borrowed details are notes, never numbers. Then each row's entries are verified
(:func:`~eccv_metric.hub.verify_hub.verify_published`: the library's verify over each details commit's evidence, its
outcome kept) and the row marked by what its numbers rest on (:mod:`eccv_metric.hub.trust`); a task's entry
recomputed equal is the one shown where its entries disagree. A model whose files cannot be read is skipped with a
note; a dataset the Hub keeps no leaderboard for is one line.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError
from eccv_metric.evidence.truth import build_resources
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.published import Published
from eccv_metric.hub.published import read_details
from eccv_metric.hub.published import read_published
from eccv_metric.hub.repos import briefly
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import hub_call
from eccv_metric.hub.repos import hub_failure
from eccv_metric.hub.repos import status_of
from eccv_metric.hub.trust import MARKS
from eccv_metric.hub.trust import Trust
from eccv_metric.hub.trust import mark_of
from eccv_metric.hub.trust import share
from eccv_metric.hub.trust import trust_of
from eccv_metric.hub.trust import unverified
from eccv_metric.hub.verify_hub import pinned
from eccv_metric.hub.verify_hub import verify_published

AGAIN = "run the leaderboard again"


def _api(token: str | None) -> object:
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    return HfApi(token=token or get_token())


@dataclass
class Row:
    """One model's row of the Hub's leaderboard: what it published, and what that rests on
    (:mod:`~eccv_metric.hub.trust`)."""

    published: Published
    trust: Trust


def hub_board(
    dataset_repo: str,
    taken: Iterable[str] = (),
    token: str | None = None,
    log: Callable[[str], None] = print,
    verify: bool = True,
) -> dict[str, Row]:
    """``{row name: Row}`` of every model on the Hub's leaderboards of ``dataset_repo`` (every task); a pull
    request's row is ``<model> (PR #<n>)``, a name in ``taken`` gets `` (Hub)``. ``verify``: every entry recomputed
    from its evidence (:func:`~eccv_metric.hub.verify_hub.verify_published`, each details commit's recomputation
    kept: a second leaderboard downloads and scores nothing again), each row marked; False: nothing downloaded,
    rows with details of their own marked ``not checked``."""
    check_repo_id(dataset_repo, "from_hub", "you/eccv-caption")
    what = f"leaderboard --from-hub {dataset_repo}"
    api = _api(token)
    tasks = hub_call(what, lambda: _tasks(api, dataset_repo, what, AGAIN), AGAIN)
    entries = hub_call(what, lambda: _entries(api, dataset_repo, what), AGAIN)
    names = {name.casefold() for name in taken}
    out: dict[str, Row] = {}
    for model, pr in dict.fromkeys(entries):  # type: ignore[arg-type]
        name = model + (f" (PR #{pr})" if pr else "")
        try:
            published = read_published(api, model, f"refs/pr/{pr}" if pr else None, dataset_repo, tasks, log, False)  # type: ignore[arg-type]
        except Exception as exc:  # the Hub failing, or anything else: this model is skipped, the others stand
            log(f"skipped {name}: its {FOLDER} files could not be read ({briefly(exc)})")
            continue
        trust = _verified(api, published, dataset_repo, name, log) if verify else unverified(published)
        for line in published.duplicates(name):
            log(line)
        if not published.results:
            log(f"skipped {name}: none of its values for {dataset_repo} can be shown")
            continue
        name += " (Hub)" if name.casefold() in names else ""
        names.add(name.casefold())
        out[name] = Row(published, trust)
    for line in share({name: (row.published.model, row.trust) for name, row in out.items()}):
        log(line)
    for name, row in out.items():
        for line in row.trust.notes(name):
            log(line)
    found = len(dict.fromkeys(entries))  # type: ignore[arg-type]
    log(f"{dataset_repo} on the Hub: {found} models or pull requests on its leaderboard, each read for the "
        f"{len(tasks)} tasks of its eval.yaml; {len(out)} shown")  # type: ignore[arg-type]  # fmt: skip
    if len(tasks) > 1:  # type: ignore[arg-type]
        log("note: the Hub's leaderboard API names no task (hub docs, 'Accessing Benchmark Leaderboard Data'): a model "
            "absent from the leaderboard it serves (one that published other tasks only) is not listed")  # fmt: skip
    return out


def _verified(api: object, published: Published, dataset_repo: str, name: str, log: Callable[[str], None]) -> Trust:
    """A row's entries verified (each details commit's recomputation kept), what it cost said in one line."""
    found = verify_published(api, published, dataset_repo, f"leaderboard --from-hub: verify {name}", cache=True)
    trust = trust_of(published, found.entries)
    marks = [mark_of(c) for c in found.entries]
    said = ", ".join(f"{marks.count(mark)} {mark}" for mark in reversed(MARKS) if mark in marks)
    read = f"{found.evidence_bytes:,} bytes of evidence read" if found.evidence_bytes else "no evidence read"
    kept = f", {found.cached} kept from an earlier run" if found.cached else ""
    log(f"verified {name}: {said} ({read}{kept})")
    for note in found.table.notes:
        log(f"note: {name}: {note}")
    return trust


def _entries(api: object, repo: str, what: str) -> list[tuple[str, int | None]]:
    """(model, pull request) of every entry of the Hub's leaderboard of ``repo``, in rank order."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        board = api.get_dataset_leaderboard(repo, base_model_only=False)  # type: ignore[attr-defined]
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
    return [(entry.model_id, entry.pull_request) for entry in board]


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
        raise HubReadError(hub_failure(exc, what, again)) from None
    except EntryNotFoundError:
        raise EvaluationError(
            f"{what}: {repo} has no eval.yaml (not a benchmark `eccv-caption build` wrote); give the dataset repo "
            f"the build was pushed to, then {again}"
        ) from None
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(f"{what}: the eval.yaml of {repo} is not one ({str(exc).splitlines()[0]})") from None
    return {task_id: BY_ID[task_id] for task_id in ids if task_id in BY_ID}


def board_details(board: dict[str, Row], names: list[str], token: str | None = None) -> dict[str, tuple[dict, dict]]:
    """The per-query details (values, ``results.json``) behind the numbers the rows ``names`` show, where they are
    the row's own (details of another model's run are none of the row's)."""
    api = _api(token)
    out = {}
    for name in names:
        commit = board[name].published.details_commit()
        if commit is not None:
            what = f"leaderboard --significance: the details of {name}"
            out[name] = hub_call(what, lambda c=commit: read_details(api, *c), AGAIN)  # type: ignore[misc]
    return out


def board_truth(dataset_repo: str, revision: str | None, token: str | None = None) -> Resources:
    """The ground truth of the benchmark ``dataset_repo`` at ``revision`` (the one its details were scored on; None:
    its main), every source its build holds (the positives, CxC's ratings, the FG captions) read at that revision as
    ``verify --from-hub`` pins them, the package's for the rest: what tells ``--significance`` each metric's queries
    on a benchmark other than the package's 5K split."""
    api = _api(token)
    what = f"leaderboard --significance: the ground truth of {dataset_repo}" + (f"@{revision[:12]}" if revision else "")
    source = dataset_repo if revision is None else hub_call(what, lambda: pinned(api, dataset_repo, revision), AGAIN)
    return hub_call(what, lambda: build_resources(source), AGAIN)


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
    datasets = [dataset_repo] if dataset_repo else hub_call(what, lambda: _datasets_of(api, model, revision), again)
    if len(datasets) != 1:  # type: ignore[arg-type]
        listed = ", ".join(datasets) if datasets else "none"  # type: ignore[arg-type]
        raise EvaluationError(f"{what}: give dataset_repo=, the benchmark to compare on ({model} has eval results "
                              f"with details for: {listed})")  # fmt: skip
    dataset = datasets[0]  # type: ignore[index]
    tasks = hub_call(what, lambda: _tasks(api, dataset, what, again), again)
    published = hub_call(what, lambda: read_published(api, model, revision or None, dataset, tasks, log), again)  # type: ignore[arg-type]
    borrowed = [c for c in published.details_of if not published.own(c)]  # type: ignore[attr-defined]
    if borrowed:
        repo, sha = borrowed[0]
        raise EvaluationError(
            f"{what}: its eval results for {dataset} point at details that are not its own ({repo}@{sha[:12]} names "
            f"{published.details_of[borrowed[0]]}): there are no per-query values of {model} to compare"  # type: ignore[attr-defined]
        )
    commit = published.details_commit()  # type: ignore[attr-defined]
    if commit is None:
        raise EvaluationError(
            f"{what}: its eval results for {dataset} point at no details (published with --no-details, or by "
            "hand): compare needs the per-query values; compare local --per-query files instead"
        )
    return hub_call(what, lambda: read_details(api, *commit), again)  # type: ignore[return-value]


def _datasets_of(api: object, model: str, revision: str) -> list[str]:
    """The benchmark datasets the model's eval results name with a details source."""
    from eccv_metric.hub import details as det
    from eccv_metric.hub.published import eval_results

    found: list[str] = []
    for item in eval_results(api, model, revision or None):
        data = item.get("data", item) if "error" not in item else {}
        src = data.get("source") if isinstance(data, dict) and isinstance(data.get("source"), dict) else {}
        dataset = (data.get("dataset") or {}).get("id") if isinstance(data, dict) else None
        if det.parse_tree_url(src.get("url")) and isinstance(dataset, str) and dataset not in found:
            found.append(dataset)
    return found
