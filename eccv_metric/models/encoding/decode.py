"""Image decoders: ``pil`` (the default: PIL in the DataLoader workers, then the model's own PIL
preprocessing) and ``gpu`` (opt-in: nvJPEG through ``torchvision.io.decode_jpeg(device="cuda")``, then the
model's preprocessing on the GPU, where it has a torch form).

With ``decode="gpu"`` the workers only read bytes (:class:`RawImages`); the main process decodes each batch's
JPEGs on the GPU in one call and hands the decoded ``uint8`` CHW tensors to the encoder's tensor
preprocessing (``Encoder.tensor_preprocessing``): for ``hf:`` models, their image processor's torchvision
backend (transformers' fast image processors: ``backend="torchvision"``, ``use_fast=True`` before
transformers 5); for ``open_clip:``, its transform's steps applied to tensors. Decoding and preprocessing
run in a thread one batch ahead of the model. Files that are not JPEGs (PNG, ...) and JPEGs nvJPEG refuses
(CMYK, ...) are decoded by PIL exactly as the ``pil`` decoder does, then moved to the GPU.

The pixels differ from PIL's by rounding (JPEG IDCT, resampling on tensors), so the embeddings differ
slightly: the cache key and the provenance record the decoder and its preprocessing. The default ``pil``
path uses the PIL backend of the model's image processor even where torchvision is installed (transformers
5 picks the torchvision backend by default when it can): the numbers do not depend on what else is installed.

torchvision is imported only here, on ``decode="gpu"``; without it that choice is one error naming the fix.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.data.items import Items
from eccv_metric.models.encoding.background import ahead
from eccv_metric.models.encoding.encode import ImageItems
from eccv_metric.models.encoding.workers import image_batches
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.identity import without_addresses

DECODERS = ("pil", "gpu")
JPEG_MAGIC = b"\xff\xd8"


class RawImages(ImageItems):
    """``dataset[i]`` -> (i, the file's bytes as a uint8 array, or None with an error message): no decoding."""

    def __getitem__(self, i: int) -> tuple[int, object, str | None]:
        where = self.describe(i)
        try:
            data = self.read_bytes(self.locations[i])
        except Exception as exc:  # an unreadable file or zip member, reported once as one line
            return i, None, f"{where}: cannot read ({type(exc).__name__}: {str(exc)[:80]})"
        if not data:
            return i, None, f"{where}: empty image"
        return i, np.frombuffer(data, dtype=np.uint8).copy(), None


@dataclass
class Decoder:
    """How a ``decode="gpu"`` batch becomes the model's input: JPEG decoding on the device, a decoder for the
    rest, the model's tensor preprocessing, and what describes them (for the cache key and the provenance)."""

    device: str
    decode_jpegs: Callable[[list], list]  # uint8 byte tensors (host) -> uint8 CHW tensors on the device
    prepare: Callable[[list], Any]  # uint8 CHW tensors on the device -> the model's pixel batch
    describe: dict = field(default_factory=dict)

    def decode(self, blobs: list[np.ndarray], names: list[str]) -> list:
        """The batch's images as uint8 RGB CHW tensors on the device, in order; a file that cannot be decoded
        is one error naming it."""
        import torch

        out: list = [None] * len(blobs)
        jpegs = [k for k, b in enumerate(blobs) if bytes(b[:2]) == JPEG_MAGIC]
        if jpegs:
            try:
                for k, image in zip(jpegs, self.decode_jpegs([torch.from_numpy(blobs[k]) for k in jpegs]), strict=True):
                    out[k] = image
            except RuntimeError:  # one bad file fails the batch: decode one by one to find it
                for k in jpegs:
                    try:
                        out[k] = self.decode_jpegs([torch.from_numpy(blobs[k])])[0]
                    except RuntimeError:
                        out[k] = None  # CMYK and the like: PIL below, as the pil decoder would
        for k, image in enumerate(out):
            if image is None:
                out[k] = pil_tensor(blobs[k], names[k]).to(self.device)
        return out


def pil_tensor(blob: np.ndarray, name: str) -> Any:
    """One image decoded by PIL as the ``pil`` decoder does (``convert("RGB")``), as a uint8 CHW tensor."""
    import torch
    from PIL import Image

    try:
        with Image.open(io.BytesIO(blob.tobytes())) as im:
            pixels = np.asarray(im.convert("RGB"))
    except Exception as exc:  # PIL's many error types: one line naming the image
        raise EvaluationError(f"{name}: cannot decode ({type(exc).__name__}: {str(exc)[:80]})") from None
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1).contiguous()


def check_decode(decode: str, encoder: Encoder) -> None:
    """``decode=`` is a known decoder this encoder and device can use, else one error naming the way out."""
    if decode not in DECODERS:
        raise EvaluationError(f"decode= must be one of {', '.join(DECODERS)}, not {decode!r:.20}")
    if decode == "pil" or "image" not in encoder.kinds:
        return
    if not encoder.device.startswith("cuda"):
        raise EvaluationError(f"decode= gpu decodes with nvJPEG on a CUDA device, and the model is on {encoder.device}")
    if getattr(encoder, "tensor_preprocessing", None) is None:
        raise EvaluationError(
            f"decode= gpu: {encoder.spec} has no image preprocessing on tensors (hf: and open_clip: models do); "
            "use decode= pil"
        )
    torchvision_io()


def torchvision_io() -> Any:
    try:
        import torchvision.io  # noqa: PLC0415
    except ImportError as exc:
        raise EvaluationError(
            f"decode= gpu needs torchvision, built for your torch (nvJPEG through torchvision.io.decode_jpeg): "
            f"{type(exc).__name__}: {str(exc)[:100]}; install it or use decode= pil"
        ) from None
    return torchvision.io


def gpu_decoder(encoder: Encoder) -> Decoder:
    """nvJPEG on the encoder's device plus the encoder's tensor preprocessing (after :func:`check_decode`)."""
    tvio = torchvision_io()
    prepare, describe = encoder.tensor_preprocessing()
    device = encoder.device

    def decode_jpegs(data: list) -> list:
        return tvio.decode_jpeg(data, mode=tvio.ImageReadMode.RGB, device=device)

    return Decoder(device, decode_jpegs, prepare, {"decoder": "nvjpeg (torchvision.io.decode_jpeg)", **describe})


def decoded_batches(
    encoder: Encoder,
    items: Items,
    todo: list[tuple[int, int]],
    workers: int,
    decoder: Decoder,
    feed: Callable[[tuple[int, int], Any], None] | None = None,
) -> Iterator[tuple[tuple[int, int], Any]]:
    """``((start, stop), the model's output)`` for each range of ``todo``: bytes read by the workers, decoded
    and preprocessed on the device in a thread one batch ahead, encoded here (``feed``: then by the models
    sharing the decode, :mod:`eccv_metric.models.encoding.shared`)."""
    dataset = RawImages(items.locations or [], items.ids, None, items.item_set.source.pixel_column)

    def prepared() -> Iterator[tuple[tuple[int, int], Any]]:
        for (start, stop), (index, blobs, errors) in image_batches(dataset, todo, workers, encoder.device):
            if errors:
                more = f" (and {len(errors) - 1} more in this batch)" if len(errors) > 1 else ""
                raise EvaluationError(errors[0] + more)
            images = decoder.decode(blobs, [dataset.describe(i) for i in index])
            yield (start, stop), decoder.prepare(images)

    for bounds, pixels in ahead(prepared(), depth=2):
        made = encoder.encode_prepared(pixels)
        if feed is not None:
            feed(bounds, pixels)
        yield bounds, made


def pil_image_processor(name: str, loaded: Any, local_only: bool = False, revision: str | None = None) -> Any:
    """The model's image processor with its PIL backend: ``loaded`` when it is one, else loaded again (at
    ``revision``, a Hub commit) with ``backend="pil"`` (transformers 5) or ``use_fast=False`` (4.x); ``loaded``
    where that fails."""
    if loaded is None or not is_torch_backend(loaded):
        return loaded
    try:
        return load_image_processor(name, "pil", local_only, revision)
    except (OSError, ValueError, ImportError):
        return loaded


def is_torch_backend(image_processor: Any) -> bool:
    """Whether a transformers image processor works on torch tensors (a "fast" / torchvision-backend one)."""
    try:
        from transformers.image_processing_utils_fast import BaseImageProcessorFast
    except ImportError:
        return False
    return isinstance(image_processor, BaseImageProcessorFast)


def load_image_processor(name: str, backend: str, local_only: bool = False, revision: str | None = None) -> Any:
    """``AutoImageProcessor`` with the given backend (``pil`` or ``torchvision``) in transformers 5 and 4.x
    (``revision``: a Hub commit; None: its main ref)."""
    import transformers

    auto = transformers.AutoImageProcessor
    pin = {"revision": revision} if revision else {}
    if int(transformers.__version__.split(".")[0]) >= 5:
        return auto.from_pretrained(name, backend=backend, local_files_only=local_only, **pin)
    return auto.from_pretrained(name, use_fast=backend == "torchvision", local_files_only=local_only, **pin)


def hf_tensor_preprocessing(
    name: str, device: str, local_only: bool = False, revision: str | None = None
) -> tuple[Callable[[list], Any], dict]:
    """An ``hf:`` model's image processor on tensors (its torchvision backend, at ``revision``), run on ``device``."""
    torchvision_io()
    image_processor = load_image_processor(name, "torchvision", local_only, revision)
    if not is_torch_backend(image_processor):
        raise EvaluationError(
            f"decode= gpu: hf:{name} has no torchvision image processor ({type(image_processor).__name__}); "
            "use decode= pil"
        )

    def prepare(images: list) -> Any:
        return image_processor(images=images, return_tensors="pt", device=device)["pixel_values"]

    return prepare, {"image_processor": _plain(image_processor.to_dict())}


def open_clip_tensor_preprocessing(transform: Any) -> tuple[Callable[[list], Any], dict]:
    """open_clip's transform (``Resize``, ``CenterCrop``, RGB conversion, ``ToTensor``, ``Normalize``) on
    uint8 CHW tensors: the same steps, ``ToTensor`` as ``/ 255``; any other step is one error."""
    steps: list[Callable] = []
    for step in getattr(transform, "transforms", [transform]):
        kind = type(step).__name__
        if kind in ("Resize", "CenterCrop", "Normalize"):
            steps.append(step)
        elif kind == "ToTensor":
            steps.append(_to_float)
        elif getattr(step, "__name__", "") == "_convert_to_rgb":
            continue  # decoded as RGB already
        else:
            raise EvaluationError(f"decode= gpu: open_clip's transform step {kind} has no tensor form; use decode= pil")

    def prepare(images: list) -> Any:
        import torch

        out = []
        for image in images:
            for step in steps:
                image = step(image)
            out.append(image)
        return torch.stack(out)

    return prepare, {"transform": without_addresses(repr(transform)), "on": "tensors"}


def _to_float(image: Any) -> Any:
    return image.float() / 255


def _plain(value: object) -> object:
    import json

    return json.loads(json.dumps(value, default=str, sort_keys=True))
