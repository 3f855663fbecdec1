"""Overlap host work with the model: an iterator run a few items ahead in a thread, and device-to-host copies
that finish while the next batch runs.

:func:`ahead` tokenises the next caption batch (or decodes the next image batch) while the model encodes
this one: tokenizers, PIL, numpy and torch release the GIL in their heavy parts. :func:`lagged` starts a
non-blocking copy of each CUDA batch into pinned memory and hands it on only once the next batch has been
launched (host values at once: an encoder may reuse its output buffer), so the GPU never waits for the host's
checks and cache writes. Neither changes a value nor
the order; an exception (a bad item, ``KeyboardInterrupt``) reaches the caller at the item that raised it,
after every earlier item was handed on (so the cache keeps every finished batch).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable
from collections.abc import Iterator
from typing import Any
from typing import TypeVar

T = TypeVar("T")
_DONE = object()
STOP_WAIT = 10.0  # seconds a stopped consumer waits for the producer's current item (a daemon thread after that)


class _Raised:
    def __init__(self, exc: BaseException):
        self.exc = exc


def ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items`` produced in a daemon thread, at most ``depth`` ahead of the consumer; same items, same order.

    An exception in the producer is raised in the consumer at that position. When the consumer stops early
    (an error, ``break``, garbage collection), the producer stops at its next item.
    """
    slots: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if not _put(slots, item, stop):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            _put(slots, _Raised(exc), stop)
            return
        _put(slots, _DONE, stop)

    worker = threading.Thread(target=produce, name="eccv-caption-ahead", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item
    finally:
        stop.set()
        deadline = time.monotonic() + STOP_WAIT
        while worker.is_alive() and time.monotonic() < deadline:  # unblock a producer waiting on a full queue
            try:
                slots.get(timeout=0.05)
            except queue.Empty:
                pass


def _put(slots: queue.Queue, item: object, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            slots.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def start_copy(values: Any) -> Any:
    """A CUDA tensor: a non-blocking copy into pinned host memory, with the event that marks it done; else as is."""
    if not getattr(values, "is_cuda", False):
        return values
    import torch

    host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
    host.copy_(values, non_blocking=True)
    event = torch.cuda.Event()
    event.record()
    return _Copy(host, event)


class _Copy:
    def __init__(self, host: Any, event: Any):
        self.host = host
        self.event = event


def finish_copy(started: Any) -> Any:
    """What :func:`start_copy` began, on the host once its copy is done."""
    if isinstance(started, _Copy):
        started.event.synchronize()
        return started.host
    return started


def lagged(batches: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``(bounds, values)`` pairs in order; a CUDA batch is handed on once the next batch is launched (copied
    without blocking), any other at once (an encoder may reuse its output buffer for the next batch).

    If producing a batch raises, the batch before it is handed on first (its copy finished), then the
    exception is raised.
    """
    pending: tuple[Any, Any] | None = None
    it = iter(batches)
    while True:
        try:
            bounds, values = next(it)
        except StopIteration:
            break
        except BaseException:
            if pending is not None:
                done, pending = pending, None
                yield done[0], finish_copy(done[1])
            raise
        started = start_copy(values)
        if pending is not None:
            done, pending = pending, None
            yield done[0], finish_copy(done[1])
        if isinstance(started, _Copy):
            pending = (bounds, started)
        else:
            yield bounds, started
    if pending is not None:
        yield pending[0], finish_copy(pending[1])
