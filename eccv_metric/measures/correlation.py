"""Spearman bootstrap correlation of model similarities with CxC ratings (STS, SIS, SITS).

Protocol of the CxC paper (Parekh et al., EACL 2021, Section 5): ``n_resamples``
(1,000) bootstrap samples; each takes half of the queries (the distinct items
of the first CSV column, ``floor(n / 2)``, without replacement) and, for each
chosen query, one of its rated pairs uniformly at random; Spearman's rho
between the pairs' ``agg_score`` and the model's similarities:

    rho = pearson(rank(agg_score), rank(similarity))   (ties: average ranks)

The reported number is the mean of rho over the samples (a fraction: 0.551,
not 55.1), with its standard deviation (numpy's, ddof=0) as the paper's
"avg +- std". Seeded: the same seed gives the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.options import require_int

DIRECTION = {"sts": "t2t", "sis": "i2i", "sits": "t2i"}


class Ratings(Protocol):
    """Rated pairs: ``score[k]`` rates (``id_1[k]``, ``id_2[k]``); ``id_1`` is the query column."""

    kind: str
    id_1: np.ndarray
    id_2: np.ndarray
    score: np.ndarray


@dataclass(frozen=True)
class Correlation:
    """Spearman's rho of each bootstrap sample; ``mean`` and ``std`` are the reported numbers."""

    kind: str
    samples: np.ndarray

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def std(self) -> float:
        return float(np.std(self.samples))


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks along the last axis of a 2-D array, tied values sharing their average rank."""
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    n = x.shape[1]
    idx = np.arange(n)
    starts = np.ones(xs.shape, dtype=bool)
    starts[:, 1:] = xs[:, 1:] != xs[:, :-1]
    ends = np.ones(xs.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, idx, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    out = np.empty(x.shape)
    np.put_along_axis(out, order, (first + last) / 2 + 1, axis=1)
    return out


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``x`` and ``y``; a constant row has no rho (NaN)."""
    rx, ry = average_ranks(x), average_ranks(y)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    denom = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / denom


def bootstrap_spearman(
    ratings: Ratings, similarities: np.ndarray, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> Correlation:
    """The CxC bootstrap (module docstring) given ``similarities[k]`` of rated pair k."""
    n_resamples = require_int(n_resamples, "n_resamples", 1, 100_000)
    seed = require_int(seed, "seed", 0)
    raw = np.asarray(similarities)
    if raw.dtype.kind not in "iuf":  # strings, objects, bools would convert (or fail) silently
        raise EvaluationError(f"{ratings.kind}: similarities must be numbers (ints or floats), not {raw.dtype}")
    sims = raw.astype(np.float64)
    if sims.shape != ratings.score.shape:
        raise EvaluationError(f"{ratings.kind}: {sims.shape} similarities for {len(ratings.score)} rated pairs")
    if not np.isfinite(sims).all():
        bad = np.flatnonzero(~np.isfinite(sims))
        pairs = list(zip(ratings.id_1[bad].tolist(), ratings.id_2[bad].tolist(), strict=True))
        raise EvaluationError(f"{ratings.kind}: similarities of pairs {preview(pairs)} are NaN or inf")
    order = np.argsort(ratings.id_1, kind="stable")
    queries, starts, counts = np.unique(ratings.id_1[order], return_index=True, return_counts=True)
    half = len(queries) // 2
    if half < 2:
        raise EvaluationError(f"{ratings.kind}: {len(queries)} rated queries, too few for a correlation")
    rng = np.random.default_rng(seed)
    per_chunk = max(1, (1 << 22) // len(queries))
    out = []
    for start in range(0, n_resamples, per_chunk):
        n = min(per_chunk, n_resamples - start)
        chosen = np.argpartition(rng.random((n, len(queries))), half - 1, axis=1)[:, :half]
        pairs = order[starts[chosen] + rng.integers(0, counts[chosen])]
        out.append(spearman_rows(ratings.score[pairs], sims[pairs]))
    rho = np.concatenate(out)
    if not np.isfinite(rho).all():
        raise EvaluationError(
            f"{ratings.kind}: the similarities (or ratings) are constant in {int((~np.isfinite(rho)).sum())} "
            "bootstrap sample(s): Spearman's rho is undefined"
        )
    return Correlation(ratings.kind, rho)
