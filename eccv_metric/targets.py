"""Parsing of the official ``target_metrics`` / ``Ks`` arguments."""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from eccv_metric.errors import EvaluationError

RECALL_SETS = ("coco_1k", "coco_5k", "cxc", "eccv")
DEFAULT_TARGETS = ("coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r")
ALL_TARGETS = (
    "coco_1k_recalls",
    "coco_5k_recalls",
    "cxc_recalls",
    "eccv_recalls",
    "eccv_map_at_r",
    "eccv_rprecision",
    "pmrp",
)
# what a form offers (the Space): the defaults first, then the other official names
CHOICES = tuple(dict.fromkeys(DEFAULT_TARGETS + ALL_TARGETS))
TASK_SETS = ("cxc_t2t", "cxc_i2i")  # CxC intramodal retrieval (embeddings or score matrices)
CORRELATIONS = ("sts", "sis", "sits")  # cxc_<kind>_spearman: bootstrap correlation with the CxC ratings
EXTRA_TARGETS = (
    "cxc_t2t_recalls",
    "cxc_i2i_recalls",
    "cxc_sts_spearman",
    "cxc_sis_spearman",
    "cxc_sits_spearman",
)
_TASK = re.compile(r"^(cxc_t2t|cxc_i2i)_(?:r([1-9][0-9]*)|(recalls)|(medr|meanr))$")
_CORR = re.compile(r"^cxc_(sts|sis|sits)_spearman$")
_RANK = re.compile(r"^(coco_1k|coco_5k|cxc|eccv)_(medr|meanr)$")
_RK = re.compile(r"^(coco_1k|coco_5k|cxc|eccv)_r([1-9][0-9]*)$")


@dataclass(frozen=True)
class Request:
    """Which metrics to compute: R@K per recall set, ECCV mAP@R / R-P, PMRP."""

    recalls: dict[str, tuple[int, ...]]
    map_at_r: bool = False
    rprecision: bool = False
    pmrp: bool = False
    rank_stats: tuple[tuple[str, str], ...] = ()  # (recall set, "medr" | "meanr")
    tasks: dict[str, tuple[int, ...]] = field(default_factory=dict)  # intramodal task -> Ks
    task_stats: tuple[tuple[str, str], ...] = ()  # (intramodal task, "medr" | "meanr")
    correlations: tuple[str, ...] = ()  # CxC rating kinds

    @property
    def cross_modal(self) -> bool:
        """Whether an image-caption (i2t / t2i) metric is requested."""
        return bool(self.recalls or self.map_at_r or self.rprecision or self.pmrp or self.rank_stats)

    def intramodal_names(self) -> list[str]:
        """Output keys of the intramodal tasks and correlations (each ``_spearman`` with its ``_std``)."""
        out = [f"{t}_r{k}" for t in TASK_SETS for k in self.tasks.get(t, ())]
        out += [f"{t}_{stat}" for t, stat in self.task_stats]
        return out + [f"cxc_{c}_spearman{s}" for c in self.correlations for s in ("", "_std")]

    def names(self) -> list[str]:
        """Output keys, in the official order."""
        out = [f"{s}_r{k}" for s in RECALL_SETS[:3] for k in self.recalls.get(s, ())]
        out += ["pmrp"] * self.pmrp
        out += ["eccv_map_at_r"] * self.map_at_r + ["eccv_rprecision"] * self.rprecision
        out += [f"eccv_r{k}" for k in self.recalls.get("eccv", ())]
        return out + [f"{s}_{stat}" for s, stat in self.rank_stats]


def is_rank_stat(name: str) -> bool:
    """MedR / MeanR are ranks (lower is better), reported as is; every other metric is a fraction."""
    return bool(_RANK.match(name)) or name.startswith(TASK_SETS) and name.endswith(("_medr", "_meanr"))


def parse_targets(target_metrics: Iterable[str] | str, ks: Iterable[int] = (1, 5, 10)) -> Request:
    """Accept the official names (``coco_1k_recalls``, ``eccv_r1``, ``pmrp``...) and ``{set}_r{K}`` for any K.

    ``{set}_recalls`` expands to R@K for every K in ``ks``. Unknown names raise
    (the official package silently ignores them).
    """
    if isinstance(target_metrics, str):
        names = [target_metrics]
    elif isinstance(target_metrics, Iterable) and not isinstance(target_metrics, Mapping):
        names = list(target_metrics)
    else:
        raise EvaluationError(
            f"target_metrics must be a metric name or a list of names, not {type(target_metrics).__name__}"
        )
    ks = _parse_ks(ks)
    recalls: dict[str, set[int]] = {}
    flags = {"eccv_map_at_r": False, "eccv_rprecision": False, "pmrp": False}
    stats: set[tuple[str, str]] = set()
    tasks: dict[str, set[int]] = {}
    task_stats: set[tuple[str, str]] = set()
    correlations: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise EvaluationError(f"target metric names must be strings, not {name!r}")
        match = _RK.match(name)
        rank = _RANK.match(name)
        task = _TASK.match(name) if isinstance(name, str) else None
        corr = _CORR.match(name) if isinstance(name, str) else None
        if task:
            if task.group(4):
                task_stats.add((task.group(1), task.group(4)))
            elif task.group(3) and not ks:
                raise EvaluationError(f"{name} needs at least one K: Ks is empty")
            else:
                tasks.setdefault(task.group(1), set()).update(ks if task.group(3) else (int(task.group(2)),))
        elif corr:
            correlations.add(corr.group(1))
        elif rank:
            stats.add((rank.group(1), rank.group(2)))
        elif name in flags:
            flags[name] = True
        elif name.endswith("_recalls") and name[: -len("_recalls")] in RECALL_SETS:
            if not ks:
                raise EvaluationError(f"{name} needs at least one K: Ks is empty")
            recalls.setdefault(name[: -len("_recalls")], set()).update(ks)
        elif match:
            recalls.setdefault(match.group(1), set()).add(int(match.group(2)))
        else:
            raise EvaluationError(
                f"unknown target metric {name!r}; valid: {', '.join(ALL_TARGETS + EXTRA_TARGETS)} and "
                "{coco_1k,coco_5k,cxc,eccv,cxc_t2t,cxc_i2i}_r<K> (e.g. coco_5k_r1), "
                "{coco_1k,coco_5k,cxc,eccv,cxc_t2t,cxc_i2i}_{medr,meanr}"
            )
    if not names:
        raise EvaluationError("target_metrics is empty")
    return Request(
        {s: tuple(sorted(recalls[s])) for s in RECALL_SETS if s in recalls},
        flags["eccv_map_at_r"],
        flags["eccv_rprecision"],
        flags["pmrp"],
        tuple(sorted(stats, key=lambda x: (RECALL_SETS.index(x[0]), x[1] != "medr"))),
        {t: tuple(sorted(tasks[t])) for t in TASK_SETS if t in tasks},
        tuple(sorted(task_stats, key=lambda x: (TASK_SETS.index(x[0]), x[1] != "medr"))),
        tuple(c for c in CORRELATIONS if c in correlations),
    )


def _parse_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """Ks: an int (Python or numpy) or an iterable of them, each >= 1 (bools, floats and strings refused)."""
    if hasattr(ks, "__index__") and not isinstance(ks, bool) and getattr(ks, "ndim", 0) == 0:
        ks = (ks,)  # type: ignore[assignment]
    if isinstance(ks, (str, bytes, Mapping)) or not isinstance(ks, Iterable):
        raise EvaluationError(f"Ks must be a positive integer or a list of them, not {ks!r:.40}")
    out = []
    for k in ks:
        if isinstance(k, (bool, np.bool_)) or not hasattr(k, "__index__") or getattr(k, "ndim", 0) or int(k) < 1:
            raise EvaluationError(f"Ks must be positive integers, not {k!r:.40}")
        out.append(int(k))
    return tuple(sorted(set(out)))
