"""Where the ground truth comes from and how PM is defined, as one value: :class:`ResourceOptions`.

Every front end fills one from its own transport and calls :meth:`ResourceOptions.resources`, the one
factory of :class:`~eccv_metric.benchmarks.resources.Resources` built from front-end keywords:

- Python (``Metrics(...)``, ``evaluate()``'s default): the keywords, named as the fields;
- the CLI: one flag a field (``--cxc-source``; :mod:`eccv_metric.cli.resource_flags` derives the flags and their
  help from :data:`HELP`; ``--source-dir`` fills both sources);
- the evaluate module: ``compute()``'s keywords, named as the fields;
- the Space: the "COCO instances" box and the "benchmark source files" box (both sources);
- the model path: the flags or keywords given, the data's own files for the rest (:meth:`filled`).

A new source option is one field here (with its :data:`HELP` line), the flag follows; the keyword of
:class:`~eccv_metric.api.metrics.Metrics` and of the evaluate module, and a Space box, are one line each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import fields
from dataclasses import replace
from pathlib import Path

from eccv_metric.benchmarks.resources import Resources
from eccv_metric.benchmarks.resources import cached_resources
from eccv_metric.core.defaults import PM_INCLUDE_OWN
from eccv_metric.core.defaults import PM_R_CAP
from eccv_metric.core.defaults import PM_ZETA
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth

Source = str | Path | None
SOURCES = ("ground_truth", "instances_json", "extra_file_dir", "cxc_source", "fg_source")  # the fields naming files

# one line per field: the CLI's --help, the docs
HELP = {
    "ground_truth": "a built dataset folder or Hub repo (default: the eccv_caption wheel)",
    "instances_json": "COCO-format instances JSON or a built dataset folder: PM categories",
    "extra_file_dir": "a folder with the released pm_image_to_caption.json / pm_caption_to_image.json (pmrp reads "
    "them instead of computing PM from categories)",
    "pm_zeta": f"pmrp: largest category distance of a plausible match (default {PM_ZETA})",
    "pm_include_own": "pmrp: a query's own image (and its captions) count as plausible matches",
    "pm_r_cap": f"PMRP uses R = min(R, cap); 'none' = no cap (default {PM_R_CAP})",
    "cxc_source": "CxC ratings: a built dataset or a folder with the CSVs (default: download)",
    "cxc_directed": "CxC intramodal pairs: first column = query",
    "fg_source": "MSCOCO-FG / Flickr30K-FG files or a built dataset (default: download)",
}


@dataclass(frozen=True)
class ResourceOptions:
    """The ground truth's sources and the PM definition a front end was given (see the module docstring).

    ``ground_truth``: a built dataset folder or Hub repo (None: the ``eccv_caption`` wheel), or a
    :class:`~eccv_metric.groundtruth.split.GroundTruth` (then its own :class:`Resources`, not the cache).
    The other fields are :class:`Resources`' keywords, with the PM options as three
    (:class:`~eccv_metric.groundtruth.plausible.PMOptions`).
    """

    ground_truth: str | Path | GroundTruth | None = None
    instances_json: Source = None
    extra_file_dir: Source = None
    pm_zeta: int = PM_ZETA
    pm_include_own: bool = PM_INCLUDE_OWN
    pm_r_cap: int | None = PM_R_CAP
    cxc_source: Source = None
    cxc_directed: bool = False
    fg_source: Source = None

    @property
    def pm(self) -> PMOptions:
        """The PM options (checked: ``pm_zeta`` / ``pm_r_cap`` integers, ``pm_include_own`` a bool)."""
        return PMOptions(self.pm_zeta, self.pm_include_own, self.pm_r_cap)

    def is_default(self) -> bool:
        """Whether nothing was given: every field at its default."""
        return self == ResourceOptions()

    def record(self, resources_given: bool = False, from_data: Iterable[str] = ()) -> dict:
        """What a run's evidence says of its ground truth: the PM and CxC options; which sources it was given
        (``given``; ``resources_given``: a :class:`Resources` was, so every source is the caller's); which it took
        from the benchmark build it read (``from_data``: ``ground_truth``, ``cxc_source``, ``fg_source``); the
        others are the package's (the ``eccv_caption`` wheel, the sources' canonical homes)."""
        given = list(SOURCES) if resources_given else [name for name in SOURCES if getattr(self, name) is not None]
        return {
            "pm_zeta": self.pm_zeta,
            "pm_include_own": self.pm_include_own,
            "pm_r_cap": self.pm_r_cap,
            "cxc_directed": self.cxc_directed,
            "given": given,
            "from_data": [name for name in from_data if name not in given],
        }

    def filled(self, **defaults: object) -> ResourceOptions:
        """These options with the sources not given (None) taken from ``defaults`` (e.g. a dataset's own files)."""
        unknown = sorted(set(defaults) - {f.name for f in fields(self)})
        if unknown:
            raise TypeError(f"ResourceOptions.filled() got unexpected keyword(s) {', '.join(unknown)}")
        return replace(self, **{k: v for k, v in defaults.items() if getattr(self, k) is None})  # type: ignore[arg-type]

    def resources(self) -> Resources:
        """The :class:`Resources` these options name: the one cache
        (:func:`~eccv_metric.benchmarks.resources.cached_resources`) for sources given by name, their own for a
        given :class:`GroundTruth`."""
        options = {
            "instances_json": self.instances_json,
            "extra_file_dir": self.extra_file_dir,
            "pm": self.pm,
            "cxc_source": self.cxc_source,
            "cxc_directed": self.cxc_directed,
            "fg_source": self.fg_source,
        }
        if isinstance(self.ground_truth, GroundTruth):
            return Resources(self.ground_truth, **options)  # type: ignore[arg-type]
        return cached_resources(self.ground_truth, **options)
