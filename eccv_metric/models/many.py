"""Several models in one run: :func:`evaluate_models` (``eccv-caption evaluate --model A --model B ...``).

    from eccv_metric.models.many import evaluate_models

    runs = evaluate_models(["hf:openai/clip-vit-base-patch32", "hf:openai/clip-vit-base-patch16"], data="eccv_caption")
    [r.results.means() for r in runs]   # each model's numbers, as a run of its own gives them

Each model gets its own results, provenance and cache entries, the numbers a run of its own gives. Images are
decoded once for the models that prepare them the same way (:mod:`eccv_metric.models.encoding.shared`: most CLIP
checkpoints share 224-pixel bicubic crops with the same mean and std): the models whose image preprocessing
is the same, read before their weights load (an ``hf:`` model's image processor: :func:`load_groups`), are
loaded together, then each of them encodes in the given order, the first feeding its prepared batches to the
others. A model whose preprocessing is known only once loaded (``open_clip:``, ``st:``, a Python object)
joins the models loaded just before it while they share a decode (a sweep listing its open_clip models one
after another decodes once). Memory: the largest such group of models at once, plus one while it is loaded.
``share_decode=False``: one model loaded at a time, each decoding its own images. A model whose every
embedding is cached is not loaded at all (:mod:`eccv_metric.models.cache.recall`): a sweep rerun loads none.
``save_embeddings`` names a folder receiving one subfolder per model (:func:`model_slug`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path

from eccv_metric.benchmarks.request import Request
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.encoding.shared import link
from eccv_metric.models.encoding.shared import share_key
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.spec import image_key
from eccv_metric.models.families.torchutil import start_workers_early
from eccv_metric.models.run import LoadedRun
from eccv_metric.models.run import ModelResults
from eccv_metric.models.run import Opening
from eccv_metric.models.run import RunOptions
from eccv_metric.models.run import finish_run
from eccv_metric.models.run import model_request
from eccv_metric.models.run import open_run


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
    (default True: images decoded once for the models that prepare them alike, loaded together;
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
    options.sweep = len(models) > 1  # a keyword one model ignores may be another's: said, never refused
    source = options.source(data)
    folder = None if save_embeddings is None else Path(save_embeddings)
    saves = [None if folder is None else folder / model_slug(k, m) for k, m in enumerate(models)]
    pairs = list(zip(models, saves, strict=True))
    if not share_decode:
        return [finish_run(open_run(model, source, request, options, save)) for model, save in pairs]
    out: dict[int, ModelResults] = {}
    openings: dict[int, Opening] = {}  # the models to load, each planned once (and its Hub commit asked once)
    for k, (model, save) in enumerate(pairs):  # every embedding cached: scored without loading (models.cache.recall)
        openings[k] = Opening(model, source, request, options, save)
        recalled = openings[k].recalled()
        if recalled is not None:
            out[k] = finish_run(recalled)
            del openings[k]
    rest = sorted(openings)
    held: dict[int, LoadedRun] = {}  # models not known before loading, loaded, sharing one share_key

    def opened(k: int) -> LoadedRun:
        return open_run(pairs[k][0], source, request, options, pairs[k][1], opening=openings.pop(k))

    def run_together(runs: dict[int, LoadedRun]) -> None:
        link([store for k in sorted(runs) if (store := runs[k].store) is not None])
        for k in sorted(runs):
            out[k] = finish_run(runs.pop(k))  # each model released once its numbers are made

    for group, known in load_groups([models[k] for k in rest], options):
        if known:
            run_together(held)
            run_together({rest[i]: opened(rest[i]) for i in group})
            continue
        k = rest[group[0]]  # known once loaded: it joins the models held before it when they share
        held = joined(held, k, opened(k), run_together)
    run_together(held)
    return [out[k] for k in range(len(models))]


def joined(
    held: dict[int, LoadedRun], k: int, loaded: LoadedRun, run_together: Callable[[dict[int, LoadedRun]], None]
) -> dict[int, LoadedRun]:
    """``held`` with model ``k`` (just loaded) when it shares their decode; else ``held`` run first and ``k``
    alone. A function of its own: no name of the caller's keeps a model that has run (nor, through its store's
    companions, the models it fed) loaded while the next one loads."""
    key = share_key(loaded.store) if loaded.store is not None else None
    before = next(iter(held.values())).store if held else None
    if not held or key is None or before is None or key != share_key(before):
        run_together(held)
    held[k] = loaded
    return held


def load_groups(models: Sequence[object], options: RunOptions) -> list[tuple[list[int], bool]]:
    """The models loaded together, by index, and whether their image preprocessing was known before loading:
    models whose preprocessing, read before their weights load (:func:`~eccv_metric.models.families.spec.image_key`),
    is the same form one group; any other model is a group of one (``False``: once loaded, it joins the
    models just before it that share its decode, :func:`evaluate_models_request`). Groups in the order of
    their first model; within a group, the given order."""
    load = LoadOptions(options.device, options.precision, options.batch_size, options.text_batch_size,
                       workers=options.workers)  # fmt: skip
    start_workers_early(models, load)  # the fork server's imports beside the image_key probes' (torchutil)
    groups: dict[object, list[int]] = {}
    for k, model in enumerate(models):
        key = image_key(model, load)
        groups.setdefault(key if key is not None else ("unknown", k), []).append(k)
    return [(group, not (isinstance(key, tuple) and key[0] == "unknown")) for key, group in groups.items()]
