"""CLIP_benchmark's side of ``scripts/benchmark_models.py``: its ``zeroshot_retrieval.evaluate`` on the same model,
images, captions, batch and workers, fed as its ``mscoco_captions`` builder feeds it (a dataset over the JPEG
files with their captions, its ``image_captions_collate_fn``), timed in a process of its own."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


class CocoFiles:
    """What CLIP_benchmark's ``mscoco_captions`` builder gives (torchvision's ``CocoCaptions``): for each image
    file, (its transform's output, its captions)."""

    def __init__(self, folder: Path, transform: object):
        self.captions = json.loads((folder / "captions.json").read_text())
        self.names = list(self.captions)
        self.folder = folder / "val2014"
        self.transform = transform

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i: int) -> tuple:
        from PIL import Image

        image = Image.open(self.folder / self.names[i]).convert("RGB")
        return self.transform(image), self.captions[self.names[i]]


class ImageTransform:
    def __init__(self, image_processor: object):
        self.image_processor = image_processor

    def __call__(self, image: object) -> object:
        return self.image_processor(images=image, return_tensors="pt")["pixel_values"][0]  # type: ignore[operator]


def image_captions_collate_fn(batch: list) -> tuple:
    """CLIP_benchmark's collate for caption datasets (clip_benchmark.datasets.builder, which imports torchvision)."""
    from torch.utils.data import default_collate

    transposed = list(zip(*batch, strict=True))
    return default_collate(transposed[0]), transposed[1]


def child_clip_benchmark(args: argparse.Namespace, root: Path) -> dict:
    import torch
    from clip_benchmark.metrics import zeroshot_retrieval
    from transformers import AutoModel
    from transformers import AutoProcessor

    from eccv_metric.models.encoding.decode import load_image_processor

    folder = root / f"model_{args.preset}"
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoModel.from_pretrained(folder).to(device).eval()
    processor = AutoProcessor.from_pretrained(folder)
    transform = ImageTransform(load_image_processor(str(folder), "pil"))  # the PIL preprocessing, as ours

    class Wrapped(torch.nn.Module):
        def encode_image(self, pixels: object) -> object:
            out = model.get_image_features(pixel_values=pixels)
            return getattr(out, "pooler_output", out)

        def encode_text(self, tokens: object) -> object:
            out = model.get_text_features(**tokens)
            return getattr(out, "pooler_output", out)

    def tokenizer(texts: list[str]) -> object:
        return processor.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")

    from eccv_metric.models.encoding.workers import default_workers

    workers = default_workers(device) if args.workers is None else args.workers  # the same as ours
    loader = torch.utils.data.DataLoader(CocoFiles(root / "world", transform), batch_size=args.batch_size,
                                         num_workers=workers, collate_fn=image_captions_collate_fn)  # fmt: skip
    start = time.perf_counter()
    out = zeroshot_retrieval.evaluate(Wrapped(), loader, tokenizer, device, amp=args.precision == "fp16",
                                      recall_k_list=[1, 5, 10])  # fmt: skip
    recalls = {
        k: {"i2t": out[f"text_retrieval_recall@{k}"], "t2i": out[f"image_retrieval_recall@{k}"]} for k in (1, 5, 10)
    }
    return {"call": time.perf_counter() - start, "recalls": recalls}
