"""Several models in one run: :func:`evaluate_models` (``eccv-caption evaluate --model A --model B ...``).

    from eccv_metric.models.many import evaluate_models

    runs = evaluate_models(["hf:openai/clip-vit-base-patch32", "hf:openai/clip-vit-base-patch16"], data="eccv_caption")
    [r.results.means() for r in runs]   # each model's numbers, as a run of its own gives them

Each model gets its own results, provenance and cache entries, the numbers a run of its own gives. Images are
decoded once for the models that prepare them the same way (:mod:`eccv_metric.models.shared`: most CLIP
checkpoints share 224-pixel bicubic crops with the same mean and std): every model of the call is loaded
first, then each run in the given order encodes, the first of a group feeding its prepared batches to the
others. Memory: every model at once. ``share_decode=False``: one model loaded at a time, each decoding its
own images. ``save_embeddings`` names a folder receiving one subfolder per model (:func:`model_slug`).
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
from eccv_metric.models.digests import FileDigests
from eccv_metric.models.run import LoadedRun
from eccv_metric.models.run import ModelResults
from eccv_metric.models.run import RunOptions
from eccv_metric.models.run import finish_run
from eccv_metric.models.run import model_request
from eccv_metric.models.run import open_run
from eccv_metric.models.shared import link
from eccv_metric.models.source import DataSource


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
    order; keywords as there (``save_embeddings``: a folder of one subfolder per model), and ``share_decode``
    (default True: images decoded once for the models that prepare them alike, every model loaded at once;
    False: one model at a time, see the module docstring)."""
    request, skip = model_request(metrics, ks, benchmarks, n_resamples, seed)
    return evaluate_models_request(models, data, request, skip_unavailable=skip, **kwargs)


def evaluate_models_request(
    models: Sequence[object],
    data: str | Path,
    request: Request,
    *,
    save_embeddings: str | Path | None = None,
    share_decode: bool = True,
    **kwargs: object,
) -> list[ModelResults]:
    """:func:`evaluate_models` on a parsed :class:`~eccv_metric.benchmarks.request.Request` (what the CLI builds);
    keywords as :class:`~eccv_metric.models.run.RunOptions` takes them."""
    if isinstance(models, str) or not models:
        raise EvaluationError("models= takes a list of one model or more (specs or objects)")
    options = RunOptions(**kwargs)  # type: ignore[arg-type]
    source = DataSource(data, options.images, options.token, FileDigests(options.root))
    folder = None if save_embeddings is None else Path(save_embeddings)
    saves = [None if folder is None else folder / model_slug(k, m) for k, m in enumerate(models)]
    pairs = list(zip(models, saves, strict=True))
    if not share_decode:
        return [finish_run(open_run(model, source, request, options, save)) for model, save in pairs]
    runs: list[LoadedRun | None] = [open_run(model, source, request, options, save) for model, save in pairs]
    link([run.store for run in runs if run is not None])
    out = []
    for k, run in enumerate(runs):
        runs[k] = None  # released once its numbers are made
        out.append(finish_run(run))  # type: ignore[arg-type]
    return out
