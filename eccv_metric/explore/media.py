"""What a benchmark's items look like: captions' texts and images' pixels, as thumbnails.

They come from where a model run reads them (:class:`~eccv_metric.models.data.source.DataSource`): a folder built
by ``eccv-caption build`` or its Hub dataset repo (``data``: the ``images`` config's pixels, the ``captions``
config's texts, the FG configs for MSCOCO-FG / Flickr30K-FG), plus image folders or zips (``images``) for the
pixels a build does not embed. With image folders alone, an image is found by its file name (the 5K split's
``COCO_val2014_<12-digit id>.jpg``, FG's gallery file names). An item without pixels or text gets the reason
(:class:`Thumb`), never another item's picture.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.media import PIXEL_ORIGINS
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError

THUMB = 128  # pixels of a thumbnail's longer side
MAX_THUMBS = 4096  # thumbnails kept (about 5 KB each)
NO_DATA = "no dataset with pixels was given (a build with its images config, or an images folder)"
NO_TEXTS = "no dataset with captions was given (a build with its captions config)"


@dataclass(frozen=True)
class Thumb:
    """An image's thumbnail (``jpeg``: its bytes, None: no pixels) and, without one, why."""

    jpeg: bytes | None
    why: str | None = None


class Media:
    """Texts and thumbnails of a benchmark's items (see the module docstring). ``data``: a built folder or Hub
    dataset repo; ``images``: image folders or zips; ``token``: for a private repo."""

    def __init__(
        self, data: str | Path | None = None, images: str | Path | list | None = None, token: str | None = None
    ):
        given = [images] if isinstance(images, (str, Path)) else list(images or ())
        self.folders = [Path(p) for p in given]
        for folder in self.folders:
            if not folder.exists():
                raise EvaluationError(f"images= {folder}: no such folder or zip")
        self.source = None
        if data is not None:
            from eccv_metric.models.data.source import DataSource

            self.source = DataSource(data, self.folders or None, token)
        self._items: dict[tuple, tuple[dict[int, int], object]] = {}
        self._thumbs: OrderedDict[tuple, Thumb] = OrderedDict()

    @property
    def given(self) -> bool:
        return self.source is not None or bool(self.folders)

    def _read(self, bench: Benchmark, kind: str) -> tuple[dict[int, int], object] | None:
        """(row of each id, Items) of a benchmark's items of one kind in the data; None without data."""
        if self.source is None:
            return None
        from eccv_metric.models.data.items import item_sets

        item_set = next(s.whole for s in item_sets(bench) if s.kind == kind)
        key = (item_set.collection, kind, item_set.source.config, item_set.source.text_column)
        if key not in self._items:
            if not self.source.has(item_set.source.config):
                raise EvaluationError(f"data= {self.source.data} has no {item_set.source.config} config")
            items = self.source.read(item_set)
            self._items[key] = ({int(i): r for r, i in enumerate(items.ids.tolist())}, items)
        return self._items[key]

    def texts(self, bench: Benchmark, ids: list[int]) -> dict[int, str | None]:
        """Each caption's text (None: the data has none, or no data was given)."""
        found = self._read(bench, "caption")
        if found is None:
            return dict.fromkeys(ids)
        rows, items = found
        return {i: (items.texts[rows[i]] if i in rows else None) for i in ids}  # type: ignore[attr-defined]

    def thumbs(self, bench: Benchmark, resources: Resources, ids: list[int], size: int = THUMB) -> dict[int, Thumb]:
        """Each image's thumbnail, or why it has none (pixels read once per row group, thumbnails kept)."""
        out: dict[int, Thumb] = {}
        wanted = [i for i in dict.fromkeys(ids) if (bench.collection, i, size) not in self._thumbs]
        for image_id, thumb in self._locate(bench, resources, wanted).items():
            self._keep(
                (bench.collection, image_id, size), thumb if thumb.why else _thumbnail(thumb.jpeg, size, image_id)
            )
        for i in ids:
            out[i] = self._thumbs[(bench.collection, i, size)]
            self._thumbs.move_to_end((bench.collection, i, size))
        return out

    def _keep(self, key: tuple, thumb: Thumb) -> None:
        self._thumbs[key] = thumb
        while len(self._thumbs) > MAX_THUMBS:
            self._thumbs.popitem(last=False)

    def _locate(self, bench: Benchmark, resources: Resources, ids: list[int]) -> dict[int, Thumb]:
        """Each image's encoded bytes (as a Thumb whose ``jpeg`` holds them, any format) or why it has none."""
        if not ids:
            return {}
        if not self.given:
            return {i: Thumb(None, f"image {i}: {NO_DATA}") for i in ids}
        from eccv_metric.models.encoding.encode import ImageItems

        found = self._read(bench, "image")
        if found is None:  # image folders alone: by file name
            names = _file_names(bench, resources, ids)
            out = {}
            for i in ids:
                path = _find(self.folders, names[i]) if names[i] else None
                why = None if path else f"image {i}: {names[i] or 'no file name'} is in none of the images folders"
                out[i] = Thumb(path.read_bytes() if path else None, why)
            return out
        rows, items = found
        located = [(i, items.locations[rows[i]] if i in rows else ("absent",)) for i in ids]  # type: ignore[attr-defined]
        located.sort(key=lambda pair: tuple(str(x) for x in pair[1]))  # one row group read once
        reader = ImageItems([], np.zeros(0, np.int64), pixel_column=items.item_set.source.pixel_column or "image")  # type: ignore[attr-defined]
        out = {}
        for i, loc in located:
            if loc[0] == "absent":
                out[i] = Thumb(None, f"image {i}: not in the data's {items.item_set.source.config} config")  # type: ignore[attr-defined]
            elif loc[0] == "missing":
                out[i] = Thumb(None, f"image {i}: no pixels ({PIXEL_ORIGINS.get(loc[1], loc[1])})")
            else:
                data = reader.read_bytes(loc)
                out[i] = Thumb(data, None) if data else Thumb(None, f"image {i}: empty pixels")
        return out


def _thumbnail(data: bytes | None, size: int, image_id: int) -> Thumb:
    """A JPEG of at most ``size`` pixels a side, from any image PIL reads; a corrupt image: why."""
    from PIL import Image

    from eccv_metric.models.encoding.encode import to_rgb

    try:
        with Image.open(io.BytesIO(data or b"")) as im:
            picture = to_rgb(im)
        picture.thumbnail((size, size))  # type: ignore[attr-defined]
        out = io.BytesIO()
        picture.save(out, "JPEG", quality=80)  # type: ignore[attr-defined]
        return Thumb(out.getvalue())
    except Exception as exc:  # PIL's many error types: one line
        return Thumb(None, f"image {image_id}: its pixels cannot be decoded ({type(exc).__name__})")


def _file_names(bench: Benchmark, resources: Resources, ids: list[int]) -> dict[int, str | None]:
    """Image file names: a collection's own (FG's gallery), else the 5K split's COCO val2014 names."""
    collection = resources.collection(bench.collection)
    files = getattr(collection, "image_files", None)
    index = collection.index("image")
    pos = index.positions(np.asarray(ids, np.int64))
    if files is not None:
        return {i: (str(files[p]) if p >= 0 else None) for i, p in zip(ids, pos.tolist(), strict=True)}
    return {i: (f"COCO_val2014_{i:012d}.jpg" if p >= 0 else None) for i, p in zip(ids, pos.tolist(), strict=True)}


def _find(folders: list[Path], name: str) -> Path | None:
    for folder in folders:
        for sub in ("", "val2014", "unlabeled2017", "flickr30k-images"):
            path = folder / sub / name
            if path.is_file():
                return path
    return None
