"""Notes on values the scores alone do not decide: the order of equal scores (every score input), and a
two-stage input's first stage past its reranked candidates (:mod:`eccv_metric.engine.ties` defines both).

One note per direction and kind, naming the metrics and how many of their queries are concerned, with a few
query ids. A score matrix whose every score is equal gets one note (every ranking is the tie order), not
these; queries whose own every score is equal are named inside the tie note. Notes of these two kinds are
:class:`~eccv_metric.api.chance.QuietNote`: in ``Results.notes`` (and the CLI's warning lines), not warned (a
float matrix holds a few equal scores by chance); the constant-scores note and a tie note naming queries whose
every score is equal are warned as before.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.api.chance import QuietNote
from eccv_metric.core.errors import preview
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.engine.plan import Job
from eccv_metric.engine.plan import direction_order
from eccv_metric.engine.ties import Tally
from eccv_metric.inputs.base import Input
from eccv_metric.measures.results import PerQuery

RULES = {
    "stable": 'ties="stable": equal scores in the rows\' given order',
    "trec_eval": 'ties="trec_eval": equal scores by item id descending as strings',
}
CAUSE = (
    "a few queries: float scores equal by chance; many: scores clipped, rounded or set to one value, such as "
    "LAVIS's -100 for the pairs outside the reranked top-k (give such a result as a two-stage input, TwoStage / "
    "rerank=, to rank those pairs by the first stage)"
)


def tie_notes(source: Input, tally: Tally | None, jobs: list[Job], per_query: PerQuery) -> list[str]:
    """The constant-scores notes, then per direction the tie note and the two-stage tail note."""
    notes = list(getattr(source, "constant_notes", {}).values())
    constant = {d for d, kinds in DIRECTION_KINDS.items() for key in getattr(source, "constant_notes", {}) if
                set(kinds) == set(key)}  # fmt: skip
    all_equal: dict[str, set[int]] = getattr(source, "tied_queries", {})
    order = {job.metric: i for i, job in reversed(list(enumerate(jobs)))}
    directions = sorted(
        {d for _, d in (tally.tied if tally else {})} | set(all_equal) | {d for _, d in (tally.tail if tally else {})},
        key=direction_order,
    )
    for direction in directions:
        if direction in constant:
            continue
        counted = counts(tally.tied if tally else {}, direction, order, per_query)
        equal = all_equal.get(direction, set())
        every = (
            f"every score of {len(equal)} query(ies) is equal ({preview(sorted(equal))}): their rankings are the "
            "rows' given order, not the model's (check the scores of these queries)"
        )
        if counted:
            rule = RULES.get(getattr(source, "ties", "stable"), "")
            text = (
                f"{direction}: the order of equal scores decides {counted}: a positive shares its score with other "
                f"items and the tie rule placed it ({rule}), another rule could give other values; {CAUSE}"
            )
            notes.append(f"{text}; {every}" if equal else QuietNote(text))  # queries of equal scores: warned
        elif equal:
            notes.append(f"{direction}: {every}")
        past = counts(tally.tail if tally else {}, direction, order, per_query)
        if past:
            notes.append(
                QuietNote(
                    f"{direction}: the first stage's order past each query's reranked candidates decides {past}: the "
                    "best positive is not among the candidates, or the metric reads deeper (MedR, MeanR, uncapped "
                    "PMRP, R@K with K beyond the candidates); these values are the first stage's, not the reranker's"
                )
            )
    return notes


def counts(found: dict[tuple[str, str], np.ndarray], direction: str, order: dict[str, int], per_query: PerQuery) -> str:
    """``metric N of M queries, ... (e.g. ids)`` for the metrics of ``direction`` with queries in ``found``."""
    rows = [(m, ids) for (m, d), ids in found.items() if d == direction and len(ids)]
    if not rows:
        return ""
    rows.sort(key=lambda row: order.get(row[0], len(order)))
    same: dict[tuple[int, int], list[str]] = {}  # metrics with the same count of the same queries: named together
    for m, ids in rows:
        same.setdefault((len(ids), len(per_query[m][direction].values)), []).append(m)
    shown = "; ".join(f"{', '.join(names)}: {n:,} of {total:,} queries" for (n, total), names in same.items())
    most = max(rows, key=lambda row: len(row[1]))[1]
    return f"{shown} (e.g. {preview(sorted(most.tolist()), 3)})"
