"""The process's block workers: two threads that rank score blocks, bigger rankings first.

Every ranking in flight (the two directions of one evaluation, or requests of
a Space served side by side) shares these two threads instead of starting its
own, so the cores are never oversubscribed; they are started by the first
ranking in flight and stopped when the last one returns, so nothing is left
running or held after an evaluation. Blocks are served by priority, then
in submission order. A priority is a tuple: first the evaluation's ticket
(``next_ticket``), so an evaluation that began earlier is served first and
requests served side by side never wait behind later ones; then, within an
evaluation, the ranking with more queries goes first, so its longer serial
tail (scoring, fold filtering) overlaps the other ranking's blocks.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Callable
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
Priority = tuple[int, ...]
_Item = tuple[Priority, int, Callable[[Any], Any], Any, Future[Any]]  # (priority, order, fn, arg, its future)

N_WORKERS = 2


class BlockWorkers:
    """``n`` threads working through a priority queue of calls, started by the first call in flight and stopped
    (joined) when the last call in flight has its results: between calls no thread is left running or waiting,
    and nothing a block made stays referenced."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._queue: queue.PriorityQueue[_Item] = queue.PriorityQueue()
        self._threads: list[threading.Thread] = []
        self._in_flight = 0

    def _serve(self, jobs: queue.PriorityQueue[_Item]) -> None:
        while True:
            _, _, fn, arg, future = jobs.get()
            if future is None:  # stop: the last call in flight returned
                return
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(arg))
                except BaseException as exc:  # handed to the caller, which re-raises it
                    future.set_exception(exc)
            del fn, arg, future  # a worker must not keep the last call's matrix alive

    def map(self, fn: Callable[[T], R], args: Iterable[T], priority: Priority) -> list[R]:
        """``[fn(a) for a in args]`` on the workers; a lower ``priority`` is served first."""
        if threading.current_thread() in self._threads:  # called from a block: waiting on the queue would deadlock
            return [fn(arg) for arg in args]
        with self._lock:
            self._in_flight += 1
            if not self._threads:  # a new set of threads with a queue of its own: the last set may still be ending
                self._queue = queue.PriorityQueue()
                names = [f"eccv-metric-block-{i}" for i in range(self._n)]
                self._threads = [
                    threading.Thread(target=self._serve, args=(self._queue,), name=name, daemon=True) for name in names
                ]
                for thread in self._threads:
                    thread.start()
            jobs = self._queue
        futures: list[Future[R]] = []
        try:
            for arg in args:
                future: Future[R] = Future()
                jobs.put((priority, next(self._seq), fn, arg, future))
                futures.append(future)
            return [future.result() for future in futures]
        finally:  # after an error (or an interrupt) the blocks not started yet are dropped
            for future in futures:
                future.cancel()
            self._leave()

    def _leave(self) -> None:
        """One call in flight fewer; the last one stops the threads and waits for them (a block still running
        after an error ends first)."""
        with self._lock:
            self._in_flight -= 1
            if self._in_flight:
                return
            jobs, threads, self._threads = self._queue, self._threads, []
        for _ in threads:
            jobs.put((LAST, next(self._seq), None, None, None))  # type: ignore[arg-type]
        for thread in threads:
            thread.join()


LAST = (float("inf"),)  # a stop's priority: after every block still queued (cancelled ones are skipped)


_TICKETS = itertools.count()


def next_ticket() -> int:
    """An evaluation's place in line: its blocks are served before those of evaluations that began later."""
    return next(_TICKETS)


_WORKERS: list[BlockWorkers] = []
_LOCK = threading.Lock()


def _cores() -> int:
    return os.cpu_count() or 1


def block_workers() -> BlockWorkers | None:
    """The shared workers (their threads run while a call is in flight); None on a single core (then the caller
    works alone)."""
    if _cores() < N_WORKERS:
        return None
    with _LOCK:
        if not _WORKERS:
            _WORKERS.append(BlockWorkers(N_WORKERS))
        return _WORKERS[0]


def _forget_after_fork() -> None:
    """A forked child has none of the parent's threads (and maybe a held lock, or calls in flight): it starts
    afresh."""
    global _LOCK
    _WORKERS.clear()
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
