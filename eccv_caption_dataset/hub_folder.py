"""Build the Hub-ready folder: ``data/<config>/test-*.parquet`` plus a generated dataset card.

Everything is written to a temporary folder beside the output and renamed into
place at the end: a failed build leaves nothing half-written.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from datasets.exceptions import DatasetGenerationError

from eccv_caption_dataset.beir import CARD_SECTION
from eccv_caption_dataset.beir import write_beir
from eccv_caption_dataset.beir import yaml_configs
from eccv_caption_dataset.builder import CONFIGS
from eccv_caption_dataset.builder import DESCRIPTIONS
from eccv_caption_dataset.builder import EccvCaption
from eccv_caption_dataset.sources import Sources
from eccv_caption_dataset.sources import Urls
from eccv_caption_dataset.sources import resolve

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
    }


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
) -> dict:
    """Build the requested (default: every buildable) config into ``output``; returns a report."""
    output = Path(output)
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} exists (use overwrite)")
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
            log(f"skipped {name}: {can[name]}")
    for key, why in sources.skipped.items():
        if key not in report["skipped"] and key in ("pm", "images"):
            report["skipped"][key] = why
            log(f"note: {why}")
    todo = [n for n in wanted if can[n] is None]
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    tmp.chmod(0o755)
    try:
        infos = {}
        for name in todo:
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
            folder = tmp / "data" / name
            folder.mkdir(parents=True)
            pq.write_table(
                dataset.data.table,
                folder / "test-00000-of-00001.parquet",
                row_group_size=IMAGE_ROW_GROUP if name == "images" else None,
            )
            infos[name] = (builder.info, dataset.num_rows, (folder / "test-00000-of-00001.parquet").stat().st_size)
            report["built"][name] = dataset.num_rows
            if builder.report.get("images_missing"):
                report["images_missing"] = builder.report["images_missing"]
            if "cxc_source" in builder.report:
                report["cxc_source"] = builder.report["cxc_source"]
            log(f"built {name}: {dataset.num_rows} rows")
            del dataset
        shutil.rmtree(tmp / "cache", ignore_errors=True)
        beir = write_beir(tmp, IMAGE_ROW_GROUP)
        report["beir"] = {name: info["rows"] for name, info in beir.items()}
        (tmp / "README.md").write_text(dataset_card(infos, report, paper_results, beir))
        _swap_into_place(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if report.get("images_missing"):
        log(f"{len(report['images_missing'])} images were not available and are stored without pixels")
    return report


def _swap_into_place(new: Path, output: Path) -> None:
    old = None
    if output.exists():
        old = output.with_name(f".{output.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(output, old)
    os.replace(new, output)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def dataset_card(infos: dict, report: dict, paper_results: str | Path | None = None, beir: dict | None = None) -> str:
    """README.md with YAML ``configs`` and generated ``dataset_info``, license, citations, usage."""
    default = "positives" if "positives" in infos else next(iter(infos), None)
    configs = []
    dataset_info = []
    for name, (info, rows, size) in infos.items():
        entry = {"config_name": name, "data_files": [{"split": "test", "path": f"data/{name}/test-*.parquet"}]}
        if name == default:
            entry["default"] = True
        configs.append(entry)
        dataset_info.append(
            {
                "config_name": name,
                "features": info.features._to_yaml_list(),
                "splits": [{"name": "test", "num_bytes": size, "num_examples": rows}],
                "download_size": size,
                "dataset_size": size,
            }
        )
    configs += yaml_configs(beir or {})
    for name, info in (beir or {}).items():
        dataset_info.append(
            {
                "config_name": name,
                "features": info["features"]._to_yaml_list(),
                "splits": [{"name": split, "num_examples": info["rows"]} for split in info["splits"]],
            }
        )
    header = {
        "license": "cc-by-4.0",
        "language": ["en"],
        "pretty_name": "ECCV Caption",
        "task_categories": ["image-to-text", "text-to-image"],
        "tags": ["image-text-retrieval", "coco", "eccv-caption", "cxc", "pmrp"],
        "size_categories": ["10K<n<100K"],
        "configs": configs,
        "dataset_info": dataset_info,
    }
    rows = "\n".join(f"| `{name}` | {rows:,} | {DESCRIPTIONS[name]} |" for name, (_, rows, _) in infos.items())
    skipped = "\n".join(f"- `{k}`: {v}" for k, v in report.get("skipped", {}).items()) or "- nothing"
    return (
        "---\n"
        + yaml.safe_dump(header, sort_keys=False, allow_unicode=True)
        + "---\n\n"
        + CARD_BODY.format(configs=rows, skipped=skipped, results=_paper_table(paper_results))
        + ("\n" + CARD_SECTION.replace("REPO", '"<this repo>"') if beir else "")
    )


def _paper_table(path: str | Path | None) -> str:
    if path is None:
        return "See Tables D.2 and D.3 of the paper (arXiv 2204.03359v5) for 25 models' results."
    with open(path, newline="") as fin:
        rows = list(csv.DictReader(fin))
    cols = [c for c in rows[0] if c not in ("model", "group", "direction")]
    lines = ["| model | direction | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    lines += [f"| {r['model']} | {r['direction']} | " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    return "From the ECCV Caption paper (arXiv 2204.03359v5, Tables D.2/D.3), in percent:\n\n" + "\n".join(lines)


CARD_BODY = """\
# ECCV Caption

The COCO Karpathy 5K test split (5,000 val2014 images, 25,000 captions) with the
positives of ECCV Caption (Chun et al., ECCV 2022): machine-and-human-verified
image-caption associations for 1,261 image queries (22,550 positive captions)
and 1,332 caption queries (11,279 positive images), next to the original COCO
positives, Crisscrossed Captions (CxC) positives and ratings, and PCME's
Plausible Match (PM) positives. Built by `eccv-caption build`.

## Configs

| config | rows | content |
|---|---|---|
{configs}

- `positives`: one row per query and direction. `i2t`: an image query and the
  caption ids that match it; `t2i`: a caption query and its image ids. `coco`
  = original pairs; `cxc` = CxC SITS ratings >= 3; `eccv` = ECCV Caption
  (empty for the queries outside its subset); `pm` = plausible matches (images
  whose COCO category sets differ in at most 2 categories; own image left out;
  null for the 48 images without COCO instance annotations and their
  captions, and everywhere when categories were not available at build time). Rows follow the
  Karpathy order (t2i rows = the 25,000 captions in order).
- `images` / `captions`: `coco_1k_fold` is the COCO 1K fold (0-4), i.e. captions
  `[5000f, 5000f+5000)` in Karpathy order and their images; `is_eccv_query`
  marks ECCV Caption queries. `removed_in_eccv` flags what the paper left out
  (appendix C.1): 32 captions (18 meaningless, 14 semantically wrong) and
  image 578492 (a duplicate of training images 388662 and 397819).
- `cxc_ratings`: raw graded CxC ratings (0-5) between test items: `sits`
  (caption, image), `sts` (caption, caption), `sis` (image, image).

Not built here: {skipped}

## Usage

```python
from datasets import load_dataset

positives = load_dataset("<this repo>", "positives", split="test")
eccv_i2t = positives.filter(lambda r: r["direction"] == "i2t" and len(r["eccv"]) > 0)

# score a model with the companion metric (pip package eccv-caption-hf)
from eccv_metric import GroundTruth, Metrics
metrics = Metrics(ground_truth=GroundTruth.from_dataset("<this repo>"))
```

## Results from the paper

{results}

## License

- Captions, categories and positive lists derived from COCO annotations: CC BY 4.0
  (COCO annotations license); ECCV Caption positives: the `eccv_caption` package (MIT).
- Images: COCO images are Flickr photos under their own licenses; see the COCO
  terms of use (https://cocodataset.org/#termsofuse). Only embedded when the
  builder was given local copies or asked to download them.
- CxC ratings: Google's Crisscrossed Captions, free to use with acknowledgement of Google.

## Citation

```bibtex
@inproceedings{{chun2022eccv_caption,
  title={{ECCV Caption: Correcting False Negatives by Collecting Machine-and-Human-verified
          Image-Caption Associations for MS-COCO}},
  author={{Chun, Sanghyuk and Kim, Wonjae and Park, Song and Chang, Minsuk and Oh, Seong Joon}},
  booktitle={{ECCV}}, year={{2022}}
}}
@inproceedings{{parekh2021crisscrossed,
  title={{Crisscrossed Captions: Extended Intramodal and Intermodal Semantic Similarity Judgments for MS-COCO}},
  author={{Parekh, Zarana and Baldridge, Jason and Cer, Daniel and Waters, Austin and Yang, Yinfei}},
  booktitle={{EACL}}, year={{2021}}
}}
@inproceedings{{chun2021pcme,
  title={{Probabilistic Embeddings for Cross-Modal Retrieval}},
  author={{Chun, Sanghyuk and Oh, Seong Joon and de Rezende, Rafael Sampaio and Kalantidis, Yannis and Larlus, Diane}},
  booktitle={{CVPR}}, year={{2021}}
}}
@inproceedings{{lin2014coco,
  title={{Microsoft COCO: Common Objects in Context}},
  author={{Lin, Tsung-Yi and Maire, Michael and Belongie, Serge and others}},
  booktitle={{ECCV}}, year={{2014}}
}}
```
"""
