"""The one entry point: ``evaluate(input, metrics, ks)`` -> :class:`~eccv_metric.measures.results.Results`.

Every front end (the official-style ``Metrics``, the one compatibility shim,
the CLI, the evaluate module, the Space) turns its own transport into an
input and calls this function::

    from eccv_metric import evaluate, Embeddings, Rankings, ScoreMatrix

    results = evaluate(Embeddings(image_embeddings, caption_embeddings), ["eccv_map_at_r", "coco_1k_recalls"])
    results.means()            # {"eccv_map_at_r": {"i2t": ..., "t2i": ...}, "coco_1k_r1": {...}, ...}
    results["eccv_map_at_r"]["i2t"].values   # per-query values (query ids in .query_ids)

``metrics``: metric names (``eccv-caption benchmarks`` lists every benchmark
and its names); ``benchmarks``: benchmark names whose default metrics to add;
neither: the official defaults (COCO 1K/5K R@1, CxC R@1, ECCV R@1 and mAP@R).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eccv_metric.api.chance import chance_notes
from eccv_metric.api.chance import tie_notes
from eccv_metric.api.chance import warn_chance
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.engine.plan import CROSS_MODAL
from eccv_metric.engine.plan import plan
from eccv_metric.engine.plan import refuse_unservable
from eccv_metric.engine.run import run
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.measures.results import Results

_DEFAULT: list[Resources] = []


def default_resources() -> Resources:
    """The ground truth of the ``eccv_caption`` wheel, CxC and FG from their canonical files (loaded once)."""
    if not _DEFAULT:
        _DEFAULT.append(Resources())
    return _DEFAULT[0]


def parse_directions(directions: Iterable[str] | str | None) -> list[str] | None:
    """``"i2t"``, ``"t2i"`` or a list of them (each once); None: both."""
    if directions is None:
        return None
    given: Any = [directions] if isinstance(directions, str) else directions
    if isinstance(given, dict) or not isinstance(given, Iterable):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i', not {directions!r:.40}")
    given = list(given)
    if not given or any(d not in CROSS_MODAL for d in given) or len(set(given)) != len(given):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i' (each once), not {given!r:.60}")
    return given


def evaluate(
    source: Rankings | ScoredInput,
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = (1, 5, 10),
    *,
    benchmarks: Iterable[str] | str | None = None,
    resources: Resources | None = None,
    directions: Iterable[str] | str | None = None,
    partial: bool = False,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Results:
    """Per-query values of every requested metric in every direction the input gives (see the module docstring).

    ``source``: :class:`~eccv_metric.inputs.given.Rankings`, :class:`~eccv_metric.inputs.scored.ScoreMatrix` or
    :class:`~eccv_metric.inputs.scored.Embeddings`. ``resources``: where the ground truth comes from (default:
    the ``eccv_caption`` wheel; CxC and FG files downloaded once). ``directions``: the image-caption directions
    to score (default: both, or those the ranked lists give). ``partial``: score only the queries that have
    a ranked list (means over those: not comparable with full results); by default a missing query is an
    error. ``n_resamples`` / ``seed``: the bootstrap of the CxC correlations.

    When every metric of a direction is at chance level (:mod:`eccv_metric.api.chance`), ``results.notes`` says
    so and a :class:`~eccv_metric.core.errors.ChanceLevelWarning` is issued (at the caller's line), with common causes.
    """
    if not isinstance(source, (Rankings, ScoredInput)):
        raise EvaluationError(
            f"the input must be Rankings, ScoreMatrix or Embeddings (eccv_metric.inputs), not {type(source).__name__}"
        )
    partial = require_bool(partial, "partial")
    requests = parse_targets(metrics, ks, benchmarks)
    wanted = parse_directions(directions)
    if isinstance(source, Rankings):
        given = [d for d in CROSS_MODAL if d in source.raw]
        wanted = given if wanted is None else [d for d in wanted if d in given]
    refuse_unservable(requests, source, wanted)  # before resources load (or download): the input's fault first
    jobs = plan(requests, resources if resources is not None else default_resources(), wanted)
    per_query = run(jobs, source, partial, n_resamples, seed)
    notes = chance_notes(jobs, per_query, source) + tie_notes(source)
    warn_chance(notes)
    return Results(per_query, notes)
