"""The ECCV Caption paper's results as a leaderboard, with a user's models merged in.

The paper's figures (Chun et al., ECCV 2022, arXiv 2204.03359v5: appendix
Tables D.2/D.3 per direction, Table 4 of i2t/t2i averages) ship with the
package as two cited CSVs in ``eccv_metric/data`` (``eccv_caption_paper_results.csv``
and ``eccv_caption_paper_table4.csv``, ``#`` lines = citation); another folder
with the same two files can be given (``--paper-dir`` or
``ECCV_CAPTION_PAPER_DIR``). Values are percent.

The correlation table follows the paper: Table 4's values where it has the
metric (its PMRP column is what the paper correlated, though it disagrees with
the appendix for 11 models), appendix i2t/t2i averages for COCO R@5/R@10.
RSUM = sum of COCO 1K R@1/5/10 over both directions.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path

from eccv_metric.core.errors import EvaluationError

CORRELATE_METRICS = [
    "eccv_map_at_r",
    "eccv_rprecision",
    "eccv_r1",
    "cxc_r1",
    "coco_1k_r1",
    "coco_1k_r5",
    "coco_1k_r10",
    "coco_5k_r1",
    "coco_5k_r5",
    "coco_5k_r10",
    "pmrp",
    "rsum",
]
LABELS = {
    "eccv_map_at_r": "mAP@R",
    "eccv_rprecision": "R-P",
    "eccv_r1": "ECCV R@1",
    "cxc_r1": "CxC R@1",
    "coco_1k_r1": "1K R@1",
    "coco_1k_r5": "1K R@5",
    "coco_1k_r10": "1K R@10",
    "coco_5k_r1": "5K R@1",
    "coco_5k_r5": "5K R@5",
    "coco_5k_r10": "5K R@10",
    "pmrp": "PMRP",
    "rsum": "RSUM",
}
RESULTS_CSV = "eccv_caption_paper_results.csv"
TABLE4_CSV = "eccv_caption_paper_table4.csv"

Table = dict[str, dict[str, float]]


PAPER_CITATION = (
    "Chun, Kim, Park, Chang, Oh. ECCV Caption: Correcting False Negatives by Collecting Machine-and-Human-verified "
    "Image-Caption Associations for MS-COCO. ECCV 2022. arXiv:2204.03359v5, Table 4 and Tables D.2/D.3."
)
SHIPPED = Path(__file__).resolve().parents[1] / "data"


def paper_dir(path: str | Path | None = None) -> Path:
    """The folder of the paper's two CSVs: ``path``, else ``$ECCV_CAPTION_PAPER_DIR``, else the shipped copy."""
    given = path or os.environ.get("ECCV_CAPTION_PAPER_DIR")
    folder = Path(given) if given else SHIPPED
    for name in (RESULTS_CSV, TABLE4_CSV):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} is missing")
    return folder


def csv_rows(path: Path) -> csv.DictReader:
    with open(path, newline="") as fin:
        lines = [line for line in fin if not line.startswith("#")]
    return csv.DictReader(lines)


def per_direction(folder: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{model: {metric: {'i2t': x, 't2i': y}}}`` from the appendix tables."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in csv_rows(folder / RESULTS_CSV):
        by_metric = out.setdefault(row["model"], {})
        for key, value in row.items():
            if key not in ("model", "group", "direction") and value not in ("", None):
                by_metric.setdefault(key, {})[row["direction"]] = float(value)
    return out


def averages(results: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """i2t/t2i averages of one model's ``{metric: {direction: value}}``, plus RSUM when possible."""
    out = {m: (v["i2t"] + v["t2i"]) / 2 for m, v in results.items() if "i2t" in v and "t2i" in v}
    r1k = [results.get(f"coco_1k_r{k}", {}) for k in (1, 5, 10)]
    if all("i2t" in r and "t2i" in r for r in r1k):
        out["rsum"] = sum(r["i2t"] + r["t2i"] for r in r1k)
    return out


def paper_table(folder: Path) -> Table:
    """The models x metrics table the paper correlated (see the module docstring)."""
    table = {model: averages(res) for model, res in per_direction(folder).items()}
    for row in csv_rows(folder / TABLE4_CSV):
        entry = table.setdefault(row["model"], {})
        entry.update({k: float(v) for k, v in row.items() if k != "model" and v not in ("", None)})
    return table


def from_results(results: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """A user's ``compute_all_metrics`` output (fractions) as leaderboard percent averages."""
    scaled = {m: {d: 100 * float(v) for d, v in by.items()} for m, by in results.items()}
    return averages(scaled)


def merge(table: Table, extra: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Table:
    """The paper's table with the user's models added; a user name already in ``table`` is refused (see
    :func:`eccv_metric.analysis.results_files.user_names`), never merged with or put in place of the paper's row."""
    merged = dict(table)
    for name, results in extra.items():
        if name in merged:
            raise EvaluationError(f"{name!r} is already on the leaderboard: give your model another name")
        merged[name] = from_results(results)
    return merged


def ranks(table: Table, model: str) -> dict[str, int]:
    """1-based rank of ``model`` under each metric (higher is better)."""
    out = {}
    for metric, value in table[model].items():
        others = [row[metric] for row in table.values() if metric in row]
        out[metric] = 1 + sum(v > value for v in others)
    return out
