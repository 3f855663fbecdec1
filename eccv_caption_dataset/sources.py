"""Where the builder's inputs come from: a user's local copies or their canonical homes.

Every input is looked up in ``--source-dir`` first (by file name, anywhere below
it); with ``download=True`` a missing one is fetched from its canonical URL
into a cache (resumable, retried, sha256-checked where the digest is known).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.benchmarks.collections import FG_HOME
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.core.download import SourceError
from eccv_metric.core.download import default_cache_dir
from eccv_metric.core.download import download
from eccv_metric.core.download import sha256_file
from eccv_metric.core.files import atomic_open
from eccv_metric.core.files import find_below
from eccv_metric.core.jsonio import read_json as read_strict_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.groundtruth.cxc import CXC_FILES
from eccv_metric.groundtruth.cxc import CXC_RAW
from eccv_metric.groundtruth.cxc import CXC_SHA256
from eccv_metric.groundtruth.split import WHEEL_FILES
from eccv_metric.groundtruth.split import wheel_data_dir

WHEEL_RAW = "https://raw.githubusercontent.com/naver-ai/eccv-caption/master/eccv_caption/data/"
COCO_ANNOTATIONS_ZIP = "http://images.cocodataset.org/annotations/annotations_trainval2014.zip"
COCO_IMAGES = "http://images.cocodataset.org/val2014/"
CAPTION_FILES = ("captions_val2014.json", "captions_karpathy_test.json")
INSTANCE_FILES = ("instances_val2014.json", "instances_karpathy_test.json")
WHEEL_MARKER = "eccv_caption_to_image.json"  # the wheel's data folder is the one holding it
ANNOTATIONS_ZIP = "annotations_trainval2014.zip"
IMAGE_FOLDER = "val2014"
IMAGE_GLOB = "COCO_val2014_*.jpg"
IMAGE_ZIP = "val2014.zip"


@dataclass(frozen=True)
class SourceFiles:
    """One input of the build as ``--source-dir`` finds it: files (or a folder) of these names, anywhere below it;
    ``every``: all of them (in one folder), else the first name found."""

    what: str
    names: tuple[str, ...]
    every: bool = False

    def text(self) -> str:
        return f"{self.what} ({(', ' if self.every else ' or ').join(self.names)})"


# every file --source-dir is searched for, in the order resolve() looks: the build's help and errors list these
SOURCE_FILES = {
    "wheel": SourceFiles(
        "the eccv_caption data files", (WHEEL_MARKER, *(n for n in WHEEL_FILES if n != WHEEL_MARKER)), every=True
    ),  # fmt: skip
    "captions": SourceFiles("COCO captions", CAPTION_FILES),
    "instances": SourceFiles("COCO instances", INSTANCE_FILES),
    "annotations_zip": SourceFiles("or both in the COCO annotations zip", (ANNOTATIONS_ZIP,)),
    "cxc": SourceFiles("CxC ratings", CXC_FILES, every=True),
    **{
        entry.name: SourceFiles(entry.title, tuple(f.name for f in entry.files), every=True)
        for entry in REGISTRY.collections()
        if entry.home == FG_HOME
    },
    "images": SourceFiles("COCO val2014 images", (f"a {IMAGE_FOLDER} folder", f"{IMAGE_GLOB} files", IMAGE_ZIP)),
}
FG_MARKERS = tuple(files.names[0] for files in SOURCE_FILES.values() if files.names[0].endswith("_FG_ann.json"))


def source_files_text() -> str:
    """Every input ``--source-dir`` is searched for (:data:`SOURCE_FILES`), as a user reads them."""
    return "; ".join(files.text() for files in SOURCE_FILES.values())


EXPECTED = source_files_text()


@dataclass(frozen=True)
class Urls:
    """Canonical homes of the sources (overridable, e.g. for a mirror)."""

    wheel_raw: str = WHEEL_RAW
    cxc_raw: str = CXC_RAW
    coco_annotations_zip: str = COCO_ANNOTATIONS_ZIP
    coco_images: str = COCO_IMAGES
    fg_raw: str = FG_HOME


@dataclass
class Sources:
    """Resolved inputs; ``skipped`` says what is missing and why."""

    wheel_dir: Path
    captions_json: Path | None = None
    instances_json: Path | None = None
    cxc_dir: Path | None = None
    fg_dir: Path | None = None
    image_dir: Path | None = None
    image_zip: Path | None = None
    download_images: bool = False
    cache_dir: Path = field(default_factory=default_cache_dir)
    urls: Urls = field(default_factory=Urls)
    skipped: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    def image_bytes(self, file_name: str) -> bytes | None:
        """The JPEG bytes of a test image, from the folder, the zip or its COCO URL; None if unavailable."""
        if self.image_dir is not None and (self.image_dir / file_name).is_file():
            return (self.image_dir / file_name).read_bytes()
        if self.image_zip is not None:
            with zipfile.ZipFile(self.image_zip) as archive:
                try:
                    return archive.read(f"val2014/{file_name}")
                except KeyError:
                    pass
        if self.download_images:
            dest = self.cache_dir / "val2014" / file_name
            try:
                return download(self.urls.coco_images + file_name, dest, retries=3).read_bytes()
            except SourceError:
                return None
        return None


def _find(root: Path | None, names: Iterable[str]) -> Path | None:
    if root is None:
        return None
    for name in names:
        hits = find_below(root, name)
        if hits:
            return hits[0]
    return None


def _source_root(source_dir: str | Path | None) -> Path | None:
    """The folder given as ``source_dir``: it must exist and be a folder (a typo never builds a smaller dataset)."""
    if source_dir is None or str(source_dir) == "":
        return None
    root = Path(source_dir)
    if not root.exists():
        raise SourceError(f"source_dir= {root} does not exist; give the folder holding the sources ({EXPECTED})")
    if not root.is_dir():
        raise SourceError(f"source_dir= {root} is not a folder; give the folder holding the sources ({EXPECTED})")
    return root


def resolve(
    source_dir: str | Path | None = None,
    download_missing: bool = False,
    cache_dir: Path | None = None,
    urls: Urls | None = None,
) -> Sources:
    """Find every input under ``source_dir`` (or download it); record sha256 of what is used."""
    root = _source_root(source_dir)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    urls = urls or Urls()
    sources = Sources(wheel_dir=_wheel_dir(root, download_missing, cache, urls), cache_dir=cache, urls=urls)

    sources.captions_json = _find(root, CAPTION_FILES)
    sources.instances_json = _find(root, INSTANCE_FILES)
    if sources.captions_json is None or sources.instances_json is None:
        zip_path = _find(root, (ANNOTATIONS_ZIP,))
        if zip_path is None and download_missing:
            zip_path = download(urls.coco_annotations_zip, cache / ANNOTATIONS_ZIP)
        if zip_path is not None:
            members = ("annotations/captions_val2014.json", "annotations/instances_val2014.json")
            extracted = _extract(zip_path, members, cache)
            sources.captions_json = sources.captions_json or extracted[0]
            sources.instances_json = sources.instances_json or extracted[1]
    if sources.captions_json is None:
        sources.skipped["captions"] = "no COCO captions JSON (captions_val2014.json) in --source-dir; use --download"
    if sources.instances_json is None:
        sources.skipped["pm"] = "no COCO instances JSON (instances_val2014.json): PM lists and categories need it"

    sits = _find(root, CXC_FILES[:1])
    if sits is not None:
        sources.cxc_dir = sits.parent
    elif download_missing:
        for name in CXC_FILES:
            download(urls.cxc_raw + name, cache / "cxc" / name, sha256=CXC_SHA256[name])
        sources.cxc_dir = cache / "cxc"
    else:
        sources.skipped["cxc_ratings"] = "no CxC CSVs (sits_test.csv, sts_test.csv, sis_test.csv); use --download"

    fg_found = next((hit for hit in (_find(root, (marker,)) for marker in FG_MARKERS) if hit), None)
    if fg_found:
        sources.fg_dir = root
    elif download_missing:
        for file in (f for entry in REGISTRY.collections() if entry.home == FG_HOME for f in entry.files):
            download(urls.fg_raw + file.path, cache / "fg" / file.name, sha256=file.sha256)
        sources.fg_dir = cache / "fg"

    val_dir = _find(root, (IMAGE_FOLDER,))
    sample = next(iter(find_below(root, IMAGE_GLOB)), None) if root else None
    sources.image_dir = val_dir if val_dir is not None and val_dir.is_dir() else (sample.parent if sample else None)
    sources.image_zip = _find(root, (IMAGE_ZIP,))
    sources.download_images = download_missing
    if sources.image_dir is None and sources.image_zip is None and not download_missing:
        sources.skipped["images"] = "no COCO val2014 images (folder or val2014.zip); use --download for COCO URLs"

    found = [sources.captions_json, sources.instances_json, sits, fg_found, sources.image_dir, sources.image_zip]
    if root is not None and not any(found) and _find(root, (WHEEL_MARKER,)) is None:
        raise SourceError(
            f"source_dir= {root} holds none of the sources (looked for {EXPECTED}, in any subfolder); "
            "point it at the folder that has them, or leave it out to build the positives alone"
        )
    for path in (sources.captions_json, sources.instances_json):
        if path is not None:
            sources.digests[path.name] = sha256_file(path)
    if sources.cxc_dir is not None:
        for name in CXC_FILES:
            if (sources.cxc_dir / name).is_file():
                sources.digests[name] = sha256_file(sources.cxc_dir / name)
    return sources


def _wheel_dir(root: Path | None, download_missing: bool, cache: Path, urls: Urls) -> Path:
    """The eccv_caption data files: a local copy, the installed wheel, or GitHub raw files."""
    local = _find(root, (WHEEL_MARKER,))
    if local is not None:
        return local.parent
    try:
        return wheel_data_dir()
    except Exception:
        if not download_missing:
            raise SourceError("the eccv_caption data files are missing: pip install eccv_caption==0.1.0") from None
    for name, digest in WHEEL_FILES.items():
        download(urls.wheel_raw + name, cache / "eccv_caption_data" / name, sha256=digest)
    return cache / "eccv_caption_data"


def _extract(zip_path: Path, members: tuple[str, ...], cache: Path) -> list[Path | None]:
    out: list[Path | None] = []
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
        for member in members:
            if member not in names:
                out.append(None)
                continue
            dest = cache / Path(member).name
            if not dest.is_file():
                with archive.open(member) as fin, atomic_open(dest, "wb") as fout:
                    while block := fin.read(1 << 20):
                        fout.write(block)
            out.append(dest)
    return out


def read_json(path: Path) -> dict:
    """A COCO-format JSON file, read by the metric package's strict reader (errors name the file)."""
    expected = "a COCO-format annotations JSON"
    return require_object(read_strict_json(path, expected), path, expected)


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) of an image, via Pillow when installed."""
    try:
        from PIL import Image
    except ImportError:
        return None
    with Image.open(io.BytesIO(data)) as img:
        return img.size
