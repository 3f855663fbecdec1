"""The benchmark's tasks on the Hub: what a built dataset's ``eval.yaml`` registers, and how a number is written.

The Hub's eval-results system (hub docs, "Evaluation Results" and its "Registering a Benchmark" /
"Eval.yaml specification" sections): a benchmark dataset holds ``eval.yaml`` at its root (``name``,
``description``, ``tasks[]`` of ``id`` with optional ``config`` and ``split``); a model repo holds
``.eval_results/*.yaml`` files whose entries name ``dataset.id`` and ``dataset.task_id`` (a task of that
``eval.yaml``) with a ``value``. Each task is its own leaderboard.

One task per headline number and direction, its id ``<metric>_<direction>`` (``eccv_map_at_r_i2t``): the
metric is a registry name, so ``eval.yaml`` names config, split and metric (the spec has no field for the
metric: the id carries it). Units follow the dataset card: fractions (R@K, mAP@R, R-Precision, PMRP) in
percent, the CxC correlations as Spearman's rho. A percent value is the results file's fraction shifted two
decimal places (``0.3251`` -> ``32.51``, never ``32.510000000000005``).

``evaluation_framework: mteb``. The spec ("Eval.yaml specification") lists the field among those ``eval.yaml``
holds (its minimal example, "required fields only", has it) and takes one identifier of the Hub's list
(huggingface.js ``packages/tasks/src/eval.ts``, :data:`EVALUATION_FRAMEWORKS`), exactly one per benchmark. This
package is not on the list; MTEB is ("Multimodal toolbox for evaluating embeddings and retrieval systems"), and
the build is an MTEB 2.x dataset as it is: ``eccv_caption_dataset.mteb.tasks`` runs every retrieval direction
with mteb's own loader, its ``hit_rate_at_k`` equals R@K here (tests/integration/test_mteb.py), and MTEB's
predictions score every metric (``evaluate --run``) and publish (``push-results``). Off the list, the value
would be refused or flagged by the Hub until a one-line pull request to huggingface.js lands (how 25 one-benchmark
frameworks got there); :data:`FRAMEWORK` is the one place to change if the project registers its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

import yaml

from eccv_metric.benchmarks.names import metric_info

# the headline numbers, in the order the benchmark's leaderboards are listed (the first is the default one)
HEADLINES = {
    "eccv_map_at_r": "ECCV Caption mAP@R",
    "eccv_rprecision": "ECCV Caption R-Precision",
    "eccv_r1": "ECCV Caption R@1",
    "coco_5k_r1": "COCO 5K R@1",
    "coco_1k_r1": "COCO 1K R@1",
    "cxc_r1": "CxC R@1",
    "pmrp": "PMRP",
    "mscoco_fg_r1": "MSCOCO-FG R@1",
    "flickr30k_fg_r1": "Flickr30K-FG R@1",
    "cxc_sts_spearman": "CxC STS Spearman's rho",
    "cxc_sis_spearman": "CxC SIS Spearman's rho",
    "cxc_sits_spearman": "CxC SITS Spearman's rho",
}
SPLIT = "test"  # every config of the build has one split
# huggingface.js packages/tasks/src/eval.ts EVALUATION_FRAMEWORKS at fe42e68 (2026-08-21): eval.yaml's
# evaluation_framework is one of these
EVALUATION_FRAMEWORKS = (
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "ifstruct", "pier", "redline-bench",
    "archipelago", "benchflow", "apex-evals", "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator",
    "yc-bench", "open-asr-leaderboard", "mdpbench", "real5-omnidocbench", "parsebench", "video-mme-v2", "claw-eval",
    "researchclawbench", "pbench", "wildclawbench", "wbench", "nanofold", "mmmu", "extractbench",
)  # fmt: skip
FRAMEWORK = "mteb"  # see the module docstring
DIRECTIONS = {"i2t": "image-to-text", "t2i": "text-to-image", "t2t": "text-to-text", "i2i": "image-to-image"}
UNITS = {"fraction": "percent (0-100)", "correlation": "Spearman's rho (-1 to 1)"}
NAME = "ECCV Caption"
DESCRIPTION = (
    "Image-text retrieval on the COCO Karpathy 5K test split with ECCV Caption's machine-and-human-verified "
    "positives (Chun et al., ECCV 2022, arXiv:2204.03359), beside COCO 1K/5K, CxC, PMRP, MSCOCO-FG / "
    "Flickr30K-FG and the CxC correlations. One task per metric and direction, id <metric>_<direction> "
    "(i2t: image-to-text, t2i: text-to-image); values in percent (0-100), the CxC correlations as Spearman's "
    "rho (-1 to 1). Scored by the eccv-caption-hf package: `eccv-caption evaluate --model ... -o results.json`, "
    "published with `eccv-caption push-results results.json`."
)


@dataclass(frozen=True)
class HubTask:
    """One task of ``eval.yaml``: a metric in one direction, the config and split it is scored on, and what
    the build must hold for it (``needs``: configs, or ``pm`` for the COCO categories of the PM positives)."""

    metric: str
    direction: str
    config: str
    scale: str
    label: str
    needs: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.metric}_{self.direction}"

    @property
    def unit(self) -> str:
        return UNITS[self.scale]

    @property
    def title(self) -> str:
        return f"{self.label}, {DIRECTIONS[self.direction]}"


def _tasks() -> tuple[HubTask, ...]:
    out = []
    for metric, label in HEADLINES.items():
        bench, kind = metric_info(metric)
        config = bench.configs[0]
        needs = (config, config.replace("_captions", "_gallery")) if config.endswith("_captions") else (config,)
        if kind.key == "capped_rprecision":  # PM positives need the COCO categories
            needs += ("pm",)
        out += [HubTask(metric, d, config, kind.scale, label, needs) for d in bench.directions]
    return tuple(out)


TASKS = _tasks()
BY_ID = {task.id: task for task in TASKS}


def task_of(metric: str, direction: str) -> HubTask | None:
    """The task a result is published under, or None when the metric and direction are not a task."""
    return BY_ID.get(f"{metric}_{direction}")


def registered(built: Iterable[str], skipped: Iterable[str] = ()) -> list[HubTask]:
    """The tasks a build registers: those whose configs it wrote (and, for PMRP, whose categories it had)."""
    have, lacking = set(built), set(skipped)
    return [t for t in TASKS if all(n in have or (n == "pm" and n not in lacking) for n in t.needs)]


def eval_yaml(tasks: Iterable[HubTask], framework: str = FRAMEWORK) -> str:
    """``eval.yaml``: name, description, evaluation framework and the tasks (id, config, split), as the Hub's spec
    lists them; a framework off the Hub's list is refused here, before anything is written or sent."""
    if framework not in EVALUATION_FRAMEWORKS:
        raise ValueError(
            f"evaluation_framework {framework!r} is not on the Hub's list (huggingface.js eval.ts: "
            f"{', '.join(EVALUATION_FRAMEWORKS[:4])}, ...): the Hub would refuse eval.yaml; use one of the list"
        )
    body = {
        "name": NAME,
        "description": DESCRIPTION,
        "evaluation_framework": framework,
        "tasks": [{"id": t.id, "config": t.config, "split": SPLIT} for t in tasks],
    }
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)


def task_ids(text: str) -> list[str]:
    """The task ids of an ``eval.yaml`` text (ValueError when it is not one)."""
    data = yaml.safe_load(text)
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and isinstance(t.get("id"), str) for t in tasks):
        raise ValueError("no tasks[] list of ids")
    return [t["id"] for t in tasks]


def shown(task: HubTask, value: float) -> float:
    """The value a task publishes: a fraction in percent (shifted in decimal: exact), a correlation as it is."""
    return float(Decimal(repr(float(value))).scaleb(2)) if task.scale == "fraction" else float(value)


def value_problem(task: HubTask, value: object) -> str | None:
    """Why a published value (the task's unit: percent or rho) cannot be one of the task's numbers; None: it can."""
    low, high = (0.0, 100.0) if task.scale == "fraction" else (-1.0, 1.0)
    if type(value) not in (int, float):
        return f"{value!r:.30} is not a number"
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    if not low <= value <= high:
        return f"{value:g} is outside [{low:g}, {high:g}] ({task.unit})"
    return None


def read_back(task: HubTask, value: float) -> float:
    """A published value as the results file holds it: percent back to a fraction (the inverse shift)."""
    return float(Decimal(repr(float(value))).scaleb(-2)) if task.scale == "fraction" else float(value)
