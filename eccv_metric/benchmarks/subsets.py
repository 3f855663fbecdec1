"""Dataset subsets of the benchmarks, as MTEB 2.x and BEIR-style harnesses name them, derived from the registry.

A *subset* is one benchmark direction over the 5K split's items, laid out in a
built dataset as three configs that mteb 2.x's retrieval loader reads by name
(``RetrievalDatasetLoader``: ``<subset>-corpus``, ``<subset>-queries``,
``<subset>-qrels``, split ``test``):

- ``<benchmark>-<direction>`` for every retrieval benchmark of the 5K split
  (``eccv-t2i``, ``coco_5k-i2t``, ``cxc-t2i``, ``cxc_extended-i2t``,
  ``cxc_t2t-t2t``, ``coco_t2t-t2t``, ``cxc_i2i-i2i``);
- ``coco_1k_fold<f>-<direction>`` (f = 0..4): COCO 1K ranks each query
  against its own fold, so each fold is a subset with its own corpus; the
  COCO 1K mean is the mean of the five folds' means (equal query counts);
- ``cxc_graded-<direction>``: the ``cxc`` positives with the SITS rating
  rounded half up (3, 4 or 5) as the qrels ``score`` (nDCG gains); every other
  subset's qrels are binary (1), as the benchmarks are.

Benchmarks without a subset, and why, are in :func:`not_offered`. Ids in every
layout carry their modality: ``image-<COCO image id>``, ``caption-<COCO caption id>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.core.errors import EvaluationError
from eccv_metric.groundtruth.split import N_FOLDS

COLLECTION = "coco_5k"
# graded variants: subset prefix -> (the benchmark whose positives it grades, the rating used as the score)
GRADED = {"cxc_graded": ("cxc", "sits")}


@dataclass(frozen=True)
class Subset:
    """One benchmark direction as a dataset subset (see the module docstring)."""

    name: str
    benchmark: str
    direction: str
    fold: int | None = None
    grading: str | None = None  # "sits": qrels score = the SITS rating rounded half up; None: binary

    @property
    def group(self) -> str:
        """What one MTEB task holds: the subset without its fold (``coco_1k-t2i``)."""
        prefix = self.name.rsplit("-", 1)[0]
        return (prefix.rsplit("_fold", 1)[0] if self.fold is not None else prefix) + "-" + self.direction

    @property
    def exclude_self(self) -> bool:
        return REGISTRY.get(self.benchmark).task(self.direction).exclude_self

    @property
    def kinds(self) -> tuple[str, str]:
        """(query modality, corpus modality): ``image`` / ``caption``."""
        return ("image" if self.direction[0] == "i" else "caption", "image" if self.direction[-1] == "i" else "caption")


def not_offered(bench: Benchmark) -> str | None:
    """Why a benchmark has no subset (None: it has)."""
    relations = {
        r for task in bench.tasks for r in ((task.relation,) if isinstance(task.relation, str) else task.relation)
    }
    if any(r.startswith("pm") for r in relations):
        return (
            "PM positives are ~10M pairs a direction: save MTEB predictions (top >= 50) and score PMRP with "
            "`eccv-caption evaluate --run <predictions.json>`"
        )
    if "recall" not in bench.kinds:
        return "a correlation with graded ratings, not a retrieval task"
    if bench.collection != COLLECTION:
        return (
            "the layout covers the 5K split's items; FG galleries hold unlabeled2017 / Flickr30K images the "
            "builder does not embed (no pixels for MTEB's image pipeline)"
        )
    unknown = {t.restriction for t in bench.tasks} - {None, "coco_1k_folds"}
    if unknown:
        return f"restricted galleries ({', '.join(sorted(unknown))}) have no subset"
    return None


def subsets() -> list[Subset]:
    """Every subset, in registry order (graded variants after their benchmark)."""
    out = []
    for bench in REGISTRY:
        if not_offered(bench) is not None:
            continue
        for task in bench.tasks:
            if task.restriction == "coco_1k_folds":
                out += [
                    Subset(f"{bench.name}_fold{f}-{task.direction}", bench.name, task.direction, f)
                    for f in range(N_FOLDS)
                ]
            else:
                out.append(Subset(f"{bench.name}-{task.direction}", bench.name, task.direction))
        for prefix, (base, grading) in GRADED.items():
            if base == bench.name:
                out += [
                    Subset(f"{prefix}-{t.direction}", bench.name, t.direction, grading=grading) for t in bench.tasks
                ]
    return out


def subset(name: str) -> Subset:
    """The subset of this name; an error lists the known ones."""
    for sub in subsets():
        if sub.name == name:
            return sub
    raise EvaluationError(
        f"unknown subset {name!r}; subsets are <benchmark>-<direction>, e.g. eccv-t2i, coco_1k_fold0-i2t"
    )
