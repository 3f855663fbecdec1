"""More rows of ``scripts/benchmark_models.py``, each in a fresh Python:

- the warm-cache rows (:func:`warm_rows`): the model not loaded (every embedding cached), beside the embeddings
  path alone on the same arrays (:func:`child_embeddings`; ``--warm-repeat N``: both N times, interleaved,
  medians kept: the README's warm-rerun ratio), then loaded (its memo removed: the start-up a run that must
  encode pays);

- ``--models K``: K models of the preset's shape (random weights, seeds 0..K-1, one image processor) in one
  ``evaluate_models`` call, images decoded once for all of them (the default) and decoded per model
  (``share_decode=False``), cold cache: what a sweep costs (issue 40: "a sweep should cost one decode");
- the start-up floor (:func:`child_startup`): a fresh Python importing torch and transformers and loading the
  model, no items; beside CLIP_benchmark's call (which starts after all of that) and our open step;
- ``--profile``: one more warm-cache run of ``--benchmarks`` with the model loaded (its memo removed) and one
  more cold-cache run, each under cProfile (rows of their own: the profiler slows them; the timed rows run
  without), their 40 most expensive calls (cumulative; Python 3.12's cProfile also counts other threads'
  time), so that the start-up a run that loads the model pays, and a cold run's waits, show where they go.

Before the timed rows, :func:`warm_up` runs ours once, untimed. Every row of ours notes its steps (provenance
``step_seconds``: open, embed with each item set it encoded, score) and, per item set it encoded, the seconds
to its first batch and the median seconds per batch after it (:func:`batch_clock`): a run's start-up costs
(first kernels, the decoder's first call, the pipeline filling) against its steady pace.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import os
import pstats
import sys
import time
from pathlib import Path

import benchmark_models_world as world

STARTUP = "start-up floor: torch + transformers imported, the model loaded, no items"
WARM = "ours, --benchmarks, warm cache"
ALONE = "the embeddings path alone on the warm run's arrays (whole process: read and scored, no model)"
COLD_RUNS = ("ours, coco_5k, cold cache", "ours, --benchmarks, cold cache")  # the rows of benchmark_models.main


def batch_clock() -> list[dict]:
    """From now on, each item set this process encodes adds to the returned list: its label, the seconds from
    its first request to its first batch's rows on the host, and the median seconds between batches after it
    (the store's ``encode_batches`` wrapped; nothing synchronised, nothing else changed). On a GPU a batch's
    rows come back once the next batch is launched (``models.encoding.background.lagged``; with ``decode="gpu"`` also
    decoded), so there "first batch" includes about one more batch's time. Single-model rows only."""
    import statistics

    from eccv_metric.models.cache import store

    clock: list[dict] = []
    inner = store.encode_batches

    def timed(encoder: object, items: object, *args: object, **kwargs: object) -> object:
        stamps = [time.perf_counter()]
        for out in inner(encoder, items, *args, **kwargs):  # type: ignore[arg-type]
            stamps.append(time.perf_counter())
            yield out
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        if gaps:
            then = statistics.median(gaps[1:]) if len(gaps) > 1 else None
            clock.append({"set": items.item_set.label, "first": gaps[0], "then": then, "batches": len(gaps)})  # type: ignore[attr-defined]

    store.encode_batches = timed  # type: ignore[assignment]
    return clock


def model_folders(root: Path, preset: str, k: int) -> list[Path]:
    """The preset's model (seed 0) and k - 1 more of its shape (seeds 1..k-1), written once."""
    return [world.write_model(root / (f"model_{preset}" if s == 0 else f"model_{preset}_{s}"), preset, s)
            for s in range(k)]  # fmt: skip


def child_many(args: argparse.Namespace, root: Path) -> dict:
    """The K models in one evaluate_models call (``--share`` yes / no)."""
    from eccv_metric.models.many import evaluate_models

    specs = [f"hf:{f}" for f in model_folders(root, args.preset, args.models)]
    start = time.perf_counter()
    runs = evaluate_models(
        specs, root / "world", benchmarks=args.benchmarks, resources=world.resources(root / "world"),
        device=args.device, precision=args.precision, batch_size=args.batch_size,
        text_batch_size=args.text_batch_size, workers=args.workers, decode=args.decode, cache_dir=args.cache,
        share_decode=args.share == "yes",
    )  # fmt: skip
    fed = [r.provenance["items"].get("images.image", {}).get("shared_decode") for r in runs]
    return {"call": time.perf_counter() - start, "fed": sum(1 for f in fed if f)}


def child_startup(args: argparse.Namespace, root: Path) -> dict:
    """The start-up floor: what any process that runs this model pays before its first batch, and nothing
    else: torch and transformers imported (torchvision's decoder too with ``--decode gpu``), the model and its
    processor loaded as ours loads them (``AutoModel`` / ``AutoProcessor``, then to the device), the device's
    first kernel run. No items, no cache, no scoring. Its wall beside CLIP_benchmark's call says whether a whole
    process can meet issue 40's "in CLIP_benchmark's time" (its call starts after all of this)."""
    start = time.perf_counter()
    import torch

    imported_torch = time.perf_counter()
    from transformers import AutoModel
    from transformers import AutoProcessor

    if args.decode == "gpu":
        import torchvision.io  # noqa: F401 - what --decode gpu imports

    imported = time.perf_counter()
    folder = root / f"model_{args.preset}"
    mps = getattr(torch.backends, "mps", None)
    has_mps = mps is not None and mps.is_available()
    device = args.device or ("cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu")  # as ours picks
    model = AutoModel.from_pretrained(folder).to(device).eval()
    AutoProcessor.from_pretrained(folder)
    (torch.ones(8, device=device) * 2).sum().item()  # the device's first kernel, waited for
    done = time.perf_counter()
    steps = {"torch": imported_torch - start, "transformers": imported - imported_torch, "load": done - imported}
    return {"call": done - start, "steps": steps, "parameters": sum(p.numel() for p in model.parameters())}


def startup_rows(passed: list[str], run_child: object, rounds: int = 3) -> dict[str, dict]:
    """The start-up floor's row (:func:`child_startup`): ``rounds`` fresh processes like the others, the fastest
    kept (a floor; one process varies by a second or more on a busy machine), the others' walls noted."""
    runs = [run_child("startup", passed, []) for _ in range(rounds)]  # type: ignore[operator]
    good = [r for r in runs if "error" not in r]
    if not good:
        return {STARTUP: runs[0]}
    best = min(good, key=lambda r: r["wall"])
    return {STARTUP: {**best, "walls": sorted(round(r["wall"], 2) for r in good)}}


def startup_ratios(ours: dict[str, dict], theirs: dict | None) -> list[str]:
    """The start-up floor against CLIP_benchmark's call and our open step (lines of the ratios)."""
    floor = ours.get(STARTUP)
    if floor is None:
        return []
    lines = []
    if theirs:
        lines.append(f"  start-up floor (a fresh process: imports, model loaded, no items): {floor['wall']:.1f} s, "
                     f"{floor['wall'] / theirs['call']:.2f} of CLIP_benchmark's call, "
                     f"{floor['wall'] / theirs['wall']:.2f} of its process")  # fmt: skip
        for name in COLD_RUNS:
            if name in ours:  # all that a whole run of ours costs beyond what any process running the model pays
                beyond = ours[name]["wall"] - floor["wall"]
                lines.append(f"  {name}, beyond the start-up floor ({beyond:.1f} s): "
                             f"{beyond / theirs['call']:.2f} of CLIP_benchmark's call")  # fmt: skip
    cold = (ours.get("ours, --benchmarks, cold cache") or {}).get("steps") or {}
    if "open" in cold:
        lines.append(f"  ours, --benchmarks, cold cache: open step {cold['open']:.1f} s against the floor's call "
                     f"{floor['call']:.1f} s ({cold['open'] / floor['call']:.2f})")  # fmt: skip
    return lines


def profiled(fn: object) -> tuple[object, str]:
    """``fn()`` under cProfile: its result and the 40 most expensive calls (cumulative), then this package's 30
    (imports nest deeply and crowd the first list)."""
    profile = cProfile.Profile()
    out = profile.runcall(fn)  # type: ignore[arg-type]
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text).sort_stats("cumulative")
    stats.print_stats(40)
    stats.print_stats("eccv_metric", 30)
    return out, text.getvalue()


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", type=int, default=1, help="K > 1: K models in one call, shared / per-model decode")
    p.add_argument("--profile", action="store_true", help="warm and cold runs under cProfile (top 40)")
    p.add_argument("--warm-repeat", type=int, default=1, help="the warm row and the embeddings path: N each, medians")
    p.add_argument("--share", choices=["yes", "no"], help=argparse.SUPPRESS)


def many_rows(args: argparse.Namespace, passed: list[str], root: Path, run_child: object) -> dict[str, dict]:
    """The ``--models`` rows (cold caches), for the table."""
    import shutil

    rows = {}
    for share in ("yes", "no"):
        cache = root / f"cache_many_{share}"
        shutil.rmtree(cache, ignore_errors=True)
        name = f"ours, {args.models} models, decode {'shared' if share == 'yes' else 'per model'}, cold cache"
        rows[name] = run_child("many", passed, ["--cache", str(cache), "--share", share])  # type: ignore[operator]
    return rows


def warm_up(root: Path, passed: list[str], run_child: object) -> None:
    """One untimed run of ours (coco_5k, a cache of its own) before the timed rows, every model file read once:
    the first process on a machine otherwise pays alone for what every later one finds ready (the page cache
    holding the libraries, the JPEGs and the weights; CUDA's kernels loaded; compiled bytecode where the
    environment keeps it, e.g. ``PYTHONPYCACHEPREFIX``), which skewed the first row of a fresh machine. It runs
    ours, not CLIP_benchmark: the libraries both import are warmed, CLIP_benchmark's own small package is not."""
    import shutil

    started = time.perf_counter()
    for path in sorted(root.glob("model_*/*")):
        if path.is_file():
            with open(path, "rb") as f:
                while f.read(1 << 24):
                    pass
    cache = root / "cache_warm_up"
    shutil.rmtree(cache, ignore_errors=True)
    row = run_child("ours", [*passed, "--benchmarks", "coco_5k"], ["--cache", str(cache)])  # type: ignore[operator]
    shutil.rmtree(cache, ignore_errors=True)
    failed = f" (it failed: {row['error']})" if "error" in row else ""
    print(f"warm-up (untimed): {time.perf_counter() - started:.1f} s{failed}", file=sys.stderr)


def child_embeddings(args: argparse.Namespace, root: Path) -> dict:
    """The embeddings path alone: a fresh Python reading the image and caption arrays a warm run of
    ``--benchmarks`` reads (the cold run's cache entries) and scoring them with ``eccv_metric.evaluate`` (cosine,
    as the CLIP scores them): no model, no torch. What a warm rerun is measured against."""
    import json
    import warnings

    start = time.perf_counter()
    import numpy as np

    from eccv_metric import Embeddings
    from eccv_metric import evaluate

    found = {json.loads(m.read_text())["key"]["items"]: m.parent for m in Path(args.cache).glob("*/meta.json")}
    if set(found) != {"images.image", "captions.caption"}:
        raise SystemExit(f"the embeddings row takes the COCO test images and captions only, not {sorted(found)}")
    images, captions = (np.load(found[label] / "embeddings.npy") for label in ("images.image", "captions.caption"))
    with warnings.catch_warnings():  # random weights: numbers at chance level
        warnings.simplefilter("ignore")
        evaluate(Embeddings(images, captions, normalize=True), benchmarks=args.benchmarks,
                 resources=world.resources(root / "world"), n_resamples=1000)  # fmt: skip
    return {"call": time.perf_counter() - start}


def median_row(runs: list[dict]) -> dict:
    """Of several processes of one row, the one of median wall (the others' walls noted)."""
    good = sorted((r for r in runs if "error" not in r), key=lambda r: r["wall"])
    if not good:
        return runs[0]
    kept = good[(len(good) - 1) // 2]
    return {**kept, "walls": [round(r["wall"], 2) for r in good], "kept": "median"} if len(good) > 1 else kept


def warm_rows(args: argparse.Namespace, passed: list[str], cache: Path, run_child: object) -> dict[str, dict]:
    """The warm-cache rows of ``--benchmarks`` (``cache``: the cold run's): the model not loaded (its memo
    remembered, eccv_metric.models.cache.recall) and the embeddings path alone on its arrays, ``--warm-repeat``
    times each, interleaved (medians kept), then loaded (the memo removed); with ``--profile``, once more
    loaded, under cProfile (a run of its own: the profiler slows what it measures, the rows above stay
    unprofiled)."""
    import shutil

    warm, alone = [], []
    for _ in range(max(1, args.warm_repeat)):  # interleaved: this machine's speed drifts between minutes
        warm.append(run_child("ours", passed, ["--cache", str(cache)]))  # type: ignore[operator]
        alone.append(run_child("embeddings", passed, ["--cache", str(cache)]))  # type: ignore[operator]
    rows = {WARM: median_row(warm), ALONE: median_row(alone)}
    shutil.rmtree(cache / "models", ignore_errors=True)
    name = "ours, --benchmarks, warm cache, the model loaded (its memo removed)"
    rows[name] = run_child("ours", passed, ["--cache", str(cache)])  # type: ignore[operator]
    if args.profile:
        shutil.rmtree(cache / "models", ignore_errors=True)
        name = "ours, --benchmarks, warm cache, under cProfile (slowed by it)"
        rows[name] = run_child("ours", passed, ["--cache", str(cache), "--profile-this"])  # type: ignore[operator]
        cold = cache.with_name(cache.name + "_profiled")
        shutil.rmtree(cold, ignore_errors=True)
        name = "ours, --benchmarks, cold cache, under cProfile (slowed by it)"
        rows[name] = run_child("ours", passed, ["--cache", str(cold), "--profile-this"])  # type: ignore[operator]
        shutil.rmtree(cold, ignore_errors=True)
    return rows


def clip_benchmark_ratios(ours: dict[str, dict], theirs: dict) -> list[str]:
    """Our whole runs against CLIP_benchmark's process and its call; and our embed + score steps (the run once
    the libraries are imported and the model loaded, as its call starts) against its call (lines of the ratios)."""
    lines = []
    for name in (*COLD_RUNS, WARM):
        if name in ours:
            lines.append(f"  {name}: {ours[name]['wall'] / theirs['wall']:.2f} of CLIP_benchmark's process, "
                         f"{ours[name]['wall'] / theirs['call']:.2f} of its call")  # fmt: skip
    for name in COLD_RUNS:
        steps = (ours.get(name) or {}).get("steps") or {}
        if "embed" in steps and "score" in steps:
            after = steps["embed"] + steps["score"]
            lines.append(f"  {name}, embed + score steps ({after:.1f} s, the model loaded): "
                         f"{after / theirs['call']:.2f} of CLIP_benchmark's call (its model built, its libraries "
                         "imported)")  # fmt: skip
    return lines


def warm_ratio(ours: dict[str, dict]) -> list[str]:
    """The warm rerun against the embeddings path alone on its arrays (lines of the ratio)."""
    if WARM not in ours or ALONE not in ours:
        return []
    rounds = len(ours[WARM].get("walls") or [0])
    return [f"  {WARM} / the embeddings path alone: {ours[WARM]['wall'] / ours[ALONE]['wall']:.2f} "
            f"({ours[WARM]['wall']:.2f} s / {ours[ALONE]['wall']:.2f} s, {'medians of ' if rounds > 1 else ''}"
            f"{rounds} process{'es' if rounds > 1 else ''} each; README: 1.10x)"]  # fmt: skip


def steps_note(row: dict, note: str) -> str:
    """A row's note: whether the model loaded, the run's steps (provenance ``step_seconds``; embed: per item
    set), its batch times, the walls of a row kept as the fastest of several processes, and ``note``."""
    steps = row.get("steps") or {}
    sets = ", ".join(f"{k} {v['seconds']:.1f}" for k, v in (row.get("items") or {}).items() if v.get("encoded"))
    parts = [f"{k} {v:.1f}" + (f" ({sets})" if k == "embed" and sets else "") for k, v in steps.items()]
    loaded = [] if row.get("model_loaded", True) else ["model not loaded (every embedding cached)"]
    paces = [f"{c['set']} first batch {c['first']:.2f} s" + (f", then {c['then']:.3f} s each" if c["then"] else "")
             for c in row.get("batches") or []]  # fmt: skip
    stepped = ["steps: " + ", ".join(parts)] if parts else []
    paced = ["batches: " + ", ".join(paces)] if paces else []
    walls = ", ".join(map(str, row.get("walls") or []))
    rounds = [f"{row.get('kept', 'fastest')} of {len(row['walls'])} processes (walls {walls} s)"] if walls else []
    return "; ".join([*loaded, *stepped, *paced, *rounds, *([note] if note else [])])


def print_profile(runs: dict[str, dict]) -> None:
    for name, r in runs.items():
        if r.get("profile"):
            print(f"profile of '{name}' (cumulative, top 40):", file=sys.stderr)
            print(r["profile"], file=sys.stderr)


def device_name(device: str) -> str:
    """The device the rows ran on (a GPU's name and the host's cores; else the machine), torch's and
    transformers' versions."""
    import torch
    import transformers
    from benchmark_timing import machine

    versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(0)} ({os.cpu_count()} CPU cores); {versions}"
    return f"{machine().removeprefix('machine: ')}; {versions}"
