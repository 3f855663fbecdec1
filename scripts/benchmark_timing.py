"""Timing helpers of ``scripts/benchmark.py``: best wall time and peak resident memory of a call, calls
interleaved, the partition / streaming floors, start-up cost in a fresh interpreter, the machine's description."""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def measure(fn: Callable[[], object], repeat: int = 1) -> tuple[object, float, float]:
    """(result, best wall seconds, peak extra resident bytes) of ``fn``."""
    best, peak, result = float("inf"), 0.0, None
    for _ in range(repeat):
        gc.collect()
        before = _status("VmRSS")
        try:
            Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
        except OSError:
            pass
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
        peak = max(peak, _status("VmHWM") - before)
    return result, best, peak


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Best wall seconds of each function, calls interleaved (a, b, a, b, ...): this machine's speed drifts by
    up to 1.7x between minutes, so a ratio is only meaningful between runs made side by side."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def partition_floor(scores: np.ndarray, transposed: np.ndarray | None) -> None:
    """The physical floor of top-50 retrieval: np.partition (k = 50) of every row of the matrix and of its
    contiguous transpose, 512 rows at a time, one thread."""
    for arr in (scores,) if transposed is None else (scores, transposed):
        for start in range(0, len(arr), 512):
            np.partition(arr[start : start + 512], arr.shape[1] - 50, axis=1)


def partition_floor_threads(scores: np.ndarray, transposed: np.ndarray) -> None:
    """:func:`partition_floor` with the rows and the transpose side by side in two threads (issue 34's floor)."""
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(partition_floor, arr, None) for arr in (scores, transposed)]:
            future.result()


def streaming_floor(scores: np.ndarray) -> None:
    """One streaming pass over the matrix in each direction, side by side: ``max(axis=1)`` and ``max(axis=0)``
    in two threads (numpy releases the GIL): what reading every score once costs on this machine."""
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(scores.max, axis=1), pool.submit(scores.max, axis=0)]:
            future.result()


def startup() -> tuple[float, float, bool]:
    """(seconds to parse the wheel's ground truth, seconds of a cached ``Metrics()``, whether
    ``import eccv_metric`` loaded pyarrow / datasets / evaluate), each in a fresh interpreter."""
    code = (
        "import sys, time; t = time.perf_counter(); import eccv_metric; "
        "heavy = any(m in sys.modules for m in ('pyarrow', 'datasets', 'evaluate')); "
        "from eccv_metric.groundtruth.split import GroundTruth, wheel_data_dir; eccv_metric.Metrics(); "
        "t = time.perf_counter(); GroundTruth._parse_wheel(wheel_data_dir()); parse = time.perf_counter() - t; "
        "t = time.perf_counter(); eccv_metric.Metrics(); print(parse, time.perf_counter() - t, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    parse, cached, heavy = out.stdout.split()
    return float(parse), float(cached), heavy == "True"


def write_noop_module() -> Path:
    """A do-nothing evaluate module: its compute time is evaluate's own fixed cost."""
    folder = Path(tempfile.mkdtemp()) / "noop"
    folder.mkdir()
    (folder / "noop.py").write_text(
        "import datasets\nimport evaluate\n\n\nclass Noop(evaluate.Metric):\n"
        "    def _info(self):\n"
        "        return evaluate.MetricInfo(description='', citation='', inputs_description='', features="
        "datasets.Features({'predictions': datasets.Value('int64'), 'references': datasets.Value('int64')}))\n\n"
        "    def _compute(self, predictions, references):\n        return {}\n"
    )
    return folder


def topk_strategies() -> str:
    """The top-k strategy this process chose for each kind of block, and why (issue 34)."""
    from eccv_metric.kernels import topk_choice

    forced = topk_choice.forced()
    if forced is not None:
        return f"  top-k strategy forced by {topk_choice.ENV}: {forced}"
    lines = [
        f"  {dtype[1:]} rows of ~2^{bits - 1}+ items, k < 2^{kbits}: {c.strategy}, {c.why}"
        for (dtype, bits, kbits), c in sorted(topk_choice.chosen().items())
    ]
    return "\n".join(["top-k strategy chosen by calibration:", *lines] if lines else ["top-k: nothing calibrated"])


def max_diff(official: dict, ours: dict) -> float:
    diffs = [abs(float(v) - ours[k][d]) for k, by in official.items() if isinstance(by, dict) for d, v in by.items()]
    return max(diffs)


def machine() -> str:
    """The machine the numbers were measured on: CPU model, cores, memory, Python and numpy."""
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")
        ]
        model = names[0] if names else model
    memory = (
        os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if hasattr(os, "sysconf") else float("nan")
    )
    return (
        f"machine: {model}, {os.cpu_count()} cores, {memory:.0f} GiB; {platform.python_implementation()} "
        f"{platform.python_version()}, numpy {np.__version__}"
    )
