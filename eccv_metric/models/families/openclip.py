"""``open_clip:<arch>/<pretrained>`` or ``open_clip:hf-hub:<org>/<repo>``: an open_clip model, its own transform
and tokenizer (``create_model_and_transforms``, ``get_tokenizer``). Similarity: cosine.

open_clip needs torchvision (its transforms); PyPI's torchvision wheels link against the CUDA torch, so
beside the CPU-only torch ``import open_clip`` fails: the error names the fix. open_clip has no switch to
read only the local cache: with the Hub unreachable the error says at once to set ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eccv_metric.core.about import install_extra
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.encoding.decode import open_clip_tensor_preprocessing
from eccv_metric.models.families.identity import state_digest
from eccv_metric.models.families.identity import without_addresses
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import register
from eccv_metric.models.families.torchutil import Loading
from eccv_metric.models.families.torchutil import load_error
from eccv_metric.models.families.torchutil import pinned
from eccv_metric.models.families.torchutil import to_device

EXTRA = install_extra("open_clip")
WORKER_MODULES = ("open_clip",)  # what unpickling its transform imports in a worker


def split_name(name: str) -> tuple[str, str | None]:
    """``arch/pretrained`` -> (arch, pretrained); ``hf-hub:org/repo`` -> (the whole name, None)."""
    if name.startswith("hf-hub:"):
        return name, None
    arch, _, pretrained = name.partition("/")
    return arch, pretrained or None


def load(name: str, spec: str, options: LoadOptions) -> Any:
    try:
        import open_clip  # noqa: PLC0415
    except ImportError as exc:
        raise EvaluationError(
            f"{spec}: open_clip cannot be imported ({str(exc)[:100]}): {EXTRA} with the torchvision built for "
            "your torch"
        ) from None
    arch, pretrained = split_name(name)
    downloads = name.startswith("hf-hub:") or (pretrained is not None and not Path(pretrained).exists())
    at = Loading(spec, name.removeprefix("hf-hub:"), options, from_hub=downloads, worker_modules=WORKER_MODULES)
    if at.unreachable is not None:  # open_clip's download would retry
        raise load_error(spec, OSError(), at.unreachable, cache_read=False)
    with at.errors(RuntimeError, ValueError, OSError):
        model, _, transform = open_clip.create_model_and_transforms(arch, pretrained=pretrained, device=at.device)
        tokenizer = open_clip.get_tokenizer(arch)
    model.eval()

    def images(pixels: Any) -> Any:
        with at.autocast():
            return model.encode_image(to_device(pixels, at.device))

    def tokenize(batch: list[str]) -> Any:
        return pinned(tokenizer(list(batch)), at.device)

    def encode_tokens(tokens: Any) -> Any:
        with at.autocast():
            return model.encode_text(to_device(tokens, at.device))

    def texts(batch: list[str]) -> Any:
        return encode_tokens(tokenize(batch))

    preprocessing = {
        "transform": without_addresses(repr(transform)),
        "transform_state": state_digest(transform),
        "tokenizer": state_digest(tokenizer),  # vocabulary, merges, context length
    }
    library = f"open_clip {open_clip.__version__}"
    return at.encoder(
        model, library, preprocessing, texts=texts, images=images, prepare_image=transform, tokenize=tokenize,
        encode_tokens=encode_tokens, tensor_preprocessing=lambda: open_clip_tensor_preprocessing(transform),
        image_preprocessing={k: preprocessing[k] for k in ("transform", "transform_state")},
    )  # fmt: skip


FAMILY = register(
    Family(
        "open_clip",
        (
            ("open_clip:<arch>/<pretrained>", "open_clip.create_model_and_transforms(arch, pretrained=...)"),
            ("open_clip:hf-hub:<repo>", "open_clip's Hub names"),
        ),
        load,
        EXTRA,
        worker_modules=WORKER_MODULES,
    )
)
