"""Where a benchmark's items and positives come from, loaded on first use: the 5K split, CxC, PM and FG.

:class:`Resources` turns a benchmark's task into a :class:`~eccv_metric.core.view.View`
(which items are ranked against which) and its relation into positives
(:class:`~eccv_metric.core.positives.Positives`, or the PM image-level relation).
Everything is loaded lazily and once: the ground truth from the
``eccv_caption`` wheel (or a given :class:`GroundTruth`), COCO categories for
PM, CxC ratings and FG files from the sources given (a folder, a built
dataset or its Hub repo) or, failing that, their canonical files (downloaded
once, sha256-checked).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.registry import Task
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.folder import is_built_folder
from eccv_metric.core.options import require_bool
from eccv_metric.core.positives import Positives
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.groundtruth.categories import load_instance_categories
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.groundtruth.cxc import co_caption_positives
from eccv_metric.groundtruth.cxc import intramodal_positives
from eccv_metric.groundtruth.cxc import load_ratings
from eccv_metric.groundtruth.fg import FineGrained
from eccv_metric.groundtruth.fg import load_fg
from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.groundtruth.split import load_id_lists

RESTRICTION_LABELS = {"coco_1k_folds": "COCO 1K fold", "original_pool": "original image pool"}


class Resources:
    """The ground truth every benchmark reads, loaded once (see the module docstring).

    Parameters
    ----------
    ground_truth: the 5K split (default: the ``eccv_caption`` wheel's, sha256-checked).
    instances_json: a COCO-format instances JSON (or a built dataset folder) whose categories define PM.
    extra_file_dir: a folder with the released ``pm_image_to_caption.json`` / ``pm_caption_to_image.json``
        (then ``pmrp`` reads them instead of computing PM from categories).
    pm: the PM options of ``pmrp`` (zeta, own image, R cap); the ``pmrp_zeta*`` variants fix zeta.
    cxc_source / cxc_directed: CxC ratings (a built dataset or Hub repo, a folder with the CSVs, None:
        the ground truth's dataset folder if it has them, else the canonical files) and how STS / SIS
        pairs are read (undirected by default).
    fg_source: MSCOCO-FG / Flickr30K-FG files (a built dataset or Hub repo, a folder with the files, None:
        the canonical files).
    """

    def __init__(
        self,
        ground_truth: GroundTruth | None = None,
        *,
        instances_json: str | Path | None = None,
        extra_file_dir: str | Path | None = None,
        pm: PMOptions | None = None,
        cxc_source: str | Path | None = None,
        cxc_directed: bool = False,
        fg_source: str | Path | None = None,
    ):
        gt = ground_truth if ground_truth is not None else GroundTruth.from_wheel()
        if instances_json is not None:
            gt = gt.with_categories(*load_instance_categories(instances_json, gt.image_ids))
        if extra_file_dir is not None:
            folder = Path(extra_file_dir)
            gt = gt.with_positives(
                "pm",
                {
                    "i2t": load_id_lists(folder / "pm_image_to_caption.json"),
                    "t2i": load_id_lists(folder / "pm_caption_to_image.json"),
                },
            )
        self.gt = gt
        self.pm = pm if pm is not None else PMOptions()
        if cxc_source is None and is_built_folder(gt.source or None, "cxc_ratings"):
            cxc_source = gt.source
        self.cxc_source = cxc_source
        self.cxc_directed = require_bool(cxc_directed, "cxc_directed")
        self.fg_source = fg_source
        self._fg: dict[str, FineGrained] = {}
        self._ratings: dict[str, Ratings] = {}
        self._pm: dict[int, PlausibleMatch] = {}
        self._relations: dict[tuple, object] = {}
        self._views: dict[tuple, View] = {}

    # -- collections --------------------------------------------------------------------------------------------

    def collection(self, name: str) -> Collection:
        if name == "coco_5k":
            return self.gt
        if name not in self._fg:
            self._fg[name] = load_fg(name, self.fg_source, self.gt if name == "mscoco_fg" else None)
        return self._fg[name]

    def ratings(self, kind: str) -> Ratings:
        """The CxC ``sts``, ``sis`` or ``sits`` test ratings (loaded once)."""
        if kind not in self._ratings:
            self._ratings[kind] = load_ratings(kind, self.cxc_source)
        return self._ratings[kind]

    # -- views ---------------------------------------------------------------------------------------------------

    def view(self, bench: Benchmark, task: Task) -> View:
        """The ranking a benchmark direction reads (one object per distinct ranking)."""
        collection = self.collection(bench.collection)
        key = (id(collection), task.direction, task.restriction, task.exclude_self)
        if key not in self._views:
            view = View(task.direction, collection, exclude_self=task.exclude_self)
            if task.restriction == "coco_1k_folds":
                gt = self.gt
                view = View(
                    task.direction,
                    collection,
                    task.restriction,
                    gt.fold(view.query_kind).astype(np.int64),
                    gt.fold(view.gallery_kind).astype(np.int64),
                    task.exclude_self,
                )
            elif task.restriction == "original_pool":
                fg: FineGrained = collection  # type: ignore[assignment]
                view = View(
                    task.direction,
                    collection,
                    task.restriction,
                    np.zeros(len(view.queries), np.int64),
                    fg.original_pool,
                    task.exclude_self,
                )
            elif task.restriction is not None:
                raise EvaluationError(f"{bench.name}: unknown restriction {task.restriction!r}")
            self._views[key] = view
        return self._views[key]

    # -- relations -----------------------------------------------------------------------------------------------

    def relation(self, bench: Benchmark, relation: str, direction: str) -> object:
        """The positives of ``relation`` in ``direction`` on the benchmark's collection (built once)."""
        key = (bench.collection, relation, direction)
        if key not in self._relations:
            self._relations[key] = self._build(bench, relation, direction)
        return self._relations[key]

    def _build(self, bench: Benchmark, relation: str, direction: str) -> object:
        gt = self.gt
        if bench.collection != "coco_5k":
            fg: FineGrained = self.collection(bench.collection)  # type: ignore[assignment]
            if relation != "fg":
                raise EvaluationError(f"{bench.name}: unknown relation {relation!r}")
            return fg.positives(direction)
        if relation in ("coco", "cxc", "eccv"):
            return gt.positives[relation][direction]
        if relation == "coco+cxc":
            return gt.positives["coco"][direction].union(gt.positives["cxc"][direction])
        if relation == "pm":
            if "pm" in gt.positives:  # the released PM files (extra_file_dir) or a built dataset's PM lists
                if (self.pm.zeta, self.pm.include_own) == (2, False):
                    return gt.positives["pm"][direction]
                if gt.image_categories is None:
                    raise EvaluationError(
                        f"pmrp: the PM lists given (released files or a built dataset without its images config) "
                        f"are zeta=2 without the query's own image, not pm_zeta={self.pm.zeta}, "
                        f"pm_include_own={self.pm.include_own}: pass instances_json (COCO categories) for those"
                    )
            return self._plausible(self.pm.zeta).relevance(direction)
        if relation.startswith("pm_zeta"):
            return self._plausible(int(relation[len("pm_zeta") :])).relevance(direction)
        if relation == "co_captions":
            return co_caption_positives(gt.caption_image)
        if relation == "co_captions+sts":
            sts = intramodal_positives(
                self.ratings("sts").within(gt.captions, gt.captions), gt.captions, self.cxc_directed
            )
            return co_caption_positives(gt.caption_image).union(sts)
        if relation == "sis":
            return intramodal_positives(self.ratings("sis").within(gt.images, gt.images), gt.images, self.cxc_directed)
        raise EvaluationError(f"{bench.name}: unknown relation {relation!r}")

    def _plausible(self, zeta: int) -> PlausibleMatch:
        if zeta not in self._pm:
            self._pm[zeta] = PlausibleMatch(self.gt, zeta, self.pm.include_own)
        return self._pm[zeta]

    def positives(self, bench: Benchmark, relation: str, direction: str) -> Positives:
        """The relation as CSR positives (PM is materialised: ~10M pairs a direction)."""
        rel = self.relation(bench, relation, direction)
        return rel if isinstance(rel, Positives) else rel.to_positives()  # type: ignore[attr-defined]
