"""Two rows of ``scripts/benchmark.py`` (also run alone): the deepest lists and the biggest run file.

1. Uncapped PMRP (``pm_r_cap=None``: R-Precision over plausible matches, R up to 13,380 captions of an image
   query, 2,495 on average) from the 5,000 x 25,000 matrix: the engine's lists of queries of similar depth
   (``eccv_metric.engine.buckets``) beside one list of every query as deep as the deepest (what the engine did
   before; ``buckets.ONE_LIST_BELOW`` raised past every view turns the groups off) and beside capped PMRP
   (``min(R, 50)``) on the same matrix; per-query values compared.
2. A TREC run of the top-50 lists of both 5K directions (1.5M lines, what ``eccv-caption export-trec --depth 50
   --pooled`` writes): ``read_run_parts`` end to end, and its reading of the lines by the vectorised reader beside
   the line reader (``eccv_metric.formats.trec_lines``); columns compared.

Calls interleaved, best of ``--repeat``; CPU seconds (``time.process_time``, the threads included) beside wall
seconds: the VM is shared and its wall times swing. Ratios, never targets asserted.

Usage: python scripts/benchmark_deep.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eccv_metric import Metrics  # noqa: E402
from eccv_metric import ScoreMatrix  # noqa: E402
from eccv_metric.engine import buckets  # noqa: E402
from eccv_metric.formats import trec  # noqa: E402
from eccv_metric.formats import trec_lines  # noqa: E402
from scripts.benchmark_timing import machine  # noqa: E402
from tests.fixtures import INSTANCES  # noqa: E402
from tests.fixtures import make_scores  # noqa: E402

Report = Callable[..., None]


def interleaved_cpu(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """Best (CPU seconds, wall seconds) of each function, calls interleaved (a, b, a, b, ...)."""
    best = {name: (float("inf"), float("inf")) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            cpu, wall = time.process_time(), time.perf_counter()
            fn()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    return best


def pmrp_stage(scores: np.ndarray, report: Report, repeat: int) -> dict[str, float]:
    """Uncapped PMRP in groups of similar depth, in one list of every query, and capped PMRP: best CPU and wall
    seconds of each; the per-query values of the two uncapped runs must be identical."""
    uncapped, capped = (Metrics(instances_json=INSTANCES, pm_r_cap=cap) for cap in (None, 50))
    found: dict[str, object] = {}

    def run(metrics: Metrics, one_list: bool) -> object:
        saved = buckets.ONE_LIST_BELOW
        buckets.ONE_LIST_BELOW = 1 << 62 if one_list else saved  # every view then gets one list
        try:
            return metrics.per_query_from_scores(scores, target_metrics=["pmrp"])
        finally:
            buckets.ONE_LIST_BELOW = saved

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded matrix is near chance level for PM: noted, not a problem
        run(uncapped, False), run(capped, False)  # the PM relation and the kernels' calibration, not timed
        best = interleaved_cpu(
            {
                "groups": lambda: found.__setitem__("groups", run(uncapped, False)),
                "one": lambda: found.__setitem__("one", run(uncapped, True)),
                "capped": lambda: run(capped, False),
            },
            repeat,
        )
    for direction in ("i2t", "t2i"):
        a, b = found["groups"]["pmrp"][direction], found["one"]["pmrp"][direction]  # type: ignore[index]
        assert a.query_ids.tobytes() == b.query_ids.tobytes() and a.values.tobytes() == b.values.tobytes()
    report("ours: uncapped PMRP, lists in groups of depth", best["groups"], "(pm_r_cap=None, per-query values ==)")
    report("  the same, one list as deep as the deepest", best["one"], "(the engine before)")
    report("  capped PMRP (min(R, 50)), same matrix", best["capped"])
    return {"groups": best["groups"][0], "one": best["one"][0], "capped": best["capped"][0]}


def trec_stage(scores: np.ndarray, gt: object, report: Report, repeat: int) -> dict[str, float]:
    """A 1.5M-line run (top-50 of both directions) read end to end, and its lines read by each reader."""
    path = Path(tempfile.mkdtemp()) / "top50.trec"
    source = ScoreMatrix(scores)
    trec.write_lines(path, itertools.chain(*(trec.run_from_scores(source, gt, d, 50) for d in ("i2t", "t2i"))))  # type: ignore[arg-type]
    columns: dict[str, object] = {}
    best = interleaved_cpu(
        {
            "parts": lambda: trec.read_run_parts(path),
            "fast": lambda: columns.__setitem__("fast", trec_lines.fast_columns(path)),
            "line": lambda: columns.__setitem__("line", trec_lines.line_columns(path)),
        },
        repeat,
    )
    fast, line = columns["fast"], columns["line"]
    assert (
        fast is not None
        and all(
            fast[0][k].tobytes() == line[0][k].tobytes()
            for k in line[0]  # type: ignore[index]
        )
        and fast[1].tobytes() == line[1].tobytes()
    )  # type: ignore[index]
    size = path.stat().st_size / 2**20
    report("ours: read_run_parts, a 1.5M-line run", best["parts"], f"({size:.0f} MB: export-trec --depth 50 --pooled)")
    report("  its lines, the vectorised reader", best["fast"], "(columns == the line reader's)")
    report("  its lines, the line reader", best["line"], "(every line read before, and every refused file now)")
    path.unlink()
    return {"parts": best["parts"][0], "fast": best["fast"][0], "line": best["line"][0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(machine())

    def report(name: str, seconds: tuple[float, float], note: str = "") -> None:
        print(f"{name:<46} {seconds[0]:7.2f} CPU s {seconds[1]:7.2f} s  {note}", flush=True)

    metrics = Metrics()
    scores = make_scores(metrics.gt, "gauss")
    pm = pmrp_stage(scores, report, args.repeat) if INSTANCES.is_file() else None
    run = trec_stage(scores, metrics.gt, report, args.repeat)
    print("\nratios (CPU)")
    if pm is not None:
        print(
            f"  uncapped PMRP: {pm['one'] / pm['groups']:.1f}x less than one list of every query; "
            f"{pm['groups'] / pm['capped']:.1f}x capped PMRP (one list: {pm['one'] / pm['capped']:.1f}x)"
        )
    print(
        f"  1.5M-line run: lines read {run['line'] / run['fast']:.1f}x faster vectorised; read_run_parts "
        f"{run['parts']:.2f} CPU s ({run['line'] - run['fast']:.2f} s more with the line reader)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
