"""Encoding batches, fast and bounded: a torch DataLoader decodes and preprocesses images in worker processes
(:class:`ImageItems`: a map-style dataset, torch-free and picklable, keeping the row group it last read; each
image becomes the 8-bit RGB picture :data:`~eccv_metric.models.data.items.DECODER` says, :func:`to_rgb`), the
model sees batches (under ``torch.inference_mode``, fp16 / bf16 autocast on a GPU when asked: its family's
doing), and each batch's output comes back as float32 rows of its own (:func:`as_rows`).

Which batches to encode, and what becomes of them (the cache, resuming), is the store's
(:mod:`eccv_metric.models.cache.store`); this module only encodes the ranges it is given. Memory: the model, a few
batches in flight (``workers * prefetch``); never the images. Captions come in the store's order (length
order for encoders that pad to the longest: :mod:`eccv_metric.models.encoding.text_batches`), tokenised ahead.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.data.items import Items
from eccv_metric.models.data.items import Location
from eccv_metric.models.encoding.background import lagged
from eccv_metric.models.encoding.text_batches import encode_text_batches
from eccv_metric.models.encoding.workers import image_batches
from eccv_metric.models.families.encoder import Encoder

Bounds = tuple[int, int]


def encode_batches(
    encoder: Encoder,
    items: Items,
    todo: list[Bounds],
    workers: int,
    order: np.ndarray | None = None,
    raw: Iterator[tuple[Bounds, object]] | None = None,
    feed: Callable[[Bounds, object], None] | None = None,
) -> Iterator[tuple[Bounds, np.ndarray]]:
    """``(bounds, rows)`` of each range of ``todo`` in turn, rows as :func:`as_rows` gives them; captions: the
    ranges are of ``order`` (their encoding order, :func:`~eccv_metric.models.encoding.text_batches.text_order`). On a
    GPU each batch comes back to the host without blocking while the next one runs
    (:func:`~eccv_metric.models.encoding.background.lagged`). ``raw``: the model's outputs made elsewhere (images
    decoded on the GPU: :func:`~eccv_metric.models.encoding.decode.decoded_batches`) instead of :func:`outputs`.
    ``feed``: called with each prepared image batch (other models encode it:
    :mod:`eccv_metric.models.encoding.shared`)."""
    what = f"{items.item_set.collection} {items.item_set.kind}s ({items.item_set.label})"
    made = raw if raw is not None else outputs(encoder, items, todo, workers, order, feed)
    for (start, stop), values in lagged(made):
        yield (start, stop), as_rows(values, stop - start, f"{encoder.spec} on {what} {start}..{stop - 1}")


def outputs(
    encoder: Encoder,
    items: Items,
    todo: list[Bounds],
    workers: int,
    order: np.ndarray | None = None,
    feed: Callable[[Bounds, object], None] | None = None,
) -> Iterator[tuple[Bounds, object]]:
    """The encoder's raw output for each range: texts in ``order`` (tokenised ahead:
    :mod:`eccv_metric.models.encoding.text_batches`), images decoded and prepared by a DataLoader
    (:mod:`eccv_metric.models.encoding.workers`)."""
    if items.texts is not None:
        order = np.arange(len(items.texts), dtype=np.int64) if order is None else order
        yield from encode_text_batches(encoder, items.texts, order, todo)
        return
    if not todo:
        return
    dataset = ImageItems(items.locations or [], items.ids, encoder.prepare_image, items.item_set.source.pixel_column)
    for (start, stop), (_, values, errors) in image_batches(dataset, todo, workers, encoder.device):
        if errors:
            more = f" (and {len(errors) - 1} more in this batch)" if len(errors) > 1 else ""
            raise EvaluationError(errors[0] + more)
        made = encoder.encode_prepared(values)
        if feed is not None:
            feed((start, stop), values)
        yield (start, stop), made


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
        nonzero = arr.any(axis=1)
        lost = ~nonzero & np.asarray(given != 0).any(axis=1)  # every value underflowed to 0
        lost |= nonzero & (np.abs(arr).max(axis=1, initial=0) < np.finfo(np.float32).tiny)  # subnormal: bits lost
        if lost.any():
            raise EvaluationError(
                f"{what}: the model's values underflow float32 (|x| < {np.finfo(np.float32).tiny:.3g}) for "
                f"{int(lost.sum())} of {n} items of a batch; scale its outputs"
            )
    return arr


class ImageItems:
    """Map-style dataset over image locations: ``dataset[i]`` -> (i, prepared image or None, error or None).

    ``prepare``: the model's preprocessing (PIL RGB image -> its input), run in the worker; None keeps the
    PIL image. Errors (an empty or corrupt image) come back as a message, raised once in the main process.
    """

    def __init__(self, locations: list[Location], ids: np.ndarray, prepare: object = None, pixel_column: str = "image"):
        self.locations = locations
        self.ids = ids
        self.prepare = prepare
        self.pixel_column = pixel_column
        self._group: tuple[str, int] | None = None
        self._rows: list | None = None

    def __len__(self) -> int:
        return len(self.locations)

    def describe(self, i: int) -> str:
        """How errors name item ``i``: its id and where its pixels are."""
        return f"image {int(self.ids[i])} ({self.locations[i][1]})"

    def read_bytes(self, loc: Location) -> bytes | None:
        if loc[0] == "parquet":
            if self._group != (loc[1], loc[2]):
                import pyarrow.parquet as pq

                table = pq.ParquetFile(loc[1]).read_row_group(loc[2], columns=[f"{self.pixel_column}.bytes"])
                self._rows = [v["bytes"] if v else None for v in table.column(self.pixel_column).to_pylist()]
                self._group = (loc[1], loc[2])
            return self._rows[loc[3]]  # type: ignore[index]
        if loc[0] == "file":
            return Path(loc[1]).read_bytes()
        if loc[0] == "zip":
            with zipfile.ZipFile(loc[1]) as zf:
                return zf.read(loc[2])
        return None

    def __getitem__(self, i: int) -> tuple[int, object, str | None]:
        from PIL import Image

        where = self.describe(i)
        try:
            data = self.read_bytes(self.locations[i])
            if not data:
                return i, None, f"{where}: empty image"
            with Image.open(io.BytesIO(data)) as im:
                image = to_rgb(im)
        except EvaluationError as exc:
            return i, None, f"{where}: {exc}"
        except Exception as exc:  # a corrupt file: PIL's many error types, reported once as one line
            return i, None, f"{where}: cannot decode ({type(exc).__name__}: {str(exc)[:80]})"
        try:
            return i, (self.prepare(image) if self.prepare is not None else image), None
        except Exception as exc:  # the model's preprocessing failed on this image
            return i, None, f"{where}: the model's preprocessing failed ({type(exc).__name__}: {str(exc)[:80]})"


def to_rgb(image: object) -> object:
    """A PIL image as 8-bit RGB. 16-bit grayscale (``I;16*``, or ``I`` within 0..65535) is scaled by its type's
    range (value * 255 / 65535, rounded: what an 8-bit display shows), never clipped at 255 as PIL's own
    ``convert`` does (an all-white picture); 32-bit float pixels (``F``) or integers past 16 bits have no
    such range and are refused."""
    from PIL import Image

    mode = image.mode  # type: ignore[attr-defined]
    if mode.startswith("I;16") or mode == "I":
        values = np.asarray(image)
        if values.size and (int(values.min()) < 0 or int(values.max()) > 65535):
            raise EvaluationError(f"{mode} pixels outside 0..65535 have no 8-bit range: convert the image to 8 bit")
        scaled = (values.astype(np.uint32) * 255 + 32767) // 65535
        return Image.fromarray(scaled.astype(np.uint8), "L").convert("RGB")
    if mode == "F":
        raise EvaluationError("32-bit float pixels (mode F) have no 8-bit range: convert the image to 8 bit")
    return image.convert("RGB")  # type: ignore[attr-defined]
