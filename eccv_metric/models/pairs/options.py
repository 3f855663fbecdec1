"""How a pair scorer is evaluated: the protocol, its parameters and the checks that refuse what cannot be scored.

Protocols (recorded in the provenance and the cache key):

- ``rerank`` (the default when there is a first stage: the model's own, e.g. BLIP's ITC head, or
  ``first_stage=`` any dual encoder): each query's ``rerank_k`` best gallery items by the first stage get a
  pair score; the ranking is those k by final score (ties: the first stage's order), then every other item in
  the first stage's order (:class:`eccv_metric.TwoStage`). LAVIS's ``compute_sim_matrix`` (BLIP, BLIP-2, ALBEF)
  ranks the same first k items: R@K, ECCV R-P / mAP@R, capped PMRP and CxC R@K equal its numbers whenever k
  is at least what the metric reads (a :class:`RerankWarning` names each metric that reads deeper); MedR, MeanR
  and uncapped PMRP also read the first stage's tail, where LAVIS leaves -100 (the results' notes say so).
- ``exhaustive``: every (image, caption) pair of each benchmark's gallery, scored as a score matrix (ViLT's
  protocol: 125M pairs for the 5K split). Above ``max_pairs`` pairs still to score a run refuses, after
  measuring its first blocks, with the time it would take.

``score_rule``: ``itm+itc`` (LAVIS and BLIP: the pair head's logit plus the first stage's similarity) or
``itm`` (the original ALBEF and X-VLM: the pair head's logit alone); default ``itm+itc`` when the scorer's own
first stage declares it, else ``itm``. ``coco_1k``: how COCO 1K reads a rerank: ``restrict`` (the 5K two-stage
ranking restricted to each fold, as the official package restricts a ranked list: the default) or ``within``
(each query's top k within its fold, a rerank per fold, as a model run on each fold alone gives). MSCOCO-FG's
and Flickr30K-FG's original pools always restrict their enlarged pool's ranking.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from eccv_metric.api.chance import outside_frames
from eccv_metric.core.errors import EvaluationError
from eccv_metric.engine.plan import Job
from eccv_metric.measures.kinds import METRIC_KINDS

PROTOCOLS = ("rerank", "exhaustive")
COCO_1K = ("restrict", "within")
RERANK_K = 128  # LAVIS's k_test for BLIP-2, ALBEF and BLIP on Flickr (BLIP on COCO: 256)
PAIR_BATCH_SIZE = 256
# pairs a run scores unless asked for more: a k=128 rerank of every default benchmark is about 12.3M pairs (5K
# split 3.8M, MSCOCO-FG twice 3.8M, Flickr30K-FG 0.8M); an exhaustive run of the 5K split is 125M (VinVL: 25
# A100-hours), refused with its estimated time until max_pairs= is raised
MAX_PAIRS = 20_000_000
FOLDS = "coco_1k_folds"  # the restriction coco_1k= applies to


# the rule choosing a rerank's candidates (models.pairs.candidates), and the ranking they make (inputs.twostage)
CANDIDATES = (
    "each query's k best gallery items by the first stage; among first-stage scores tied at the k-th, the items given "
    "first (the gallery's order)"
)
RANKING = (
    "the k candidates by final score (equal final scores: the gallery's order), then every other item in the first "
    "stage's order"
)
CANDIDATES_NOTE = (
    "candidates: first-stage scores tied at the k-th are broken by the gallery's order (the item given first); LAVIS's "
    "and BLIP's own code take torch.topk's k, whose choice among tied scores is its kernel's, so where a query's "
    "k-th score is tied the items reranked there may differ"
)


class RerankWarning(UserWarning):
    """A metric reads deeper than the reranked candidates: its value depends on the first stage's order there."""


RerankWarning.__module__ = "eccv_metric.models"


DEFAULTS = {"rerank_k": RERANK_K, "coco_1k": "restrict", "max_pairs": MAX_PAIRS, "pair_batch_size": PAIR_BATCH_SIZE}


@dataclass
class PairOptions:
    """How a pair scorer's run goes (see the module docstring); checked when made, one error naming the keyword.
    A keyword left None takes its default (:data:`DEFAULTS`); :attr:`given` names those given (a keyword that does
    nothing for a model or protocol is said to do nothing only when it was given)."""

    protocol: str | None = None
    rerank_k: int | None = None
    score_rule: str | None = None
    coco_1k: str | None = None
    first_stage: object = None
    max_pairs: int | None = None
    pair_batch_size: int | None = None

    def __post_init__(self) -> None:
        names = ("protocol", "rerank_k", "score_rule", "coco_1k", "first_stage", "max_pairs", "pair_batch_size")
        self.given = tuple(name for name in names if getattr(self, name) is not None)
        for name, default in DEFAULTS.items():
            if getattr(self, name) is None:
                setattr(self, name, default)
        if isinstance(self.first_stage, str) and not self.first_stage.strip():
            raise EvaluationError(
                "first_stage= is empty: give a dual encoder spec whose ranking is reranked (e.g. an hf: CLIP), or "
                "leave it out to rerank the model's own first stage"
            )
        if self.protocol is not None and self.protocol not in PROTOCOLS:
            raise EvaluationError(f"protocol= must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r:.30}")
        if self.coco_1k not in COCO_1K:
            raise EvaluationError(f"coco_1k= must be one of {', '.join(COCO_1K)}, not {self.coco_1k!r:.30}")
        for name in ("rerank_k", "max_pairs", "pair_batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < (0 if name == "rerank_k" else 1):
                raise EvaluationError(f"{name}= must be a positive integer, not {value!r:.20}")
        if self.rerank_k == 0:
            raise EvaluationError(
                "rerank_k= 0 reranks nothing: give the number of first-stage candidates each query's pairs are "
                f"scored for (default {RERANK_K}), or protocol= exhaustive"
            )

    def decide(self, has_first: bool, own_rules: tuple[str, ...], spec: str) -> tuple[str, str]:
        """(protocol, score rule) for a scorer with or without a first stage (``own_rules``: the rules its own
        first stage supports; empty when the first stage is given), or one error naming the keyword."""
        protocol = self.protocol or ("rerank" if has_first else "exhaustive")
        if protocol == "rerank" and not has_first:
            raise EvaluationError(
                f"{spec} has no first stage to rerank: give first_stage= (a dual encoder spec, e.g. an hf: CLIP) or "
                "protocol= exhaustive (every pair scored)"
            )
        allowed = set(own_rules) | {"itm"} | ({"itm+itc"} if has_first else set())
        rule = self.score_rule or ("itm+itc" if "itm+itc" in own_rules else "itm")
        if rule not in ("itm", "itm+itc"):
            raise EvaluationError(f"score_rule= must be itm or itm+itc, not {rule!r:.30}")
        if rule not in allowed:
            raise EvaluationError(
                f"score_rule= itm+itc adds the first stage's similarity, and {spec} has no first stage here: give "
                "first_stage= or score_rule= itm"
            )
        return protocol, rule


def check_galleries(k: int, galleries: dict[str, int]) -> None:
    """Refuse a ``rerank_k`` above a gallery it reranks (``galleries``: what each reranked ranking is, in words ->
    its gallery size)."""
    for what, size in galleries.items():
        if k > size:
            raise EvaluationError(
                f"rerank_k= {k} is above the gallery of {what} ({size:,} items): give at most {size:,} (every item "
                "reranked), or protocol= exhaustive"
            )


def check_depth(jobs: list[Job], k: int, galleries: dict[str, int]) -> None:
    """Refuse a ``rerank_k`` above a gallery it reranks (:func:`check_galleries`); warn (:class:`RerankWarning`,
    once per metric) where a metric reads deeper than ``k``."""
    check_galleries(k, galleries)
    deep: dict[str, tuple[int, list[str]]] = {}
    for job in jobs:
        kind = METRIC_KINDS[job.kind]
        if job.view is None or job.direction not in ("i2t", "t2i") or kind.reads is None:
            continue
        depth = kind.depth(job.k, job.cap, [rel.n_positives for rel in job.relevances])
        if depth > k:
            most, directions = deep.get(job.metric, (0, []))
            deep[job.metric] = (max(most, depth), [*directions, job.direction])
    for metric, (depth, directions) in deep.items():
        warnings.warn(
            f"rerank_k= {k} is below the {depth} items {metric} ({', '.join(dict.fromkeys(directions))}) reads: past "
            f"its first {k} items a ranking is the first stage's order, not the pair scorer's (raise rerank_k= to "
            "rerank them)",
            RerankWarning,
            stacklevel=outside_frames(),  # the user's line
        )
