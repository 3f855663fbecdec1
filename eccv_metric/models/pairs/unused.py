"""What a pair scorer's run says about what it was given and did not use: the keywords that do nothing for this
scorer or protocol (:meth:`~eccv_metric.models.options.RunOptions.unused`), and a pair head that would score no
pair (every benchmark left is its first stage's alone)."""

from __future__ import annotations

import warnings

from eccv_metric.api.chance import outside_frames
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.options import NotUsedWarning
from eccv_metric.models.options import RunOptions
from eccv_metric.models.pairs.options import FOLDS
from eccv_metric.models.pairs.plan import needs_first
from eccv_metric.models.plan import Plan


def no_pairs(spec: str, first: Encoder | None, plan: Plan) -> None:
    """Every benchmark left is scored by the first stage alone (images without pixels skip every image-caption one):
    refused when nothing was asked (the run would print the first stage's numbers under the pair scorer's name),
    said (:class:`~eccv_metric.models.options.NotUsedWarning`) when they were asked for by name."""
    left = sorted(plan.wanted)
    first_spec = first.spec if first is not None else "none"
    if not plan.skip_unavailable:
        warnings.warn(
            f"{spec} scores no pair: {', '.join(left)} {'is' if len(left) == 1 else 'are'} scored by its first "
            f"stage {first_spec} alone (a pair scorer ranks no captions against captions, nor images against images)",
            NotUsedWarning,
            stacklevel=outside_frames(),
        )
        return
    crossed = [name for name in plan.skipped if needs_first(name) is None]
    why = plan.skipped[crossed[0]].removeprefix(crossed[0] + ": ") if crossed else "none was asked for"
    shown = ", ".join(crossed[:3]) + (f" and {len(crossed) - 3} more" if len(crossed) > 3 else "")
    raise EvaluationError(
        f"{spec} would score no pair here: every image-caption benchmark was skipped ({shown}: {why}); the "
        f"benchmarks left ({', '.join(left)}) are the first stage's alone ({first_spec}): give images= with the "
        "pixels to score the pair head, or ask for those benchmarks by name (benchmarks=) to score them by the first "
        "stage"
    )


def said_unused(scorer: PairScorer, options: RunOptions, protocol: str, first_unused: bool, plan: Plan) -> None:
    """The keywords given that do nothing for this pair scorer or protocol, said (:meth:`RunOptions.unused`)."""
    spec = scorer.spec
    if protocol == "exhaustive":
        options.unused(("rerank_k", "coco_1k"), f"protocol= exhaustive scores every pair with {spec} (no rerank)")
    elif not any(task.restriction == FOLDS for name in plan.wanted for task in REGISTRY.get(name).tasks):
        options.unused(("coco_1k",), "no benchmark asked for ranks within COCO 1K's folds")
    if first_unused:
        options.unused(("first_stage",), f"{spec} scores every pair under score_rule= itm, and no benchmark asked for "
                       "is scored by a first stage")  # fmt: skip
    if scorer.text_length is None:
        options.unused(("text_length",), f"{spec} cuts no caption (its own code reads each caption as it is given)")
    if not getattr(scorer, "references", ()):
        options.unused(("reference",), f"{spec} follows one code (no library port of it differs from its own)")
