"""A note when every metric of a direction is what random rankings give: numbers at chance level.

Scores and embeddings without ids are read in the collection's canonical
order; rows in another order (e.g. MSCOCO-FG captions in Karpathy order) give
numbers, just meaningless ones, and so does a model that was not trained or
whose weights were not loaded. No single number proves that, but chance level
does. Every metric kind has an exact expectation under a random ranking of the
n items a query is ranked against, with R positives among them:

- R@K: ``p_q = 1 - C(n - R, K) / C(n, K)``
  (:func:`~eccv_metric.measures.formulas.recall_at_chance`), variance ``p_q (1 - p_q)``;
- the rank of the first positive (MedR, MeanR): the smallest of R distinct
  positions drawn from 1..n, mean ``(n + 1) / (R + 1)``, variance
  ``R (n + 1) (n - R) / ((R + 1)^2 (R + 2))``;
- R-Precision (and PMRP, R capped at C): the hits among the first R' = min(R, C)
  items are hypergeometric, mean ``R / n``, variance
  ``R' (R / n) (1 - R / n) (n - R') / (n - 1) / R'^2``;
- mAP@R: ``E = (1/R) sum_{i<=R} E[rel(i) hits(i)] / i = (H_R + (R - 1)(R - H_R) / (n - 1)) / n``
  (H_R the R-th harmonic number), its variance bounded by its mean (values in [0, 1]).

Over N queries the mean at chance has the mean of these and standard error
``sqrt(sum of variances) / N``. A direction of a collection is noted when each
requested metric lies on the chance side of its mean by at most 3 standard
errors plus a slack (0.001 for fractions; 0.1 % of the mean rank for ranks), and
at least one metric is informative (the band of a fraction is below 0.5; the
band of a mean rank is above rank 2). The slack admits the few rows that land in
place by coincidence: the Karpathy and MSCOCO-FG caption orders agree at 5 of
25,000 positions, so MSCOCO-FG t2i R@1 from Karpathy-ordered captions is
5 / 25,000 = 0.0002, six times the chance mean 1 / 31,244 and above its 3
standard errors (0.00014). Models that work score tens to thousands of times
that (MSCOCO-FG t2i R@1: 0.02 and more). The note names common causes; it
cannot tell them apart.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import preview
from eccv_metric.core.view import View
from eccv_metric.engine.plan import Job
from eccv_metric.inputs.base import Input
from eccv_metric.measures.formulas import recall_at_chance
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.results import QueryScores

MARGIN = 3.0  # standard errors beyond the chance mean still counted as chance
SLACK = 0.001  # and this much more (fractions; a fraction of the mean rank for ranks): rows in place by coincidence
CHECKED = ("recall", "medr", "meanr", "map_at_r", "rprecision", "capped_rprecision")


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


def first_rank_at_chance(n: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of the rank of the first of ``r`` positives among ``n`` items in a random order."""
    return (n + 1) / (r + 1), r * (n + 1) * (n - r) / ((r + 1) ** 2 * (r + 2))


def rprecision_at_chance(n: np.ndarray, r: np.ndarray, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of (hits among the first ``drawn`` items) / ``drawn`` in a random order (``r`` positives)."""
    p = r / n
    return p, drawn * p * (1 - p) * (n - drawn) / np.maximum(n - 1, 1) / drawn**2


def map_at_r_at_chance(n: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Mean mAP@R of a random order: ``(H_R + (R - 1)(R - H_R) / (n - 1)) / n`` (module docstring)."""
    distinct = np.unique(r)
    harmonic = np.array([math.fsum(1.0 / np.arange(1, int(k) + 1)) for k in distinct])
    h = harmonic[np.searchsorted(distinct, r)]
    return (h + (r - 1) * (r - h) / np.maximum(n - 1, 1)) / n


def query_terms(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[np.ndarray, np.ndarray]:
    """(gallery size n, positives R) of each scored query, as the chance expectations read them."""
    dense = view.queries.positions(scores.query_ids).astype(np.int64)
    per_query = np.zeros(len(view.queries), dtype=np.int64)
    per_query[job.relevance.query] = job.relevance.n_positives
    sizes = view.gallery_sizes(dense, n_given).astype(np.float64)
    return sizes, np.minimum(per_query[dense], sizes).astype(np.float64)


def rank_band(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[float, float]:
    """(chance mean rank, the lowest mean rank still counted as chance) of a rank job's queries."""
    n, r = query_terms(view, job, scores, n_given)
    mean, var = first_rank_at_chance(n, np.maximum(r, 1.0))  # a scored query has a positive
    chance = float(mean.mean())
    return chance, chance - MARGIN * math.sqrt(float(var.sum())) / max(1, len(n)) - SLACK * chance


def precision_band(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[float, float]:
    """(chance mean, the highest mean still counted as chance) of an mAP@R, R-Precision or PMRP job."""
    n, r = query_terms(view, job, scores, n_given)
    n, r = np.maximum(n, 1.0), np.maximum(r, 1.0)
    if job.kind == "map_at_r":
        mean = map_at_r_at_chance(n, r)
        var = mean  # values in [0, 1]: Var <= E[X^2] <= E[X]
    else:
        drawn = np.minimum(r, job.cap) if job.kind == "capped_rprecision" and job.cap else r
        mean, var = rprecision_at_chance(n, r, drawn)
    chance = float(mean.mean())
    return chance, chance + MARGIN * math.sqrt(float(var.sum())) / max(1, len(n)) + SLACK


def given_gallery(source: Input, view: View) -> int:
    """How many gallery items the input ranks in an unrestricted view (its rows, extra ids included)."""
    mapping = getattr(source, "mapping", None)
    if mapping is None:
        return len(view.gallery)
    return len(mapping(view.collection, view.gallery_kind)[0])


def job_at_chance(job: Job, scores: QueryScores, source: Input) -> tuple[str, float, float] | None | bool:
    """``(shown metric, observed, chance mean)`` when the job is at chance level; ``False`` when it is above;
    ``None`` when it cannot tell (K near the gallery size, a gallery of a few items)."""
    view = job.view
    assert view is not None
    n_given = given_gallery(source, view)
    observed = float(np.mean(scores.values))
    if job.kind == "recall":
        band = chance_band(view, job, scores, n_given)
        if band is None:
            return False
        mean, high = band
        return None if high >= 0.5 else (job.metric, observed, mean) if observed <= high else False
    if METRIC_KINDS[job.kind].scale == "rank":
        mean, low = rank_band(view, job, scores, n_given)
        shown = float(np.median(scores.values)) if job.kind == "medr" else observed
        return None if low <= 2 else (job.metric, shown, mean) if observed >= low else False
    mean, high = precision_band(view, job, scores, n_given)
    return None if high >= 0.5 else (job.metric, observed, mean) if observed <= high else False


def chance_notes(jobs: list[Job], per_query: dict[str, dict[str, QueryScores]], source: Input) -> list[str]:
    """One note per (collection, direction) whose every metric is at chance level (see the module docstring)."""
    found: dict[tuple[str, str], list[tuple[str, float, float]] | None] = {}
    for job in jobs:
        if job.kind not in CHECKED or job.view is None or len(job.relevances) != 1:
            continue
        scores = per_query.get(job.metric, {}).get(job.direction)
        if scores is None or len(scores.values) == 0:
            continue
        key = (job.view.collection.name, job.direction)
        if key in found and found[key] is None:
            continue  # a metric of this direction is above chance already
        verdict = job_at_chance(job, scores, source)
        if verdict is False:
            found[key] = None
        elif verdict is not None:
            found.setdefault(key, []).append(verdict)  # type: ignore[union-attr]
    notes = []
    for (_, direction), rows in found.items():
        if rows:
            notes.append(note_text(direction, rows, source))
    return notes


CAUSES = "; common causes: "
UNTRAINED = "a model that was not trained or whose weights were not loaded"
MIXED = "image and caption embeddings of different models"


def note_text(direction: str, rows: list[tuple[str, float, float]], source: Input) -> str:
    """The note: the numbers, what random rankings give, and the common causes (it cannot tell them apart)."""
    shown = ", ".join(
        f"{m} = {observed:.4g} (random rankings: {mean:.4g}{' mean rank' if m.endswith(('medr', 'meanr')) else ''})"
        for m, observed, mean in rows[:3]
    )
    shown += f" and {len(rows) - 3} more" if len(rows) > 3 else ""
    if getattr(source, "kind", "") == "lists":
        order = "ranked ids that are row numbers, not the benchmark's item ids (COCO image / caption ids)"
    else:
        order = "rows not in the order of the benchmark's ids (give image_ids= / caption_ids=)"
    return f"{direction}: numbers at chance level ({shown}){CAUSES}{order}, {UNTRAINED}, {MIXED}"


def for_model(note: str) -> str:
    """A note of a model run (``evaluate_model``, ``evaluate --model``) as that front end advises: its items are
    encoded in the registry's order with their ids, both sides by the one model, so what is left is the model
    itself (the ids and rows advice of a user's matrix does not apply). Other notes are kept as they are."""
    head, found, _ = note.partition(CAUSES)
    if not found:
        return note
    return (
        f"{head}; likely cause: {UNTRAINED} (e.g. a checkpoint whose parameter names do not match the architecture "
        "loads as random weights: check the spec and the loading messages), or a model not made for this task"
    )


def tie_notes(source: Input) -> list[str]:
    """A note per constant score matrix, and per direction with queries whose every score is equal: their
    rankings are the rows' tie order, not the model's."""
    notes = [f"{note}" for note in getattr(source, "constant_notes", {}).values()]
    for direction, ids in sorted(getattr(source, "tied_queries", {}).items()):
        shown = preview(sorted(ids))
        notes.append(
            f"{direction}: every score of {len(ids)} query(ies) is equal ({shown}): their rankings are the rows' "
            "given order, not the model's (check the scores of these queries)"
        )
    return notes


def outside_frames() -> int:
    """The ``stacklevel`` of the first frame outside ``eccv_metric``, counted from the caller of this function:
    a warning then points at the user's line, not at a library line."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == "eccv_metric":
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def warn_chance(notes: list[str]) -> None:
    """Each note as a :class:`~eccv_metric.core.errors.ChanceLevelWarning` (shown once per message), pointing
    at the caller's line (the first frame outside this package)."""
    level = outside_frames()
    for note in notes:
        warnings.warn(note, ChanceLevelWarning, stacklevel=level)
