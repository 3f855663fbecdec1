"""What identifies a model's preprocessing and configuration, for the embedding cache's key and the provenance:
the full serialisation of a tokenizer or processor (:func:`saved_digest`), or the state of an object that has
none (an open_clip tokenizer or transform: :func:`state_digest`), and the configs of a model's modules
(:func:`configs_digest`), the same in every process. Nothing here imports torch.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

# keys of a saved tokenizer / processor config that say where it was loaded from, not what it does
WHERE_FROM = frozenset({"is_local", "local_files_only", "name_or_path", "_name_or_path", "_commit_hash"})


def saved_digest(obj: Any) -> str:
    """sha256 of everything ``obj.save_pretrained`` writes (a tokenizer's or processor's full serialisation:
    vocabulary, merges, special tokens, normalisation, image processor config), JSON files read without the
    keys that only say where it was loaded from (:data:`WHERE_FROM`)."""
    h = hashlib.sha256()
    with tempfile.TemporaryDirectory() as tmp:
        obj.save_pretrained(tmp)
        for path in sorted(p for p in Path(tmp).rglob("*") if p.is_file()):
            data = path.read_bytes()
            if path.suffix == ".json":
                try:
                    loaded = json.loads(data)
                except ValueError:
                    loaded = None
                if isinstance(loaded, dict):
                    loaded = {k: v for k, v in loaded.items() if k not in WHERE_FROM}
                    data = json.dumps(loaded, sort_keys=True, default=str).encode()
            name = path.relative_to(tmp).as_posix()
            h.update(f"{name}|{len(data)}|".encode())
            h.update(data)
    return h.hexdigest()


def configs_digest(model: Any) -> str | None:
    """sha256 of the configs of a torch model's modules (a transformers model's ``config``: layer norms,
    activations, projection, position embeddings... all that its weight files leave out), each once, in module
    order, without the keys that only say where it was loaded from (:data:`WHERE_FROM`); None when no module
    has one (open_clip: its architecture is the spec's)."""
    configs: dict[int, dict] = {}
    for module in model.modules() if callable(getattr(model, "modules", None)) else ():
        config = getattr(module, "config", None)
        if callable(getattr(config, "to_dict", None)) and id(config) not in configs:
            configs[id(config)] = {k: v for k, v in config.to_dict().items() if k not in WHERE_FROM}
    if not configs:
        return None
    return hashlib.sha256(json.dumps(list(configs.values()), sort_keys=True, default=str).encode()).hexdigest()


def state_digest(obj: Any) -> str:
    """sha256 of what an object is made of, for preprocessing that has no ``save_pretrained`` (an open_clip
    tokenizer: its vocabulary, merges, context length; a transform): see :func:`plain`."""
    return hashlib.sha256(json.dumps(plain(obj), sort_keys=True).encode()).hexdigest()


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data that is the same in every process (no memory addresses): containers item by
    item, objects by their class and attributes (a memo named ``cache`` left out), functions by name, objects
    with ``save_pretrained`` by :func:`saved_digest`."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, dict):
        pairs = [[plain(k, depth + 1), plain(v, depth + 1)] for k, v in value.items()]
        return sorted(pairs, key=lambda kv: json.dumps(kv[0], sort_keys=True))
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v, depth + 1) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": value.flags}
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if callable(getattr(value, "save_pretrained", None)):
        return {"class": kind, "saved": saved_digest(value)}
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy arrays, tensors
        return {"class": kind, "values": value.tolist()}
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict) and depth < 6:
        return {"class": kind, "state": plain({k: v for k, v in attrs.items() if k != "cache"}, depth + 1)}
    if callable(value):
        return {"function": f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', kind)}"}
    return {"class": kind, "repr": re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))}


def without_addresses(text: str) -> str:
    """A repr without memory addresses (``<function f at 0x7f...>``): the same in every process."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)
