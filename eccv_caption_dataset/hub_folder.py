"""Build the Hub-ready folder: ``data/<config>/test-*.parquet``, a generated dataset card and ``eval.yaml``
(the Hub benchmark's tasks, :mod:`eccv_metric.hub.eval_tasks`).

Everything is written to a temporary folder beside the output and renamed into
place at the end: a failed build leaves nothing half-written.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import datasets
import pyarrow as pa
from datasets import Features
from datasets.exceptions import DatasetGenerationError
from datasets.table import InMemoryTable

from eccv_caption_dataset.beir import write_beir
from eccv_caption_dataset.builder import CONFIGS
from eccv_caption_dataset.builder import EccvCaption
from eccv_caption_dataset.card import LICENSE_FILE
from eccv_caption_dataset.card import LICENSE_TEXT
from eccv_caption_dataset.card import dataset_card
from eccv_caption_dataset.fg_tables import FG_CONFIGS
from eccv_caption_dataset.fg_tables import fg_missing
from eccv_caption_dataset.mteb_layout import summary
from eccv_caption_dataset.sources import Sources
from eccv_caption_dataset.sources import Urls
from eccv_caption_dataset.sources import resolve
from eccv_metric.core import progress
from eccv_metric.core.files import replace_folder
from eccv_metric.core.files import temporary_folder
from eccv_metric.hub.eval_tasks import eval_yaml
from eccv_metric.hub.eval_tasks import registered

IMAGE_ROW_GROUP = 100  # the Hub viewer re-converts Parquet whose row groups exceed 100 MB


def buildable(sources: Sources) -> dict[str, str | None]:
    """For each config, None if it can be built from these sources, else why not."""
    return {
        "positives": None,
        "captions": None if sources.captions_json else sources.skipped.get("captions"),
        "cxc_ratings": None if sources.cxc_dir else sources.skipped.get("cxc_ratings"),
        "images": None
        if (sources.captions_json or sources.instances_json or sources.image_dir or sources.image_zip)
        else "no COCO captions, instances or images given",
    } | {name: fg_missing(sources, name.rsplit("_", 1)[0]) for name in FG_CONFIGS}


def build(
    output: str | Path,
    source_dir: str | Path | None = None,
    configs: Sequence[str] | None = None,
    download: bool = False,
    embed_image_ids: Sequence[int] | None = None,
    removed_captions: Sequence[int] | None = None,
    paper_results: str | Path | None = None,
    overwrite: bool = False,
    log: Callable[[str], None] = print,
    cache_dir: str | Path | None = None,
    urls: Urls | None = None,
    repo_id: str | None = None,
) -> dict:
    """Build the requested (default: every buildable) config into ``output``; returns a report.

    ``repo_id``: the Hub dataset repo the card's usage snippet loads (default:
    the folder's name; ``push`` writes the repo it uploads to).
    """
    output = Path(output)
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} exists (use overwrite=True to replace it)")
    sources = resolve(source_dir, download, Path(cache_dir) if cache_dir else None, urls)
    can = buildable(sources)
    wanted = list(configs) if configs else list(CONFIGS)
    unknown = set(wanted) - set(CONFIGS)
    if unknown:
        raise ValueError(f"unknown configs {sorted(unknown)}; choose from {CONFIGS}")
    report: dict = {"built": {}, "skipped": {}, "sources": {k: str(v) for k, v in sources.digests.items()}}
    for name in wanted:
        if can[name] is not None:
            report["skipped"][name] = can[name]
    by_reason: dict[str, list[str]] = {}
    for name, why in report["skipped"].items():  # configs skipped for one reason (an FG pair): one line
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        log(f"skipped {', '.join(names)}: {why}")
    for key, why in sources.skipped.items():
        if key not in report["skipped"] and key in ("pm", "images"):
            report["skipped"][key] = why
            log(f"note: {why}")
    todo = [n for n in wanted if can[n] is None]
    tmp = temporary_folder(output)
    log = progress.above_bars(log)
    datasets_bars = not datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # one bar of ours per config, not datasets' own per split / Parquet file
    shown = progress.bar("building", len(todo) + 1, "config", tick=True)  # one config can take a minute
    try:
        infos = {}
        for name in todo:
            shown.set_postfix_str(name)
            builder = EccvCaption(
                config_name=name,
                sources=sources,
                cache_dir=str(tmp / "cache"),
                embed_image_ids=tuple(embed_image_ids) if embed_image_ids is not None else None,
                removed_captions=tuple(removed_captions) if removed_captions is not None else None,
            )
            try:
                builder.download_and_prepare()
            except DatasetGenerationError as exc:  # surface our own clear error, not datasets' wrapper
                raise (exc.__cause__ or exc) from None
            dataset = builder.as_dataset(split="test")
            path = tmp / "data" / name / "test-00000-of-00001.parquet"
            image_rows = IMAGE_ROW_GROUP if name == "images" or name.endswith("_gallery") else None
            infos[name] = _card_info(dataset, write_parquet(dataset, path, image_rows)) | {
                "path": f"data/{name}/test-*.parquet"
            }
            report["built"][name] = dataset.num_rows
            if builder.report.get("images_missing"):
                report["images_missing"] = builder.report["images_missing"]
            if "cxc_source" in builder.report:
                report["cxc_source"] = builder.report["cxc_source"]
            log(f"built {name}: {dataset.num_rows} rows")
            shown.update(1)
            del dataset
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        shown.set_postfix_str("BEIR / MTEB layout")
        beir, skipped = write_beir(
            tmp, lambda table, path, rows: write_parquet(_as_dataset(table), path, rows), IMAGE_ROW_GROUP
        )
        report["beir"] = {name: info["rows"] for name, info in beir.items() if "rows" in info}
        report["mteb_skipped"] = skipped
        infos.update(beir)
        (tmp / "README.md").write_text(dataset_card(infos, report, paper_results, repo_id or output.name))
        (tmp / LICENSE_FILE).write_text(LICENSE_TEXT)
        tasks = registered(infos, report["skipped"])  # the Hub benchmark: one task per headline number
        if tasks:
            (tmp / "eval.yaml").write_text(eval_yaml(tasks))
        replace_folder(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shown.close()
        if datasets_bars:
            datasets.enable_progress_bars()
    if report.get("images_missing"):
        log(f"{len(report['images_missing'])} images were not available and are stored without pixels")
    for line in summary(skipped):  # which MTEB subsets are usable, and what the others need (also in the card)
        log(line)
    return report


def write_parquet(dataset: datasets.Dataset, path: Path, rows_per_group: int | None = None) -> int:
    """Write through ``datasets``' own Parquet writer (what ``push_to_hub`` uses): row groups of at most
    ~100 MB of Arrow data (``rows_per_group`` rows for image tables), page index and content-defined
    chunking (the Hub deduplicates uploads by chunk). Returns the file size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(path), batch_size=rows_per_group)
    return path.stat().st_size


def _as_dataset(table: pa.Table) -> datasets.Dataset:
    return datasets.Dataset(
        InMemoryTable(table), info=datasets.DatasetInfo(features=Features.from_arrow_schema(table.schema))
    )


def _card_info(dataset: datasets.Dataset, parquet_size: int) -> dict:
    """What the card's ``dataset_info`` needs: features, rows, Arrow bytes (datasets' num_bytes), Parquet bytes."""
    return {
        "features": dataset.features,
        "rows": dataset.num_rows,
        "num_bytes": dataset.data.nbytes,
        "download_size": parquet_size,
    }
