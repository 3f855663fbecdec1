"""The math of every ranking metric, per query, on a relevance matrix: each formula in one place.

The functions take ``rel``: a bool matrix (queries x depth) where ``rel[q, i]``
says whether the item at rank ``i`` (0-based) of query ``q`` is a positive,
and ``available``: how many ranked items each query's list holds (possibly
more than ``depth``). Positions at or beyond ``available`` must be False.
They return per-query values (float64) and a bool mask of the queries whose
value the list cannot decide; the caller turns that mask into an error that
names the queries. Means over queries give the reported numbers (MedR: the
median).
"""

from __future__ import annotations

import math

import numpy as np

NO_HIT = np.iinfo(np.int64).max


def first_hit(rel: np.ndarray) -> np.ndarray:
    """0-based rank of each query's best-ranked positive (``NO_HIT`` when none is in ``rel``)."""
    if rel.shape[1] == 0:
        return np.full(len(rel), NO_HIT, dtype=np.int64)
    pos = rel.argmax(axis=1)
    return np.where(rel[np.arange(len(rel)), pos], pos, NO_HIT)


def capped_k(k: int, gallery_size: int | np.ndarray) -> np.ndarray:
    """``min(K, gallery size)`` per query as int64 (K beyond the gallery is R@(gallery size); any K fits)."""
    return np.minimum(np.int64(min(int(k), NO_HIT)), np.asarray(gallery_size, dtype=np.int64))


def recall_at_k(
    rel: np.ndarray, available: np.ndarray, k: int, gallery_size: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Recall@K as in COCO retrieval: 1 if a positive is among the first K items, else 0.

    ``R@K(q) = 1[exists i < K : rel[q, i]]``.
    Decidable when the list has ``min(K, gallery_size)`` items or a positive
    among the items it has (a hit before the list ends is a hit in the top K).
    ``rel`` may also be given as the output of :func:`first_hit`.
    """
    k = capped_k(k, gallery_size)
    hit = (rel if rel.ndim == 1 else first_hit(rel)) < k
    undecided = ~hit & (available < k)
    return hit.astype(np.float64), undecided


def recall_from_ranks(ranks: np.ndarray, k: int, gallery_size: int | np.ndarray) -> np.ndarray:
    """R@K from exact 1-based ranks of the best positive: ``1[rank <= min(K, gallery size)]``."""
    return (ranks <= capped_k(k, gallery_size)).astype(np.float64)


def map_at_r(
    rel: np.ndarray, n_pos: np.ndarray, available: np.ndarray, width: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """mAP@R (Musgrave et al. 2020), with R = the query's number of positives.

    ``mAP@R(q) = (1/R) * sum_{i=1..R} rel(i) * P@i``, ``P@i = (1/i) * sum_{j<=i} rel(j)``
    (ranks 1-based). Needs the first R items of the list.

    ``width``: how many terms each row's sum runs over (default: the most positives of these queries, within
    ``rel``; terms past ``rel`` are 0). numpy's pairwise sum of a row depends on its length in the last bit, so
    the engine gives the width one list of every query of the relevance has: a query's value does not depend
    on which queries are scored with it.
    """
    width = min(rel.shape[1], int(n_pos.max(initial=0))) if width is None else width
    rel = rel[:, :width]  # may be narrower than R: those queries are undecided
    ranks = np.arange(1, rel.shape[1] + 1)
    precision = np.cumsum(rel, axis=1) / ranks
    counted = rel & (ranks[None, :] <= n_pos[:, None])
    terms = np.where(counted, precision, 0.0)
    if terms.shape[1] < width:
        terms = np.pad(terms, ((0, 0), (0, width - terms.shape[1])))
    return terms.sum(axis=1) / n_pos, available < n_pos


def r_precision(
    rel: np.ndarray, n_pos: np.ndarray, available: np.ndarray, r_cap: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """R-Precision: the precision of the first R items, ``R-P(q) = (1/R) * sum_{i=1..R} rel(i)``.

    With ``r_cap``, R is replaced by ``min(R, r_cap)`` (the ECCV Caption code's
    PMRP uses 50). Needs the first ``min(R, r_cap)`` items of the list.
    """
    r = n_pos if r_cap is None else np.minimum(n_pos, r_cap)
    rel = rel[:, : int(r.max(initial=0))]  # may be narrower: those queries are undecided
    counted = rel & (np.arange(1, rel.shape[1] + 1)[None, :] <= r[:, None])
    return counted.sum(axis=1) / r, available < r


def rank_statistic(ranks: np.ndarray, statistic: str) -> float:
    """MedR = ``numpy.median`` of the 1-based ranks (a half-integer when the number of queries is even and the
    two middle ranks differ: VSE++-style code and the CxC paper print integers), MeanR = their mean."""
    return float(np.median(ranks)) if statistic == "median" else float(np.mean(ranks))


def recall_at_chance(gallery_size: np.ndarray, n_positives: np.ndarray, k: int) -> np.ndarray:
    """Expected R@K of a random ranking, per query: ``1 - C(n - R, K) / C(n, K)``.

    ``n``: the items the query is ranked against, ``R``: its positives among
    them (K is capped at n). The probability that none of the R positives is
    among K items drawn without replacement is ``prod_{i<K} (n - R - i) / (n - i)``
    (a sum of logs; log-gamma for K above 100,000), computed once per distinct (n, R).
    """
    n = np.asarray(gallery_size, dtype=np.int64)
    r = np.minimum(np.asarray(n_positives, dtype=np.int64), n)
    n, r = np.broadcast_arrays(n, r)
    keys, inverse = np.unique(n.ravel() * (int(r.max(initial=0)) + 1) + r.ravel(), return_inverse=True)
    out = np.empty(len(keys))
    for j, (nn, rr) in enumerate(zip(*np.divmod(keys, int(r.max(initial=0)) + 1), strict=True)):
        nn, rr = int(nn), int(rr)
        kk = min(int(k), nn)
        if nn - rr < kk:
            out[j] = 1.0  # fewer negatives than K: a positive is always among the first K
        elif rr == 0:
            out[j] = 0.0
        elif kk <= 100_000:  # prod_{i<K} (n - R - i) / (n - i), as a sum of logs
            out[j] = -math.expm1(float(np.log1p(-rr / (nn - np.arange(kk, dtype=np.float64))).sum()))
        else:
            log_miss = math.lgamma(nn - rr + 1) - math.lgamma(nn - rr - kk + 1) - math.lgamma(nn + 1)
            out[j] = -math.expm1(log_miss + math.lgamma(nn - kk + 1))
    return out[inverse.ravel()].reshape(n.shape)


def first_rank_at_chance(n: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of the rank of the first of ``r`` positives among ``n`` items in a random order."""
    return (n + 1) / (r + 1), r * (n + 1) * (n - r) / ((r + 1) ** 2 * (r + 2))


def rprecision_at_chance(n: np.ndarray, r: np.ndarray, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of (hits among the first ``drawn`` items) / ``drawn`` in a random order (``r`` positives)."""
    p = r / n
    return p, drawn * p * (1 - p) * (n - drawn) / np.maximum(n - 1, 1) / drawn**2


def map_at_r_at_chance(n: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Mean mAP@R of a random order: ``(H_R + (R - 1)(R - H_R) / (n - 1)) / n`` (:mod:`eccv_metric.api.chance`)."""
    distinct = np.unique(r)
    harmonic = np.array([math.fsum(1.0 / np.arange(1, int(k) + 1)) for k in distinct])
    h = harmonic[np.searchsorted(distinct, r)]
    return (h + (r - 1) * (r - h) / np.maximum(n - 1, 1)) / n
