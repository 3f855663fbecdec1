"""A TREC file's ids and numbers, and a run's lines read into typed columns (:func:`read_columns`).

The syntax (the module docstring of :mod:`eccv_metric.formats.trec` says what the files hold): ids
``image-<id>`` / ``caption-<id>`` in canonical ASCII decimal digits below 2^63; a rank (or a qrels relevance)
an ASCII integer of at most 18 digits; a score an ASCII decimal number, finite.

A run is read by one of two readers with the same result:

- the line reader (:func:`line_columns`): each line decoded (UTF-8, a leading BOM dropped, ``\\n``, ``\\r\\n``
  or ``\\r`` ending it), split on any whitespace, checked field by field; every refused file is refused here,
  with the line's number and what is wrong with it;
- a vectorised reader (:func:`fast_columns`) for the files most runs are: ASCII, fields split by spaces or tabs,
  lines ended by ``\\n`` or ``\\r\\n``, every line six fields or none, every field as the syntax says. It reads
  the file in chunks of :data:`CHUNK` bytes, finds the fields with numpy, checks and reads the ids and ranks
  with numpy, checks a chunk's scores with :data:`SCORE` in one call and reads them as ``float()`` does (numpy),
  and looks each query token up once per run of lines. Anything else (a byte outside that set, a line of
  another length, a field the syntax refuses, a score that overflows) hands the whole file to the line reader,
  which reads it from the start and says what it says: the same columns or the same error.

Both hold typed columns (about 41 bytes a line), never a Python object per line; the vectorised reader holds
one chunk's work on top (a few times :data:`CHUNK`).
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import unreadable
from eccv_metric.core.ids import INT64_MAX

ITEM_KIND_CODES = ("image", "caption")
TREC_ID = re.compile(r"(image|caption)-(0|[1-9][0-9]{0,18})")
INTEGER = re.compile(r"[+-]?[0-9]{1,18}")  # a rank or a qrels relevance (ASCII digits)
SCORE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
DOC_MEMO = 1 << 17  # parsed document tokens the line reader keeps (a gallery is 25,000 captions or 31,244 images)
CHUNK = 1 << 22  # bytes of a run the vectorised reader reads at a time
WIDEST = 64  # a field longer than this (no id, rank or score is) is left to the line reader
BOM = b"\xef\xbb\xbf"
Columns = tuple[dict[str, np.ndarray], np.ndarray, dict[str, int]]


def parse_trec_id(token: str, where: str) -> tuple[str, int]:
    """``image-<id>`` / ``caption-<id>``: the id in ASCII decimal digits, canonical (no sign, no leading zero)."""
    match = TREC_ID.fullmatch(token)
    if match is None or int(match.group(2)) > INT64_MAX:
        raise EvaluationError(f"{where}: id {token!r:.40} is not 'image-<id>' or 'caption-<id>' (ASCII decimal id)")
    return match.group(1), int(match.group(2))


class _Columns:
    """The columns of a run as they are read: ``query`` (each query token's number, in order of first
    appearance: :attr:`queries`), ``kind`` (the document's, :data:`ITEM_KIND_CODES`), ``doc`` (its id),
    ``rank``, ``score`` and ``line`` (the line's number in the file)."""

    TYPES = {"query": "q", "kind": "b", "doc": "q", "rank": "q", "score": "d", "line": "q"}

    def __init__(self) -> None:
        self.columns = {name: array(code) for name, code in self.TYPES.items()}
        self.queries: dict[str, int] = {}

    def extend(self, **values: np.ndarray) -> None:
        """Append a chunk's columns (numpy arrays, cast to each column's type)."""
        for name, column in self.columns.items():
            column.frombytes(np.ascontiguousarray(values[name], dtype=np.dtype(column.typecode)).tobytes())

    def finish(self) -> Columns:
        """(the columns but ``line`` as numpy arrays over the read buffers, the line numbers, the query tokens)."""
        arrays = {name: np.frombuffer(values, dtype=values.typecode) for name, values in self.columns.items()}
        line = arrays.pop("line")
        return arrays, line, self.queries


def read_columns(path: str | Path) -> Columns:
    """A run's lines as typed columns (see the module docstring): the vectorised reader where the file is one it
    reads, else the line reader."""
    found = fast_columns(path)
    return found if found is not None else line_columns(path)


def line_columns(path: str | Path) -> Columns:
    """The line reader: one line at a time; an error names the first line it refuses (see the module docstring)."""
    read = _Columns()
    columns, queries = read.columns, read.queries
    # each document token parsed once: (kind code, id); at most DOC_MEMO tokens held (memory bounded)
    memo: dict[str, tuple[int, int]] = {}
    try:
        with open(path, encoding="utf-8-sig", newline=None) as fin:
            for n, line in enumerate(fin, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 6:
                    raise EvaluationError(
                        f"{path}:{n}: a run line has 6 fields '<query> Q0 <doc> <rank> <score> <tag>'"
                    )
                if not INTEGER.fullmatch(parts[3]) or not SCORE.fullmatch(parts[4]):
                    raise EvaluationError(
                        f"{path}:{n}: rank must be an integer and score must be a finite decimal number (ASCII digits)"
                    )
                score = float(parts[4])
                if not math.isfinite(score):
                    raise EvaluationError(f"{path}:{n}: score must be finite, not {parts[4]}")
                doc = memo.get(parts[2])
                if doc is None:
                    dkind, did = parse_trec_id(parts[2], f"{path}:{n}")
                    doc = (ITEM_KIND_CODES.index(dkind), did)
                    if len(memo) < DOC_MEMO:
                        memo[parts[2]] = doc
                columns["query"].append(queries.setdefault(parts[0], len(queries)))
                columns["kind"].append(doc[0])
                columns["doc"].append(doc[1])
                columns["rank"].append(int(parts[3]))
                columns["score"].append(score)
                columns["line"].append(n)
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, "a TREC run") from None
    return read.finish()


# the vectorised reader: bytes it reads (printable ASCII, space, tab, \n, \r before \n)
_READ = np.zeros(256, dtype=bool)
_READ[[9, 10, 13, 32]] = True
_READ[0x21:0x80] = True
_ATOMIC = sys.version_info >= (3, 11)  # (?>...): each score matched once, no backtracking state kept (7x faster)
# a column of scores, each in a row of NUL bytes one wider than the longest: every row one score (SCORE)
_SCORES = re.compile((("(?>" if _ATOMIC else "(?:") + "(?:" + SCORE.pattern + ")\\x00+)*").encode())
_IMAGE, _CAPTION = (np.frombuffer(f"{kind}-".encode(), dtype=np.uint8) for kind in ITEM_KIND_CODES)


def fast_columns(path: str | Path) -> Columns | None:
    """The vectorised reader (see the module docstring): the columns of a strictly well-formed run; None where
    the file is not one (or cannot be opened): the line reader then reads it."""
    read = _Columns()
    lines = 0
    try:
        with open(path, "rb") as fin:
            pending = fin.read(len(BOM))
            pending = b"" if pending == BOM else pending
            while True:
                data = fin.read(CHUNK)
                pending += data
                end = len(pending) if not data else pending.rfind(b"\n") + 1  # whole lines, the last one at the end
                if end:
                    counted = _read_chunk(pending[:end], lines, read)
                    if counted is None:
                        return None
                    lines += counted
                    pending = pending[end:]
                if not data:
                    return read.finish()
    except OSError:
        return None


def _read_chunk(chunk: bytes, before: int, read: _Columns) -> int | None:
    """Read the whole lines ``chunk`` (``before`` lines before them) into ``read``; how many lines they are (None:
    a line the vectorised reader leaves to the line reader)."""
    a = np.frombuffer(chunk, dtype=np.uint8)
    if not _READ[a].all():
        return None
    cr = np.flatnonzero(a == 13)
    if len(cr):  # \r\n ends a line as \n does; a \r alone (a line end too, to the line reader) is left to it
        if cr[-1] + 1 == len(a) or (a[cr + 1] != 10).any():
            return None
        a = np.delete(a, cr)
    breaks = np.flatnonzero(a == 10)
    n_lines = len(breaks) + int(len(a) > 0 and a[-1] != 10)
    edges = np.diff((a > 32).view(np.int8), prepend=np.int8(0), append=np.int8(0))  # +1: a field starts, -1: ends
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    del edges
    fields = np.diff(np.searchsorted(starts, breaks), prepend=0, append=len(starts))[:n_lines]  # per line
    if ((fields != 0) & (fields != 6)).any():
        return None
    starts, ends = starts.reshape(-1, 6), ends.reshape(-1, 6)
    padded = np.concatenate([a, np.zeros(WIDEST + 1, np.uint8)])  # a token's row may read past the chunk's end
    query, doc, rank, score = (_tokens(padded, starts[:, k], ends[:, k]) for k in (0, 2, 3, 4))
    if query is None or doc is None or rank is None or score is None:
        return None
    ids, ranks = _doc_ids(*doc), _ranks(*rank)
    if ids is None or ranks is None or not _SCORES.fullmatch(score[0].tobytes()):
        return None
    with np.errstate(over="ignore"):  # a score past the float range: inf, refused below by the line reader
        scores = score[0].view(f"S{score[0].shape[1]}").ravel().astype(np.float64)  # as Python's float() reads
    if not np.isfinite(scores).all():
        return None
    numbers = _query_numbers(query[0], read.queries)
    line = before + 1 + np.flatnonzero(fields)
    read.extend(query=numbers, kind=ids[0], doc=ids[1], rank=ranks, score=scores, line=line)
    return n_lines


def _tokens(padded: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(the tokens ``padded[start[i]:end[i]]``, each in a row of NUL bytes one wider than the longest; their
    lengths); None where one is longer than :data:`WIDEST`."""
    length = end - start
    width = int(length.max(initial=0)) + 1
    if width > WIDEST + 1:
        return None
    rows = np.lib.stride_tricks.sliding_window_view(padded, width)[start]
    rows[np.arange(width)[None, :] >= length[:, None]] = 0
    return rows, length


def _digits(rows: np.ndarray, first: np.ndarray, length: np.ndarray, most: int) -> np.ndarray | None:
    """The number each row's bytes ``first:length`` write (uint64), where they are 1 to ``most`` (<= 19) ASCII
    digits; None where a row's are not."""
    count = length - first
    if ((count < 1) | (count > most)).any():
        return None
    at = np.arange(rows.shape[1])[None, :]
    inside = (at >= first[:, None]) & (at < length[:, None])
    digit = rows - np.uint8(48)  # below '0' wraps past 9
    if (inside & (digit > 9)).any():
        return None
    value = np.zeros(len(rows), np.uint64)
    for k in range(rows.shape[1]):
        value = np.where(inside[:, k], value * np.uint64(10) + digit[:, k], value)
    return value


def _ranks(rows: np.ndarray, length: np.ndarray) -> np.ndarray | None:
    """Each row as :data:`INTEGER` reads it (a sign, then 1 to 18 digits); None where one is not."""
    sign = (rows[:, 0] == ord("+")) | (rows[:, 0] == ord("-"))
    value = _digits(rows, sign.astype(np.int64), length, 18)
    if value is None:
        return None
    return np.where(rows[:, 0] == ord("-"), -value.astype(np.int64), value.astype(np.int64))


def _doc_ids(rows: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(kind code, id) of each row as :func:`parse_trec_id` reads it; None where one is not an id."""
    kind = rows[:, 0] == ord("c")
    first = np.where(kind, len(_CAPTION), len(_IMAGE))
    if (length <= first).any():  # also: every row is as wide as its prefix
        return None
    named = np.where(kind, (rows[:, : len(_CAPTION)] == _CAPTION).all(axis=1) if kind.any() else False,
                     (rows[:, : len(_IMAGE)] == _IMAGE).all(axis=1))  # fmt: skip
    lead = rows[np.arange(len(rows)), first]
    if not named.all() or ((lead == ord("0")) & (length - first > 1)).any():  # canonical: no leading zero
        return None
    value = _digits(rows, first, length, 19)
    if value is None or (value > np.uint64(INT64_MAX)).any():
        return None
    return kind.astype(np.int8), value.astype(np.int64)


def _query_numbers(rows: np.ndarray, queries: dict[str, int]) -> np.ndarray:
    """Each line's query token (rows of :func:`_tokens`) as its number in ``queries`` (new tokens added in order of
    appearance): a dict lookup per run of lines with one query, not per line."""
    new = np.ones(len(rows), dtype=bool)
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    heads = np.flatnonzero(new)
    tokens = (rows[h].tobytes().rstrip(b"\x00").decode("ascii") for h in heads.tolist())
    numbers = np.fromiter((queries.setdefault(t, len(queries)) for t in tokens), dtype=np.int64, count=len(heads))
    return np.repeat(numbers, np.diff(np.append(heads, len(rows))))
