"""What the embedding cache's checksums cost a warm rerun: each entry's read and check, with and without them.

A warm rerun reads each item set's finished entry (``EmbeddingCache.finished``: ``meta.json``, ``np.load`` of
``embeddings.npy``, its shape and finite values, and since issue 53 the sha256 of its array,
``entries.array_digest``). This prints, for each set at the real sizes (the five COCO benchmarks read the test
images and captions; the FG benchmarks add their galleries beyond the test images and their captions), at
``--dims`` (512: ViT-B/32's projection; 8: the tiny CLIP of ``benchmark_models.py --preset tiny``, whose warm
row the README's 1.10x is measured on), the best of ``--repeat`` interleaved rounds of: the whole read of an
entry, the checksum alone, and the read without it; then the checksum's share of the read and its seconds
beside the warm rerun's wall (``--warm``: seconds, e.g. the README's 1.49 s). Usage::

    python scripts/benchmark_checksums.py --dims 512 8 --repeat 7 --warm 1.49
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmark_timing import interleaved  # noqa: E402
from benchmark_timing import machine  # noqa: E402

from eccv_metric.models.cache.entries import EmbeddingCache  # noqa: E402
from eccv_metric.models.cache.entries import array_digest  # noqa: E402

SETS = {  # item set -> rows; the five COCO benchmarks read the first two
    "coco test images": 5_000,
    "coco test captions": 25_000,
    "mscoco_fg gallery beyond the test images": 26_244,
    "mscoco_fg refined captions": 25_000,
    "flickr30k_fg gallery": 6_867,
    "flickr30k_fg captions": 5_000,
}
FIVE = ("coco test images", "coco test captions")


def entry(root: Path, name: str, values: np.ndarray) -> EmbeddingCache:
    """A finished entry of ``values`` as the store writes it."""
    cache = EmbeddingCache({"set": name, "dims": values.shape[1]}, root, len(values))
    cache.finish(values, {"items": len(values), "dimensions": int(values.shape[1])})
    return cache


def read(cache: EmbeddingCache) -> None:
    cache.hit = None  # read again, as a new run does
    assert cache.finished() is not None


def read_unchecked(cache: EmbeddingCache) -> None:
    """The read without the checksum: what it was before issue 53."""
    json.loads((cache.dir / "meta.json").read_text())
    values = np.load(cache.dir / "embeddings.npy", allow_pickle=False)
    assert cache.check_rows(values, cache.rows, values.shape[1]) is None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[512, 8])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--warm", type=float, default=1.49, help="the warm rerun's wall to compare with (seconds)")
    args = p.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for dims in args.dims:
            print(f"\n{dims} dimensions (float32) | rows | read ms | checksum ms | read without it ms | share")
            totals = {"five": 0.0, "all": 0.0}
            for name, rows in SETS.items():
                values = rng.standard_normal((rows, dims), dtype=np.float32)
                cache = entry(Path(tmp), name, values)
                best = interleaved({"read": lambda c=cache: read(c), "checksum": lambda v=values: array_digest(v),
                                    "unchecked": lambda c=cache: read_unchecked(c)}, args.repeat)  # fmt: skip
                ms = {k: 1000 * v for k, v in best.items()}
                print(f"{name} | {rows:,} | {ms['read']:.1f} | {ms['checksum']:.1f} | {ms['unchecked']:.1f} | "
                      f"{best['checksum'] / best['read']:.2f}")  # fmt: skip
                totals["all"] += best["checksum"]
                totals["five"] += best["checksum"] if name in FIVE else 0.0
            print(f"checksums of the five COCO benchmarks' entries: {1000 * totals['five']:.1f} ms "
                  f"({totals['five'] / args.warm:.3f} of a {args.warm} s warm rerun); of every set: "
                  f"{1000 * totals['all']:.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
