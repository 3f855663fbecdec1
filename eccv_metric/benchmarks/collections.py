"""Every collection of items the benchmarks live on, as registry data (see :mod:`eccv_metric.benchmarks.registry`).

``coco_5k``: the COCO Karpathy 5K test split (the ``eccv_caption`` wheel's ids, sha256-checked by
:class:`~eccv_metric.groundtruth.split.GroundTruth`); ``mscoco_fg`` and ``flickr30k_fg``: the refined
captions and enlarged galleries of Chen, Yao and Jin (SIGIR '23), read by
:func:`~eccv_metric.groundtruth.fg.load_fg` from the files named here. Adding a collection is adding an
entry here (and its relations in :mod:`eccv_metric.benchmarks.relations`); the dataset builder derives the
configs, their descriptions and column types from these entries.
"""

from __future__ import annotations

from collections.abc import Callable

from eccv_metric.benchmarks.media import caption_source
from eccv_metric.benchmarks.media import image_source
from eccv_metric.benchmarks.registry import CollectionEntry
from eccv_metric.benchmarks.registry import Loaded
from eccv_metric.core.download import SourceFile
from eccv_metric.core.view import Collection
from eccv_metric.groundtruth.fg import CaptionIds
from eccv_metric.groundtruth.fg import coco_caption_ids
from eccv_metric.groundtruth.fg import load_fg
from eccv_metric.groundtruth.fg import photo_caption_ids

FG_HOME = "https://raw.githubusercontent.com/cwj1412/MSCOCO-Flikcr30K_FG/master/"
FG_CITATION = (
    "Chen, Yao, Jin. Rethinking Benchmarks for Cross-modal Image-text Retrieval. SIGIR '23, "
    "doi:10.1145/3539618.3591758, arXiv:2304.10824"
)
FG_LICENSE = "no license file in the authors' repository"
FG_ORDER = (
    "gallery: the *_img_filenames.npy order; captions: the annotation file's keys in file order, each key's "
    "5 captions in list order"
)
FG_FEATURES = {
    "captions": {"caption_id": "int64", "image_id": "int64", "caption": "string", "original_caption": "string"},
    "gallery": {"image_id": "int64", "file_name": "string", "source": "string", "coco_url": "string", "image": "image"},
}


def _split(entry: CollectionEntry, loaded: Loaded) -> Collection:
    return loaded.gt


def _fg(caption_ids: Callable[[Loaded], CaptionIds]) -> Callable[[CollectionEntry, Loaded], Collection]:
    """The loader of an FG collection whose caption ids follow ``caption_ids``."""

    def load(entry: CollectionEntry, loaded: Loaded) -> Collection:
        ann, names = entry.files
        return load_fg(entry.name, (ann, names), entry.home, caption_ids(loaded), loaded.source(entry.source_option))

    return load


def _fg_entry(
    name: str,
    title: str,
    stem: str,
    sha256: tuple[str, str],
    caption_ids: Callable[[Loaded], CaptionIds],
    ids: str,
    items: str,
    media: str,
    configs: tuple[str, str],
) -> CollectionEntry:
    return CollectionEntry(
        name,
        title,
        _fg(caption_ids),
        items,
        ids,
        FG_ORDER,
        media,
        (
            SourceFile(f"Annotations/{stem}_FG_ann.json", sha256[0]),
            SourceFile(f"Images/{stem}_FG_img_filenames.npy", sha256[1]),
        ),
        FG_HOME,
        "fg_source",
        {f"{name}_captions": configs[0], f"{name}_gallery": configs[1]},
        {f"{name}_{part}": columns for part, columns in FG_FEATURES.items()},
        FG_CITATION,
        FG_LICENSE,
        {"image": image_source(f"{name}_gallery", "source"), "caption": caption_source(f"{name}_captions")},
    )


COLLECTIONS = (
    CollectionEntry(
        "coco_5k",
        "COCO Karpathy 5K test split",
        _split,
        "5,000 images and 25,000 captions (5 each) in five folds of 1,000 images",
        "COCO image ids and COCO caption ids",
        "Karpathy order (the eccv_caption package's coco_test_ids.npy; a caption's image in captions_val2014.json)",
        "pixels: COCO val2014 JPEGs (images.cocodataset.org/val2014/<file_name>, or the images config's image "
        "column); texts: COCO captions_val2014.json (the captions config's caption column)",
        citation="Karpathy, Fei-Fei. Deep Visual-Semantic Alignments for Generating Image Descriptions. CVPR 2015",
        license="CC BY 4.0 (COCO annotations)",
        item_sources={"image": image_source("images"), "caption": caption_source("captions")},
    ),
    _fg_entry(
        "mscoco_fg",
        "MSCOCO-FG",
        "MSCOCO",
        (
            "2836a1d721aa16288bf14ae4dc76af6603af900d43946e7b9c89401b72905452",
            "7bdf7bf2086ff23ca937ebf3e0d51528bc4ff51b20543852591881faf9b4efd0",
        ),
        lambda loaded: coco_caption_ids(loaded.gt),
        "images: the number in the file name (COCO ids); captions: caption k of an image keeps the image's k-th "
        "COCO caption id in ascending order",
        "31,244 images (the 5,000 test images + 26,244 unlabeled2017 distractors) and 25,000 refined captions",
        "texts: the refined captions (mscoco_fg_captions.caption; the original COCO texts in original_caption); "
        "pixels: COCO val2014 test images and unlabeled2017 distractors from images.cocodataset.org/<source>/"
        "<file_name> (coco_url; the test images also in the gallery's image column)",
        (
            "MSCOCO-FG (Chen et al. 2023): the 25,000 refined test captions (COCO caption ids).",
            "MSCOCO-FG: the 31,244-image gallery (5,000 test images + 26,244 unlabeled2017).",
        ),
    ),
    _fg_entry(
        "flickr30k_fg",
        "Flickr30K-FG",
        "Flickr30K",
        (
            "7e77be240f3c94bf16ae2db0b59183ad86a73f7a05354e5317d05ce54d12996f",
            "eabbf6f90053578af2303bac03c167c937ab8ea16fe0e6bd5b60c577d64feb70",
        ),
        lambda loaded: photo_caption_ids,
        "images: the number in the file name (Flickr photo ids, COCO ids for the distractors); captions: caption "
        "k of Flickr photo f is 10 * f + k",
        "6,867 images (the 1,000 Flickr30K test images + 5,867 unlabeled2017 distractors) and 5,000 refined captions",
        "texts: the refined captions (flickr30k_fg_captions.caption; Flickr30K's own captions are not distributed "
        "here); pixels: Flickr30K photos from the Flickr30K release (not redistributed), distractors from "
        "images.cocodataset.org/unlabeled2017/<file_name>",
        (
            "Flickr30K-FG: the 5,000 refined captions of the 1,000 Flickr30K test images.",
            "Flickr30K-FG: the 6,867-image gallery (1,000 Flickr30K + 5,867 COCO unlabeled2017).",
        ),
    ),
)
