"""Fixtures of the unit layer: the synthetic world (tests/unit/world.py) and its ground truth, once per module; the
model path's built-like folder and tiny CLIP (tests/unit/model_world.py)."""

from __future__ import annotations

import pytest

from tests.unit.world import make_world


@pytest.fixture(autouse=True)
def _models_on_the_cpu(monkeypatch):
    """A model run that names no device runs on the CPU here, also on a machine with CUDA (where the default picks
    it): the tests' stand-ins, expected errors and cache hits are the CPU's, and every run of a test must agree on
    one device (the cache key holds it). Tests that compare CUDA with numpy name their device themselves."""
    from eccv_metric.models.families import torchutil

    picked = torchutil.pick_device
    monkeypatch.setattr(torchutil, "pick_device", lambda device: picked(device or "cpu"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def res(world):
    return world.resources()


@pytest.fixture(scope="module")
def data(world, tmp_path_factory):
    """A built-like folder over the world, with pixels (tests/unit/model_world.py)."""
    from tests.unit.model_world import write_data

    return write_data(world, tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A tiny random transformers CLIPModel folder with its processor."""
    from tests.unit.model_world import tiny_clip

    return tiny_clip(tmp_path_factory.mktemp("clip"))
