"""The dataset card (README.md) and license file of a built folder: YAML configs and dataset_info, the
configs' descriptions, licenses per part, the paper's leaderboard, usage and citations."""

from __future__ import annotations

from pathlib import Path

import yaml

from eccv_caption_dataset.builder import DESCRIPTIONS
from eccv_caption_dataset.mteb_layout import card_section
from eccv_metric.analysis.leaderboard import LABELS
from eccv_metric.analysis.leaderboard import SHIPPED
from eccv_metric.analysis.leaderboard import TABLE4_CSV
from eccv_metric.analysis.leaderboard import csv_rows
from eccv_metric.benchmarks.docs import protocol_table
from eccv_metric.hub.eval_tasks import SPLIT
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import registered

# `license: other` parts (CxC's terms, the FG files without a license): named and linked, as the Hub asks
LICENSE_NAME = "eccv-caption-parts"
LICENSE_FILE = "LICENSE.md"

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
    tasks = registered(infos, skipped)
    body = CARD_BODY.format(
        configs=rows,
        notes="\n".join(notes),
        results=_paper_table(paper_results),
        hub=hub_section(tasks, repo_id),
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


def hub_section(tasks: list[HubTask], repo: str) -> str:
    """The card's "Results on the Hub": the tasks ``eval.yaml`` registers and how a model's results get there."""
    if not tasks:
        return "This build holds no config a task is scored on, so it writes no `eval.yaml`.\n"
    rows = "\n".join(f"| `{t.id}` | {t.title} | `{t.config}` | `{SPLIT}` | {t.unit} |" for t in tasks)
    return HUB_SECTION.format(rows=rows, repo=repo, metrics=" ".join(dict.fromkeys(t.metric for t in tasks)))


HUB_SECTION = """\
`eval.yaml` registers this dataset as a Hub benchmark
([Evaluation Results](https://huggingface.co/docs/hub/eval-results)): one task per metric and
direction, each its own leaderboard once the Hub lists the benchmark (the Hub keeps leaderboards for the
benchmarks on its allow-list). Values are in percent, as in the paper's table above; the CxC correlations
are Spearman's rho. `eval.yaml` names `evaluation_framework: mteb`: the Hub takes one framework of its list,
this package is not on it, and this dataset is an MTEB dataset as it is (`eccv_caption_dataset.mteb.tasks`; MTEB's
predictions are scored with every metric by `eccv-caption evaluate --run` and published like any results).

| task | metric | config | split | unit |
|---|---|---|---|---|
{rows}

A model's results show on its page and on these leaderboards as `.eval_results/*.yaml` files in its repo,
one per task, each pointing at the per-query values behind it (a details dataset repo, one config per metric and
direction), written from one run of `eccv-caption evaluate --model`:

```bash
eccv-caption evaluate --model hf:you/your-clip --data {repo} -o results.json --per-query per_query.json \\
  --metrics {metrics}
eccv-caption push-results results.json --per-query per_query.json --dry-run
eccv-caption push-results results.json --per-query per_query.json
```

`push-results` commits the details to `you/details_<model owner>__<model name>` and opens a pull request on the
model repo (a rerun adds a commit to it; `--direct` commits to a repo you own, `--model-index` also writes the
card's `model-index`, the older form); `eccv-caption leaderboard --from-hub {repo}` prints every model of every
task beside the paper's models, `--significance` tells whether neighbours differ beyond chance, and
`eccv-caption compare ORG/A ORG/B --from-hub --dataset-repo {repo}` runs the paired test on two models'
published details.
"""

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

## Results on the Hub

{hub}

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
