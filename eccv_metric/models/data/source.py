"""Where a model run's items come from: a folder built by ``eccv-caption build`` or its Hub dataset repo
(``data=``), plus image folders / zips with the pixels a build does not embed (``images=``).

:meth:`DataSource.read` gives an item set's :class:`~eccv_metric.models.data.items.Items`: texts are read whole
(25,000 captions are a few MB); images are never read whole: one pass over the config's Parquet row groups
(ids, file names and whether pixels are embedded; no image bytes) gives each image a location: a row of a
row group, a file in an ``images=`` folder or a member of an ``images=`` zip. A Hub repo is fetched to the
Hugging Face cache (only the configs needed) and identified by its commit; a local folder by the contents of
its Parquet files, and image files by theirs (:mod:`eccv_metric.models.data.digests`).
"""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.media import PIXEL_ORIGINS
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.models.data.digests import FileDigests
from eccv_metric.models.data.digests import stamp
from eccv_metric.models.data.items import Items
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.data.items import Location


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
        self._items: dict[ItemSet, Items] = {}  # each set read once per source (several models of one call)

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
        the zip's stamp (see :mod:`eccv_metric.models.data.digests`)."""
        if loc[0] == "file":
            return self.digests.of(loc[1])
        info = self.zip_members(Path(loc[1]))[Path(loc[2]).name]
        return f"{stamp(loc[1])}|{info.CRC:08x}|{info.file_size}"

    def lacks(self, bench: Benchmark, sets: list[ItemSet], resources: Resources | None = None) -> str | None:
        """Why the data cannot serve a benchmark (a config it lacks; the CxC ratings it needs), or None."""
        absent = next((s.source.config for s in sets if not self.has(s.source.config)), None)
        if absent is not None:
            return f"{bench.name}: the data= folder {self.data} has no {absent} config (`eccv-caption build` writes it)"
        if resources is not None and "CxC ratings" in bench.needs and resources.cxc_source is None:
            return f"{bench.name}: needs the CxC ratings: a data= build with cxc_ratings, or cxc_source="
        return None

    def read(self, item_set: ItemSet) -> Items:
        """The items of a set in the config's order (a restricted set: the ids it holds), with their digest;
        read once (the models of one call share them)."""
        if item_set not in self._items:
            self._items[item_set] = self.read_now(item_set)
        return self._items[item_set]

    def read_now(self, item_set: ItemSet) -> Items:
        """:meth:`read`, from the files."""
        src, only = item_set.source, item_set.only
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
                rows = table.column(src.id_column).to_pylist()
                keep = [only is None or i in only for i in rows]  # a restricted set: the ids it ranks
                ids += [i for i, k in zip(rows, keep, strict=True) if k]
                if texts is not None:
                    texts += [t for t, k in zip(table.column(src.text_column).to_pylist(), keep, strict=True) if k]
                    continue
                files_ = table.column(src.file_column).to_pylist()
                origins = [
                    origin or "val2014"
                    for origin in (
                        table.column(src.origin_column).to_pylist()
                        if src.origin_column in table.column_names
                        else [None] * len(files_)
                    )
                ]
                embedded = [not null for null in table.column(src.pixel_column).is_null().to_pylist()]  # no pandas
                for row, (name, origin, has, k) in enumerate(zip(files_, origins, embedded, keep, strict=True)):
                    if not k:
                        continue
                    loc = ("parquet", str(path), rg, row) if has else self.find_image(name or "")
                    locations.append(loc if loc is not None else ("missing", origin))  # type: ignore[union-attr]
                    all_origins.append(origin)
            if self.revision is None:
                h.update(self.digests.of(path).encode())
        if locations is not None:
            for loc in locations:
                if loc[0] in ("file", "zip"):
                    h.update(f"{loc}|{self.content(loc)}".encode())
        self.digests.save()
        arr = np.asarray(ids, dtype=np.int64)
        h.update(arr.tobytes())
        if texts is not None:
            keys = [("text", t) for t in texts]
        else:
            keys = [("image", o, int(i)) for o, i in zip(all_origins, arr.tolist(), strict=True)]
        return Items(item_set, arr, texts, locations, h.hexdigest(), keys)

    def resolve(self, bench: Benchmark, item_set: ItemSet, resources: Resources) -> ItemSet:
        """A set marked with a restriction, made exact: the ids the benchmark's restricted views rank (the
        queries or gallery items of a group >= 0: MSCOCO-FG's original pool, the 5,000 test images), or the
        whole set when they rank every item (COCO 1K's folds)."""
        if item_set.restriction is None or item_set.only is not None:
            return item_set
        index = resources.collection(bench.collection).index(item_set.kind)
        taken = np.zeros(len(index), dtype=bool)
        for task in bench.tasks:
            view = resources.view(bench, task)
            for side, group in ((view.query_kind, view.query_group), (view.gallery_kind, view.gallery_group)):
                if side == item_set.kind:
                    taken |= True if group is None else group >= 0
        return item_set.whole if taken.all() else replace(item_set, only=frozenset(index.ids[taken].tolist()))

    def missing(self, bench: str, items: Items) -> str | None:
        """One line: the benchmark, how many items lack pixels / texts, and what provides them (None: none)."""
        total = len(items.ids)
        if items.texts is not None:
            n = sum(t is None for t in items.texts)
            source = items.item_set.source
            return (
                f"{bench}: {n:,} of {total:,} items have no {source.text_column} text in the {source.config} "
                "config of data= (rebuild it with the COCO captions)"
                if n
                else None
            )
        missing: dict[str, int] = {}
        for loc in items.locations or []:
            if loc[0] == "missing":
                missing[loc[1]] = missing.get(loc[1], 0) + 1
        if not missing:
            return None
        parts = "; ".join(f"{n:,} {origin}: {PIXEL_ORIGINS.get(origin, origin)}" for origin, n in missing.items())
        return f"{bench}: {sum(missing.values()):,} of {total:,} images have no pixels ({parts})"


def data_sources(source: DataSource) -> list[str]:
    """The sources the data provides itself (``ground_truth``: its positives config, ``cxc_source``: its CxC
    ratings, ``fg_source``: its FG captions): what a run takes from it unless given others."""
    has = {
        "ground_truth": source.has("positives"),
        "cxc_source": source.has("cxc_ratings"),
        "fg_source": any(source.has(f"{b}_captions") for b in ("mscoco_fg", "flickr30k_fg")),
    }
    return [name for name, found in has.items() if found]


def default_resources(source: DataSource, options: ResourceOptions | None = None) -> Resources:
    """The data's own ground truth (positives), CxC ratings and FG files where it has them, unless ``options``
    name others; through the one factory (:meth:`ResourceOptions.resources`)."""
    own = str(source.data)
    filled = (options or ResourceOptions()).filled(**{name: own for name in data_sources(source)})
    if source.token is not None and filled.ground_truth == own:  # a private Hub repo: read with its token
        filled = replace(filled, ground_truth=GroundTruth.from_dataset(source.data, source.token))
    return filled.resources()
