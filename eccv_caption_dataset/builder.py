"""The ``datasets.ArrowBasedBuilder`` of ECCV Caption: run by our code, never a Hub loading script.

The table modules yield rows (dicts); the builder hands ``datasets`` Arrow tables made by pyarrow against the
config's features (``datasets`` encoding 293k rows one at a time took 48 s of a 76 s build of ../shared/data;
it now takes 27 s). Only columns whose feature encodes its values (``Image``) go through ``encode_example``,
laid out by ``datasets``' own ``TypedSequence``. Each table holds the rows ``datasets``' writer batches for those
features (1,000; 100 with images, so the pixels in memory stay those of 100 images). The Parquet files and the
card are those of row-by-row generation, byte for byte (checked on the real build).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass

import datasets
import pyarrow as pa
from datasets.arrow_writer import TypedSequence
from datasets.arrow_writer import get_arrow_writer_batch_size_from_features

from eccv_caption_dataset import fg_tables
from eccv_caption_dataset import tables
from eccv_caption_dataset.fg_tables import FG_CONFIGS
from eccv_caption_dataset.fg_tables import FG_ENTRIES
from eccv_caption_dataset.sources import Sources
from eccv_caption_dataset.sources import resolve

CONFIGS = ("images", "captions", "positives", "cxc_ratings", *FG_CONFIGS)
_IDS = datasets.List(datasets.Value("int64"))

FEATURES = {
    "images": datasets.Features(
        {
            "image_id": datasets.Value("int64"),
            "file_name": datasets.Value("string"),
            "coco_url": datasets.Value("string"),
            "image": datasets.Image(),
            "width": datasets.Value("int32"),
            "height": datasets.Value("int32"),
            "coco_1k_fold": datasets.Value("int8"),
            "is_eccv_query": datasets.Value("bool"),
            "removed_in_eccv": datasets.Value("bool"),
            "categories": datasets.List(datasets.Value("string")),
        }
    ),
    "captions": datasets.Features(
        {
            "caption_id": datasets.Value("int64"),
            "image_id": datasets.Value("int64"),
            "caption": datasets.Value("string"),
            "coco_1k_fold": datasets.Value("int8"),
            "is_eccv_query": datasets.Value("bool"),
            "removed_in_eccv": datasets.Value("bool"),
        }
    ),
    "positives": datasets.Features(
        {
            "direction": datasets.Value("string"),
            "query_id": datasets.Value("int64"),
            "coco": _IDS,
            "cxc": _IDS,
            "eccv": _IDS,
            "pm": _IDS,
        }
    ),
    "cxc_ratings": datasets.Features(
        {
            "kind": datasets.Value("string"),
            "id_1": datasets.Value("int64"),
            "type_1": datasets.Value("string"),
            "id_2": datasets.Value("int64"),
            "type_2": datasets.Value("string"),
            "score": datasets.Value("float32"),
            "sampling_method": datasets.Value("string"),
        }
    ),
}

FEATURE_TYPES = {"int64": datasets.Value("int64"), "string": datasets.Value("string"), "image": datasets.Image()}
for _entry in FG_ENTRIES.values():  # the FG configs and their columns, from the collections' registry entries
    for _config, _columns in _entry.features.items():
        FEATURES[_config] = datasets.Features({col: FEATURE_TYPES[kind] for col, kind in _columns.items()})

DESCRIPTIONS = {
    "images": "The 5,000 COCO Karpathy test images: ids, files, COCO 1K fold, ECCV query flag, COCO categories.",
    "captions": "The 25,000 test captions in Karpathy order with their image, fold and ECCV query flag.",
    "positives": "One row per query and direction (i2t: image -> caption ids, t2i: caption -> image ids) "
    "with its COCO, CxC, ECCV Caption and Plausible Match positives; CxC intramodal t2t / i2i rows.",
    "cxc_ratings": "Raw graded CxC similarity ratings (SITS, STS, SIS) between test-split items.",
} | {config: text for entry in FG_ENTRIES.values() for config, text in entry.configs.items()}


@dataclass
class EccvCaptionConfig(datasets.BuilderConfig):
    """Sources and options of a build (all optional: the wheel alone gives COCO/CxC/ECCV positives)."""

    source_dir: str | None = None
    download: bool = False
    embed_image_ids: tuple[int, ...] | None = None
    removed_captions: tuple[int, ...] | None = None
    pm_zeta: int = 2
    pm_include_own: bool = False


def plain(feature: object) -> bool:
    """Whether pyarrow takes a feature's Python values as they are: a ``Value``, or a ``List`` of plain ones."""
    if isinstance(feature, datasets.List):
        return plain(feature.feature)
    return isinstance(feature, datasets.Value)


def arrow_tables(rows: Iterable[dict], features: datasets.Features) -> Iterator[tuple[int, pa.Table]]:
    """``rows`` as Arrow tables in the features' schema and column order, each of the rows ``datasets``' writer
    batches for these features."""
    size = get_arrow_writer_batch_size_from_features(features) or datasets.config.DEFAULT_MAX_BATCH_SIZE
    schema = features.arrow_schema
    encoders = {name: None if plain(feature) else feature.encode_example for name, feature in features.items()}
    batch: list[dict] = []

    def table() -> pa.Table:
        columns = []
        for (name, encode), field in zip(encoders.items(), schema, strict=True):
            values = [row.get(name) for row in batch]  # a missing key: null, as datasets encodes it
            if encode is None:
                columns.append(pa.array(values, type=field.type))
            else:  # the arrays datasets' writer makes of encoded values (an Image struct's nulls as it lays them)
                encoded = [None if v is None else encode(v) for v in values]
                columns.append(pa.array(TypedSequence(encoded, type=features[name])))
        return pa.Table.from_arrays(columns, schema=schema)

    index = 0
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield index, table()
            index, batch = index + 1, []
    if batch or index == 0:
        yield index, table()


class EccvCaption(datasets.ArrowBasedBuilder):
    """ECCV Caption: images, captions, categories and COCO / CxC / ECCV / PM positives of the 5K test split."""

    BUILDER_CONFIG_CLASS = EccvCaptionConfig
    BUILDER_CONFIGS = [EccvCaptionConfig(name=name, description=DESCRIPTIONS[name]) for name in CONFIGS]
    DEFAULT_CONFIG_NAME = "positives"
    VERSION = datasets.Version("1.0.0")

    def __init__(self, *args, sources: Sources | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._sources = sources
        self.report: dict = {}

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=DESCRIPTIONS[self.config.name],
            features=FEATURES[self.config.name],
            homepage="https://github.com/naver-ai/eccv-caption",
            license="cc-by-4.0",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        cfg = self.config
        sources = self._sources or resolve(cfg.source_dir, cfg.download)
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"sources": sources})]

    def _generate_tables(self, sources: Sources) -> Iterator[tuple[int, pa.Table]]:
        cfg = self.config
        gt = tables.ground_truth(sources)
        if cfg.name == "images":
            embed = set(cfg.embed_image_ids) if cfg.embed_image_ids is not None else None
            rows = tables.image_rows(sources, gt, embed, self.report)
        elif cfg.name == "captions":
            if sources.captions_json is None:
                raise ValueError(sources.skipped.get("captions", "no COCO captions JSON"))
            removed = set(cfg.removed_captions) if cfg.removed_captions is not None else None
            rows = tables.caption_rows(sources, gt, removed)
        elif cfg.name == "positives":
            rows = tables.positive_rows(sources, gt, cfg.pm_zeta, cfg.pm_include_own, self.report)
        elif cfg.name.endswith("_captions"):
            texts = tables.caption_texts(sources, gt) if sources.captions_json is not None else None
            rows = fg_tables.caption_rows(sources, gt, cfg.name.rsplit("_", 1)[0], texts)
        elif cfg.name.endswith("_gallery"):
            rows = fg_tables.gallery_rows(sources, gt, cfg.name.rsplit("_", 1)[0])
        else:
            if sources.cxc_dir is None:
                raise ValueError(sources.skipped.get("cxc_ratings", "no CxC CSVs"))
            rows = tables.cxc_ratings(sources.cxc_dir, gt)
        yield from arrow_tables(rows, FEATURES[cfg.name])
