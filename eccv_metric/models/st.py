"""``st:<name or folder>``: a sentence-transformers model (text-only models for the text-to-text benchmarks and
correlations; its CLIP-style models, whose ``modalities`` include images, for every benchmark).

Images go to ``SentenceTransformer.encode`` as PIL images (its own preprocessing); texts as str.
"""

from __future__ import annotations

import json
from typing import Any

from eccv_metric.models.spec import Encoder
from eccv_metric.models.spec import require
from eccv_metric.models.torchutil import autocast
from eccv_metric.models.torchutil import check_precision
from eccv_metric.models.torchutil import hub_unreachable
from eccv_metric.models.torchutil import load_error
from eccv_metric.models.torchutil import pick_device
from eccv_metric.models.torchutil import plain
from eccv_metric.models.torchutil import weights_digest


def load(name: str, spec: str, device: str | None, precision: str) -> Encoder:
    st = require("sentence_transformers")
    require("torch")
    device = pick_device(device)
    precision = check_precision(precision, device)
    unreachable = hub_unreachable(name)
    try:
        model = st.SentenceTransformer(name, device=device, local_files_only=unreachable is not None)
    except (OSError, ValueError) as exc:
        raise load_error(spec, exc, unreachable) from None
    model.eval()
    # sentence-transformers 5+ names its modalities; before, a CLIP model is its CLIPModel module
    modalities = [str(m) for m in getattr(model, "modalities", ["text"])]
    if type(model[0]).__name__ == "CLIPModel":
        modalities.append("image")
    kinds = ("image", "caption") if "image" in modalities else ("caption",)

    def encode(items: list) -> Any:
        with autocast(device, precision):
            return model.encode(
                list(items), batch_size=max(1, len(items)), show_progress_bar=False, convert_to_numpy=True
            )

    return Encoder(
        spec=spec,
        kinds=kinds,
        encode_texts=encode,
        encode_prepared=encode if "image" in kinds else None,
        prepare_image=None,
        identity={
            "spec": spec,
            "library": f"sentence-transformers {st.__version__}",
            "class": type(model[0]).__name__,
            "weights": weights_digest(model),
            "preprocessing": json.loads(json.dumps(preprocessing(model), default=str, sort_keys=True)),
        },
        device=device,
        precision=precision,
    )


def preprocessing(model: Any) -> dict:
    """What turns an item into the model's input and its output into the embedding, beside the weights: the
    modules (pooling, normalisation), the tokenizer (or processor) in full, the sequence length, the prompts."""
    tokenizer = getattr(model, "tokenizer", None)
    return {
        "modules": [repr(m) for m in model],
        "tokenizer": plain(tokenizer) if tokenizer is not None else None,
        "max_seq_length": getattr(model, "max_seq_length", None),
        "prompts": getattr(model, "prompts", None),
        "default_prompt_name": getattr(model, "default_prompt_name", None),
        "truncate_dim": getattr(model, "truncate_dim", None),
        "similarity_fn_name": str(getattr(model, "similarity_fn_name", None)),
    }
