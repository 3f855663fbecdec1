"""Integer ids: dense indices over a set of ids, and strict conversion of the ids users give.

Every item (a COCO image, a caption, a gallery image of MSCOCO-FG...) is named
by a non-negative integer id; the engine works on dense indices ``0..n-1``
(:class:`IdIndex`). Ids users give are integers only: floats, strings, bools
and values outside int64 are refused, never truncated or coerced.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview


def require_unique(ids: np.ndarray, kind: str) -> None:
    """Raise an :class:`EvaluationError` naming the ids that occur more than once."""
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise EvaluationError(f"duplicate {kind} ids: {preview(uniq[counts > 1])}")


class IdIndex:
    """Dense index of a set of non-negative integer ids: a lookup table, or a sorted search for sparse ids.

    The table is used when the largest id is small (COCO ids); large sparse ids (Flickr photo ids,
    ~8e9) use a binary search, so memory stays proportional to the number of ids.
    """

    def __init__(self, ids: np.ndarray, kind: str):
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or len(ids) == 0 or ids.min() < 0:
            raise EvaluationError(f"{kind} ids must be a non-empty 1-D array of non-negative ints")
        require_unique(ids, kind)
        self.ids = ids
        self.kind = kind
        self.table: np.ndarray | None = None
        if int(ids.max()) < max(1 << 24, 16 * len(ids)):
            # one slot past the largest id holds -1: ``take(mode="clip")`` sends every larger id there, and every
            # negative id to slot 0, which is -1 too unless 0 is an id
            self.table = np.full(int(ids.max()) + 2, -1, dtype=np.int32)
            self.table[ids] = np.arange(len(ids), dtype=np.int32)
        else:
            self._order = np.argsort(ids).astype(np.int32)
            self._sorted = ids[self._order]

    def __len__(self) -> int:
        return len(self.ids)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Dense index of each id (int32), -1 where the id is not in the index."""
        ids = np.asarray(ids)
        if self.table is None:
            pos = np.minimum(np.searchsorted(self._sorted, ids), len(self._sorted) - 1)
            return np.where(self._sorted[pos] == ids, self._order[pos], -1).astype(np.int32)
        out = np.asarray(self.table.take(ids, mode="clip"))  # an array even for one id: written below
        if self.table[0] >= 0:  # 0 is an id: negative ids (and uint64 ids past int64) were clipped onto it
            unsigned = ids.view(np.uint64) if ids.dtype == np.int64 else ids.astype(np.uint64)
            out[unsigned >= len(self.table)] = -1  # negatives wrap to huge values
        return out

    def require(self, ids: np.ndarray, what: str) -> np.ndarray:
        """Dense index of each id; an :class:`EvaluationError` names the unknown ones."""
        pos = self.positions(ids)
        if (pos < 0).any():
            bad = np.asarray(ids)[pos < 0]
            raise EvaluationError(f"{what}: {len(bad)} id(s) are not test-split {self.kind}s: {preview(bad)}")
        return pos


def int_ids(values: object, what: str, ndim: int | None = None) -> np.ndarray:
    """An int64 array of ids from a list, numpy array or torch tensor; floats, strings and mixed values raise."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        values = values.detach().cpu().numpy()  # type: ignore[attr-defined]
    scalar = not hasattr(values, "__iter__") or (isinstance(values, np.ndarray) and values.ndim == 0)
    if scalar or isinstance(values, (str, bytes, Mapping, set, frozenset)):
        raise EvaluationError(
            f"{what} must be a list or array of integer ids (in order), not {type(values).__name__} {values!r:.40}"
        )
    arr = int_array(values if isinstance(values, (np.ndarray, list)) else list(values), what)  # type: ignore[call-overload]
    if ndim is not None and arr.ndim != ndim:
        raise EvaluationError(f"{what} must be {'a flat list' if ndim == 1 else f'{ndim}-D'}, got shape {arr.shape}")
    return arr


INT64_MAX = int(np.iinfo(np.int64).max)
ID_LIMIT = f"ids are held as int64: at most 2**63 - 1 = {INT64_MAX}"


def too_large(what: str, value: int) -> str:
    """The message for an integer id numpy cannot hold: the id and the limit."""
    return f"{what} must be integers within int64, got {value} ({ID_LIMIT})"


def int_array(values: list | np.ndarray, what: str) -> np.ndarray:
    """``np.array`` of a (possibly nested) list, which must hold integers only: no bools (numpy would read
    ``True`` as 1 among ints), no float, no integer beyond int64 (named with the limit)."""
    try:
        arr = values if isinstance(values, np.ndarray) else np.array(values)
    except (ValueError, OverflowError):
        arr = np.array(values, dtype=object)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu" and not isinstance(values, np.ndarray):
        big = _first_big_int(values)
        if big is not None:
            raise EvaluationError(too_large(what, big))
    if arr.dtype.kind not in "iu":
        raise EvaluationError(
            f"{what} must be integers, got {arr.dtype if arr.dtype != object else 'mixed/other values'}"
        )
    require_int64_range(arr, what)
    if not isinstance(values, np.ndarray):
        found = _first_bool(values, arr)
        if found is not None:
            raise EvaluationError(f"{what} must be integers, not booleans ({found!r} is not an id)")
    return arr.astype(np.int64, copy=False)


def _first_bool(values: object, arr: np.ndarray) -> object | None:
    """The first bool of nested lists ``values`` (``arr`` = their array, where bools became 0 / 1)."""
    for index in np.argwhere((arr == 0) | (arr == 1)).tolist():
        item = values
        for i in index:
            item = item[i]  # type: ignore[index]
        if isinstance(item, (bool, np.bool_)):
            return item
    return None


def _first_big_int(values: object) -> int | None:
    """The first Python / numpy integer beyond int64 in nested lists (numpy turned them into floats or objects)."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool) and abs(int(item)) > INT64_MAX:
            return int(item)
    return None


def require_int64_range(arr: np.ndarray, what: str) -> None:
    """An unsigned 64-bit id above the int64 range would wrap to a negative id: refused, naming the id."""
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > INT64_MAX:
        raise EvaluationError(too_large(what, int(arr.max())))


def check_extra_ids(ids: np.ndarray, index: IdIndex, other: IdIndex | None) -> None:
    """Ids beside the test split (extra gallery items) must be non-negative and not ids of the other modality.

    A negative id, or a test-split caption id among image ids (or the
    reverse), is a mix-up, not a distractor: refused rather than ranked as a
    negative.
    """
    if len(ids) and ids.min() < 0:
        raise EvaluationError(f"{index.kind} ids must be non-negative: {preview(ids[ids < 0])}")
    if other is None:
        return
    extra = ids[index.positions(ids) < 0]
    crossed = extra[other.positions(extra) >= 0]
    if len(crossed):
        raise EvaluationError(
            f"{len(crossed)} of the {index.kind} ids beside the test split are test-split {other.kind} ids "
            f"(a mix-up of image and caption ids?): {preview(crossed)}"
        )
