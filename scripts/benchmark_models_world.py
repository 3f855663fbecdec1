"""The synthetic world of ``scripts/benchmark_models.py``: a built-like folder of COCO-sized JPEGs and captions,
its ground truth and CxC ratings, and random CLIP models of two sizes (no download).

Folder layout (what ``eccv-caption build`` writes for the items, and what CLIP_benchmark's COCO builder
reads): ``data/images/test-0.parquet`` (``image_id``, ``file_name``, ``image`` struct with the JPEG bytes; row
groups of 100), ``data/captions/test-0.parquet`` (``caption_id``, ``image_id``, ``caption``), the same JPEGs as
files in ``val2014/`` with ``captions.json`` (file name -> its captions) for CLIP_benchmark, ``lists.json``
(the ground truth's id lists: COCO, ECCV-like and CxC-like positives) and ``cxc/`` (STS / SIS / SITS rating
CSVs in CxC's format). Images are smooth noise at several scales plus fine grain, 640 x 480, JPEG quality
90: about 88 KB each, as COCO's val2014 photos (random noise alone compresses to far larger files).
Captions are COCO-like: 6 to 25 words (mean about 10.5) drawn Zipf-like from a 49,404-word vocabulary.
Only numpy, pyarrow, pillow, torch, transformers and tokenizers are needed (no ``datasets``, no ``evaluate``).
"""

from __future__ import annotations

import io
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

WIDTH, HEIGHT = 640, 480
POOL = 48  # distinct smooth backgrounds; every image is one of them shifted, tinted and with its own grain
VOCAB = 49_408  # CLIP's vocabulary size, specials included
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
IMAGE_ID0, CAPTION_ID0 = 100_000, 1_000_000


def _background(seed: int) -> np.ndarray:
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = np.zeros((HEIGHT, WIDTH, 3), np.float32)
    for (gw, gh), amp in (((4, 3), 70), ((16, 12), 40), ((64, 48), 25), ((160, 120), 16)):
        small = rng.normal(0, amp, (gh, gw, 3)).astype(np.float32)
        for c in range(3):
            out[..., c] += np.asarray(Image.fromarray(small[..., c], mode="F").resize((WIDTH, HEIGHT), Image.BICUBIC))
    return out


def _jpegs(task: tuple[int, int]) -> list[bytes]:
    """JPEGs ``start .. stop - 1`` (a worker's share; deterministic from the index)."""
    from PIL import Image

    start, stop = task
    backgrounds = {}
    out = []
    for i in range(start, stop):
        rng = np.random.default_rng(10_000 + i)
        base = backgrounds.setdefault(i % POOL, _background(i % POOL))
        shifted = np.roll(base, (int(rng.integers(HEIGHT)), int(rng.integers(WIDTH))), axis=(0, 1))
        pixels = shifted + rng.uniform(60, 190, 3).astype(np.float32) + rng.normal(0, 4.0, shifted.shape)
        buf = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=90)
        out.append(buf.getvalue())
    return out


def coco_like_jpegs(n_images: int, processes: int = 1) -> list[bytes]:
    """``n_images`` JPEGs as the module docstring describes them (deterministic), made by ``processes`` workers."""
    chunks = [(s, min(s + 250, n_images)) for s in range(0, n_images, 250)]
    with ProcessPoolExecutor(max(1, processes)) as pool:
        return [b for part in pool.map(_jpegs, chunks) for b in part]


def vocabulary() -> list[str]:
    """49,404 distinct pronounceable words (two and three syllables) and the full stop, deterministic."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]
    words = dict.fromkeys([".", *(a + b for a in syllables for b in syllables)])
    words.update(dict.fromkeys(a + b + c for a in syllables for b in syllables for c in syllables[:10]))
    return list(words)[: VOCAB - len(SPECIALS)]


def captions(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.asarray(vocabulary()[1:])
    ranks = np.arange(1, len(words) + 1)
    p = 1 / ranks**1.07
    p /= p.sum()
    lengths = np.clip(np.round(rng.normal(10.5, 2.5, n)), 6, 25).astype(int)
    picks = rng.choice(len(words), size=int(lengths.sum()), p=p)
    out, at = [], 0
    for length in lengths.tolist():
        text = " ".join(words[picks[at : at + length]].tolist())
        out.append(text[0].upper() + text[1:] + ".")
        at += length
    return out


def write_world(folder: Path, n_images: int, n_captions: int, processes: int = 1) -> Path:
    """The folder described in the module docstring (kept: a second call with the same sizes reuses it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = folder / "world.json"
    wanted = {"n_images": n_images, "n_captions": n_captions, "version": 1}
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return folder
    per_image = n_captions // n_images
    if n_images % 5 or per_image < 1 or per_image * n_images != n_captions:
        raise SystemExit("--n-images must be a multiple of 5 and --n-captions a multiple of --n-images")
    jpegs = coco_like_jpegs(n_images, processes)
    image_ids = [IMAGE_ID0 + 7 * i for i in range(n_images)]
    names = [f"COCO_val2014_{i:012d}.jpg" for i in image_ids]
    caption_ids = [CAPTION_ID0 + 3 * k for k in range(n_captions)]
    caption_image = [image_ids[k // per_image] for k in range(n_captions)]
    texts = captions(n_captions)
    for config in ("images", "captions"):
        (folder / "data" / config).mkdir(parents=True, exist_ok=True)
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(
        pa.table({
            "image_id": pa.array(image_ids, pa.int64()),
            "file_name": names,
            "image": pa.array([{"bytes": b, "path": n} for b, n in zip(jpegs, names, strict=True)], image_type),
        }),
        folder / "data" / "images" / "test-0.parquet",
        row_group_size=100,
    )  # fmt: skip
    pq.write_table(
        pa.table({
            "caption_id": pa.array(caption_ids, pa.int64()),
            "image_id": pa.array(caption_image, pa.int64()),
            "caption": texts,
        }),
        folder / "data" / "captions" / "test-0.parquet",
    )  # fmt: skip
    (folder / "val2014").mkdir(exist_ok=True)
    for name, data in zip(names, jpegs, strict=True):
        (folder / "val2014" / name).write_bytes(data)
    by_image: dict[str, list[str]] = {n: [] for n in names}
    for k, text in enumerate(texts):
        by_image[names[k // per_image]].append(text)
    (folder / "captions.json").write_text(json.dumps(by_image))
    _write_ground_truth(folder, image_ids, caption_ids, caption_image)
    stamp.write_text(json.dumps(wanted))
    return folder


def _write_ground_truth(folder: Path, image_ids: list[int], caption_ids: list[int], caption_image: list[int]) -> None:
    """COCO positives; ECCV-like lists (a quarter of the images and captions as queries, their own positives
    plus a few others); CxC-like SITS / STS / SIS ratings and the ``cxc`` lists of SITS >= 3."""
    import csv

    rng = np.random.default_rng(1)
    own: dict[int, list[int]] = {i: [] for i in image_ids}
    for c, i in zip(caption_ids, caption_image, strict=True):
        own[i].append(c)
    coco = {
        "i2t": {i: own[i] for i in image_ids},
        "t2i": {c: [i] for c, i in zip(caption_ids, caption_image, strict=True)},
    }
    eccv: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for i in rng.choice(image_ids, len(image_ids) // 4, replace=False).tolist():
        eccv["i2t"][i] = sorted(set(own[i]) | set(rng.choice(caption_ids, int(rng.integers(0, 8))).tolist()))
    image_of = dict(zip(caption_ids, caption_image, strict=True))
    for c in rng.choice(caption_ids, len(caption_ids) // 20, replace=False).tolist():
        eccv["t2i"][c] = sorted({image_of[c]} | set(rng.choice(image_ids, int(rng.integers(0, 3))).tolist()))
    n = len(image_ids)
    sits = {(int(c), int(i)): float(rng.choice([1.0, 2.5, 3.0, 4.0, 5.0]))
            for c, i in zip(rng.choice(caption_ids, 4 * n), rng.choice(image_ids, 4 * n), strict=True)}  # fmt: skip
    cxc: dict[str, dict[int, list[int]]] = {"i2t": {}, "t2i": {}}
    for (c, i), s in sits.items():
        if s >= 3:
            cxc["t2i"].setdefault(c, []).append(i)
            cxc["i2t"].setdefault(i, []).append(c)
    lists = {"coco": coco, "eccv": eccv, "cxc": cxc}
    (folder / "lists.json").write_text(json.dumps({"caption_ids": caption_ids, "lists": lists}))
    (folder / "cxc").mkdir(exist_ok=True)
    scores = [0.0, 1.5, 2.4, 2.5, 3.0, 3.6, 5.0]
    ratings = {
        "sits": [(c, i, s) for (c, i), s in sits.items()],
        "sts": [(int(a), int(b), float(rng.choice(scores))) for a, b in rng.choice(caption_ids, (2 * n, 2)) if a != b],
        "sis": [(int(a), int(b), float(rng.choice(scores))) for a, b in rng.choice(image_ids, (n, 2)) if a != b],
    }
    keys = {"sits": (_caption_key, _image_key), "sts": (_caption_key, _caption_key), "sis": (_image_key, _image_key)}
    for kind, rows in ratings.items():
        rows = list({(a, b): (a, b, s) for a, b, s in rows}.values())
        with open(folder / "cxc" / f"{kind}_test.csv", "w", newline="") as fout:
            writer = csv.writer(fout)
            writer.writerow(["caption1" if kind != "sis" else "image1", "item2", "agg_score", "sampling_method"])
            writer.writerows([keys[kind][0](a), keys[kind][1](b), f"{s:.2f}", "synthetic"] for a, b, s in rows)


def _caption_key(c: int) -> str:
    return f"COCO_val2014:sentid:{c}"


def _image_key(i: int) -> str:
    return f"COCO_val2014_{i:012d}.jpg"


def resources(folder: Path) -> object:
    """The ground truth and CxC ratings of the world (what ``--ground-truth`` / ``--cxc-source`` would give)."""
    from eccv_metric import GroundTruth
    from eccv_metric import Resources

    saved = json.loads((folder / "lists.json").read_text())
    lists = {
        bench: {d: {int(q): v for q, v in by_q.items()} for d, by_q in dirs.items()}
        for bench, dirs in saved["lists"].items()
    }
    return Resources(GroundTruth.from_id_lists(saved["caption_ids"], lists), cxc_source=folder / "cxc")


def word_tokenizer(max_length: int) -> object:
    """A word-level tokenizer over :func:`vocabulary` (CLIP's vocabulary size; COCO words are mostly one BPE
    token in CLIP's tokenizer, so captions get about as many tokens), ``<s> ... </s>``."""
    from tokenizers import Tokenizer
    from tokenizers import models
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: k for k, w in enumerate([*SPECIALS, *vocabulary()])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 2), ("</s>", 3)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        model_max_length=max_length,
    )  # fmt: skip


def write_model(folder: Path, preset: str, seed: int = 0) -> Path:
    """``tiny``: the unit tests' tiny CLIP (tests/unit/model_world.py); ``b32``: a CLIPModel of ViT-B/32's shape
    (both towers, 224 pixels, patch 32, 77 tokens, 49,408-token vocabulary), random weights of ``seed``."""
    if (folder / "config.json").is_file():
        return folder
    if preset == "tiny":
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.unit.model_world import tiny_clip

        return tiny_clip(folder, seed)
    import torch
    from transformers import CLIPConfig
    from transformers import CLIPImageProcessor
    from transformers import CLIPModel
    from transformers import CLIPProcessor

    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config={"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 8,
                     "vocab_size": VOCAB, "max_position_embeddings": 77, **TOKEN_IDS},
        vision_config={"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                       "num_attention_heads": 12, "image_size": 224, "patch_size": 32},
        projection_dim=512,
    )  # fmt: skip
    CLIPModel(config).save_pretrained(folder)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    CLIPProcessor(image_processor=image_processor, tokenizer=word_tokenizer(77)).save_pretrained(folder)
    return folder
