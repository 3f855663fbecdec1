"""What identifies a model's weights, without hashing every tensor on every run.

A model loaded from a folder of weight files (a local folder, or the Hugging Face cache's snapshot of a Hub
repo) is identified by those files: the sha256 of each (``*.safetensors``, else ``*.bin`` / ``*.pt`` /
``*.pth``, folder by folder, as transformers and sentence-transformers prefer safetensors), remembered by
:class:`~eccv_metric.models.data.digests.FileDigests` (``file_digests.json`` in the embedding cache folder, by the
file's resolved path, size, mtime, ctime and inode; nothing remembered with ``cache=False``): a second run
reads a stamp per file. Where no file stands for the weights (a model built in Python, weights some of which
were initialised at load: missing or mismatched keys, open_clip), the digest is of the state dict's tensors
(:func:`~eccv_metric.models.families.torchutil.weights_digest`). Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from eccv_metric.core.files import write_text_atomic
from eccv_metric.models.data.digests import FileDigests

SAFE = (".safetensors",)
PICKLED = (".bin", ".pt", ".pth")
NOT_WEIGHTS = ("training_args", "optimizer", "scheduler", "rng_state")  # what a trainer saves beside the weights


def weight_files(folder: str | Path, recursive: bool = True) -> list[Path]:
    """The weight files in ``folder`` (and its subfolders when ``recursive``): in each folder its
    ``*.safetensors``, or else its ``*.bin`` / ``*.pt`` / ``*.pth`` (sorted; ``training_args.bin`` and
    optimizer states are not weights)."""
    root = Path(folder)
    if not root.is_dir():
        return []
    out: list[Path] = []
    for here, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        names = sorted(files)
        safe = [n for n in names if n.endswith(SAFE)]
        chosen = safe or [n for n in names if n.endswith(PICKLED) and not n.startswith(NOT_WEIGHTS)]
        out += [Path(here) / n for n in chosen]
    return out


def hub_folder(name: str, revision: str | None = None, probes: tuple[str, ...] = ("config.json",)) -> Path | None:
    """The local folder a model was loaded from: ``name`` itself, or its Hub snapshot in the Hugging Face cache
    (``revision``: the commit it was loaded at; ``probes``: files one of which every such snapshot holds, the
    first found); None when neither is on this machine."""
    if Path(name).is_dir():
        return Path(name)
    if name.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        for probe in probes:
            found = try_to_load_from_cache(name, probe, revision=revision)
            if isinstance(found, str):
                return Path(found).parent
    except Exception:  # noqa: BLE001 - an odd name or cache layout: no folder, the tensors are hashed instead
        return None
    return None


def record_main(name: str, commit: str) -> None:
    """Record ``commit``, the Hub's answer for the model's ``main`` ref, as that ref in the Hugging Face cache, as
    a download at ``main`` does (a load pinned to the commit downloads at the commit and leaves no ref): offline
    (``HF_HUB_OFFLINE=1``) or with the Hub out of reach, the libraries and :func:`hub_folder` read that ref."""
    try:
        from huggingface_hub import constants
        from huggingface_hub.file_download import repo_folder_name

        ref = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=name, repo_type="model") / "refs" / "main"
        if not ref.is_file() or ref.read_text().strip() != commit:
            write_text_atomic(ref, commit)
    except (OSError, ImportError, ValueError):
        pass  # a cache that cannot be written: offline, the model is not found there (its load says so)


def files_identity(folder: Path | None, digests: FileDigests | None, recursive: bool = True) -> dict | None:
    """``{"weights": digest, "weights_from": "files", "weights_files": [...]}``: sha256 over each weight file's
    name (relative to ``folder``) and content digest; None when ``folder`` holds no weight file."""
    files = weight_files(folder, recursive) if folder is not None else []
    if not files:
        return None
    memo = digests if digests is not None else FileDigests(None)
    names = [p.relative_to(folder).as_posix() for p in files]  # type: ignore[arg-type]
    h = hashlib.sha256()
    for name, path in zip(names, files, strict=True):
        h.update(f"{name}|{memo.of(path)}\n".encode())
    memo.save()
    return {"weights": h.hexdigest(), "weights_from": "files", "weights_files": names}
