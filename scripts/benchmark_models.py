"""The model path against CLIP_benchmark and against the hardware, in one run: same model, items, batch, workers.

Builds a synthetic built-like folder (``scripts/benchmark_models_world.py``: COCO-sized 640 x 480 JPEGs of
about 88 KB, COCO-like captions, ground truth and CxC ratings) and a random CLIP (``--preset tiny``: the unit
tests' tiny CLIP; ``b32``: ViT-B/32's shape, 49,408-token vocabulary), then prints:

- ours, whole process (a fresh Python running ``evaluate_model``: imports, model load, items, encoding,
  scoring), for ``--benchmarks`` with a cold cache, for ``coco_5k`` alone with a cold cache, and again for
  ``--benchmarks`` from the warm cache (the model not loaded: ``eccv_metric.models.cache.recall``; beside it the
  embeddings path alone on the same arrays, ``--warm-repeat`` times each, medians), then once more
  with the model's memo removed (the model loaded, the embeddings read from the cache: the start-up a run
  that must encode pays);
- CLIP_benchmark's ``clip_benchmark.metrics.zeroshot_retrieval.evaluate``, whole process and its call, fed as
  its ``mscoco_captions`` builder feeds it (a map-style dataset over the JPEG files giving (the model's
  preprocessed image, its captions), ``image_captions_collate_fn``, the same batch and workers);
- our encoding alone (``encode_items``: images, then captions), in this process after a warm-up;
- the start-up floor: a fresh Python importing torch and transformers and loading the model, no items (what
  any process running the model pays; CLIP_benchmark's call starts after it);
- the bare forward pass (images prepared beforehand and captions tokenised beforehand, already on the device:
  the model alone) and the tokenizer alone;
- the decode floor: images/s of the same number of worker processes doing decode + preprocessing only
  (``--decode gpu``: nvJPEG and the tensor preprocessing on the device), each image path warmed up first and
  its calls interleaved with ours (``scripts/benchmark_models_images.py``, which also prints, for ``gpu``, three
  diagnostic rows: one thread, a shorter thread switch interval, the decoding thread on its own CUDA stream);
- with ``--compare-decoders`` (CUDA + torchvision): coco_5k R@1/5/10 and per-query ranks of the PIL path
  against the GPU decoder on the same images;
- with ``--models K`` / ``--profile``: K models in one call, decode shared and per model; the warm run's
  profile (``scripts/benchmark_models_more.py``).

Needs: torch, transformers (with tokenizers, huggingface_hub), pyarrow, pillow, numpy, this project
(``eccv_metric``; neither ``datasets`` nor ``evaluate`` is imported on this path), and for its row
``clip_benchmark`` (``pip install --no-deps clip-benchmark``; without it that row says so);
``--decode gpu`` needs torchvision. Usage::

    python scripts/benchmark_models.py --preset tiny --n-images 1000 --n-captions 5000 --device cpu
    python scripts/benchmark_models.py --preset b32 --precision fp16 --batch-size 256 --workers 15 --decode gpu
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import benchmark_models_images as images_rows  # noqa: E402
import benchmark_models_more as more  # noqa: E402
import benchmark_models_world as world  # noqa: E402
from benchmark_models_clip import child_clip_benchmark  # noqa: E402
from benchmark_timing import interleaved  # noqa: E402

FIVE = ["coco_5k", "eccv", "cxc", "cxc_t2t", "cxc_i2i"]
CHILD_TIMEOUT = 300  # seconds a whole-process run may take before its row says so
REPEAT = 5  # interleaved rounds of the in-process timings (the best of each is kept)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=["tiny", "b32"], default="tiny")
    p.add_argument("--n-images", type=int, default=5000)
    p.add_argument("--n-captions", type=int, default=25000)
    p.add_argument("--device", default=None, help="cuda, cpu, ... (default: CUDA if there is one)")
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--text-batch-size", type=int, default=None, help="default: ours by device")
    p.add_argument("--workers", type=int, default=None, help="default: ours by device")
    p.add_argument("--decode", choices=["pil", "gpu"], default="pil")
    p.add_argument("--benchmarks", nargs="+", default=FIVE)
    p.add_argument("--folder", help="keep the synthetic world here (reused when its sizes match)")
    p.add_argument("--compare-decoders", action="store_true", help="PIL path against --decode gpu (CUDA)")
    p.add_argument("--image-repeat", type=int, default=3, help="interleaved rounds of the image rows (best kept)")
    p.add_argument("--skip", nargs="*", default=[], choices=["processes", "clip_benchmark", "floors", "pil_images"])
    more.add_args(p)
    children = ["ours", "clip_benchmark", "many", "startup", "embeddings"]
    p.add_argument("--child", choices=children, help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--profile-this", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def child_ours(args: argparse.Namespace, root: Path) -> dict:
    from eccv_metric.models.run import evaluate_model

    res = world.resources(root / "world")
    clock = more.batch_clock()
    start = time.perf_counter()
    out, profile = (more.profiled if args.profile_this else lambda fn: (fn(), ""))(lambda: evaluate_model(
        f"hf:{root / f'model_{args.preset}'}", root / "world", benchmarks=args.benchmarks, resources=res,
        device=args.device, precision=args.precision, batch_size=args.batch_size,
        text_batch_size=args.text_batch_size, workers=args.workers, decode=args.decode, cache_dir=args.cache,
    ))  # fmt: skip
    means = out.results.means()
    third = sorted({m.split(".")[0] for m in sys.modules} & THIRD_PARTY)
    return {
        "call": time.perf_counter() - start,
        "recalls": {k: means[f"coco_5k_r{k}"] for k in (1, 5, 10)} if "coco_5k_r1" in means else None,
        "items": {k: {f: v.get(f) for f in ("seconds", "encoded")} for k, v in out.provenance["items"].items()},
        "steps": out.provenance.get("step_seconds"),
        "batches": clock,
        "workers": out.provenance["workers"],
        "text_batch_size": out.provenance["text_batch_size"],
        "model_loaded": out.provenance.get("model_loaded", True),
        "modules": third,
        "profile": profile,
    }  # fmt: skip


THIRD_PARTY = {"torch", "transformers", "tokenizers", "huggingface_hub", "pyarrow", "PIL", "numpy", "tqdm", "yaml",
               "datasets", "evaluate", "eccv_caption", "scipy", "pandas", "safetensors", "torchvision",
               "sentence_transformers"}  # fmt: skip


def run_child(kind: str, argv: list[str], extra: list[str]) -> dict:
    path = os.pathsep.join([str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])  # ours first
    env = {**os.environ, "ECCV_CAPTION_PROGRESS": "0", "TQDM_DISABLE": "1", "PYTHONPATH": path}
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, *argv, "--child", kind, *extra], capture_output=True,
                              text=True, env=env, check=False, timeout=CHILD_TIMEOUT)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"wall": time.perf_counter() - start, "error": f"no result after {CHILD_TIMEOUT} s"}
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        row = {"wall": wall, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    else:
        row = {"wall": wall, **json.loads(lines[-1][7:])}
    # at once, on stderr: a run cut short (a device's time limit) keeps the rows it finished
    brief = {k: row[k] for k in ("wall", "call", "steps", "batches", "error") if k in row}
    print(f"row done: {kind} {' '.join(argv[-2:] + extra)}: {json.dumps(brief)}", file=sys.stderr, flush=True)
    return row


def synced(encoder: object) -> None:
    import torch

    if encoder.device.startswith("cuda"):  # type: ignore[attr-defined]
        torch.cuda.synchronize()


def synced_call(fn: object, encoder: object) -> None:
    """``fn()``, its GPU work finished."""
    fn()  # type: ignore[operator]
    synced(encoder)


def encode_items(encoder: object, items: object, size: int, workers: int, decoder: object = None) -> tuple:
    """Our encoding of one item set, cache off (the store's batches: ``size`` items each, captions in their
    length order; ``decoder``: the GPU decoder, None: PIL)."""
    from eccv_metric.models.cache.store import EmbeddingStore

    return EmbeddingStore(encoder, None, size, workers, size, decoder).values(items, None)  # type: ignore[arg-type]


def in_process(args: argparse.Namespace, root: Path) -> dict:
    """Our encoding alone, the bare forward pass, the tokenizer alone and the decode floor."""
    import torch

    from eccv_metric.models.data.items import ITEM_SOURCES
    from eccv_metric.models.data.items import ItemSet
    from eccv_metric.models.data.source import DataSource
    from eccv_metric.models.encoding.decode import check_decode
    from eccv_metric.models.encoding.decode import gpu_decoder
    from eccv_metric.models.encoding.encode import ImageItems
    from eccv_metric.models.encoding.text_batches import default_text_batch_size
    from eccv_metric.models.encoding.workers import default_workers
    from eccv_metric.models.families.spec import load_model

    encoder = load_model(f"hf:{root / f'model_{args.preset}'}", args.device, args.precision)
    decoder = None
    if args.decode == "gpu":
        try:
            check_decode(args.decode, encoder)
            decoder = gpu_decoder(encoder)
        except Exception as exc:  # noqa: BLE001 - the PIL rows still come; the reason is printed
            print(f"decode gpu unavailable here: {type(exc).__name__}: {exc}", file=sys.stderr)
    workers = default_workers(encoder.device) if args.workers is None else args.workers
    text_batch = args.text_batch_size or default_text_batch_size(encoder.device)
    source = DataSource(root / "world")
    images = source.read(ItemSet("coco_5k", "image", ITEM_SOURCES["coco_5k"]["image"]))
    captions = source.read(ItemSet("coco_5k", "caption", ITEM_SOURCES["coco_5k"]["caption"]))
    texts = captions.texts or []
    n_img, n_cap = len(images.ids), len(texts)
    dataset = ImageItems(images.locations or [], images.ids, encoder.prepare_image)
    sample = [dataset[i][1] for i in range(min(n_img, max(args.batch_size * 2, 64)))]  # prepared pixels
    stacks = [torch.stack(sample[s : s + args.batch_size]) for s in range(0, len(sample), args.batch_size)]
    stacks = [s.to(encoder.device) for s in stacks if len(s) == args.batch_size] or [
        torch.stack(sample).to(encoder.device)
    ]
    tokens = [encoder.tokenize(texts[s : s + text_batch]) for s in range(0, n_cap, text_batch)]
    on_device = [{k: v.to(encoder.device) for k, v in t.items()} for t in tokens]
    for _ in range(2):  # warm-up: kernels, allocator, autotuning
        encoder.encode_prepared(stacks[0])
        encoder.encode_tokens(on_device[0])
    synced(encoder)
    out: dict = {"device": encoder.device, "workers": workers, "text_batch": text_batch}

    def bare_images() -> None:
        for done in range(0, n_img, args.batch_size):
            encoder.encode_prepared(stacks[(done // args.batch_size) % len(stacks)])

    def bare_captions() -> None:
        for t in on_device:
            encoder.encode_tokens(t)

    def tokenize() -> None:
        for s in range(0, n_cap, text_batch):
            encoder.tokenize(texts[s : s + text_batch])

    def ours_captions() -> None:
        encode_items(encoder, captions, text_batch, workers)

    n_bare = -(-n_img // args.batch_size) * len(stacks[0])
    fns = {
        "bare_images": bare_images,
        "bare_captions": bare_captions,
        "tokenize": tokenize,
        "ours_captions": ours_captions,
    }
    seconds = interleaved({k: functools.partial(synced_call, f, encoder) for k, f in fns.items()}, REPEAT)
    out["bare_images"] = n_bare / seconds["bare_images"]
    out.update({k: n_cap / seconds[k] for k in ("bare_captions", "tokenize", "ours_captions")})
    skip = {"floors", "pil_images"} & set(args.skip)
    sync = functools.partial(synced, encoder)
    out.update(images_rows.image_rows(encoder, images, decoder, args.batch_size, workers, args.image_repeat, skip,
                                      encode_items, sync))  # fmt: skip
    return out


def compare_decoders(args: argparse.Namespace, root: Path) -> list[str]:
    """coco_5k R@K and per-query ranks of the positives: PIL path against the GPU decoder (same model)."""
    import torch

    from eccv_metric import Embeddings
    from eccv_metric import evaluate
    from eccv_metric.models.data.items import ITEM_SOURCES
    from eccv_metric.models.data.items import ItemSet
    from eccv_metric.models.data.source import DataSource
    from eccv_metric.models.encoding.decode import check_decode
    from eccv_metric.models.encoding.decode import gpu_decoder
    from eccv_metric.models.families.spec import load_model

    encoder = load_model(f"hf:{root / f'model_{args.preset}'}", args.device, args.precision)
    check_decode("gpu", encoder)
    source = DataSource(root / "world")
    img_items = source.read(ItemSet("coco_5k", "image", ITEM_SOURCES["coco_5k"]["image"]))
    cap_items = source.read(ItemSet("coco_5k", "caption", ITEM_SOURCES["coco_5k"]["caption"]))
    workers = args.workers or 0
    cap, _ = encode_items(encoder, cap_items, args.text_batch_size or 1024, workers)
    res = world.resources(root / "world")
    lines, ranks = [], {}
    for name, decoder in (("pil", None), ("gpu", gpu_decoder(encoder))):
        img, _ = encode_items(encoder, img_items, args.batch_size, workers, decoder)
        means = evaluate(
            Embeddings(img, cap, normalize=True), ["coco_5k_r1", "coco_5k_r5", "coco_5k_r10"], resources=res
        ).means()
        lines.append(
            f"  {name}: "
            + ", ".join(
                f"R@{k} i2t {means[f'coco_5k_r{k}']['i2t']:.4f} t2i {means[f'coco_5k_r{k}']['t2i']:.4f}"
                for k in (1, 5, 10)
            )
        )
        i = torch.nn.functional.normalize(torch.from_numpy(img).to(encoder.device), dim=1)
        c = torch.nn.functional.normalize(torch.from_numpy(cap).to(encoder.device), dim=1)
        own = torch.arange(len(c), device=i.device) // (len(c) // len(i))
        rows = []
        for s in range(0, len(c), 4096):
            scores = c[s : s + 4096] @ i.T
            mine = scores.gather(1, own[s : s + 4096, None])
            rows.append((scores > mine).sum(1).cpu())
        ranks[name] = torch.cat(rows).numpy()
    diff = np.abs(ranks["pil"] - ranks["gpu"])
    lines.append(f"  t2i rank of each caption's own image: {int((diff > 0).sum()):,} of {len(diff):,} queries differ, "
                 f"max |change| {int(diff.max())}, mean {diff.mean():.3f}")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    root = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="eccv_models_bench_"))
    if args.child:
        child = {"ours": child_ours, "many": more.child_many, "clip_benchmark": child_clip_benchmark,
                 "startup": more.child_startup, "embeddings": more.child_embeddings}[args.child]  # fmt: skip
        result = child(args, root)
        print("RESULT " + json.dumps(result))
        return 0
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    world.write_world(root / "world", args.n_images, args.n_captions, processes=os.cpu_count() or 1)
    more.model_folders(root, args.preset, max(1, args.models))
    print(f"world written in {time.perf_counter() - started:.1f} s: {root}", file=sys.stderr)
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    passed += ["--folder", str(root)] if not args.folder else []
    runs: dict[str, dict] = {}
    if "processes" not in args.skip:
        more.warm_up(root, passed, run_child)
        for cache in ("cache_five", "cache_coco"):
            shutil.rmtree(root / cache, ignore_errors=True)
        runs["ours, --benchmarks, cold cache"] = run_child("ours", passed, ["--cache", str(root / "cache_five")])
        runs["ours, coco_5k, cold cache"] = run_child("ours", [*passed, "--benchmarks", "coco_5k"],
                                                      ["--cache", str(root / "cache_coco")])  # fmt: skip
        runs.update(more.warm_rows(args, passed, root / "cache_five", run_child))
        if args.decode == "gpu":  # the default decoder too, side by side
            shutil.rmtree(root / "cache_pil", ignore_errors=True)
            runs["ours, --benchmarks, cold cache, decode pil"] = run_child(
                "ours", [*passed, "--decode", "pil"], ["--cache", str(root / "cache_pil")]
            )
        if args.models > 1:
            runs.update(more.many_rows(args, passed, root, run_child))
        runs.update(more.startup_rows(passed, run_child))
        if "clip_benchmark" not in args.skip:
            runs["CLIP_benchmark zeroshot_retrieval.evaluate"] = run_child("clip_benchmark", passed, [])
    try:
        measured = in_process(args, root)
    except Exception as exc:  # noqa: BLE001 - the whole-process rows stand; say why the rest did not run
        print(f"in-process rows not measured: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        for name, row in runs.items():
            print(f"{name}: {json.dumps({k: v for k, v in row.items() if k != 'profile'})}")
        measured = None
    if measured is not None:
        report(args, runs, measured)
    more.print_profile(runs)
    if args.compare_decoders:
        print("decoders (coco_5k, same model and captions):")
        try:
            print("\n".join(compare_decoders(args, root)))
        except Exception as exc:  # noqa: BLE001 - the table above stands; say why this part did not run
            print(f"  not measured: {type(exc).__name__}: {str(exc)[:300]}")
    return 0


def report(args: argparse.Namespace, runs: dict[str, dict], m: dict) -> None:
    load = ", load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()) if hasattr(os, "getloadavg") else ""
    print(f"device: {more.device_name(m['device'])}{load}")
    print(f"model: {args.preset} CLIP (random weights), {args.precision}; {args.n_images:,} JPEGs 640x480 "
          f"+ {args.n_captions:,} captions; batch {args.batch_size}, text batch {m['text_batch']}, "
          f"{m['workers']} workers, decode {args.decode}; benchmarks {' '.join(args.benchmarks)}")  # fmt: skip
    print("| run | wall s | call s | images/s | captions/s | note |\n|---|---|---|---|---|---|")
    for name, r in runs.items():
        if "error" in r:
            print(f"| {name} | {r['wall']:.1f} | | | | failed: {r['error']} |")
            continue
        rec = r.get("recalls") or {}
        note = (
            "R@1/5/10 " + " / ".join(f"{rec[k]['i2t']:.4f},{rec[k]['t2i']:.4f}" for k in ("1", "5", "10") if k in rec)
            if rec
            else ""
        )
        note = more.steps_note(r, note)
        print(f"| {name} | {r['wall']:.1f} | {r['call']:.1f} | | | {note} |")
    decoders = [d for d in ("pil", "gpu") if f"ours_images_{d}" in m]
    for d in decoders:
        captions = f"{m['ours_captions']:,.0f}" if d == decoders[0] else ""
        print(f"| ours: encoding alone (encode_items), decode {d} | | | {m[f'ours_images_{d}']:,.0f} | {captions} | |")
    print(f"| bare forward pass, inputs on the device | | | {m['bare_images']:,.0f} | {m['bare_captions']:,.0f} | |")
    print(f"| tokenizer alone (text batches, given order) | | | | {m['tokenize']:,.0f} | |")
    for line in images_rows.report_rows(m, decoders):
        print(line)
    ours = {k: v for k, v in runs.items() if "error" not in v}
    theirs = ours.get("CLIP_benchmark zeroshot_retrieval.evaluate")
    print("ratios:")
    print(f"  captions: ours / bare forward {m['ours_captions'] / m['bare_captions']:.2f} (CPU target >= 0.77, "
          f"GPU >= 0.5); ours / (tokenizer and forward one after the other) "
          f"{m['ours_captions'] * (1 / m['bare_captions'] + 1 / m['tokenize']):.2f}")  # fmt: skip
    for line in images_rows.report_ratios(m, decoders):
        print(line)
    for line in [*(more.clip_benchmark_ratios(ours, theirs) if theirs else []), *more.startup_ratios(ours, theirs),
                 *more.warm_ratio(ours)]:  # fmt: skip
        print(line)
    shared, alone = (ours.get(f"ours, {args.models} models, decode {w}, cold cache") for w in ("shared", "per model"))
    if shared and alone:
        print(f"  {args.models} models: decode shared / per model {shared['wall'] / alone['wall']:.2f}")
    first = next(iter(ours.values()), None)
    if first and "modules" in first:
        print(f"ours imported (third-party): {', '.join(first['modules'])}")


if __name__ == "__main__":
    sys.exit(main())
