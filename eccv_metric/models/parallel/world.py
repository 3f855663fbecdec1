"""One process or many: who does which block of a model run, and when the others are done.

A model run's work is cut into fixed blocks before anything is computed (an encoder's batches of an item set:
:mod:`eccv_metric.models.cache.store`; a pair scorer's blocks of pairs: :mod:`eccv_metric.models.pairs.blocks`),
numbered the same way in every process. Their sizes never depend on how many processes run, so a block's bits
do not either. :class:`Workers` deals them: block ``b`` is done by rank ``b mod N``; each writes its blocks to
the shared cache as they finish.

- **One process** (the default): every block, then the numbers.
- **torchrun** (``torchrun --nproc_per_node N -m eccv_metric.cli.main evaluate --model ...``, or a script
  calling :func:`~eccv_metric.models.run.evaluate_model`): the ranks come from ``WORLD_SIZE`` / ``RANK`` /
  ``LOCAL_RANK``; the process group is torch's (``torch.distributed.init_process_group``: NCCL when the model
  runs on CUDA, each rank on ``cuda:LOCAL_RANK``; gloo on CPUs). Each rank does its blocks, then waits for the
  others (a barrier), then rank 0 reads every block from the cache and scores; the other ranks return without
  numbers. A process group the caller initialised is used as it is; one started here is closed when the
  process exits (the models of a sweep share it).
- **Independent jobs** (``shard=(i, N)`` / ``--shard i/N``, 1-based: a SLURM array, machines that share a
  folder): job ``i`` does the blocks of rank ``i - 1`` of ``N`` and stops, saying so; a later run without a shard
  reads what every job wrote, computes whatever is missing and scores: the numbers of one process.

Every mode needs the cache (the processes meet there). Joining: a rank started here waits for every other rank
of ``WORLD_SIZE`` to join (torch's ``env://`` rendezvous at ``MASTER_ADDR:MASTER_PORT``, then each rank's key in
its store) for :data:`JOIN_TIMEOUT` at most (``ECCV_CAPTION_JOIN_TIMEOUT``, seconds), saying so on stderr once it
has waited :data:`JOIN_NOTICE` seconds; past it, one error naming the ranks missing (a job script exporting
torchrun's variables for one process, a node that never came up). A rank other than 0 first waits, within the same
time, for something to listen at that address (rank 0's store: :func:`reach`, a plain socket), so that a rank whose
rank 0 never comes ends in that one line: torch's store client, left to time out, prints its C++ frames to stderr
(``socket.cpp``, ``DistNetworkError``), and retries past the time given. The barriers wait :data:`TIMEOUT` at most (a
rank may finish hours after another); ``ECCV_CAPTION_DIST_TIMEOUT`` (seconds) changes it.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from eccv_metric.core.errors import EvaluationError

TIMEOUT = timedelta(hours=48)
TIMEOUT_ENV = "ECCV_CAPTION_DIST_TIMEOUT"
# ranks started together (torchrun) reach the join within their model loads' difference, seconds to minutes; a
# rank missing for 10 minutes is more likely absent than slow (a longer wait: ECCV_CAPTION_JOIN_TIMEOUT)
JOIN_TIMEOUT = timedelta(minutes=10)
JOIN_ENV = "ECCV_CAPTION_JOIN_TIMEOUT"
JOIN_NOTICE = 5.0  # seconds a rank waits for the others before it says so
JOIN_KEY = "eccv_caption/joined"


@dataclass(frozen=True)
class Shard:
    """Job ``index`` (1-based) of ``count`` independent jobs over one cache folder."""

    index: int
    count: int

    @classmethod
    def parse(cls, given: object) -> Shard:
        """``"i/N"``, ``(i, N)`` or a Shard; anything else, or ``i`` outside 1..N, is one error naming ``shard=``."""
        if isinstance(given, Shard):
            return given
        parts: list[object]
        if isinstance(given, str):
            parts = given.strip().split("/")
        elif isinstance(given, (tuple, list)):
            parts = list(given)
        else:
            parts = []
        numbers = [int(p) if isinstance(p, int) or (isinstance(p, str) and p.isdigit()) else None for p in parts]
        if len(numbers) != 2 or None in numbers or isinstance(given, bool):
            raise EvaluationError(f"shard= must be i/N (job i of N, 1-based, e.g. 2/8), not {given!r:.30}")
        index, count = numbers
        if not (1 <= index <= count):  # type: ignore[operator]
            raise EvaluationError(
                f"shard= {index}/{count}: job {index} of {count} does not exist (jobs are numbered 1 to {count})"
            )
        return cls(index, count)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass
class Workers:
    """This process's share of a run (see the module docstring): ``rank`` of ``size``, and how they were started
    (``one``, ``torchrun`` or ``shard``)."""

    rank: int = 0
    size: int = 1
    how: str = "one"
    local_rank: int = 0
    backend: str | None = None

    def mine(self, block: int) -> bool:
        """Whether block number ``block`` is this process's to compute."""
        return block % self.size == self.rank

    @property
    def alone(self) -> bool:
        return self.size == 1

    @property
    def scores(self) -> bool:
        """Whether this process turns the blocks into numbers (one process, or rank 0 of torchrun)."""
        return self.how == "one" or (self.how == "torchrun" and self.rank == 0)

    def barrier(self) -> None:
        """Wait for every rank (torchrun); nothing otherwise."""
        if self.how != "torchrun":
            return
        import torch.distributed as dist

        if self.backend == "nccl":
            dist.barrier(device_ids=[self.local_rank])
        else:
            dist.barrier()

    def describe(self) -> dict:
        """For the provenance: how many processes computed the blocks, and which one this is."""
        if self.how == "one":
            return {"how": "one process"}
        if self.how == "shard":
            return {"how": "shard", "shard": f"{self.rank + 1}/{self.size}"}
        return {"how": "torchrun", "world_size": self.size, "rank": self.rank, "backend": self.backend}


def launched() -> int:
    """The number of processes torchrun started (``WORLD_SIZE``; 1 when not under torchrun)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def rank_device(device: str | None) -> str | None:
    """Under torchrun, each rank's device: ``cuda`` (or nothing, with CUDA present) becomes ``cuda:LOCAL_RANK``;
    a device named with its index is kept. Otherwise ``device`` unchanged."""
    if launched() < 2 or (device is not None and device != "cuda"):
        return device
    import torch

    if device == "cuda" or (device is None and torch.cuda.is_available()):
        return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return device if device is not None else "cpu"


def workers_for(shard: object, device: str | None) -> Workers:
    """This process's :class:`Workers`: a shard when ``shard`` is given, the torchrun ranks when launched so
    (the process group started here unless the caller did), else one process. ``device``: the model's device as
    :func:`rank_device` gives it (NCCL on CUDA, gloo otherwise)."""
    size = launched()
    if shard is not None:
        if size > 1:
            raise EvaluationError(
                f"shard= splits a run into independent jobs, torchrun into {size} ranks of one job: use one of them"
            )
        given = Shard.parse(shard)
        return Workers(given.index - 1, given.count, "shard")
    if size < 2:
        return Workers()
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device is not None and device.startswith("cuda")
    if dist.is_initialized():
        return Workers(dist.get_rank(), dist.get_world_size(), "torchrun", local, dist.get_backend())
    backend = "nccl" if cuda else "gloo"
    if cuda:
        import torch

        torch.cuda.set_device(torch.device(device))
    store, rank, size = join()
    store.set_timeout(timeout())
    dist.init_process_group(backend, store=dist.PrefixStore("default_pg", store), rank=rank, world_size=size,
                            timeout=timeout())  # fmt: skip
    atexit.register(close_group)  # one group for every run of the process (a sweep's models), closed at its end
    return Workers(dist.get_rank(), dist.get_world_size(), "torchrun", local, backend)


def join() -> tuple[object, int, int]:
    """Every rank of ``WORLD_SIZE`` met (see the module docstring): (the rendezvous store, this rank, the world
    size), or one error after :func:`join_timeout`."""
    import torch.distributed as dist

    wait = join_timeout()
    rank, size = os.environ.get("RANK", "?"), os.environ.get("WORLD_SIZE", "?")
    where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
    limit = f"{wait.total_seconds():g} s ({JOIN_ENV} sets the seconds)"
    notice = threading.Timer(JOIN_NOTICE, lambda: print(
        f"rank {rank} of {size}: waiting for the other ranks to join at {where}, up to {limit}", file=sys.stderr,
        flush=True))  # fmt: skip
    notice.daemon = True
    notice.start()
    missing = (f"rank {rank} of {size}: the other ranks did not join at {where} within {limit}: start every "
               f"rank (torchrun --nproc_per_node {size} starts them together), or unset WORLD_SIZE to run one "
               "process")  # fmt: skip
    try:
        left = reach(wait) if rank != "0" else wait  # rank 0 opens the store the others connect to
        if left is None:
            raise EvaluationError(f"{missing} (nothing listens at {where}: rank 0 never opened its store there)")
        return rendezvous(dist, left, rank, size, missing)
    finally:
        notice.cancel()


def rendezvous(dist: object, wait: timedelta, rank: str, size: str, missing: str) -> tuple[object, int, int]:
    """torch's ``env://`` rendezvous, then every rank's key in its store, within ``wait``; torch's errors as one line
    (``missing``: what the line says when the other ranks do not come)."""
    try:
        store, rank_, size_ = next(dist.rendezvous("env://", timeout=wait))  # type: ignore[attr-defined]
        store.set(f"{JOIN_KEY}/{rank_}", "1")
        store.wait([f"{JOIN_KEY}/{r}" for r in range(size_)], wait)
    except ValueError as exc:  # env:// without MASTER_ADDR / MASTER_PORT
        raise EvaluationError(
            f"RANK={rank} WORLD_SIZE={size} name rank {rank} of {size} processes, but {exc}: start the ranks with "
            "torchrun (it sets them), or unset WORLD_SIZE to run one process"
        ) from None
    except RuntimeError as exc:  # torch's store timed out (DistStoreError) or could not reach the address
        raise EvaluationError(
            f"{missing} ({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})"
        ) from None
    return store, rank_, size_


def reach(wait: timedelta) -> timedelta | None:
    """Wait, at most ``wait``, until a connection to ``MASTER_ADDR:MASTER_PORT`` is accepted (rank 0's store is up),
    trying again every 0.1 s; the time left then, or None when it never was. An address torch cannot use either (no
    such variables, a port that is no number) is left to torch's rendezvous to name: the time given back whole."""
    host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT", "")
    if not host or not port.isdigit():
        return wait
    deadline = time.monotonic() + wait.total_seconds()
    while (left := deadline - time.monotonic()) > 0:
        try:
            with socket.create_connection((host, int(port)), timeout=min(1.0, left)):
                return timedelta(seconds=max(deadline - time.monotonic(), 0.001))
        except OSError:  # refused (nothing there yet), unreachable, timed out, a name not yet resolvable
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0.0)))
    return None


def close_group() -> None:
    """Close the process group this process opened (at exit)."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def timeout() -> timedelta:
    """How long a rank waits for the others at the barrier (:data:`TIMEOUT`, or ``ECCV_CAPTION_DIST_TIMEOUT``)."""
    return seconds_of(TIMEOUT_ENV, TIMEOUT, "the seconds a rank waits for the others at a barrier")


def join_timeout() -> timedelta:
    """How long a rank waits for the others to join (:data:`JOIN_TIMEOUT`, or ``ECCV_CAPTION_JOIN_TIMEOUT``)."""
    return seconds_of(JOIN_ENV, JOIN_TIMEOUT, "the seconds a rank waits for the others to join")


def seconds_of(name: str, default: timedelta, what: str) -> timedelta:
    """The environment variable ``name`` as a positive number of seconds (unset: ``default``)."""
    given = os.environ.get(name, "").strip()
    if not given:
        return default
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise EvaluationError(f"{name}={given!r:.20}: give {what} (a positive number)")
    return timedelta(seconds=value)
