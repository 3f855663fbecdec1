"""Freeze the engine's exact outputs: per-query values of every image-caption metric, as sha256 digests.

Run once on a trusted engine revision; ``tests/test_engine_digests.py`` then
requires every later engine to give *identical* per-query values (not close:
the same float64 bits) on the same inputs. The inputs are seeded and rebuilt
by the test: the continuous, tie-heavy and float16 matrices of
``tests/fixtures.py``, the continuous matrix with permuted ids and with extra
gallery ids inserted among the test ids, and top-50 ranked lists of the
continuous matrix given as dicts and as 2-D arrays.

Usage: python scripts/engine_digests.py  (writes tests/data/engine_digests.json; ~2 minutes, ~3 GB)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fixtures import INSTANCES  # noqa: E402
from tests.integration.engine_cases import CASES  # noqa: E402
from tests.integration.engine_cases import digests  # noqa: E402
from tests.integration.engine_cases import run_case  # noqa: E402

OUT = ROOT / "tests" / "data" / "engine_digests.json"


def main() -> int:
    from eccv_metric import Metrics

    metrics = Metrics(instances_json=INSTANCES)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {"engine_commit": commit, "cases": {}}
    for name in CASES:
        per_query = run_case(metrics, name)
        out["cases"][name] = digests(per_query)
        print(name, len(out["cases"][name]), "metric/direction digests", flush=True)
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
