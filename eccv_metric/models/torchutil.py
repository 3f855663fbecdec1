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
