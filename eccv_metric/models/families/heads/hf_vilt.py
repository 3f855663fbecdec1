"""ViLT (``ViltForImageAndTextRetrieval``) as a pair scorer.

ViLT (Kim et al., 2021, Sec. 3.1: one transformer over the text embeddings and the image's patch projections
together; Sec. 4.3 fine-tunes image-text retrieval with a "rank" head on the pooled first token): the image
states are ``ViltEmbeddings.visual_embed``'s output, once per image (its patch projections plus position
embeddings, with the image's ``[CLS]``), passed back through ``image_embeds`` with their mask; a pair is the
whole transformer over the caption's tokens and those image tokens; the score is the retrieval head's single
logit, ``rank_output(pooler(...))[:, 0]`` (ViLT's ``compute_irtr_recall`` ranks by it; the model has no 2-way
ITM head here).

As ViLT's own evaluation (dandelin/ViLT ``vilt/modules/objectives.py compute_irtr_recall``): ``visual_embed`` once
per image with every patch (``max_image_len=-1`` in its config), then the text transformer pass per pair;
captions as they are, cut at 40 tokens (``max_text_len=40``; ``text_length`` sets it). ``visual_embed`` draws the
order of the patches at random (``torch.multinomial``; attention does not depend on the order, only the float
rounding does): the adapter draws under a fixed seed and restores the patches' raster order, so a score never
depends on the random stream. Where a config keeps fewer patches than an image has (``max_image_length > 0``)
the kept patches are a random subset in ViLT's code; here the subset of seed 0, drawn per image (recorded in
``notes``).

Images differ in size (ViLT's processor keeps the aspect ratio): the states of a batch are padded to its longest
image with masked zero tokens, the mask carried as the last channel of the states tensor
(:func:`~eccv_metric.models.families.pair_scorer.join_states` pads joined states alike); a batch of pairs reads its
image tokens cut to the longest image among them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eccv_metric.models.families.heads.hf_base import HFPairScorer
from eccv_metric.models.families.heads.hf_base import TextRule
from eccv_metric.models.families.heads.hf_base import load_parts
from eccv_metric.models.families.heads.hf_base import token_limit
from eccv_metric.models.families.heads.text import Tokens
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.torchutil import Loading

VILT = "ViltForImageAndTextRetrieval"
TOKENS = 40  # ViLT's max_text_len
HEAD = "rank_output(pooler(ViLT(caption tokens + image tokens)))[:, 0]: the retrieval head's logit"
NO_FIRST_STAGE = (
    "ViLT scores a pair with one transformer over the image and the caption together: no embedding of its own "
    "ranks a gallery; rerank with another model's first stage or score every pair"
)
SEED = 0  # the random stream visual_embed draws its patch order (and, where it keeps fewer, its patches) from


def load_vilt(name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, forced: bool) -> Any:
    parts = load_parts(name, spec, options, at, commit, VILT, ("vilt.", "rank_output."), forced)
    text = TextRule(None, token_limit(parts, TOKENS, options.text_length))
    notes = [
        f"captions as they are, cut at {text.tokens} tokens (ViLT's max_text_len: 40)",
        "visual_embed's random patch order (torch.multinomial) drawn under a fixed seed and put back in raster "
        "order: scores do not depend on the random stream",
    ]
    limit = getattr(parts.model.config, "max_image_length", -1)
    if isinstance(limit, int) and limit > 0:
        notes.append(
            f"max_image_length {limit}: an image with more patches keeps a random subset in ViLT's code; here the "
            f"subset drawn with seed {SEED}, per image"
        )
    prepare = PrepareVariable(parts.image_processor)
    return ViltScorer(parts, text, HEAD, tuple(notes), prepare_image=prepare, first_stage_note=NO_FIRST_STAGE)


class PrepareVariable:
    """ViLT's image processor on one PIL image, as ``{"pixel_values": CHW, "pixel_mask": HW}``: images keep their
    own sizes (a dict is not stacked by the image workers; picklable for spawned workers)."""

    def __init__(self, image_processor: Any):
        self.image_processor = image_processor

    def __call__(self, image: Any) -> dict:
        out = self.image_processor(images=image, return_tensors="pt")
        return {"pixel_values": out["pixel_values"][0], "pixel_mask": out["pixel_mask"][0]}


class ViltScorer(HFPairScorer):
    """ViLT over cached ``visual_embed`` states (module docstring)."""

    def image_states(self, prepared: Any) -> Any:
        """``(images, tokens, hidden + 1)``: each image's ``[CLS]`` and patch tokens in raster order, zero-padded
        to the batch's longest, the last channel 1 on tokens and 0 on padding."""
        import torch

        embeddings = self.model.vilt.embeddings
        limit = self.model.config.max_image_length
        rows = []
        with self.parts.at.autocast():
            for item in prepared:
                pixels = item["pixel_values"][None].to(self.device)
                mask = item["pixel_mask"][None].to(self.device)
                with torch.random.fork_rng(devices=[]):  # visual_embed's draws come from the CPU generator
                    torch.manual_seed(SEED)
                    x, x_mask, (patch_index, _) = embeddings.visual_embed(pixels, mask, max_image_length=limit)
                x, x_mask = x[0], x_mask[0]
                # raster order of the kept patches (valid first), the [CLS] token first
                grid = int(patch_index[0, :, 1].max()) + 1
                key = patch_index[0, :, 0] * grid + patch_index[0, :, 1] + (1 - x_mask[1:]) * (1 << 30)
                order = torch.argsort(key) + 1
                keep = torch.cat([torch.zeros(1, dtype=order.dtype, device=order.device), order])
                x, x_mask = x[keep], x_mask[keep]
                valid = int(x_mask.sum())
                rows.append(torch.cat([x[:valid], torch.ones(valid, 1, dtype=x.dtype, device=x.device)], 1))
        width = max(r.shape[0] for r in rows)
        states = rows[0].new_zeros((len(rows), width, rows[0].shape[1]))
        for i, r in enumerate(rows):
            states[i, : r.shape[0]] = r
        return states

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        with self.parts.at.autocast():
            image = self.gather(states, image_index)
            width = int(image[:, :, -1].sum(dim=1).max())
            image = image[:, :width]
            ids, mask = tokens.take(text_index, self.device)
            out = self.model(
                input_ids=ids, attention_mask=mask, image_embeds=image[:, :, :-1], pixel_mask=image[:, :, -1].long()
            )
            return out.logits[:, 0].float()
