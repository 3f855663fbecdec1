"""The shared block workers: results in order, errors raised in the caller, priorities, fork safety."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from eccv_metric import workers
from eccv_metric.topk import top_ranked
from eccv_metric.workers import BlockWorkers


def test_map_keeps_the_order_of_its_arguments() -> None:
    pool = BlockWorkers(2)
    assert pool.map(lambda x: x * x, range(50), priority=0) == [x * x for x in range(50)]


def test_an_error_in_a_block_is_raised_in_the_caller_and_the_workers_go_on() -> None:
    pool = BlockWorkers(2)

    def work(x: int) -> int:
        if x == 3:
            raise ValueError("block 3")
        return x

    with pytest.raises(ValueError, match="block 3"):
        pool.map(work, range(8), priority=0)
    assert pool.map(work, [1, 2], priority=0) == [1, 2]


def test_a_block_that_maps_again_runs_inline_instead_of_deadlocking() -> None:
    pool = BlockWorkers(1)
    assert pool.map(lambda x: sum(pool.map(abs, [-x, x], priority=0)), [1, 2], priority=0) == [2, 4]


def test_a_lower_priority_value_is_served_first() -> None:
    pool = BlockWorkers(1)
    release = threading.Event()
    served: list[str] = []
    busy = threading.Thread(target=pool.map, args=(lambda _: release.wait(5), [0], 0))
    busy.start()  # the only worker now waits: what follows queues up
    callers = [
        threading.Thread(target=pool.map, args=(served.append, ["small"] * 3, -10)),
        threading.Thread(target=pool.map, args=(served.append, ["big"] * 3, -1000)),
    ]
    for caller in callers:
        caller.start()
    while pool._queue.qsize() < 6:  # both callers have queued all their blocks
        threading.Event().wait(0.001)
    release.set()
    for thread in [busy, *callers]:
        thread.join(5)
    assert served == ["big"] * 3 + ["small"] * 3


def _rank_in_child(conn) -> None:  # type: ignore[no-untyped-def]
    scores = np.arange(64 * 40, dtype=np.float32).reshape(64, 40) % 7
    top, bad = top_ranked(scores, np.arange(64), 5, False)[:2]
    conn.send((top.tolist(), bool(bad.any())))


def test_a_forked_child_ranks_with_its_own_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    monkeypatch.setattr("eccv_metric.topk._TOPK_ELEMENTS", 40)  # one row per block: many blocks, the workers run
    assert workers.block_workers() is not None  # the parent's threads exist before the fork
    scores = np.arange(64 * 40, dtype=np.float32).reshape(64, 40) % 7
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :5].tolist()
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=_rank_in_child, args=(child,))
    process.start()
    try:
        assert parent.poll(30), "the forked child hung: it waited on the parent's threads"
        assert parent.recv() == (expected, False)
    finally:
        process.kill()
        process.join(10)


def test_idle_workers_keep_no_reference_to_the_last_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import weakref

    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    monkeypatch.setattr("eccv_metric.topk._TOPK_ELEMENTS", 40)  # one row per block: the workers run them
    scores = np.arange(64 * 40, dtype=np.float32).reshape(64, 40) % 7
    alive = weakref.ref(scores)
    top_ranked(scores, np.arange(64), 5, False)
    del scores
    gc.collect()
    assert alive() is None
