"""``open_clip:<arch>/<pretrained>`` or ``open_clip:hf-hub:<org>/<repo>``: an open_clip model, its own transform
and tokenizer (``create_model_and_transforms``, ``get_tokenizer``).

open_clip needs torchvision (its transforms); PyPI's torchvision wheels link against the CUDA torch, so
beside the CPU-only torch ``import open_clip`` fails: the error names the fix. The encoding path is the
one every adapter shares (:mod:`eccv_metric.models.encode`); only this loader is open_clip's own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.spec import Encoder
from eccv_metric.models.spec import require
from eccv_metric.models.torchutil import autocast
from eccv_metric.models.torchutil import check_precision
from eccv_metric.models.torchutil import hub_unreachable
from eccv_metric.models.torchutil import load_error
from eccv_metric.models.torchutil import pick_device
from eccv_metric.models.torchutil import state_digest
from eccv_metric.models.torchutil import weights_digest


def split_name(name: str) -> tuple[str, str | None]:
    """``arch/pretrained`` -> (arch, pretrained); ``hf-hub:org/repo`` -> (the whole name, None)."""
    if name.startswith("hf-hub:"):
        return name, None
    arch, _, pretrained = name.partition("/")
    return arch, pretrained or None


def load(name: str, spec: str, device: str | None, precision: str) -> Encoder:
    try:
        import open_clip  # noqa: PLC0415
    except ImportError as exc:
        raise EvaluationError(
            f"{spec}: open_clip cannot be imported ({str(exc)[:100]}): pip install open_clip_torch with the "
            "torchvision built for your torch"
        ) from None
    require("torch")
    device = pick_device(device)
    precision = check_precision(precision, device)
    arch, pretrained = split_name(name)
    downloads = name.startswith("hf-hub:") or (pretrained is not None and not Path(pretrained).exists())
    unreachable = hub_unreachable(name.removeprefix("hf-hub:")) if downloads else None
    if unreachable is not None:  # open_clip has no local-only switch: its download would retry
        raise load_error(spec, OSError(), unreachable, cache_read=False)
    try:
        model, _, transform = open_clip.create_model_and_transforms(arch, pretrained=pretrained, device=device)
        tokenizer = open_clip.get_tokenizer(arch)
    except (RuntimeError, ValueError, OSError) as exc:
        raise load_error(spec, exc, None) from None
    model.eval()

    def encode_prepared(pixels: Any) -> Any:
        with autocast(device, precision):
            return model.encode_image(pixels.to(device))

    def encode_texts(texts: list[str]) -> Any:
        with autocast(device, precision):
            return model.encode_text(tokenizer(list(texts)).to(device))

    return Encoder(
        spec=spec,
        kinds=("image", "caption"),
        encode_texts=encode_texts,
        encode_prepared=encode_prepared,
        prepare_image=transform,
        identity={
            "spec": spec,
            "library": f"open_clip {open_clip.__version__}",
            "class": type(model).__name__,
            "weights": weights_digest(model),
            "preprocessing": {
                "transform": re.sub(r" at 0x[0-9a-fA-F]+", "", repr(transform)),
                "transform_state": state_digest(transform),
                "tokenizer": state_digest(tokenizer),  # vocabulary, merges, context length
            },
        },
        device=device,
        precision=precision,
    )
