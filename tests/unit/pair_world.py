"""Tiny random transformers pair heads (BLIP, BLIP-2, ViLT, BridgeTower, FLAVA ITM), built from configs, seeded,
saved with their processors to a folder (loaded back through ``hf:<folder>``), and each model's own forward pass
on whole pairs (pixels per pair): the oracle the adapters' cached-state scoring is compared with."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import numpy as np

CHARS = list(string.ascii_lowercase + string.digits)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CHARS, *".,!?'\"()*#:;~-", *("##" + c for c in CHARS)]
SMALL = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}
INIT = 0.2  # larger than the default 0.02: scores spread over about one unit, so a wrong input shows
CAPTIONS = [
    "A dog runs on the beach.",
    "two cats (sleeping) on a red sofa!",
    "a man riding a wave on top of a surfboard",
    "A plate: rice; beans; and ~ salsa",
    "kids",
    "A very long caption that goes on and on about a kitchen with a stove and a sink and many cups on shelves",
]


def bert_tokenizer(enc: bool = True, max_length: int = 40) -> Any:
    """A character-level BERT WordPiece tokenizer (lower case), with BLIP's ``[DEC]`` (and ``[ENC]``) added last."""
    from transformers import BertTokenizer

    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)}, model_max_length=max_length)
    added = {"bos_token": "[DEC]", **({"additional_special_tokens": ["[ENC]"]} if enc else {})}
    tokenizer.add_special_tokens(added)
    return tokenizer


def images(n: int, seed: int = 0, sizes: tuple[tuple[int, int], ...] = ((8, 8),)) -> list:
    """``n`` random RGB PIL images, sizes (width, height) taken in turn."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = sizes[i % len(sizes)]
        out.append(Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)))
    return out


def token_ids(tokenizer: Any) -> dict:
    return {"pad_token_id": tokenizer.pad_token_id, "vocab_size": len(tokenizer), "initializer_range": INIT}


def tiny_blip(folder: Path, seed: int = 0, enc: bool = True) -> Path:
    import torch
    from transformers import BlipConfig
    from transformers import BlipForImageTextRetrieval
    from transformers import BlipImageProcessor
    from transformers import BlipProcessor

    torch.manual_seed(seed)
    tokenizer = bert_tokenizer(enc)
    text = {**SMALL, **token_ids(tokenizer), "max_position_embeddings": 40, "bos_token_id": 91, "sep_token_id": 3}
    if not enc:
        text["vocab_size"] = len(tokenizer) + 1  # the embeddings hold [ENC]'s row; the tokenizer lacks it
    config = BlipConfig(
        text_config=text, vision_config={**SMALL, "image_size": 8, "patch_size": 4, "initializer_range": INIT},
        image_text_hidden_size=8, initializer_range=INIT,
    )  # fmt: skip
    BlipForImageTextRetrieval(config).save_pretrained(folder)
    BlipProcessor(BlipImageProcessor(size={"height": 8, "width": 8}), tokenizer).save_pretrained(folder)
    return folder


def tiny_blip2(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import Blip2Config
    from transformers import Blip2ForImageTextRetrieval
    from transformers import Blip2Processor
    from transformers import BlipImageProcessor

    torch.manual_seed(seed)
    tokenizer = bert_tokenizer()
    qformer = {**SMALL, **token_ids(tokenizer), "max_position_embeddings": 40, "encoder_hidden_size": 16,
               "cross_attention_frequency": 1, "use_qformer_text_input": True}  # fmt: skip
    config = Blip2Config(
        vision_config={**SMALL, "image_size": 8, "patch_size": 4, "initializer_range": INIT}, qformer_config=qformer,
        num_query_tokens=4, image_text_hidden_size=8, initializer_range=INIT,
    )  # fmt: skip
    Blip2ForImageTextRetrieval(config).save_pretrained(folder)
    Blip2Processor(BlipImageProcessor(size={"height": 8, "width": 8}), tokenizer).save_pretrained(folder)
    return folder


def tiny_vilt(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import ViltConfig
    from transformers import ViltForImageAndTextRetrieval
    from transformers import ViltImageProcessor
    from transformers import ViltProcessor

    torch.manual_seed(seed)
    tokenizer = bert_tokenizer()
    config = ViltConfig(**SMALL, **token_ids(tokenizer), max_position_embeddings=40, image_size=16, patch_size=4)
    ViltForImageAndTextRetrieval(config).save_pretrained(folder)
    processor = ViltImageProcessor(size={"shortest_edge": 16}, size_divisor=4)
    ViltProcessor(processor, tokenizer).save_pretrained(folder)
    return folder


def tiny_bridgetower(folder: Path, seed: int = 0) -> Path:
    """Its tokenizer's model_max_length is its text model's max_position_embeddings (42), as in a checkpoint whose
    tokenizer config copies it: RoBERTa-style positions start at padding_idx + 1, so 41 tokens fit ([PAD] = 0)."""
    import torch
    from transformers import BridgeTowerConfig
    from transformers import BridgeTowerForImageAndTextRetrieval
    from transformers import BridgeTowerImageProcessor
    from transformers import BridgeTowerProcessor

    torch.manual_seed(seed)
    tokenizer = bert_tokenizer(max_length=42)
    wide = {"hidden_size": 64, "intermediate_size": 32, "num_attention_heads": 2}  # its vision heads: hidden // 64
    config = BridgeTowerConfig(
        text_config={**wide, **token_ids(tokenizer), "num_hidden_layers": 3, "max_position_embeddings": 42},
        vision_config={"hidden_size": 64, "num_hidden_layers": 3, "image_size": 8, "patch_size": 4},
        **wide, num_hidden_layers=2, initializer_factor=5.0,
    )  # fmt: skip
    BridgeTowerForImageAndTextRetrieval(config).save_pretrained(folder)
    image = BridgeTowerImageProcessor(size={"shortest_edge": 8}, crop_size={"shortest_edge": 8}, size_divisor=4)
    BridgeTowerProcessor(image, tokenizer).save_pretrained(folder)
    return folder


def tiny_flava(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import FlavaConfig
    from transformers import FlavaForPreTraining
    from transformers import FlavaImageProcessor
    from transformers import FlavaProcessor

    torch.manual_seed(seed)
    tokenizer = bert_tokenizer()
    config = FlavaConfig(
        text_config={**SMALL, **token_ids(tokenizer), "max_position_embeddings": 40},
        image_config={**SMALL, "image_size": 8, "patch_size": 4, "initializer_range": INIT},
        multimodal_config={**SMALL, "initializer_range": INIT}, hidden_size=16, projection_dim=8, init_codebook=False,
        initializer_range=INIT,
    )  # fmt: skip
    FlavaForPreTraining(config).save_pretrained(folder)
    image = FlavaImageProcessor(size={"height": 8, "width": 8}, crop_size={"height": 8, "width": 8})
    FlavaProcessor(image, tokenizer).save_pretrained(folder)
    return folder


BUILDERS = {
    "blip": tiny_blip,
    "blip2": tiny_blip2,
    "vilt": tiny_vilt,
    "bridgetower": tiny_bridgetower,
    "flava": tiny_flava,
}


def oracle(kind: str, model: Any, pixels: Any, ids: Any, mask: Any, pixel_mask: Any = None) -> np.ndarray:
    """The model's own forward pass on whole pairs (one image's pixels per pair): the pair head's score."""
    import torch

    with torch.inference_mode():
        if kind == "blip":
            out = model(input_ids=ids, pixel_values=pixels, attention_mask=mask).itm_score[:, 1]
        elif kind == "blip2":
            out = model(pixel_values=pixels, input_ids=ids, attention_mask=mask, use_image_text_matching_head=True)
            out = out.logits_per_image[:, 1]
        elif kind == "vilt":
            out = model(input_ids=ids, attention_mask=mask, pixel_values=pixels, pixel_mask=pixel_mask).logits[:, 0]
        elif kind == "bridgetower":
            out = model(input_ids=ids, attention_mask=mask, pixel_values=pixels).logits[:, 1]
        else:
            out = model(input_ids=ids, attention_mask=mask, pixel_values=pixels, return_loss=False).itm_logits[:, 1]
    return out.float().numpy()
