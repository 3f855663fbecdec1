"""Which exact top-k strategy this machine runs fastest: chosen once per process by timing both on a real block.

Every strategy of :func:`eccv_metric.kernels.topk.stable_topk` returns the same
bits (the top-k under the stable descending order; see its tests); only their
speed differs, and it depends on the CPU and numpy build: where
``np.partition`` is vectorised (numpy >= 2 dispatches it to x86-simd-sort on
AVX-512 CPUs: measured 2x faster than the chunk-maxima path on an AVX-512
EPYC, numpy 2.4.6) a whole-row partition is the fastest; on a CPU without it
(the EPYC the chunk-maxima path was tuned on) the chunk-maxima path reads far
less through the slow partition. So the first block of long rows (per dtype,
row-length and k bucket) is ranked by each strategy, interleaved,
:data:`ROUNDS` times; the fastest is kept for the rest of the process and is what
:func:`chosen` reports (``scripts/benchmark.py`` prints it).

``ECCV_METRIC_TOPK=chunks`` or ``=partition`` forces one strategy (tests run
each); ``auto`` (or unset) calibrates. ``stable_topk(..., strategy=...)`` forces
one for a single call.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from eccv_metric.core.errors import EvaluationError

T = TypeVar("T")
ENV = "ECCV_METRIC_TOPK"
STRATEGIES = ("chunks", "partition")
DEFAULT = "chunks"  # while the first block is being timed (by another thread), and on blocks too big to time
ROUNDS = 4  # each strategy runs this many times on the calibration block, interleaved; the best time counts
Key = tuple[str, int, int]  # (dtype, row length's bit length, k's bit length)


@dataclass(frozen=True)
class Choice:
    """The strategy kept for a kind of block and why (the calibration's timings)."""

    strategy: str
    why: str


_CHOSEN: dict[Key, Choice] = {}
_PENDING: set[Key] = set()
_LOCK = threading.Lock()


def forced(strategy: str | None = None) -> str | None:
    """The strategy forced by the keyword, else by ``ECCV_METRIC_TOPK``; None: calibrate (``auto``)."""
    where = "strategy" if strategy is not None else ENV
    value = (strategy if strategy is not None else os.environ.get(ENV, "auto")).strip().lower()
    if value in ("", "auto"):
        return None
    if value not in STRATEGIES:
        raise EvaluationError(f"{where}={value!r} is not a top-k strategy: use auto, {', '.join(STRATEGIES)}")
    return value


def key_of(dtype: str, n: int, k: int) -> Key:
    return (dtype, n.bit_length(), k.bit_length())


def pick(key: Key, may_time: bool = True) -> tuple[str | None, bool]:
    """(the strategy kept for ``key`` or None, whether the caller should time the strategies now)."""
    with _LOCK:
        choice = _CHOSEN.get(key)
        if choice is not None:
            return choice.strategy, False
        if key in _PENDING or not may_time:
            return None, False
        _PENDING.add(key)
        return None, True


def calibrate(key: Key, runs: dict[str, Callable[[], T]], what: str) -> tuple[T, bool]:
    """Time every strategy in ``runs`` on one block, keep the fastest for ``key``; (its result, whether kept).

    ``runs`` return ``(result, usable)``: a block whose rows hold NaN or inf
    stops the timing early in every strategy, so its times are not kept.
    """
    best = dict.fromkeys(runs, float("inf"))
    result, usable = None, True
    try:
        for _ in range(ROUNDS):
            for name, run in runs.items():
                start = time.perf_counter()
                result, usable = run()  # type: ignore[misc]
                best[name] = min(best[name], time.perf_counter() - start)
                if not usable:
                    return result, False  # type: ignore[return-value]
        fastest = min(best, key=best.__getitem__)
        times = ", ".join(f"{name} {1000 * t:.2f} ms" for name, t in best.items())
        with _LOCK:
            _CHOSEN[key] = Choice(fastest, f"fastest on a {what} block ({times}, best of {ROUNDS})")
        return result, True  # type: ignore[return-value]
    finally:
        with _LOCK:
            _PENDING.discard(key)


def chosen() -> dict[Key, Choice]:
    """Every strategy kept so far in this process, by (dtype, row-length bits, k bits)."""
    with _LOCK:
        return dict(_CHOSEN)


def forget() -> None:
    """Drop every kept choice (the next long block is timed again)."""
    with _LOCK:
        _CHOSEN.clear()
