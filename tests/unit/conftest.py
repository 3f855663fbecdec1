"""Fixtures of the unit layer: the synthetic world (tests/unit/world.py) and its ground truth, once per module."""

from __future__ import annotations

import pytest

from tests.unit.world import make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def res(world):
    return world.resources()
