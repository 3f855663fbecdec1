"""Send a :class:`~eccv_metric.hub.submission.Submission` to the Hub: its details, then its numbers.

Two repos, one commit each: the details dataset repo (:mod:`eccv_metric.hub.details`: the per-query values,
``results.json``, a card) and the model repo (:mod:`eccv_metric.hub.eval_results`: one ``.eval_results`` file per
task whose ``source.url`` is the details commit; ``with_model_index``: the card's ``model-index`` too). On the model
repo a pull request by default (the hub docs' community results), kept current: a rerun adds a commit to your open
one (:mod:`eccv_metric.hub.targets`); ``direct=True`` commits to main. The details repo is committed to directly
when it is yours, through your pull request otherwise. ``details=False`` publishes the numbers alone, their source
the project's repository.

Nothing half-written: every file is made and checked here first (each entry by the spec's rules, the card by
huggingface_hub, the Parquet written), then everything the Hub can tell before a commit is asked (a token with
write access, your rights on each repo, the model repo, the benchmark's ``eval.yaml`` and its tasks, the details
repo holding this model's details, a local build against the Hub repo's files); only then the details commit and
the model commit. Whether the benchmark is on the Hub's allow-list (its ``benchmark:official`` tag) is said
before sending: until it is, results show on the model page and on no leaderboard. Every failure is one line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub import details as det
from eccv_metric.hub.build_check import same_build
from eccv_metric.hub.eval_results import FOLDER
from eccv_metric.hub.eval_results import describe
from eccv_metric.hub.eval_results import eval_files
from eccv_metric.hub.eval_results import model_index
from eccv_metric.hub.eval_results import superseded
from eccv_metric.hub.eval_results import updated_card
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure
from eccv_metric.hub.submission import Submission
from eccv_metric.hub.targets import Target
from eccv_metric.hub.targets import account
from eccv_metric.hub.targets import check_rights
from eccv_metric.hub.targets import commit
from eccv_metric.hub.targets import find_target

AGAIN = "run push-results again"
DOCS = "https://huggingface.co/docs/hub/eval-results"
PLACEHOLDER = "0" * 40  # the details commit before it exists: the URL's shape, for the checks
OFFICIAL = "benchmark:official"


def titles(sub: Submission) -> tuple[str, str]:
    """The pull requests' titles (the model repo's, the details repo's): how a rerun finds yours."""
    return f"{NAME} eval results on {sub.dataset_repo}", f"{NAME} details of {sub.model_repo} on {sub.dataset_repo}"


def publish(
    sub: Submission,
    direct: bool = False,
    with_model_index: bool = False,
    dry_run: bool = False,
    token: str | None = None,
    log: Callable[[str], None] = print,
    details_repo: str | None = None,
    details: bool = True,
) -> dict[str, str]:
    """Publish (or with ``dry_run`` print) the submission; returns the model repo's ``{path: text}``."""
    if details and sub.per_query is None:
        raise EvaluationError(
            f"{sub.path}: push-results publishes the per-query values behind the numbers (a details repo their "
            "source points at): give per_query= (the file of `evaluate --per-query` in the same run), or details=False "
            "to publish the numbers alone"
        )
    if not details and details_repo is not None:
        raise EvaluationError("details_repo= names where the per-query values go: drop it, or drop details=False")
    if sub.left_out:
        log(f"not published (no task of the benchmark): {', '.join(sub.left_out)}")
    for note in sub.notes:
        log(f"note: {note}")
    if dry_run:
        return _dry_run(sub, direct, with_model_index, details_repo if details else None, details, log)
    from huggingface_hub import get_token

    what = f"push-results to model {sub.model_repo}"
    token = token or get_token()
    if not token:
        raise EvaluationError(
            f"{what}: no Hugging Face token; log in with `hf auth login` or set HF_TOKEN (a token with write "
            f"access), then {AGAIN}"
        )
    try:
        return _send(sub, direct, with_model_index, details_repo, details, token, log)
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        raise EvaluationError(hub_failure(exc, what, AGAIN, refused=_refused(sub, direct))) from None


def _refused(sub: Submission, direct: bool) -> str:
    """The next step when the Hub refuses the token."""
    if direct:
        return f"drop direct= to open a pull request instead, or use a token with write access to {sub.model_repo}"
    return "log in with `hf auth login` or set HF_TOKEN to a token that may open pull requests (write access)"


def _dry_run(
    sub: Submission,
    direct: bool,
    with_model_index: bool,
    details_repo: str | None,
    details: bool,
    log: Callable[[str], None],
) -> dict[str, str]:
    from huggingface_hub import constants

    repo = details_repo or det.default_repo("YOUR_ACCOUNT", sub.model_repo)
    url = det.tree_url(constants.ENDPOINT, repo, "<the details commit>") if details else None
    files = eval_files(sub, url.replace("<the details commit>", PLACEHOLDER) if url else None)
    files = {path: text.replace(PLACEHOLDER, "<the details commit>") for path, text in files.items()}
    model = Target(sub.model_repo, "model", direct)
    if sub.local_build is not None:
        log(f"note: dataset.revision: the local build's files are checked against {sub.dataset_repo}'s when sending "
            "(the same files: its commit; other files: one line, nothing sent)")  # fmt: skip
    origin = f" (from the results' model {sub.public_spec})" if sub.model_from_spec else ""
    log(f"would {model.where(True)}{origin}, one commit of {len(files) + with_model_index} files:")
    for path, text in files.items():
        log(f"--- {path}\n{text.rstrip()}")
    if with_model_index:
        log("--- README.md: its YAML's model-index holds these results, the rest of the card as it is")
        log(_model_index_yaml(sub, url).rstrip())
    if details:
        shown_repo = repo if details_repo else f"{repo} (YOUR_ACCOUNT: the token's account; --details-repo names it)"
        made = det.with_repo(det.details_files(sub), repo)
        kept = det.evidence_files(sub)
        log(f"would commit the details to dataset {shown_repo}, one commit of {len(made) + len(kept)} files:")
        for path, data in made.items():
            if path.endswith(".parquet"):
                log(f"--- {path} ({len(data):,} bytes: query_id, value)")
            else:
                log(f"--- {path}\n{data.decode().rstrip()}")
        for path, local in kept.items():
            log(f"--- {path} ({local.stat().st_size:,} bytes: the evidence)")
    return files


def _send(
    sub: Submission,
    direct: bool,
    with_model_index: bool,
    details_repo: str | None,
    details: bool,
    token: str,
    log: Callable[[str], None],
) -> dict[str, str]:
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub import CommitOperationDelete
    from huggingface_hub import HfApi
    from huggingface_hub import constants

    api = HfApi(token=token)
    what = f"push-results to model {sub.model_repo}"
    user = account(api)
    model_title, details_title = titles(sub)
    model = find_target(api, sub.model_repo, "model", direct, model_title, user)
    if not model.exists:
        raise EvaluationError(
            f"{what} failed: the model repo {sub.model_repo} was not found on the Hub (or is private to another "
            f"account); check model_repo= (`hf repo create {sub.model_repo}` makes it, if it is yours), then {AGAIN}"
        )
    check_rights(model, user, "drop direct= to open a pull request instead", what)
    registered = _benchmark(api, sub, what, log)
    dropped = [task.id for task, _ in sub.values if task.id not in registered]
    if dropped:
        log(f"not published (the eval.yaml of {sub.dataset_repo} does not list them): {', '.join(dropped)}")
    target = None
    if details:
        repo = details_repo or det.default_repo(user.name, sub.model_repo)
        target = find_target(api, repo, "dataset", user.may_write(repo), details_title, user)
        check_rights(target, user, "", f"push-results details to dataset {repo}")
        _check_details_repo(api, target, sub, what)
    url = det.tree_url(constants.ENDPOINT, target.repo, PLACEHOLDER) if target else None
    files = eval_files(sub, url, registered)  # every entry checked before anything is sent
    if not files:
        raise EvaluationError(
            f"{what}: the eval.yaml of {sub.dataset_repo} lists none of the results' tasks; push a build that "
            f"has their configs there (`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`)"
        )
    card_text = _card(api, model) if with_model_index else None
    card = updated_card(card_text, sub, url, registered) if with_model_index else None
    old = superseded(_eval_files_at(api, model, set(files)), sub, set(files))
    made = det.with_repo(det.details_files(sub), target.repo) if target else {}
    kept = det.evidence_files(sub) if target else {}
    if target is not None:
        what_kept = f" and the evidence ({sub.evidence.bytes:,} bytes)" if sub.evidence is not None else ""
        log(f"{target.where()}: {len(made) + len(kept)} files (the per-query values behind the numbers{what_kept})")
        oid, line = commit(
            api,
            target,
            [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in made.items()]
            + [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local)) for p, local in kept.items()],
            details_title,
            f"Per-query details of {describe(sub)} on {sub.dataset_repo}.",
        )
        log(line)
        url = det.tree_url(constants.ENDPOINT, target.repo, oid)
        files = eval_files(sub, url, registered)
        if with_model_index:
            card = updated_card(card_text, sub, url, registered)
    log(f"{model.where()}: {len(files) + bool(card)} files" + (f", {len(old)} replaced" if old else ""))
    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=text.encode()) for p, text in files.items()]
    ops += [CommitOperationDelete(path_in_repo=p) for p in old]
    if card is not None:
        ops.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode()))
    try:
        log(commit(api, model, ops, model_title, _description(sub, files, url))[1])
    except Exception as exc:
        if target is None or not from_the_hub(exc):
            raise
        again = f"{AGAIN} (the details commit {url} stays and is reused)"
        raise EvaluationError(hub_failure(exc, what, again, refused=_refused(sub, direct))) from None
    return files


def _benchmark(api: object, sub: Submission, what: str, log: Callable[[str], None]) -> set[str]:
    """The task ids the benchmark dataset's ``eval.yaml`` lists; the allow-list note; a local build checked
    against the repo's files (its revision published when they are the same)."""
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.errors import RepositoryNotFoundError

    push = f"`eccv-caption push --dataset-dir FOLDER --dataset-repo {sub.dataset_repo}`"
    try:
        info = api.dataset_info(sub.dataset_repo, files_metadata=sub.local_build is not None)  # type: ignore[attr-defined]
        path = api.hf_hub_download(sub.dataset_repo, "eval.yaml", repo_type="dataset", revision=info.sha)  # type: ignore[attr-defined]
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
            registered = set(task_ids(fin.read()))
    except (ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(
            f"{what} failed: the eval.yaml of {sub.dataset_repo} is not one ({str(exc).splitlines()[0]}); push a "
            f"build there ({push}), then {AGAIN}"
        ) from None
    if OFFICIAL not in (info.tags or []):
        log(
            f"note: {sub.dataset_repo} is not on the Hub's benchmark allow-list (no {OFFICIAL} tag): the results "
            f"show on the model page and on no leaderboard until the Hub lists it ({DOCS}#registering-a-benchmark)"
        )
    if sub.local_build is not None:
        sub.dataset_revision = same_build(info, sub, push, log)
    return registered


def _check_details_repo(api: object, target: Target, sub: Submission, what: str) -> None:
    """A details repo holding another model's or another benchmark's details, or files that are no details at
    all (a dataset, the benchmark itself), is not overwritten; an empty repo (the Hub's ``.gitattributes``) is
    taken."""
    if det.RESULTS_JSON not in target.files:
        held = sorted(name for name in target.files if name != ".gitattributes")
        if held:
            shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
            raise EvaluationError(
                f"{what}: the details repo {target.repo} holds files that are no details ({shown}; no "
                f"{det.RESULTS_JSON}): give details_repo= a new or empty repo, then {AGAIN}"
            )
        return
    revision = target.revision or target.head
    path = api.hf_hub_download(target.repo, det.RESULTS_JSON, repo_type="dataset", revision=revision)  # type: ignore[attr-defined]
    with open(path, encoding="utf-8") as fin:
        try:
            held = json.load(fin)
        except ValueError:
            held = {}
    dataset = (held.get("dataset") or {}).get("id") if isinstance(held, dict) else None
    model = held.get("model_repo") if isinstance(held, dict) else None
    if (model, dataset) != (sub.model_repo, sub.dataset_repo):
        raise EvaluationError(
            f"{what}: the details repo {target.repo} holds the details of {model} on {dataset}, not of "
            f"{sub.model_repo} on {sub.dataset_repo}: give details_repo= another repo, then {AGAIN}"
        )


def _eval_files_at(api: object, target: Target, new: set[str]) -> dict[str, bytes]:
    """The ``.eval_results`` files at the target's revision that this commit does not write (to find those it
    replaces)."""
    out = {}
    for name in target.files:
        if name.startswith(f"{FOLDER}/") and name not in new and name.endswith((".yaml", ".yml")):
            path = api.hf_hub_download(target.repo, name, revision=target.revision or target.head)  # type: ignore[attr-defined]
            with open(path, "rb") as fin:
                out[name] = fin.read()
    return out


def _card(api: object, target: Target) -> str | None:
    """The model card's text at the target's revision; None when the repo has none."""
    if "README.md" not in target.files:
        return None
    path = api.hf_hub_download(target.repo, "README.md", revision=target.revision or target.head)  # type: ignore[attr-defined]
    with open(path, encoding="utf-8") as fin:
        return fin.read()


def _model_index_yaml(sub: Submission, url: str | None) -> str:
    from huggingface_hub.repocard_data import eval_results_to_model_index

    name = sub.model_repo.split("/")[1]
    return yaml.safe_dump({"model-index": eval_results_to_model_index(name, model_index(sub, url))}, sort_keys=False)


def _description(sub: Submission, files: dict[str, str], url: str | None) -> str:
    """The commit's (the pull request's) description: what, scored how, where its evidence is."""
    names = set(files)
    rows = [
        f"| `{task.id}` | {shown(task, value)} |"
        for task, value in sub.values
        if any(n.endswith(f"--{task.id}.yaml") for n in names)
    ]
    revision = f" at revision `{sub.dataset_revision}`" if sub.dataset_revision else ""
    evidence = f"Per-query values behind every number: [{url}]({url})." if url else "Numbers alone (no details)."
    return "\n".join(
        [
            f"Results of `{sub.public_spec}` on the {NAME} benchmark [`{sub.dataset_repo}`]"
            f"(https://huggingface.co/datasets/{sub.dataset_repo}){revision}, as the Hub's eval results "
            f"([format]({DOCS})): one `.eval_results/*.yaml` file per task, values in percent "
            "(the CxC correlations as Spearman's rho).",
            "",
            "| task | value |",
            "|---|---|",
            *rows,
            "",
            f"Scored by {describe(sub)}, published with `eccv-caption push-results`; {sub.setup}. {evidence}",
        ]
    )
