"""Pair scorers against the bare pair forward pass: pairs/s of each adapter's ``score_tokens`` at one batch size,
against the model's own head called directly on the same batch's inputs, gathered beforehand.

For each family (tiny random models from ``tests/unit/pair_world.py``; ``--preset base``: BLIP's base shape,
ViT-B/16 at 384 pixels and a 12-layer BERT, random weights) and each batch pattern, two rows, calls interleaved
(best of ``--repeat``):

- ours: ``scorer.score_tokens(states, image_index, tokens, text_index)``: the image states gathered by index on
  the device, the token rows taken and cut to the batch's longest, the head, the scores;
- bare: the transformers model on the same pairs with every input already gathered on the device: BLIP's
  ``text_encoder`` + ``itm_head`` over the gathered vision states, BLIP-2's Q-Former + ``itm_head``, ViLT's
  ``forward(image_embeds=...)``; BridgeTower's and FLAVA's forward passes cannot take cached image states, so
  their bare row is the model's forward on the batch's pixels (``BridgeTowerForImageAndTextRetrieval.forward``;
  ``FlavaModel.forward`` + ``itm_head``, one pass), the vision encoder run once per pair.

Patterns: ``mixed`` (an exhaustive block: images and captions drawn from 64 and 256), ``t2i`` (a text query's
reranked candidates: one caption, ``--batch`` images), ``i2t`` (one image, ``--batch`` captions). The target is
ours / bare >= 0.8. Timings on a shared machine are noisy: compare rows of one run only.

Usage::

    python scripts/benchmark_pairs.py --batch 256 --threads 1
    python scripts/benchmark_pairs.py --preset base --families blip --device cuda --precision fp16 --batch 256
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmark_timing import interleaved  # noqa: E402

WORDS = "a man woman dog cat riding sitting on the with red blue small large plate of food near table street".split()


def captions(n: int, seed: int = 0) -> list[str]:
    """``n`` COCO-like captions (8 to 14 words)."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, rng.integers(8, 15))) for _ in range(n)]


def base_blip(folder: Path) -> Path:
    """BLIP's base shape (ViT-B/16 at 384, 12-layer BERT with cross-attention), random weights."""
    import torch
    from transformers import BlipConfig
    from transformers import BlipForImageTextRetrieval
    from transformers import BlipImageProcessor
    from transformers import BlipProcessor

    from tests.unit.pair_world import bert_tokenizer

    torch.manual_seed(0)
    tokenizer = bert_tokenizer(max_length=512)
    config = BlipConfig(text_config={"vocab_size": len(tokenizer), "pad_token_id": 0}, vision_config={})
    BlipForImageTextRetrieval(config).save_pretrained(folder)
    BlipProcessor(BlipImageProcessor(), tokenizer).save_pretrained(folder)
    return folder


def pairs(pattern: str, batch: int, n_images: int, n_texts: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if pattern == "t2i":
        return rng.permutation(n_images)[:batch], np.zeros(batch, dtype=np.int64)
    if pattern == "i2t":
        return np.zeros(batch, dtype=np.int64), rng.permutation(n_texts)[:batch]
    return rng.integers(0, n_images, batch), rng.integers(0, n_texts, batch)


def bare_call(kind: str, scorer: Any, states: Any, pixels: Any, tokens: Any, image_index: np.ndarray,
              text_index: np.ndarray) -> Any:  # fmt: skip
    """The model's own head on the batch, every input gathered beforehand (module docstring)."""
    import torch

    model, device = scorer.model, scorer.device
    rows = torch.from_numpy(image_index).to(device)
    ids, mask = tokens.take(text_index, device)
    if kind in ("bridgetower", "flava"):
        pix = pixels.index_select(0, rows)
    elif kind == "vilt":
        gathered = states.index_select(0, rows)
        width = int(gathered[:, :, -1].sum(1).max())
        image, pixel_mask = gathered[:, :width, :-1].contiguous(), gathered[:, :width, -1].long()
    else:
        image = states.index_select(0, rows)
    ones = torch.ones(len(image_index), states.shape[1] if kind != "vilt" else 1, dtype=torch.long, device=device)

    def call() -> Any:
        with scorer.parts.at.autocast():
            if kind == "blip":
                out = model.text_encoder(input_ids=ids, attention_mask=mask, encoder_hidden_states=image,
                                         encoder_attention_mask=ones).last_hidden_state  # fmt: skip
                return model.itm_head(out[:, 0, :])[:, 1]
            if kind == "blip2":
                queries = model.query_tokens.expand(len(ids), -1, -1)
                attention = torch.cat([torch.ones(queries.shape[:-1], dtype=mask.dtype, device=device), mask], 1)
                embeds = model.embeddings(input_ids=ids, query_embeds=queries)
                n = queries.shape[1]
                out = model.qformer(query_embeds=embeds, query_length=n, attention_mask=attention,
                                    encoder_hidden_states=image, encoder_attention_mask=ones)  # fmt: skip
                return model.itm_head(out.last_hidden_state[:, :n]).mean(1)[:, 1]
            if kind == "vilt":
                return model(input_ids=ids, attention_mask=mask, image_embeds=image, pixel_mask=pixel_mask).logits
            if kind == "bridgetower":
                return model(input_ids=ids, attention_mask=mask, pixel_values=pix).logits[:, 1]
            out = model.flava(input_ids=ids, attention_mask=mask, pixel_values=pix)
            return model.itm_head(out.multimodal_embeddings)[:, 1]

    return call


def family_rows(kind: str, folder: Path, args: argparse.Namespace) -> list[str]:
    import torch

    from eccv_metric.models import load_model
    from tests.unit.pair_world import images

    scorer = load_model(f"hf:{folder}", device=args.device, precision=args.precision)
    n_images, n_texts = max(64, args.batch), max(256, args.batch)
    sizes = ((640, 480), (480, 640), (500, 375)) if args.preset == "base" or kind == "vilt" else ((8, 8),)
    pics = images(n_images, seed=1, sizes=sizes)
    prepared = [scorer.prepare_image(im) for im in pics]
    stacked = torch.stack(prepared) if hasattr(prepared[0], "shape") else prepared
    states = scorer.image_states(stacked)
    pixels = stacked.to(scorer.device) if hasattr(stacked, "shape") else None
    tokens = scorer.tokenize(captions(n_texts))
    lines = []
    for pattern in args.patterns.split(","):
        image_index, text_index = pairs(pattern, args.batch, n_images, n_texts)

        def ours(image_index: np.ndarray = image_index, text_index: np.ndarray = text_index) -> None:
            scorer.score_tokens(states, image_index, tokens, text_index).cpu()

        bare = bare_call(kind, scorer, states, pixels, tokens, image_index, text_index)
        bare_synced = lambda bare=bare: bare().cpu()  # noqa: E731 - the scores on the host, as ours
        ours(), bare_synced()  # warm-up
        best = interleaved({"ours": ours, "bare": bare_synced}, args.repeat)
        rate = {k: args.batch / v for k, v in best.items()}
        lines.append(
            f"{kind:<12} {pattern:<6} ours {rate['ours']:>10,.0f} pairs/s   bare {rate['bare']:>10,.0f} pairs/s   "
            f"ours/bare {rate['ours'] / rate['bare']:.2f}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="blip,blip2,vilt,bridgetower,flava")
    parser.add_argument("--preset", choices=("tiny", "base"), default="tiny", help="base: BLIP's base shape only")
    parser.add_argument("--patterns", default="mixed,t2i,i2t")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = parser.parse_args()
    import torch

    from tests.unit.pair_world import BUILDERS

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# batch {args.batch}, {args.device} {args.precision}, torch threads {torch.get_num_threads()}, "
          f"best of {args.repeat} interleaved; {time.strftime('%Y-%m-%d %H:%M')}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.families.split(","):
            build = base_blip if args.preset == "base" and kind == "blip" else BUILDERS[kind]
            if args.preset == "base" and kind != "blip":
                print(f"{kind:<12} skipped: --preset base builds BLIP only")
                continue
            for line in family_rows(kind, build(Path(tmp) / kind), args):
                print(line, flush=True)


if __name__ == "__main__":
    main()
