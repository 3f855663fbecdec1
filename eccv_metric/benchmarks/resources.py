"""Where a benchmark's items and positives come from, loaded on first use: the 5K split, CxC, PM and FG.

:class:`Resources` turns a benchmark's task into a :class:`~eccv_metric.core.view.View`
(which items are ranked against which) and its relation into positives
(:class:`~eccv_metric.core.positives.Positives`, or the PM image-level relation), by calling the
registered entries (collection loaders, relations, restrictions: :mod:`eccv_metric.benchmarks.registry`);
it holds no benchmark's, collection's or relation's name.
Everything is loaded lazily and once: the ground truth from the
``eccv_caption`` wheel (or a given :class:`GroundTruth`), COCO categories for
PM, CxC ratings and FG files from the sources given (a folder, a built
dataset or its Hub repo) or, failing that, their canonical files (downloaded
once, sha256-checked).
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import nullcontext
from pathlib import Path
from stat import S_ISREG
from typing import Any

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.registry import Task
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import find_below
from eccv_metric.core.files import named_file
from eccv_metric.core.folder import is_built_folder
from eccv_metric.core.options import require_bool
from eccv_metric.core.positives import Positives
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.groundtruth.categories import load_instance_categories
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.groundtruth.cxc import load_ratings
from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.groundtruth.split import load_id_lists


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
            with named_file("instances_json="):  # a file that cannot be read is named by its keyword
                gt = gt.with_categories(*load_instance_categories(instances_json, gt.image_ids))
        if extra_file_dir is not None:
            folder = Path(extra_file_dir)
            with named_file("extra_file_dir="):
                released = {
                    "i2t": load_id_lists(folder / "pm_image_to_caption.json"),
                    "t2i": load_id_lists(folder / "pm_caption_to_image.json"),
                }
            gt = gt.with_positives("pm", released)
        self.gt = gt
        self.pm = pm if pm is not None else PMOptions()
        if cxc_source is None and is_built_folder(gt.source or None, "cxc_ratings"):
            cxc_source = gt.source
        self.cxc_source = cxc_source
        self.cxc_directed = require_bool(cxc_directed, "cxc_directed")
        self.fg_source = fg_source
        self._collections: dict[str, Collection] = {}
        self._ratings: dict[str, Ratings] = {}
        self._pm: dict[int, PlausibleMatch] = {}
        self._relations: dict[tuple, object] = {}
        self._views: dict[tuple, View] = {}

    # -- collections ---------------------------------------------------------------------------------------------

    def source(self, option: str) -> str | Path | None:
        """Where a collection's files come from: the value of the keyword ``option`` (e.g. ``fg_source``)."""
        return getattr(self, option) if option else None

    def collection(self, name: str) -> Collection:
        """The items of a registered collection (loaded once)."""
        if name not in self._collections:
            entry = REGISTRY.collection(name)
            with named_file(f"{entry.source_option}=") if entry.source_option else nullcontext():
                self._collections[name] = entry.load(entry, self)
        return self._collections[name]

    def ratings(self, kind: str) -> Ratings:
        """The CxC ``sts``, ``sis`` or ``sits`` test ratings (loaded once)."""
        if kind not in self._ratings:
            with named_file("cxc_source="):
                self._ratings[kind] = load_ratings(kind, self.cxc_source)
        return self._ratings[kind]

    def plausible(self, zeta: int) -> PlausibleMatch:
        """Plausible Match at ``zeta`` with the own-image option of ``pm`` (built once)."""
        if zeta not in self._pm:
            self._pm[zeta] = PlausibleMatch(self.gt, zeta, self.pm.include_own)
        return self._pm[zeta]

    # -- views ---------------------------------------------------------------------------------------------------

    def view(self, bench: Benchmark, task: Task) -> View:
        """The ranking a benchmark direction reads (one object per distinct ranking)."""
        collection = self.collection(bench.collection)
        key = (id(collection), task.direction, task.restriction, task.exclude_self)
        if key not in self._views:
            view = View(task.direction, collection, exclude_self=task.exclude_self)
            if task.restriction is not None:
                query_group, gallery_group = REGISTRY.restriction(task.restriction).groups(self, collection, view)
                view = View(task.direction, collection, task.restriction, query_group, gallery_group, task.exclude_self)
            self._views[key] = view
        return self._views[key]

    # -- relations -----------------------------------------------------------------------------------------------

    def relation(self, bench: Benchmark, relation: str, direction: str) -> object:
        """The positives of ``relation`` in ``direction`` on the benchmark's collection (built once)."""
        key = (bench.collection, relation, direction)
        if key not in self._relations:
            entry = REGISTRY.relation(relation)
            if bench.collection not in entry.collections:
                raise EvaluationError(f"{bench.name}: relation {relation!r} is not defined on {bench.collection}")
            self._relations[key] = entry.build(self, self.collection(bench.collection), direction)
        return self._relations[key]

    def positives(self, bench: Benchmark, relation: str, direction: str) -> Positives:
        """The relation as CSR positives (PM is materialised: ~10M pairs a direction)."""
        rel = self.relation(bench, relation, direction)
        return rel if isinstance(rel, Positives) else rel.to_positives()  # type: ignore[attr-defined]


# -- the one cache ---------------------------------------------------------------------------------------------------

_CACHE: OrderedDict[tuple, Resources] = OrderedDict()
MAX_CACHED = 3  # distinct sets of sources kept (each may hold PM: hundreds of MB)
OPTIONS = ("instances_json", "extra_file_dir", "pm", "cxc_source", "cxc_directed", "fg_source")
PATH_OPTIONS = ("instances_json", "extra_file_dir", "cxc_source", "fg_source")


MAX_STAMPED_FILES = 10_000  # a folder with more entries below it is keyed by its path and its modification time


def _stamp(source: str | Path | None) -> tuple:
    """A source as a cache key: a Hub repo id by its text; a local file by its absolute path, size and
    modification time; a local folder by its absolute path and each file below it (relative path, size,
    modification time): a file or folder replaced under the same name, or a relative name after a change of
    working folder, is read again."""
    if source is None:
        return (None,)
    path = Path(source)
    if path.is_file():
        stat = path.stat()
        return (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if path.is_dir():
        root = path.resolve()
        found = find_below(root, "*")  # as the sources are searched: symlinked folders followed
        if len(found) > MAX_STAMPED_FILES:
            return (str(root), root.stat().st_mtime_ns, "many files")
        files = []
        for found_path in found:
            try:
                stat = found_path.stat()
            except OSError:  # a dangling link: no file to read
                continue
            if S_ISREG(stat.st_mode):
                files.append((str(found_path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
        return (str(root), tuple(files))
    return (str(source),)


def cached_resources(ground_truth: str | Path | None = None, **options: Any) -> Resources:
    """The one cached way to get :class:`Resources` for a set of sources (the last :data:`MAX_CACHED` kept).

    ``ground_truth``: a built dataset folder or Hub repo (None: the ``eccv_caption`` wheel); ``options``: the
    keywords of :class:`Resources` (``instances_json``, ``extra_file_dir``, ``pm``, ``cxc_source``,
    ``cxc_directed``, ``fg_source``). Every front end (``evaluate``'s default, the CLI, the evaluate module,
    the Space, ``Metrics``, the model path) gets its ground truth here, so the same sources load once per
    process; a local file is keyed by its size and modification time too (a replaced file is read again).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"cached_resources() got unexpected keyword(s) {', '.join(unknown)}")
    given = {name: options.get(name) for name in OPTIONS}
    given["pm"] = given["pm"] if given["pm"] is not None else PMOptions()
    directed = given["cxc_directed"]
    given["cxc_directed"] = require_bool(False if directed is None else directed, "cxc_directed")
    key = (_stamp(ground_truth),) + tuple(
        _stamp(value) if name in PATH_OPTIONS else value for name, value in given.items()
    )
    if key not in _CACHE:
        gt = None if ground_truth is None else GroundTruth.from_dataset(ground_truth)
        _CACHE[key] = Resources(gt, **given)
        while len(_CACHE) > MAX_CACHED:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return _CACHE[key]
