"""FLAVA (``FlavaForPreTraining``: its ITM head) as a pair scorer, its global contrastive head as its own first stage.

FLAVA (Singh et al., 2022, Sec. 3.1: an image encoder and a text encoder, each followed by a linear projection
into the multimodal encoder, which prepends its own ``[CLS_M]`` token; Sec. 3.2's ITM "add[s] a classifier on top
of h_CLS,M", and the global contrastive loss compares the projected ``[CLS]`` outputs of the two encoders):
the image states are ``image_to_mm_projection`` of the image encoder's last hidden states (before its final
layer norm, as ``FlavaModel.forward`` feeds them), once per image; a pair runs the text encoder (once per distinct
caption of the batch) and its projection, then the multimodal encoder over the image and text tokens (the text's
padding masked); the score is ``itm_head(...)[:, 1]``, the match logit of the 2-way ITM head (its pooler reads
the multimodal ``[CLS]``). These are ``FlavaForPreTraining.forward``'s steps for ``itm_logits`` with unmasked
inputs (``input_ids_masked = input_ids``, no ``bool_masked_pos``).

The first stage: ``image_projection`` of the image encoder's ``[CLS]`` output and ``text_projection`` of the text
encoder's, L2-normalised, compared by cosine: the contrastive logits of ``FlavaForPreTraining`` without the
temperature (FLAVA's zero-shot retrieval ranks by them). Captions as they are, cut at 77 tokens (the length of
the transformers model card's FLAVA examples; FLAVA's released evaluation length was not found:
``text_length`` sets it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.heads.hf_base import HFPairScorer
from eccv_metric.models.families.heads.hf_base import Parts
from eccv_metric.models.families.heads.hf_base import TextRule
from eccv_metric.models.families.heads.hf_base import cls_encoder
from eccv_metric.models.families.heads.hf_base import load_parts
from eccv_metric.models.families.heads.hf_base import token_limit
from eccv_metric.models.families.heads.text import Tokens
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.torchutil import Loading

FLAVA = "FlavaForPreTraining"
TOKENS = 77
HEAD = "itm_head(multimodal encoder([CLS_M] + image tokens + caption tokens))[:, 1]: the match logit"
READS = (
    "flava.image_model.", "flava.text_model.", "flava.multimodal_model.", "flava.image_to_mm_projection.",
    "flava.text_to_mm_projection.", "flava.image_projection.", "flava.text_projection.", "itm_head.",
)  # fmt: skip


def load_flava(
    name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, forced: bool
) -> FlavaScorer:
    parts = load_parts(name, spec, options, at, commit, FLAVA, READS, forced)
    text = TextRule(None, token_limit(parts, TOKENS, options.text_length))
    notes = (f"captions as they are, cut at {text.tokens} tokens (an assumed length: see the adapter)",)
    return FlavaScorer(parts, text, HEAD, notes)


class FlavaScorer(HFPairScorer):
    """FLAVA's ITM head over cached image states, its contrastive head as ``first_stage`` (module docstring)."""

    def __init__(self, parts: Parts, text: TextRule, head: str, notes: tuple[str, ...]):
        super().__init__(parts, text, head, notes)
        self.first_stage = contrastive_encoder(self)
        self.score_rules = ("itm", "itm+itc")

    def image_states(self, prepared: Any) -> Any:
        flava = self.model.flava
        with self.parts.at.autocast():
            out = flava.image_model(pixel_values=self.pixels(prepared), output_hidden_states=True)
            return flava.image_to_mm_projection(out.hidden_states[-1])

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        import torch

        flava = self.model.flava
        distinct, inverse = np.unique(np.asarray(text_index, dtype=np.int64), return_inverse=True)
        with self.parts.at.autocast():
            image = self.gather(states, image_index)
            ids, mask = tokens.take(distinct, self.device)
            hidden = flava.text_model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
            rows = torch.from_numpy(inverse.reshape(-1)).to(self.device)
            text = flava.text_to_mm_projection(hidden).index_select(0, rows)
            mask = mask.index_select(0, rows)
            width = image.shape[1] + (1 if flava.multimodal_model.use_cls_token else 0)
            ones = torch.ones(image.shape[0], width, dtype=mask.dtype, device=mask.device)
            out = flava.multimodal_model(torch.cat([image, text], dim=1), attention_mask=torch.cat([ones, mask], 1))
            return self.model.itm_head(out.last_hidden_state)[:, 1].float()


def contrastive_encoder(scorer: FlavaScorer) -> FunctionEncoder:
    """FLAVA's global contrastive head as an encoder (cosine similarity), with its own identity (``head: itc``)."""
    flava = scorer.model.flava
    identity = {
        **scorer.identity,
        "spec": f"{scorer.spec}#itc",
        "head": "itc",
        "score": "cosine of image_projection(image [CLS]) and text_projection(caption [CLS])",
    }
    towers = (flava.image_model, flava.image_projection, flava.text_model, flava.text_projection)
    return cls_encoder(scorer, towers, list, scorer.text.tokens, identity)
