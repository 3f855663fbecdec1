"""Which MTEB / BEIR subsets a build writes, and the card section that documents them.

A subset of :mod:`eccv_metric.benchmarks.subsets` gets its ``-qrels`` config
whenever its positives can be derived (the CxC ratings for the intramodal
relations and the graded qrels), and its ``-corpus`` / ``-queries`` aliases when
the item configs of its two modalities are there with **pixels for every
image** where images are queries or documents. An image row without pixels
reaches an MTEB model as ``None`` (``'NoneType' object has no attribute
'convert'``), and a corpus of only the images that have pixels would be another
benchmark under the same name; so such aliases are not written (mteb then says
the ``-corpus`` config is missing), and the card says which and why.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.subsets import Subset
from eccv_metric.benchmarks.subsets import not_offered
from eccv_metric.benchmarks.subsets import subsets
from eccv_metric.core.folder import is_built_folder

ITEM_CONFIG = {"image": "beir-images", "caption": "beir-captions"}
RATING_RELATIONS = ("co_captions+sts", "sis")  # read from the cxc_ratings config (STS, SIS)


def plan(folder: Path, missing_pixels: dict[str, tuple[int, int]]) -> tuple[list[tuple[Subset, bool]], dict[str, str]]:
    """([(subset whose qrels are written, whether its corpus / queries are too)], {subset: what is missing}).

    ``missing_pixels``: {item config: (rows without pixels, rows)}. Qrels are ground truth and need no pixels:
    they are written whenever the positives can be; a subset without its corpus / queries is reported.
    """
    written, skipped = [], {}
    for sub in subsets():
        reason = _qrels_missing(sub, folder)
        if reason is not None:
            skipped[sub.name] = reason
            continue
        items = _items_missing(sub, missing_pixels)
        written.append((sub, items is None))
        if items is not None:
            skipped[sub.name] = "qrels only: " + items
    return written, skipped


def _qrels_missing(sub: Subset, folder: Path) -> str | None:
    if not is_built_folder(folder, "positives"):
        return "no positives config"
    relation = REGISTRY.get(sub.benchmark).task(sub.direction).relation
    if (relation in RATING_RELATIONS or sub.grading) and not is_built_folder(folder, "cxc_ratings"):
        return "needs the CxC ratings (the cxc_ratings config: build with the CxC CSVs)"
    return None


def _items_missing(sub: Subset, missing_pixels: dict[str, tuple[int, int]]) -> str | None:
    for kind in dict.fromkeys(sub.kinds):
        config = ITEM_CONFIG[kind]
        if config not in missing_pixels:
            return f"no {kind}s config (it needs the COCO {'captions JSON' if kind == 'caption' else 'images'})"
        missing, rows = missing_pixels[config]
        if missing:
            return (
                f"{missing:,} of the {rows:,} images have no pixels (MTEB's image pipeline needs every image): "
                "build with --download or a source folder (or val2014.zip) holding every test image"
            )
    return None


def summary(skipped: dict[str, str]) -> list[str]:
    """Log lines of a build: how many MTEB subsets are complete, which, and why the others are not (with the fix)."""
    names = [sub.name for sub in subsets()]
    complete = [name for name in names if name not in skipped]
    lines = [
        f"MTEB subsets complete: {len(complete)} of {len(names)}" + (f" ({', '.join(complete)})" if complete else "")
    ]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for name, reason in skipped.items():
        by_reason[reason].append(name)
    for reason, group in by_reason.items():
        shown = ", ".join(group[:3]) + (f" and {len(group) - 3} more" if len(group) > 3 else "")
        lines.append(f"  not complete, {shown}: {reason}")
    return lines


def card_section(infos: dict[str, dict], skipped: dict[str, str], repo: str) -> str:
    """The card's MTEB / BEIR section: the one-line MTEB use, the subsets written and the ones not written."""
    written = [name.removesuffix("-corpus") for name in infos if name.endswith("-corpus")]
    rows = [f"| `{name}` | {infos[name + '-qrels']['rows']:,} |" for name in written]
    by_reason: dict[str, list[str]] = defaultdict(list)
    for name, reason in skipped.items():
        by_reason[reason].append(f"`{name}`")
    not_written = [f"- {', '.join(names)}: {reason}." for reason, names in by_reason.items()]
    absent_by: dict[str, list[str]] = defaultdict(list)
    for bench in REGISTRY:
        if not_offered(bench):
            absent_by[not_offered(bench)].append(f"`{bench.name}`")  # type: ignore[index]
    absent = [f"- {', '.join(names)}: {reason}." for reason, names in absent_by.items()]
    return MTEB_SECTION.format(
        repo=repo,
        written="\n".join(["| subset | qrels rows |", "|---|---|", *rows]) if rows else "None in this build.",
        not_written="\n".join(not_written) or "- none: every subset is complete.",
        absent="\n".join(absent),
    )


MTEB_SECTION = """\
## MTEB / BEIR layout

```python
import mteb
from eccv_caption_dataset.mteb import tasks  # pip install "eccv-caption-hf[mteb]"

model = mteb.get_model("mteb/baseline-random-encoder")  # a weight-free stand-in: put your model here
# every task this dataset has; pin it with revision="<commit sha>", pick some with names=[...];
# overwrite_strategy="always": run (and write predictions/) even when MTEB's results cache has the task
results = mteb.evaluate(model, tasks=tasks("{repo}"), prediction_folder="predictions", overwrite_strategy="always")
```

Every benchmark direction is a *subset* `<benchmark>-<direction>` with the three
configs mteb 2.x's retrieval loader reads by name: `<subset>-corpus`,
`<subset>-queries` (columns `id`, `modality`, `text`, `image`) and `<subset>-qrels`
(`query-id`, `corpus-id`, integer `score`), split `test`. Ids carry their modality
(`image-391895`, `caption-770337`). Corpus and queries configs are aliases of the
same item files (`data/beir-images/`, `data/beir-captions/`: one file per COCO 1K
fold), so nothing is stored twice; `datasets` still caches each config it loads
on its own. `eccv_caption_dataset.mteb.tasks` gives one MTEB task per benchmark
direction (`AbsTaskRetrieval`, category `i2t` / `t2i` / `t2t` / `i2i`, queries left
out of their own results in `t2t` / `i2i`); the COCO 1K task holds the five folds
(`coco_1k_fold<f>-<direction>`: each query ranked against its fold), and its mean
over the folds is COCO 1K R@K.

- MTEB's `hit_rate_at_k` is R@K here (trec_eval's `success_K`; MTEB's
  `recall_at_k` is IR recall). MTEB orders equal scores by document id
  descending as strings (trec_eval's rule); this project keeps the given order,
  so duplicate captions with identical embeddings can move R@K slightly.
- mAP@R, R-Precision, PMRP and MedR from the same run: `eccv-caption evaluate
  --run predictions/<task>_predictions.json --metrics eccv_map_at_r eccv_rprecision`
  (MTEB saves the top `max(k_values)` documents of each query: keep 100, the
  default, for ECCV mAP@R (R <= 48) and PMRP (R capped at 50); it saves them only
  when the task runs: a result already in MTEB's cache is returned without
  running unless `overwrite_strategy="always"`).
- Qrels scores are 1 (every benchmark is binary); `cxc_graded` gives the CxC
  pairs their SITS rating rounded half up (3-5), which only nDCG reads. The same
  grades are `eccv-caption export-trec --qrels cxc_graded`.

Subsets in this build:

{written}

Not complete here (`qrels only`: the `<subset>-qrels` config is written, its corpus and queries are not):

{not_written}

Benchmarks without a subset:

{absent}
"""
