"""``st:<name or folder>``: a sentence-transformers model (text-only models for the text-to-text benchmarks and
correlations; its CLIP-style models, whose ``modalities`` include images, for every benchmark).

Images go to ``SentenceTransformer.encode`` as PIL images (its own preprocessing); texts as str, several
batches at a time, so that sentence-transformers batches and length-sorts them itself (``batch_size``).
Similarity: the model's own ``similarity_fn_name`` (cosine, or dot: ranked by dot products); a model declaring
euclidean or manhattan distance is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eccv_metric.models.families.identity import plain
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import register
from eccv_metric.models.families.registry import require
from eccv_metric.models.families.torchutil import EXTRA
from eccv_metric.models.families.torchutil import Loading
from eccv_metric.models.families.torchutil import main_commit
from eccv_metric.models.families.torchutil import require_folder
from eccv_metric.models.families.torchutil import snapshot
from eccv_metric.models.families.weights import hub_folder

# what a sentence-transformers model folder holds (a CLIP one has no config.json); a transformers model's folder
# (which sentence-transformers wraps with mean pooling) holds config.json
PROBES = ("modules.json", "config.json")


def load(name: str, spec: str, options: LoadOptions) -> Any:
    require_folder(spec, name)  # before the library loads: a path that is not there is told at once
    st = require("sentence_transformers", EXTRA)
    at = Loading(spec, name, options)
    commit = options.revision or main_commit(name, ask=not at.local_only, probes=PROBES)  # one Hub commit
    pin = {"revision": commit} if commit else {}
    with at.errors():
        model = st.SentenceTransformer(name, device=at.device, local_files_only=at.local_only, **pin)
    model.eval()
    # sentence-transformers 5+ names its modalities; before, a CLIP model is its CLIPModel module
    modalities = [str(m) for m in getattr(model, "modalities", ["text"])]
    if type(model[0]).__name__ == "CLIPModel":
        modalities.append("image")

    def encode(items: list, batch_size: int) -> Any:
        with at.autocast():
            return model.encode(list(items), batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True)

    return at.encoder(
        model,
        f"sentence-transformers {st.__version__}",
        json.loads(json.dumps(preprocessing(model), default=str, sort_keys=True)),
        texts=lambda texts: encode(texts, at.text_batch_size),
        images=(lambda images: encode(images, at.batch_size)) if "image" in modalities else None,
        image_preprocessing={"images": "PIL RGB, prepared by the model"} if "image" in modalities else None,
        similarity=str(getattr(model, "similarity_fn_name", None) or "cosine"),
        batches_itself=True,
        sort_texts=True,  # it pads each batch to its longest text
        class_name=type(model[0]).__name__,
        revision=commit,
        weights_folder=hub_folder(name, commit, PROBES),
    )


def folder(name: str, commit: str | None = None) -> tuple[Path, str | None] | None:
    """The folder :func:`load` reads and its commit (:func:`~eccv_metric.models.families.torchutil.snapshot`; its
    modules' subfolders are in the recall key by their stamps)."""
    return snapshot(name, commit, PROBES)


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


FAMILY = register(
    Family(
        "st",
        (("st:<name or folder>", "sentence-transformers; images for its CLIP models"),),
        load,
        EXTRA,
        similarity="declared (similarity_fn_name)",
        folder=folder,
    )
)
