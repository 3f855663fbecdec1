"""What ``verify`` costs beside the run it checks: a 5K dual-encoder run scored again from its evidence.

The run: embeddings of the 5K split (5,000 images, 25,000 captions, ``--dim`` float32, seeded: each caption its
image's plus noise, so the numbers are a model's, not chance), cosine similarity, the benchmarks a model run scores
on them (``--benchmarks``, default the official five and ECCV Caption's three); the evidence ``evaluate --evidence``
writes of it. Timed, best of ``--repeat`` interleaved rounds (download excluded: everything is local, the ground
truth is the wheel's, loaded once before):

- **evaluate**: scoring the same embeddings with the engine (``evaluate_benchmarks`` on ``Embeddings(...,
  normalize=True)``: what ``evaluate --image-embeddings ... --normalize`` and a model run's score step do);
- **verify**: ``eccv_metric.verify(results, evidence, per_query=...)``: the manifest read, every file's dtype, shape
  and sha256 checked, the item order checked against the ground truth, the same engine call, every number and
  per-query value compared.

Then the evidence's size beside the per-query values' (their Parquet files as push-results publishes them). Usage::

    python scripts/benchmark_verify.py --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmark_timing import interleaved  # noqa: E402
from benchmark_timing import machine  # noqa: E402

import eccv_metric  # noqa: E402
from eccv_metric import Embeddings  # noqa: E402
from eccv_metric import evaluate_benchmarks  # noqa: E402
from eccv_metric.benchmarks.definitions import REGISTRY  # noqa: E402
from eccv_metric.benchmarks.request import Request  # noqa: E402
from eccv_metric.benchmarks.resource_options import ResourceOptions  # noqa: E402
from eccv_metric.evidence import load_evidence  # noqa: E402
from eccv_metric.evidence import write_evidence  # noqa: E402
from eccv_metric.hub.details import parquet_bytes  # noqa: E402
from eccv_metric.models.data.items import item_sets  # noqa: E402
from eccv_metric.models.options import Scored  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=512, help="embedding dimensions (512: ViT-B/32's projection)")
    parser.add_argument("--benchmarks", nargs="+", default=["coco_1k", "coco_5k", "cxc", "eccv"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", help="where the evidence is written (default: a temporary folder)")
    args = parser.parse_args()
    print(machine())
    resources = ResourceOptions().resources()
    gt = resources.gt
    rng = np.random.default_rng(0)
    img = rng.standard_normal((len(gt.image_ids), args.dim), np.float32)
    cap = img[gt.caption_image] + 2 * rng.standard_normal((len(gt.caption_ids), args.dim), np.float32)
    wanted = {b: Request.parse(benchmarks=[b]).names for b in args.benchmarks}
    if "coco_1k" in wanted:  # the official five's COCO 1K R@1 beside the 5K benchmarks, as --benchmarks eccv_caption
        wanted["coco_1k"] = ["coco_1k_r1"]

    def source() -> Embeddings:
        return Embeddings(img, cap, gt.image_ids, gt.caption_ids, normalize=True)

    def scored() -> eccv_metric.Results:
        return evaluate_benchmarks(source(), wanted, resources=resources)[0]

    results = scored()  # warm: the ground truth's views and relevances built once, as in a run
    sets = {s.kind: s for s in item_sets(REGISTRY.get("coco_5k"))}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp) / "evidence"
        manifest, _ = write_evidence(folder, [Scored("coco_5k", source(), wanted, sets)], n_resamples=1000, seed=0)
        means, per_query = results.means(), results.per_query_json()

        def verified() -> None:
            table = eccv_metric.verify(means, load_evidence(folder), per_query=per_query, resources=resources)
            assert table.equal, [c.line() for c in table.checks if c.status != "equal"]

        verified()
        best = interleaved({"evaluate": scored, "verify": verified}, args.repeat)
        evidence = sum(f["bytes"] for f in manifest["files"].values())
        pq = sum(len(parquet_bytes(e["query_ids"], e["values"])) for by in per_query.values() for e in by.values())
    n = sum(len(by) for by in means.values())
    queries = sum(len(e["values"]) for by in per_query.values() for e in by.values())
    print(
        f"5K dual encoder, d = {args.dim}, {n} numbers ({queries:,} per-query values) of "
        f"{', '.join(args.benchmarks)} (best of {args.repeat}):"
    )
    print(f"  evaluate (score the embeddings):   {best['evaluate']:.2f} s")
    print(f"  verify (check and score again):    {best['verify']:.2f} s   ({best['verify'] / best['evaluate']:.2f}x)")
    print(f"  evidence: {evidence:,} bytes ({evidence / 1e6:.1f} MB; {len(manifest['files'])} files)")
    print(f"  per-query values (Parquet, as published): {pq:,} bytes ({pq / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
