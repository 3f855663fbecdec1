"""``eccv-caption verify --from-hub MODEL --dataset-repo DATASET``: every published number of a model recomputed from
the evidence its entry points at.

For each ``.eval_results`` entry of the model for the benchmark (:mod:`eccv_metric.hub.published`, at main, a
revision or a pull request): the details commit its ``source.url`` names (``<repo>/tree/<commit>``) is fetched at
that commit (``results.json``, the per-query Parquet files, ``evidence/``: huggingface_hub's ``snapshot_download``,
into the Hugging Face cache), the benchmark's ground truth is read at the entry's ``dataset.revision`` (only the
columns the ground truth needs: ``HfFileSystem`` at ``<dataset>@<revision>``), and :func:`eccv_metric.verify`
recomputes every number with the engine. What cannot be recomputed is said per entry, never a number: an entry with
no details (``--no-details``, or written by hand), details of another model or benchmark, details holding per-query
values only (published before evidence), an entry whose revision is not the one its evidence was scored on, a
revision the benchmark does not have. The Hub's failures (no network, a missing model) are one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.evidence.check import NOT_RECOMPUTABLE
from eccv_metric.evidence.check import Check
from eccv_metric.evidence.check import Verification
from eccv_metric.evidence.check import from_data
from eccv_metric.evidence.check import run_resources
from eccv_metric.evidence.check import verify
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import EvidenceError
from eccv_metric.evidence.load import load_evidence
from eccv_metric.hub import details as det
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.published import Entry
from eccv_metric.hub.published import Published
from eccv_metric.hub.published import read_published
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure

AGAIN = "run verify again"
EVIDENCE = "evidence"


@dataclass
class Fetched:
    """One details commit, fetched: its folder, ``results.json``, per-query values and evidence (or why none)."""

    repo: str
    sha: str
    summary: dict
    per_query: dict
    evidence: Evidence | None
    why: str | None = None

    @property
    def where(self) -> str:
        return f"{self.repo}@{self.sha[:12]}"


@dataclass
class HubVerification:
    """What ``verify --from-hub`` found: the table, and where each number's evidence and ground truth were."""

    model: str
    dataset: str
    table: Verification
    sources: list[str]
    evidence: list[Evidence]
    revision: str | None = None  # the benchmark's revision the entries name (the first, if several)
    spec: str | None = None  # the model spec the details record (a Hub model's: what --reencode loads)
    entries: list[EntryCheck] = field(default_factory=list)  # each published entry's check


@dataclass(frozen=True)
class EntryCheck:
    """One published entry and its recomputation; ``evidence``: the digest of the evidence that recomputed it (its
    ``evidence.json``: the same content, the same digest; None: none was read)."""

    entry: Entry
    check: Check
    evidence: str | None = None


def verify_from_hub(
    spec: str,
    dataset: str,
    token: str | None = None,
    device: str | None = None,
    log: Callable[[str], None] = print,
) -> HubVerification:
    """Recompute every number ``spec`` (``ORG/MODEL`` or ``ORG/MODEL@REVISION``) published for ``dataset`` (see the
    module docstring)."""
    from huggingface_hub import HfApi
    from huggingface_hub import get_token

    model, _, revision = spec.partition("@")
    check_repo_id(model, "from_hub", "org/model")
    check_repo_id(dataset, "dataset_repo", "you/eccv-caption")
    what = f"verify --from-hub {spec}"
    api = HfApi(token=token or get_token())
    published = hub_call(what, lambda: read_published(api, model, revision or None, dataset, dict(BY_ID), log))
    if not published.entries:  # type: ignore[attr-defined]
        raise EvaluationError(f"{what}: {model} publishes no eval results for {dataset} (check --dataset-repo)")
    return verify_published(api, published, dataset, what, device)  # type: ignore[arg-type]


def verify_published(
    api: object, published: Published, dataset: str, what: str = "verify", device: str | None = None
) -> HubVerification:
    """Every entry of ``published`` (a model's entries for ``dataset``, as :func:`read_published` reads them: what
    a leaderboard holds per row; a task's second entry too) recomputed from its details commit, each :class:`Check`
    labelled with its task id (and its file, where the task has several entries), each entry's check and evidence
    digest in :attr:`HubVerification.entries`. A failure of the Hub while fetching one details commit is that
    commit's entries' ``not recomputable`` line."""
    model = published.model
    found: list[EntryCheck] = []
    notes: list[str] = []
    sources, kept, specs = [], [], []
    several = {task for task, entries in published.by_task().items() if len(entries) > 1}
    for commit, entries in by_commit(published).items():
        if commit is None:
            found += not_recomputable(entries, "its entry names no details commit (source.url)")
            continue
        repo, sha = commit
        try:
            fetched = hub_call(what, lambda r=repo, s=sha: fetch(api, r, s))  # type: ignore[misc]
        except EvaluationError as exc:
            found += not_recomputable(entries, str(exc))
            continue
        sources.append(fetched.where)  # type: ignore[attr-defined]
        why = fetched.why or mismatch(fetched, model, dataset, entries)  # type: ignore[attr-defined,arg-type]
        if why is not None:
            found += not_recomputable(entries, why)
            continue
        kept.append(fetched.evidence)  # type: ignore[attr-defined]
        specs.append(fetched.summary.get("model"))  # type: ignore[attr-defined]
        try:
            revision = entries[0].revision
            resources = hub_call(what, lambda r=revision, f=fetched: pinned_resources(api, dataset, r, f.evidence))  # type: ignore[misc]
        except EvaluationError as exc:
            found += not_recomputable(entries, str(exc))
            continue
        first: dict[str, Entry] = {}
        for entry in entries:
            first.setdefault(entry.task, entry)
        numbers: dict[str, dict[str, float]] = {}
        for task_id, entry in first.items():
            numbers.setdefault(BY_ID[task_id].metric, {})[BY_ID[task_id].direction] = entry.as_published
        labels = {(BY_ID[t].metric, BY_ID[t].direction): t for t in first}
        recorded = ((fetched.summary.get("provenance") or {}).get("digests") or {}).get("evidence")  # type: ignore[attr-defined]
        table = verify(numbers, fetched.evidence, per_query=fetched.per_query, resources=resources, device=device,  # type: ignore[attr-defined,arg-type]
                       digest=recorded or "(none recorded)", labels=labels, percent=True)  # fmt: skip
        checked = {check.label: check for check in table.checks}
        digest = fetched.evidence.digest  # type: ignore[attr-defined]
        for entry in entries:  # a task's second entry in the same commit: the same recomputation, its own value
            check = checked[entry.task]
            found.append(EntryCheck(entry, check if entry is first[entry.task] else check.against(entry.as_published),
                                    digest))  # fmt: skip
        notes += [n for n in table.notes if n not in notes]
    order = {task_id: k for k, task_id in enumerate(BY_ID)}
    found.sort(key=lambda c: order.get(c.entry.task, len(order)))
    checks = [replace(c.check, label=f"{c.entry.task} ({c.entry.file})") if c.entry.task in several else c.check
              for c in found]  # fmt: skip
    revision = next((e.revision for e in published.entries if e.revision), None)
    spec = next((x for x in specs if isinstance(x, str)), None)
    return HubVerification(model, dataset, Verification(checks, notes), sources, kept, revision, spec, found)


def hub_call(what: str, call: Callable[[], object]) -> object:
    """``call()`` with the Hub's failures as one line."""
    try:
        return call()
    except EvaluationError:
        raise
    except Exception as exc:
        if not from_the_hub(exc):
            raise
        raise EvaluationError(hub_failure(exc, what, AGAIN, refused="log in with `hf auth login`")) from None


def by_commit(published: Published) -> dict[tuple[str, str] | None, list[Entry]]:
    """The published entries grouped by the details commit they name (None: none)."""
    out: dict[tuple[str, str] | None, list[Entry]] = {}
    for entry in published.entries:
        out.setdefault(entry.details, []).append(entry)
    return out


def not_recomputable(entries: list[Entry], why: str) -> list[EntryCheck]:
    out = []
    for entry in entries:
        task = BY_ID[entry.task]
        check = Check(task.metric, task.direction, NOT_RECOMPUTABLE, entry.as_published, why=why, label=entry.task,
                      percent=True)  # fmt: skip
        out.append(EntryCheck(entry, check))
    return out


def fetch(api: object, repo: str, sha: str) -> Fetched:
    """A details commit's ``results.json``, per-query values and evidence (``snapshot_download`` at the commit)."""
    from huggingface_hub import snapshot_download

    where = f"the details {repo}@{sha[:12]}"
    names = {s.rfilename for s in api.dataset_info(repo, revision=sha).siblings or []}  # type: ignore[attr-defined]
    if det.RESULTS_JSON not in names:
        return Fetched(repo, sha, {}, {}, None, f"{where} hold no {det.RESULTS_JSON} (not details push-results wrote)")
    folder = Path(
        snapshot_download(repo, repo_type="dataset", revision=sha, token=api.token,  # type: ignore[attr-defined]
                          endpoint=api.endpoint, allow_patterns=[det.RESULTS_JSON, "data/*", f"{EVIDENCE}/*"])  # type: ignore[attr-defined]
    )  # fmt: skip
    summary = det.read_results_json((folder / det.RESULTS_JSON).read_bytes(), where)
    parquet = {name: (folder / det.PARQUET.format(config=name)).read_bytes() for name in summary["configs"]
               if (folder / det.PARQUET.format(config=name)).is_file()}  # fmt: skip
    per_query = det.per_query_from(summary, parquet, where)
    if f"{EVIDENCE}/evidence.json" not in names:
        why = (f"{where} hold per-query values only (no {EVIDENCE}/: published without --evidence, or before "
               "eccv-caption-hf kept evidence): nothing to score again")  # fmt: skip
        return Fetched(repo, sha, summary, per_query, None, why)
    try:
        evidence = load_evidence(folder / EVIDENCE, where=f"{repo}@{sha[:12]}: {EVIDENCE}/")
    except EvidenceError as exc:
        return Fetched(repo, sha, summary, per_query, None, str(exc))
    return Fetched(repo, sha, summary, per_query, evidence)


def mismatch(fetched: Fetched, model: str, dataset: str, entries: list[Entry]) -> str | None:
    """Why a details commit is not the evidence of these entries: details of another model or benchmark, or
    scored on another revision of the benchmark than the entries name."""
    summary = fetched.summary
    held_model = summary.get("model_repo")
    held = summary.get("dataset") or {}
    if not isinstance(held_model, str) or held_model.casefold() != model.casefold() or held.get("id") != dataset:
        return f"the details {fetched.where} are of {held_model} on {held.get('id')}, not of {model} on {dataset}"
    revisions = {e.revision for e in entries}
    scored = held.get("revision")
    if len(revisions) == 1 and scored != next(iter(revisions)):
        return (f"its entry names {dataset} at revision {next(iter(revisions))}, its evidence was scored at {scored} "
                "(ground truth at another revision)")  # fmt: skip
    if len(revisions) > 1:
        return f"its entries name several revisions of {dataset} ({', '.join(sorted(map(str, revisions)))})"
    return None


def pinned_resources(api: object, dataset: str, revision: str | None, evidence: Evidence) -> Resources:
    """The ground truth the run read: what it took from the benchmark's build, read at ``revision`` (a revision the
    dataset lacks, or none named, is one line), the package's for the rest, with the run's PM and CxC options."""
    from huggingface_hub.errors import RevisionNotFoundError

    given = evidence.resources.get("given") or []
    if given:
        raise EvaluationError(f"the run read {', '.join(given)} from sources of its own, not {dataset}'s")
    if not from_data(evidence):  # the package's ground truth (a run on files, MTEB's lists): no revision to pin
        return run_resources(evidence)
    if revision is None:
        raise EvaluationError(f"its entry names no revision of {dataset} (dataset.revision): which ground truth scored "
                              "it is unknown")  # fmt: skip
    try:
        api.dataset_info(dataset, revision=revision)  # type: ignore[attr-defined]
    except RevisionNotFoundError:
        raise EvaluationError(f"{dataset} has no revision {revision} (the entry's dataset.revision)") from None
    return run_resources(evidence, f"{dataset}@{revision}")
