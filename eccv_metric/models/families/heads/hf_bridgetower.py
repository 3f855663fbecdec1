"""BridgeTower (``BridgeTowerForImageAndTextRetrieval``) as a pair scorer.

BridgeTower (Xu et al., 2023, Sec. 3: uni-modal encoders whose top layers are each connected by a bridge layer to
one layer of a cross-modal encoder; the ITM head reads the concatenated pooled outputs of the cross-modal text
and image streams): the image stream never reads the caption before the cross-modal encoder, so the image
states are everything it gives the cross-modal encoder, once per image: the cross-modal image input of the first
cross-modal layer (``cross_modal_image_layernorm`` of the transformed, layer-normed vision output at the split
layer, plus the image token type) and the bridge input of each later layer (the transformed ``ln_post`` output of
the next vision layer, plus the token type), stacked: ``(images, cross-modal layers, image tokens, hidden)``. A
pair runs the caption's uni-modal text encoder (once per distinct caption of the batch), its bridges, and the
cross-modal layers over the gathered image states; the score is ``itm_score(cls_features)[:, 1]``, the match
logit of the 2-way ITM head. These are the steps of ``BridgeTowerModel.forward`` in the same order on the same
inputs (its ``image_embeds`` argument only skips the patch embedding, so the forward itself cannot take cached
states).

Captions as they are (BridgeTower's RoBERTa tokenizer), cut at 50 tokens (``max_text_len=50`` in BridgeTower's
pre-training config, whose checkpoints carry the ITM head; its retrieval fine-tuning configs use 40:
``text_length`` sets it). The transformers port runs ``ln_post`` before every bridge, as BridgeTower's own code
does with ``vit_layernorm_shared=True`` (its default and the released checkpoints'); a config with
``share_layernorm=False`` is scored as the port does (its separate layer norms are not read), noted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.heads.hf_base import HFPairScorer
from eccv_metric.models.families.heads.hf_base import TextRule
from eccv_metric.models.families.heads.hf_base import load_parts
from eccv_metric.models.families.heads.hf_base import token_limit
from eccv_metric.models.families.heads.text import Tokens
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.torchutil import Loading

BRIDGETOWER = "BridgeTowerForImageAndTextRetrieval"
TOKENS = 50  # BridgeTower's pre-training max_text_len
NO_FIRST_STAGE = (
    "BridgeTowerForImageAndTextRetrieval has no contrastive head (BridgeTowerForContrastiveLearning, another "
    "class, has one): rerank with another model's first stage or score every pair"
)
HEAD = "itm_score(pooled cross-modal text [CLS] ++ pooled cross-modal image [CLS])[:, 1]: the match logit"


def load_bridgetower(
    name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, forced: bool
) -> BridgeTowerScorer:
    parts = load_parts(name, spec, options, at, commit, BRIDGETOWER, ("bridgetower.", "itm_score."), forced)
    text = TextRule(None, token_limit(parts, TOKENS, options.text_length))
    notes = [f"captions as they are, cut at {text.tokens} tokens (BridgeTower's pre-training max_text_len: 50)"]
    if not getattr(parts.model.config.vision_config, "share_layernorm", True):
        notes.append("share_layernorm false: ln_post before every bridge, as the transformers port does")
    scorer = BridgeTowerScorer(parts, text, HEAD, tuple(notes), first_stage_note=NO_FIRST_STAGE)
    scorer.setup()
    return scorer


class BridgeTowerScorer(HFPairScorer):
    """BridgeTower's cross-modal encoder over cached image-stream states (module docstring)."""

    def setup(self) -> None:
        bt = self.model.bridgetower
        self.split = len(bt.text_model.encoder.layer) - bt.config.num_hidden_layers + 1
        if self.split < 1 or len(bt.vision_model.visual.transformer.resblocks) < len(bt.text_model.encoder.layer):
            raise EvaluationError(f"{self.spec}: its layer counts do not fit BridgeTower's bridges")

    def transform(self, kind: str, hidden: Any, layer: int) -> Any:
        bt = self.model.bridgetower
        module = getattr(bt, f"cross_modal_{kind}_transform")
        return module(hidden) if bt.config.share_cross_modal_transformer_layers else module[layer](hidden)

    def link(self, kind: str, layer: int) -> Any:
        bt = self.model.bridgetower
        towers = getattr(bt, f"cross_modal_{kind}_link_tower")
        return towers if bt.config.share_link_tower_layers else towers[layer]

    def token_type(self, index: int, like: Any) -> Any:
        import torch

        bt = self.model.bridgetower
        return bt.token_type_embeddings(torch.full((1,), index, dtype=torch.long, device=like.device)).expand_as(like)

    def image_states(self, prepared: Any) -> Any:
        import torch

        bt = self.model.bridgetower
        visual, dtype = bt.vision_model.visual, bt.vision_model.dtype
        n_text = len(bt.text_model.encoder.layer)
        with self.parts.at.autocast():
            hidden = visual.forward_pre(self.pixels(prepared).type(dtype))
            for block in visual.transformer.resblocks[: self.split]:
                hidden = block(hidden)
            first = self.transform("image", visual.forward_post(hidden.type(dtype)), 0)
            token_type = self.token_type(1, first)
            layers = [bt.cross_modal_image_layernorm(first + token_type)]
            for link, i in enumerate(range(self.split, n_text)):
                hidden = visual.transformer.resblocks[i](hidden).type(dtype)
                layers.append(self.transform("image", visual.forward_post(hidden), link + 1) + token_type)
            return torch.stack(layers, dim=1)

    def text_stream(self, ids: Any, mask: Any) -> Any:
        """The caption side of every cross-modal layer, as the image side in :meth:`image_states`."""
        import torch
        from transformers.masking_utils import create_bidirectional_mask

        bt = self.model.bridgetower
        layers = bt.text_model.encoder.layer
        hidden = bt.text_model.embeddings(input_ids=ids)
        extended = create_bidirectional_mask(config=bt.config, inputs_embeds=hidden[:, 0:1, :], attention_mask=mask)
        for layer in layers[: self.split]:
            hidden = layer(hidden, extended)
        first = self.transform("text", hidden, 0)
        token_type = self.token_type(0, first)
        out = [bt.cross_modal_text_layernorm(first + token_type)]
        for link, i in enumerate(range(self.split, len(layers))):
            hidden = layers[i](hidden, extended)
            out.append(self.transform("text", hidden, link + 1) + token_type)
        return torch.stack(out, dim=1)

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        import torch
        from transformers.masking_utils import create_bidirectional_mask

        bt = self.model.bridgetower
        distinct, inverse = np.unique(np.asarray(text_index, dtype=np.int64), return_inverse=True)
        with self.parts.at.autocast():
            ids, mask = tokens.take(distinct, self.device)
            text = self.text_stream(ids, mask)  # once per distinct caption of the batch
            rows = torch.from_numpy(inverse.reshape(-1)).to(self.device)
            text, mask = text.index_select(0, rows), mask.index_select(0, rows)
            first = text[:, 0, 0:1, :]
            extended = create_bidirectional_mask(config=bt.config, inputs_embeds=first, attention_mask=mask)

            def image(layer: int) -> Any:  # one layer's states of the batch at a time: a sixth of the memory
                return self.gather(states, image_index, layer)

            y_in = image(0)
            x = bt.cross_modal_text_layers[0](text[:, 0], y_in, attention_mask=extended)[0]
            y = bt.cross_modal_image_layers[0](y_in, text[:, 0], encoder_attention_mask=extended)[0]
            for layer in range(1, states.shape[1]):
                x_in = self.link("text", layer - 1)(text[:, layer], x, extended)
                y_in = self.link("image", layer - 1)(image(layer), y, None)
                x = bt.cross_modal_text_layers[layer](x_in, y_in, attention_mask=extended)[0]
                y = bt.cross_modal_image_layers[layer](y_in, x_in, encoder_attention_mask=extended)[0]
            return self.model.itm_score(bt.get_cls_features(x, y))[:, 1].float()
