"""Scoring a model run's benchmarks from embeddings: the numpy engine planned once, per benchmark, and on torch.

The five COCO benchmarks of issue 40 (coco_5k eccv cxc cxc_t2t cxc_i2i, their default metrics) on
5,000 x 25,000 embeddings (512-d float32, cosine), timed interleaved, best of ``--repeat``:

- ``evaluate_benchmarks``: one engine run for every benchmark (what the model path should call);
- one ``evaluate`` per benchmark on one Embeddings (what the model path called before);
- ``evaluate_benchmarks`` with ``device=`` (the torch path: ``cuda`` where there is one).

Then the torch path's agreement with the numpy engine: tie-heavy integer embeddings (8 dims in -2..2) must
give every per-query value to the bit (exit 1 otherwise); on the float embeddings the per-query values that
differ are counted (torch's product may round a score differently: see eccv_metric/kernels/device.py).

Ground truth: the real 5K split, ECCV and CxC from ../shared/data when it is there (``--data``), else a
synthetic split of the same sizes (5 captions per image, ECCV-like and CxC-like positives, STS / SIS ratings),
so the script runs on a machine without the data (a GPU box).

Usage: python scripts/benchmark_scoring.py [--device cuda] [--repeat 3] [--synthetic]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eccv_metric import Embeddings  # noqa: E402
from eccv_metric import GroundTruth  # noqa: E402
from eccv_metric import Resources  # noqa: E402
from eccv_metric import evaluate  # noqa: E402
from eccv_metric import evaluate_benchmarks  # noqa: E402

FIVE = ("coco_5k", "eccv", "cxc", "cxc_t2t", "cxc_i2i")
SHARED = ROOT.parent / "shared" / "data"


def synthetic_resources(folder: Path, seed: int = 0) -> Resources:
    """A 5,000-image, 25,000-caption split with COCO, ECCV-like and CxC-like positives and STS / SIS ratings."""
    rng = np.random.default_rng(seed)
    images = (100 + 7 * np.arange(5000)).tolist()
    captions = (10**6 + 3 * np.arange(25000)).tolist()
    image_of = {c: images[k // 5] for k, c in enumerate(captions)}
    own = {img: captions[5 * k : 5 * k + 5] for k, img in enumerate(images)}
    coco = {"i2t": own, "t2i": {c: [image_of[c]] for c in captions}}
    eccv: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for img in rng.choice(images, 1333, replace=False).tolist():
        eccv["i2t"][img] = sorted(set(own[img]) | set(rng.choice(captions, rng.poisson(12)).tolist()))
    for cap in rng.choice(captions, 1261, replace=False).tolist():
        eccv["t2i"][cap] = sorted({image_of[cap]} | set(rng.choice(images, rng.poisson(6)).tolist()))
    cxc: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for c, i in zip(rng.choice(captions, 20000).tolist(), rng.choice(images, 20000).tolist(), strict=True):
        cxc["t2i"].setdefault(c, []).append(i)
        cxc["i2t"].setdefault(i, []).append(c)
    for c in captions:  # every caption's own image: as in the real CxC lists (COCO pairs plus CxC's)
        cxc["t2i"].setdefault(c, []).append(image_of[c])
        cxc["i2t"].setdefault(image_of[c], []).append(c)
    cxc = {d: {q: sorted(set(v)) for q, v in by.items()} for d, by in cxc.items()}
    lists = {"coco": coco, "eccv": eccv, "cxc": cxc}
    gt = GroundTruth.from_id_lists(captions, lists)
    for kind, ids, n, key in (
        ("sts", captions, 30000, lambda c: f"COCO_val2014:sentid:{c}"),
        ("sis", images, 10000, lambda i: f"COCO_val2014_{i:012d}.jpg"),
    ):
        pairs = rng.choice(ids, (n, 2))
        with open(folder / f"{kind}_test.csv", "w", newline="") as fout:
            writer = csv.writer(fout)
            writer.writerow(["caption1" if kind == "sts" else "image1", "item2", "agg_score", "sampling_method"])
            for (a, b), s in zip(pairs.tolist(), rng.choice([0.0, 1.5, 2.5, 3.0, 4.2, 5.0], n).tolist(), strict=True):
                if a != b:
                    writer.writerow([key(a), key(b), f"{s:.2f}", "synthetic"])
    return Resources(gt, cxc_source=folder)


def real_resources() -> Resources:
    from eccv_metric import Metrics

    return Metrics(instances_json=SHARED / "coco" / "instances_karpathy_test.json", cxc_source=SHARED / "cxc").resources


def best_of(fns: dict, repeat: int) -> dict[str, float]:
    """Best wall seconds of each function, calls interleaved (this machine's speed drifts between minutes)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def differing(a, b) -> tuple[int, int]:
    """(per-query values that differ, per-query values) over every metric and direction of two results."""
    diff = total = 0
    for metric in a:
        for direction, scores in a[metric].items():
            other = b[metric][direction]
            assert np.array_equal(scores.query_ids, other.query_ids), (metric, direction)
            diff += int(np.count_nonzero(scores.values != other.values))
            total += len(scores.values)
    return diff, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default=None, help="torch device for the torch path (default: cuda if any)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--synthetic", action="store_true", help="the synthetic split even where the data is")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    device = args.device
    try:
        import torch

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        where = torch.cuda.get_device_name() if device.startswith("cuda") else f"torch {torch.__version__} on the CPU"
    except ImportError:
        device, where = None, "no torch"
    print(f"{os.cpu_count()} CPU cores, numpy {np.__version__}; torch path: {device} ({where})")
    with tempfile.TemporaryDirectory() as tmp:
        real = SHARED.is_dir() and not args.synthetic
        res = real_resources() if real else synthetic_resources(Path(tmp))
        print("ground truth:", "real (../shared/data)" if real else "synthetic, same sizes")
        gt = res.gt
        rng = np.random.default_rng(0)
        images = rng.standard_normal((len(gt.image_ids), 512), dtype=np.float32)
        captions = images[gt.caption_image] + rng.standard_normal((len(gt.caption_ids), 512), dtype=np.float32)
        kw = {"resources": res}
        evaluate_benchmarks(Embeddings(images, captions, normalize=True), FIVE, **kw)  # resources loaded, not timed

        def per_benchmark() -> None:
            emb = Embeddings(images, captions, normalize=True)
            for name in FIVE:
                evaluate(emb, benchmarks=[name], **kw)

        fns = {
            "planned": lambda: evaluate_benchmarks(Embeddings(images, captions, normalize=True), FIVE, **kw),
            "per_benchmark": per_benchmark,
        }
        if device is not None:
            fns["torch"] = lambda: evaluate_benchmarks(
                Embeddings(images, captions, normalize=True, device=device), FIVE, **kw
            )
            fns["torch"]()  # warm-up: CUDA context, kernels
        best = best_of(fns, args.repeat)
        print(f"evaluate_benchmarks, numpy engine:     {best['planned']:7.3f} s")
        print(f"one evaluate() per benchmark, numpy:   {best['per_benchmark']:7.3f} s")
        if device is not None:
            print(f"evaluate_benchmarks, torch on {device}: {best['torch']:7.3f} s")
        print(f"per benchmark / planned: {best['per_benchmark'] / best['planned']:.2f}x")
        if device is None:
            return 0
        ours = evaluate_benchmarks(Embeddings(images, captions, normalize=True), FIVE, **kw)[0]
        theirs = evaluate_benchmarks(Embeddings(images, captions, normalize=True, device=device), FIVE, **kw)[0]
        diff, total = differing(ours, theirs)
        print(f"float embeddings: {diff} of {total} per-query values differ between numpy and torch ({device})")
        ints = (rng.integers(-2, 3, (len(x), 8)).astype(np.float32) for x in (images, captions))
        int_images, int_captions = ints
        ours = evaluate_benchmarks(Embeddings(int_images, int_captions), FIVE, **kw)[0]
        theirs = evaluate_benchmarks(Embeddings(int_images, int_captions, device=device), FIVE, **kw)[0]
        diff, total = differing(ours, theirs)
        print(f"tie-heavy integer embeddings: {diff} of {total} per-query values differ (must be 0)")
        return 0 if diff == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
