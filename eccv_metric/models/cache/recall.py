"""A rerun whose embeddings are all cached, scored without loading the model.

Loading the model is most of such a run: on the 2-core CPU, 4.1 of the 6.0 s of a warm five-benchmark run
with the tests' tiny CLIP were importing torch and transformers and building the model, none of which the
run uses when nothing is encoded. What it uses of the model is its description (:data:`FIELDS`: the spec,
the kinds it encodes, its similarity, its identity, the cache key's model part, its device, precision and
batching traits, its image preprocessing and the ``decode="gpu"`` decoder's description). A load makes that
description from the files the model loads from, the libraries that load it and the load options, so after
a load it is remembered under the digest of exactly those (:func:`files_key`:
``<cache root>/models/<sha256>.json``, written atomically through the run's cache folder). A later run with
the same digest is scored from the cache without loading the model when every item set it needs is a
finished cache entry (checked as the store checks every entry: its stored key, rows, dimensions, checksum,
finite values); anything else loads the model.

The digest (:func:`files_key`) covers:

- every file of the folder the model loads from (an ``hf:`` or ``st:`` local folder; a Hub model's snapshot
  of the commit a load reads, with that commit: the commit the Hub names for its ``config.json`` (``st:``:
  ``modules.json``), one request, the one the load is then pinned to; offline, ``HF_HUB_OFFLINE=1``, or a Hub
  that cannot be reached: the local ``main`` ref; after a load: the commit it read), each by its sha256
  (remembered by :class:`~eccv_metric.models.data.digests.FileDigests`: path, size, mtime, ctime, inode); in its
  subfolders (not hidden ones), each by that stamp alone (:func:`nested`);
- the versions of Python, this package and every library on the loading path (:data:`LIBRARIES`);
- the spec, the device (as picked: CUDA, then MPS, then CPU when not given), the precision, both batch
  sizes and the decoder.

Never remembered: a model whose weights are identified by their tensors (weights initialised at load:
missing or mismatched keys), families without a folder of files (``open_clip:``), Python objects.
Where a load under a remembered digest describes the model differently (something outside the digest
changed what loads), that digest is marked and never used again: the load's numbers are the run's.
The provenance says which: ``"model_loaded": false`` for a run scored from the cache alone.
"""

from __future__ import annotations

import json
import os
import platform
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version
from pathlib import Path
from typing import Any

from eccv_metric.core.about import __version__
from eccv_metric.core.files import write_json_atomic
from eccv_metric.models.cache.entries import cache_key
from eccv_metric.models.cache.entries import canonical
from eccv_metric.models.cache.folder import CacheFolder
from eccv_metric.models.data.digests import FileDigests
from eccv_metric.models.data.digests import stamp
from eccv_metric.models.encoding.decode import Decoder
from eccv_metric.models.families.encoder import KIND_METHODS
from eccv_metric.models.families.encoder import SIMILARITIES
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import parse_spec

FOLDER = "models"  # under the embedding cache's root
LIBRARIES = (
    "torch", "torchvision", "transformers", "sentence-transformers", "tokenizers", "safetensors", "huggingface_hub",
    "accelerate", "sentencepiece", "protobuf", "tiktoken", "pillow", "numpy",
)  # fmt: skip
FIELDS = ("spec", "kinds", "similarity", "identity", "device", "precision", "batches_itself", "sort_texts",
          "image_preprocessing")  # fmt: skip
TYPES = {"spec": str, "kinds": list, "similarity": str, "identity": dict, "device": str, "precision": str,
         "batches_itself": bool, "sort_texts": bool, "image_preprocessing": (dict, type(None)),
         "decoder": (dict, type(None))}  # fmt: skip


def versions() -> dict[str, str | None]:
    """Python's, this package's and each of :data:`LIBRARIES`' version (None: not installed), read from their
    metadata (nothing imported)."""
    out: dict[str, str | None] = {"python": platform.python_version(), "eccv-caption-hf": __version__}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def files_key(
    model: object, options: LoadOptions, decode: str, digests: FileDigests, commit: str | None = None
) -> dict | None:
    """What a load of ``model`` is made from (see the module docstring; ``commit``: the Hub commit a load read,
    else the one a load would read now), or None where that is not known (nothing remembered or recalled)."""
    if not isinstance(model, str):
        return None
    family, name = parse_spec(model)
    if family.folder is None:
        return None
    found = family.folder(name, commit)
    if found is None:
        return None
    folder, commit = found
    files = sorted(p for p in folder.iterdir() if p.is_file())
    if not files:
        return None
    digested: dict[str, object] = {p.name: digests.of(p) for p in files}
    digested.update(nested(folder))
    digests.save()
    return {
        "spec": model,
        "commit": commit,
        "files": digested,
        "versions": versions(),
        "device": picked_device(options.device),
        "precision": options.precision,
        "batch_size": options.batch_size,
        "text_batch_size": options.text_batch_size,
        "decode": decode,
    }


def nested(folder: Path) -> dict[str, list[int]]:
    """Each file in the folder's subfolders (hidden ones left out) by its stamp (size, times, inode): transformers
    reads some of them (``additional_chat_templates/``, a processor's second tokenizer's folder); any change to
    one is another key. Not hashed: a training run's checkpoints may sit there."""
    out: dict[str, list[int]] = {}
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if Path(top) == folder:
            continue
        for name in sorted(names):
            path = Path(top) / name
            if path.is_file():
                out[path.relative_to(folder).as_posix()] = stamp(path)
    return out


def picked_device(device: str | None) -> str:
    """The device a load would pick (``cpu`` as given, without importing torch; else as the load checks it)."""
    if device == "cpu":
        return device
    from eccv_metric.models.families.torchutil import pick_device

    return pick_device(device)


def memo_path(root: Path, key: dict) -> Path:
    return root / FOLDER / f"{cache_key(key)}.json"


def describe(encoder: Encoder, decoder: Decoder | None) -> dict | None:
    """What a run needs of a loaded model when nothing is encoded (:data:`FIELDS` and the decoder), as JSON
    gives it back; None when it cannot be remembered (no identity, weights known by their tensors only)."""
    identity = encoder.identity
    if not isinstance(identity, dict) or identity.get("weights_from") != "files":
        return None
    fields = {name: getattr(encoder, name, None) for name in FIELDS}
    fields["decoder"] = decoder.describe if decoder is not None else None
    return canonical(fields)


def remember(
    folder: CacheFolder | None, before: dict | None, after: dict | None, encoder: Encoder, decoder: Decoder | None
) -> None:
    """After a load: its description under its key (``after``: made after the load, of the commit it read),
    when ``before`` (made before it) is the same or was not known (a Hub model downloaded by the load);
    a description other than the one remembered marks the key as not to be recalled (the load depends on
    something the key does not cover). Written through the run's cache ``folder`` (a write that fails only
    costs loading the model next time: the folder warns once)."""
    key = after
    if folder is None or key is None or (before is not None and before != key):
        return  # a file changed while the model loaded: which state was loaded is not known
    described = describe(encoder, decoder)
    if described is None:
        return
    path = memo_path(folder.root, key)
    known = read(path, key)
    if known is not None and known.get("description") == described:
        return
    if known is not None:
        described = None  # two loads of the same files described the model differently: never recalled
    memo = {"key": canonical(key), "description": described}
    folder.write(lambda: write_json_atomic(path, memo))


def read(path: Path, key: dict) -> dict | None:
    """The memo at ``path`` when it is the one of ``key`` (its stored key equal), else None."""
    try:
        memo = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(memo, dict) or memo.get("key") != canonical(key):
        return None
    return memo


def recall(root: Path | None, key: dict | None) -> tuple[Encoder, Decoder | None] | None:
    """The remembered description of ``key`` as an encoder that encodes nothing (and the ``decode="gpu"``
    decoder's description), or None."""
    if root is None or key is None:
        return None
    memo = read(memo_path(root, key), key)
    described = memo.get("description") if memo is not None else None
    if not described_as_loaded(described, key):
        return None
    fields = {name: described[name] for name in FIELDS}
    fields["kinds"] = tuple(fields["kinds"])
    encoder = FunctionEncoder(**fields, texts=unloaded, images=unloaded)
    decoder = Decoder(encoder.device, unloaded, unloaded, described["decoder"]) if described["decoder"] else None
    return encoder, decoder


def described_as_loaded(described: object, key: dict) -> bool:
    """Whether ``described`` is what a load of ``key`` describes (:func:`describe`: every field of its type,
    the key's spec, device and precision, known kinds, files identifying the weights, the decoder of
    ``decode="gpu"`` for images): a memo edited or damaged otherwise is not used."""
    if not isinstance(described, dict) or set(described) != set(TYPES):
        return False
    if any(not isinstance(described[name], kind) for name, kind in TYPES.items()):
        return False
    kinds = described["kinds"]
    return (
        all(described[name] == key[name] for name in ("spec", "device", "precision"))
        and described["identity"].get("weights_from") == "files"
        and described["similarity"] in SIMILARITIES
        and bool(kinds)
        and all(isinstance(k, str) and k in KIND_METHODS for k in kinds)
        and len(set(kinds)) == len(kinds)
        and (described["decoder"] is not None) == (key["decode"] == "gpu" and "image" in kinds)
    )


def unloaded(*_: Any) -> Any:
    """What a recalled encoder does when asked to encode: never asked (its run encodes nothing)."""
    raise RuntimeError("a model recalled from its description was asked to encode: it is not loaded")
