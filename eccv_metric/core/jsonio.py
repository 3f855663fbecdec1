"""Strict reading of the JSON files users give: errors name the file, the field and the expected format.

- The bytes are decoded as JSON does (UTF-8, with or without a BOM, UTF-16 and
  UTF-32 are detected); anything unreadable raises naming the file.
- An object that holds the same key twice is refused (JSON parsers keep the
  last value silently).
- Integer ids given as object keys must be canonical decimal integers
  (``"391895"``; not ``"0391895"``, ``" 391895"``, ``"+391895"``, ``"391_895"``,
  which Python's ``int()`` would all map to one id).
- An integer of more than 19 digits (outside int64: no id or count is that
  large) is refused naming the file, before Python builds it (a 5,000-digit
  integer would raise Python's own digit-limit ``ValueError``).
- :func:`structure_counts` counts the containers and values of a JSON text on
  its bytes, before any Python object is built, so that a reader can bound
  its work by the input's element count (see :mod:`eccv_metric.formats.rankings`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.files import unreadable
from eccv_metric.core.ids import INT64_MAX
from eccv_metric.core.ids import too_large

_CANONICAL_INT = re.compile(r"0|[1-9][0-9]*")


MAX_INT_DIGITS = 19  # int64 holds every 18-digit integer and some of 19 digits


class _DuplicateKeyError(ValueError):
    pass


class _LongIntError(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _LongIntError(text)
    return int(text)


def _text(data: bytes | str) -> str | None:
    """``data`` as text when it is not UTF-8 (UTF-16 / UTF-32, as JSON detects them); None for UTF-8 bytes."""
    if isinstance(data, str):
        return data
    encoding = json.detect_encoding(data)
    return None if encoding in ("utf-8", "utf-8-sig") else data.decode(encoding, "surrogatepass")


def has_digit_run(data: bytes | str, length: int) -> bool:
    """Whether ``data`` (UTF-8 bytes or text) holds ``length`` ASCII digits in a row (numpy, 8 MB at a time)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    step = 1 << 23
    for start in range(0, len(raw), step):  # windows overlap by ``length``: a run is whole in one of them
        window = np.frombuffer(raw[start : start + step + length], dtype=np.uint8)
        digit = np.concatenate([[False], (window >= 48) & (window <= 57), [False]])
        edges = np.flatnonzero(digit[1:] != digit[:-1])
        if len(edges) and (edges[1::2] - edges[::2]).max() >= length:
            return True
    return False


def structure_counts(data: bytes | str) -> dict[str, int]:
    """``{"{": objects, "[": arrays, ",": separators}`` of a JSON text, counted on its bytes (strings included:
    an upper bound on the containers, and ``,`` + ``[`` + ``{`` + 1 bounds the number of values)."""
    text = _text(data)
    if text is None:
        return {c: data.count(c.encode()) for c in "{[,"}  # type: ignore[union-attr]
    return {c: text.count(c) for c in "{[,"}


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _DuplicateKeyError(dup)
    return out


def read_json(path: str | Path, expected: str) -> object:
    """Parse a JSON file; ``expected`` describes the format for the error messages."""
    return parse_json(read_bytes(path, expected), path, expected)


def read_bytes(path: str | Path, expected: str) -> bytes:
    """The bytes of a file the user gave; errors name it (``expected`` describes the format)."""
    path = Path(path)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise unreadable(path, exc, expected) from None


def parse_json(data: bytes | str, path: str | Path, expected: str) -> object:
    """Parse JSON text or bytes; ``path`` names the source in the errors (a file, or e.g. "pasted text").

    Never raises anything but :class:`EvaluationError` for bad content (it names ``path``).
    """
    try:
        text = _text(data)
        long_ints = has_digit_run(data if text is None else text, MAX_INT_DIGITS + 1)
        hooks = {"parse_int": _parse_int} if long_ints else {}  # the hook costs time: only when needed
        return json.loads(data if text is None else text, object_pairs_hook=_no_duplicates, **hooks)
    except _DuplicateKeyError as exc:
        raise EvaluationError(f"{path}: the key {str(exc)!r} appears twice in one JSON object") from None
    except _LongIntError as exc:
        raise EvaluationError(
            f"{path}: an integer of {len(str(exc).lstrip('-'))} digits ({str(exc)[:12]}...): ids and counts are "
            f"integers of at most {MAX_INT_DIGITS} digits (int64); expected {expected}"
        ) from None
    except (UnicodeError, json.JSONDecodeError, LookupError) as exc:
        kind = "empty" if not data.strip() else "not valid JSON"  # type: ignore[union-attr]
        raise EvaluationError(f"{path}: {kind} ({exc}); expected {expected}") from None
    except RecursionError:
        raise EvaluationError(f"{path}: JSON nested too deeply; expected {expected}") from None
    except ValueError as exc:  # anything else Python's parser refuses (e.g. its integer digit limit)
        raise EvaluationError(f"{path}: not valid JSON ({exc}); expected {expected}") from None


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
    """A JSON array of integer ids (no floats, bools or strings, which ``int()`` would coerce), each within int64."""
    if not isinstance(values, list) or any(type(v) is not int for v in values):
        got = type(values).__name__ if not isinstance(values, list) else "non-integer values"
        bad = [] if not isinstance(values, list) else [v for v in values if type(v) is not int]
        raise EvaluationError(
            f"{path}: {field} must be a list of integer ids, got {got}" + (f": {preview(bad)}" if bad else "")
        )
    big = next((v for v in values if not -INT64_MAX - 1 <= v <= INT64_MAX), None)
    if big is not None:
        raise EvaluationError(f"{path}: {too_large(field, big)}")
    return values


def require_object(obj: object, path: str | Path, expected: str) -> dict:
    if not isinstance(obj, dict):
        raise EvaluationError(f"{path}: expected {expected}, got a JSON {type(obj).__name__}")
    return obj
