"""Send a :class:`~eccv_metric.hub.submission.Submission` to the Hub: its details, then its numbers.

Two repos, one commit each: the details dataset repo (:mod:`eccv_metric.hub.details`: the per-query values,
``results.json``, a card) and the model repo (:mod:`eccv_metric.hub.eval_results`: one ``.eval_results`` file per
task whose ``source.url`` is the details commit; ``with_model_index``: the card's ``model-index`` too). On the model
repo a pull request by default (the hub docs' community results), kept current: a rerun adds a commit to your open
one (:mod:`eccv_metric.hub.targets`); ``direct=True`` commits to main. The details repo is committed to directly
when it is yours, through your pull request otherwise. ``details=False`` publishes the numbers alone, their source
the project's repository.

Nothing half-written: every read and check the Hub allows comes first (:mod:`eccv_metric.hub.plan`: rights, targets,
the benchmark's tasks and allow-list, every file made and checked), then the details commit and the model commit.
``dry_run`` asks the Hub the same and prints those two commits (each file added, replaced or deleted, the tasks
``eval.yaml`` drops, the allow-list note, the pull request a commit goes to), sending nothing. A commit deletes only
this package's own files (:func:`~eccv_metric.hub.eval_results.stale`). Every failure is one line.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub import details as det
from eccv_metric.hub.eval_results import describe
from eccv_metric.hub.eval_results import model_index
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.plan import AGAIN
from eccv_metric.hub.plan import DOCS
from eccv_metric.hub.plan import PLACEHOLDER
from eccv_metric.hub.plan import Plan
from eccv_metric.hub.plan import make_plan
from eccv_metric.hub.plan import titles
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure
from eccv_metric.hub.submission import Submission
from eccv_metric.hub.targets import Target
from eccv_metric.hub.targets import commit

DETAILS_COMMIT = "<the details commit>"  # what the dry run shows where the details commit is not known yet


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
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    what = f"push-results to model {sub.model_repo}"
    token = token or get_token()
    if not token:
        raise EvaluationError(
            f"{what}: no Hugging Face token; log in with `hf auth login` or set HF_TOKEN (a token with write "
            f"access; a dry run asks the Hub what the push would do), then {AGAIN}"
        )
    try:
        api = HfApi(token=token)
        plan = make_plan(api, sub, direct, with_model_index, details_repo, details, log)
        return _dry_run(plan, log) if dry_run else _send(api, plan, log)
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


def listing(target: Target, changes: dict[str, str], sizes: dict[str, int]) -> list[str]:
    """A commit as the dry run prints it: ``would <where>, one commit: N added, ...`` then a line per file
    (``  add PATH``, ``  replace PATH``, ``  delete PATH``); no commit at all when nothing changes."""
    if not changes:
        return [f"would change nothing on {target.label}: its files are already these (no commit)"]
    words = {"add": "added", "replace": "replaced", "delete": "deleted"}
    counts = ", ".join(f"{list(changes.values()).count(how)} {word}" for how, word in words.items()
                       if how in changes.values())  # fmt: skip
    lines = [f"would {target.where()}, one commit: {counts}"]
    for path, how in changes.items():
        sized = path.endswith(".parquet") or path.startswith(f"{det.EVIDENCE}/")  # data, not text shown below
        size = f" ({sizes[path]:,} bytes)" if sized and path in sizes else ""
        lines.append(f"  {how} {path}{size}")
    return lines


def _dry_run(plan: Plan, log: Callable[[str], None]) -> dict[str, str]:
    from huggingface_hub import constants

    sub = plan.sub
    if plan.details is not None:
        changes = plan.details_changes()
        kept = f" and the evidence ({sub.evidence.bytes:,} bytes)" if sub.evidence is not None else ""
        for line in listing(plan.details, changes, plan.details_sizes()):
            log(line.replace(" one commit:", f" one commit of the per-query values behind the numbers{kept}:", 1))
        for path in changes:
            if path in plan.details_files and not path.endswith(".parquet"):
                log(f"--- {path}\n{plan.details_files[path].decode().rstrip()}")
    url = plan.details_url(constants.ENDPOINT)
    placeholder = url is None and plan.details is not None  # the details commit is made first: its id known then
    files = {path: text.replace(PLACEHOLDER, DETAILS_COMMIT) for path, text in plan.model_files(url).items()}
    if placeholder:
        url = det.tree_url(constants.ENDPOINT, plan.details.repo, DETAILS_COMMIT)  # type: ignore[union-attr]
    changes = _model_changes(plan, files, placeholder)
    origin = f" (from the results' model {sub.public_spec})" if sub.model_from_spec else ""
    for k, line in enumerate(listing(plan.model, changes, {})):
        log(line + (origin if k == 0 else ""))
    for path in changes:
        if path == "README.md":
            log("--- README.md: its YAML's model-index holds these results, the rest of the card as it is")
            log(_model_index_yaml(sub, url).rstrip())
        elif changes[path] != "delete":
            log(f"--- {path}\n{files[path].rstrip()}")
    return {path: text for path, text in files.items() if path != "README.md"}


def _model_changes(plan: Plan, files: dict[str, str], placeholder: bool) -> dict[str, str]:
    """The model commit's changes; with the details commit still to be made, every file pointing at it is new
    content (added, or replacing what is there)."""
    if not placeholder:
        return plan.changes(plan.model, {p: t.encode() for p, t in files.items()}, plan.deleted)
    out = {path: "replace" if path in plan.model.blobs else "add" for path in files}
    return out | dict.fromkeys(plan.deleted, "delete")


def _send(api: object, plan: Plan, log: Callable[[str], None]) -> dict[str, str]:
    from huggingface_hub import CommitOperationAdd
    from huggingface_hub import CommitOperationDelete
    from huggingface_hub import constants

    sub = plan.sub
    model_title, details_title = titles(sub)
    url = None
    if plan.details is not None:
        count = len(plan.details_files) + len(plan.evidence)
        kept = f" and the evidence ({sub.evidence.bytes:,} bytes)" if sub.evidence is not None else ""
        log(f"{plan.details.where()}: {count} files (the per-query values behind the numbers{kept})")
        oid, line = commit(
            api,
            plan.details,
            [CommitOperationAdd(path_in_repo=p, path_or_fileobj=data) for p, data in plan.details_files.items()]
            + [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local)) for p, local in plan.evidence.items()],
            details_title,
            f"Per-query details of {describe(sub)} on {sub.dataset_repo}.",
        )
        log(line)
        url = plan.details_url(constants.ENDPOINT, oid)
    files = plan.model_files(url)
    deleted = f", {len(plan.deleted)} deleted ({', '.join(plan.deleted)}: tasks eval.yaml no longer lists)"
    log(f"{plan.model.where()}: {len(files)} files" + (deleted if plan.deleted else ""))
    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=text.encode()) for p, text in files.items()]
    ops += [CommitOperationDelete(path_in_repo=p) for p in plan.deleted]
    try:
        log(commit(api, plan.model, ops, model_title, _description(sub, files, url))[1])
    except Exception as exc:
        if plan.details is None or not from_the_hub(exc):
            raise
        again = f"{AGAIN} (the details commit {url} stays and is reused)"
        raise EvaluationError(hub_failure(exc, f"push-results to model {sub.model_repo}", again,
                                          refused=_refused(sub, plan.model.direct))) from None  # fmt: skip
    return {path: text for path, text in files.items() if path != "README.md"}


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
