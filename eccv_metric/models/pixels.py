"""Reading the items of an :class:`~eccv_metric.models.items.ItemSet` from a built folder or Hub dataset repo.

Texts are read whole (25,000 captions are a few MB). Images are never read whole: one pass over the
config's Parquet row groups (ids, file names and whether pixels are embedded; no image bytes) gives each
image a location: a row of a row group, a file in an ``images=`` folder or a member of an ``images=``
zip. :class:`ImageItems` (a map-style dataset, torch-free and picklable) decodes one image per call in a
DataLoader worker, keeping the row group it last read. A Hub repo is fetched to the Hugging Face cache
(only the configs needed) and identified by its commit; a local folder by a digest of its Parquet files.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.media import PIXEL_ORIGINS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.digests import FileDigests
from eccv_metric.models.digests import stamp
from eccv_metric.models.items import ItemSet

Location = tuple  # ("parquet", file, row group, row) | ("file", path) | ("zip", zip path, member) | ("missing", origin)


@dataclass
class Items:
    """One item set read from the data: ids in the config's order, texts or image locations, and a digest."""

    item_set: ItemSet
    ids: np.ndarray
    texts: list[str] | None
    locations: list[Location] | None
    digest: str
    origins: list[str] | None = None  # images: where each comes from (val2014, unlabeled2017, flickr30k)

    def keys(self) -> list[tuple]:
        """What each item is, across item sets: a text by its string, an image by its origin and id (COCO
        val2014 image 391895 of the 5K split and of MSCOCO-FG's gallery is one image): encoded once."""
        if self.texts is not None:
            return [("text", t) for t in self.texts]
        origins = self.origins or ["val2014"] * len(self.ids)
        return [("image", o, int(i)) for o, i in zip(origins, self.ids.tolist(), strict=True)]

    def subset(self, rows: list[int]) -> Items:
        """The items at ``rows`` (in that order), as an item set of their own (its digest names the rows)."""
        pick = np.asarray(rows, dtype=np.int64)
        digest = hashlib.sha256(f"{self.digest}|subset".encode() + pick.tobytes()).hexdigest()
        return Items(
            self.item_set,
            self.ids[pick],
            None if self.texts is None else [self.texts[r] for r in rows],
            None if self.locations is None else [self.locations[r] for r in rows],
            digest,
            None if self.origins is None else [self.origins[r] for r in rows],
        )

    def missing(self) -> dict[str, int]:
        """origin -> how many items have no text / no pixels anywhere."""
        if self.texts is not None:
            n = sum(t is None for t in self.texts)
            return {"text": n} if n else {}
        out: dict[str, int] = {}
        for loc in self.locations or []:
            if loc[0] == "missing":
                out[loc[1]] = out.get(loc[1], 0) + 1
        return out


class DataSource:
    """A built folder or Hub dataset repo (``data=``) plus image folders / zips (``images=``)."""

    def __init__(
        self,
        data: str | Path,
        images: str | Path | list[str | Path] | None = None,
        token: str | None = None,
        digests: FileDigests | None = None,
    ):
        self.data = str(data)
        self.token = token
        self.digests = digests if digests is not None else FileDigests(None)
        local = Path(data)
        self.revision: str | None = None
        if local.is_dir():
            self.root = local
            built = (local / "data").is_dir() and any((local / "data").glob("*/*.parquet"))
            if not built:
                raise EvaluationError(
                    f"data= {self.data} is not a folder built by `eccv-caption build` (no data/<config>/*.parquet): "
                    f"build one from it (`eccv-caption build -o OUT --source-dir {self.data}`) and give OUT"
                )
        elif local.exists() or self.data.count("/") != 1:
            raise EvaluationError(
                f"data= {self.data}: neither a folder built by `eccv-caption build` nor a Hub repo id"
            )
        else:
            self.root = None  # fetched per config on use
        given = [images] if isinstance(images, (str, Path)) else list(images or ())
        self.image_sources = [Path(p) for p in given]
        for p in self.image_sources:
            if not (p.is_dir() or zipfile.is_zipfile(p)):
                raise EvaluationError(f"images= {p}: not a folder of images nor a zip file")
        self._zip_members: dict[Path, dict[str, zipfile.ZipInfo]] = {}

    def config_files(self, config: str) -> list[Path]:
        if self.root is not None:
            return sorted((self.root / "data" / config).glob("*.parquet"))
        from huggingface_hub import HfApi
        from huggingface_hub import snapshot_download

        try:
            if self.revision is None:
                self.revision = HfApi(token=self.token).dataset_info(self.data).sha
            folder = snapshot_download(
                self.data, repo_type="dataset", revision=self.revision, allow_patterns=[f"data/{config}/*"],
                token=self.token,
            )  # fmt: skip
        except Exception as exc:  # network, authentication, a missing repo: one line
            raise EvaluationError(
                f"data= {self.data}: cannot read the Hub dataset repo ({type(exc).__name__})"
            ) from None
        return sorted((Path(folder) / "data" / config).glob("*.parquet"))

    def has(self, config: str) -> bool:
        if self.root is not None:
            return (self.root / "data" / config).is_dir()
        return bool(self.config_files(config))

    def find_image(self, file_name: str) -> Location | None:
        """A file named ``file_name`` in an ``images=`` folder (or its subfolders by origin) or zip."""
        name = Path(file_name).name
        for src in self.image_sources:
            if src.is_dir():
                for sub in ("", "val2014", "unlabeled2017", "flickr30k-images"):
                    path = src / sub / name
                    if path.is_file():
                        return ("file", str(path))
            else:
                member = self.zip_members(src).get(name)
                if member is not None:
                    return ("zip", str(src), member.filename)
        return None

    def zip_members(self, src: Path) -> dict[str, zipfile.ZipInfo]:
        """The files of an ``images=`` zip by their base name (its directory, read once)."""
        if src not in self._zip_members:
            with zipfile.ZipFile(src) as zf:
                self._zip_members[src] = {Path(i.filename).name: i for i in zf.infolist() if not i.is_dir()}
        return self._zip_members[src]

    def content(self, loc: Location) -> str:
        """What an image file holds, for the data digest: its sha256, or a zip member's CRC-32 and size with
        the zip's stamp (see :mod:`eccv_metric.models.digests`)."""
        if loc[0] == "file":
            return self.digests.of(loc[1])
        info = self.zip_members(Path(loc[1]))[Path(loc[2]).name]
        return f"{stamp(loc[1])}|{info.CRC:08x}|{info.file_size}"

    def read(self, item_set: ItemSet) -> Items:
        src = item_set.source
        files = self.config_files(src.config)
        if not files:
            raise EvaluationError(
                f"the data= folder {self.data} has no {src.config} config (`eccv-caption build` writes it)"
            )
        import pyarrow.parquet as pq

        h = hashlib.sha256(f"{item_set.label}|{self.revision or ''}".encode())
        ids: list[int] = []
        texts: list[str] | None = [] if src.text_column else None
        locations: list[Location] | None = None if src.text_column else []
        all_origins: list[str] = []
        for path in files:
            pf = pq.ParquetFile(path)
            names = set(pf.schema_arrow.names)
            wanted = [src.id_column, src.text_column] if src.text_column else [src.id_column, src.file_column]
            if src.origin_column and src.origin_column in names:
                wanted.append(src.origin_column)
            absent = [c for c in wanted if c not in names]
            if src.pixel_column and src.pixel_column not in names:
                absent.append(src.pixel_column)
            if absent:
                raise EvaluationError(f"data= {self.data}: {src.config} has no column {', '.join(absent)}")
            if src.pixel_column:
                wanted.append(f"{src.pixel_column}.path")
            for rg in range(pf.num_row_groups):
                table = pf.read_row_group(rg, columns=wanted)
                ids += table.column(src.id_column).to_pylist()
                if texts is not None:
                    texts += table.column(src.text_column).to_pylist()
                    continue
                files_ = table.column(src.file_column).to_pylist()
                origins = (
                    table.column(src.origin_column).to_pylist()
                    if src.origin_column in table.column_names
                    else ["val2014"] * len(files_)
                )
                all_origins += [origin or "val2014" for origin in origins]
                embedded = (~np.asarray(table.column(src.pixel_column).is_null())).tolist()
                for row, (name, origin, has) in enumerate(zip(files_, origins, embedded, strict=True)):
                    loc = ("parquet", str(path), rg, row) if has else self.find_image(name or "")
                    locations.append(loc if loc is not None else ("missing", origin or "val2014"))  # type: ignore[union-attr]
            if self.revision is None:
                h.update(self.digests.of(path).encode())
        if locations is not None:
            for loc in locations:
                if loc[0] in ("file", "zip"):
                    h.update(f"{loc}|{self.content(loc)}".encode())
        self.digests.save()
        arr = np.asarray(ids, dtype=np.int64)
        h.update(arr.tobytes())
        return Items(item_set, arr, texts, locations, h.hexdigest(), None if texts is not None else all_origins)


def missing_message(bench: str, items: Items) -> str | None:
    """One line: the benchmark, how many items lack pixels / texts, and what provides them."""
    missing = items.missing()
    if not missing:
        return None
    total = len(items.ids)
    if items.texts is not None:
        return (
            f"{bench}: {missing['text']:,} of {total:,} items have no {items.item_set.source.text_column} text in "
            f"the {items.item_set.source.config} config of data= (rebuild it with the COCO captions)"
        )
    parts = "; ".join(f"{n:,} {origin}: {PIXEL_ORIGINS.get(origin, origin)}" for origin, n in missing.items())
    return f"{bench}: {sum(missing.values()):,} of {total:,} images have no pixels ({parts})"


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

    def _bytes(self, loc: Location) -> bytes | None:
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

        where = f"image {int(self.ids[i])} ({self.locations[i][1]})"
        try:
            data = self._bytes(self.locations[i])
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


# how an image becomes the RGB picture a model's preprocessing gets (part of the cache key of image items)
DECODER = "PIL convert RGB; 16-bit grayscale scaled by 255/65535"


def decoder() -> str:
    """The image decoder's identity: Pillow's version and :data:`DECODER`."""
    import PIL

    return f"Pillow {PIL.__version__}: {DECODER}"


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
