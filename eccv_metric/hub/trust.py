"""What a leaderboard row of the Hub rests on: a mark per number shown, the row's mark, evidence shared with another
model (``leaderboard --from-hub``).

Each entry's mark comes from verifying it (:func:`eccv_metric.hub.verify_hub.verify_published`: the library's
:func:`eccv_metric.verify` over the evidence of its details commit); the row's is the weakest of the numbers it
shows, weakest first:

- ``differs``: a number, or its per-query values, differ from what its evidence gives (or, with no evidence, from
  the aggregate of its per-query values);
- ``not recomputable``: its evidence is published but cannot be scored as it is (a file missing or changed, rows in
  another order, another revision of the benchmark...: a note says why);
- ``number only``: no details of its own (``--no-details``, an entry written by hand, or details of another model's
  run: borrowed);
- ``not checked``: not verified (``--no-verify``, the Hub failed while reading its details or its benchmark, or
  checking them failed otherwise: a note says so; nothing of it is kept, the next run checks again);
- ``per-query only``: details without evidence (published before evidence, or without ``--evidence``): each number
  is the aggregate of its per-query values, which are the model's own claim;
- ``recomputed``: every number scored again from its evidence and equal, query for query.

Evidence shared by two models is one run's numbers under two names: both rows are flagged, whoever copied whom
(``verify --reencode`` with each model tells which made it). What is compared is the arrays that carry the scores
(embeddings, score matrices, reranked candidates and their scores, rated pairs, ranked lists; not the files of row
ids), each by the digest of its dtype, shape and values (:meth:`~eccv_metric.evidence.load.Evidence.score_digests`),
so that a copy under another manifest (a key added, another file name) or in other file bytes is still told. Two
models whose evidence holds one array in common (the same image embeddings: a frozen image tower, or a copy) are
flagged, and the note names the arrays. What it cannot tell: arrays changed without changing a number (embeddings
scaled, scores shifted), which only ``verify --reencode`` catches.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field

from eccv_metric.evidence.check import DIFFERS as CHECK_DIFFERS
from eccv_metric.evidence.check import EQUAL
from eccv_metric.evidence.check import NOT_RECOMPUTABLE as CHECK_NOT_RECOMPUTABLE
from eccv_metric.hub.published import Published
from eccv_metric.hub.verify_hub import EVIDENCE
from eccv_metric.hub.verify_hub import FAILED
from eccv_metric.hub.verify_hub import UNREAD
from eccv_metric.hub.verify_hub import VALUES
from eccv_metric.hub.verify_hub import EntryCheck

RECOMPUTED = "recomputed"
VALUES_ONLY = "per-query only"
NUMBER_ONLY = "number only"
NOT_CHECKED = "not checked"
NOT_RECOMPUTABLE = "not recomputable"
DIFFERS = "differs"
MARKS = (DIFFERS, NOT_RECOMPUTABLE, NUMBER_ONLY, NOT_CHECKED, VALUES_ONLY, RECOMPUTED)  # weakest first
SAID = (DIFFERS, NOT_RECOMPUTABLE, NOT_CHECKED)  # marks whose reason is a note
LEGEND = (
    "trust: recomputed = every number scored again from its published evidence, equal; per-query only = no "
    "evidence, each number the aggregate of its per-query values (the model's own claim); number only = no details "
    "of its own; not checked = not verified (--no-verify, the Hub failed, or checking failed); not recomputable = its "
    "evidence cannot be scored as published; differs = a number or its per-query values differ from its evidence; "
    "shared = evidence arrays the same as another model's row's"
)


def mark_of(found: EntryCheck) -> str:
    """One entry's mark (see the module docstring)."""
    if found.check.status == CHECK_DIFFERS:
        return DIFFERS
    if found.basis == EVIDENCE:
        return RECOMPUTED if found.check.status == EQUAL else NOT_RECOMPUTABLE
    if found.basis == VALUES:
        return VALUES_ONLY
    return NOT_CHECKED if found.basis in (UNREAD, FAILED) else NUMBER_ONLY


@dataclass
class Trust:
    """A row's marks: each shown number's (task id -> mark), the row's (its weakest), the score arrays of the
    evidence its shown numbers were recomputed from (``arrays``: digest -> file) and the other models' rows holding
    the same arrays (``shared``)."""

    marks: dict[str, str]
    arrays: dict[str, str] = field(default_factory=dict)
    shared: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # task id -> why, for the marks of SAID

    @property
    def mark(self) -> str:
        return min(self.marks.values(), key=MARKS.index) if self.marks else NUMBER_ONLY

    @property
    def label(self) -> str:
        """The row's mark as the table shows it (``recomputed, shared``)."""
        return self.mark + (", shared" if self.shared else "")

    def notes(self, name: str) -> list[str]:
        """What the row's marks do not say: why a number is not trusted, and which numbers have which mark where
        they differ."""
        said: dict[tuple[str, str], list[str]] = {}
        for task, why in self.reasons.items():
            said.setdefault((self.marks[task], why), []).append(task)
        lines = [f"note: {name}: {', '.join(tasks) if len(tasks) < 4 else f'{len(tasks)} numbers'} {mark}: {why}"
                 for (mark, why), tasks in said.items()]  # fmt: skip
        kinds: dict[str, list[str]] = {}
        for task, mark in self.marks.items():
            kinds.setdefault(mark, []).append(task)
        if len(kinds) > 1:
            ordered = sorted(kinds.items(), key=lambda kind: MARKS.index(kind[0]))
            parts = [f"{mark}: {', '.join(tasks) if len(tasks) < 4 else f'{len(tasks)} numbers'}"
                     for mark, tasks in ordered]  # fmt: skip
            lines.append(f"note: {name}'s numbers are not all alike ({'; '.join(parts)}): the row shows the weakest")
        return lines


def trust_of(published: Published, found: Iterable[EntryCheck]) -> Trust:
    """A row's trust from its entries' checks; the entries recomputed equal become ``published.verified``, so
    that a task's verified entry is the one shown (:meth:`~eccv_metric.hub.published.Published.shown`)."""
    by_entry = {c.entry: c for c in found}
    published.verified = {e for e, c in by_entry.items() if mark_of(c) == RECOMPUTED}
    trust = Trust({})
    for task, entry in published.shown().items():
        checked = by_entry.get(entry)
        if checked is None:
            trust.marks[task] = NOT_CHECKED
            continue
        trust.marks[task] = mark_of(checked)
        if trust.marks[task] in SAID:
            trust.reasons[task] = checked.check.reason
        if checked.basis == EVIDENCE and checked.check.status != CHECK_NOT_RECOMPUTABLE:
            trust.arrays.update({digest: file for file, digest in checked.arrays})  # evidence scored: its arrays
    return trust


def unverified(published: Published) -> Trust:
    """A row's trust without verifying (``--no-verify``): ``number only`` where it has no details of its own,
    ``not checked`` elsewhere; nothing is downloaded."""
    marks = {}
    for task, entry in published.shown().items():
        own = entry.details is not None and published.own(entry.details)
        marks[task] = NOT_CHECKED if own else NUMBER_ONLY
    return Trust(marks)


def share(rows: dict[str, tuple[str, Trust]]) -> list[str]:
    """Flag the rows (``{row name: (model, trust)}``) of different models holding the same score arrays; a note per
    group of rows, naming the arrays they share."""
    holders: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    for name, (_, trust) in rows.items():
        for digest, file in trust.arrays.items():
            holders.setdefault(digest, []).append(name)
            files.setdefault(digest, file)
    groups: dict[tuple[str, ...], list[str]] = {}
    for digest, names in holders.items():
        if len({rows[n][0].casefold() for n in names}) > 1:  # a model's main and its pull request: one model's run
            groups.setdefault(tuple(names), []).append(files[digest])
    notes = []
    for names, shared in groups.items():
        for name in names:
            rows[name][1].shared += [n for n in names if n != name and n not in rows[name][1].shared]
        listed = ", ".join(sorted(shared)[:3]) + (f" and {len(shared) - 3} more" if len(shared) > 3 else "")
        notes.append(f"note: {', '.join(names)} hold the same evidence arrays ({listed}): one run's numbers under "
                     "several models; `eccv-caption verify --from-hub MODEL --reencode N --model SPEC` tells which "
                     "model made them")  # fmt: skip
    return notes
