"""A published run to look at: a model's evidence on the Hub as an explorer's :class:`~eccv_metric.explore.runs.Run`
(``eccv-caption explore --from-hub MODEL --dataset-repo DATASET``, the Space's published-model boxes).

The model's ``.eval_results`` entries for the benchmark are read as ``verify --from-hub`` reads them
(:mod:`eccv_metric.hub.published`); the one details commit behind its numbers (:meth:`Published.details_commit`) is
read at that commit (:mod:`eccv_metric.hub.details_fetch`: ``results.json``, the per-query Parquet files and
``evidence/``, into the Hugging Face cache), and the benchmark's ground truth at the entries' ``dataset.revision``
(:func:`~eccv_metric.hub.verify_hub.pinned_resources`). The run's rankings are its evidence's inputs, as it scored
them (:func:`~eccv_metric.explore.runs.evidence_run`); its per-query values are the published ones, checked equal
to its evidence's before a table shows them (:mod:`eccv_metric.explore.table`).

What has no rankings to show is one line, never a view: a model with no entries for the benchmark, entries with
no details (``--no-details``, or written by hand), details of another model's run or another benchmark, details
holding per-query values only (published without evidence: only its numbers can be compared), evidence in doubt
(a file missing or changed, another item order, a digest that is not the one its run recorded, a ``results.json``
edited since push-results sealed it, evidence recording another model than its details name), entries naming
another revision of the benchmark than the evidence was scored on, and the Hub's failures (no network...).
"""

from __future__ import annotations

from collections.abc import Callable

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError
from eccv_metric.evidence.load import model_problem
from eccv_metric.explore.runs import Run
from eccv_metric.explore.runs import evidence_run
from eccv_metric.hub.details_fetch import fetch_evidence
from eccv_metric.hub.details_fetch import not_its_own
from eccv_metric.hub.details_fetch import read_head
from eccv_metric.hub.details_fetch import revision_problem
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.published import Published
from eccv_metric.hub.published import read_published
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import hub_call
from eccv_metric.hub.verify_hub import pinned_resources

AGAIN = "run explore again"


def published_run(
    spec: str,
    dataset: str,
    token: str | None = None,
    what: str | None = None,
    again: str = AGAIN,
    keyword: str = "from_hub",
    log: Callable[[str], None] = print,
) -> Run:
    """The run ``spec`` (``ORG/MODEL``, or ``ORG/MODEL@REVISION``: ``@refs/pr/N``) published for ``dataset`` (see
    the module docstring), named by its repo id. ``what``: how errors name the request (default ``explore
    --from-hub SPEC``); ``again``: how to retry, after a failure of the Hub; ``keyword``: the keyword naming the model
    (its front end's words); ``log``: the notes of reading its entries (a file the Hub found invalid...)."""
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    model, _, revision = spec.partition("@")
    what = what or f"explore --from-hub {spec}"
    check_repo_id(model, keyword, "org/model")
    check_repo_id(dataset, "dataset_repo", "you/eccv-caption")
    api = HfApi(token=token or get_token())
    try:
        published = hub_call(what, lambda: read_published(api, model, revision or None, dataset, dict(BY_ID), log),
                             again)  # fmt: skip
        return _run_of(api, published, dataset, what, again)
    except HubReadError:
        raise
    except EvaluationError as exc:
        raise EvaluationError(f"{what}: {exc}") from None


def _run_of(api: object, published: Published, dataset: str, what: str, again: str) -> Run:
    """The run of the one details commit behind a model's numbers."""
    model = published.model
    if not published.entries:
        raise EvaluationError(f"{model} publishes no eval results for {dataset} (check dataset_repo=)")
    commit = published.details_commit()
    if commit is None:
        raise EvaluationError(_no_commit(published, dataset))
    head = hub_call(what, lambda: read_head(api, *commit), again)
    why = head.why or not_its_own(head, model, dataset)
    if why is not None:
        raise EvaluationError(f"{why}: no rankings of {model} to show")
    why = head.seal_problem
    if why is not None:
        raise EvaluationError(f"{why}: nothing is shown from details in doubt")
    if not head.has_evidence:
        raise EvaluationError(
            f"its details {head.where} hold per-query values only, no evidence (published without evaluate "
            "--evidence): it has no rankings to show; only its numbers can be compared (eccv-caption compare "
            "--from-hub, leaderboard --from-hub)"
        )
    entries = [e for e in published.entries if e.details == commit]
    why = revision_problem(head, dataset, entries)
    if why is not None:
        raise EvaluationError(f"{why}: its evidence does not vouch for its entries")
    fetched = hub_call(what, lambda: fetch_evidence(api, head), again)
    evidence = fetched.evidence
    if evidence is None:
        raise EvaluationError(f"{fetched.why}: nothing is shown from evidence in doubt")
    if head.recorded_digest != evidence.digest:
        raise EvaluationError(f"the evidence of {head.where} is not its run's: its evidence.json is not the one "
                              "results.json's digest records; nothing is shown from evidence in doubt")  # fmt: skip
    provenance = head.summary.get("provenance") if isinstance(head.summary.get("provenance"), dict) else {}
    why = model_problem(evidence, provenance)
    if why is not None:
        raise EvaluationError(f"{head.where}: {why}; nothing is shown from evidence in doubt")
    revision = entries[0].revision
    resources = hub_call(what, lambda: pinned_resources(api, dataset, revision, evidence), again)
    about = f"{model} on {dataset}@{str(revision)[:12]} (evidence: the details {head.where})"
    return evidence_run(evidence, model, fetched.per_query, resources, about)


def _no_commit(published: Published, dataset: str) -> str:
    """Why a model's numbers lead to no one details commit of its own."""
    commits = {e.details for e in published.entries}
    borrowed = [c for c in commits if c is not None and not published.own(c)]
    if borrowed:
        repo, sha = borrowed[0]
        return (
            f"its eval results for {dataset} point at details that are not its own ({repo}@{sha[:12]} holds the "
            f"run of {published.details_of.get(borrowed[0])}): no rankings of {published.model} to show"
        )
    if commits == {None}:
        return (
            f"its eval results for {dataset} point at no details (published with --no-details, or by hand): "
            "no rankings to show; only its numbers can be compared (eccv-caption leaderboard --from-hub)"
        )
    return (
        f"its eval results for {dataset} rest on several details commits, or entries of one task that disagree "
        "(eccv-caption verify --from-hub names them): push its run again with its evidence"
    )
