"""Reading and writing the files users give the CLI and the Space: errors name the file and the format."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.jsonio import id_keys
from eccv_metric.jsonio import int_list
from eccv_metric.jsonio import read_json
from eccv_metric.jsonio import require_object


def write_json_atomic(path: str | Path, payload: object) -> None:
    """Write JSON through a temporary file and rename, so a failure never leaves half a file."""
    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text through a temporary file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fout:
            fout.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


RANKINGS_FORMAT = 'a JSON object {"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": [...]}}'


def load_rankings(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Read ``{"i2t": {query id: [ids]}, "t2i": {...}}``; keys must be canonical decimal ids, each id once."""
    return rankings_from_json(read_json(path, RANKINGS_FORMAT), path)


def rankings_from_json(raw: object, path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Check parsed rankings JSON (``path`` names its source in errors) and give int query ids."""
    raw = require_object(raw, path, RANKINGS_FORMAT)
    unknown = sorted(set(raw) - {"i2t", "t2i"})
    if unknown or not raw:
        raise EvaluationError(
            f"{path}: top-level keys must be 'i2t' and/or 't2i' (lower case), got {unknown or 'none'}; "
            f"expected {RANKINGS_FORMAT}"
        )
    out: dict[str, dict[int, list[int]]] = {}
    for direction, lists in raw.items():
        lists = require_object(lists, path, f'"{direction}" to map query ids to ranked lists')
        keys = id_keys(lists, path, f"{direction} query id")
        out[direction] = dict(zip(keys.tolist(), lists.values(), strict=True))
    return out


def load_ids(path: str | Path, what: str = "ids") -> np.ndarray:
    """Ids from a .npy file, a JSON list, or a text file with one id per line (integers only)."""
    path = Path(path)
    if path.suffix == ".npy":
        arr = load_npy(path, f"a .npy array of {what}")
    elif path.suffix == ".json":
        arr = np.asarray(int_list(read_json(path, f"a JSON list of {what}"), path, what), dtype=np.int64)
    else:
        try:
            arr = np.asarray([int(tok) for tok in read_text(path).split()], dtype=np.int64)
        except ValueError as exc:
            raise EvaluationError(f"{path}: {what} must be integers, one per line: {exc}") from None
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise EvaluationError(f"{path}: {what} must be a flat list of integers, got {arr.dtype} shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"cannot read {path} as UTF-8 text: {exc}") from None


def load_npy(path: str | Path, expected: str) -> np.ndarray:
    """A .npy array (memory-mapped; no pickles); other formats are named in the error."""
    path = Path(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        if not isinstance(arr, np.ndarray):  # an .npz archive loads as a lazy NpzFile
            arr.close()
            raise ValueError("an archive of several arrays")
        return arr
    except IsADirectoryError:
        raise EvaluationError(f"{path} is a folder; expected {expected}") from None
    except FileNotFoundError:
        raise EvaluationError(f"{path}: no such file; expected {expected}") from None
    except (OSError, ValueError, EOFError) as exc:
        with open(path, "rb") as fin:
            head = fin.read(6)
        kind = "a .npz archive" if head[:2] == b"PK" else "not a .npy file" if head != b"\x93NUMPY" else "a broken .npy"
        raise EvaluationError(f"{path}: {kind} ({exc}); expected {expected}") from None


def check_output_path(path: str | Path | None) -> None:
    """Fail before any work when an output path cannot be written as a file."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise EvaluationError(f"output {path} is a folder: give a file name, e.g. {path / 'results.json'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise EvaluationError(f"output {path}: cannot create it under {parent}")
