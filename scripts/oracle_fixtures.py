"""Run the official ``eccv_caption`` on full 5K rankings and store its outputs for the tests.

The official code needs ~70 s and ~11 GB per score matrix on full rankings,
too much for every CI run, so this script computes its results once for a few
seeded matrices (``tests/fixtures.py`` rebuilds the same matrices) and writes
``tests/data/official_full_rankings.json``; the tests compare our engine with
these numbers and check the matrices' sha256 so a changed random stream fails
loudly instead of comparing different inputs.

Usage: python scripts/oracle_fixtures.py [--out tests/data/official_full_rankings.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eccv_metric.groundtruth.split import GroundTruth  # noqa: E402
from tests.fixtures import MATRICES  # noqa: E402
from tests.fixtures import full_rankings  # noqa: E402
from tests.fixtures import make_scores  # noqa: E402
from tests.fixtures import matrix_digest  # noqa: E402
from tests.fixtures import write_pm_files  # noqa: E402

TARGETS = (
    "eccv_r1",
    "eccv_map_at_r",
    "eccv_rprecision",
    "coco_1k_recalls",
    "coco_5k_recalls",
    "cxc_recalls",
    "pmrp",
)
KS = (1, 5, 10, 20)


def normalise(result: dict) -> dict:
    """The official merges pmrp as top-level 'i2t'/'t2i' floats (a bug): file them under 'pmrp'."""
    out = {k: {d: float(v) for d, v in by.items()} for k, by in result.items() if isinstance(by, dict)}
    if "i2t" in result or "t2i" in result:
        out["pmrp"] = {d: float(result[d]) for d in ("i2t", "t2i") if d in result}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tests/data/official_full_rankings.json")
    parser.add_argument("--instances-json", default="../shared/data/coco/instances_karpathy_test.json")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from eccv_caption import Metrics as Official

    gt = GroundTruth.from_wheel(args.instances_json)
    out = {"targets": list(TARGETS), "Ks": list(KS), "eccv_caption": "0.1.0", "matrices": {}}
    with tempfile.TemporaryDirectory() as pm_dir:
        write_pm_files(gt, pm_dir)
        official = Official(extra_file_dir=pm_dir)
        for name in MATRICES:
            scores = make_scores(gt, name)
            digest = matrix_digest(scores)
            i2t, t2i = full_rankings(gt, scores)
            del scores
            gc.collect()
            start = time.perf_counter()
            result = official.compute_all_metrics(i2t, t2i, target_metrics=TARGETS, Ks=KS)
            elapsed = time.perf_counter() - start
            del i2t, t2i
            gc.collect()
            out["matrices"][name] = {
                "sha256": digest,
                "seconds": round(elapsed, 1),
                "results": normalise(result),
            }
            print(f"{name}: {elapsed:.1f} s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
