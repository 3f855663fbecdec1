"""What every torch adapter shares: the device (CUDA, then MPS, then CPU), precision, weights digest.

Imported only by the adapters and the encoder, after the extra is known to be installed.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.spec import require

PRECISIONS = {"fp32": None, "fp16": "float16", "bf16": "bfloat16"}


def pick_device(device: str | None) -> str:
    """``device`` as given (checked), else CUDA, then MPS, then CPU."""
    torch = require("torch")
    if device:
        try:
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as exc:
            raise EvaluationError(f"device= {device} is not usable here ({str(exc)[:100]}); try cpu") from None
        return device
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def check_precision(precision: str, device: str) -> str:
    if precision not in PRECISIONS:
        raise EvaluationError(f"precision= must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision != "fp32" and device.split(":")[0] == "cpu":
        raise EvaluationError(f"precision= {precision} (autocast) is for a GPU; on cpu use fp32")
    return precision


def autocast(device: str, precision: str) -> Any:
    """``torch.autocast`` in fp16 / bf16 on a GPU, else nothing; always under ``torch.inference_mode``."""
    torch = require("torch")
    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode())
    if PRECISIONS.get(precision):
        stack.enter_context(torch.autocast(device.split(":")[0], dtype=getattr(torch, PRECISIONS[precision])))
    return stack


def weights_digest(module: Any) -> str:
    """sha256 of a torch module's state dict (names, dtypes, shapes, values): what identifies its weights."""
    torch = require("torch")
    h = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


# keys of a saved tokenizer / processor config that say where it was loaded from, not what it does
WHERE_FROM = frozenset({"is_local", "local_files_only", "name_or_path", "_name_or_path", "_commit_hash"})


def saved_digest(obj: Any) -> str:
    """sha256 of everything ``obj.save_pretrained`` writes (a tokenizer's or processor's full serialisation:
    vocabulary, merges, special tokens, normalisation, image processor config), JSON files read without the
    keys that only say where it was loaded from (:data:`WHERE_FROM`)."""
    import json
    import tempfile
    from pathlib import Path

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


def state_digest(obj: Any) -> str:
    """sha256 of what an object is made of, for preprocessing that has no ``save_pretrained`` (an open_clip
    tokenizer: its vocabulary, merges, context length; a transform): see :func:`plain`."""
    import json

    return hashlib.sha256(json.dumps(plain(obj), sort_keys=True).encode()).hexdigest()


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-able data that is the same in every process (no memory addresses): containers item by
    item, objects by their class and attributes (a memo named ``cache`` left out), functions by name, objects
    with ``save_pretrained`` by :func:`saved_digest`."""
    import json
    import re

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


HUB_TIMEOUT = 5.0  # seconds for the one request that tells whether the Hub can be reached


def hub_unreachable(name: str) -> str | None:
    """Why the Hugging Face Hub cannot be reached for the Hub name ``name`` (one request, no retries), else None
    (a local folder, offline mode: ``HF_HUB_OFFLINE=1``, or a Hub that answers). The libraries' own download
    retries for half a minute or more on a connection error; with this answer the adapters read the local
    cache only (``local_files_only``) and fail at once when the model is not there."""
    from pathlib import Path

    if Path(name).exists():
        return None
    import huggingface_hub
    from huggingface_hub import constants

    if huggingface_hub.is_offline_mode():
        return None
    try:
        huggingface_hub.get_session().head(constants.ENDPOINT, timeout=HUB_TIMEOUT)
    except Exception as exc:  # the HTTP client's transport errors (httpx or requests) or a socket error
        kinds = {c.__name__ for c in type(exc).__mro__}
        if kinds & {"TransportError", "RequestException", "OSError", "TimeoutException"}:
            return f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} ({type(exc).__name__})"
    return None


def load_error(spec: str, exc: BaseException, unreachable: str | None, cache_read: bool = True) -> EvaluationError:
    """The one error line of a model that did not load: what the library said, or (Hub unreachable) what to do;
    ``cache_read``: the local cache was tried (the model is not there)."""
    if unreachable is not None:
        tried = " and the model is not in the local cache" if cache_read else ""
        return EvaluationError(
            f"{spec}: {unreachable}{tried}: connect, set HF_HUB_OFFLINE=1 to use cached models only, or give a "
            "local folder"
        )
    return EvaluationError(f"{spec}: cannot load the model ({str(exc).splitlines()[0][:160] if str(exc) else ''})")
