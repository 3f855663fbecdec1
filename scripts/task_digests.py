"""Freeze per-query outputs of the tasks the previous engine ran apart (cxc_i2i, MSCOCO-FG, Flickr30K-FG).

``tests/data/task_digests.json`` holds sha256 digests of every per-query value of cxc_i2i (from integer
image embeddings and from the square matrix they give) and of MSCOCO-FG / Flickr30K-FG (from integer
embeddings), computed by the task engine of commit d83146e (before the one-engine redesign) with these
same inputs through its API of then (``Metrics.per_query_from_embeddings`` / ``per_query_from_scores``,
``eccv_metric.fg_metrics.FineGrainedMetrics``); ``tests/integration/test_engine_digests.py`` requires the
engine to reproduce them bit for bit. Rerun only to freeze a trusted engine:

    python scripts/task_digests.py   (writes tests/data/task_digests.json; ~20 s, ~1.6 GB; needs ../shared/data)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.engine_cases import TASK_CASES  # noqa: E402
from tests.integration.engine_cases import digests  # noqa: E402
from tests.integration.engine_cases import run_task_case  # noqa: E402

OUT = ROOT / "tests" / "data" / "task_digests.json"


def main() -> int:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {"engine_commit": commit, "cases": {name: digests(run_task_case(name)) for name in TASK_CASES}}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
