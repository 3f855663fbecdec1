"""Retrieval tasks as definitions, and one blockwise engine that scores any of them.

A :class:`RetrievalTask` is queries, a gallery, CSR positives, whether each
query is removed from its own gallery (intramodal retrieval) and optional
folds (COCO 1K: a query sees only the gallery items of its fold). A
:class:`Scorer` yields similarity blocks (some queries x the gallery) from
embeddings or from a score matrix, so that peak memory is bounded by the
block budget, never by the gallery: t2t over 25,000 captions never builds the
25k x 25k matrix.

Ranking rule, as everywhere in the package: stable descending sort of each
query's scores; among equal scores the item given first (lower row of the
gallery embeddings / column of the matrix) wins. A query's own item is scored
strictly below every other item (``nextafter(min, -inf)``), i.e. removed: it
can never enter a top-K (K is capped at the gallery size) nor count in a rank.

Per query, ``rank`` = 1-based rank of its best-ranked positive
(``#{g : s_g > s*} + #{g before p* : s_g = s*} + 1``, see ``rank_stats``);
``R@K = 1[rank <= K]``; MedR = ``numpy.median`` of the ranks, MeanR their mean.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eccv_metric import measures
from eccv_metric.embeddings import distinct_rows
from eccv_metric.engine import QueryScores
from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import IdIndex
from eccv_metric.positives import Positives
from eccv_metric.positives import require_unique
from eccv_metric.rank_stats import STATS
from eccv_metric.rank_stats import block_ranks
from eccv_metric.ranking import _dense_rows
from eccv_metric.ranking import check_extra_ids
from eccv_metric.ranking import int_ids
from eccv_metric.ranking import ranked_to_arrays
from eccv_metric.ranking import require_sequences
from eccv_metric.topk import _CHUNK_ELEMENTS
from eccv_metric.topk import _query_block


@dataclass(frozen=True)
class RetrievalTask:
    """One retrieval task; ``positives.query`` indexes ``queries``, ``positives.indices`` index ``gallery``.

    ``exclude_self``: the gallery of query q is every gallery item but q
    (``queries`` and ``gallery`` are then the same items). ``query_fold`` /
    ``gallery_fold``: fold of each query / gallery item (COCO 1K), or None.
    """

    name: str
    direction: str
    queries: IdIndex
    gallery: IdIndex
    positives: Positives
    exclude_self: bool = False
    query_fold: np.ndarray | None = None
    gallery_fold: np.ndarray | None = None


def cross_modal_task(gt: GroundTruth, name: str, direction: str) -> RetrievalTask:
    """The 5K test-split tasks as definitions: ``coco_1k``, ``coco_5k``, ``cxc``, ``eccv`` (i2t or t2i)."""
    bench = "coco" if name.startswith("coco") else name
    folds = name == "coco_1k"
    return RetrievalTask(
        name,
        direction,
        gt.query_index(direction),
        gt.gallery_index(direction),
        gt.positives[bench][direction],
        query_fold=gt.query_fold(direction) if folds else None,
        gallery_fold=gt.gallery_fold(direction) if folds else None,
    )


class Scorer(Protocol):
    """Similarity blocks: ``block(rows, cols)`` = scores of query rows x gallery columns (C-contiguous)."""

    n_columns: int

    def block(self, rows: np.ndarray, cols: np.ndarray | None) -> np.ndarray: ...


class EmbeddingScorer:
    """``s[i, j] = <query_i, gallery_j>`` computed one block of queries at a time.

    Identical gallery embeddings get identical scores (each distinct one is
    scored once, see :func:`eccv_metric.embeddings.distinct_rows`), so the tie
    rule holds for duplicate captions / images.
    """

    def __init__(self, queries: np.ndarray, gallery: np.ndarray):
        if queries.shape[1] != gallery.shape[1]:
            raise EvaluationError(f"embeddings have {queries.shape[1]} and {gallery.shape[1]} dimensions")
        self.queries = queries
        self.gallery, self.copies = distinct_rows(gallery)
        self.n_columns = len(gallery)

    def block(self, rows: np.ndarray, cols: np.ndarray | None) -> np.ndarray:
        if self.copies is None:
            gallery = self.gallery if cols is None else self.gallery[cols]
            return self.queries[rows] @ gallery.T
        copies = self.copies if cols is None else self.copies[cols]
        return (self.queries[rows] @ self.gallery.T).take(copies, axis=1)


class MatrixScorer:
    """Rows (or columns, ``along_columns``) of a score matrix as query blocks."""

    def __init__(self, matrix: np.ndarray, along_columns: bool = False):
        transposed = not matrix.flags.c_contiguous
        self.matrix = matrix.T if transposed else matrix
        self.along_columns = along_columns != transposed
        self.n_columns = matrix.shape[0 if along_columns else 1]

    def block(self, rows: np.ndarray, cols: np.ndarray | None) -> np.ndarray:
        return _query_block(self.matrix, rows, self.along_columns, cols)


def gallery_columns(ids: object, index: IdIndex, other: IdIndex | None, what: str) -> np.ndarray:
    """Dense index of each given gallery id (-1: an extra item); the test split must be covered."""
    arr = int_ids(ids, f"{what} ids", ndim=1)
    require_unique(arr, f"given {what}")
    if other is not None:
        check_extra_ids(arr, index, other)
    elif len(arr) and arr.min() < 0:
        raise EvaluationError(f"{what} ids must be non-negative: {preview(arr[arr < 0])}")
    dense = index.positions(arr)
    covered = np.zeros(len(index), dtype=bool)
    covered[dense[dense >= 0]] = True
    if not covered.all():
        raise EvaluationError(
            f"the gallery must cover the test split: {int((~covered).sum())} {what} id(s) are missing: "
            f"{preview(index.ids[~covered])}"
        )
    return dense


def evaluate_task(
    task: RetrievalTask,
    scorer: Scorer,
    query_rows: np.ndarray,
    columns: np.ndarray,
    ks: Iterable[int] = (),
    stats: Iterable[str] = (),
) -> dict[str, QueryScores]:
    """Per-query R@K (``<name>_r<K>``) and rank statistics (``<name>_medr`` / ``_meanr``) of ``task``.

    ``query_rows[q]``: scorer row of dense query q (-1: not given, an error);
    ``columns[j]``: dense gallery index of scorer column j (-1: an extra item).
    """
    ks, stats = tuple(ks), tuple(stats)
    rel = task.positives
    missing = query_rows[rel.query] < 0
    if missing.any():
        raise EvaluationError(
            f"{task.direction}: {int(missing.sum())} query id(s) of {task.name} have no row: "
            f"{preview(task.queries.ids[rel.query[missing]])}"
        )
    ranks = np.zeros(len(rel.query))
    folds = [None] if task.query_fold is None else np.unique(task.query_fold[rel.query]).tolist()
    gallery_sizes = np.zeros(len(rel.query), dtype=np.int64)
    for fold in folds:
        if fold is None:
            members, cols = np.arange(len(rel.query)), None
        else:
            members = np.flatnonzero(task.query_fold[rel.query] == fold)
            cols = np.flatnonzero((columns >= 0) & (task.gallery_fold[np.maximum(columns, 0)] == fold))  # type: ignore[index]
        dense_cols = columns if cols is None else columns[cols]
        gallery_sizes[members] = len(dense_cols) - task.exclude_self
        ranks[members] = _ranks(task, scorer, query_rows, dense_cols, cols, members)
    out = {}
    ids = task.queries.ids[rel.query]
    for k in ks:
        hit = ranks <= np.minimum(k, gallery_sizes)
        out[f"{task.name}_r{k}"] = QueryScores(f"{task.name}_r{k}", task.direction, ids, hit.astype(np.float64))
    for stat in stats:
        name = f"{task.name}_{stat}"
        out[name] = QueryScores(name, task.direction, ids, ranks, STATS[stat])
    return out


def _ranks(
    task: RetrievalTask,
    scorer: Scorer,
    query_rows: np.ndarray,
    dense_cols: np.ndarray,
    cols: np.ndarray | None,
    members: np.ndarray,
) -> np.ndarray:
    """Best-positive ranks of the queries ``members`` (positions into ``task.positives.query``), blockwise."""
    rel = task.positives
    col_of_dense = np.full(rel.n_gallery, -1, dtype=np.int64)
    col_of_dense[dense_cols[dense_cols >= 0]] = np.flatnonzero(dense_cols >= 0)
    n_cols = len(dense_cols)
    step = max(1, _CHUNK_ELEMENTS // max(1, n_cols))
    out = np.zeros(len(members))
    bad_queries = []
    for start in range(0, len(members), step):
        part = members[start : start + step]
        dense_q = rel.query[part]
        block = scorer.block(query_rows[dense_q], cols)
        if block.dtype not in (np.float32, np.float64):
            block = block.astype(np.float32)
        finite = None
        if task.exclude_self:
            block, finite = _without_self(block, col_of_dense[dense_q])
        mask = np.zeros(block.shape, dtype=bool)
        counts, positives = rel.rows(part)
        owner = np.repeat(np.arange(len(part)), counts)
        pos_cols = col_of_dense[positives]
        mask[owner[pos_cols >= 0], pos_cols[pos_cols >= 0]] = True
        ranks, bad = block_ranks(block, mask, finite)
        bad_queries.append(dense_q[bad])
        out[start : start + len(part)] = ranks
    bad_ids = task.queries.ids[np.concatenate(bad_queries)] if bad_queries else np.zeros(0, dtype=np.int64)
    if len(bad_ids):
        raise EvaluationError(
            f"{task.direction} {task.name}: the scores of {len(bad_ids)} query(ies) contain NaN or inf, or "
            f"have no positive in the gallery: {preview(bad_ids)}"
        )
    return out


def _without_self(block: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``block`` with each query's own column scored strictly below the rest of its row, rows free of NaN/inf).

    The own column (``own`` >= 0) gets ``nextafter(min(row without it, 0), -inf)``;
    its given value is never looked at, so a NaN or inf there is no error. The
    block is copied first when it may be the caller's data (a view of a given matrix).
    """
    if block.base is not None or not block.flags.writeable:
        block = block.copy()
    rows = np.flatnonzero(own >= 0)
    block[rows, own[rows]] = 0
    finite = np.isfinite(block).all(axis=1)
    low = np.nextafter(block.min(axis=1)[rows], block.dtype.type(-np.inf))
    block[rows, own[rows]] = low
    return block, finite


def evaluate_lists(
    task: RetrievalTask, rankings: Mapping[int, Sequence[int]], ks: Iterable[int] = (), stats: Iterable[str] = ()
) -> dict[str, QueryScores]:
    """The same per-query values from ranked lists ``{query id: [gallery ids, best first]}`` (no folds).

    R@K needs ``min(K, gallery size)`` items or a positive among those listed; a rank statistic needs a
    positive in the list; otherwise an error names the queries. Every query of the task needs a list.
    """
    if task.exclude_self or task.query_fold is not None:
        raise EvaluationError(f"{task.name}: ranked lists are not supported for this task; give scores")
    if not isinstance(rankings, Mapping):
        raise EvaluationError(f"{task.direction} rankings must be a dict {{query id: [ranked ids]}}")
    keys = int_ids(list(rankings.keys()), f"{task.direction} query ids", ndim=1)
    query_pos = task.queries.positions(keys)
    if (query_pos < 0).any():
        raise EvaluationError(
            f"{task.direction}: {int((query_pos < 0).sum())} query id(s) are not {task.name} queries: "
            f"{preview(keys[query_pos < 0])}"
        )
    values = list(rankings.values())
    require_sequences(values, keys.tolist(), f"{task.direction} query")
    flat, lengths = ranked_to_arrays(values, keys, f"{task.direction} query")
    first_of_row = _first_hits(task, flat, lengths, keys, query_pos)
    rel = task.positives
    row_of = np.full(len(task.queries), -1, dtype=np.int64)
    row_of[query_pos] = np.arange(len(keys))
    rows = row_of[rel.query]
    ids = task.queries.ids[rel.query]
    if (rows < 0).any():
        raise EvaluationError(
            f"{task.direction}: {int((rows < 0).sum())} {task.name} query id(s) have no ranked list: "
            f"{preview(ids[rows < 0])}"
        )
    first = first_of_row[rows]
    n_gal = len(task.gallery)
    out = {}
    for k in ks:
        name = f"{task.name}_r{k}"
        values_k, undecided = measures.recall_at_k(first, lengths[rows], k, n_gal)
        if undecided.any():
            raise EvaluationError(
                f"{task.direction} {name}: the lists of {int(undecided.sum())} query(ies) are too short (R@{k} needs "
                f"{min(k, n_gal)} items or a positive among them): {preview(ids[undecided])}"
            )
        out[name] = QueryScores(name, task.direction, ids, values_k)
    for stat in stats:
        name = f"{task.name}_{stat}"
        missing = first == measures.NO_HIT
        if missing.any():
            raise EvaluationError(
                f"{task.direction} {name}: the lists of {int(missing.sum())} query(ies) hold no positive, so their "
                f"rank is unknown: {preview(ids[missing])}"
            )
        out[name] = QueryScores(name, task.direction, ids, (first + 1).astype(np.float64), STATS[stat])
    return out


def _first_hits(
    task: RetrievalTask, flat: np.ndarray, lengths: np.ndarray, keys: np.ndarray, query_pos: np.ndarray
) -> np.ndarray:
    """0-based position of the first positive in each list (``measures.NO_HIT``: none), a block of lists at a time.

    Every list is checked in full (ids in the gallery, no repeats); memory is a
    few times the block budget beyond the flat ids, whatever the lists' depth.
    """
    ends = np.cumsum(lengths)
    starts = ends - lengths
    first = np.full(len(lengths), measures.NO_HIT, dtype=np.int64)
    step = max(1, _CHUNK_ELEMENTS // max(1, int(lengths.max(initial=0))))
    for lo in range(0, len(lengths), step):
        chunk = np.arange(lo, min(lo + step, len(lengths)))
        hi = chunk[-1]
        items = _dense_rows(flat[starts[lo] : ends[hi]], lengths[chunk], keys[chunk], task.gallery, task.direction)
        width = items.shape[1]
        hits = task.positives.lookup(query_pos[chunk][:, None], items)
        hits &= np.arange(width)[None, :] < lengths[chunk][:, None]
        first[chunk] = measures.first_hit(hits)
    return first
