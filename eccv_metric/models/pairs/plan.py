"""What a pair scorer's run scores: which benchmarks it can serve, and per collection the pairs it scores.

A pair scorer scores (image, caption) pairs: every image-caption benchmark (COCO 1K/5K, CxC, ECCV, PM*,
MSCOCO-FG, Flickr30K-FG) and CxC SITS (the rated pairs, scored directly). The intramodal benchmarks (cxc_t2t,
coco_t2t, cxc_i2i, STS, SIS) rank captions against captions or images against images, which a pair scorer
cannot: they are scored by the first stage's embeddings when it encodes that kind (noted in the provenance),
else refused (asked for) or skipped with the reason (nothing asked). A rerank's first stage must encode images
and captions both.

Per collection group (:func:`~eccv_metric.models.score.group_sets`: one per collection and caption text), the
benchmarks are split by what scores them (:class:`Group`): ``ranked`` (a two-stage input or, exhaustive, the
score matrix), ``within`` (``coco_1k="within"``: a two-stage input of its own), ``rated`` (CxC SITS under a
rerank) and ``first`` (intramodal, the first stage's embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.core.errors import EvaluationError
from eccv_metric.engine.plan import Job
from eccv_metric.engine.plan import plan as plan_jobs
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.pairs.candidates import gallery_sizes
from eccv_metric.models.pairs.candidates import reranked_views
from eccv_metric.models.pairs.options import FOLDS
from eccv_metric.models.pairs.options import PairOptions
from eccv_metric.models.pairs.options import check_galleries
from eccv_metric.models.plan import KIND_WORDS
from eccv_metric.models.plan import Plan

CROSS = ("i2t", "t2i")
OWN_KIND = {"t2t": "caption", "i2i": "image"}  # an intramodal direction -> the kind its first stage must encode


@dataclass(frozen=True)
class Kinds:
    """What :meth:`Plan.fit` reads of a model: its spec and the item kinds it needs (a pair scorer: both)."""

    spec: str
    kinds: tuple[str, ...] = ("image", "caption")


def needs_first(name: str) -> str | None:
    """The item kind a benchmark's first-stage scoring needs (intramodal), or None (the pair scorer scores it)."""
    directions = {task.direction for task in REGISTRY.get(name).tasks}
    if directions & set(CROSS):
        return None
    return OWN_KIND[directions.pop()]


def fit_pairs(plan: Plan, spec: str, first: Encoder | None, protocol: str) -> dict[str, str]:
    """The benchmarks a pair scorer (``spec``) with the first stage ``first`` can serve (the others refused or
    skipped, with why), each benchmark's items read (:meth:`Plan.fit`). Returns ``{benchmark: note}`` for those
    the first stage scores."""
    if protocol == "rerank" and first is not None and not {"image", "caption"} <= set(first.kinds):
        words = " and ".join(KIND_WORDS[k] for k in first.kinds)
        raise EvaluationError(
            f"first_stage= {first.spec} encodes {words} only: a rerank's first stage ranks images against "
            "captions (give a dual encoder)"
        )
    by_first: dict[str, str] = {}
    for name in list(plan.wanted):
        kind = needs_first(name)
        if kind is None:
            continue
        if first is not None and kind in first.kinds:
            by_first[name] = f"{name}: scored by the first stage {first.spec} (a pair scorer ranks no {kind}s)"
            continue
        why = (
            f"{name}: {spec} scores image-caption pairs; {name} compares {KIND_WORDS[kind]} with {KIND_WORDS[kind]}, "
            f"which needs an encoder of {KIND_WORDS[kind]} (give first_stage= with one, or evaluate one as a model)"
        )
        if not plan.skip_unavailable:
            raise EvaluationError(why)
        plan.skipped[name] = why
        del plan.wanted[name]
    if not plan.wanted:
        raise EvaluationError("no benchmark can be scored: " + "; ".join(plan.skipped.values()))
    plan.fit(Kinds(spec))  # type: ignore[arg-type]
    return {name: note for name, note in by_first.items() if name in plan.wanted}  # its items all there


def check_rerank_k(plan: Plan, options: PairOptions) -> None:
    """Before any model loads: a ``rerank_k=`` given above a gallery a rerank of the planned benchmarks chooses its
    candidates in is refused (the galleries are the data's; a model that turns out not to rerank would not use it
    either). A benchmark that cannot be planned is left to the run, which says why."""
    if "rerank_k" not in options.given or options.protocol == "exhaustive":
        return
    jobs: list[Job] = []
    for name in plan.wanted:
        if needs_first(name) is not None:
            continue
        try:
            jobs += plan_jobs([r for r in plan.request.metrics if r.benchmark.name == name], plan.resources,
                              plan.request.directions)  # fmt: skip
        except (EvaluationError, OSError):
            continue
    views = reranked_views([job for job in jobs if job.view is not None], options.coco_1k)  # type: ignore[arg-type]
    check_galleries(options.rerank_k, gallery_sizes(views, None))  # type: ignore[arg-type]


@dataclass
class Group:
    """One collection group's benchmarks by what scores them (see the module docstring), their jobs and sets."""

    name: str
    sets: dict[str, ItemSet]
    ranked: list[str] = field(default_factory=list)
    within: list[str] = field(default_factory=list)
    rated: list[str] = field(default_factory=list)
    first: list[str] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)  # the jobs of ranked, within and rated (the pairs they read)

    def wanted(self, names: list[str], plan: Plan) -> dict[str, list[str]]:
        """``{benchmark: its requested metric names}`` of ``names`` (for evaluate_benchmarks)."""
        return {n: [r.name for r in plan.request.metrics if r.benchmark.name == n] for n in names}


def make_group(name: str, names: list[str], sets: dict[str, ItemSet], plan: Plan, protocol: str, coco_1k: str) -> Group:
    """A group's benchmarks split and its jobs planned (a benchmark that cannot be planned is skipped with why
    when nothing was asked, else an error)."""
    group = Group(name, sets)
    for bench in names:
        if needs_first(bench) is not None:
            group.first.append(bench)
            continue
        try:
            requests = [r for r in plan.request.metrics if r.benchmark.name == bench]
            jobs = plan_jobs(requests, plan.resources, plan.request.directions)
        except (EvaluationError, OSError) as exc:
            if not plan.skip_unavailable:
                raise
            plan.skipped[bench] = f"{bench}: {exc}"
            continue
        group.jobs += jobs
        rated = any(j.view is None for j in jobs)
        within = coco_1k == "within" and any(j.view is not None and j.view.restriction == FOLDS for j in jobs)
        if rated and protocol == "rerank":
            group.rated.append(bench)
        elif within and protocol == "rerank":
            group.within.append(bench)
        else:
            group.ranked.append(bench)
    return group
