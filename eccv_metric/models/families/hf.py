"""``hf:<repo or folder>``: a transformers model with ``get_image_features`` / ``get_text_features`` and its own
``AutoProcessor`` (the model's preprocessing, never ours): CLIPModel, SiglipModel and the like. A model whose
config names a registered pair head (``BlipForImageTextRetrieval``, ...: the registry's ``PAIR_HEADS``, filled by
:mod:`eccv_metric.models.families.heads.registry`) loads as that pair scorer instead.

Text: the processor's tokenizer, cut to the smaller of its ``model_max_length`` and the text model's
``max_position_embeddings``; SigLIP-family models pad to ``max_length`` as they were trained (their model
card's usage), others pad to the longest in the batch. Similarity: cosine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.encoding.decode import hf_tensor_preprocessing
from eccv_metric.models.encoding.decode import load_image_processor
from eccv_metric.models.encoding.decode import pil_image_processor
from eccv_metric.models.families.identity import saved_digest
from eccv_metric.models.families.registry import PAIR_HEADS
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import register
from eccv_metric.models.families.registry import require
from eccv_metric.models.families.torchutil import EXTRA
from eccv_metric.models.families.torchutil import Loading
from eccv_metric.models.families.torchutil import hub_unreachable
from eccv_metric.models.families.torchutil import main_commit
from eccv_metric.models.families.torchutil import pinned
from eccv_metric.models.families.torchutil import require_folder
from eccv_metric.models.families.torchutil import snapshot
from eccv_metric.models.families.torchutil import to_device
from eccv_metric.models.families.weights import hub_folder

WORKER_MODULES = ("transformers.image_processing_utils",)  # what unpickling a Prepare imports in a worker
# weights no embedding reads (the contrastive loss's temperature and bias): absent, they are initialised from the
# config and the model still loads; any other absent or mismatched weight is refused
NOT_ENCODING = ("logit_scale", "logit_bias")


def load(name: str, spec: str, options: LoadOptions) -> Any:
    require_folder(spec, name)  # before the library loads: a path that is not there is told at once
    transformers = require("transformers", EXTRA)
    at = Loading(spec, name, options, worker_modules=WORKER_MODULES)
    commit = options.revision or main_commit(name, ask=not at.local_only)  # every file from one Hub commit
    pin = {"revision": commit} if commit else {}
    with at.errors():
        config = transformers.AutoConfig.from_pretrained(name, local_files_only=at.local_only, **pin)
    named = getattr(config, "architectures", None) or []
    head = next((PAIR_HEADS[a] for a in named if a in PAIR_HEADS), None)
    if head is not None:  # a pair head (an ITM model): scored pair by pair
        return head.load(name, spec, options, at, commit, False)
    with at.errors():
        model, loading = transformers.AutoModel.from_pretrained(
            name, local_files_only=at.local_only, output_loading_info=True, **pin
        )
        processor = transformers.AutoProcessor.from_pretrained(name, local_files_only=at.local_only, **pin)
    absent = sorted(
        str(k[0] if isinstance(k, tuple) else k)
        for k in [*loading.get("missing_keys", []), *loading.get("mismatched_keys", [])]
    )
    used = [k for k in absent if k.rsplit(".", 1)[-1] not in NOT_ENCODING]
    if used:  # get_image_features / get_text_features would read random values: numbers of no model
        raise EvaluationError(
            f"{spec}: {len(used)} weights of {type(model).__name__} are not in the checkpoint or do not fit it "
            f"({', '.join(used[:3])}{', ...' if len(used) > 3 else ''}): they would be random; check that the "
            "folder holds the whole model (save it with save_pretrained)"
        )
    model = model.to(at.device).eval()
    initialised = bool(absent)
    revision = commit or getattr(model.config, "_commit_hash", None)
    # the PIL backend even where transformers would pick torchvision: the numbers do not depend on what is installed
    image_processor = pil_image_processor(name, getattr(processor, "image_processor", None), at.local_only, commit)
    tokenizer = getattr(processor, "tokenizer", None)
    has_images = callable(getattr(model, "get_image_features", None)) and image_processor is not None
    has_texts = callable(getattr(model, "get_text_features", None)) and tokenizer is not None
    if not (has_images or has_texts):
        model_type = str(getattr(config, "model_type", ""))
        pairs = any(h.model_type == model_type for h in PAIR_HEADS.values())
        hint = f"; to score pairs with its ITM head: hf-itm:{name}" if pairs else ""
        raise EvaluationError(
            f"{spec}: {type(model).__name__} has neither get_image_features nor get_text_features{hint}"
        )
    padding: Any = "max_length" if "siglip" in str(getattr(model.config, "model_type", "")) else True
    max_length = text_length(model, tokenizer)

    def images(pixels: Any) -> Any:
        with at.autocast():
            return features(model.get_image_features(pixel_values=to_device(pixels, at.device)))

    def tokenize(batch: list[str]) -> dict:
        # numpy arrays, then torch without a copy: the same ids as return_tensors="pt", made 1.3-1.5x faster
        tokens = tokenizer(list(batch), padding=padding, truncation=True, max_length=max_length, return_tensors="np")
        return {k: pinned(as_tensor(v), at.device) for k, v in tokens.items()}

    def encode_tokens(tokens: dict) -> Any:
        with at.autocast():
            return features(model.get_text_features(**{k: to_device(v, at.device) for k, v in tokens.items()}))

    def texts(batch: list[str]) -> Any:
        return encode_tokens(tokenize(batch))

    def tensor_preprocessing() -> Any:  # decode="gpu": the image processor's torchvision backend on the device
        return hf_tensor_preprocessing(name, at.device, at.local_only, commit)

    described = image_description(image_processor)
    preprocessing = {
        **described,
        "tokenizer": type(tokenizer).__name__ if tokenizer is not None else None,
        "processor": saved_digest(processor),  # every file of the tokenizer and the image processor
        "padding": padding,
        "max_length": max_length,
    }
    return at.encoder(
        model,
        f"transformers {transformers.__version__}",
        json.loads(json.dumps(preprocessing, default=str, sort_keys=True)),
        texts=texts if has_texts else None,
        images=images if has_images else None,
        prepare_image=Prepare(image_processor) if has_images else None,
        revision=revision,
        weights_folder=weights_folder(name, revision, initialised),
        weights_recursive=False,
        tokenize=tokenize if has_texts else None,
        encode_tokens=encode_tokens if has_texts else None,
        sort_texts=padding is True,  # padded to the longest caption of a batch: batches in length order
        tensor_preprocessing=tensor_preprocessing if has_images else None,
        image_preprocessing=described if has_images else None,
    )


def weights_folder(name: str, revision: str | None, initialised: bool) -> Path | None:
    """The folder whose weight files identify the loaded weights; None (their tensors are hashed) when some were
    initialised at load (missing / mismatched keys) or the folder holds a PEFT adapter (``adapter_config.json``:
    with peft installed, transformers loads the base model named there, whose weights are not in this folder)."""
    folder = None if initialised else hub_folder(name, revision)
    return None if folder is None or (folder / "adapter_config.json").is_file() else folder


def image_description(image_processor: Any) -> dict:
    """What the PIL image processor does, as data (the Encoder's ``image_preprocessing``, part of its identity)."""
    described = {
        "image_processor": image_processor.to_dict() if image_processor is not None else None,
        "image_processor_class": type(image_processor).__name__ if image_processor is not None else None,
    }
    return json.loads(json.dumps(described, default=str, sort_keys=True))


def image_key(name: str, options: LoadOptions) -> dict | None:
    """The model's image preprocessing before its weights load: its image processor with the PIL backend, as
    :func:`load` describes it; None when it cannot be read (the load then says why, or the model has none)."""
    try:
        local_only = not Path(name).exists() and hub_unreachable(name) is not None
        return image_description(load_image_processor(name, "pil", local_only))
    except Exception:  # noqa: BLE001 - not known before loading: the model is loaded alone
        return None


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


def as_tensor(values: Any) -> Any:
    """A tokenizer's numpy array as a torch tensor sharing its memory: int64 ids and masks, as ``"pt"`` gives
    (numpy 1.x on Windows makes int32 arrays of Python ints; those are widened, a copy)."""
    import torch

    if values.dtype.kind in "iu" and values.dtype != "int64":
        values = values.astype("int64")
    return torch.from_numpy(values)


def features(output: Any) -> Any:
    """transformers 5 returns a model output whose ``pooler_output`` is the projected feature; 4.x a tensor."""
    return getattr(output, "pooler_output", output) if not hasattr(output, "detach") else output


FAMILY = register(
    Family(
        "hf",
        (("hf:<repo or folder>", "transformers AutoModel + AutoProcessor: CLIPModel, SiglipModel, ...; a pair "
          "head its config names"),),
        load,
        EXTRA,
        kinds=("encoder", "pair scorer"),
        image_key=image_key,
        folder=snapshot,  # the folder load reads and its commit
        worker_modules=WORKER_MODULES,
    )
)  # fmt: skip
