"""Rankings JSON files: ``{"i2t": {"<image id>": [caption ids, best first]}, "t2i": {...}, "t2t": ..., "i2i": ...}``.

Read strictly (:mod:`eccv_metric.core.jsonio`): keys are canonical decimal ids,
an object never holds a key twice, the top level names directions only.
"""

from __future__ import annotations

from pathlib import Path

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import id_keys
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.view import DIRECTION_KINDS

RANKINGS_FORMAT = 'a JSON object {"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": [...]}}'


def load_rankings(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Read ``{"i2t": {query id: [ids]}, "t2i": {...}}``; keys must be canonical decimal ids, each id once."""
    return rankings_from_json(read_json(path, RANKINGS_FORMAT), path)


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
