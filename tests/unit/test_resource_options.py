"""Where the ground truth comes from: one options value (ResourceOptions) whose resources() is the only factory of
Resources from front-end keywords; every front end fills it; one cache for a set of sources."""

from __future__ import annotations

import re
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

import eccv_metric
from eccv_metric import EvaluationError
from eccv_metric import Metrics
from eccv_metric import ResourceOptions
from eccv_metric.benchmarks.resource_options import HELP
from eccv_metric.benchmarks.resources import cached_resources
from eccv_metric.cli.main import build_parser
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.hub import space

PACKAGE = Path(eccv_metric.__file__).parent
# the cache and the factory build Resources; the model path's own factory is the lead's to fold in (issue 41)
BUILDERS = {f"eccv_metric/{name}" for name in ("benchmarks/resources.py", "benchmarks/resource_options.py")}


def test_every_field_is_one_flag_with_its_help():
    parser = build_parser()
    evaluate = parser._subparsers._group_actions[0].choices["evaluate"]  # type: ignore[union-attr]
    for f in fields(ResourceOptions):
        action = evaluate._option_string_actions["--" + f.name.replace("_", "-")]
        assert action.help == HELP[f.name] and action.dest == f.name
    assert set(HELP) == {f.name for f in fields(ResourceOptions)}


def test_flags_read_back_as_options_and_source_dir_fills_both_sources():
    args = build_parser().parse_args(
        ["evaluate", "--demo", "--source-dir", "S", "--fg-source", "F", "--pm-r-cap", "none"]
    )
    assert options_of(args) == ResourceOptions(pm_r_cap=None, cxc_source="S", fg_source="F")
    assert options_of(build_parser().parse_args(["evaluate", "--demo"])).is_default()
    trec = build_parser().parse_args(["export-trec", "--qrels", "pm", "-o", "x", "--instances-json", "I"])
    assert options_of(trec) == ResourceOptions(instances_json="I")  # flags a command lacks: the defaults


def test_one_cache_of_resources_for_a_set_of_sources(world):
    first = cached_resources(cxc_source=world.cxc_dir, fg_source=world.fg_dir)
    assert cached_resources(cxc_source=world.cxc_dir, fg_source=world.fg_dir) is first
    assert cached_resources(cxc_source=world.cxc_dir, fg_source=world.fg_dir, pm=PMOptions(1)) is not first
    assert ResourceOptions(cxc_source=world.cxc_dir, fg_source=world.fg_dir).resources() is first
    assert space.resources_for(None, world.cxc_dir) is cached_resources(
        cxc_source=world.cxc_dir, fg_source=world.cxc_dir
    )
    assert Metrics(cxc_source=world.cxc_dir, fg_source=world.fg_dir).resources is first


def test_a_given_ground_truth_gets_its_own_resources(world):
    options = ResourceOptions(world.gt, pm_zeta=1, cxc_source=world.cxc_dir)
    res = options.resources()
    assert res.gt is world.gt and res.pm == PMOptions(1) and res.cxc_source == world.cxc_dir
    assert options.resources() is not res  # not cached: a GroundTruth object has no name to key it by
    assert Metrics(ground_truth=world.gt).resources.gt is world.gt


def test_filled_takes_only_what_was_not_given():
    given = ResourceOptions(cxc_source="mine")
    assert given.filled(cxc_source="data", fg_source="data") == ResourceOptions(cxc_source="mine", fg_source="data")
    with pytest.raises(TypeError, match="cxc_sources"):
        given.filled(cxc_sources="data")


def test_options_are_checked_when_resources_are_built():
    for bad, said in ((dict(pm_r_cap=0), "pm_r_cap must be an integer >= 1"), (dict(cxc_directed="False"), "cxc")):
        with pytest.raises(EvaluationError, match=said):
            ResourceOptions(**bad).resources()


def test_no_front_end_builds_resources_of_its_own():
    """``git grep``, as a test: Resources are built from front-end keywords by the factory alone."""
    pattern = re.compile(r"\b(Resources|cached_resources)\(")
    files = [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "eccv_caption_dataset").rglob("*.py")]  # and the builder
    found = {
        str(path.relative_to(PACKAGE.parent))
        for path in files
        if any(pattern.search(line) and not line.lstrip().startswith(("def ", "#")) for line in path.open())
    }
    assert found <= BUILDERS, sorted(found - BUILDERS)


def test_a_folder_replaced_under_its_name_is_read_again(world, tmp_path, monkeypatch):
    """The cache keys a local folder by what it holds, and a relative name by the folder it names."""
    copy = tmp_path / "cxc"
    shutil.copytree(world.cxc_dir, copy)
    first = cached_resources(cxc_source=copy)
    assert cached_resources(cxc_source=copy) is first
    target = next(p for p in copy.iterdir() if p.is_file())
    target.write_text(target.read_text() + "\n")  # the same name, other contents
    assert cached_resources(cxc_source=copy) is not first
    monkeypatch.chdir(tmp_path)
    here = cached_resources(cxc_source="cxc")
    other = tmp_path / "elsewhere" / "cxc"
    shutil.copytree(world.cxc_dir, other)
    monkeypatch.chdir(other.parent)
    assert cached_resources(cxc_source="cxc") is not here  # "cxc" names another folder now
