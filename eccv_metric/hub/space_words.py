"""The Space's words: its boxes (:data:`LABELS`), the library's keywords as boxes (:data:`SPACE_WORDS`), and
errors and notes put in them: the box named first, server folders hidden, the CLI's flags left out.

Also the R@K plot's points (K as text, so the axis shows the Ks given and nothing between them).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from typing import TypeVar

from eccv_metric.core.download import default_cache_dir
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words

T = TypeVar("T")
SOURCE_ENV = "ECCV_CAPTION_SOURCE_DIR"
DATA_ENV = "ECCV_CAPTION_DATA"  # the Space's dataset: a built folder or Hub repo (ground truth, pixels, texts)
IMAGES_ENV = "ECCV_CAPTION_IMAGES"  # folders (or zips) of images a build does not embed, separated by os.pathsep

# the boxes of the Space, as users read them (app.py labels its components with these)
LABELS = {
    "upload": "rankings .json, TREC run (.trec / .txt) or score matrix .npy",
    "pasted": "or paste rankings JSON",
    "image_embeddings": "image embeddings .npy",
    "caption_embeddings": "caption embeddings .npy",
    "normalize": "cosine similarity (normalize the embeddings)",
    "image_ids": "image ids of the rows (.npy, .json or text)",
    "caption_ids": "caption ids of the rows / columns (.npy, .json or text)",
    "instances": "COCO instances JSON (PMRP)",
    "sources": "benchmark source files (CxC CSVs, FG annotation + file-name lists)",
    "benchmarks": "benchmarks",
    "metrics": "metrics (scored beside the benchmarks' defaults; both empty: the defaults for the input)",
    "ks": "Ks for *_recalls",
    "partial": "score only the queries given (partial rankings)",
}
# the library's keywords in the Space's words (core.errors.in_words; inputs.choose.input_from_parts)
SPACE_WORDS = {
    "rankings": f"rankings (the '{LABELS['upload']}' box or the pasted text)",
    "scores": f"a score matrix .npy (the '{LABELS['upload']}' box)",
    "caption_scores": "a captions x captions matrix (not taken here: use the CLI's --caption-scores)",
    "image_scores": "an images x images matrix (not taken here: use the CLI's --image-scores)",
    "image_embeddings": f"the '{LABELS['image_embeddings']}' box",
    "caption_embeddings": f"the '{LABELS['caption_embeddings']}' box",
    "image_ids": f"the '{LABELS['image_ids']}' box",
    "caption_ids": f"the '{LABELS['caption_ids']}' box",
    "normalize": f"the '{LABELS['normalize']}' tick",
    "instances_json": f"a file in the '{LABELS['instances']}' box",
    "cxc_source": f"the files in the '{LABELS['sources']}' box",
    "fg_source": f"the files in the '{LABELS['sources']}' box",
    "target_metrics": "the 'metrics' box",
    "metrics": "the 'metrics' box",
    "benchmark": "the 'benchmarks' box",
    "benchmarks": "the 'benchmarks' box",
    "Ks": "the 'Ks' box",
    "ks": "the 'Ks' box",
    "partial": f"the '{LABELS['partial']}' tick",
}


def in_box(label: str, read: Callable[..., T], *args: object) -> T:
    """``read(*args)``; its error names the box (``LABELS[label]``) first."""
    try:
        return read(*args)
    except EvaluationError as exc:
        raise EvaluationError(f"the '{LABELS[label]}' box: {exc}") from None


def hide_paths(message: str) -> str:
    """``message`` without the server's folders: a path under the temporary folder (gradio's uploads, the
    uploaded sources' folder), the download cache or ``ECCV_CAPTION_SOURCE_DIR`` becomes its file name."""
    roots = {tempfile.gettempdir(), str(default_cache_dir())}
    roots |= {os.environ[name] for name in ("GRADIO_TEMP_DIR", SOURCE_ENV) if os.environ.get(name)}
    roots |= {os.environ[DATA_ENV]} if os.path.isdir(os.environ.get(DATA_ENV) or "") else set()
    roots |= {os.path.realpath(r) for r in roots}
    for root in sorted(roots, key=len, reverse=True):
        message = re.sub(re.escape(root.rstrip("/\\")) + r"(?:[/\\][^\s/\\'\"]+)*[/\\]([^\s/\\'\"]+)", r"\1", message)
    return message


def note_in_space_words(note: str) -> str:
    """A library note as the Space shows it: the CLI's flags left out, keywords named as the Space's boxes, the
    server's folders hidden (a TREC run's note names the uploaded file)."""
    note = hide_paths(note)
    note = re.sub(r"\s*\(CLI: [^)]*\)|;\s*CLI: [^);]*", "", note)
    both = f"files in the '{LABELS['image_ids']}' and '{LABELS['caption_ids']}' boxes"
    note = re.sub(r"\bimage_ids=? / caption_ids=?(?![\w=])", both, note)
    note = re.sub(r"\b(image_ids|caption_ids)\b(?!=)", lambda m: SPACE_WORDS[m.group(1)], note)
    return in_words(note, SPACE_WORDS)


def plot_points(curves: list[dict]) -> tuple[list[dict], list[str]]:
    """The R@K points with K as text (the plot's x axis then has exactly the Ks, no 1.4 or 1.8 ticks) and the Ks
    in numeric order (the axis' order)."""
    ks = sorted({int(p["K"]) for p in curves})
    return [{**p, "K": str(p["K"])} for p in curves], [str(k) for k in ks]
