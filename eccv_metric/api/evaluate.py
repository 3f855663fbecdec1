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
neither: defaults that follow the input (:mod:`eccv_metric.benchmarks.request`): the official ones (COCO
1K/5K R@1, CxC R@1, ECCV R@1 and mAP@R) for image-caption inputs.
"""

from __future__ import annotations

from collections.abc import Iterable

from eccv_metric.api.chance import chance_notes
from eccv_metric.api.chance import warn_chance
from eccv_metric.api.tie_notes import tie_notes
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.request import directions_given
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.engine.plan import Job
from eccv_metric.engine.plan import plan
from eccv_metric.engine.plan import refuse_unservable
from eccv_metric.engine.run import run
from eccv_metric.engine.ties import Tally
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.measures.results import Results


def default_resources() -> Resources:
    """The ground truth of the ``eccv_caption`` wheel, CxC and FG from their canonical files (loaded once)."""
    return ResourceOptions().resources()


def evaluate(
    source: Rankings | ScoredInput,
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = KS,
    *,
    benchmarks: Iterable[str] | str | None = None,
    resources: Resources | None = None,
    directions: Iterable[str] | str | None = None,
    partial: bool = False,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> Results:
    """Per-query values of every requested metric in every direction the input gives (see the module docstring).

    ``source``: :class:`~eccv_metric.inputs.given.Rankings`, :class:`~eccv_metric.inputs.matrix.ScoreMatrix`,
    :class:`~eccv_metric.inputs.embeddings.Embeddings` or :class:`~eccv_metric.inputs.twostage.TwoStage`.
    ``resources``: where the ground truth comes from (default: the ``eccv_caption`` wheel; CxC and FG files
    downloaded once). ``directions``: the image-caption directions
    to score (default: both, or those the ranked lists give). ``partial``: score only the queries that have
    a ranked list (means over those: not comparable with full results); by default a missing query is an
    error. ``n_resamples`` / ``seed``: the bootstrap of the CxC correlations.

    When every metric of a direction is at chance level (:mod:`eccv_metric.api.chance`), ``results.notes`` says
    so and a :class:`~eccv_metric.core.errors.ChanceLevelWarning` is issued (at the caller's line), with common causes
    (also when every score of the input, or of a query, is equal). ``results.notes`` also names the values the
    order of equal scores decides, and a two-stage input's values its first stage decides
    (:mod:`eccv_metric.api.tie_notes`; not warned: a float matrix holds a few equal scores by chance).
    """
    check_input(source, "the input")
    check_values(source)
    request = request_for(
        source,
        metrics,
        ks,
        benchmarks=benchmarks,
        directions=directions,
        partial=partial,
        n_resamples=n_resamples,
        seed=seed,
    )
    if metrics is not None or benchmarks is not None or not isinstance(source, ScoredInput):
        return evaluate_request(source, request, resources)
    try:  # defaults of one modality alone (images: cxc_i2i): a failure names the half that is missing first
        jobs = plan_request(source, request, resources)
    except (EvaluationError, OSError) as exc:
        alone = one_half(source, request)
        if alone is None:
            raise
        raise EvaluationError(f"{alone} (they failed: {exc})") from exc
    return score_jobs(source, request, jobs)


def one_half(source: ScoredInput, request: Request) -> str | None:
    """For an input of one modality alone scored by its defaults: what it lacks for the image-caption
    benchmarks, in keywords (front ends put them in their words); None for an image-caption input."""
    if any(source.cannot_direction(d) is None for d in ("i2t", "t2i")):
        return None
    kinds = [k for k in ("image", "caption") if source.n_rows(k) is not None]
    if source.kind == "embeddings":
        if len(kinds) != 1:  # both, of different dimensions: the input's own error says so
            return None
        given, missing = f"{kinds[0]}_embeddings=", f"{'caption' if kinds[0] == 'image' else 'image'}_embeddings="
    else:
        given, missing = " / ".join(f"{k}_scores=" for k in kinds), "the image x caption scores="
    names = ", ".join(dict.fromkeys(r.benchmark.name for r in request.metrics))
    was = "was" if len(kinds) == 1 else "were"
    need = f"the image-caption benchmarks need {missing} too"
    return f"only {given} {was} given: {need}; scored alone, the defaults are {names}"


def check_input(source: object, what: str) -> None:
    """Refuse what is none of the input types; ``what`` names it in the error."""
    if not isinstance(source, (Rankings, ScoredInput)):
        raise EvaluationError(
            f"{what} must be Rankings, ScoreMatrix, Embeddings or TwoStage (eccv_metric), not {type(source).__name__}"
        )


def check_values(source: Rankings | ScoredInput) -> None:
    """Refuse scores or embeddings whose values cannot be scored (NaN / inf, zero rows for a cosine): found when
    the input was made, raised here, before anything is planned (a caller of many inputs names which)."""
    if isinstance(source, ScoredInput):
        source.check_values()


def request_for(source: Rankings | ScoredInput, metrics: object, ks: object, **options: object) -> Request:
    """The :class:`~eccv_metric.benchmarks.request.Request` an input makes with :func:`evaluate`'s keywords
    (its defaults follow the directions it gives and the benchmarks it says it was made for)."""
    return Request.parse(
        metrics,  # type: ignore[arg-type]
        ks,
        given=directions_given(source),
        made_for=source.made_for,
        **options,  # type: ignore[arg-type]
    )


def evaluate_request(source: Rankings | ScoredInput, request: Request, resources: Resources | None = None) -> Results:
    """Score a parsed :class:`~eccv_metric.benchmarks.request.Request` (what :func:`evaluate` does after parsing)."""
    return score_jobs(source, request, plan_request(source, request, resources))


def plan_request(source: Rankings | ScoredInput, request: Request, resources: Resources | None = None) -> list[Job]:
    """The request's jobs on ``resources`` (default: the wheel's); what the input cannot serve is refused first,
    before any resource loads (or downloads)."""
    requests = list(request.metrics)
    refuse_unservable(requests, source, request.directions)
    return plan(requests, resources if resources is not None else default_resources(), request.directions)


def score_jobs(source: Rankings | ScoredInput, request: Request, jobs: list[Job]) -> Results:
    """Run planned jobs on one input: per-query values, the input's notes (what reading it found), the chance and
    tie notes, whether queries were left out."""
    left_out = False
    tally = Tally()
    if request.partial and source.kind == "lists":
        try:  # lists that give every query are scored (and labelled) as full, whatever partial says
            per_query = run(jobs, source, False, request.n_resamples, request.seed)
        except EvaluationError:  # scored again over the queries given: fails again unless queries were missing
            per_query, left_out = run(jobs, source, True, request.n_resamples, request.seed), True
    else:
        per_query = run(jobs, source, False, request.n_resamples, request.seed, tally)
    notes = list(source.notes) + chance_notes(jobs, per_query, source) + tie_notes(source, tally, jobs, per_query)
    warn_chance(notes)  # not the quiet ones (api.chance.QuietNote)
    return Results(per_query, notes, partial=left_out)
