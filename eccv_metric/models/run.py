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
with :func:`eccv_metric.evaluate`, one call per Embeddings group (:mod:`eccv_metric.models.score`). A model that
scores pairs (an ITM head, a cross-encoder) takes its own path from the load on (:mod:`eccv_metric.models.pairs.run`:
first stage, candidates, pair blocks, the same engine call). Under torchrun or with ``shard=`` the batches and
blocks are dealt to the processes (:mod:`eccv_metric.models.parallel`) and one of them scores.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import Any

from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.about import __version__
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.provenance import build_digests
from eccv_metric.core.provenance import utc_now
from eccv_metric.measures.results import Results
from eccv_metric.models.cache.recall import files_key
from eccv_metric.models.cache.recall import recall
from eccv_metric.models.cache.recall import remember
from eccv_metric.models.cache.store import EmbeddingStore
from eccv_metric.models.data.digests import stamp
from eccv_metric.models.data.source import DataSource
from eccv_metric.models.encoding.decode import check_decode
from eccv_metric.models.encoding.decode import gpu_decoder
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.pair_scorer import is_pair_scorer
from eccv_metric.models.families.spec import load_model
from eccv_metric.models.options import ModelResults
from eccv_metric.models.options import RunOptions
from eccv_metric.models.options import Scored
from eccv_metric.models.options import scoring_record
from eccv_metric.models.pairs.plan import check_rerank_k
from eccv_metric.models.pairs.run import PairRun
from eccv_metric.models.pairs.run import finish_pairs
from eccv_metric.models.pairs.run import open_pairs
from eccv_metric.models.pairs.run import pair_scorer_of
from eccv_metric.models.parallel.fill import fill
from eccv_metric.models.parallel.world import rank_device
from eccv_metric.models.parallel.world import workers_for
from eccv_metric.models.plan import EVERY
from eccv_metric.models.plan import Plan
from eccv_metric.models.plan import make_plan
from eccv_metric.models.score import ranking_device
from eccv_metric.models.score import score


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
    protocol: str | None = None,
    rerank_k: int | None = None,
    score_rule: str | None = None,
    coco_1k: str | None = None,
    first_stage: object = None,
    max_pairs: int | None = None,
    pair_batch_size: int | None = None,
    text_length: int | None = None,
    reference: str | None = None,
    shard: object = None,
) -> ModelResults:
    """Encode what the benchmarks need with ``model`` (a spec, an Encoder, a pair scorer or an object) and
    score it.

    ``metrics`` / ``benchmarks`` / ``ks`` / ``n_resamples`` / ``seed`` as in :func:`eccv_metric.evaluate`;
    nothing asked: every benchmark whose items are available, the others skipped with their reason.
    ``data``: a folder built by ``eccv-caption build`` or its Hub repo (``token``: a private one's);
    ``save_embeddings``: a folder receiving ``<set>/{image,caption}_embeddings.npy`` and ids. A model that scores
    pairs (an ITM head, a cross-encoder, an object with ``score_pairs``) is reranked or scored exhaustively
    (``protocol``, ``rerank_k``, ``score_rule``, ``coco_1k``, ``first_stage``, ``max_pairs``,
    ``pair_batch_size``: :mod:`eccv_metric.models.pairs.options`; ``text_length``, ``reference``:
    :class:`~eccv_metric.models.options.RunOptions`). ``shard``: ``"i/N"``, this job's share of the
    work (:mod:`eccv_metric.models.parallel.world`; under torchrun the ranks share it by themselves). The other
    keywords: :class:`~eccv_metric.models.options.RunOptions`.
    """
    request, skip = model_request(metrics, ks, benchmarks, n_resamples, seed)
    options = dict(
        images=images, resources=resources, device=device, precision=precision, batch_size=batch_size,
        text_batch_size=text_batch_size, workers=workers, decode=decode, cache=cache, cache_dir=cache_dir,
        token=token, protocol=protocol, rerank_k=rerank_k, score_rule=score_rule, coco_1k=coco_1k,
        first_stage=first_stage, max_pairs=max_pairs, pair_batch_size=pair_batch_size, text_length=text_length,
        reference=reference, shard=shard,
    )  # fmt: skip
    return evaluate_model_request(model, data, request, skip_unavailable=skip, save_embeddings=save_embeddings,
                                  **options)  # fmt: skip


def evaluate_model_request(
    model: object,
    data: str | Path,
    request: Request,
    *,
    skip_unavailable: bool = False,
    save_embeddings: str | Path | None = None,
    **options: Any,
) -> ModelResults:
    """:func:`evaluate_model` on a parsed :class:`~eccv_metric.benchmarks.request.Request` (what the CLI builds);
    ``skip_unavailable``: a benchmark that cannot be scored is skipped with its reason (else an error); the other
    keywords as :class:`~eccv_metric.models.options.RunOptions` takes them."""
    run_options = RunOptions(skip_unavailable, **options)
    return finish_run(open_run(model, run_options.source(data), request, run_options, save_embeddings))


@dataclass
class LoadedRun:
    """One model loaded and planned, not yet encoded: :func:`open_run` makes it, :func:`finish_run` encodes
    and scores it. Its store may be fed another run's prepared images (:mod:`eccv_metric.models.encoding.shared`).
    A pair scorer's run (``pairs``): its encoder and store are its first stage's (None without one)."""

    plan: Plan
    encoder: Encoder | None
    store: EmbeddingStore | None
    source: DataSource
    options: RunOptions
    save_embeddings: str | Path | None
    started: float
    opened: float  # when it was loaded or recalled (perf_counter): a sweep's model may then wait for the others
    loaded: bool = True  # False: every embedding was cached and the model was not loaded (models.cache.recall)
    pairs: PairRun | None = None


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
        if options.shard is not None and save_embeddings is not None:
            raise EvaluationError(
                f"shard= {options.shard} computes this job's share into the cache and returns no embeddings: drop "
                "save_embeddings= (give it to the run without shard=, which scores once every job is done)"
            )
        self.plan = make_plan(request, source, options.skip_unavailable, options.resources, options.resource_options,
                              save_embeddings)  # fmt: skip
        check_rerank_k(self.plan, options.pairs)  # a limit the data sets, before the model loads
        self.load = options.load(source.digests)
        self.scorer = pair_scorer_of(model)  # a Python pair scorer (a spec's kind is known once loaded)
        known = options.root is not None and self.scorer is None
        self.key = files_key(model, self.load, options.decode, source.digests) if known else None

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
        self.options.unused_by_encoder(encoder.spec)
        return LoadedRun(plan, encoder, store, self.source, self.options, self.save_embeddings, self.started,
                         time.perf_counter(), loaded=False)  # fmt: skip

    def loaded(self) -> LoadedRun:
        load, options = self.load, self.options
        device = rank_device(load.device)  # under torchrun: each rank its own GPU
        commit = self.key["commit"] if self.key is not None else None  # the Hub commit the key was made of
        model = self.scorer or load_model(
            self.model, device, load.precision, load.batch_size, load.text_batch_size, load.digests, load.workers,
            commit, load.text_length, load.reference,
        )  # fmt: skip
        if is_pair_scorer(model):
            return self.paired(model, device)  # type: ignore[arg-type]
        encoder: Encoder = model  # type: ignore[assignment]
        options.unused_by_encoder(encoder.spec)
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

    def paired(self, scorer: PairScorer, device: str | None) -> LoadedRun:
        """A pair scorer's run (:mod:`eccv_metric.models.pairs.run`), its ``first_stage=`` loaded."""
        load, given = self.load, self.options.first_stage
        first = None if given is None else load_model(given, device, load.precision, load.batch_size,
                                                      load.text_batch_size, load.digests, load.workers)  # fmt: skip
        if first is not None and is_pair_scorer(first):
            raise EvaluationError(
                f"first_stage= {first.spec} scores pairs: a rerank's first stage embeds images and captions apart "
                f"(give a dual encoder, or leave first_stage= out to use {scorer.spec}'s own first stage if it has one)"
            )
        pairs = open_pairs(scorer, self.plan, self.source, self.options, self.save_embeddings, self.started, first)
        return LoadedRun(self.plan, pairs.first, pairs.first_store, self.source, self.options, None, self.started,
                         pairs.opened, pairs=pairs)  # fmt: skip


def finish_run(run: LoadedRun) -> ModelResults:
    """Every item set's embeddings (the store), every number (the score step) and the provenance."""
    if run.pairs is not None:
        return finish_pairs(run.pairs)
    plan, encoder, store, options = run.plan, run.encoder, run.store, run.options
    assert encoder is not None and store is not None
    begun = time.perf_counter()  # a sweep's model may wait, loaded, while the models before it run
    workers = workers_for(options.shard, encoder.device)
    if not workers.alone:  # every process encodes its batches, then one assembles and scores (models.parallel)
        written = fill(store, plan.sets, plan.items, workers)
        workers.barrier()
        if not workers.scores:
            provenance = {"model": encoder.spec, "encoded_here": written, "parallel": workers.describe(),
                          "cache": str(options.root)}  # fmt: skip
            return ModelResults(Results({}), provenance, dict(plan.skipped), scored=False)
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
        "parallel": workers.describe(),
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
        "scoring": scoring_record(plan.request),
        "resources": options.resources_record(run.source),
    }
    embeddings = {name: group.embeddings for name, group in groups.items()}
    inputs = [Scored(name, g.embeddings, g.scored, g.sets) for name, g in groups.items() if g.scored]
    return ModelResults(results, provenance, plan.skipped, embeddings, inputs=inputs)
