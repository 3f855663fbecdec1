"""Strict reading of the JSON files users give: errors name the file, the field and the expected format.

- The bytes are decoded as JSON does (UTF-8, with or without a BOM, UTF-16 and
  UTF-32 are detected); anything unreadable raises naming the file.
- An object that holds the same key twice is refused (JSON parsers keep the
  last value silently).
- Integer ids given as object keys must be canonical decimal integers
  (``"391895"``; not ``"0391895"``, ``" 391895"``, ``"+391895"``, ``"391_895"``,
  which Python's ``int()`` would all map to one id).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview

_CANONICAL_INT = re.compile(r"0|[1-9][0-9]*")


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _DuplicateKeyError(dup)
    return out


def read_json(path: str | Path, expected: str) -> object:
    """Parse a JSON file; ``expected`` describes the format for the error messages."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise EvaluationError(f"{path} is a folder; expected a file: {expected}") from None
    except OSError as exc:
        raise EvaluationError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_json(data, path, expected)


def parse_json(data: bytes | str, path: str | Path, expected: str) -> object:
    """Parse JSON text or bytes; ``path`` names the source in the errors (a file, or e.g. "pasted text")."""
    try:
        return json.loads(data, object_pairs_hook=_no_duplicates)
    except _DuplicateKeyError as exc:
        raise EvaluationError(f"{path}: the key {str(exc)!r} appears twice in one JSON object") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        kind = "empty" if not data.strip() else "not valid JSON"  # type: ignore[union-attr]
        raise EvaluationError(f"{path}: {kind} ({exc}); expected {expected}") from None
    except RecursionError:
        raise EvaluationError(f"{path}: JSON nested too deeply; expected {expected}") from None


def id_keys(obj: dict, path: str | Path, field: str) -> np.ndarray:
    """The keys of a JSON object as int64 ids; each must be a canonical decimal integer."""
    keys = list(obj)
    bad = [k for k in keys if not _CANONICAL_INT.fullmatch(k)]
    if bad:
        raise EvaluationError(
            f'{path}: {field} keys must be ids written as plain decimal integers (e.g. "391895"), '
            f"got {', '.join(repr(k) for k in bad[:5])}" + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
        )
    if any(len(k) > 18 for k in keys):
        raise EvaluationError(f"{path}: {field} has an id too large for a 64-bit integer")
    return np.fromiter(map(int, keys), dtype=np.int64, count=len(keys))


def int_list(values: object, path: str | Path, field: str) -> list[int]:
    """A JSON array of integer ids (no floats, bools or strings, which ``int()`` would coerce)."""
    if not isinstance(values, list) or any(type(v) is not int for v in values):
        got = type(values).__name__ if not isinstance(values, list) else "non-integer values"
        bad = [] if not isinstance(values, list) else [v for v in values if type(v) is not int]
        raise EvaluationError(
            f"{path}: {field} must be a list of integer ids, got {got}" + (f": {preview(bad)}" if bad else "")
        )
    return values


def require_object(obj: object, path: str | Path, expected: str) -> dict:
    if not isinstance(obj, dict):
        raise EvaluationError(f"{path}: expected {expected}, got a JSON {type(obj).__name__}")
    return obj
