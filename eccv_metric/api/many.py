"""Many inputs, or many benchmarks of one input, planned once.

``evaluate_many(sources, metrics, ks)`` -> one Results per input;
``evaluate_benchmarks(source, benchmarks, ks)`` -> one Results for every benchmark of a run on one input.

For a leaderboard or a comparison of several models (their score matrices,
embeddings or ranked lists), the metric names are parsed and the jobs planned
once, and every ground-truth structure they hold (views, relevances, groups,
ratings, all cached by the resources) is built once and reused by every input;
each input then costs only its own ranking and scoring. The results are those
of :func:`eccv_metric.evaluate` on each input alone, value for value::

    from eccv_metric import ScoreMatrix, evaluate_many

    board = evaluate_many([ScoreMatrix(a), ScoreMatrix(b)], ["eccv_map_at_r", "coco_5k_recalls"])
    [r.means()["eccv_map_at_r"]["i2t"] for r in board]

For every benchmark of a run on one input (what ``evaluate_model`` scores on each item set's embeddings),
:func:`evaluate_benchmarks` plans each benchmark alone, so one that cannot be planned (its ground truth
missing) is skipped with its reason when asked, and scores all of them in one engine run: the image-caption
product is built once and serves coco_5k, coco_1k, eccv, cxc, cxc_extended, pm* on the same items, one pass
over the caption-caption product serves cxc_t2t and coco_t2t, one over the image-image product cxc_i2i::

    results, skipped = evaluate_benchmarks(Embeddings(images, captions), ["coco_5k", "eccv", "cxc", "cxc_t2t"])
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from contextlib import contextmanager

from eccv_metric.api.evaluate import check_input
from eccv_metric.api.evaluate import check_values
from eccv_metric.api.evaluate import default_resources
from eccv_metric.api.evaluate import plan_request
from eccv_metric.api.evaluate import request_for
from eccv_metric.api.evaluate import score_jobs
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core import progress
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.engine.plan import Job
from eccv_metric.engine.plan import refuse_unservable
from eccv_metric.engine.run import refuse_unscorable
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.measures.results import Results
from eccv_metric.measures.results import merge_results


def evaluate_many(
    sources: Sequence[Rankings | ScoredInput],
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = KS,
    *,
    benchmarks: Iterable[str] | str | None = None,
    resources: Resources | None = None,
    directions: Iterable[str] | str | None = None,
    partial: bool = False,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> list[Results]:
    """``[evaluate(s, metrics, ks, ...) for s in sources]``, planned once (see the module docstring).

    Every keyword means what it means in :func:`eccv_metric.evaluate` and applies to every input. The inputs'
    types, values (NaN / inf scores or embeddings), plans and what each cannot give (a missing modality, a
    direction its lists lack) are checked before any is scored; an input that cannot be scored is an error
    naming its place (``sources[i]: ...``).
    Inputs that make the same request (metrics and directions: the defaults follow each input) share one plan.
    """
    if isinstance(sources, (Rankings, ScoredInput)) or not isinstance(sources, Sequence):
        raise EvaluationError(
            f"sources must be a list of inputs (Rankings, ScoreMatrix or Embeddings), not {type(sources).__name__}"
        )
    for i, source in enumerate(sources):
        check_input(source, f"sources[{i}]")
        with named(i):
            check_values(source)
    resources = resources if resources is not None else default_resources()
    options = {"directions": directions, "partial": partial, "n_resamples": n_resamples, "seed": seed}
    plans: dict[tuple, list[Job]] = {}  # by the request each input makes (its defaults and directions may differ)
    prepared = []
    for i, source in enumerate(sources):  # every input's request, plan and what it cannot give, before any is scored
        with named(i):
            request = request_for(source, metrics, ks, benchmarks=benchmarks, **options)
            key = (tuple(request.names), request.directions)
            if key not in plans:
                plans[key] = plan_request(source, request, resources)  # refuses what this input cannot serve
            else:
                refuse_unservable(list(request.metrics), source, request.directions)
            refuse_unscorable(plans[key], source)
        prepared.append((source, request, plans[key]))
    results = []
    many = len(sources) > 1
    shown = progress.bar(f"scoring {len(sources)} inputs", len(sources), "input") if many else progress.NoBar()
    with shown:
        for i, (source, request, jobs) in enumerate(prepared):
            with named(i):
                results.append(score_jobs(source, request, jobs))
            shown.update(1)
    return results


def evaluate_benchmarks(
    source: Rankings | ScoredInput,
    benchmarks: Mapping[str, Iterable[str] | str | None] | Iterable[str] | str,
    ks: Iterable[int] | int = KS,
    *,
    resources: Resources | None = None,
    directions: Iterable[str] | str | None = None,
    partial: bool = False,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    skip_failing: bool = False,
) -> tuple[Results, dict[str, str]]:
    """Every benchmark of a run on one input, scored in one engine run (see the module docstring).

    ``benchmarks``: names (each benchmark's default metrics) or ``{benchmark: metric names (None: its
    defaults)}``; the other keywords mean what they mean in :func:`eccv_metric.evaluate`. Returns the results
    of every benchmark scored, the numbers :func:`eccv_metric.evaluate` gives for them in one call, and
    ``{benchmark: why}`` for those skipped. ``skip_failing``: a benchmark that cannot be planned or scored is
    skipped with its reason (``"<benchmark>: <error>"``) instead of raising; when the joint run fails, each
    benchmark is scored alone to tell which (the same numbers: every product is computed in the same blocks).
    """
    check_input(source, "the input")
    check_values(source)
    wanted = {benchmarks: None} if isinstance(benchmarks, str) else benchmarks
    if not isinstance(wanted, Mapping):
        wanted = dict.fromkeys(wanted)
    if not wanted:
        raise EvaluationError("benchmarks is empty: name at least one benchmark")
    resources = resources if resources is not None else default_resources()
    options = {"directions": directions, "partial": partial, "n_resamples": n_resamples, "seed": seed}
    skipped: dict[str, str] = {}
    planned: dict[str, tuple[Request, list[Job]]] = {}
    for name, metrics in wanted.items():
        try:
            request = request_for(source, metrics, ks, benchmarks=[name] if metrics is None else None, **options)
            planned[name] = (request, plan_request(source, request, resources))
        except EvaluationError as exc:
            if not skip_failing:
                raise
            skipped[name] = f"{name}: {exc}"
    if not planned:
        return Results({}), skipped
    request = next(iter(planned.values()))[0]  # the options every request shares
    try:
        return score_jobs(source, request, [j for _, jobs in planned.values() for j in jobs]), skipped
    except EvaluationError:
        if not skip_failing:
            raise
    parts = []
    for name, (alone, jobs) in planned.items():  # which benchmark fails: each alone
        try:
            parts.append(score_jobs(source, alone, jobs))
        except EvaluationError as exc:
            skipped[name] = f"{name}: {exc}"
    return merge_results(parts), skipped


@contextmanager
def named(i: int) -> Iterator[None]:
    """An error about one input names its place: ``sources[i]: ...`` (same exception type); any other exception
    raised while planning or scoring it (a caller's pair scorer failing) keeps its type and message and gets a
    note naming the input (Python >= 3.11 shows it under the traceback)."""
    try:
        yield
    except EvaluationError as exc:
        raise type(exc)(f"sources[{i}]: {exc}") from exc
    except Exception as exc:
        if hasattr(exc, "add_note"):  # Python >= 3.11
            exc.add_note(f"raised by sources[{i}] of evaluate_many")
        raise
