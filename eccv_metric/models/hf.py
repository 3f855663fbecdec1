"""``hf:<repo or folder>``: a transformers model with ``get_image_features`` / ``get_text_features`` and its own
``AutoProcessor`` (the model's preprocessing, never ours): CLIPModel, SiglipModel and the like.

Text: the processor's tokenizer, truncated to the model's length; SigLIP-family models pad to
``max_length`` as they were trained (their model card's usage), others pad to the longest in the batch.
"""

from __future__ import annotations

import json
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.spec import Encoder
from eccv_metric.models.spec import require
from eccv_metric.models.torchutil import autocast
from eccv_metric.models.torchutil import check_precision
from eccv_metric.models.torchutil import hub_unreachable
from eccv_metric.models.torchutil import load_error
from eccv_metric.models.torchutil import pick_device
from eccv_metric.models.torchutil import saved_digest
from eccv_metric.models.torchutil import weights_digest


def load(name: str, spec: str, device: str | None, precision: str) -> Encoder:
    transformers = require("transformers")
    require("torch")
    unreachable = hub_unreachable(name)
    try:
        model = transformers.AutoModel.from_pretrained(name, local_files_only=unreachable is not None)
        processor = transformers.AutoProcessor.from_pretrained(name, local_files_only=unreachable is not None)
    except (OSError, ValueError) as exc:
        raise load_error(spec, exc, unreachable) from None
    device = pick_device(device)
    precision = check_precision(precision, device)
    model = model.to(device).eval()
    kinds = tuple(
        kind
        for kind, method, part in (
            ("image", "get_image_features", "image_processor"),
            ("caption", "get_text_features", "tokenizer"),
        )
        if callable(getattr(model, method, None)) and getattr(processor, part, None) is not None
    )
    if not kinds:
        raise EvaluationError(f"{spec}: {type(model).__name__} has neither get_image_features nor get_text_features")
    model_type = str(getattr(model.config, "model_type", ""))
    padding: Any = "max_length" if "siglip" in model_type else True
    image_processor = getattr(processor, "image_processor", None)
    max_length = text_length(model, getattr(processor, "tokenizer", None))

    def encode_prepared(pixels: Any) -> Any:
        with autocast(device, precision):
            return features(model.get_image_features(pixel_values=pixels.to(device)))

    def encode_texts(texts: list[str]) -> Any:
        tokens = processor.tokenizer(
            list(texts), padding=padding, truncation=True, max_length=max_length, return_tensors="pt"
        )
        with autocast(device, precision):
            return features(model.get_text_features(**{k: v.to(device) for k, v in tokens.items()}))

    preprocessing = {
        "image_processor": image_processor.to_dict() if image_processor is not None else None,
        "image_processor_class": type(image_processor).__name__ if image_processor is not None else None,
        "tokenizer": type(processor.tokenizer).__name__ if getattr(processor, "tokenizer", None) else None,
        "processor": saved_digest(processor),  # every file of the tokenizer and the image processor
        "padding": padding,
        "max_length": max_length,
    }
    return Encoder(
        spec=spec,
        kinds=kinds,
        encode_texts=encode_texts if "caption" in kinds else None,
        encode_prepared=encode_prepared if "image" in kinds else None,
        prepare_image=Prepare(image_processor) if "image" in kinds else None,
        identity={
            "spec": spec,
            "library": f"transformers {transformers.__version__}",
            "class": type(model).__name__,
            "weights": weights_digest(model),
            "revision": getattr(model.config, "_commit_hash", None),
            "preprocessing": json.loads(json.dumps(preprocessing, default=str, sort_keys=True)),
        },
        device=device,
        precision=precision,
    )


def text_length(model: Any, tokenizer: Any) -> int | None:
    """Tokens a text keeps: the smaller of the tokenizer's ``model_max_length`` (unset: a huge number) and the
    text model's ``max_position_embeddings`` (longer inputs fail in the model)."""
    config = getattr(model.config, "text_config", None) or model.config
    limits = [getattr(config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    known = [int(x) for x in limits if isinstance(x, (int, float)) and 0 < x < 1_000_000]
    return min(known) if known else None


class Prepare:
    """The model's image processor on one PIL image (picklable: DataLoader workers may be spawned)."""

    def __init__(self, image_processor: Any):
        self.image_processor = image_processor

    def __call__(self, image: Any) -> Any:
        return self.image_processor(images=image, return_tensors="pt")["pixel_values"][0]


def features(output: Any) -> Any:
    """transformers 5 returns a model output whose ``pooler_output`` is the projected feature; 4.x a tensor."""
    return getattr(output, "pooler_output", output) if not hasattr(output, "detach") else output
