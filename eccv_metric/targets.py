"""Parsing of the official ``target_metrics`` / ``Ks`` arguments."""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass

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

    def names(self) -> list[str]:
        """Output keys, in the official order."""
        out = [f"{s}_r{k}" for s in RECALL_SETS[:3] for k in self.recalls.get(s, ())]
        out += ["pmrp"] * self.pmrp
        out += ["eccv_map_at_r"] * self.map_at_r + ["eccv_rprecision"] * self.rprecision
        out += [f"eccv_r{k}" for k in self.recalls.get("eccv", ())]
        return out + [f"{s}_{stat}" for s, stat in self.rank_stats]


def is_rank_stat(name: str) -> bool:
    """MedR / MeanR are ranks (lower is better), reported as is; every other metric is a fraction."""
    return bool(_RANK.match(name))


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
    for name in names:
        if not isinstance(name, str):
            raise EvaluationError(f"target metric names must be strings, not {name!r}")
        match = _RK.match(name)
        rank = _RANK.match(name)
        if rank:
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
                f"unknown target metric {name!r}; valid: {', '.join(ALL_TARGETS)} and "
                "{coco_1k,coco_5k,cxc,eccv}_r<K> (e.g. coco_5k_r1), {coco_1k,coco_5k,cxc,eccv}_{medr,meanr}"
            )
    if not names:
        raise EvaluationError("target_metrics is empty")
    return Request(
        {s: tuple(sorted(recalls[s])) for s in RECALL_SETS if s in recalls},
        flags["eccv_map_at_r"],
        flags["eccv_rprecision"],
        flags["pmrp"],
        tuple(sorted(stats, key=lambda x: (RECALL_SETS.index(x[0]), x[1] != "medr"))),
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
