"""From a model and a data source to every number: :func:`evaluate_model`.

    from eccv_metric.models import evaluate_model

    out = evaluate_model("hf:openai/clip-vit-base-patch32", data="eccv_caption")   # a built folder or Hub repo
    out.results.means()     # every default metric of every benchmark whose items are available
    out.provenance          # model spec, weights digest, data revision, package version, device, ...
    out.skipped             # {benchmark: why}

One direction, each step with one owner: the request is parsed (nothing asked: every benchmark's defaults), or
the :class:`~eccv_metric.benchmarks.request.Request` a front end built), the model loads from its family
(:mod:`eccv_metric.models.families.spec`), the plan says what to encode and what cannot be scored
(:mod:`eccv_metric.models.plan`: no torch), the store gives every item set's embeddings, each item encoded
once and cached (:mod:`eccv_metric.models.cache.store`), and the score step ranks them by the model's similarity
with :func:`eccv_metric.evaluate`, one call per Embeddings group (:mod:`eccv_metric.models.score`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.about import __version__
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.provenance import build_digests
from eccv_metric.core.provenance import utc_now
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.measures.results import Results
from eccv_metric.models.cache.entries import cache_root
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.cache.recall import files_key
from eccv_metric.models.cache.recall import recall
from eccv_metric.models.cache.recall import remember
from eccv_metric.models.cache.store import EmbeddingStore
from eccv_metric.models.data.digests import FileDigests
from eccv_metric.models.data.digests import stamp
from eccv_metric.models.data.source import DataSource
from eccv_metric.models.encoding.decode import DECODERS
from eccv_metric.models.encoding.decode import Decoder
from eccv_metric.models.encoding.decode import check_decode
from eccv_metric.models.encoding.decode import gpu_decoder
from eccv_metric.models.encoding.text_batches import default_text_batch_size
from eccv_metric.models.encoding.workers import default_workers
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.spec import load_model
from eccv_metric.models.plan import EVERY
from eccv_metric.models.plan import Plan
from eccv_metric.models.plan import make_plan
from eccv_metric.models.score import ranking_device
from eccv_metric.models.score import score


@dataclass
class ModelResults:
    """What :func:`evaluate_model` returns: the numbers, where they come from, what was skipped and why."""

    results: Results
    provenance: dict
    skipped: dict[str, str] = field(default_factory=dict)
    embeddings: dict[str, Embeddings] = field(default_factory=dict)


def model_request(
    metrics: Iterable[str] | str | None,
    ks: Iterable[int] | int,
    benchmarks: Iterable[str] | str | None,
    n_resamples: int,
    seed: int,
) -> tuple[Request, bool]:
    """A model run's request from Python keywords, and whether what cannot be scored is skipped (nothing was
    asked: every benchmark the data and the model allow) rather than an error."""
    request = Request.parse(metrics, ks, benchmarks=benchmarks, n_resamples=n_resamples, seed=seed, made_for=EVERY)  # type: ignore[arg-type]
    return request, metrics is None and benchmarks is None


def evaluate_model(
    model: object,
    data: str | Path,
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = KS,
    *,
    benchmarks: Iterable[str] | str | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    images: Iterable[str | Path] | str | Path | None = None,
    resources: Resources | None = None,
    device: str | None = None,
    precision: str = "fp32",
    batch_size: int = 64,
    text_batch_size: int | None = None,
    workers: int | None = None,
    decode: str = "pil",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    save_embeddings: str | Path | None = None,
    token: str | None = None,
) -> ModelResults:
    """Encode what the benchmarks need with ``model`` (a spec, an Encoder or an object) and score it.

    ``metrics`` / ``benchmarks`` / ``ks`` / ``n_resamples`` / ``seed`` as in :func:`eccv_metric.evaluate`;
    nothing asked: every benchmark whose items are available, the others skipped with their reason. The
    other keywords as in :func:`evaluate_model_request`.
    """
    request, skip = model_request(metrics, ks, benchmarks, n_resamples, seed)
    return evaluate_model_request(
        model,
        data,
        request,
        skip_unavailable=skip,
        images=images,
        resources=resources,
        device=device,
        precision=precision,
        batch_size=batch_size,
        text_batch_size=text_batch_size,
        workers=workers,
        decode=decode,
        cache=cache,
        cache_dir=cache_dir,
        save_embeddings=save_embeddings,
        token=token,
    )


def evaluate_model_request(
    model: object,
    data: str | Path,
    request: Request,
    *,
    skip_unavailable: bool = False,
    images: Iterable[str | Path] | str | Path | None = None,
    resources: Resources | None = None,
    resource_options: ResourceOptions | None = None,
    device: str | None = None,
    precision: str = "fp32",
    batch_size: int = 64,
    text_batch_size: int | None = None,
    workers: int | None = None,
    decode: str = "pil",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    save_embeddings: str | Path | None = None,
    token: str | None = None,
) -> ModelResults:
    """:func:`evaluate_model` on a parsed :class:`~eccv_metric.benchmarks.request.Request` (what the CLI builds).

    ``skip_unavailable``: a benchmark that cannot be scored is skipped with its reason (else an error).
    ``data``: a folder built by ``eccv-caption build`` or its Hub repo (``token``: a private one's);
    ``images``: folders / zips (or one) with the pixels a build does not embed (COCO val2014, unlabeled2017,
    Flickr30K). ``resources``: the ground truth (default: the data's own, where ``resource_options`` (a
    :class:`~eccv_metric.benchmarks.resource_options.ResourceOptions`) names none). ``device`` / ``precision`` /
    ``batch_size`` (images) / ``text_batch_size`` (captions, cut in length order; default 1024 on CUDA, 256 on a
    CPU) / ``workers`` (image decoding processes; default: cores - 1 on a GPU, cores up to 8 on a CPU): how the
    model runs.
    ``decode``: ``pil`` (PIL in the workers) or ``gpu`` (opt-in: nvJPEG and the model's preprocessing on the
    CUDA device, :mod:`eccv_metric.models.encoding.decode`; slightly different pixels, so its own cache entries).
    ``cache``: reuse and keep embeddings under ``cache_dir`` (default: the Hugging Face cache).
    ``save_embeddings``: a folder receiving ``<set>/{image,caption}_embeddings.npy`` and ids.
    """
    options = RunOptions(
        skip_unavailable, images, resources, resource_options, device, precision, batch_size, text_batch_size,
        workers, decode, cache, cache_dir, token,
    )  # fmt: skip
    return finish_run(open_run(model, options.source(data), request, options, save_embeddings))


@dataclass
class RunOptions:
    """How a model run goes: the keywords of :func:`evaluate_model_request` beside the model, the data, the
    request and the output folder, checked when made (one error naming the keyword)."""

    skip_unavailable: bool = False
    images: Iterable[str | Path] | str | Path | None = None
    resources: Resources | None = None
    resource_options: ResourceOptions | None = None
    device: str | None = None
    precision: str = "fp32"
    batch_size: int = 64
    text_batch_size: int | None = None
    workers: int | None = None
    decode: str = "pil"
    cache: bool = True
    cache_dir: str | Path | None = None
    token: str | None = None
    cache_folder: CacheFolder | None = field(default=None, init=False, repr=False)  # made by source()

    def __post_init__(self) -> None:
        for name in ("batch_size", "text_batch_size", "workers"):
            value, least = getattr(self, name), 0 if name == "workers" else 1
            if value is None and name != "batch_size":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                what = "an integer >= 0" if least == 0 else "a positive integer"
                raise EvaluationError(f"{name}= must be {what}, not {value!r:.20}")
        if self.decode not in DECODERS:
            raise EvaluationError(f"decode= must be one of {', '.join(DECODERS)}, not {self.decode!r:.20}")

    def source(self, data: str | Path) -> DataSource:
        """The run's items: ``data`` with these ``images`` and ``token``, its files' digests remembered under
        the cache (also the model's weight files'). First of a run: the cache's folder is checked (one error
        naming it when it is a file or cannot be made) and made (:attr:`folder`)."""
        if self.root is not None:
            self.cache_folder = CacheFolder(self.root)
            self.cache_folder.check()
        return DataSource(data, self.images, self.token, FileDigests(self.folder))

    def load(self, digests: FileDigests) -> LoadOptions:
        """How the model loads (``digests``: the run's file-digest memo, for its weight files)."""
        return LoadOptions(self.device, self.precision, self.batch_size, self.text_batch_size, digests, self.workers)

    def store(self, encoder: Encoder, decoder: Decoder | None) -> EmbeddingStore:
        """The store of ``encoder``'s embeddings in this run (workers and caption batches by its device unless
        given)."""
        workers = default_workers(encoder.device) if self.workers is None else self.workers
        text_batch_size = self.text_batch_size or default_text_batch_size(encoder.device)
        return EmbeddingStore(encoder, self.folder, self.batch_size, workers, text_batch_size, decoder)

    @property
    def root(self) -> Path | None:
        """The embedding cache's folder (None: no cache)."""
        if not self.cache:
            return None
        return Path(self.cache_dir) if self.cache_dir is not None else cache_root()

    @property
    def folder(self) -> CacheFolder | None:
        """The cache's folder as this run (or sweep: one warning for all its models) writes it; None: no cache."""
        if self.root is None:
            return None
        if self.cache_folder is None:
            self.cache_folder = CacheFolder(self.root)
        return self.cache_folder


@dataclass
class LoadedRun:
    """One model loaded and planned, not yet encoded: :func:`open_run` makes it, :func:`finish_run` encodes
    and scores it. Its store may be fed another run's prepared images (:mod:`eccv_metric.models.encoding.shared`)."""

    plan: Plan
    encoder: Encoder
    store: EmbeddingStore
    source: DataSource
    options: RunOptions
    save_embeddings: str | Path | None
    started: float
    opened: float  # when it was loaded or recalled (perf_counter): a sweep's model may then wait for the others
    loaded: bool = True  # False: every embedding was cached and the model was not loaded (models.cache.recall)


def open_run(
    model: object, source: DataSource, request: Request, options: RunOptions, save_embeddings: str | Path | None,
    opening: Opening | None = None,
) -> LoadedRun:  # fmt: skip
    """The plan (before the model loads: a bad request fails at once), the model, and its store; a model whose
    every embedding the run needs is cached is not loaded (:meth:`Opening.recalled`). ``opening``: this
    model's :class:`Opening`, made and its recall tried by the caller (:mod:`eccv_metric.models.many`): it is
    loaded, its plan and key not made again, its time starting now."""
    if opening is not None:
        opening.started = time.perf_counter()
        return opening.loaded()
    run = Opening(model, source, request, options, save_embeddings)
    recalled = run.recalled()
    return recalled if recalled is not None else run.loaded()


class Opening:
    """A run being opened: its plan and what its model loads from (:func:`~eccv_metric.models.cache.recall.files_key`),
    then either the remembered model (:meth:`recalled`) or the loaded one (:meth:`loaded`)."""

    def __init__(
        self, model: object, source: DataSource, request: Request, options: RunOptions,
        save_embeddings: str | Path | None,
    ):  # fmt: skip
        self.started = time.perf_counter()
        self.model, self.source, self.options, self.save_embeddings = model, source, options, save_embeddings
        self.plan = make_plan(request, source, options.skip_unavailable, options.resources, options.resource_options,
                              save_embeddings)  # fmt: skip
        self.load = options.load(source.digests)
        self.key = files_key(model, self.load, options.decode, source.digests) if options.root is not None else None

    def recalled(self) -> LoadedRun | None:
        recalled = recall(self.options.root, self.key)
        if recalled is None:
            return None
        encoder, decoder = recalled
        plan = replace(self.plan, wanted=dict(self.plan.wanted), skipped=dict(self.plan.skipped))
        try:  # a copy: a run that loads the model after all is planned by what its load describes
            plan.fit(encoder)
        except EvaluationError:
            return None  # a run that cannot be scored says why once loaded, as a run without a memo does
        store = self.options.store(encoder, decoder)
        if not store.answers(plan.sets, plan.items):
            return None
        return LoadedRun(plan, encoder, store, self.source, self.options, self.save_embeddings, self.started,
                         time.perf_counter(), loaded=False)  # fmt: skip

    def loaded(self) -> LoadedRun:
        load, options = self.load, self.options
        commit = self.key["commit"] if self.key is not None else None  # the Hub commit the key was made of
        encoder = load_model(self.model, load.device, load.precision, load.batch_size, load.text_batch_size,
                             load.digests, load.workers, commit)  # fmt: skip
        self.plan.fit(encoder)
        check_decode(options.decode, encoder)
        decoder = gpu_decoder(encoder) if options.decode == "gpu" and "image" in encoder.kinds else None
        used = (encoder.identity or {}).get("revision")  # the Hub commit the load read (local folders: none)
        if options.root is not None and (self.key is not None or used is not None):
            after = files_key(self.model, load, options.decode, self.source.digests, used)
            remember(options.folder, self.key, after, encoder, decoder)
        store = options.store(encoder, decoder)
        return LoadedRun(self.plan, encoder, store, self.source, options, self.save_embeddings, self.started,
                         time.perf_counter())  # fmt: skip


def finish_run(run: LoadedRun) -> ModelResults:
    """Every item set's embeddings (the store), every number (the score step) and the provenance."""
    plan, encoder, store, options = run.plan, run.encoder, run.store, run.options
    begun = time.perf_counter()  # a sweep's model may wait, loaded, while the models before it run
    encoded, report = store.embed(plan.sets, plan.items)
    embedded = time.perf_counter()
    ranking = ranking_device(encoder.device)
    results, groups = score(plan, encoded, encoder.similarity, run.save_embeddings, ranking)
    scored = time.perf_counter()
    provenance = {
        "date": utc_now(),  # when the run scored (ISO-8601, UTC): the Hub's eval results publish it
        "model": encoder.spec,
        "identity": encoder.identity,
        "model_loaded": run.loaded,
        "data": run.source.data,
        "data_revision": run.source.revision,
        "data_files": build_digests(run.source.root, run.source.digests.known, stamp),  # a local build's Parquet
        "items": report,
        "package": f"{DISTRIBUTION} {__version__}",
        "device": encoder.device,
        "precision": encoder.precision,
        "batch_size": options.batch_size,
        "text_batch_size": store.text_batch_size,
        "workers": store.workers,
        "decode": options.decode,
        "similarity": encoder.similarity,
        "ranking": f"torch on {ranking}" if ranking else "numpy",
        "seconds": round(scored - run.started, 3),
        # open: plan + model load, or its recall (a sweep's loaded model: the load alone, its plan was made with
        # the others'); embed: every item set (a decode shared with other models also counts their forward passes
        # on its images, and theirs leave them out); score: every number. A sweep's model may also wait, loaded,
        # while the models before it run: its steps then add up to less than "seconds"
        "step_seconds": {
            "open": round(run.opened - run.started, 3),
            "embed": round(embedded - begun, 3),
            "score": round(scored - embedded, 3),
        },
        "skipped": plan.skipped,
    }
    embeddings = {name: group.embeddings for name, group in groups.items()}
    return ModelResults(results, provenance, plan.skipped, embeddings)
