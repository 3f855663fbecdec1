"""Rank statistics: MedR and MeanR of the best-ranked positive.

``rank(q)`` = 1-based rank of query q's best-ranked positive under the
stable descending order (ties: the item given first wins). MedR is
``numpy.median`` of the ranks over the queries, MeanR their mean. From ranked
lists a rank is known only when a positive appears in the list (otherwise an
error names the query); from a score matrix it is exact for every query:
``rank = #{g : s[g] > s*} + #{g before p* : s[g] = s*} + 1`` where ``s*`` is the
best positive score and ``p*`` the first gallery position holding a positive
with that score. COCO 1K ranks within the query's fold.
"""

from __future__ import annotations

import numpy as np

from eccv_metric import measures
from eccv_metric.errors import EvaluationError
from eccv_metric.errors import preview
from eccv_metric.groundtruth import N_FOLDS
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import Positives
from eccv_metric.ranking import QUERY_KIND
from eccv_metric.ranking import RankedLists
from eccv_metric.topk import _CHUNK_ELEMENTS
from eccv_metric.topk import _query_block

STATS = {"medr": "median", "meanr": "mean"}


def ranks_from_lists(lists: RankedLists, rel: Positives, gt: GroundTruth, name: str) -> np.ndarray:
    """Ranks from ranked lists (``lists`` already restricted to the fold for COCO 1K)."""
    rows = lists.rows(rel.query, gt, name)
    first = measures.first_hit(lists.hits(rel, rows))
    missing = first == measures.NO_HIT
    if missing.any():
        raise EvaluationError(
            f"{lists.direction} {name}: the ranked lists of {int(missing.sum())} query "
            f"{QUERY_KIND[lists.direction]}(s) hold no positive, so their rank is unknown: "
            f"{preview(gt.query_index(lists.direction).ids[rel.query][missing])}"
        )
    return (first + 1).astype(np.float64)


def ranks_from_scores(
    matrix: np.ndarray,
    along_columns: bool,
    query_pos: np.ndarray,
    gallery_dense: np.ndarray,
    rel: Positives,
    gallery_fold: np.ndarray | None,
    query_fold: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact ranks of ``rel``'s queries (rows ``query_pos`` of ``matrix``, or columns when ``along_columns``).

    ``gallery_dense``: dense gallery index of each matrix position (-1 for extra ids). With folds, each
    query's gallery is the positions whose item is in its fold. Returns (ranks, bad) where ``bad`` marks
    queries whose scores hold NaN/inf or that have no positive in their gallery.
    """
    ranks = np.zeros(len(query_pos))
    bad = np.zeros(len(query_pos), dtype=bool)
    folds = range(N_FOLDS) if gallery_fold is not None else [None]
    for fold in folds:
        if fold is None:
            members, gallery_pos = np.arange(len(query_pos)), None
            cols = gallery_dense
        else:
            members = np.flatnonzero(query_fold == fold)  # type: ignore[operator]
            gallery_pos = np.flatnonzero((gallery_dense >= 0) & (gallery_fold[np.maximum(gallery_dense, 0)] == fold))
            cols = gallery_dense[gallery_pos]
        col_of_dense = np.full(rel.n_gallery, -1, dtype=np.int64)
        col_of_dense[cols[cols >= 0]] = np.flatnonzero(cols >= 0)
        n_gal = len(cols)
        step = max(1, _CHUNK_ELEMENTS // max(1, n_gal))
        for start in range(0, len(members), step):
            part = members[start : start + step]
            block = _query_block(matrix, query_pos[part], along_columns, gallery_pos)
            ranks[part], bad[part] = block_ranks(block, _positive_mask(rel, part, col_of_dense, n_gal))
    return ranks, bad


def _positive_mask(rel: Positives, part: np.ndarray, col_of_dense: np.ndarray, n_gal: int) -> np.ndarray:
    counts, positives = rel.rows(part)
    owner = np.repeat(np.arange(len(part)), counts)
    cols = col_of_dense[positives]
    mask = np.zeros((len(part), n_gal), dtype=bool)
    mask[owner[cols >= 0], cols[cols >= 0]] = True
    return mask


def block_ranks(block: np.ndarray, mask: np.ndarray, finite: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Ranks of the best positive (``mask``) of each row of ``block``; ``finite``: rows known free of NaN/inf."""
    if finite is None:
        finite = np.isfinite(block).all(axis=1)
    best = np.where(mask, block, -np.inf).max(axis=1, initial=-np.inf)
    bad = ~finite | ~mask.any(axis=1)
    at_best = block == best[:, None]
    first = (mask & at_best).argmax(axis=1)  # first position of a positive with the best score
    at_best &= np.arange(block.shape[1])[None, :] < first[:, None]
    ranks = np.count_nonzero(block > best[:, None], axis=1) + np.count_nonzero(at_best, axis=1) + 1
    return np.where(bad, 0, ranks).astype(np.float64), bad
