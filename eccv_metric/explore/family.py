"""Which benchmarks mark a view's items, from the one ground truth the engine reads.

A benchmark's direction ranks its queries against a gallery (a :class:`~eccv_metric.core.view.View`); every
benchmark of the family that ranks the **same** view (same collection, direction, gallery restriction and
self-exclusion) judges the same list: on the 5K split's image-caption view, COCO 5K (the original pairs), ECCV
Caption (machine-and-human-verified pairs, ECCV Caption section 3), CxC (SITS >= 3, Parekh et al. section 3) and
PMRP's Plausible Match (ECCV Caption section 4.1). Their positives are the relations
:class:`~eccv_metric.benchmarks.resources.Resources` builds for the engine (no copy): a benchmark whose ground
truth cannot be loaded (PM without COCO categories) is left out with its reason, never marked.

A pair's CxC rating (SITS for image-caption pairs, STS / SIS for caption-caption / image-image pairs, 0 to 5) is
read from the same ratings the CxC benchmarks read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import CORRELATION
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import View
from eccv_metric.groundtruth.cxc import Ratings

# the benchmarks a view is marked with, in this order, where they rank the same view as the one browsed
MARKED = ("coco_5k", "eccv", "cxc", "pm", "coco_t2t", "cxc_t2t", "cxc_i2i")
RATING_KIND = {"i2t": "sits", "t2i": "sits", "t2t": "sts", "i2i": "sis"}
SHORT = {"coco_5k": "COCO", "eccv": "ECCV", "cxc": "CxC", "pm": "PM", "coco_t2t": "COCO", "cxc_t2t": "CxC"}


@dataclass(frozen=True)
class Member:
    """One benchmark marking a view: its relation in the view's direction (None: unavailable, ``why``)."""

    name: str
    title: str
    short: str
    relation: object | None
    why: str | None
    r1: str  # its R@1 metric name

    @property
    def available(self) -> bool:
        return self.relation is not None


def browsable(name: str, direction: str) -> Benchmark:
    """The benchmark ``name``, checked to rank items in ``direction`` (a correlation ranks none)."""
    if name not in REGISTRY:
        raise EvaluationError(f"unknown benchmark {name!r}; known: {', '.join(REGISTRY.names())}")
    bench = REGISTRY.get(name)
    if CORRELATION in bench.kinds:
        raise EvaluationError(f"{name} is a correlation of rated pairs: it ranks no items to look at")
    task = bench.task(direction)
    if not isinstance(task.relation, str):
        parts = ", ".join(task.relation)
        raise EvaluationError(f"{name} averages several relations ({parts}): browse one of their benchmarks")
    return bench


def family(bench: Benchmark, direction: str, resources: Resources) -> list[Member]:
    """The browsed benchmark, then each of :data:`MARKED` that ranks the same view (see the module docstring)."""
    view = resources.view(bench, bench.task(direction))
    names = [bench.name] + [n for n in MARKED if n != bench.name]
    out = []
    for name in names:
        other = REGISTRY.get(name)
        if other.collection != bench.collection or direction not in other.directions:
            continue
        task = other.task(direction)
        if not isinstance(task.relation, str):
            continue
        try:
            if name != bench.name and resources.view(other, task) is not view:
                continue
            relation, why = resources.relation(other, task.relation, direction), None
        except (EvaluationError, OSError) as exc:
            if name == bench.name:
                raise
            relation, why = None, str(exc)
        short = SHORT.get(name, other.title)
        out.append(Member(name, other.title, short, relation, why, other.metric_name("recall", 1)))
    return out


class PairRatings:
    """The CxC ratings of a view's (query, item) pairs, looked up vectorised (NaN: not rated)."""

    def __init__(self, ratings: Ratings, view: View):
        self.kind = ratings.kind
        queries, gallery = view.queries, view.gallery
        if self.kind == "sits":  # id_1: a caption, id_2: an image
            captions, images = (queries, gallery) if view.query_kind == "caption" else (gallery, queries)
            first, second = captions.positions(ratings.id_1), images.positions(ratings.id_2)
            self.caption_first = view.query_kind == "caption"
        else:
            first, second = queries.positions(ratings.id_1), queries.positions(ratings.id_2)
            self.caption_first = True
        keep = (first >= 0) & (second >= 0)
        keys = first[keep].astype(np.int64) << 32 | second[keep].astype(np.int64)
        order = np.argsort(keys, kind="stable")
        self.keys, self.scores = keys[order], ratings.score[keep][order].astype(np.float64)
        self.undirected = self.kind != "sits"

    def lookup(self, queries: np.ndarray, items: np.ndarray) -> np.ndarray:
        """The rating of each (dense query, dense item) pair (broadcast; NaN: not rated, or an item < 0)."""
        q, g = np.broadcast_arrays(np.asarray(queries, np.int64), np.asarray(items, np.int64))
        first, second = (q, g) if self.caption_first else (g, q)
        out = self._find(first, second)
        if self.undirected:
            out = np.where(np.isnan(out), self._find(second, first), out)
        return np.where(g >= 0, out, np.nan)

    def _find(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        probe = np.maximum(first, 0) << 32 | np.maximum(second, 0)
        if not len(self.keys):
            return np.full(probe.shape, np.nan)
        pos = np.minimum(np.searchsorted(self.keys, probe), len(self.keys) - 1)
        return np.where(self.keys[pos] == probe, self.scores[pos], np.nan)


def pair_ratings(bench: Benchmark, view: View, resources: Resources) -> tuple[PairRatings | None, str | None]:
    """The CxC ratings of the view's pairs, or (None, why) when they cannot be read; (None, None) off the 5K
    split (CxC rates its items only)."""
    if bench.collection != "coco_5k":
        return None, None
    try:
        return PairRatings(resources.ratings(RATING_KIND[view.direction]), view), None
    except (EvaluationError, OSError) as exc:
        return None, f"CxC ratings not read: {exc}"
