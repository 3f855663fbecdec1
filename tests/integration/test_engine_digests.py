"""The engine's outputs are frozen: identical per-query values (same float64 bits) to a trusted revision.

``tests/data/engine_digests.json`` was written by ``scripts/engine_digests.py``
on the engine revision it names (already checked against the official package
and brute force by the other tests). Any later speed work must leave every
per-query value of every metric unchanged on these inputs: continuous,
tie-heavy and float16 matrices, permuted ids, extra gallery ids, top-50 lists
as dicts and as arrays.
"""

from __future__ import annotations

import json

import pytest

from tests.fixtures import ROOT
from tests.fixtures import ranked_indices
from tests.integration.engine_cases import CASES
from tests.integration.engine_cases import TASK_CASES
from tests.integration.engine_cases import digests
from tests.integration.engine_cases import run_case
from tests.integration.engine_cases import run_task_case

FROZEN = json.loads((ROOT / "tests" / "data" / "engine_digests.json").read_text())


@pytest.fixture(scope="module")
def top(scores_gauss):
    return ranked_indices(scores_gauss, 50)


@pytest.mark.parametrize("case", CASES)
def test_per_query_values_identical_to_the_frozen_engine(metrics, scores_gauss, top, case):
    got = digests(run_case(metrics, case, scores_gauss, top if case.startswith("lists") else None))
    want = FROZEN["cases"][case]
    assert set(got) == set(want)
    changed = sorted(key for key in want if got[key] != want[key])
    assert not changed, f"{case}: per-query values differ from engine {FROZEN['engine_commit'][:10]}: {changed}"


TASKS = json.loads((ROOT / "tests" / "data" / "task_digests.json").read_text())


@pytest.mark.parametrize("case", TASK_CASES)
def test_tasks_of_the_former_task_engine_are_identical(case):
    """cxc_i2i and MSCOCO-FG / Flickr30K-FG ran on a second engine before the redesign: frozen there, same here."""
    got = digests(run_task_case(case))
    want = TASKS["cases"][case]
    assert set(got) == set(want)
    changed = sorted(key for key in want if got[key] != want[key])
    assert not changed, f"{case}: per-query values differ from engine {TASKS['engine_commit'][:10]}: {changed}"
