"""Id files: a .npy array, a JSON list, or a text file with one id per line (ASCII decimal integers only)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import load_npy
from eccv_metric.core.files import read_text
from eccv_metric.core.ids import INT64_MAX
from eccv_metric.core.ids import require_int64_range
from eccv_metric.core.ids import too_large
from eccv_metric.core.jsonio import int_list
from eccv_metric.core.jsonio import read_json

_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")


def load_ids(path: str | Path, what: str = "ids") -> np.ndarray:
    """Ids from a .npy file, a JSON list, or a text file with one id per line (integers only)."""
    path = Path(path)
    if path.suffix.lower() == ".npy":
        arr = load_npy(path, f"a .npy array of {what}")
    elif path.suffix.lower() == ".json":
        arr = np.asarray(int_list(read_json(path, f"a JSON list of {what}"), path, what), dtype=np.int64)
    else:
        tokens = read_text(path).split()
        bad = next((t for t in tokens if not _DECIMAL.fullmatch(t)), None)
        if bad is not None:
            raise EvaluationError(f"{path}: {what} must be decimal integers, one per line, not {bad!r:.30}")
        values = [int(t) for t in tokens]
        if values and max(values) > INT64_MAX:
            raise EvaluationError(f"{path}: {too_large(what, max(values))}")
        arr = np.asarray(values, dtype=np.int64)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise EvaluationError(f"{path}: {what} must be a flat list of integers, got {arr.dtype} shape {arr.shape}")
    require_int64_range(arr, f"{path}: {what}")  # a uint64 id past int64 would wrap to a negative id
    return arr.astype(np.int64, copy=False)
