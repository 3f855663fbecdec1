"""A pair scorer's run: first stage, candidates, pair stage, and the engine's numbers, as for a dual encoder.

    from eccv_metric.models import evaluate_model

    out = evaluate_model("hf:Salesforce/blip-itm-base-coco", data="eccv_caption")  # a rerank of its ITC, k=128
    out = evaluate_model(my_scorer, data, first_stage="hf:openai/clip-vit-base-patch32", rerank_k=64)
    out = evaluate_model("hf:dandelin/vilt-b32-finetuned-coco", data, protocol="exhaustive", max_pairs=200_000_000)

One direction, each step with one owner: the plan says what the scorer can serve (:mod:`.plan`); the first stage
(the scorer's own encoders, or ``first_stage=``) encodes every item set through the embedding store, as any
dual encoder (cached, resumable, dealt over processes: :mod:`eccv_metric.models.parallel`); per collection the
candidates are the first stage's top k (:mod:`.candidates`) and the pairs to score their union
(:mod:`.pairset`), or every pair; the pair stage scores the blocks (:mod:`.compute`, :mod:`.stage`,
:mod:`.blocks`); the scores become the engine's inputs (:mod:`.inputs`) and the numbers come from the same
:func:`~eccv_metric.api.many.evaluate_benchmarks` call a dual encoder's embeddings get.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.api.chance import for_model
from eccv_metric.api.chance import warn_chance
from eccv_metric.api.many import evaluate_benchmarks
from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.about import __version__
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.provenance import build_digests
from eccv_metric.core.provenance import utc_now
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.measures.results import Results
from eccv_metric.measures.results import merge_results
from eccv_metric.models.cache.store import EmbeddingStore
from eccv_metric.models.data.digests import stamp
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.data.source import DataSource
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.pair_scorer import ObjectPairScorer
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.pair_scorer import is_pair_scorer
from eccv_metric.models.options import ModelResults
from eccv_metric.models.options import RunOptions
from eccv_metric.models.options import Scored
from eccv_metric.models.options import scoring_record
from eccv_metric.models.pairs.blocks import BlockCache
from eccv_metric.models.pairs.candidates import Candidates
from eccv_metric.models.pairs.candidates import candidates
from eccv_metric.models.pairs.candidates import gallery_sizes
from eccv_metric.models.pairs.candidates import reranked_views
from eccv_metric.models.pairs.compute import compute_all
from eccv_metric.models.pairs.inputs import final
from eccv_metric.models.pairs.inputs import pair_rows
from eccv_metric.models.pairs.inputs import rated_scores
from eccv_metric.models.pairs.inputs import rows_of
from eccv_metric.models.pairs.inputs import score_matrix
from eccv_metric.models.pairs.inputs import two_stage
from eccv_metric.models.pairs.options import CANDIDATES
from eccv_metric.models.pairs.options import CANDIDATES_NOTE
from eccv_metric.models.pairs.options import RANKING
from eccv_metric.models.pairs.options import check_depth
from eccv_metric.models.pairs.pairset import PairSet
from eccv_metric.models.pairs.plan import Group
from eccv_metric.models.pairs.plan import fit_pairs
from eccv_metric.models.pairs.plan import make_group
from eccv_metric.models.pairs.stage import PairStage
from eccv_metric.models.pairs.stage import Side
from eccv_metric.models.pairs.stage import block_key
from eccv_metric.models.pairs.unused import no_pairs
from eccv_metric.models.pairs.unused import said_unused
from eccv_metric.models.parallel.fill import fill
from eccv_metric.models.parallel.world import Workers
from eccv_metric.models.parallel.world import workers_for
from eccv_metric.models.plan import Plan
from eccv_metric.models.score import group_sets


def pair_scorer_of(model: object) -> PairScorer | None:
    """A Python object that scores pairs as a pair scorer (itself, or :class:`ObjectPairScorer` around its
    ``score_pairs``); None for a spec (its kind is known once loaded) and anything else (loaded as an encoder, or
    refused by :func:`~eccv_metric.models.families.spec.load_model`)."""
    if isinstance(model, str) or not is_pair_scorer(model):
        return None
    return model if isinstance(model, PairScorer) else ObjectPairScorer(model)


@dataclass
class PairRun:
    """A pair scorer loaded, its plan fitted and its first stage ready (:func:`open_pairs`)."""

    scorer: PairScorer
    first: Encoder | None
    first_store: EmbeddingStore | None
    own_first: bool
    protocol: str
    rule: str
    by_first: dict[str, str]
    plan: Plan
    source: DataSource
    options: RunOptions
    started: float
    opened: float = 0.0


def open_pairs(
    scorer: PairScorer, plan: Plan, source: DataSource, options: RunOptions, save_embeddings: str | Path | None,
    started: float, first_stage: Encoder | None,
) -> PairRun:  # fmt: skip
    """The protocol and rule decided, the plan fitted to the scorer; ``first_stage``: the loaded ``first_stage=``
    (None: the scorer's own, if any)."""
    if save_embeddings is not None:
        raise EvaluationError(
            f"save_embeddings= keeps a dual encoder's embeddings; {scorer.spec} scores pairs (its scores stay in the "
            "cache)"
        )
    if options.decode != "pil":
        raise EvaluationError(f"decode= {options.decode}: a pair scorer's images are decoded by PIL (decode= pil)")
    own = first_stage is None and scorer.first_stage is not None
    first = first_stage if first_stage is not None else scorer.first_stage
    rules = tuple(scorer.score_rules) if own else ()
    note = getattr(scorer, "first_stage_note", None)
    protocol, rule = options.pairs.decide(first is not None, rules, scorer.spec + (f" ({note})" if note else ""))
    by_first = fit_pairs(plan, scorer.spec, first, protocol)
    needed = protocol == "rerank" or rule == "itm+itc" or bool(by_first)
    said_unused(scorer, options, protocol, first_stage is not None and not needed, plan)
    if all(name in by_first for name in plan.wanted):
        no_pairs(scorer.spec, first, plan)
    store = options.store(first, None) if first is not None and needed else None
    return PairRun(scorer, first if needed else None, store, own, protocol, rule, by_first, plan, source, options,
                   started, time.perf_counter())  # fmt: skip


def first_stage(run: PairRun, workers: Workers) -> tuple[dict[ItemSet, np.ndarray], dict]:
    """Every item set's first-stage embeddings (the store), the processes' batches written first."""
    store, plan = run.first_store, run.plan
    if store is None:
        return {}, {}
    if not workers.alone:
        fill(store, plan.sets, plan.items, workers)
        workers.barrier()
        if workers.how == "torchrun" and workers.rank != 0:
            workers.barrier()  # rank 0 assembles each entry alone, then the others read it
            return store.embed(plan.sets, plan.items)
    out = store.embed(plan.sets, plan.items)
    if workers.how == "torchrun":
        workers.barrier()
    return out


def finish_pairs(run: PairRun) -> ModelResults:
    """The first stage, the pair stage and every number (see the module docstring)."""
    scorer, plan, options = run.scorer, run.plan, run.options
    workers = workers_for(options.shard, scorer.device)
    if not workers.alone and (options.root is None or scorer.identity is None):
        raise EvaluationError(
            f"{scorer.spec}: several processes (torchrun or shard=) meet in the cache, and this run has none: drop "
            "cache=False, and give a model with an identity (a spec, or ObjectPairScorer(model, identity=...))"
        )
    begun = time.perf_counter()
    encoded, report = first_stage(run, workers)
    embedded = time.perf_counter()
    groups, sides, tables = [], {}, {}
    for name, (names, sets) in group_sets(plan).items():
        group = make_group(name, names, sets, plan, run.protocol, options.pairs.coco_1k)
        emb = first_embeddings(run, group, encoded)
        groups.append((group, emb))
        if group.ranked or group.within or group.rated:
            side, tables[name] = pair_side(run, group, emb)
            sides[name] = side
    stage = PairStage(scorer, options.batch_size, options.pairs.pair_batch_size, options.workers_for(scorer.device))
    what = f"{scorer.spec} ({run.protocol})"
    tally = compute_all(list(sides.values()), stage, workers, options.pairs.max_pairs, what)
    paired = time.perf_counter()
    provenance = describe(run, workers, report, tally.describe())
    if not workers.scores:
        return ModelResults(Results({}), provenance, dict(plan.skipped), scored=False)
    results, inputs = score(run, groups, sides, tables)
    done = time.perf_counter()
    provenance["seconds"] = round(done - run.started, 3)
    provenance["step_seconds"] = {
        "open": round(run.opened - run.started, 3),
        "first_stage": round(embedded - begun, 3),
        "pairs": round(paired - embedded, 3),
        "score": round(done - paired, 3),
    }
    provenance["skipped"] = plan.skipped
    return ModelResults(results, provenance, plan.skipped, inputs=inputs)


def first_embeddings(run: PairRun, group: Group, encoded: dict[ItemSet, np.ndarray]) -> Embeddings | None:
    """The first stage's embeddings of a group's item sets (None without a first stage)."""
    if run.first is None:
        return None
    sets, items = group.sets, run.plan.items
    image, caption = sets.get("image"), sets.get("caption")
    emb = Embeddings(
        encoded[image] if image else None,
        encoded[caption] if caption else None,
        items[image].ids if image else None,
        items[caption].ids if caption else None,
        normalize=run.first.similarity == "cosine",
        device="numpy",
    )
    why = emb.cannot_pairs(("image", "caption")) if image and caption else None
    if why is not None:
        raise EvaluationError(f"first_stage= {run.first.spec}: {why}; a first stage embeds both in one space")
    return emb


def pair_side(
    run: PairRun, group: Group, emb: Embeddings | None
) -> tuple[Side, dict[tuple[str, str | None], Candidates]]:
    """A group's pair set (the candidates' union and the rated pairs, or every pair), its items and cache."""
    options, scorer = run.options, run.scorer
    images, captions = (run.plan.items[group.sets[k]] for k in ("image", "caption"))
    tables: dict[tuple[str, str | None], Candidates] = {}
    k = options.pairs.rerank_k if run.protocol == "rerank" else None
    if run.protocol == "exhaustive":
        pairs = PairSet.every(images.ids, captions.ids)
    else:
        assert emb is not None and k is not None
        jobs = [j for j in group.jobs if j.view is not None]
        views = reranked_views(jobs, options.pairs.coco_1k)
        check_depth(jobs, k, gallery_sizes(views, emb))
        parts_i, parts_c = [], []
        for key, (view, queries) in views.items():
            tables[key] = candidates(emb, view, queries, k, key[1])
            rows = pair_rows(tables[key], images.ids, captions.ids)
            parts_i.append(rows[0].ravel())
            parts_c.append(rows[1].ravel())
        for job in group.jobs:
            if job.view is None and job.pairs is not None and job.collection is not None:  # CxC SITS: (caption, image)
                parts_c.append(rows_of(job.collection, "caption", captions.ids)[job.pairs[0]])
                parts_i.append(rows_of(job.collection, "image", images.ids)[job.pairs[1]])
        pairs = PairSet.of(np.concatenate(parts_i), np.concatenate(parts_c), images.ids, captions.ids)
    cache = None
    if options.root is not None and scorer.identity is not None:
        first = None if run.first is None else {"spec": run.first.spec, "identity": run.first.identity}
        key = block_key(scorer, first, run.protocol, k, pairs, images, captions, options.batch_size,
                        options.pairs.pair_batch_size)  # fmt: skip
        cache = BlockCache(key, options.folder, scorer.spec)  # type: ignore[arg-type]
    return Side(group.name, pairs, images, captions, cache), tables


def score(
    run: PairRun, groups: list[tuple[Group, Embeddings | None]], sides: dict, tables: dict
) -> tuple[Results, list[Scored]]:
    """Every number: each group's benchmarks on the input that serves them (:mod:`.inputs`), one
    :func:`~eccv_metric.api.many.evaluate_benchmarks` call each; and what each call scored."""
    plan, rule = run.plan, run.rule
    parts, notes, inputs = [], [], []

    def scored(source: object, names: list[str], group: Group, role: str = "") -> None:
        if not names:
            return
        wanted = group.wanted(names, plan)
        with warnings.catch_warnings():  # warned below, in the model path's words (api.chance.for_model)
            warnings.simplefilter("ignore", ChanceLevelWarning)
            out, failed = evaluate_benchmarks(source, wanted, resources=plan.resources,  # type: ignore[arg-type]
                                              n_resamples=plan.request.n_resamples, seed=plan.request.seed,
                                              skip_failing=plan.skip_unavailable)  # fmt: skip
        plan.skipped.update(failed)
        parts.append(out)
        notes.extend(for_model(note) for note in out.notes)
        kept = {name: metrics for name, metrics in wanted.items() if name not in failed}
        if kept:
            inputs.append(Scored(f"{group.name}.{role}", source, kept, dict(group.sets)))

    for group, emb in groups:
        side: Side | None = sides.get(group.name)
        mine = tables.get(group.name, {})
        if side is not None and run.protocol == "exhaustive":
            job = group.jobs[0]
            collection = job.view.collection if job.view is not None else job.collection
            matrix = score_matrix(side.pairs, side.scores, rule, emb, collection)  # type: ignore[arg-type]
            scored(matrix, group.ranked, group, "exhaustive")
        elif side is not None and emb is not None:
            whole = {d: c for (d, within), c in mine.items() if within is None}
            folds = {d: c for (d, within), c in mine.items() if within is not None}
            if group.ranked:
                scored(two_stage(emb, whole, side.pairs, side.scores, rule), group.ranked, group, "rerank")  # type: ignore[arg-type]
            if group.within:
                scored(two_stage(emb, folds, side.pairs, side.scores, rule), group.within, group, "within")  # type: ignore[arg-type]
            if group.rated:
                scored(rated(group, side, emb, rule), group.rated, group, "rated")
        if emb is not None:
            scored(emb, group.first, group, "first")
    if not parts:
        raise EvaluationError("no benchmark could be scored: " + "; ".join(plan.skipped.values()))
    warn_chance(notes)
    merged = merge_results(parts)
    return Results({m: dict(merged[m]) for m in merged}, list(dict.fromkeys(notes)), merged.partial), inputs


def rated(group: Group, side: Side, emb: Embeddings, rule: str) -> object:
    """CxC SITS's rated (caption, image) pairs with their final scores."""
    job = next(j for j in group.jobs if j.view is None and j.pairs is not None)
    collection = job.collection
    captions = rows_of(collection, "caption", side.pairs.caption_ids)[job.pairs[0]]  # type: ignore[index]
    images = rows_of(collection, "image", side.pairs.image_ids)[job.pairs[1]]  # type: ignore[index]
    raw = side.scores[side.pairs.positions(images, captions)]  # type: ignore[index]
    sims = emb.pair_scores(collection, ("caption", "image"), job.pairs[0], job.pairs[1], job.metric)  # type: ignore[index,arg-type]
    return rated_scores(collection, job.pairs[0], job.pairs[1], final(raw, sims, rule))  # type: ignore[arg-type,index]


def describe(run: PairRun, workers: Workers, report: dict, pairs: dict) -> dict:
    """The provenance of a pair scorer's run."""
    scorer, options = run.scorer, run.options
    rerank = run.protocol == "rerank"
    first = None
    if run.first is not None:
        first = {"spec": run.first.spec, "identity": run.first.identity, "own": run.own_first,
                 "similarity": run.first.similarity}  # fmt: skip
    return {
        "date": utc_now(),  # when the run scored (ISO-8601, UTC): the Hub's eval results publish it
        "model": scorer.spec,
        "kind": "pair scorer",
        "identity": scorer.identity,
        "model_loaded": True,
        "data": run.source.data,
        "data_revision": run.source.revision,
        "data_files": build_digests(run.source.root, run.source.digests.known, stamp),  # a local build's Parquet
        "items": report,
        "package": f"{DISTRIBUTION} {__version__}",
        "device": scorer.device,
        "precision": scorer.precision,
        "batch_size": options.batch_size,
        "pair_batch_size": options.pairs.pair_batch_size,
        "workers": options.workers_for(scorer.device),
        "decode": options.decode,
        "protocol": {
            "name": run.protocol,
            "rerank_k": options.pairs.rerank_k if rerank else None,
            "score_rule": run.rule,
            "coco_1k": options.pairs.coco_1k if rerank else None,
            "first_stage": first,
            "max_pairs": options.pairs.max_pairs,
            # whose evaluation code the pair head's inputs follow (reference=: BLIP's own, LAVIS's, the port's)
            "code": getattr(scorer, "code", None),
            "reference": options.reference if getattr(scorer, "references", ()) else None,
            "candidates": CANDIDATES if rerank else None,
            "ranking": RANKING if rerank else None,
        },
        "text_length": scorer.text_length,
        "text_unit": getattr(scorer, "text_unit", "tokens") if scorer.text_length is not None else None,
        "notes": list(scorer.notes) + ([CANDIDATES_NOTE] if rerank else []),
        "scored_by_first_stage": run.by_first,
        "pairs": pairs,
        "parallel": workers.describe(),
        "cache": None if options.root is None else str(options.root),
        "skipped": run.plan.skipped,
        "scoring": scoring_record(run.plan.request),
        "resources": options.resources_record(run.source),
    }
