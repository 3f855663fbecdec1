"""Send a :class:`~eccv_metric.hub.eval_results.Submission` to its model repo: every file in one commit.

A pull request by default (what the hub docs' "Evaluation Results" page describes for community results:
shown as "community" while open), a commit to ``main`` with ``direct=True``. Before anything is sent: a
token must be there, the model repo must exist, and the benchmark dataset's ``eval.yaml`` must register the
tasks (a task it does not list is left out, and said so). The commit's parent is the revision the card was
read at, so a card changed in between is not overwritten. Every failure is one line naming the repo and the
next step.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.eval_results import Submission
from eccv_metric.hub.eval_results import eval_files
from eccv_metric.hub.eval_results import file_name
from eccv_metric.hub.eval_results import model_index
from eccv_metric.hub.eval_results import updated_card
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure

AGAIN = "run push-results again"
DOCS = "https://huggingface.co/docs/hub/eval-results"


def publish(
    sub: Submission,
    direct: bool = False,
    with_model_index: bool = False,
    dry_run: bool = False,
    token: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, str]:
    """Write the eval results (and with ``with_model_index`` the card's ``model-index``) to the model repo in
    one commit; returns ``{path: text}`` of what was (or would be) sent."""
    where = "commit to main of" if direct else "open a pull request on"
    doing = "committing to main of" if direct else "opening a pull request on"
    origin = f" (from the results' model {sub.model_spec})" if sub.model_from_spec else ""
    if sub.left_out:
        log(f"not published (no task of the benchmark): {', '.join(sub.left_out)}")
    if dry_run:
        files = eval_files(sub)
        log(f"would {where} model {sub.model_repo}{origin}, one commit of {len(files) + with_model_index} files:")
        for path, text in files.items():
            log(f"--- {path}\n{text.rstrip()}")
        if with_model_index:
            log("--- README.md: its YAML's model-index holds these results, the rest of the card as it is")
            log(_model_index_yaml(sub).rstrip())
        return files
    from huggingface_hub import get_token

    what = f"push-results to model {sub.model_repo}"
    token = token or get_token()
    if not token:
        raise EvaluationError(
            f"{what}: no Hugging Face token; log in with `hf auth login` or set HF_TOKEN (a token with write "
            f"access), then {AGAIN}"
        )
    try:
        return _send(sub, direct, with_model_index, token, f"{doing} model {sub.model_repo}{origin}", log)
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        refused = (
            f"drop direct= to open a pull request instead, or use a token with write access to {sub.model_repo}"
            if direct
            else "log in with `hf auth login` or set HF_TOKEN to a token that may open pull requests (write access)"
        )
        raise EvaluationError(hub_failure(exc, what, AGAIN, refused=refused)) from None


def _send(
    sub: Submission,
    direct: bool,
    with_model_index: bool,
    token: str,
    doing: str,
    log: Callable[[str], None],
) -> dict[str, str]:
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    api = HfApi(token=token)
    what = f"push-results to model {sub.model_repo}"
    try:
        head = api.model_info(sub.model_repo).sha
    except RepositoryNotFoundError:
        raise EvaluationError(
            f"{what} failed: the model repo {sub.model_repo} was not found on the Hub (or is private to another "
            f"account); check model_repo= (`hf repo create {sub.model_repo}` makes it, if it is yours), then {AGAIN}"
        ) from None
    registered = _registered(api, sub, what)
    dropped = [task.id for task, _ in sub.values if task.id not in registered]
    if dropped:
        log(f"not published (the eval.yaml of {sub.dataset_repo} does not list them): {', '.join(dropped)}")
    files = eval_files(sub, registered)
    if not files:
        raise EvaluationError(
            f"{what}: the eval.yaml of {sub.dataset_repo} lists none of the results' tasks; push a build that "
            f"has their configs there (`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`)"
        )
    operations = [CommitOperationAdd(path_in_repo=path, path_or_fileobj=text.encode()) for path, text in files.items()]
    if with_model_index:
        card = updated_card(_card(api, sub.model_repo, head), sub, registered)
        operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode()))
    log(f"{doing}:")
    for op in operations:
        log(f"  {op.path_in_repo}")
    info = api.create_commit(
        sub.model_repo,
        operations,
        commit_message=f"Add {NAME} eval results ({len(files)} tasks)",
        commit_description=_description(sub, files),
        create_pr=not direct,
        parent_commit=head,
    )
    log(f"opened pull request {info.pr_url}" if info.pr_url else f"committed {info.commit_url}")
    return files


def _registered(api: object, sub: Submission, what: str) -> set[str]:
    """The task ids the benchmark dataset's ``eval.yaml`` (on its main branch) lists."""
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.errors import RepositoryNotFoundError

    push = f"`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`"
    try:
        path = api.hf_hub_download(sub.dataset_repo, "eval.yaml", repo_type="dataset")  # type: ignore[attr-defined]
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
            return set(task_ids(fin.read()))
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(
            f"{what} failed: the eval.yaml of {sub.dataset_repo} is not one ({str(exc).splitlines()[0]}); push a "
            f"build there ({push}), then {AGAIN}"
        ) from None


def _card(api: object, repo: str, revision: str | None) -> str | None:
    """The model card's text at ``revision``; None when the repo has none."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = api.hf_hub_download(repo, "README.md", revision=revision)  # type: ignore[attr-defined]
    except EntryNotFoundError:
        return None
    with open(path, encoding="utf-8") as fin:
        return fin.read()


def _model_index_yaml(sub: Submission) -> str:
    from huggingface_hub.repocard_data import eval_results_to_model_index

    name = sub.model_repo.split("/")[1]
    return yaml.safe_dump({"model-index": eval_results_to_model_index(name, model_index(sub))}, sort_keys=False)


def _description(sub: Submission, files: dict[str, str]) -> str:
    """The commit's (the pull request's) description: what, scored how, in the Hub's eval-results format."""
    rows = [f"| `{task.id}` | {shown(task, value)} |" for task, value in sub.values if file_name(sub, task) in files]
    revision = f" at revision `{sub.dataset_revision}`" if sub.dataset_revision else ""
    return "\n".join(
        [
            f"Results of `{sub.model_spec}` on the {NAME} benchmark [`{sub.dataset_repo}`]"
            f"(https://huggingface.co/datasets/{sub.dataset_repo}){revision}, as the Hub's eval results "
            f"([format]({DOCS})): one `.eval_results/*.yaml` file per task, values in percent "
            "(the CxC correlations as Spearman's rho).",
            "",
            "| task | value |",
            "|---|---|",
            *rows,
            "",
            f"Scored with {sub.package} (`eccv-caption evaluate --model {sub.model_spec}`), "
            f"published with `eccv-caption push-results`; {sub.setup}.",
        ]
    )
