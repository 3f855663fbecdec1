"""Models as data: a spec string (or any object with two methods) -> an :class:`Encoder`.

Specs::

    open_clip:<arch>/<pretrained>      open_clip.create_model_and_transforms(arch, pretrained=...)
    open_clip:hf-hub:<org>/<repo>      open_clip's Hub names
    hf:<repo id or local folder>       transformers AutoModel + AutoProcessor (CLIPModel, SiglipModel, any
                                       model with get_image_features / get_text_features)
    st:<name or local folder>          sentence-transformers (text-only models, or its CLIP models)

A Python object with ``encode_images(list of PIL images) -> array`` and / or ``encode_texts(list of str)
-> array`` is used as it is (:class:`ObjectEncoder`). Each adapter lives in its own module and imports
its library inside functions, so this module imports no torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError

EXTRA = 'pip install "eccv-caption-hf[models]"'
PREFIXES = {"open_clip": "eccv_metric.models.openclip", "hf": "eccv_metric.models.hf", "st": "eccv_metric.models.st"}
KIND_METHODS = {"image": "encode_images", "caption": "encode_texts"}


@dataclass
class Encoder:
    """A loaded model: what it encodes and how, plus what identifies it (for the cache and the provenance).

    ``prepare_image`` runs in the DataLoader's worker processes (PIL image -> the model's input, e.g. its
    processor's pixel tensor); ``encode_prepared`` runs in the main process on a batch of prepared images
    (a stacked tensor when ``prepare_image`` gives tensors, else the list). ``encode_texts`` takes a list of
    str. Both return one row per item (numpy or torch). ``identity``: spec, library and version, weights
    digest and preprocessing (None: nothing identifies the weights, so nothing is cached).
    """

    spec: str
    kinds: tuple[str, ...]
    encode_texts: Any = None
    encode_prepared: Any = None
    prepare_image: Any = None
    identity: dict | None = None
    device: str = "cpu"
    precision: str = "fp32"
    info: dict = field(default_factory=dict)


class ObjectEncoder:
    """Wraps a user's object with ``encode_images`` and / or ``encode_texts`` (see the module docstring)."""

    @staticmethod
    def wrap(model: object, identity: dict | None = None) -> Encoder:
        kinds = tuple(k for k, method in KIND_METHODS.items() if callable(getattr(model, method, None)))
        if not kinds:
            raise EvaluationError(
                f"model: a {type(model).__name__} has neither encode_images nor encode_texts; give a spec "
                "(open_clip:, hf:, st:) or an object with encode_images(list of PIL images) / encode_texts(list of str)"
            )
        return Encoder(
            spec=f"python:{type(model).__module__}.{type(model).__qualname__}",
            kinds=kinds,
            encode_texts=getattr(model, "encode_texts", None),
            encode_prepared=getattr(model, "encode_images", None),
            prepare_image=None,
            identity=identity,
        )


def parse_spec(spec: str) -> tuple[str, str]:
    """``prefix:rest`` with a known prefix, else one error naming the forms."""
    prefix, sep, rest = str(spec).partition(":")
    if not sep or prefix not in PREFIXES or not rest.strip():
        raise EvaluationError(
            f"unknown model spec {str(spec)!r:.80}: use open_clip:<arch>/<pretrained>, open_clip:hf-hub:<repo>, "
            "hf:<repo or folder> or st:<name or folder>"
        )
    return prefix, rest.strip()


def load_model(model: object, device: str | None = None, precision: str = "fp32") -> Encoder:
    """An :class:`Encoder` from a spec string or an object (see the module docstring)."""
    if isinstance(model, Encoder):
        return model
    if not isinstance(model, str):
        return ObjectEncoder.wrap(model)
    prefix, rest = parse_spec(model)
    adapter = importlib.import_module(PREFIXES[prefix])
    return adapter.load(rest, model, device, precision)


def require(module: str) -> Any:
    """Import a model library, or one error line naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise EvaluationError(
            f"the model path needs {module.split('.')[0]} ({type(exc).__name__}: {str(exc)[:120]}): {EXTRA}"
        ) from None


def as_rows(values: object, n: int, what: str) -> np.ndarray:
    """A model's output as a float32 (n, d) array of its own (copied: an encoder may reuse one output buffer for
    every batch), or one error naming ``what`` (the encoder and the batch) and what is wrong."""
    if hasattr(values, "detach"):
        try:
            values = values.detach().float().cpu().numpy()  # type: ignore[attr-defined]
        except (NotImplementedError, RuntimeError, TypeError) as exc:  # a meta-device tensor, a sparse one...
            first = str(exc).splitlines()[0][:100] if str(exc) else ""
            raise EvaluationError(
                f"{what}: cannot copy the model's output to the CPU ({type(exc).__name__}: {first}); check "
                "that the model's weights are loaded and on a real device"
            ) from None
    try:
        given = np.asarray(values)
        with np.errstate(over="ignore", under="ignore"):
            arr = np.array(given, dtype=np.float32, copy=True)
    except (TypeError, ValueError):
        raise EvaluationError(f"{what}: the model returned {type(values).__name__}, not an array of numbers") from None
    if arr.ndim != 2 or len(arr) != n:
        raise EvaluationError(f"{what}: the model returned shape {arr.shape} for {n} items, not ({n}, dimensions)")
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        finite = np.isfinite(given.astype(np.float64, copy=False)) if given.dtype.kind in "fiu" else None
        if finite is not None and finite[bad].all():
            raise EvaluationError(
                f"{what}: the model's values overflow float32 (|x| > {np.finfo(np.float32).max:.3g}) for "
                f"{int(bad.sum())} of {n} items of a batch; scale its outputs"
            )
        raise EvaluationError(f"{what}: the model returned NaN or inf for {int(bad.sum())} of {n} items of a batch")
    if given.dtype.kind == "f" and given.dtype.itemsize > 4:
        lost = ~arr.any(axis=1) & np.asarray(given != 0).any(axis=1)
        lost |= (np.abs(arr).max(axis=1, initial=0) < np.finfo(np.float32).tiny) & ~lost & arr.any(axis=1)
        if lost.any():
            raise EvaluationError(
                f"{what}: the model's values underflow float32 (|x| < {np.finfo(np.float32).tiny:.3g}) for "
                f"{int(lost.sum())} of {n} items of a batch; scale its outputs"
            )
    return arr
