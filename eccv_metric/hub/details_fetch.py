"""One details commit read for verification, in two steps so that nothing large is downloaded for details that
cannot be an entry's evidence: :func:`read_head` (the commit's file list with sizes and its ``results.json``),
then :func:`fetch_values` (the per-query Parquet files) or :func:`fetch_evidence` (those and ``evidence/``:
huggingface_hub's ``snapshot_download`` at the commit, into the Hugging Face cache: a second read downloads
nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import EvidenceError
from eccv_metric.evidence.load import load_evidence
from eccv_metric.hub import details as det
from eccv_metric.hub.published import Entry

EVIDENCE = "evidence"
MANIFEST = f"{EVIDENCE}/evidence.json"


@dataclass
class Head:
    """A details commit before its data: ``sizes`` (path -> bytes of every file), ``results.json`` (``summary``),
    or why it is no details commit push-results wrote (``why``)."""

    repo: str
    sha: str
    sizes: dict[str, int] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    why: str | None = None

    @property
    def where(self) -> str:
        return f"{self.repo}@{self.sha[:12]}"

    @property
    def has_evidence(self) -> bool:
        return MANIFEST in self.sizes

    @property
    def evidence_bytes(self) -> int:
        """The bytes under ``evidence/``: what verifying it downloads (once: the Hugging Face cache keeps it)."""
        return sum(size for path, size in self.sizes.items() if path.startswith(f"{EVIDENCE}/"))

    @property
    def seal_problem(self) -> str | None:
        """Why its ``results.json`` does not vouch for the run it names: not sealed, or edited since push-results
        sealed it (:func:`~eccv_metric.hub.details.seal_problem`); None when it does."""
        return det.seal_problem(self.summary, f"the details {self.where}")

    @property
    def recorded_digest(self) -> str | None:
        """The digest of the evidence the run recorded (``results.json``'s provenance)."""
        digests = (self.summary.get("provenance") or {}).get("digests") or {}
        found = digests.get("evidence") if isinstance(digests, dict) else None
        return found if isinstance(found, str) else None


@dataclass
class Fetched:
    """A details commit's per-query values and evidence (None, with ``why``, when it cannot be scored as it is)."""

    per_query: dict
    evidence: Evidence | None = None
    why: str | None = None


def read_head(api: object, repo: str, sha: str) -> Head:
    """The commit's files and sizes, and its ``results.json`` (a small download)."""
    where = f"the details {repo}@{sha[:12]}"
    info = api.dataset_info(repo, revision=sha, files_metadata=True)  # type: ignore[attr-defined]
    sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or []}
    head = Head(repo, sha, sizes)
    if det.RESULTS_JSON not in sizes:
        head.why = f"{where} hold no {det.RESULTS_JSON} (not details push-results wrote)"
        return head
    path = api.hf_hub_download(repo, det.RESULTS_JSON, repo_type="dataset", revision=sha)  # type: ignore[attr-defined]
    head.summary = det.read_results_json(Path(path).read_bytes(), where)
    return head


def not_its_own(head: Head, model: str, dataset: str) -> str | None:
    """Why a details commit is not ``model``'s evidence for ``dataset``: the details of another model's run (its
    provenance's model, or the repo it was published for: :func:`~eccv_metric.hub.details.run_model`) or of another
    benchmark."""
    held_model = det.run_model(head.summary)
    held = head.summary.get("dataset") or {}
    if not isinstance(held_model, str) or held_model.casefold() != model.casefold() or held.get("id") != dataset:
        return f"the details {head.where} are of {held_model} on {held.get('id')}, not of {model} on {dataset}"
    return None


def revision_problem(head: Head, dataset: str, entries: list[Entry]) -> str | None:
    """Why a details commit cannot vouch for entries that name another revision of the benchmark than its run
    was scored on (or several)."""
    revisions = {e.revision for e in entries}
    scored = (head.summary.get("dataset") or {}).get("revision")
    if len(revisions) > 1:
        return f"its entries name several revisions of {dataset} ({', '.join(sorted(map(str, revisions)))})"
    named = next(iter(revisions))
    if scored != named:
        return (f"its entry names {dataset} at revision {named}, its evidence was scored at {scored} "
                "(ground truth at another revision)")  # fmt: skip
    return None


def fetch_values(api: object, head: Head) -> dict:
    """The per-query values of a details commit (its Parquet files only)."""
    folder = _snapshot(api, head, [det.RESULTS_JSON, "data/*"])
    return _per_query(head, folder)


def fetch_evidence(api: object, head: Head) -> Fetched:
    """The per-query values and the evidence of a details commit, the evidence checked as
    :func:`~eccv_metric.evidence.load.load_evidence` checks it (a problem: ``why``)."""
    folder = _snapshot(api, head, [det.RESULTS_JSON, "data/*", f"{EVIDENCE}/*"])
    per_query = _per_query(head, folder)
    try:
        return Fetched(per_query, load_evidence(folder / EVIDENCE, where=f"{head.where}: {EVIDENCE}/"))
    except EvidenceError as exc:
        return Fetched(per_query, None, str(exc))


def _snapshot(api: object, head: Head, patterns: list[str]) -> Path:
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(head.repo, repo_type="dataset", revision=head.sha, token=api.token,  # type: ignore[attr-defined]
                          endpoint=api.endpoint, allow_patterns=patterns)  # type: ignore[attr-defined]
    )  # fmt: skip


def _per_query(head: Head, folder: Path) -> dict:
    summary = head.summary
    parquet = {name: (folder / det.PARQUET.format(config=name)).read_bytes() for name in summary["configs"]
               if (folder / det.PARQUET.format(config=name)).is_file()}  # fmt: skip
    return det.per_query_from(summary, parquet, f"the details {head.where}")
