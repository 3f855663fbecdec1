"""``eccv-caption verify --from-hub MODEL --dataset-repo DATASET``: every published number of a model recomputed from
the evidence its entry points at.

For each ``.eval_results`` entry of the model for the benchmark (:mod:`eccv_metric.hub.published`, at main, a
revision or a pull request; a task's second entry too): the details commit its ``source.url`` names
(``<repo>/tree/<commit>``) is read at that commit (:mod:`eccv_metric.hub.details_fetch`: ``results.json`` first,
then the per-query Parquet files and ``evidence/``, into the Hugging Face cache), the benchmark's ground truth is read
at the entry's ``dataset.revision`` (only the columns the ground truth needs: ``HfFileSystem`` at
``<dataset>@<revision>``), and :func:`eccv_metric.verify` recomputes every number with the engine, as the run the
details' ``results.json`` names (checked first against its seal, :func:`~eccv_metric.hub.details.seal_problem`; its
model and revision must be those the evidence records). What cannot be recomputed is said per entry, never a
number, with its :attr:`EntryCheck.basis`: an entry with no details (``--no-details``, or written by hand), details
of another model's run (its provenance's model) or another benchmark, details edited since push-results sealed them
(or never sealed), evidence of another model's run, details holding per-query values only (published without
evidence: each number checked against their aggregate, :func:`~eccv_metric.evidence.check.check_values`), an entry
whose revision is not the one its evidence was scored on, a revision the benchmark does not have. The Hub's failures
(no network, a missing model; :class:`~eccv_metric.core.errors.HubReadError`, the benchmark's ground truth read too)
are one line (``verify --from-hub``) or, for a leaderboard's row, that row's entries unread; any other error while
one details commit is checked is that commit's entries' line (:data:`FAILED`), never the whole leaderboard's.
``cache=True`` (the leaderboard) keeps each commit's recomputation (:mod:`eccv_metric.hub.verify_cache`), never a
failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError
from eccv_metric.evidence.check import NOT_RECOMPUTABLE
from eccv_metric.evidence.check import Check
from eccv_metric.evidence.check import Verification
from eccv_metric.evidence.check import check_values
from eccv_metric.evidence.check import verify
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.truth import from_data
from eccv_metric.evidence.truth import run_resources
from eccv_metric.hub.details_fetch import Head
from eccv_metric.hub.details_fetch import fetch_evidence
from eccv_metric.hub.details_fetch import fetch_values
from eccv_metric.hub.details_fetch import not_its_own
from eccv_metric.hub.details_fetch import read_head
from eccv_metric.hub.details_fetch import revision_problem
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.published import Entry
from eccv_metric.hub.published import Published
from eccv_metric.hub.published import read_published
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import hub_call
from eccv_metric.hub.verify_cache import Outcome
from eccv_metric.hub.verify_cache import load_outcome
from eccv_metric.hub.verify_cache import outcome_key
from eccv_metric.hub.verify_cache import store_outcome

AGAIN = "run verify again"
# what an entry's check rests on (EntryCheck.basis)
EVIDENCE = "evidence"  # its details commit's evidence, scored again (or in doubt: not recomputable, why)
VALUES = "per-query values"  # details without evidence: the number checked against its per-query values only
NO_DETAILS = "no details"  # no details commit (source.url)
NOT_ITS_OWN = "not its own"  # details of another model's run or another benchmark, or no details push-results wrote
UNREAD = "unread"  # the Hub failed while reading them
FAILED = "failed"  # checking them failed otherwise (a bug, a full disk): said, never a verdict


@dataclass(frozen=True)
class EntryCheck:
    """One published entry and what verifying it found: its :class:`Check`, what the check rests on (``basis``:
    :data:`EVIDENCE`, :data:`VALUES`, :data:`NO_DETAILS`, :data:`NOT_ITS_OWN`, :data:`UNREAD`, :data:`FAILED`), the
    digest of the evidence that recomputed it (its ``evidence.json``'s; None: none) and the digests of the arrays it
    scored (``arrays``: ``(file, digest)`` of each file holding scores,
    :meth:`~eccv_metric.evidence.load.Evidence.score_digests`: the same arrays, the same digests, whatever the
    manifest says)."""

    entry: Entry
    check: Check
    basis: str
    evidence: str | None = None
    arrays: tuple[tuple[str, str], ...] = ()


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
    evidence_bytes: int = 0  # the evidence read (downloaded once: the Hugging Face cache keeps it)
    cached: int = 0  # details commits whose recomputation was kept (cache=True): nothing downloaded or scored


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
    published = hub_call(what, lambda: read_published(api, model, revision or None, dataset, dict(BY_ID), log),
                         AGAIN)  # fmt: skip
    if not published.entries:
        raise EvaluationError(f"{what}: {model} publishes no eval results for {dataset} (check --dataset-repo)")
    found = verify_published(api, published, dataset, what, device)
    unread = next((c for c in found.entries if c.basis == UNREAD), None)
    if unread is not None:  # the Hub failed: one line, as for the first read
        raise HubReadError(unread.check.why)
    return found


def verify_published(
    api: object,
    published: Published,
    dataset: str,
    what: str = "verify",
    device: str | None = None,
    cache: bool = False,
) -> HubVerification:
    """Every entry of ``published`` (a model's entries for ``dataset``, as :func:`read_published` reads them: what
    a leaderboard holds per row; a task's second entry too) recomputed from its details commit, each :class:`Check`
    labelled with its task id (and its file, where the task has several entries), each entry's check in
    :attr:`HubVerification.entries`. Whatever stops the check of one details commit is that commit's entries' line,
    never the others': the Hub failing (:data:`UNREAD`: no verdict, never kept), details that are not what
    push-results writes or a ground truth that cannot be pinned (:data:`EVIDENCE`, not recomputable), any other
    error (:data:`FAILED`: named, no verdict). ``cache``: each commit's recomputation kept and reused
    (:mod:`eccv_metric.hub.verify_cache`; ``verify --from-hub`` recomputes)."""
    found = HubVerification(published.model, dataset, Verification([]), [], [])
    specs: list[object] = []
    for commit, entries in by_commit(published).items():
        if commit is None:
            found.entries += unchecked(entries, NO_DETAILS, "its entry names no details commit (source.url)")
            continue
        try:
            found.entries += _of_commit(api, published, commit, entries, dataset, what, device, cache, found, specs)
        except HubReadError as exc:
            found.entries += unchecked(entries, UNREAD, str(exc))
        except EvaluationError as exc:  # details other than push-results writes, a revision that cannot be pinned...
            found.entries += unchecked(entries, EVIDENCE, str(exc))
        except Exception as exc:  # a bug, a full disk: this commit's rows say so; the other rows (and models) stand
            line = str(exc).splitlines()[0] if str(exc) else ""
            why = f"checking the details {commit[0]}@{commit[1][:12]} failed ({type(exc).__name__}: {line:.200})"
            found.entries += unchecked(entries, FAILED, why)
    order = {task_id: k for k, task_id in enumerate(BY_ID)}
    found.entries.sort(key=lambda c: order.get(c.entry.task, len(order)))
    several = {task for task, entries in published.by_task().items() if len(entries) > 1}
    found.table.checks = [replace(c.check, label=f"{c.entry.task} ({c.entry.file})") if c.entry.task in several
                          else c.check for c in found.entries]  # fmt: skip
    found.revision = next((e.revision for e in published.entries if e.revision), None)
    found.spec = next((x for x in specs if isinstance(x, str)), None)
    return found


def _of_commit(
    api: object, published: Published, commit: tuple[str, str], entries: list[Entry], dataset: str, what: str,
    device: str | None, cache: bool, found: HubVerification, specs: list[object],
) -> list[EntryCheck]:  # fmt: skip
    """The entries pointing at one details commit, checked: not its own (another model's or benchmark's details),
    not recomputable (its ``results.json`` edited since push-results sealed it, or never sealed), else
    :func:`_checked`."""
    head = hub_call(what, lambda: read_head(api, *commit), AGAIN)
    found.sources.append(head.where)
    why = head.why or not_its_own(head, published.model, dataset)
    if why is not None:
        return unchecked(entries, NOT_ITS_OWN, why)
    why = head.seal_problem
    if why is not None:
        return unchecked(entries, EVIDENCE, why)
    checked = _checked(api, head, entries, dataset, what, device, cache, found)
    specs.append(head.summary.get("model"))
    return checked


def _checked(
    api: object, head: Head, entries: list[Entry], dataset: str, what: str, device: str | None, cache: bool,
    found: HubVerification,
) -> list[EntryCheck]:  # fmt: skip
    """The entries of one details commit of their model, checked: against their per-query values where it holds
    no evidence, else recomputed from its evidence (kept and reused with ``cache``)."""
    first: dict[str, Entry] = {}
    for entry in entries:
        first.setdefault(entry.task, entry)
    labels = {(BY_ID[t].metric, BY_ID[t].direction): t for t in first}
    if not head.has_evidence:
        values = hub_call(what, lambda: fetch_values(api, head), AGAIN)
        out = []
        for entry in entries:  # each entry its own: nothing is scored, each value checked against the same values
            task = BY_ID[entry.task]
            numbers = {task.metric: {task.direction: entry.as_published}}
            (check,) = check_values(numbers, values, labels=labels, percent=True).checks
            out.append(EntryCheck(entry, check, VALUES))
        return out
    why = revision_problem(head, dataset, entries)
    if why is not None:
        return unchecked(entries, EVIDENCE, why)
    key = outcome_key(head.repo, head.sha, dataset, entries[0].revision, device)
    outcome = load_outcome(key) if cache else None
    if outcome is not None and {c.label for c in outcome.checks} >= set(first):
        found.cached += 1
    else:
        outcome, evidence = _recompute(api, head, first, labels, dataset, what, device)
        found.evidence_bytes += head.evidence_bytes
        if evidence is not None:
            found.evidence.append(evidence)
            if cache:
                store_outcome(key, outcome)
    found.table.notes += [n for n in outcome.notes if n not in found.table.notes]
    checked = {c.label: c for c in outcome.checks}
    digest, arrays = outcome.digest or None, tuple(sorted(outcome.arrays.items()))
    return [EntryCheck(e, checked[e.task].against(e.as_published), EVIDENCE, digest, arrays) for e in entries]


def _recompute(
    api: object, head: Head, first: dict[str, Entry], labels: dict, dataset: str, what: str, device: str | None
) -> tuple[Outcome, Evidence | None]:
    """One details commit's evidence scored again (its entries' first values as the published ones) as the run its
    ``results.json`` names (its model and revision: the evidence's must be the same), and the evidence (None: in
    doubt, every row not recomputable and why; its outcome's digest empty). The Hub failing while the ground truth
    is read is raised (:class:`HubReadError`), never an outcome."""
    fetched = hub_call(what, lambda: fetch_evidence(api, head), AGAIN)
    numbers: dict[str, dict[str, float]] = {}
    for task_id, entry in first.items():
        numbers.setdefault(BY_ID[task_id].metric, {})[BY_ID[task_id].direction] = entry.as_published
    if fetched.evidence is None:
        checks = [Check(BY_ID[t].metric, BY_ID[t].direction, NOT_RECOMPUTABLE, e.as_published, why=fetched.why,
                        label=t, percent=True) for t, e in first.items()]  # fmt: skip
        return Outcome(checks, "", [], head.summary.get("model")), None
    revision = next(iter(first.values())).revision
    evidence = fetched.evidence
    resources = hub_call(what, lambda: pinned_resources(api, dataset, revision, evidence), AGAIN)
    recorded = head.recorded_digest or "(none recorded)"
    provenance = head.summary.get("provenance") if isinstance(head.summary.get("provenance"), dict) else {}
    table = verify(numbers, evidence, per_query=fetched.per_query, resources=resources, device=device,
                   digest=recorded, labels=labels, percent=True, whole=True, model=provenance)  # fmt: skip
    scored = any(c.status != NOT_RECOMPUTABLE for c in table.checks)
    arrays = evidence.score_digests() if scored else {}  # what a copy under another name shares (trust.share)
    return Outcome(table.checks, evidence.digest, table.notes, head.summary.get("model"), arrays), evidence


def by_commit(published: Published) -> dict[tuple[str, str] | None, list[Entry]]:
    """The published entries grouped by the details commit they name (None: none)."""
    out: dict[tuple[str, str] | None, list[Entry]] = {}
    for entry in published.entries:
        out.setdefault(entry.details, []).append(entry)
    return out


def unchecked(entries: list[Entry], basis: str, why: str) -> list[EntryCheck]:
    """Entries whose numbers are not recomputable, and why (on one line)."""
    why = "; ".join(part.strip() for part in why.splitlines() if part.strip())
    out = []
    for entry in entries:
        task = BY_ID[entry.task]
        check = Check(task.metric, task.direction, NOT_RECOMPUTABLE, entry.as_published, why=why, label=entry.task,
                      percent=True)  # fmt: skip
        out.append(EntryCheck(entry, check, basis))
    return out


def pinned_resources(api: object, dataset: str, revision: str | None, evidence: Evidence) -> Resources:
    """The ground truth the run read: what it took from the benchmark's build, read at ``revision`` (a revision the
    dataset lacks, or none named, is one line), the package's for the rest, with the run's PM and CxC options."""
    given = evidence.resources.get("given") or []
    if given:
        raise EvaluationError(f"the run read {', '.join(given)} from sources of its own, not {dataset}'s")
    if not from_data(evidence):  # the package's ground truth (a run on files, MTEB's lists): no revision to pin
        return run_resources(evidence)
    if revision is None:
        raise EvaluationError(f"its entry names no revision of {dataset} (dataset.revision): which ground truth scored "
                              "it is unknown")  # fmt: skip
    return run_resources(evidence, pinned(api, dataset, revision))


def pinned(api: object, dataset: str, revision: str) -> str:
    """``<dataset>@<revision>``, the benchmark's build at a revision it has (a source :mod:`eccv_metric.core.folder`
    reads); one it lacks is one line."""
    from huggingface_hub.errors import RevisionNotFoundError

    try:
        api.dataset_info(dataset, revision=revision)  # type: ignore[attr-defined]
    except RevisionNotFoundError:
        raise EvaluationError(f"{dataset} has no revision {revision} (the entry's dataset.revision)") from None
    return f"{dataset}@{revision}"
