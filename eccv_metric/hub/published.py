"""What a model published for the benchmark, read back from the Hub: its ``.eval_results`` entries and details.

The entries are read as huggingface_hub reads a model's eval results (``HfApi.model_info(model,
expand=["evalResults"])``: the Hub parses the ``.eval_results/*.yaml`` files and serves each entry as
``{"filename", "verified", "data": {...}, "pullRequest"}``), with the same request, read here in full: huggingface_hub's
``ModelInfo`` keeps neither the file an entry came from nor the files the Hub found invalid, which it serves as
``{"filename", "error"}`` (huggingface_hub PR #4924: ``parse_eval_result_entries`` logs and drops them). An invalid
file is a note here, never a number. The entries for one benchmark dataset and a task its ``eval.yaml`` lists are
kept; each value is checked against its task's range (percent in [0, 100], Spearman's rho in [-1, 1], finite): one
that is not is left out with a note, as every other reader of results here does.

A (model, task) with two entries (a second file beside the pushed one) stays two :class:`Entry` values: the task's
number is shown when they agree (the same value and the same details), or where they disagree the one recomputed
equal from its evidence (:attr:`Published.verified`, set by the leaderboard's verification), never one entry's
value with another's details; otherwise neither is, with a note naming both files. An entry whose ``source.url`` is
a details commit (:func:`eccv_metric.hub.details.parse_tree_url`) leads to the per-query values behind it; the model
whose run that commit holds is read too (its ``results.json`` and its provenance: :attr:`Published.details_of`,
:func:`~eccv_metric.hub.details.run_model`), so details borrowed from another model's run are told
(:meth:`Published.details_commit` is then None, with a note).

What the hub docs do not say, and what is assumed: whether ``evalResults`` at ``main`` also lists the entries of
open pull requests (huggingface_hub's own test of the API format shows an entry carrying ``pullRequest``), and what
it lists at ``refs/pr/<n>``. An entry of another pull request than the revision read is left out (its own row
reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from urllib.parse import quote

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub import details as det
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import read_back
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.eval_tasks import value_problem
from eccv_metric.hub.repos import briefly

Results = dict[str, dict[str, float]]


@dataclass(frozen=True)
class Entry:
    """One published entry: its task, its value (a fraction, as results files hold it), the file it came from, the
    details commit ``(repo, sha)`` its ``source.url`` points at (None: no details), the benchmark's revision it
    names (``dataset.revision``; None: none) and its value as published (the task's unit: percent for a fraction
    metric; what a recomputation is compared with)."""

    task: str
    value: float
    file: str
    details: tuple[str, str] | None = None
    revision: str | None = None
    published: float | None = None

    @property
    def as_published(self) -> float:
        return self.published if self.published is not None else self.value


@dataclass
class Published:
    """One model's published entries for a benchmark, every one of them (see the module docstring)."""

    model: str
    revision: str | None = None  # None: main
    entries: list[Entry] = field(default_factory=list)
    details_of: dict[tuple[str, str], str | None] = field(default_factory=dict)  # commit -> the model it names
    verified: set[Entry] = field(default_factory=set)  # entries recomputed equal from their evidence (verify)

    def by_task(self) -> dict[str, list[Entry]]:
        out: dict[str, list[Entry]] = {}
        for entry in self.entries:
            out.setdefault(entry.task, []).append(entry)
        return out

    def shown(self) -> dict[str, Entry]:
        """The entry shown for each task: its only one, or entries that agree (value and details), the one
        recomputed equal from its evidence (:attr:`verified`) where they disagree; a task whose entries disagree
        and none (or several that disagree) verified has none."""
        out = {}
        for task, found in self.by_task().items():
            ok = [e for e in found if e in self.verified]
            if len({(e.value, e.details) for e in found}) == 1:
                out[task] = (ok or found)[0]
            elif ok and len({(e.value, e.details) for e in ok}) == 1:
                out[task] = ok[0]
        return out

    def duplicates(self, name: str) -> list[str]:
        """A note per task with several entries, naming each file and value and which one is shown."""
        lines = []
        shown_now = self.shown()
        for task, found in self.by_task().items():
            if len(found) < 2:
                continue
            listed = ", ".join(f"{e.file}: {shown(BY_ID[task], e.value):g}" for e in found)
            chosen = shown_now.get(task)
            if task not in shown_now:
                said = "neither is shown until one is removed"
            elif len({(e.value, e.details) for e in found}) == 1:
                said = "they agree, one number shown"
            else:
                said = f"{chosen.file} is shown: its number is recomputed from its evidence, the other's is not"  # type: ignore[union-attr]
            lines.append(f"note: {name} has {len(found)} entries for {task} ({listed}): {said}")
        return lines

    @property
    def results(self) -> Results:
        """The numbers shown (fractions), ``{metric: {direction: value}}``."""
        out: Results = {}
        for task, entry in self.shown().items():
            out.setdefault(BY_ID[task].metric, {})[BY_ID[task].direction] = entry.value
        return out

    @property
    def files(self) -> dict[str, str]:
        """task id -> the file of its shown number."""
        return {task: entry.file for task, entry in self.shown().items()}

    def own(self, commit: tuple[str, str]) -> bool:
        """Whether a details commit's ``results.json`` names this model (False: another model's, or unread)."""
        named = self.details_of.get(commit)
        return isinstance(named, str) and named.casefold() == self.model.casefold()

    def details_commit(self) -> tuple[str, str] | None:
        """The one details commit behind every number, holding this model's details (None: none, numbers from
        several commits, a task whose entries disagree, or details that name another model)."""
        shown, every = self.shown(), self.by_task()
        commits = {e.details for e in shown.values()}
        if len(shown) != len(every) or len(commits) != 1 or None in commits:
            return None
        commit = commits.pop()
        return commit if commit is not None and self.own(commit) else None


def eval_results(api: object, model: str, revision: str | None) -> list[dict]:
    """The ``evalResults`` the Hub serves for a model at a revision, as huggingface_hub's ``model_info(...,
    expand=["evalResults"])`` asks for them (its request; the answer kept whole: see the module docstring)."""
    from huggingface_hub.utils import build_hf_headers
    from huggingface_hub.utils import get_session
    from huggingface_hub.utils import hf_raise_for_status

    endpoint = api.endpoint  # type: ignore[attr-defined]
    path = f"{endpoint}/api/models/{model}" + (f"/revision/{quote(revision, safe='')}" if revision else "")
    answer = get_session().get(path, headers=build_hf_headers(token=api.token), params={"expand": ["evalResults"]})  # type: ignore[attr-defined]
    hf_raise_for_status(answer)
    found = answer.json().get("evalResults")
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def read_published(
    api: object,
    model: str,
    revision: str | None,
    dataset: str,
    tasks: dict[str, HubTask],
    log: Callable[[str], None],
    duplicates: bool = True,
) -> Published:
    """A model's entries for ``dataset`` at ``revision`` (see the module docstring); invalid files, bad values,
    entries that disagree (``duplicates`` False: left to the caller, :meth:`Published.duplicates`) and borrowed
    details noted, never shown."""
    out = Published(model, revision)
    name = model + (f"@{revision}" if revision else "")
    pr = int(revision.removeprefix("refs/pr/")) if revision and revision.startswith("refs/pr/") else None
    for item in eval_results(api, model, revision):
        file = str(item.get("filename"))
        if item.get("pullRequest") not in (None, pr):  # another pull request's entry: its own row reads it
            continue
        if "error" in item:  # a file the Hub could not validate: no entry of it is a number
            error = " ".join(p.strip(" ✖→") for p in str(item["error"]).splitlines() if p.strip(" ✖→"))
            log(f"note: left out {name}'s {file}: the Hub found it invalid ({error})")
            continue
        data = item.get("data", item)
        data = data if isinstance(data, dict) else {}
        where = data.get("dataset") if isinstance(data.get("dataset"), dict) else {}
        task = tasks.get(where.get("task_id")) if where.get("id") == dataset else None
        if task is None:
            continue
        value = data.get("value")
        problem = value_problem(task, value)
        if problem is not None:
            log(f"note: left out {name}'s {task.id} from {file}: {problem}")
            continue
        src = data.get("source") if isinstance(data.get("source"), dict) else {}
        scored_on = where.get("revision") if isinstance(where.get("revision"), str) else None
        details = det.parse_tree_url(src.get("url"))
        entry = Entry(task.id, read_back(task, value), file, details, scored_on, float(value))  # type: ignore[arg-type]
        out.entries.append(entry)
    if duplicates:  # the leaderboard says them once its verification has chosen
        for line in out.duplicates(name):
            log(line)
    _read_details_models(api, out, name, log)
    return out


def _read_details_models(api: object, out: Published, name: str, log: Callable[[str], None]) -> None:
    """The model each details commit's ``results.json`` names (:attr:`Published.details_of`); a commit naming
    another model, or that cannot be read, is a note."""
    for commit in dict.fromkeys(e.details for e in out.entries if e.details is not None):
        repo, sha = commit
        try:
            summary = det.read_results_json(_fetch(api, repo, sha, det.RESULTS_JSON), f"the details {repo}@{sha[:12]}")
        except EvaluationError as exc:
            out.details_of[commit] = None
            log(f"note: {name}'s details {repo}@{sha[:12]} are not read as evidence: {exc}")
            continue
        except Exception as exc:  # the Hub failing, or anything else: one commit's note, the others stand
            out.details_of[commit] = None
            log(f"note: {name}'s details {repo}@{sha[:12]} could not be read ({briefly(exc)})")
            continue
        named = det.run_model(summary)  # the provenance's model: details of another model's run are not its own
        out.details_of[commit] = named
        if not out.own(commit):
            count = sum(e.details == commit for e in out.entries)
            log(f"note: {name}: {count} entries point at the details of {named} ({repo}@{sha[:12]}), not of "
                f"{out.model}: not its evidence")  # fmt: skip


def _fetch(api: object, repo: str, sha: str, name: str) -> bytes:
    path = api.hf_hub_download(repo, name, repo_type="dataset", revision=sha)  # type: ignore[attr-defined]
    with open(path, "rb") as fin:
        return fin.read()


def read_details(api: object, repo: str, sha: str) -> tuple[dict, dict]:
    """(per-query values, ``results.json``) of a details commit."""
    where = f"the details {repo}@{sha[:12]}"
    info = api.dataset_info(repo, revision=sha)  # type: ignore[attr-defined]
    names = {s.rfilename for s in info.siblings or []}
    if det.RESULTS_JSON not in names:
        raise EvaluationError(f"{where} hold no {det.RESULTS_JSON}: not a details repo push-results wrote")
    summary = det.read_results_json(_fetch(api, repo, sha, det.RESULTS_JSON), where)
    parquet = {name: _fetch(api, repo, sha, det.PARQUET.format(config=name)) for name in summary["configs"]
               if det.PARQUET.format(config=name) in names}  # fmt: skip
    return det.per_query_from(summary, parquet, where), summary
