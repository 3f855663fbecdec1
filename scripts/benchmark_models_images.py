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
  after the other in this thread: what the decoding thread should beat) and ``switch_gpu`` (ours with
  Python's thread switch interval at 0.5 ms instead of 5 ms: whether two threads wait on each other's GIL).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

SWITCH = 0.0005  # seconds: the switch interval of the switch_gpu row


def image_rows(
    encoder: object, images: object, gpu: object, batch: int, workers: int, repeat: int, floors: bool,
    encode_items: Callable, sync: Callable[[], None],
) -> dict[str, float]:  # fmt: skip
    """Images/s of each row of the module docstring (``gpu``: the GPU decoder or None; ``floors``: measure
    the floors; ``encode_items``: the script's encoding of one item set)."""
    from eccv_metric.models.decode import RawImages
    from eccv_metric.models.encode import ImageItems
    from eccv_metric.models.workers import image_batches

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

    def switched() -> None:
        before = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH)
        try:
            ours(gpu)()
        finally:
            sys.setswitchinterval(before)

    first = images.rows(list(range(min(n, 2 * batch))))  # type: ignore[attr-defined]
    timed: dict[str, Callable[[], object]] = {"ours_images_pil": ours(None)}
    warm: list[Callable[[], object]] = [ours(None, first)]
    if floors:
        timed["floor_pil"] = floor_pil
        warm.append(lambda: floor_pil(todo[:2]))
    if gpu is not None:
        timed["ours_images_gpu"] = ours(gpu)
        warm.append(ours(gpu, first))
        if floors:
            timed.update(floor_gpu=on_gpu, serial_gpu=lambda: on_gpu(forward=True), switch_gpu=switched)
            warm.append(lambda: on_gpu(todo[:2], forward=True))
    for fn in warm:
        fn()
    sync()
    from benchmark_timing import interleaved

    seconds = interleaved({k: _synced(fn, sync) for k, fn in timed.items()}, repeat)
    return {k: n / s for k, s in seconds.items()}


def _synced(fn: Callable[[], object], sync: Callable[[], None]) -> Callable[[], None]:
    def call() -> None:
        fn()
        sync()

    return call


def report_rows(m: dict, decoders: list[str]) -> list[str]:
    """The table's floor and diagnostic rows."""
    lines = []
    for d in decoders:
        if f"floor_{d}" in m:
            lines.append(f"| decode floor, {d}: {m['workers']} workers read + decode + preprocess | | | "
                         f"{m[f'floor_{d}']:,.0f} | | |")  # fmt: skip
    if "serial_gpu" in m:
        serial, switch = f"{m['serial_gpu']:,.0f}", f"{m['switch_gpu']:,.0f}"
        lines.append(f"| decode gpu, preprocess, forward one after the other (one thread) | | | {serial} | | |")
        lines.append(f"| ours, decode gpu, thread switch interval {SWITCH * 1000:g} ms | | | {switch} | | |")
    return lines


def report_ratios(m: dict, decoders: list[str]) -> list[str]:
    lines = []
    for d in decoders:
        if f"floor_{d}" in m:
            ratio = m[f"ours_images_{d}"] / m[f"floor_{d}"]
            lines.append(f"  images, decode {d}: ours / decode floor {ratio:.2f} (GPU target >= 0.8; both warmed up)")
    if "serial_gpu" in m:
        one, switch = m["serial_gpu"] / m["floor_gpu"], m["switch_gpu"] / m["floor_gpu"]
        lines.append(f"  images, decode gpu: one thread / decode floor {one:.2f}; "
                     f"ours at {SWITCH * 1000:g} ms switch / decode floor {switch:.2f}")  # fmt: skip
    return lines
