"""A pair scorer's run (eccv_metric.models.pairs) against the bare pair forward pass and against itself on more
processes, in one run: same model, items, pair batch.

Builds the synthetic built-like folder of ``scripts/benchmark_models.py`` (``scripts/benchmark_models_world.py``:
COCO-sized JPEGs and COCO-like captions, ground truth) and a random BLIP (``--preset tiny``: the unit tests' tiny
BLIP, 8-pixel images, 2 layers; ``base``: BLIP base's shape, ViT-B/16 at 384 pixels and a BERT-base text encoder
with cross-attention, 30,524-token vocabulary, random weights), loaded by ``hf:<folder>`` as a pair scorer, then
prints, each as pairs per second and their ratio:

- **forward**: ours (the pair stage: images decoded in the DataLoader's workers, image states once per image of
  a block, pairs ``--pair-batch-size`` at a time, each batch checked; no cache) against the bare pair forward
  pass (images prepared and captions tokenised beforehand, the image states of every image computed once, then
  the scorer's ``score_tokens`` on the same pair batches, nothing else), calls interleaved (``--repeat``, the
  best kept), on a rerank-shaped pair set (each of ``--images`` images with ``--per-image`` random captions).
  Target: ours >= 0.8 of the bare forward.
- **processes** (``--skip processes`` leaves it out): a whole ``evaluate_model`` rerank (``--k``, ``coco_5k``) on
  one process, then on two (``torchrun --standalone --nproc_per_node 2``: gloo on this CPU), each with a cold
  cache; the pair stage's seconds (``step_seconds["pairs"]``, rank 0: it waits for the other) and their ratio.
  Target: two processes <= 0.65 of one.
- **rerank**: a whole k=``--k`` rerank of ``coco_5k`` on one process (``--skip rerank``): seconds, pairs, pairs/s.
- with ``--gpu`` (``--preset base --precision fp16`` on CUDA): the forward row on the GPU, and the time an
  exhaustive run of the 5K split (5,000 x 25,000 = 125M pairs) would take at ours' rate, against VinVL's
  25 A100-hours (the ECCV Caption paper).

Timings on a shared machine are noisy: run it on a quiet one. Usage::

    python scripts/benchmark_pair_runs.py --preset tiny --n-images 5000 --n-captions 25000 --pair-batch-size 256
    python scripts/benchmark_pair_runs.py --gpu --preset base --precision fp16 --images 64 --skip processes rerank
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

import benchmark_models_world as world  # noqa: E402
from benchmark_timing import interleaved  # noqa: E402
from benchmark_timing import machine  # noqa: E402

VINVL_HOURS = 25.0  # the ECCV Caption paper: VinVL scored the 5K split's 125M pairs in 25 hours on one A100
EXHAUSTIVE_5K = 5_000 * 25_000


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=["tiny", "base"], default="tiny")
    p.add_argument("--n-images", type=int, default=5000)
    p.add_argument("--n-captions", type=int, default=25000)
    p.add_argument("--device", default=None, help="cuda, cpu (default: CUDA with --gpu, else the CPU)")
    p.add_argument("--gpu", action="store_true", help="the forward row on CUDA and the exhaustive 5K estimate")
    p.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    p.add_argument("--batch-size", type=int, default=64, help="images per vision pass")
    p.add_argument("--pair-batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=None, help="image decoding processes (default: ours by device)")
    p.add_argument("--images", type=int, default=200, help="forward row: images of its pair set")
    p.add_argument("--per-image", type=int, default=768, help="forward row: captions per image (a k=128 rerank: 768)")
    p.add_argument("--k", type=int, default=128, help="rerank rows: candidates per query")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip", nargs="*", default=[], choices=["forward", "processes", "rerank"])
    p.add_argument("--folder", help="keep the synthetic world and model here (reused when their sizes match)")
    return p.parse_args(argv)


def write_blip(folder: Path, preset: str, seed: int = 0) -> Path:
    """``tiny``: the unit tests' tiny BLIP; ``base``: BlipForImageTextRetrieval of BLIP base's shape (random)."""
    if (folder / "config.json").is_file():
        return folder
    if preset == "tiny":
        from tests.unit.pair_world import tiny_blip

        return tiny_blip(folder, seed)
    import torch
    from transformers import BertTokenizer
    from transformers import BlipConfig
    from transformers import BlipForImageTextRetrieval
    from transformers import BlipImageProcessor
    from transformers import BlipProcessor

    torch.manual_seed(seed)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *world.vocabulary()[: 30522 - 5]]
    (folder / "vocab").mkdir(parents=True, exist_ok=True)
    (folder / "vocab" / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = BertTokenizer(str(folder / "vocab" / "vocab.txt"), model_max_length=512)
    tokenizer.add_special_tokens({"bos_token": "[DEC]", "additional_special_tokens": ["[ENC]"]})
    config = BlipConfig(
        text_config={"vocab_size": len(tokenizer), "pad_token_id": 0, "bos_token_id": 30522, "sep_token_id": 3},
        vision_config={"image_size": 384, "patch_size": 16},
    )  # fmt: skip
    BlipForImageTextRetrieval(config).save_pretrained(folder)
    BlipProcessor(BlipImageProcessor(size={"height": 384, "width": 384}), tokenizer).save_pretrained(folder)
    return folder


def forward_row(args: argparse.Namespace, data: Path, model: Path, device: str) -> dict:
    """Ours (the pair stage) against the bare pair forward on the same rerank-shaped pair set (module docstring)."""
    import torch

    from eccv_metric.benchmarks.request import Request
    from eccv_metric.models.data.source import DataSource
    from eccv_metric.models.encoding.encode import ImageItems
    from eccv_metric.models.encoding.workers import default_workers
    from eccv_metric.models.families.spec import load_model
    from eccv_metric.models.pairs.pairset import PairSet
    from eccv_metric.models.pairs.stage import PairStage
    from eccv_metric.models.pairs.stage import Side
    from eccv_metric.models.plan import make_plan

    scorer = load_model(f"hf:{model}", device, args.precision, args.batch_size)
    source = DataSource(data)
    plan = make_plan(Request.parse(None, benchmarks=["coco_5k"]), source, False, world.resources(data))
    image_set, caption_set = (s for kind in ("image", "caption") for s in plan.wanted["coco_5k"] if s.kind == kind)
    images, captions = source.read(image_set), source.read(caption_set)
    rng = np.random.default_rng(0)
    n = min(args.images, len(images.ids))
    rows_i = np.repeat(np.arange(n), args.per_image)
    rows_c = np.concatenate([rng.choice(len(captions.ids), args.per_image, replace=False) for _ in range(n)])
    pairs = PairSet.of(rows_i, rows_c, images.ids, captions.ids)
    workers = default_workers(device) if args.workers is None else args.workers
    stage = PairStage(scorer, args.batch_size, args.pair_batch_size, workers)
    side = Side("coco_5k", pairs, images, captions, None)

    def ours() -> None:
        for _ in stage.run(side, list(range(pairs.n_blocks)), lambda b, k: None):
            pass
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    dataset = ImageItems(images.locations[:n], images.ids[:n], scorer.prepare_image, "image")  # type: ignore[index]
    prepared = [dataset[i][1] for i in range(n)]
    tokens = scorer.tokenize(list(captions.texts))  # type: ignore[attr-defined]
    parts = [pairs.block(b) for b in range(pairs.n_blocks)]
    all_i = np.concatenate([p[0] for p in parts])
    all_c = np.concatenate([p[1] for p in parts])

    def bare() -> None:
        states = []
        for s in range(0, n, args.batch_size):
            batch = prepared[s : s + args.batch_size]
            stacked = torch.stack(batch) if hasattr(batch[0], "shape") else batch
            states.append(scorer.image_states(stacked))
        states = torch.cat(states) if hasattr(states[0], "shape") else [x for part in states for x in part]
        for s in range(0, len(all_i), args.pair_batch_size):
            e = s + args.pair_batch_size
            scorer.score_tokens(states, all_i[s:e], tokens, all_c[s:e])  # type: ignore[attr-defined]
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    best = interleaved({"ours": ours, "bare": bare}, args.repeat)
    rate = {name: pairs.n_pairs / seconds for name, seconds in best.items()}
    out = {"pairs": pairs.n_pairs, "ours_pairs_per_s": rate["ours"], "bare_pairs_per_s": rate["bare"],
           "ratio": rate["ours"] / rate["bare"], "workers": workers}  # fmt: skip
    if args.gpu:
        hours = EXHAUSTIVE_5K / rate["ours"] / 3600
        out |= {"exhaustive_5k_hours": hours, "vs_vinvl_25_a100_hours": hours / VINVL_HOURS}
    return out


CHILD = """
import json, sys
sys.path[:0] = {paths!r}
import benchmark_models_world as world
from eccv_metric.models import evaluate_model
from pathlib import Path
out = evaluate_model({spec!r}, {data!r}, benchmarks=["coco_5k"], resources=world.resources(Path({data!r})),
                     rerank_k={k}, cache_dir={cache!r}, batch_size={batch}, pair_batch_size={pairs}, device="cpu",
                     max_pairs=10**9)
if out.scored:
    print("RESULT", json.dumps({{"step_seconds": out.provenance["step_seconds"], "pairs": out.provenance["pairs"],
                                  "seconds": out.provenance["seconds"]}}))
"""


def child_run(args: argparse.Namespace, data: Path, model: Path, processes: int) -> dict:
    """A whole rerank in fresh processes (1: python; 2: torchrun, gloo), cold cache: its provenance's timings."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / "cache")
        code = CHILD.format(paths=[str(ROOT), str(HERE)], spec=f"hf:{model}", data=str(data), k=args.k, cache=cache,
                            batch=args.batch_size, pairs=args.pair_batch_size)  # fmt: skip
        script = Path(tmp) / "child.py"
        script.write_text(code)
        cmd = [sys.executable, str(script)]
        if processes > 1:
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
                   str(script)]  # fmt: skip
        env = {**os.environ, "ECCV_CAPTION_PROGRESS": "0"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"the {processes}-process run failed: {(done.stdout + done.stderr)[-2000:]}")
    return json.loads(line.removeprefix("RESULT "))


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    device = args.device or ("cuda" if args.gpu else "cpu")
    base = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="bench-pairs-"))
    data = world.write_world(base / "world", args.n_images, args.n_captions, processes=os.cpu_count() or 1)
    model = write_blip(base / f"blip-{args.preset}", args.preset)
    print(f"# {machine()}; {args.preset} BLIP, {device}, {args.precision}, pair batch {args.pair_batch_size}")
    if "forward" not in args.skip:
        row = forward_row(args, data, model, device)
        print(f"forward: ours {row['ours_pairs_per_s']:,.0f} pairs/s, bare {row['bare_pairs_per_s']:,.0f} pairs/s: "
              f"{row['ratio']:.2f} of the bare forward ({row['pairs']:,} pairs, {row['workers']} workers; "
              "target >= 0.8)")  # fmt: skip
        if args.gpu:
            print(f"exhaustive 5K split (125M pairs) at ours' rate: {row['exhaustive_5k_hours']:.1f} h on this "
                  f"device, {row['vs_vinvl_25_a100_hours']:.2f} of VinVL's 25 A100-hours")  # fmt: skip
    if "processes" not in args.skip:
        one = child_run(args, data, model, 1)
        two = child_run(args, data, model, 2)
        a, b = one["step_seconds"]["pairs"], two["step_seconds"]["pairs"]
        print(f"processes: pair stage {a:.1f} s on one, {b:.1f} s on two (gloo): {b / a:.2f} of one "
              f"({one['pairs']['pairs']:,} pairs; target <= 0.65)")  # fmt: skip
    if "rerank" not in args.skip:
        start = time.perf_counter()
        run = child_run(args, data, model, 1)
        seconds = time.perf_counter() - start
        pairs = run["pairs"]
        print(f"rerank: coco_5k k={args.k}: {seconds:.1f} s in all ({run['seconds']:.1f} s in evaluate_model), "
              f"{pairs['pairs']:,} pairs, {pairs['pairs_per_second']:,.0f} pairs/s in the pair stage")  # fmt: skip


if __name__ == "__main__":
    main()
