"""The model path's synthetic world: a built-like folder over :mod:`tests.unit.world` and tiny random models.

``write_data``: ``data/<config>/test-0.parquet`` for images, captions and the FG gallery / captions of the
world, with 8x8 PNG pixels (seeded noise, distinct per image) for the world's images; FG distractors
(unlabeled2017) and Flickr30K photos have no pixels, as in a real build; ``pixel_folder`` writes them as
files for ``images=``. Models: transformers ``CLIPModel`` / ``SiglipModel`` from small configs and a
sentence-transformers text model, random-init with a fixed seed, saved to local folders with locally
built processors (a character-level tokenizer): no download.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eccv_metric import Resources
from tests.unit.world import World

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
WORDS = ["dog", "cat", "man", "red", "bus", "on", "a", "the", "street", "table", "two", "blue", "sits", "runs"]


def png(seed: int, size: int = 8) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(out, "PNG")
    return out.getvalue()


def caption_text(caption_id: int) -> str:
    rng = np.random.default_rng(caption_id)
    return " ".join(rng.choice(WORDS, int(rng.integers(3, 8))).tolist())


def _write(folder: Path, config: str, columns: dict, row_group_size: int = 7) -> None:
    (folder / "data" / config).mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), folder / "data" / config / "test-0.parquet", row_group_size=row_group_size)


def write_data(world: World, folder: Path, skip_pixels: tuple[int, ...] = (), fg_pixels: bool = True) -> Path:
    """A built-like folder for the world (see the module docstring); ``skip_pixels``: image ids left without in the
    images config; ``fg_pixels`` False: the FG galleries' val2014 images too (no image has pixels)."""
    names = [f"COCO_val2014_{i:012d}.jpg" for i in world.image_ids]
    _write(
        folder,
        "images",
        {
            "image_id": pa.array(world.image_ids, pa.int64()),
            "file_name": names,
            "image": pa.array(
                [
                    None if i in skip_pixels else {"bytes": png(i), "path": n}
                    for i, n in zip(world.image_ids, names, strict=True)
                ],
                IMAGE,
            ),
        },
    )
    _write(
        folder,
        "captions",
        {
            "caption_id": pa.array(world.caption_ids, pa.int64()),
            "image_id": pa.array([world.caption_image[c] for c in world.caption_ids], pa.int64()),
            "caption": [caption_text(c) for c in world.caption_ids],
        },
    )
    for bench in ("mscoco_fg", "flickr30k_fg"):
        fg = Resources(world.gt, fg_source=world.fg_dir).collection(bench)
        files = fg.image_files.tolist()
        origin = ["val2014" if f.startswith("COCO_val2014_") else ("unlabeled2017" if len(f) == 16 else "flickr30k")
                  for f in files]  # fmt: skip
        _write(
            folder,
            f"{bench}_gallery",
            {
                "image_id": pa.array(fg.images.ids, pa.int64()),
                "file_name": files,
                "source": origin,
                "image": pa.array(
                    [
                        {"bytes": png(int(i)), "path": f} if o == "val2014" and fg_pixels else None
                        for i, f, o in zip(fg.images.ids.tolist(), files, origin, strict=True)
                    ],
                    IMAGE,
                ),  # fmt: skip
            },
        )
        _write(
            folder,
            f"{bench}_captions",
            {
                "caption_id": pa.array(fg.captions.ids, pa.int64()),
                "image_id": pa.array(fg.images.ids[fg.caption_image], pa.int64()),
                "caption": list(fg.texts),
                "original_caption": [caption_text(int(c)) for c in fg.captions.ids],
            },
        )
    return folder


def write_ground_truth(world: World, folder: Path) -> Path:
    """The world's ground truth as a build holds it, in a ``write_data`` folder: the ``positives`` config (one row
    per query and direction: its COCO, CxC and ECCV ids) and the images' COCO categories (names ``cat<k>``), so
    that ``GroundTruth.from_dataset(folder)`` is the world's (the Space's dataset, ``ECCV_CAPTION_DATA``)."""
    images = pq.read_table(folder / "data" / "images" / "test-0.parquet")
    names = [sorted(f"cat{c}" for c in world.categories.get(i, ())) for i in world.image_ids]
    images = images.append_column("categories", pa.array(names, pa.list_(pa.string())))
    pq.write_table(images, folder / "data" / "images" / "test-0.parquet", row_group_size=7)
    rows: dict[str, list] = {"direction": [], "query_id": [], "coco": [], "cxc": [], "eccv": []}
    for direction, queries in (("i2t", world.image_ids), ("t2i", world.caption_ids)):
        for query in queries:
            rows["direction"].append(direction)
            rows["query_id"].append(query)
            for bench in ("coco", "cxc", "eccv"):
                rows[bench].append(world.lists[bench][direction].get(query) or None)
    lists = pa.list_(pa.int64())
    _write(folder, "positives", {"direction": rows["direction"], "query_id": pa.array(rows["query_id"], pa.int64()),
                                 **{b: pa.array(rows[b], lists) for b in ("coco", "cxc", "eccv")}})  # fmt: skip
    return folder


def pixel_folder(world: World, folder: Path) -> Path:
    """The FG images a build does not embed (unlabeled2017 distractors, Flickr30K photos), as files."""
    folder.mkdir(parents=True, exist_ok=True)
    for bench in ("mscoco_fg", "flickr30k_fg"):
        fg = Resources(world.gt, fg_source=world.fg_dir).collection(bench)
        for i, f in zip(fg.images.ids.tolist(), fg.image_files.tolist(), strict=True):
            if not f.startswith("COCO_val2014_"):
                (folder / f).write_bytes(png(int(i)))
    return folder


def _tokenizer():  # noqa: ANN202
    from tokenizers import Tokenizer
    from tokenizers import models
    from tokenizers import pre_tokenizers
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "<s>", "</s>", *[chr(c) for c in range(32, 127)]])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    # every text ends in </s> (id 3): CLIP pools its text at that token (text_config eos_token_id=3)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 2), ("</s>", 3)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        model_max_length=32,
    )  # fmt: skip


TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3}
SMALL = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}


def tiny_clip(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import CLIPConfig
    from transformers import CLIPImageProcessor
    from transformers import CLIPModel
    from transformers import CLIPProcessor

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    config = CLIPConfig(
        text_config={**SMALL, "vocab_size": len(tokenizer), "max_position_embeddings": 32, **TOKEN_IDS},
        vision_config={**SMALL, "image_size": 8, "patch_size": 4},
        projection_dim=8,
    )
    CLIPModel(config).save_pretrained(folder)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 8}, crop_size={"height": 8, "width": 8})
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def tiny_siglip(folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import SiglipConfig
    from transformers import SiglipImageProcessor
    from transformers import SiglipModel
    from transformers import SiglipProcessor

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    config = SiglipConfig(
        text_config={**SMALL, "vocab_size": len(tokenizer), "max_position_embeddings": 32},
        vision_config={**SMALL, "image_size": 8, "patch_size": 4},
    )
    SiglipModel(config).save_pretrained(folder)
    SiglipProcessor(
        image_processor=SiglipImageProcessor(size={"height": 8, "width": 8}), tokenizer=tokenizer
    ).save_pretrained(folder)
    return folder


def tiny_st(folder: Path, seed: int = 0, similarity: str | None = None) -> Path:
    """A sentence-transformers text model (a 1-layer BERT with mean pooling, not normalised), saved locally;
    ``similarity``: the ``similarity_fn_name`` it declares (None: the library's default, cosine)."""
    import torch
    from sentence_transformers import SentenceTransformer

    try:  # sentence-transformers >= 6 (its old `models` path warns)
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:
        from sentence_transformers import models
    from transformers import BertConfig
    from transformers import BertModel

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    bert = folder.with_name(folder.name + "_bert")
    BertModel(BertConfig(vocab_size=len(tokenizer), max_position_embeddings=32, **SMALL)).save_pretrained(bert)
    tokenizer.save_pretrained(bert)
    word = models.Transformer(str(bert), max_seq_length=32)
    SentenceTransformer(modules=[word, models.Pooling(16, "mean")], similarity_fn_name=similarity).save(str(folder))
    return folder


def run_model(model: object, data: Path, world: World, tmp_path: Path, **kwargs: object) -> object:
    """evaluate_model on the world's resources, small batches (images and captions) in the main process, a cache
    under ``tmp_path``."""
    from eccv_metric.models import evaluate_model

    kwargs.setdefault("cache_dir", tmp_path / "cache")
    kwargs.setdefault("text_batch_size", 8)
    kwargs.setdefault("batch_size", 8)
    return evaluate_model(model, data, resources=world.resources(), workers=0, n_resamples=20, **kwargs)  # type: ignore[arg-type]


class Counting:
    """A Python model (no weights) whose embeddings are a function of the pixels / the text alone, counting every
    item it encodes."""

    def __init__(self) -> None:
        self.images: list[bytes] = []
        self.texts: list[str] = []

    def encode_images(self, images):  # noqa: ANN001, ANN201
        self.images += [im.tobytes() for im in images]
        return np.stack([np.asarray(im, np.float32).reshape(-1, 3).mean(0) for im in images])

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        self.texts += list(texts)
        return np.stack([[len(t), t.count("a") + 1, sum(map(ord, t)) % 97] for t in texts]).astype(np.float32)
