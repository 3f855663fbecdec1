"""The image DataLoader: how many decoding processes, how they start, how far ahead they read.

- **How many** (``workers=None``): on a GPU the cores less one (the main process feeds the GPU; nothing else
  competes for the cores), on a CPU the cores less one but at most 8 (the model's forward pass wants the
  cores too). Cores are those this process may run on (``os.sched_getaffinity``).
- **How they start**: a worker forked from a parent that has initialised CUDA (or whose OpenMP pool runs
  threads the child then asks for) can hang, so with a GPU model the workers are started clean: from a fork
  server (a fresh interpreter that imports torch and whatever unpickling the dataset needs once, then forks a
  worker in milliseconds for each loader) where the platform has one, else spawned. On a CPU they are forked
  (the platform's default): DataLoader workers run torch single-threaded, which keeps them out of the
  parent's OpenMP pool (measured: a forked worker hangs only once it asks for more threads), and spawning
  costs each loader seconds of imports. ``ECCV_CAPTION_WORKER_START=fork|spawn|forkserver`` forces one. A
  script that starts clean workers must guard its top level (``if __name__ == "__main__":``), as for any
  spawned process; the ``eccv-caption`` command does.
- **How far ahead**: each worker prepares ``prefetch_factor`` batches ahead, at least four batches in
  flight in all; on a GPU batches are pinned, so their copies do not block.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
from collections.abc import Callable
from typing import Any

from eccv_metric.core.errors import EvaluationError

START_ENV = "ECCV_CAPTION_WORKER_START"
IN_FLIGHT = 4  # batches prepared ahead of the model, at least, over all workers


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers(device: str = "cpu") -> int:
    """Decoding processes when ``workers=`` is not given (module docstring)."""
    if device.split(":")[0] == "cpu":
        return max(0, min(8, cores() - 1))
    return max(0, cores() - 1)


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
                context.set_forkserver_preload(["torch", "torch.utils.data", *pickled_modules(dataset)])
            options["multiprocessing_context"] = context
    return DataLoader(
        dataset,
        batch_sampler=[list(range(s, e)) for s, e in todo],
        num_workers=workers,
        collate_fn=collate,
        pin_memory=device.startswith("cuda"),
        **options,
    )
