"""Several models in one run: :func:`evaluate_models` (``eccv-caption evaluate --model A --model B ...``).

    from eccv_metric.models.many import evaluate_models

    runs = evaluate_models(["hf:openai/clip-vit-base-patch32", "hf:openai/clip-vit-base-patch16"], data="eccv_caption")
    [r.results.means() for r in runs]   # each model's numbers, as a run of its own gives them

Each model is loaded and run in turn by :func:`~eccv_metric.models.run.evaluate_model_request`, with its own
results, provenance and cache entries (one model in memory at a time); ``save_embeddings`` names a folder
receiving one subfolder per model (:func:`model_slug`). Each model decodes its own images (decoding once for
several models sharing a preprocessing is not done here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path

from eccv_metric.benchmarks.request import Request
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.run import ModelResults
from eccv_metric.models.run import evaluate_model_request
from eccv_metric.models.run import model_request


def model_slug(k: int, model: object) -> str:
    """A file name for the k-th model's outputs: ``<k>-<its spec, safe characters only>``."""
    spec = model if isinstance(model, str) else type(model).__name__
    return f"{k}-" + re.sub(r"[^A-Za-z0-9._-]+", "_", str(spec)).strip("_")[-80:]


def evaluate_models(
    models: Sequence[object],
    data: str | Path,
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = KS,
    *,
    benchmarks: Iterable[str] | str | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    **kwargs: object,
) -> list[ModelResults]:
    """:func:`~eccv_metric.models.run.evaluate_model` for each of ``models`` (specs, Encoders or objects), in
    order; keywords as there (``save_embeddings``: a folder of one subfolder per model)."""
    request, skip = model_request(metrics, ks, benchmarks, n_resamples, seed)
    return evaluate_models_request(models, data, request, skip_unavailable=skip, **kwargs)


def evaluate_models_request(
    models: Sequence[object],
    data: str | Path,
    request: Request,
    *,
    save_embeddings: str | Path | None = None,
    **kwargs: object,
) -> list[ModelResults]:
    """:func:`evaluate_models` on a parsed :class:`~eccv_metric.benchmarks.request.Request` (what the CLI builds)."""
    if isinstance(models, str) or not models:
        raise EvaluationError("models= takes a list of one model or more (specs or objects)")
    runs = []
    for k, model in enumerate(models):
        save = None if save_embeddings is None else Path(save_embeddings) / model_slug(k, model)
        runs.append(evaluate_model_request(model, data, request, save_embeddings=save, **kwargs))  # type: ignore[arg-type]
    return runs
