"""What a pair scorer hands back, checked where it is taken: one finite number per pair, as a float32 copy.

A pair scorer's ``score_pairs`` / ``score_tokens`` may return numpy, torch (any device, any float dtype), a list
or a tuple. :func:`checked_scores` takes one output: the wrong count, a shape that is not one score per pair
(a 2-way ITM head's logits), a non-numeric array (strings, objects, booleans, complex numbers), NaN or an
infinity (also one made by the cast to float32) are each one :class:`~eccv_metric.core.errors.EvaluationError`
line naming the model and what is wrong; otherwise a fresh float32 numpy array the model cannot touch.
:class:`ScoreTaker` also catches a model that reuses its output buffer (the next call overwrites the scores it
returned before: a preallocated array handed back each time): the run that calls a model many times keeps one
taker per model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError

NUMERIC_KINDS = "iuf"  # numpy kinds a score may have: signed and unsigned integers, floats


def checked_scores(raw: Any, n: int, spec: str) -> np.ndarray:
    """``raw`` (a pair scorer's output for ``n`` pairs) as a fresh float32 numpy array of shape ``(n,)``, or one
    error naming the model (``spec``) and what is wrong."""
    values = as_numpy(raw, spec)
    if values.dtype.kind not in NUMERIC_KINDS:
        raise EvaluationError(
            f"{spec}: score_pairs returned {describe_dtype(values)} values; a pair scorer returns one number per "
            "pair (numpy, torch or a list of floats)"
        )
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or values.shape[0] != n:
        two_way = values.ndim == 2 and values.shape[1] == 2
        hint = " (a 2-way ITM head's logits? take the match logit, [:, 1])" if two_way else ""
        raise EvaluationError(
            f"{spec}: score_pairs returned shape {tuple(values.shape)} for {n} pairs; it must return one score per "
            f"pair, shape ({n},){hint}"
        )
    with np.errstate(over="ignore"):  # a float64 beyond float32's range: an infinity, refused below
        out = np.array(values, dtype=np.float32, copy=True)
    finite = np.isfinite(out)
    if not finite.all():
        bad = int((~finite).sum())
        nan = int(np.isnan(out).sum())
        what = "NaN" if nan == bad else "an infinity" if nan == 0 else "NaN or an infinity"
        cast = " (as float32)" if bool(np.isfinite(values[~finite]).any()) else ""
        raise EvaluationError(
            f"{spec}: score_pairs returned {what}{cast} for {bad} of {n} pairs; every pair needs a finite score"
        )
    return out


class ScoreTaker:
    """:func:`checked_scores` for one model over many calls, which also refuses an output buffer the model
    reuses: an output that shares memory with the one before it, or the one before it changed since it was
    taken (both mean the model overwrites what it returned)."""

    def __init__(self, spec: str):
        self.spec = spec
        self.last: Any = None  # the previous call's output, as returned
        self.last_copy: np.ndarray | None = None

    def __call__(self, raw: Any, n: int) -> np.ndarray:
        if self.last is not None and (raw is self.last or shares_memory(raw, self.last) or self.changed()):
            raise EvaluationError(
                f"{self.spec}: score_pairs returned a buffer it reuses (this call's scores overwrite the previous "
                "call's); return a fresh array each call (e.g. .copy())"
            )
        out = checked_scores(raw, n, self.spec)
        self.last, self.last_copy = raw, out
        return out

    def changed(self) -> bool:
        """Whether the previous output now holds other values than when it was taken."""
        try:
            now = as_numpy(self.last, self.spec).astype(np.float32).reshape(-1)
        except EvaluationError:
            return True
        return self.last_copy is None or now.shape != self.last_copy.shape or not np.array_equal(now, self.last_copy)


def as_numpy(raw: Any, spec: str) -> np.ndarray:
    """A model's output as a numpy array (a torch tensor moved to the host in float32 when it is a float; a
    list or tuple read by numpy), or one error line."""
    if hasattr(raw, "detach") and hasattr(raw, "cpu"):  # a torch tensor
        tensor = raw.detach()
        if tensor.is_floating_point() and tensor.dtype.itemsize < 4:  # fp16 / bf16: numpy has no bfloat16
            tensor = tensor.float()
        return np.asarray(tensor.cpu().numpy())
    if isinstance(raw, np.ndarray):
        return raw
    if isinstance(raw, (list, tuple)):
        try:
            return np.asarray(raw)
        except ValueError as exc:  # ragged nesting
            raise EvaluationError(
                f"{spec}: score_pairs returned a {type(raw).__name__} numpy cannot read ({str(exc)[:80]})"
            ) from None
    if raw is None or isinstance(raw, (str, bytes, dict)) or not hasattr(raw, "__len__"):
        raise EvaluationError(
            f"{spec}: score_pairs returned a {type(raw).__name__}; a pair scorer returns one number per pair "
            "(numpy, torch or a list of floats)"
        )
    return np.asarray(raw)


def describe_dtype(values: np.ndarray) -> str:
    return {"b": "boolean", "c": "complex", "O": "Python object", "U": "string", "S": "bytes"}.get(
        values.dtype.kind, str(values.dtype)
    )


def shares_memory(a: Any, b: Any) -> bool:
    """Whether two outputs (numpy arrays or torch tensors) overlap in memory."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.shares_memory(a, b))
    span_a, span_b = tensor_span(a), tensor_span(b)
    if span_a is None or span_b is None:
        return False
    return span_a[0] == span_b[0] and span_a[1] < span_b[2] and span_b[1] < span_a[2]


def tensor_span(x: Any) -> tuple[str, int, int] | None:
    """(device, first byte, end byte) of a torch tensor's storage; None for anything else or an empty one."""
    if not (hasattr(x, "untyped_storage") and hasattr(x, "device")):
        return None
    storage = x.untyped_storage()
    start = storage.data_ptr()
    if not start or not storage.nbytes():
        return None
    return str(x.device), start, start + storage.nbytes()
