"""Benchmark of the model path: pipeline throughput against the bare forward pass, and peak memory.

Builds a synthetic built-like folder (``data/images/*.parquet``: N random-noise JPEGs of SIZE x SIZE, row
groups of 100 as ``eccv-caption build`` writes them) and a small random-init transformers CLIP (no
download; ``--model hf:<folder>`` to time yours), then times on the same batches:

1. bare: the model's ``get_image_features`` on pixel tensors prepared beforehand, in memory (no decoding,
   no preprocessing: the forward pass alone);
2. pipeline: ``eccv_metric.models.encode.encode_batches`` (Parquet reading, JPEG decoding and the model's
   own processor in DataLoader workers, the forward pass, the checks), cache off.

Prints items/s of both, their ratio (target: >= 0.9 on CPU with a small model), the device, the peak
resident memory the pipeline adds to the process (VmHWM, reset before it) and its largest worker's
(ru_maxrss). On a GPU (``--device cuda``) it reports images/s the same way.

Usage: python scripts/benchmark_models.py [--n 2000] [--size 224] [--batch-size 64] [--workers 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import io
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eccv_metric.models.encode import encode_batches  # noqa: E402
from eccv_metric.models.items import ITEM_SOURCES  # noqa: E402
from eccv_metric.models.items import ItemSet  # noqa: E402
from eccv_metric.models.source import DataSource  # noqa: E402
from eccv_metric.models.spec import load_model  # noqa: E402
from eccv_metric.models.store import batch_bounds  # noqa: E402


def write_images(folder: Path, n: int, size: int) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        out = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(out, "JPEG", quality=90)
        rows.append({"bytes": out.getvalue(), "path": f"COCO_val2014_{i:012d}.jpg"})
    table = pa.table(
        {
            "image_id": pa.array(range(n), pa.int64()),
            "file_name": [r["path"] for r in rows],
            "image": pa.array(rows, pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
        }
    )
    (folder / "data" / "images").mkdir(parents=True)
    pq.write_table(table, folder / "data" / "images" / "test-0.parquet", row_group_size=100)
    return folder


def small_clip(folder: Path, size: int, preset: str = "tiny") -> Path:
    import torch
    from transformers import CLIPConfig
    from transformers import CLIPImageProcessor
    from transformers import CLIPModel

    torch.manual_seed(0)
    vision = {"hidden_size": 256, "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 4}
    if preset == "b32":  # the vision tower of CLIP ViT-B/32 (random weights): a model people evaluate on a CPU
        vision = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12}
    config = CLIPConfig(vision_config={**vision, "image_size": size, "patch_size": 32}, projection_dim=128)
    CLIPModel(config).save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size}).save_pretrained(folder)
    return folder


def read_peak() -> float:
    """The process's resident high-water mark (VmHWM), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return peak_mb()[0]


def reset_peak() -> float:
    """Reset the high-water mark to what is resident now (Linux); returns it, MB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return read_peak()


def peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device")
    parser.add_argument("--model", help="a spec (default: a small random CLIP written here)")
    parser.add_argument(
        "--preset", choices=["tiny", "b32"], default="tiny", help="the random CLIP's size: tiny, or ViT-B/32's tower"
    )
    args = parser.parse_args()
    import torch
    from PIL import Image

    tmp = Path(tempfile.mkdtemp(prefix="eccv_models_bench_"))
    data = write_images(tmp / "data", args.n, args.size)
    spec = args.model or f"hf:{small_clip(tmp / 'clip', args.size, args.preset)}"
    encoder = load_model(spec, args.device, batch_size=args.batch_size)
    items = DataSource(data).read(ItemSet("coco_5k", "image", ITEM_SOURCES["coco_5k"]["image"]))
    encoder.encode_prepared(  # warm-up
        torch.from_numpy(np.stack([encoder.prepare_image(Image.new("RGB", (args.size, args.size))).numpy()] * 2))
    )
    before = reset_peak()
    start = time.perf_counter()
    todo = batch_bounds(len(items.ids), args.batch_size)
    values = np.concatenate([rows for _, rows in encode_batches(encoder, items, todo, args.workers)])
    pipeline = args.n / (time.perf_counter() - start)
    pipeline_peak = read_peak() - before
    # bare: the same batches, prepared beforehand, forward pass only
    table = pq.read_table(data / "data" / "images", columns=["image"]).column("image").to_pylist()
    prepared = [encoder.prepare_image(Image.open(io.BytesIO(r["bytes"])).convert("RGB")) for r in table]
    batches = [
        torch.from_numpy(np.stack([t.numpy() for t in prepared[s : s + args.batch_size]]))
        for s in range(0, args.n, args.batch_size)
    ]
    start = time.perf_counter()
    for batch in batches:
        encoder.encode_prepared(batch)
    if encoder.device.startswith("cuda"):
        torch.cuda.synchronize()
    bare = args.n / (time.perf_counter() - start)
    _, children = peak_mb()
    print(f"model {spec} on {encoder.device} ({encoder.precision}), torch threads {torch.get_num_threads()}")
    print(f"{args.n} images {args.size}x{args.size} JPEG, batch {args.batch_size}, {args.workers} workers")
    print(f"bare forward pass: {bare:8.1f} images/s")
    print(f"pipeline:          {pipeline:8.1f} images/s  ({pipeline / bare:.2f} of the forward pass)")
    print(
        f"peak memory of the pipeline: +{pipeline_peak:.0f} MB in the process (model loaded before), "
        f"largest worker {children:.0f} MB"
    )
    print(f"embeddings: {values.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
