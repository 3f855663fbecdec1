"""The shared block workers: results in order, errors raised in the caller, priorities, fork safety, no thread left
after a call."""

from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

from eccv_metric import ScoreMatrix
from eccv_metric.kernels import workers
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.topk import top_ranked
from eccv_metric.kernels.workers import BlockWorkers


def test_map_keeps_the_order_of_its_arguments() -> None:
    pool = BlockWorkers(2)
    assert pool.map(lambda x: x * x, range(50), priority=(0,)) == [x * x for x in range(50)]


def test_an_error_in_a_block_is_raised_in_the_caller_and_the_workers_go_on() -> None:
    pool = BlockWorkers(2)

    def work(x: int) -> int:
        if x == 3:
            raise ValueError("block 3")
        return x

    with pytest.raises(ValueError, match="block 3"):
        pool.map(work, range(8), priority=(0,))
    assert pool.map(work, [1, 2], priority=(0,)) == [1, 2]


def test_a_block_that_maps_again_runs_inline_instead_of_deadlocking() -> None:
    pool = BlockWorkers(1)
    assert pool.map(lambda x: sum(pool.map(abs, [-x, x], priority=(0,))), [1, 2], priority=(0,)) == [2, 4]


def _serve_in_turn(pool: BlockWorkers, calls: list[tuple[str, tuple[int, ...]]]) -> list[str]:
    """Queue three blocks per call behind a busy worker, start it, and return the order they ran in."""
    started, release = threading.Event(), threading.Event()
    served: list[str] = []

    def hold(_: object) -> None:
        started.set()
        release.wait(5)

    busy = threading.Thread(target=pool.map, args=(hold, [0], (-1,)))
    busy.start()
    assert started.wait(5)  # the only worker now holds the busy block: what follows queues up
    callers = [threading.Thread(target=pool.map, args=(served.append, [name] * 3, p)) for name, p in calls]
    for caller in callers:
        caller.start()
    deadline = time.monotonic() + 10
    while pool._queue.qsize() < 3 * len(calls) and time.monotonic() < deadline:  # all blocks queued
        threading.Event().wait(0.001)
    release.set()
    for thread in [busy, *callers]:
        thread.join(5)
    return served


def test_a_lower_priority_value_is_served_first() -> None:
    served = _serve_in_turn(BlockWorkers(1), [("small", (0, -10)), ("big", (0, -1000))])
    assert served == ["big"] * 3 + ["small"] * 3


def test_an_earlier_evaluation_is_served_before_a_later_bigger_one() -> None:
    early, late = workers.next_ticket(), workers.next_ticket()
    served = _serve_in_turn(BlockWorkers(1), [("late big", (late, -1000)), ("early small", (early, -10))])
    assert served == ["early small"] * 3 + ["late big"] * 3


def test_score_inputs_take_tickets_in_order() -> None:
    first, second = (ScoreMatrix(np.zeros((3, 4), np.float16)) for _ in range(2))
    assert first.ticket < second.ticket


def _rank_in_child(conn) -> None:  # type: ignore[no-untyped-def]
    scores = np.arange(64 * 40, dtype=np.float32).reshape(64, 40) % 7
    top, bad = top_ranked(MatrixScorer(scores), np.arange(64), 5)[:2]
    conn.send((top.tolist(), bool(bad.any())))


def test_a_forked_child_ranks_with_its_own_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "_cores", lambda: 2)
    monkeypatch.setattr(
        "eccv_metric.kernels.scorers.TOPK_ELEMENTS", 40
    )  # one row per block: many blocks, the workers run
    assert workers.block_workers() is not None  # the parent's workers exist before the fork
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

    monkeypatch.setattr(workers, "_cores", lambda: 2)
    monkeypatch.setattr("eccv_metric.kernels.scorers.TOPK_ELEMENTS", 40)  # one row per block: the workers run them
    scores = np.arange(64 * 40, dtype=np.float32).reshape(64, 40) % 7
    alive = weakref.ref(scores)
    top_ranked(MatrixScorer(scores), np.arange(64), 5)
    del scores
    gc.collect()
    assert alive() is None


def test_no_worker_thread_is_left_after_an_evaluation(monkeypatch: pytest.MonkeyPatch, world, res) -> None:
    """The blocks run on the workers (one row per block), and once evaluate() returns no thread it started is left,
    running or waiting (issue 59: nothing held after a call)."""
    from eccv_metric import evaluate
    from eccv_metric.kernels import topk

    monkeypatch.setattr(workers, "_cores", lambda: 2)
    monkeypatch.setattr("eccv_metric.kernels.scorers.TOPK_ELEMENTS", len(world.caption_ids))
    ran_on: set[str] = set()
    ranked_rows = topk.ranked_rows

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        ran_on.add(threading.current_thread().name)
        return ranked_rows(*args, **kwargs)

    monkeypatch.setattr(topk, "ranked_rows", recorded)
    before = set(threading.enumerate())
    scores = np.round(np.random.default_rng(3).standard_normal((len(world.image_ids), len(world.caption_ids))), 1)
    evaluate(ScoreMatrix(scores), ["coco_5k_r1", "coco_5k_rprecision"], resources=res)
    assert any(name.startswith("eccv-metric-block-") for name in ran_on), ran_on
    assert not [t.name for t in threading.enumerate() if t.name.startswith("eccv-metric-block-")]
    assert set(threading.enumerate()) == before
