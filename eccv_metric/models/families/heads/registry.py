"""The transformers pair heads (registry entries) and the ``hf-itm:`` family.

``hf:<repo or folder>`` loads a model whose config names one of these classes (its ``architectures``) as a pair
scorer (:mod:`eccv_metric.models.families.hf` asks :data:`~eccv_metric.models.families.registry.PAIR_HEADS`);
dual encoders load as before. ``hf-itm:<repo or folder>`` loads the pair head of the checkpoint's model type
whatever class its config names (``BridgeTower/bridgetower-base-itm-mlm`` and FLAVA checkpoints carry their ITM
head's weights beside others); every weight the head reads must be in the checkpoint, else one error line (never
a randomly initialised head).

======================================  ===========  ===============================  ======================
class                                   model type   score                            own first stage
======================================  ===========  ===============================  ======================
BlipForImageTextRetrieval               blip         ITM match logit ([:, 1])         ITC (cosine)
Blip2ForImageTextRetrieval              blip-2       ITM logit averaged over queries  none (max over queries)
ViltForImageAndTextRetrieval            vilt         rank_output (one logit)          none
BridgeTowerForImageAndTextRetrieval     bridgetower  ITM match logit ([:, 1])         none
FlavaForPreTraining                     flava        ITM match logit ([:, 1])         contrastive (cosine)
======================================  ===========  ===============================  ======================

Where a port differs from the model's own code, the adapters follow the original (``reference="original"``) and
say so in their ``notes`` (each adapter module's docstring lists what and why).
"""

from __future__ import annotations

from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.heads.hf_blip import BLIP
from eccv_metric.models.families.heads.hf_blip import BLIP2
from eccv_metric.models.families.heads.hf_blip import BLIP2_HEAD
from eccv_metric.models.families.heads.hf_blip import BLIP_HEAD
from eccv_metric.models.families.heads.hf_blip import load_blip
from eccv_metric.models.families.heads.hf_blip import load_blip2
from eccv_metric.models.families.heads.hf_bridgetower import BRIDGETOWER
from eccv_metric.models.families.heads.hf_bridgetower import load_bridgetower
from eccv_metric.models.families.heads.hf_flava import FLAVA
from eccv_metric.models.families.heads.hf_flava import load_flava
from eccv_metric.models.families.heads.hf_vilt import VILT
from eccv_metric.models.families.heads.hf_vilt import load_vilt
from eccv_metric.models.families.hf import WORKER_MODULES
from eccv_metric.models.families.hf import image_key
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.registry import PAIR_HEADS
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import PairHead
from eccv_metric.models.families.registry import register
from eccv_metric.models.families.registry import register_head
from eccv_metric.models.families.registry import require
from eccv_metric.models.families.torchutil import EXTRA
from eccv_metric.models.families.torchutil import Loading
from eccv_metric.models.families.torchutil import main_commit
from eccv_metric.models.families.torchutil import snapshot

HEADS = tuple(
    register_head(PairHead(architecture, model_type, head, load))
    for architecture, model_type, head, load in (
        (BLIP, "blip", BLIP_HEAD, load_blip),
        (BLIP2, "blip-2", BLIP2_HEAD, load_blip2),
        (VILT, "vilt", "rank_output logit", load_vilt),
        (BRIDGETOWER, "bridgetower", "itm_score[:, 1]", load_bridgetower),
        (FLAVA, "flava", "itm_head[:, 1]", load_flava),
    )
)


def head_of_type(model_type: str) -> PairHead | None:
    """The registered pair head of a transformers model type (``blip``, ``vilt``, ...), if any."""
    return next((h for h in PAIR_HEADS.values() if h.model_type == model_type), None)


def load(name: str, spec: str, options: LoadOptions) -> PairScorer:
    """``hf-itm:<name>``: the pair head of the checkpoint's model type, whatever class its config names."""
    transformers = require("transformers", EXTRA)
    at = Loading(spec, name, options, worker_modules=WORKER_MODULES)
    commit = options.revision or main_commit(name, ask=not at.local_only)
    pin = {"revision": commit} if commit else {}
    with at.errors():
        config = transformers.AutoConfig.from_pretrained(name, local_files_only=at.local_only, **pin)
    model_type = str(getattr(config, "model_type", ""))
    head = head_of_type(model_type)
    if head is None:
        types = ", ".join(h.model_type for h in PAIR_HEADS.values())
        raise EvaluationError(f"{spec}: model type {model_type!r:.40} has no pair head here ({types} have)")
    forced = head.architecture not in (getattr(config, "architectures", None) or [])
    scorer: Any = head.load(name, spec, options, at, commit, forced)
    return scorer


FAMILY = register(
    Family(
        "hf-itm",
        (("hf-itm:<repo or folder>", "the ITM head of a BLIP, BLIP-2, ViLT, BridgeTower or FLAVA checkpoint, "
          "whatever class its config names"),),
        load,
        EXTRA,
        image_key=image_key,
        folder=snapshot,
        worker_modules=WORKER_MODULES,
        kinds=("pair scorer",),
    )
)  # fmt: skip
