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
from collections.abc import Callable

import numpy as np

from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.view import View
from eccv_metric.engine.plan import Job
from eccv_metric.inputs.base import Input
from eccv_metric.measures.kinds import METRIC_KINDS
from eccv_metric.measures.results import QueryScores

MARGIN = 3.0  # standard errors beyond the chance mean still counted as chance
SLACK = 0.001  # and this much more (fractions; a fraction of the mean rank for ranks): rows in place by coincidence


def above_bound(view: View, job: Job, scores: QueryScores, n_given: int, bound: Callable) -> bool:
    """Whether the observed mean is above even a cheap upper bound of the chance band (then no exact chance is
    needed): first one bound for the whole view (unrestricted: one gallery size, the largest R), then per query."""
    observed, n = float(np.mean(scores.values)), max(1, len(scores.values))
    if not view.restricted:  # the same bound with the largest R and the one gallery size: no per-query work
        size = n_given - view.exclude_self
        k = min(int(job.k), size)  # type: ignore[arg-type]
        high = min(1.0, float(bound(size, float(np.max(job.relevance.n_positives, initial=0)), k)))
        if observed > high + MARGIN * math.sqrt(high / n) + SLACK:
            return True
    sizes, n_pos = query_terms(view, job, scores, n_given)
    k = min(int(job.k), int(sizes.max(initial=0)))  # type: ignore[arg-type]
    high = float(np.minimum(1.0, bound(sizes, n_pos, k)).mean())
    return observed > high + MARGIN * math.sqrt(high / n) + SLACK


def query_terms(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[np.ndarray, np.ndarray]:
    """(gallery size n, positives R) of each scored query, as the chance expectations read them."""
    dense = view.queries.positions(scores.query_ids).astype(np.int64)
    per_query = np.zeros(len(view.queries), dtype=np.int64)
    per_query[job.relevance.query] = job.relevance.n_positives
    sizes = view.gallery_sizes(dense, n_given).astype(np.float64)
    return sizes, np.minimum(per_query[dense], sizes).astype(np.float64)


def chance_level(view: View, job: Job, scores: QueryScores, n_given: int) -> tuple[float, float]:
    """(the chance mean, the limit still counted as chance: above the mean for a metric where higher is better,
    below it for ranks) from the kind's per-query expectation and variance (:attr:`MetricKind.chance`)."""
    kind = METRIC_KINDS[job.kind]
    n, r = query_terms(view, job, scores, n_given)
    mean, var = kind.chance(n, r, job.k, job.cap)  # type: ignore[misc]
    chance = float(mean.mean())
    spread = MARGIN * math.sqrt(float(var.sum())) / max(1, len(n))
    return (chance, chance + spread + SLACK) if kind.higher_is_better else (chance, chance - spread - SLACK * chance)


def given_gallery(source: Input, view: View) -> int:
    """How many gallery items the input ranks in an unrestricted view (its rows, extra ids included)."""
    mapping = getattr(source, "mapping", None)
    if mapping is None:
        return len(view.gallery)
    return len(mapping(view.collection, view.gallery_kind)[0])


def job_at_chance(job: Job, scores: QueryScores, source: Input) -> tuple[str, float, float, str] | None | bool:
    """``(shown metric, observed, chance mean, unit of the mean)`` when the job is at chance level; ``False`` when
    it is above; ``None`` when it cannot tell (K near the gallery size, a gallery of a few items: a band of
    fractions reaching 0.5, of ranks reaching rank 2)."""
    view = job.view
    assert view is not None
    kind = METRIC_KINDS[job.kind]
    n_given = given_gallery(source, view)
    if kind.chance_bound is not None and above_bound(view, job, scores, n_given, kind.chance_bound):
        return False
    observed = float(np.mean(scores.values))
    mean, limit = chance_level(view, job, scores, n_given)
    shown = float(np.median(scores.values)) if kind.aggregate == "median" else observed
    verdict = (job.metric, shown, mean, " mean rank" if kind.scale == "rank" else "")
    if kind.higher_is_better:
        return None if limit >= 0.5 else verdict if observed <= limit else False
    return None if limit <= 2 else verdict if observed >= limit else False


def chance_notes(jobs: list[Job], per_query: dict[str, dict[str, QueryScores]], source: Input) -> list[str]:
    """One note per (collection, direction) whose every metric is at chance level (see the module docstring)."""
    found: dict[tuple[str, str], list[tuple[str, float, float, str]] | None] = {}
    for job in jobs:
        if METRIC_KINDS[job.kind].chance is None or job.view is None or len(job.relevances) != 1:
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


def note_text(direction: str, rows: list[tuple[str, float, float, str]], source: Input) -> str:
    """The note: the numbers, what random rankings give, and the common causes (it cannot tell them apart)."""
    shown = ", ".join(
        f"{m} = {observed:.4g} (random rankings: {mean:.4g}{unit})" for m, observed, mean, unit in rows[:3]
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


def outside_frames() -> int:
    """The ``stacklevel`` of the first frame outside ``eccv_metric``, counted from the caller of this function:
    a warning then points at the user's line, not at a library line."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == "eccv_metric":
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


class QuietNote(str):
    """A note for ``Results.notes`` only, never warned (:mod:`eccv_metric.api.tie_notes`)."""

    __slots__ = ()


def warn_chance(notes: list[str]) -> None:
    """Each note but the quiet ones (:class:`QuietNote`) as a :class:`~eccv_metric.core.errors.ChanceLevelWarning`
    (shown once per message), pointing at the caller's line (the first frame outside this package)."""
    level = outside_frames()
    for note in notes:
        if not isinstance(note, QuietNote):
            warnings.warn(note, ChanceLevelWarning, stacklevel=level)
