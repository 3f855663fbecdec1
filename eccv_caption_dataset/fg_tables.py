"""Rows of the MSCOCO-FG / Flickr30K-FG configs (Chen, Yao and Jin, SIGIR '23; see ``eccv_metric.groundtruth.fg``).

- ``<bench>_captions``: caption_id, image_id, refined caption, original caption (COCO's text for
  MSCOCO-FG when the COCO captions are given; Flickr30K captions are not distributed here: null).
- ``<bench>_gallery``: image_id, file_name, source (``val2014`` / ``unlabeled2017`` / ``flickr30k``),
  coco_url (null for Flickr30K photos), image (the JPEG where available: COCO val2014 test images
  through the same lookup as the ``images`` config; unlabeled2017 and Flickr30K pixels are not embedded).
"""

from __future__ import annotations

from collections.abc import Iterator

from eccv_caption_dataset.sources import Sources
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.core.files import find_below
from eccv_metric.groundtruth.fg import FineGrained
from eccv_metric.groundtruth.split import GroundTruth

# the collections read from FG files (their entries name the fg_source option) and their configs
FG_ENTRIES = {entry.name: entry for entry in REGISTRY.collections() if entry.source_option == "fg_source"}
FG_CONFIGS = tuple(config for entry in FG_ENTRIES.values() for config in entry.configs)
COCO_URL = "http://images.cocodataset.org/"


def fg_missing(sources: Sources, bench: str) -> str | None:
    """None when the collection's source files are under ``sources.fg_dir``, else why the config is skipped."""
    entry = FG_ENTRIES[bench]
    names = [file.name for file in entry.files]
    if sources.fg_dir is not None and all(find_below(sources.fg_dir, n) for n in names):
        return None
    return f"no {' / '.join(names)} ({entry.home}); use --download"


def _load(sources: Sources, gt: GroundTruth, bench: str) -> FineGrained:
    return ResourceOptions(gt, fg_source=sources.fg_dir).resources().collection(bench)  # type: ignore[return-value]


def image_source(file_name: str) -> str:
    if file_name.startswith("COCO_val2014_"):
        return "val2014"
    stem = file_name.rsplit(".", 1)[0]
    return "unlabeled2017" if len(stem) == 12 and stem.isdigit() else "flickr30k"


def caption_rows(sources: Sources, gt: GroundTruth, bench: str, texts: dict[int, str] | None) -> Iterator[dict]:
    fg = _load(sources, gt, bench)
    for k, caption_id in enumerate(fg.captions.ids.tolist()):
        yield {
            "caption_id": caption_id,
            "image_id": int(fg.images.ids[fg.caption_image[k]]),
            "caption": fg.texts[k],
            "original_caption": texts.get(caption_id) if texts is not None and bench == "mscoco_fg" else None,
        }


def gallery_rows(sources: Sources, gt: GroundTruth, bench: str) -> Iterator[dict]:
    fg = _load(sources, gt, bench)
    for image_id, file_name in zip(fg.images.ids.tolist(), fg.image_files.tolist(), strict=True):
        source = image_source(file_name)
        data = sources.image_bytes(file_name) if source == "val2014" else None
        yield {
            "image_id": image_id,
            "file_name": file_name,
            "source": source,
            "coco_url": f"{COCO_URL}{source}/{file_name}" if source != "flickr30k" else None,
            "image": {"bytes": data, "path": file_name} if data is not None else None,
        }
