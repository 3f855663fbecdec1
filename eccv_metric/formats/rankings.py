"""Rankings JSON files: ``{"i2t": {"<image id>": [caption ids, best first]}, "t2i": {...}, "t2t": ..., "i2i": ...}``.

Read strictly (:mod:`eccv_metric.core.jsonio`): keys are canonical decimal ids,
an object never holds a key twice, the top level names directions only.

The work is bounded before any Python object is built: the raw text is
counted first (:func:`check_size`). A rankings JSON holds at most
:data:`MAX_OBJECTS` objects (the top level and one per direction) and at most
:data:`MAX_VALUES` values (ranked ids plus query ids: top-1,000 lists of both
5K directions are 30,030,000); larger inputs are refused with what to give
instead (arrays, a score matrix, a TREC run). Peak memory of reading is then
the file plus Python's objects for at most that many values (~40 bytes per
id): measured 0.45 GB over the interpreter for a 150 MB file of 18.7 million
ids (refused afterwards as a list with repeated ids), and the file alone
(0.45 GB) for a 450 MB file of ``{}`` values (refused after counting).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import atomic_open
from eccv_metric.core.jsonio import id_keys
from eccv_metric.core.jsonio import parse_json
from eccv_metric.core.jsonio import read_bytes
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.jsonio import structure_counts
from eccv_metric.core.view import DIRECTION_KINDS

RANKINGS_FORMAT = 'a JSON object {"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": [...]}}'
MAX_OBJECTS = 1 + len(DIRECTION_KINDS)
MAX_VALUES = 32_000_000
LARGER = (
    "for larger rankings give arrays (Rankings(t2i=(query_ids, ranked_ids_2d)) in Python), "
    "a score matrix (.npy) or a TREC run (--run)"
)


def load_rankings(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Read ``{"i2t": {query id: [ids]}, "t2i": {...}}``; keys must be canonical decimal ids, each id once."""
    return parse_rankings(read_bytes(path, RANKINGS_FORMAT), path)


def parse_rankings(data: bytes | str, path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Rankings JSON text or bytes (``path`` names the source in errors), size-checked before parsing."""
    check_size(data, path)
    return rankings_from_json(parse_json(data, path, RANKINGS_FORMAT), path)


def check_size(data: bytes | str, path: str | Path) -> None:
    """Refuse, on the raw text, more objects or values than a rankings JSON can hold (module docstring)."""
    counts = structure_counts(data)
    if counts["{"] > MAX_OBJECTS:
        raise EvaluationError(
            f"{path}: {counts['{']:,} JSON objects; a rankings JSON holds at most {MAX_OBJECTS} (the top level and "
            "one per direction): ranked lists are JSON arrays of ids, best first (not {id: score} objects)"
        )
    values = counts[","] + counts["["] + counts["{"] + 1
    if values > MAX_VALUES:
        raise EvaluationError(
            f"{path}: about {values:,} ids, more than a rankings JSON may hold ({MAX_VALUES:,}); {LARGER}"
        )


def rankings_from_json(raw: object, path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Check parsed rankings JSON (``path`` names its source in errors) and give int query ids."""
    raw = require_object(raw, path, RANKINGS_FORMAT)
    unknown = sorted(set(raw) - set(DIRECTION_KINDS))
    if unknown or not raw:
        raise EvaluationError(
            f"{path}: top-level keys must be 'i2t', 't2i', 't2t' or 'i2i' (lower case), got {unknown or 'none'}; "
            f"expected {RANKINGS_FORMAT}"
        )
    out: dict[str, dict[int, list[int]]] = {}
    for direction, lists in raw.items():
        lists = require_object(lists, path, f'"{direction}" to map query ids to ranked lists')
        keys = id_keys(lists, path, f"{direction} query id")
        out[direction] = dict(zip(keys.tolist(), lists.values(), strict=True))
    return out


def write_rankings(path: str | Path, arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Write ``{direction: (query ids, flat ranked ids, lengths)}`` as a rankings JSON, one query a line
    (streamed, atomically: one list at a time is a Python list)."""
    with atomic_open(path, "w") as fout:
        fout.write("{")
        for d, (direction, (query_ids, flat, lengths)) in enumerate(arrays.items()):
            fout.write(f'{"," if d else ""}\n  "{direction}": {{')
            ends = np.cumsum(lengths)
            for k, (query, end, n) in enumerate(zip(query_ids.tolist(), ends.tolist(), lengths.tolist(), strict=True)):
                fout.write(f'{"," if k else ""}\n    "{query}": {json.dumps(flat[end - n : end].tolist())}')
            fout.write("\n  }")
        fout.write("\n}\n")
