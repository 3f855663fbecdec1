"""The tie note's cost (issue 59): every metric of the 5,000 x 25,000 test split with the note (the engine's run
with a tally, then the notes: what ``evaluate`` does) beside the same run without it (``tally=None``),
interleaved in one process, on the tie-heavy K3 matrix (scores quantised to 0.05) and on the continuous one;
then the ``np.partition`` floor right after a call with the note beside the same floor after a pause (does a
call leave anything behind?) and the threads alive after the calls. Target: the note within 10% of the call.

Usage: python scripts/benchmark_ties.py [--repeat 7] (``scripts/benchmark.py`` runs it too)
"""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eccv_metric import Metrics  # noqa: E402
from eccv_metric import ScoreMatrix  # noqa: E402
from eccv_metric.api.evaluate import plan_request  # noqa: E402
from eccv_metric.api.evaluate import request_for  # noqa: E402
from eccv_metric.api.tie_notes import tie_notes  # noqa: E402
from eccv_metric.engine.run import run  # noqa: E402
from eccv_metric.engine.ties import Tally  # noqa: E402
from scripts.benchmark_timing import machine  # noqa: E402
from scripts.benchmark_timing import partition_floor  # noqa: E402
from tests.fixtures import INSTANCES  # noqa: E402
from tests.fixtures import make_scores  # noqa: E402

ALL = ("coco_1k_recalls", "coco_5k_recalls", "cxc_recalls", "eccv_map_at_r", "eccv_rprecision", "eccv_r1", "pmrp")
K3_STEP = 0.05
# The same measure on earlier code, for comparison: every metric of the K3 matrix, then of the continuous one,
# through Metrics.compute_all_metrics_from_scores (seconds, best of 5, interleaved; 8d5ae68 had no tie note,
# 5401d09 read again the rows of a group open at a list's end). Issue 59's quiet box: K3 0.76-0.84 s on 8d5ae68,
# 1.97-2.16 s on 5401d09, continuous 0.62-0.80 s on both. This project's 2-core VM, 2026-12-07, load average 4,
# two runs of each, alternated with today's code (K3 0.65-0.92 s, continuous 0.79 s: 0.82-1.15x):
RECORDED = {
    "8d5ae68": {"k3": 0.86, "continuous": 0.69, "note": "no tie note; 1.22-1.24x"},
    "5401d09": {"k3": 3.08, "continuous": 0.88, "note": "the tie note reading rows again; 3.17-3.50x"},
}


def k3_matrix(metrics: Metrics) -> np.ndarray:
    """Issue 59's tie-heavy bench: the tie-heavy matrix's seed and boosts, scores quantised to 0.05 (many items
    tie at every list's end, 8-60 per group)."""
    return make_scores(metrics.gt, "ties", step=K3_STEP)


def calls(metrics: Metrics, scores: np.ndarray, targets: tuple) -> dict[str, Callable[[], object]]:
    """Every metric of ``scores`` with the tie note, and the same engine run without it."""
    source = ScoreMatrix(scores)
    request = request_for(source, list(targets), (1, 5, 10))
    jobs = plan_request(source, request, metrics.resources)

    def with_note() -> list[str]:
        fresh, tally = ScoreMatrix(scores), Tally()
        per_query = run(jobs, fresh, False, request.n_resamples, request.seed, tally)
        return tie_notes(fresh, tally, jobs, per_query)

    def without() -> object:
        return run(jobs, ScoreMatrix(scores), False, request.n_resamples, request.seed)

    return {"with": with_note, "without": without}


def tie_note_stage(metrics: Metrics, targets: tuple, report: Callable[..., None], repeat: int) -> dict[str, float]:
    """The note's cost on the K3 and the continuous matrix (interleaved, best of ``repeat``), then the partition
    floor after a call; returns the ratios."""
    out: dict[str, float] = {}
    before = {t.name for t in threading.enumerate()}
    for name, scores in (("k3", k3_matrix(metrics)), ("continuous", make_scores(metrics.gt, "gauss"))):
        fns = calls(metrics, scores, targets)
        fns["with"]()  # calibration and the resources' first loads, not timed
        best, cpu = interleaved_cpu(fns, repeat)
        out[name], out[f"{name}_cpu"] = best["with"] / best["without"], cpu["with"] / cpu["without"]
        out[f"{name}_seconds"] = best["with"]
        report(f"ours, {name}: every metric with the tie note", best["with"], 0, f"({cpu['with']:.3f} CPU s)")
        report(
            f"ours, {name}: the same without it",
            best["without"],
            0,
            f"({cpu['without']:.3f} CPU s; the note: {100 * (out[name] - 1):+.0f}% wall, "
            f"{100 * (out[f'{name}_cpu'] - 1):+.0f}% CPU)",
        )
        if name == "k3":
            after, paused = floor_after(fns["with"], scores, repeat)
            out["floor_after"] = after / paused
            report("floor right after a call with the note", after, 0, "(np.partition k=50, one thread)")
            report("  the same after a 1 s pause", paused, 0)
    left = sorted({t.name for t in threading.enumerate()} - before)
    out["threads_left"] = len(left)
    print(f"threads left after the calls: {left or 'none'}", flush=True)
    return out


def interleaved_cpu(fns: dict[str, Callable[[], object]], repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall seconds and best CPU seconds (every thread of the process) of each function, calls interleaved:
    on a shared machine the CPU seconds move less than the wall ones, which other jobs stretch."""
    wall, cpu = dict.fromkeys(fns, float("inf")), dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            start, used = time.perf_counter(), time.process_time()
            fn()
            wall[name] = min(wall[name], time.perf_counter() - start)
            cpu[name] = min(cpu[name], time.process_time() - used)
    return wall, cpu


def floor_after(call: Callable[[], object], scores: np.ndarray, repeat: int) -> tuple[float, float]:
    """Best seconds of the partition floor right after ``call``, and after a 1 s pause (the issue saw it slower
    right after a call with the note: something left running or held would show here)."""
    transposed = np.ascontiguousarray(scores.T)
    after, paused = [], []
    for _ in range(repeat):
        call()
        start = time.perf_counter()
        partition_floor(scores, transposed)
        after.append(time.perf_counter() - start)
        time.sleep(1.0)
        start = time.perf_counter()
        partition_floor(scores, transposed)
        paused.append(time.perf_counter() - start)
    return min(after), min(paused)


def summary(out: dict[str, float]) -> list[str]:
    """The ratio lines, with the recorded figures of earlier code."""
    lines = [
        f"  tie note: {out['k3']:.2f}x the call without it on the K3 matrix (quantised to {K3_STEP}), "
        f"{out['continuous']:.2f}x on the continuous one, wall; {out['k3_cpu']:.2f}x and {out['continuous_cpu']:.2f}x "
        "in CPU seconds (target <= 1.10x)",
        f"  K3 / continuous, every metric with the note: {out['k3_seconds'] / out['continuous_seconds']:.2f}x "
        "(recorded: "
        + ", ".join(f"{c} {r['k3'] / r['continuous']:.2f}x ({r['note']})" for c, r in RECORDED.items())
        + ")",
        f"  np.partition right after a call with the note: {out['floor_after']:.2f}x the same after a pause "
        f"(nothing left behind: ~1.0x); threads left: {int(out['threads_left'])}",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    metrics = Metrics(instances_json=INSTANCES if INSTANCES.is_file() else None)
    targets = ALL if INSTANCES.is_file() else ALL[:-1]
    print(machine())

    def report(name: str, seconds: float, peak: float, note: str = "") -> None:
        print(f"{name:<46} {seconds:8.3f} s  {peak / 2**30:6.2f} GB  {note}", flush=True)

    out = tie_note_stage(metrics, targets, report, args.repeat)
    print("\nratios")
    print("\n".join(summary(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
