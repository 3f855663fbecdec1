"""Every relation (positives) and restriction (gallery grouping) of the package, as named registry entries.

A benchmark's task names them; the registry checks the names when it is built, and
:class:`~eccv_metric.benchmarks.resources.Resources` calls them (once per collection, relation and
direction). Adding a relation is adding an entry here, not a branch in ``Resources``.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.benchmarks.registry import Loaded
from eccv_metric.benchmarks.registry import Relation
from eccv_metric.benchmarks.registry import Restriction
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.positives import Positives
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.groundtruth.cxc import co_caption_positives
from eccv_metric.groundtruth.cxc import intramodal_positives
from eccv_metric.groundtruth.fg import FineGrained

SPLIT = ("coco_5k",)
FG = ("mscoco_fg", "flickr30k_fg")


def _listed(name: str) -> Relation:
    """The split's own positive lists (the wheel's or a built dataset's)."""
    return Relation(name, SPLIT, lambda loaded, _c, d: loaded.gt.positives[name][d], f"the {name} positive lists")


def _coco_cxc(loaded: Loaded, _c: Collection, direction: str) -> object:
    return loaded.gt.positives["coco"][direction].union(loaded.gt.positives["cxc"][direction])


def _pm(loaded: Loaded, _c: Collection, direction: str) -> object:
    """PM with the Resources' options: the given PM lists when they are what was asked (zeta 2, own image
    left out), else computed from COCO categories."""
    gt, pm = loaded.gt, loaded.pm
    if "pm" in gt.positives:  # the released PM files (extra_file_dir) or a built dataset's PM lists
        if (pm.zeta, pm.include_own) == (2, False):
            return gt.positives["pm"][direction]
        if gt.image_categories is None:
            raise EvaluationError(
                f"pmrp: the PM lists given (released files or a built dataset without its images config) "
                f"are zeta=2 without the query's own image, not pm_zeta={pm.zeta}, "
                f"pm_include_own={pm.include_own}: pass instances_json (COCO categories) for those"
            )
    return loaded.plausible(pm.zeta).relevance(direction)


def _pm_zeta(zeta: int) -> Relation:
    return Relation(
        f"pm_zeta{zeta}",
        SPLIT,
        lambda loaded, _c, d: loaded.plausible(zeta).relevance(d),
        f"Plausible Match at zeta = {zeta} (from COCO categories)",
    )


def _co_captions(loaded: Loaded, _c: Collection, _d: str) -> Positives:
    return co_caption_positives(loaded.gt.caption_image)


def _co_captions_sts(loaded: Loaded, _c: Collection, _d: str) -> Positives:
    gt = loaded.gt
    sts = intramodal_positives(loaded.ratings("sts").within(gt.captions, gt.captions), gt.captions, loaded.cxc_directed)
    return co_caption_positives(gt.caption_image).union(sts)


def _sis(loaded: Loaded, _c: Collection, _d: str) -> Positives:
    gt = loaded.gt
    return intramodal_positives(loaded.ratings("sis").within(gt.images, gt.images), gt.images, loaded.cxc_directed)


def _fg(_loaded: Loaded, collection: Collection, direction: str) -> Positives:
    fg: FineGrained = collection  # type: ignore[assignment]
    return fg.positives(direction)


RELATIONS = (
    _listed("coco"),
    _listed("cxc"),
    _listed("eccv"),
    Relation("coco+cxc", SPLIT, _coco_cxc, "the COCO pairs extended with the CxC pairs (SITS >= 3)"),
    Relation("pm", SPLIT, _pm, "Plausible Match with the Resources' PM options"),
    _pm_zeta(0),
    _pm_zeta(1),
    _pm_zeta(2),
    Relation("co_captions", SPLIT, _co_captions, "the other captions of the query caption's image"),
    Relation("co_captions+sts", SPLIT, _co_captions_sts, "co-captions plus the captions rated STS >= 3"),
    Relation("sis", SPLIT, _sis, "the images rated SIS >= 2.5"),
    Relation("fg", FG, _fg, "t2i: a refined caption's image; i2t: an annotated image's 5 refined captions"),
)


def _folds(loaded: Loaded, _c: Collection, view: View) -> tuple[np.ndarray, np.ndarray]:
    gt = loaded.gt
    return gt.fold(view.query_kind).astype(np.int64), gt.fold(view.gallery_kind).astype(np.int64)


def _original_pool(_loaded: Loaded, collection: Collection, view: View) -> tuple[np.ndarray, np.ndarray]:
    fg: FineGrained = collection  # type: ignore[assignment]
    return np.zeros(len(view.queries), np.int64), fg.original_pool


RESTRICTIONS = (
    Restriction("coco_1k_folds", "COCO 1K fold", _folds),
    Restriction("original_pool", "original image pool", _original_pool),
)
