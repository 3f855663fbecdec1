"""The ground truth a run's evidence was scored on: its benchmark build's sources (a folder, or a Hub repo pinned at
a revision) for what the run took from it, the package's for the rest, with the PM and CxC options the run recorded
(the manifest's ``resources``, :mod:`eccv_metric.evidence.layout`)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.folder import config_files
from eccv_metric.evidence.load import Evidence

OPTIONS = ("pm_zeta", "pm_include_own", "pm_r_cap", "cxc_directed")  # what the manifest's resources record
SOURCES = ("ground_truth", "cxc_source", "fg_source")  # what a run may take from its benchmark's build


def run_resources(ev: Evidence, source: str | Path | None = None) -> Resources:
    """The ground truth ``ev`` was scored on: what the run took from its benchmark build read from ``source`` (that
    build: a folder, or a Hub repo pinned as ``<repo>@<revision>``), the package's for the rest, with the run's PM
    and CxC options."""
    options = {k: ev.resources[k] for k in OPTIONS if k in ev.resources}
    return build_resources(source, from_data(ev) if source is not None else [], options)


def build_resources(
    source: str | Path | None, taken: Iterable[str] = SOURCES, options: Mapping[str, object] | None = None
) -> Resources:
    """The ground truth of a benchmark build (``source``: a folder, or a Hub repo pinned as ``<repo>@<revision>``)
    for the sources ``taken`` that it holds, the package's for the rest, with ``options`` (the PM and CxC options;
    default: the defaults)."""
    configs = {"ground_truth": ("positives",), "cxc_source": ("cxc_ratings",),
               "fg_source": ("mscoco_fg_captions", "flickr30k_fg_captions")}  # fmt: skip
    sources = {name: source for name in taken if any(config_files(source, c)[0] for c in configs[name])}  # type: ignore[arg-type]
    return ResourceOptions(**sources, **dict(options or {})).resources()  # type: ignore[arg-type]


def with_run_options(ev: Evidence, options: ResourceOptions) -> ResourceOptions:
    """``options`` (the sources a verifier names) with the run's PM and CxC options where they are left at their
    defaults: the ground truth the run was scored on, read from the sources given."""
    unset = ResourceOptions()
    return replace(options, **{k: ev.resources[k] for k in OPTIONS
                               if k in ev.resources and getattr(options, k) == getattr(unset, k)})  # fmt: skip


def from_data(ev: Evidence) -> list[str]:
    """The sources the run took from its benchmark build (``ground_truth``, ``cxc_source``, ``fg_source``)."""
    taken = ev.resources.get("from_data")
    return list(taken) if isinstance(taken, list) else list(SOURCES)
