"""The image rows of ``scripts/benchmark_models.py``: our image encoding against the decode floor, each decoder's
paths measured alike.

Each path is warmed up first, untimed, on the first two batches (a DataLoader, the decoder, the preprocessing
and the forward pass: nvJPEG's first call, the allocator's first blocks, lazily loaded kernels); then the timed
calls are interleaved ``repeat`` times and the best of each is kept, as for the other in-process rows. Before
2026-11-26 (evening) ours ran once, cold (the first GPU decode of the process), and the floor right after it,
warm: a one-time start-up counted against ours only.

Rows, per decoder (``pil``; ``gpu`` when the model's device has it):

- ``ours_images_<d>``: our encoding of the item set (``encode_items``: workers, decoding ahead of the model,
  the forward pass, rows back to the host);
- ``floor_<d>``: the same workers reading and decoding + preprocessing only (``gpu``: nvJPEG and the tensor
  preprocessing on the device, in this thread), no model;
- ``gpu`` only, to show where ours loses against the floor: ``serial_gpu`` (decode, preprocess and forward one
  after the other in this thread: what the decoding thread should beat), ``switch_gpu`` (ours with
  Python's thread switch interval at 0.5 ms instead of 5 ms: whether two threads wait on each other's GIL) and
  ``stream_gpu`` (ours with the decoding thread's decoding and preprocessing on a CUDA stream of its own,
  that thread waiting on the host for each batch's pixels before handing them on: whether the two threads'
  kernels queued on one stream wait on each other). These rows are for diagnosis only; one that fails is
  reported and the others stand.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from benchmark_timing import interleaved

SWITCH = 0.0005  # seconds: the switch interval of the switch_gpu row


def image_rows(
    encoder: object, images: object, gpu: object, batch: int, workers: int, repeat: int, skip: set[str],
    encode_items: Callable, sync: Callable[[], None],
) -> dict[str, float]:  # fmt: skip
    """Images/s of each row of the module docstring (``gpu``: the GPU decoder or None; ``skip``: ``floors``, no
    floors nor diagnostic rows; ``pil_images``, no ``pil`` rows when ``gpu`` is given (on a GPU they take most
    of this step's time); ``encode_items``: the script's encoding of one item set)."""
    from eccv_metric.models.encoding.decode import RawImages
    from eccv_metric.models.encoding.encode import ImageItems
    from eccv_metric.models.encoding.workers import image_batches

    n = len(images.ids)  # type: ignore[attr-defined]
    todo = [(s, min(s + batch, n)) for s in range(0, n, batch)]
    device = encoder.device  # type: ignore[attr-defined]
    pil = ImageItems(images.locations or [], images.ids, encoder.prepare_image)  # type: ignore[attr-defined]
    raw = RawImages(images.locations or [], images.ids)  # type: ignore[attr-defined]

    def ours(decoder: object, items: object = images) -> Callable[[], object]:
        return lambda: encode_items(encoder, items, batch, workers, decoder)

    def floor_pil(todo: list = todo) -> None:
        for _ in image_batches(pil, todo, workers, device):
            pass

    def on_gpu(todo: list = todo, forward: bool = False) -> None:
        for _, (index, blobs, _) in image_batches(raw, todo, workers, device):
            pixels = gpu.prepare(gpu.decode(blobs, [raw.describe(i) for i in index]))  # type: ignore[attr-defined]
            if forward:
                encoder.encode_prepared(pixels)  # type: ignore[attr-defined]

    sided: list = []  # the side-stream decoder, made once (its stream's memory stays warm between rounds)

    def streamed() -> None:
        if not sided:
            sided.append(side_stream(gpu))
        ours(sided[0])()

    def switched() -> None:
        before = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH)
        try:
            ours(gpu)()
        finally:
            sys.setswitchinterval(before)

    first = images.rows(list(range(min(n, 2 * batch))))  # type: ignore[attr-defined]
    floors = "floors" not in skip
    timed: dict[str, Callable[[], object]] = {}
    failed: dict[str, str] = {}  # diagnostic rows: why one failed ("": it did not)
    warm: list[Callable[[], object]] = []
    if gpu is None or "pil_images" not in skip:
        timed["ours_images_pil"] = ours(None)
        warm.append(ours(None, first))
        if floors:
            timed["floor_pil"] = floor_pil
            warm.append(lambda: floor_pil(todo[:2]))
    if gpu is not None:
        timed["ours_images_gpu"] = ours(gpu)
        warm.append(ours(gpu, first))
        if floors:
            timed["floor_gpu"] = on_gpu
            failed.update(dict.fromkeys(DIAGNOSTIC, ""))
            timed.update(serial_gpu=lambda: on_gpu(forward=True), switch_gpu=switched, stream_gpu=streamed)
            warm.append(lambda: on_gpu(todo[:2], forward=True))
    for fn in warm:
        fn()
    sync()
    calls = {k: _guarded(_synced(fn, sync), failed, k) if k in failed else _synced(fn, sync) for k, fn in timed.items()}
    seconds = interleaved(calls, repeat)
    out: dict = {k: n / s for k, s in seconds.items() if not failed.get(k)}
    out.update({f"{k}_failed": why for k, why in failed.items() if why})
    return out


def side_stream(decoder: Any) -> Any:
    """``decoder`` with its decoding and preprocessing on a CUDA stream of its own: the thread that calls it
    (the decoding thread) waits on the host until a batch's pixels are made, then hands them on, marked as used
    by the model's stream (the allocator keeps them until the model is done with them). A wait queued on the
    model's stream instead would hold back the model's earlier batches too (the thread runs batches ahead)."""
    import torch

    from eccv_metric.models.encoding.decode import Decoder

    side = torch.cuda.Stream(device=decoder.device)
    model_stream = torch.cuda.current_stream(decoder.device)  # the main thread's: the model runs on it

    def decode_jpegs(data: list) -> list:
        with torch.cuda.stream(side):
            return decoder.decode_jpegs(data)

    def prepare(images: list) -> Any:
        with torch.cuda.stream(side):
            pixels = decoder.prepare(images)
            ready = torch.cuda.Event()
            ready.record(side)
        ready.synchronize()
        pixels.record_stream(model_stream)
        return pixels

    return Decoder(decoder.device, decode_jpegs, prepare, decoder.describe)


def _guarded(fn: Callable[[], None], failed: dict[str, str], name: str) -> Callable[[], None]:
    """``fn`` that, once it has raised, records why under ``name`` and is not called again."""

    def call() -> None:
        if failed[name]:
            return
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a diagnostic row: reported, the other rows stand
            failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"

    return call


def _synced(fn: Callable[[], object], sync: Callable[[], None]) -> Callable[[], None]:
    def call() -> None:
        fn()
        sync()

    return call


DIAGNOSTIC = {  # row: (its line in the table, its name among the ratios)
    "serial_gpu": ("decode gpu, preprocess, forward one after the other (one thread)", "one thread"),
    "switch_gpu": (f"ours, decode gpu, thread switch interval {SWITCH * 1000:g} ms", f"ours at {SWITCH * 1000:g} ms"),
    "stream_gpu": ("ours, decode gpu, the decoding thread on a CUDA stream of its own", "ours, own stream"),
}


def report_rows(m: dict, decoders: list[str]) -> list[str]:
    """The table's floor and diagnostic rows."""
    lines = []
    for d in decoders:
        if f"floor_{d}" in m:
            lines.append(f"| decode floor, {d}: {m['workers']} workers read + decode + preprocess | | | "
                         f"{m[f'floor_{d}']:,.0f} | | |")  # fmt: skip
    for key, (what, _) in DIAGNOSTIC.items():
        if key in m:
            lines.append(f"| {what} | | | {m[key]:,.0f} | | |")
        elif f"{key}_failed" in m:
            lines.append(f"| {what} | | | | | failed: {m[f'{key}_failed']} |")
    return lines


def report_ratios(m: dict, decoders: list[str]) -> list[str]:
    lines = []
    for d in decoders:
        if f"floor_{d}" in m:
            ratio = m[f"ours_images_{d}"] / m[f"floor_{d}"]
            lines.append(f"  images, decode {d}: ours / decode floor {ratio:.2f} (GPU target >= 0.8; both warmed up)")
    shown = [f"{DIAGNOSTIC[k][1]} {m[k] / m['floor_gpu']:.2f}" for k in DIAGNOSTIC if k in m and "floor_gpu" in m]
    if shown:
        lines.append("  images, decode gpu, against its floor: " + "; ".join(shown))
    return lines
