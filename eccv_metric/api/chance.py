"""A note when every R@K of a direction is what random rankings give: most likely rows in the wrong order.

Scores and embeddings without ids are read in the collection's canonical
order; rows in another order (e.g. MSCOCO-FG captions in Karpathy order) give
numbers, just meaningless ones. No single number proves that, but chance
level does: for query q with R positives among the n items it is ranked
against, a random ranking puts one in its first K with probability
``p_q = 1 - C(n - R, K) / C(n, K)`` (:func:`~eccv_metric.measures.formulas.recall_at_chance`).
Over N queries R@K at chance has mean ``sum(p_q) / N`` and standard error
``sqrt(sum(p_q (1 - p_q))) / N``. A direction of a collection is noted when
each requested R@K lies at or below chance + 3 standard errors + 0.001 (and
at least one R@K is informative: that bound is below 0.5). The 0.001 (0.1
percentage point) admits the few rows that land in place by coincidence: the
Karpathy and MSCOCO-FG caption orders agree at 5 of 25,000 positions, so
MSCOCO-FG t2i R@1 from Karpathy-ordered captions is 5 / 25,000 = 0.0002, six
times the chance mean 1 / 31,244 and above its 3 standard errors (0.00014).
Models that work score tens to thousands of times that (MSCOCO-FG t2i R@1:
0.02 and more). A genuinely useless model is noted too: the note says
"likely".
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.view import View
from eccv_metric.engine.plan import Job
from eccv_metric.inputs.base import Input
from eccv_metric.measures.formulas import recall_at_chance
from eccv_metric.measures.results import QueryScores

MARGIN = 3.0  # standard errors above the chance mean still counted as chance
SLACK = 0.001  # and this much more: rows in place by coincidence


def chance_band(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[float, float] | None:
    """(chance mean, the highest mean still counted as chance) of a recall job's queries; None when the observed
    mean is above even a cheap upper bound of that band (then no exact chance is needed)."""
    rel = job.relevance
    observed, n = float(np.mean(scores.values)), max(1, len(scores.values))
    if not view.restricted:  # the same bound with the largest R and the one gallery size: no per-query work
        size = n_given - view.exclude_self
        k = min(int(job.k), size)  # type: ignore[arg-type]
        bound = min(1.0, k * float(np.max(rel.n_positives, initial=0)) / max(size - k + 1, 1))
        if observed > bound + MARGIN * math.sqrt(bound / n) + SLACK:
            return None
    dense = view.queries.positions(scores.query_ids).astype(np.int64)
    per_query = np.zeros(len(view.queries), dtype=np.int64)
    per_query[rel.query] = rel.n_positives
    n_pos = per_query[dense]
    sizes = view.gallery_sizes(dense, n_given)
    k = min(int(job.k), int(sizes.max(initial=0)))  # type: ignore[arg-type]
    # union bound: p_q <= K R / (n - K + 1), so the band is at most bound + MARGIN sqrt(bound / N) + SLACK
    bound = float(np.minimum(1.0, k * n_pos / np.maximum(sizes - k + 1, 1)).mean())
    if observed > bound + MARGIN * math.sqrt(bound / n) + SLACK:
        return None
    p = recall_at_chance(sizes, n_pos, int(job.k))  # type: ignore[arg-type]
    return float(p.mean()), float(p.mean() + MARGIN * math.sqrt(float((p * (1 - p)).sum())) / n + SLACK)


def given_gallery(source: Input, view: View) -> int:
    """How many gallery items the input ranks in an unrestricted view (its rows, extra ids included)."""
    mapping = getattr(source, "mapping", None)
    if mapping is None:
        return len(view.gallery)
    return len(mapping(view.collection, view.gallery_kind)[0])


def chance_notes(jobs: list[Job], per_query: dict[str, dict[str, QueryScores]], source: Input) -> list[str]:
    """One note per (collection, direction) whose every R@K is at chance level (see the module docstring)."""
    found: dict[tuple[str, str], list[tuple[str, float, float, float]] | None] = {}
    for job in jobs:
        if job.kind != "recall" or job.view is None or len(job.relevances) != 1:
            continue
        scores = per_query.get(job.metric, {}).get(job.direction)
        if scores is None or len(scores.values) == 0:
            continue
        key = (job.view.collection.name, job.direction)
        if key in found and found[key] is None:
            continue  # an R@K of this direction is above chance already
        band = chance_band(job.view, job, scores, given_gallery(source, job.view))
        if band is None:
            found[key] = None
            continue
        mean, high = band
        if high >= 0.5:
            continue  # K near the gallery size: chance cannot be told apart from a model
        found.setdefault(key, []).append((job.metric, float(np.mean(scores.values)), mean, high))
    notes = []
    for (_, direction), rows in found.items():
        if rows and all(observed <= high for _, observed, _, high in rows):
            shown = ", ".join(
                f"{m} = {observed:.4f} (random rankings: {mean:.4f})" for m, observed, mean, _ in rows[:3]
            )
            shown += f" and {len(rows) - 3} more R@K" if len(rows) > 3 else ""
            fix = (
                "give image_ids / caption_ids (CLI: --image-ids / --caption-ids)"
                if getattr(source, "kind", "") != "lists"
                else "the ranked ids must be the benchmark's item ids (COCO image / caption ids), not row numbers"
            )
            notes.append(f"{direction}: every R@K is at chance level ({shown}): likely a row order or id mix-up: {fix}")
    return notes


def warn_chance(notes: list[str]) -> None:
    """Each note as a :class:`~eccv_metric.core.errors.ChanceLevelWarning` (shown once per message)."""
    for note in notes:
        warnings.warn(note, ChanceLevelWarning, stacklevel=3)
