"""The image DataLoader: how many decoding processes, how they start, how far ahead they read.

- **How many** (``workers=None``): on a GPU the cores less one (the main process feeds the GPU; nothing else
  competes for the cores); on a CPU every core, at most 8, and none on a single core. There the workers and
  the model's forward pass share the cores, and the slower of the two sets the pace: where it is the forward
  pass, the workers wait on their bounded queue and take next to nothing from it; where it is decoding, the main
  process waits, so a core left to it alone would idle. Measured on a 2-core VM (one worker against two):
  the tests' tiny CLIP's 5,000 COCO-sized JPEGs took 14.0 s against 8.3-9.3 s; a ViT-B/32-shaped model's 300
  images 16.4-16.6 s against 16.0-16.2 s. Cores are those this process may run on
  (``os.sched_getaffinity``).
- **How they start**: a worker forked from a parent that has initialised CUDA (or whose OpenMP pool runs
  threads the child then asks for) can hang, so with a GPU model the workers are started clean: from a fork
  server (a fresh interpreter that imports torch and whatever unpickling the dataset needs once, then forks a
  worker in milliseconds for each loader) where the platform has one, else spawned. On a CPU they are forked
  (the platform's default): DataLoader workers run torch single-threaded, which keeps them out of the
  parent's OpenMP pool (measured: a forked worker hangs only once it asks for more threads), and spawning
  costs each loader seconds of imports. The fork server is started as soon as the device is known, before
  the model loads (:func:`start_early`): its imports (torch, the family's image preprocessing: about 3 s)
  then run beside the model's loading and the captions' encoding instead of before the first image batch.
  ``ECCV_CAPTION_WORKER_START=fork|spawn|forkserver`` forces one. A
  script that starts clean workers must guard its top level (``if __name__ == "__main__":``), as for any
  spawned process; the ``eccv-caption`` command does.
- **How far ahead**: each worker prepares ``prefetch_factor`` pieces ahead, at least four in flight in all;
  on a GPU pieces are pinned, so their copies do not block.
- **In pieces**: with two workers or more, each batch is read in equal pieces (:func:`pieces`:
  about ``PIECES_PER_WORKER`` per worker over the run (each batch cut into as many equal pieces as that asks;
  a short last batch gives fewer), at least ``LEAST_PIECE`` items each) and joined again in the
  main process (:func:`image_batches`; on a GPU on the device). The DataLoader deals its units to the workers
  in turn, so with whole batches the last round leaves most workers idle (5,000 images in batches of 256 are
  20 batches: 15 workers do 15, then 5 of them the last 5, a run twice one batch's time); the model still
  sees the same batches, so nothing encoded changes.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError

START_ENV = "ECCV_CAPTION_WORKER_START"
IN_FLIGHT = 4  # pieces prepared ahead of the model, at least, over all workers
PIECES_PER_WORKER = 4  # loader units per worker over a run, about (two workers or more)
LEAST_PIECE = 16  # items per piece, at least
Bounds = tuple[int, int]
Collated = tuple[list[int], Any, list[str]]  # (indices, stacked tensors or the list of prepared items, errors)


def collate(batch: list) -> Collated:
    """A DataLoader unit of ``(index, prepared item or None, error or None)`` triples as (indices, stacked
    tensors or the list of prepared items, error messages)."""
    index = [b[0] for b in batch]
    errors = [b[2] for b in batch if b[2] is not None]
    values = [b[1] for b in batch]
    if errors:
        return index, None, errors
    if values and hasattr(values[0], "shape") and hasattr(values[0], "detach"):
        import torch

        # numpy's stack: torch.stack of many CPU tensors was measured ~30x slower here (torch 2.13, CPU)
        return index, torch.from_numpy(np.stack([v.numpy() for v in values])), errors
    return index, values, errors


def join(parts: list[Collated], device: str) -> Collated:
    """Collated pieces of one batch as the batch (tensors joined on ``device`` when it is a GPU: the pieces are
    pinned, their copies do not block)."""
    if len(parts) == 1:
        return parts[0]
    index = [i for part in parts for i in part[0]]
    errors = [e for part in parts for e in part[2]]
    if errors:
        return index, None, errors
    values = [part[1] for part in parts]
    if hasattr(values[0], "detach"):
        import torch

        if device.startswith("cuda"):
            return index, torch.cat([v.to(device, non_blocking=True) for v in values]), errors
        return index, torch.cat(values), errors
    return index, [v for value in values for v in value], errors


def pieces(todo: list[Bounds], workers: int) -> list[Bounds]:
    """The loader's units for the batches ``todo`` (module docstring): each batch cut into equal pieces."""
    if workers < 2 or not todo:
        return list(todo)
    per_batch = -(-PIECES_PER_WORKER * workers // len(todo))
    largest = max(stop - start for start, stop in todo)
    size = max(LEAST_PIECE, -(-largest // per_batch))
    return [(p, min(p + size, stop)) for start, stop in todo for p in range(start, stop, size)]


def image_batches(dataset: Any, todo: list[Bounds], workers: int, device: str) -> Iterator[tuple[Bounds, Collated]]:
    """``(bounds, collated batch)`` for each batch of ``todo`` in order, read by :func:`image_loader` in pieces."""
    units = pieces(todo, workers)
    loaded = iter(image_loader(dataset, units, workers, device, collate))
    at = 0
    for start, stop in todo:
        parts = []
        while at < len(units) and units[at][1] <= stop:
            parts.append(next(loaded))
            at += 1
        yield (start, stop), join(parts, device)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers(device: str = "cpu") -> int:
    """Decoding processes when ``workers=`` is not given (module docstring)."""
    n = cores()
    if device.split(":")[0] == "cpu":
        return min(8, n) if n > 1 else 0
    return max(0, n - 1)


def start_method(device: str) -> str | None:
    """How workers start (module docstring); None: the platform's default."""
    forced = os.environ.get(START_ENV, "").strip()
    if forced:
        if forced not in multiprocessing.get_all_start_methods():
            methods = ", ".join(multiprocessing.get_all_start_methods())
            raise EvaluationError(f"{START_ENV}={forced} is not a start method here: use one of {methods}")
        return forced
    if device.split(":")[0] == "cpu":
        return None
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


SERVER_MODULES = ("torch", "torch.utils.data", "eccv_metric.models.encoding.encode")  # what every worker imports


def start_early(device: str, workers: int | None, modules: tuple[str, ...] = ()) -> bool:
    """Start the fork server now (its imports run in its own process, beside this one's work) when this run's
    image workers will come from one: ``workers`` (None: :func:`default_workers`) is not 0 and the start
    method for ``device`` is ``forkserver``. ``modules``: what the model family's image preprocessing needs
    when unpickled (imported once, in the server). Returns whether it started it."""
    count = default_workers(device) if workers is None else workers
    if count < 1 or start_method(device) != "forkserver":
        return False
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload([*SERVER_MODULES, *modules])
    forkserver.ensure_running()  # returns at once: the server imports in its own process
    return True


class _Recorder(pickle.Unpickler):
    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data))
        self.modules: set[str] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.modules.add(module)
        return super().find_class(module, name)


def pickled_modules(obj: object) -> list[str]:
    """The modules unpickling ``obj`` imports (what a fork server should import once, for every worker)."""
    try:
        recorder = _Recorder(pickle.dumps(obj))
        recorder.load()
    except Exception:  # noqa: BLE001 - not picklable: nothing to preload (the DataLoader then says why)
        return []
    return sorted(recorder.modules)


def image_loader(dataset: Any, todo: list[tuple[int, int]], workers: int, device: str, collate: Callable) -> Any:
    """A DataLoader over ``dataset`` giving the batches ``todo`` (ranges of rows), in that order."""
    from torch.utils.data import DataLoader

    options: dict[str, Any] = {}
    if workers > 0:
        options["prefetch_factor"] = max(2, -(-IN_FLIGHT // workers))
        method = start_method(device)
        if method is not None:
            context = multiprocessing.get_context(method)
            if method == "forkserver":
                context.set_forkserver_preload([*SERVER_MODULES, *pickled_modules(dataset)])  # unless running
            options["multiprocessing_context"] = context
    return DataLoader(
        dataset,
        batch_sampler=[list(range(s, e)) for s, e in todo],
        num_workers=workers,
        collate_fn=collate,
        pin_memory=device.startswith("cuda"),
        **options,
    )
