"""A two-stage input's candidates (:mod:`eccv_metric.inputs.twostage`): bound to the first stage's rows, and the
array steps its rankings are made of (ranks within the candidates, compaction, membership by row)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import Collection
from eccv_metric.inputs.reranked import Reranked
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.kernels.ranks import Ranked


@dataclass(frozen=True)
class Bound:
    """One direction's candidates on one collection: the Reranked row of each dense query (-1: not reranked);
    each row's candidates as the first stage's scorer gallery positions, and their final scores, in final order
    (final score descending, then gallery position)."""

    row: np.ndarray
    cols: np.ndarray
    final: np.ndarray


def bind(first: ScoredInput, found: Reranked, collection: Collection, direction: str) -> Bound:
    """One direction's candidates on ``collection`` as the first stage's scorer gallery positions, sorted in final
    order; an error names a query whose ids the first stage lacks."""
    q_kind, g_kind = DIRECTION_KINDS[direction]
    first.mapping(collection, g_kind)  # the first stage's rows and ids are checked first
    first.mapping(collection, q_kind)
    rows = IdIndex(first.given_ids(collection, g_kind), g_kind).positions(found.candidate_ids)
    if (rows < 0).any():
        at = int(np.flatnonzero((rows < 0).any(axis=1))[0])
        raise EvaluationError(
            f"{direction} candidate_ids of query {found.query_ids[at]} name id(s) that are not {g_kind}s of the "
            f"first stage: {preview(found.candidate_ids[at][rows[at] < 0])} "
            f"({int((rows < 0).any(axis=1).sum())} query(ies) in all)"
        )
    order = first.row_order(collection, g_kind)
    cols = rows if order is None else np.argsort(order)[rows]  # given row -> the scorer's (tie rule's) position
    known = IdIndex(first.given_ids(collection, q_kind), q_kind).positions(found.query_ids)
    if (known < 0).any():
        raise EvaluationError(
            f"{direction} query_ids name {int((known < 0).sum())} id(s) that are not {q_kind}s of the first "
            f"stage: {preview(found.query_ids[known < 0])}"
        )
    by = np.lexsort((cols, -found.scores), axis=1)  # final score descending, then gallery position
    dense = collection.index(q_kind).positions(found.query_ids)
    row = np.full(len(collection.index(q_kind)), -1, dtype=np.int64)
    row[dense[dense >= 0]] = np.flatnonzero(dense >= 0)  # ids beyond the collection: never asked
    return Bound(row, np.take_along_axis(cols, by, axis=1), np.take_along_axis(found.scores, by, axis=1))


def within_candidates(hits: np.ndarray, final: np.ndarray, inside: np.ndarray) -> Ranked:
    """Ranks (and tie spans) of the best positive among each query's candidates in the view (final order);
    rows without one get 0 (filled in from the first stage)."""
    n = len(hits)
    has = hits.any(axis=1)
    first = hits.argmax(axis=1)
    best = final[np.arange(n), first][:, None]
    higher = (inside & (final > best)).sum(axis=1)
    before = (inside & (final == best) & (np.arange(hits.shape[1])[None, :] < first[:, None])).sum(axis=1)
    others = (inside & (final == best) & ~hits).sum(axis=1)
    low = np.where(has, higher + 1, 0).astype(np.float64)
    return Ranked(np.where(has, low + before, 0), np.zeros(n, dtype=bool), low, np.where(has, low + others, 0))


def compact(parts: list[np.ndarray], keep: np.ndarray, width: int) -> list[np.ndarray]:
    """The kept entries of each row of every array of ``parts`` moved to the front, in order, the first ``width``
    of them (padding: -1 for integers, 0 for floats)."""
    width = min(width, keep.shape[1])
    cum = np.cumsum(keep, axis=1)
    r, c = np.nonzero(keep & (cum <= width))
    out = []
    for part in parts:
        dest = np.full((len(keep), width), -1 if part.dtype.kind in "iu" else 0, dtype=part.dtype)
        dest[r, cum[r, c] - 1] = part[r, c]
        out.append(dest)
    return out


def in_rows(values: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """``values[r, j] in sets[r]`` for every entry (non-negative ints; -1 in ``sets`` is no member), by one sorted
    search over (row, value) keys."""
    span = int(max(values.max(initial=0), sets.max(initial=0))) + 2
    rows = np.arange(len(values), dtype=np.int64)[:, None] * span
    keys = np.sort((rows + sets + 1)[sets >= 0])
    probe = rows + values + 1
    at = np.minimum(np.searchsorted(keys, probe), max(len(keys) - 1, 0))
    return keys[at] == probe if len(keys) else np.zeros(values.shape, dtype=bool)
