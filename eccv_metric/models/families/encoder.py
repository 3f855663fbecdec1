"""What the model path needs of a model: the :class:`Encoder` protocol, and the encoders built from functions
(every family's adapter) or from a user's Python object with ``encode_images`` / ``encode_texts``.

An encoder says what it is before anything is encoded: the item kinds it encodes (``image``, ``caption``),
the similarity its embeddings are compared with (``cosine``: L2-normalised, as CLIP and SigLIP are; ``dot``:
raw dot products, as a sentence-transformers model declaring ``similarity_fn_name = "dot"`` is), what
identifies it (for the cache and the provenance; None: nothing identifies the weights, nothing is cached),
its device and precision. Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import Protocol
from typing import runtime_checkable

from eccv_metric.core.errors import EvaluationError

KIND_METHODS = {"image": "encode_images", "caption": "encode_texts"}
SIMILARITIES = ("cosine", "dot")  # what the scoring (Embeddings) ranks by: normalised or raw dot products


@runtime_checkable
class Encoder(Protocol):
    """A loaded model (see the module docstring).

    ``prepare_image`` runs in the DataLoader's worker processes (PIL RGB image -> the model's input, e.g. its
    processor's pixel tensor; None: the PIL image itself); ``encode_prepared`` runs in the main process on a
    batch of prepared images (a stacked tensor when ``prepare_image`` gives tensors, else the list);
    ``encode_texts`` on a list of str. Both return one row per item (numpy or torch). ``batches_itself``:
    the model batches (and length-sorts) what it is given, so it gets several batches at a time.

    Optional, read with ``getattr`` (:mod:`eccv_metric.models.encoding.text_batches`): ``tokenize`` (list of str -> the
    model's text inputs, on the host; run ahead of the model) with ``encode_tokens`` (those inputs -> rows);
    ``sort_texts``: the model pads a caption batch to its longest caption, so captions are batched in length
    order. ``tensor_preprocessing`` (no arguments -> (decoded uint8 CHW tensors on the device -> the model's
    pixel batch there, a description of it)): what ``decode="gpu"`` needs (:mod:`eccv_metric.models.encoding.decode`).
    ``image_preprocessing`` (a JSON-able description of what ``prepare_image`` does: encoders with equal ones
    prepare equal images): models of one run that agree share one decode (:mod:`eccv_metric.models.encoding.shared`).
    """

    spec: str
    kinds: tuple[str, ...]
    similarity: str
    identity: dict | None
    device: str
    precision: str
    prepare_image: Callable[[Any], Any] | None
    batches_itself: bool

    def encode_texts(self, texts: list[str]) -> Any: ...

    def encode_prepared(self, batch: Any) -> Any: ...


@dataclass
class FunctionEncoder:
    """An :class:`Encoder` made of functions: ``texts`` (list of str -> rows), ``images`` (prepared batch ->
    rows); a kind without its function is not encoded."""

    spec: str
    kinds: tuple[str, ...]
    texts: Callable[[list[str]], Any] | None = None
    images: Callable[[Any], Any] | None = None
    prepare_image: Callable[[Any], Any] | None = None
    identity: dict | None = None
    similarity: str = "cosine"
    device: str = "cpu"
    precision: str = "fp32"
    batches_itself: bool = False
    sort_texts: bool = False
    tokenize: Callable[[list[str]], Any] | None = None
    encode_tokens: Callable[[Any], Any] | None = None
    tensor_preprocessing: Callable[[], Any] | None = None
    image_preprocessing: dict | None = None

    def __post_init__(self) -> None:
        if self.similarity not in SIMILARITIES:
            raise EvaluationError(
                f"{self.spec}: its similarity is {self.similarity!r}; the model path ranks by "
                f"{' or '.join(SIMILARITIES)} (Embeddings)"
            )

    def encode_texts(self, texts: list[str]) -> Any:
        if self.texts is None:
            raise EvaluationError(f"{self.spec} encodes no texts")
        return self.texts(texts)

    def encode_prepared(self, batch: Any) -> Any:
        if self.images is None:
            raise EvaluationError(f"{self.spec} encodes no images")
        return self.images(batch)


def wrap_object(model: object, identity: dict | None = None) -> Encoder:
    """A user's object with ``encode_images(list of PIL images)`` and / or ``encode_texts(list of str)`` (cosine
    similarity, nothing cached unless ``identity`` is given), or one error naming what it lacks."""
    kinds = tuple(k for k, method in KIND_METHODS.items() if callable(getattr(model, method, None)))
    if not kinds:
        raise EvaluationError(
            f"model: a {type(model).__name__} has neither encode_images nor encode_texts; give a spec "
            "or an object with encode_images(list of PIL images) / encode_texts(list of str)"
        )
    return FunctionEncoder(
        spec=f"python:{type(model).__module__}.{type(model).__qualname__}",
        kinds=kinds,
        texts=getattr(model, "encode_texts", None),
        images=getattr(model, "encode_images", None),
        identity=identity,
    )
