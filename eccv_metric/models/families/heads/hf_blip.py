"""BLIP and BLIP-2 image-text matching (``BlipForImageTextRetrieval``, ``Blip2ForImageTextRetrieval``) as pair
scorers; BLIP's ITC head as its own first stage.

BLIP (Li et al., 2022, Sec. 3.2 "Image-Text Matching Loss ... uses an ITM head (a linear layer) to predict whether
an image-text pair is positive (matched) or negative"): the image states are the vision transformer's last
hidden states (once per image); a pair is the image-grounded text encoder (its cross-attention reading the
image states) on the caption, whose first token's output goes through ``itm_head``; the score is the "match"
logit, ``itm_head(...)[:, 1]``. The first stage (Sec. 3.2's ITC, what LAVIS's ``compute_sim_matrix`` and BLIP's
``train_retrieval.py evaluation`` rank by before reranking) is the cosine of ``vision_proj`` of the image's
first token and ``text_proj`` of the caption's ``[CLS]`` output, both L2-normalised: what
``BlipForImageTextRetrieval(use_itm_head=False)`` computes (its ``itm_score``), without a temperature.

Where the transformers port differs from BLIP's own code (salesforce/BLIP ``train_retrieval.py``, ``models/blip.py``),
this adapter follows the original (``reference="original"``, the default; ``"lavis"`` follows LAVIS's
``compute_sim_matrix`` and its ``blip_caption`` processor, the same but for captions cut at 50 words;
``"transformers"`` follows the port):

- the ITM pass puts ``[ENC]`` first (``text_ids[:, 0] = tokenizer.enc_token_id``); the port feeds the tokenizer's
  ``[CLS]`` (transformers issues #22732, #25629). The ITC text encoder reads ``[CLS]`` in both. ``[ENC]`` is the
  tokenizer's ``[ENC]`` token, or, where the tokenizer lacks it, the id after ``[DEC]`` when the text model's
  vocabulary ends there (BLIP's ``init_tokenizer`` adds ``[DEC]`` then ``[ENC]`` to bert-base-uncased's);
- captions go through BLIP's ``pre_caption`` (lower case, ``.!"()*#:;~`` removed) cut at 30 words
  (``coco_karpathy_retrieval_eval(max_words=30)``; ``text_length`` sets the words: LAVIS's ``blip_caption``
  processor cuts at 50), then at 35 tokens (``max_length=35`` in both BLIP's and LAVIS's evaluation); the port's
  processor tokenises the raw caption.

BLIP-2 (Li et al., 2023, Sec. 3.2 ITM: "we feed each output query embedding into a two-class linear classifier to
obtain a logit, and average the logits across all queries as the output matching score"): the image states are
the vision model's last hidden states (post layer norm, LAVIS's ``ln_vision(visual_encoder(image))``); a pair is
the Q-Former over the 32 learned queries followed by the caption (queries and text attend to each other, the
queries cross-attend the image states), ``itm_head`` on each query's output, averaged over the queries: the
score is the mean logit's index 1 (LAVIS's ``compute_itm``: ``itm_logit[:, :, 1].mean(dim=1)``). BLIP-2's
tokens: ``[CLS]`` first (no ``[ENC]``), LAVIS's ``pre_caption`` at 50 words, 35 tokens. BLIP-2 has no own first
stage here: its ITC scores a pair by the maximum over the 32 query embeddings (``sim_q2t.max(0)``), which no
single embedding per image gives, so the engine's embedding ranking cannot compute it; rerank with another
model's first stage (``first_stage=``) or score every pair.

In both, the cross-attention layers' keys and values of the image states are computed once per distinct image
of a batch of pairs (:mod:`~eccv_metric.models.families.heads.shared_kv`): a batch pairing one image with many captions
does not project that image once per pair, as the model's own forward does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.heads.hf_base import REFERENCES
from eccv_metric.models.families.heads.hf_base import HFPairScorer
from eccv_metric.models.families.heads.hf_base import Parts
from eccv_metric.models.families.heads.hf_base import TextRule
from eccv_metric.models.families.heads.hf_base import cls_encoder
from eccv_metric.models.families.heads.hf_base import load_parts
from eccv_metric.models.families.heads.hf_base import token_limit
from eccv_metric.models.families.heads.shared_kv import SharedProjections
from eccv_metric.models.families.heads.text import Tokens
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.torchutil import Loading

BLIP = "BlipForImageTextRetrieval"
BLIP2 = "Blip2ForImageTextRetrieval"
BLIP_WORDS = 30  # salesforce/BLIP coco_karpathy_retrieval_eval(max_words=30)
LAVIS_WORDS = 50  # LAVIS BlipCaptionProcessor(max_words=50), BLIP-2's evaluation
TOKENS = 35  # max_length=35 in BLIP's train_retrieval.py evaluation and LAVIS's compute_sim_matrix
# whose evaluation code an adapter's inputs follow (the provenance's protocol.code), by reference=
BLIP_CODE = "BLIP's own (salesforce/BLIP train_retrieval.py evaluation)"
LAVIS_CODE = "LAVIS's (salesforce/LAVIS compute_sim_matrix, blip_caption processor)"
PORT_CODE = "the transformers port's"
BLIP_HEAD = "itm_head(text_encoder(caption, cross-attending the image)[:, 0])[:, 1]: the match logit"
BLIP2_HEAD = "itm_head(Q-Former(queries + caption, cross-attending the image)[:, :32]).mean(queries)[:, 1]"
NO_FIRST_STAGE = (
    "BLIP-2's ITC scores a pair by the maximum over its 32 query embeddings, which no single embedding per image "
    "gives: rerank with another model's first stage or score every pair"
)


def load_blip(name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, forced: bool) -> BlipScorer:
    reads = ("vision_model.", "text_encoder.", "vision_proj.", "text_proj.", "itm_head.")
    parts = load_parts(name, spec, options, at, commit, BLIP, reads, forced)
    if options.reference in ("original", "lavis"):
        lavis = options.reference == "lavis"
        enc, tokens = enc_token_id(parts), token_limit(parts, TOKENS)
        itm = TextRule(options.text_length or (LAVIS_WORDS if lavis else BLIP_WORDS), tokens, enc, "[ENC]")
        whose = "LAVIS's blip_caption" if lavis else "BLIP's"
        notes = (
            "BLIP ITM reads [ENC] first, as BLIP's own code and LAVIS's compute_sim_matrix do (the transformers port "
            "feeds [CLS]: transformers #22732, #25629); ITC reads [CLS]",
            f'captions: {whose} pre_caption (lower case, .!"()*#:;~ removed) cut at {itm.words} words '
            f"(BLIP's own retrieval evaluation: 30; LAVIS's: 50), then at {tokens} tokens",
        )
        code = LAVIS_CODE if lavis else BLIP_CODE
    else:
        itm = TextRule(None, token_limit(parts, None, options.text_length))
        notes = ("BLIP ITM reads [CLS] first, as the transformers port does (BLIP's own code reads [ENC])",)
        code = PORT_CODE
    scorer = BlipScorer(parts, itm, TextRule(itm.words, itm.tokens), notes)
    scorer.code = code
    return scorer


def load_blip2(
    name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, forced: bool
) -> Blip2Scorer:
    reads = ("vision_model.", "query_tokens", "embeddings.", "qformer.", "itm_head.")
    parts = load_parts(name, spec, options, at, commit, BLIP2, reads, forced)
    if options.reference in ("original", "lavis"):  # BLIP-2's own code is LAVIS's
        text = TextRule(options.text_length or LAVIS_WORDS, token_limit(parts, TOKENS))
        notes = (
            f"captions: LAVIS's pre_caption (lower case, .!\"()*#:;~ removed) cut at {text.words} words, then "
            f"at {text.tokens} tokens, as BLIP-2's evaluation (LAVIS compute_sim_matrix) does",
        )
        code = LAVIS_CODE
    else:
        text = TextRule(None, token_limit(parts, None, options.text_length))
        notes = ("captions tokenised as the transformers processor does (no pre_caption)",)
        code = PORT_CODE
    scorer = Blip2Scorer(parts, text, BLIP2_HEAD, notes, first_stage_note=NO_FIRST_STAGE)
    scorer.code = code
    return scorer


def enc_token_id(parts: Parts) -> int:
    """BLIP's ``[ENC]`` id (see the module docstring), or one error line."""
    tokenizer = parts.tokenizer
    unk = tokenizer.unk_token_id
    enc = tokenizer.convert_tokens_to_ids("[ENC]")
    if isinstance(enc, int) and enc != unk:
        return enc
    dec = tokenizer.convert_tokens_to_ids("[DEC]")
    vocab = getattr(parts.model.config.text_config, "vocab_size", None)
    if isinstance(dec, int) and dec != unk and vocab == dec + 2:
        return dec + 1
    raise EvaluationError(
        f"{parts.spec}: its tokenizer has no [ENC] token, which BLIP's ITM reads first; to read [CLS] as the "
        "transformers port does, use reference= transformers"
    )


class BlipScorer(HFPairScorer):
    """BLIP's ITM head over cached vision states, with its ITC head as ``first_stage`` (module docstring)."""

    references = REFERENCES

    def __init__(self, parts: Parts, itm: TextRule, itc: TextRule, notes: tuple[str, ...]):
        super().__init__(parts, itm, BLIP_HEAD, notes)
        self.first_stage = itc_encoder(self, itc)
        self.score_rules = ("itm", "itm+itc")
        self.shared = SharedProjections(self.model.text_encoder)  # keys / values once per distinct image

    def image_states(self, prepared: Any) -> Any:
        with self.parts.at.autocast():
            return self.model.vision_model(pixel_values=self.pixels(prepared)).last_hidden_state

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        import torch

        with self.parts.at.autocast(), self.shared.batch(states, image_index, self.gather) as image:
            ids, mask = tokens.take(text_index, self.device)
            atts = torch.ones(image.shape[:-1], dtype=torch.long, device=image.device)
            out = self.model.text_encoder(
                input_ids=ids, attention_mask=mask, encoder_hidden_states=image, encoder_attention_mask=atts
            ).last_hidden_state
            return self.model.itm_head(out[:, 0, :])[:, 1].float()


def itc_encoder(scorer: BlipScorer, text: TextRule) -> FunctionEncoder:
    """BLIP's ITC head as an encoder (cosine similarity): its own identity (``head: itc``), the scorer's images."""
    model = scorer.model
    identity = {
        **scorer.identity,
        "spec": f"{scorer.spec}#itc",
        "head": "itc",
        "score": "cosine of vision_proj(image [CLS]) and text_proj(caption [CLS])",
        "preprocessing": {**scorer.identity["preprocessing"], "text": text.describe()},
    }
    towers = (model.vision_model, model.vision_proj, model.text_encoder, model.text_proj)
    return cls_encoder(scorer, towers, text.texts, text.tokens, identity)


class Blip2Scorer(HFPairScorer):
    """BLIP-2's ITM head (the Q-Former with its queries and the caption) over cached vision states."""

    references = REFERENCES

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.shared = SharedProjections(self.model.qformer)  # keys / values once per distinct image

    def image_states(self, prepared: Any) -> Any:
        with self.parts.at.autocast():
            return self.model.vision_model(pixel_values=self.pixels(prepared)).last_hidden_state

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        import torch

        model = self.model
        with self.parts.at.autocast(), self.shared.batch(states, image_index, self.gather) as image:
            ids, mask = tokens.take(text_index, self.device)
            queries = model.query_tokens.expand(image.shape[0], -1, -1)
            n = queries.shape[1]
            attention = torch.cat([torch.ones(queries.shape[:-1], dtype=mask.dtype, device=mask.device), mask], 1)
            embeds = model.embeddings(input_ids=ids, query_embeds=queries)
            out = model.qformer(
                query_embeds=embeds, query_length=n, attention_mask=attention, encoder_hidden_states=image,
                encoder_attention_mask=torch.ones(image.shape[:-1], dtype=torch.long, device=image.device),
            ).last_hidden_state  # fmt: skip
            logits = model.itm_head(out[:, :n, :].to(model.itm_head.weight.dtype))
            return logits.mean(dim=1)[:, 1].float()
