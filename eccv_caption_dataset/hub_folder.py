"""Build the Hub-ready folder: ``data/<config>/test-*.parquet`` plus a generated dataset card.

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
import yaml
from datasets import Features
from datasets.exceptions import DatasetGenerationError
from datasets.table import InMemoryTable

from eccv_caption_dataset.beir import write_beir
from eccv_caption_dataset.builder import CONFIGS
from eccv_caption_dataset.builder import DESCRIPTIONS
from eccv_caption_dataset.builder import EccvCaption
from eccv_caption_dataset.fg_tables import FG_CONFIGS
from eccv_caption_dataset.fg_tables import fg_missing
from eccv_caption_dataset.mteb_layout import card_section
from eccv_caption_dataset.mteb_layout import summary
from eccv_caption_dataset.sources import Sources
from eccv_caption_dataset.sources import Urls
from eccv_caption_dataset.sources import resolve
from eccv_metric.analysis.leaderboard import LABELS
from eccv_metric.analysis.leaderboard import SHIPPED
from eccv_metric.analysis.leaderboard import TABLE4_CSV
from eccv_metric.analysis.leaderboard import csv_rows
from eccv_metric.benchmarks.docs import protocol_table
from eccv_metric.core import progress
from eccv_metric.core.files import replace_folder
from eccv_metric.core.files import temporary_folder

IMAGE_ROW_GROUP = 100  # the Hub viewer re-converts Parquet whose row groups exceed 100 MB
# `license: other` parts (CxC's terms, the FG files without a license): named and linked, as the Hub asks
LICENSE_NAME = "eccv-caption-parts"
LICENSE_FILE = "LICENSE.md"


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
            log(f"skipped {name}: {can[name]}")
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


SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` tag for a number of examples (huggingface_hub's DatasetCardData options)."""
    return next((tag for bound, tag in SIZE_CATEGORIES if rows < bound), "1M<n<10M")


def dataset_card(
    infos: dict, report: dict, paper_results: str | Path | None = None, repo_id: str = "eccv_caption"
) -> str:
    """README.md: YAML ``configs`` (one ``test`` split each) and ``dataset_info`` (num_bytes = Arrow bytes, as
    datasets writes them; download_size = Parquet bytes; alias configs carry none: their files are counted once,
    under the config that owns them), licenses per part, the paper's leaderboard, usage, citations."""
    configs, dataset_info = [], []
    for name, info in infos.items():
        entry: dict = {"config_name": name, "data_files": [{"split": "test", "path": info["path"]}]}
        if name == "positives":
            entry["default"] = True
        configs.append(entry)
        if "alias" in info:
            continue
        dataset_info.append(
            {
                "config_name": name,
                "features": info["features"]._to_yaml_list(),
                "splits": [{"name": "test", "num_bytes": info["num_bytes"], "num_examples": info["rows"]}],
                "download_size": info["download_size"],
                "dataset_size": info["num_bytes"],
            }
        )
    header = {
        "license": ["cc-by-4.0", "mit", "other"],
        "license_name": LICENSE_NAME,
        "license_link": LICENSE_FILE,
        "language": ["en"],
        "pretty_name": "ECCV Caption",
        "task_categories": ["image-to-text", "text-to-image"],
        "tags": ["image-text-retrieval", "coco", "eccv-caption", "cxc", "pmrp", "beir", "mteb"],
        "size_categories": [size_category(max(info.get("rows", 0) for info in infos.values()))],
        "configs": configs,
        "dataset_info": dataset_info,
    }
    main = {name: info for name, info in infos.items() if name in DESCRIPTIONS}
    rows = "\n".join(f"| `{name}` | {info['rows']:,} | {DESCRIPTIONS[name]} |" for name, info in main.items())
    skipped = report.get("skipped", {})
    notes = ["Not built here (missing sources):"] + [f"- `{k}`: {v}" for k, v in skipped.items()] if skipped else []
    missing = report.get("images_missing") or []
    if "images" in infos:
        notes.append(
            f"{len(missing):,} of the {infos['images']['rows']:,} images are stored without pixels (`image` is null; "
            "`coco_url` points to the file): the builder embeds only the images it was given or asked to download."
            if missing
            else "Every image is stored with its pixels."
        )
    body = CARD_BODY.format(
        configs=rows,
        notes="\n".join(notes),
        results=_paper_table(paper_results),
        repo=repo_id,
        protocols=protocol_table(),
        licenses=LICENSE_TABLE,
    )
    beir = (
        card_section(infos, report.get("mteb_skipped", {}), repo_id)
        if any(n.startswith("beir-") for n in infos)
        else ""
    )
    return "---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + body + beir


def _paper_table(path: str | Path | None) -> str:
    """The paper's Table 4 (shipped with the package), sorted by ECCV mAP@R; or a given results CSV."""
    rows = list(csv_rows(Path(path) if path else SHIPPED / TABLE4_CSV))
    cols = [c for c in rows[0] if c not in ("model", "group", "direction")]
    rows.sort(key=lambda r: -float(r.get("eccv_map_at_r") or 0))
    first = ["model"] + (["direction"] if "direction" in rows[0] else [])
    lines = [
        "| " + " | ".join(first + [LABELS.get(c, c) for c in cols]) + " |",
        "|---" * (len(first) + len(cols)) + "|",
    ]
    lines += ["| " + " | ".join([r[f] for f in first] + [r[c] for c in cols]) + " |" for r in rows]
    source = "Table 4, i2t/t2i averages" if not path else "Tables D.2/D.3"
    return (
        f"From the ECCV Caption paper ([arXiv:2204.03359](https://arxiv.org/abs/2204.03359), {source}), "
        "in percent; `eccv-caption leaderboard --with your_results.json` ranks a model among them:\n\n"
        + "\n".join(lines)
    )


LICENSE_TABLE = """\
Each part keeps the license of its source:

| part | license |
|---|---|
| captions, COCO categories, COCO positive pairs (from the COCO annotations) | CC BY 4.0 |
| ECCV Caption positives (the `eccv_caption` package) | MIT |
| CxC ratings and positives (Google's Crisscrossed Captions) | free use, acknowledging Google |
| PM positives | derived here from the COCO categories (CC BY 4.0) |
| image pixels | Flickr photos, their owners' licenses ([COCO terms](https://cocodataset.org/#termsofuse)) |
| MSCOCO-FG / Flickr30K-FG captions and gallery lists | **no license file** in [the authors' repository][fg] |

[fg]: https://github.com/cwj1412/MSCOCO-Flikcr30K_FG
"""
LICENSE_TEXT = (
    "# Licenses of the ECCV Caption dataset\n\n"
    "The dataset's `license: other` (`license_name: eccv-caption-parts`): "
    + LICENSE_TABLE[0].lower()
    + LICENSE_TABLE[1:]
)

CARD_BODY = """\
# ECCV Caption

The COCO Karpathy 5K test split (5,000 val2014 images, 25,000 captions) with the
positives of ECCV Caption (Chun et al., ECCV 2022,
[arXiv:2204.03359](https://arxiv.org/abs/2204.03359)): machine-and-human-verified
image-caption associations for 1,261 image queries (22,550 positive captions)
and 1,332 caption queries (11,279 positive images), next to the original COCO
positives, Crisscrossed Captions (CxC, [arXiv:2004.15020](https://arxiv.org/abs/2004.15020))
positives and ratings, and PCME's Plausible Match (PM,
[arXiv:2101.05068](https://arxiv.org/abs/2101.05068)) positives. Built by
`eccv-caption build` (pip package `eccv-caption-hf`).

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
  Karpathy order (t2i rows = the 25,000 captions in order). With the CxC CSVs, `t2t` rows
  follow for every caption: `coco` = its co-captions (the other 4 captions of its image:
  MS-COCO's own text-to-text, benchmark `coco_t2t`) and `cxc` = the co-captions plus the
  captions rated CxC STS >= 3 with it (benchmark `cxc_t2t`, the CxC paper's section 4: CxC
  pairs *extend* MS-COCO's associations); then `i2i` rows (an image and the images with
  SIS >= 2.5, `cxc_i2i`), for the images that have one. CxC pairs are undirected (a pair
  rated in both orders is a positive when either rating reaches the threshold) and the
  query itself never counts (`eccv-caption evaluate --metrics cxc_t2t_recalls coco_t2t_recalls cxc_i2i_recalls`).
- `images` / `captions`: `coco_1k_fold` is the COCO 1K fold (0-4), i.e. captions
  `[5000f, 5000f+5000)` in Karpathy order and their images; `is_eccv_query`
  marks ECCV Caption queries. `removed_in_eccv` flags what the paper left out
  (appendix C.1): 32 captions (18 meaningless, 14 semantically wrong) and
  image 578492 (a duplicate of training images 388662 and 397819).
- `cxc_ratings`: raw graded CxC ratings (0-5) between test items: `sits`
  (caption, image), `sts` (caption, caption), `sis` (image, image).
- `mscoco_fg_*` / `flickr30k_fg_*` (when their files were given): MSCOCO-FG and
  Flickr30K-FG (Chen, Yao and Jin, SIGIR '23, [doi:10.1145/3539618.3591758](https://doi.org/10.1145/3539618.3591758), [arXiv:2304.10824](https://arxiv.org/abs/2304.10824)),
  refined captions and enlarged galleries, from the files of
  github.com/cwj1412/MSCOCO-Flikcr30K_FG (`Annotations/*_FG_ann.json`,
  `Images/*_FG_img_filenames.npy`). `_captions`: one row per refined caption in
  the annotation file's order; MSCOCO-FG caption k of an image refines its k-th
  COCO caption (ascending id) and keeps that id (`original_caption` = COCO's
  text); Flickr30K has no caption ids, so caption k of Flickr photo f has id
  `10 * f + k` (and `original_caption` is null). `_gallery`: the gallery in the
  `.npy` order, `image_id` = the number in the file name (COCO id or Flickr
  photo id; they do not collide), `source` = `val2014`, `unlabeled2017` or
  `flickr30k`; pixels only for the COCO val2014 test images given. Score them
  with `eccv-caption evaluate --benchmark mscoco_fg ...` (R@K, MedR, MeanR).

{notes}

## Usage

```python
from datasets import load_dataset

positives = load_dataset("{repo}", "positives", split="test")
eccv_i2t = positives.filter(lambda r: r["direction"] == "i2t" and len(r["eccv"]) > 0)

# score a model with the companion metric (pip install eccv-caption-hf)
from eccv_metric import GroundTruth, Metrics
metrics = Metrics(ground_truth=GroundTruth.from_dataset("{repo}"))
```

## Protocol choices

Where the papers and the official code differ, both are offered under clear
names (`eccv-caption benchmarks` lists every benchmark):

{protocols}

## Results from the paper

{results}

## License

{licenses}
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
@inproceedings{{chen2023rethinking,
  title={{Rethinking Benchmarks for Cross-modal Image-text Retrieval}},
  author={{Chen, Weijing and Yao, Linli and Jin, Qin}},
  booktitle={{SIGIR}}, year={{2023}}, doi={{10.1145/3539618.3591758}}
}}
@inproceedings{{lin2014coco,
  title={{Microsoft COCO: Common Objects in Context}},
  author={{Lin, Tsung-Yi and Maire, Michael and Belongie, Serge and others}},
  booktitle={{ECCV}}, year={{2014}}
}}
```
"""
