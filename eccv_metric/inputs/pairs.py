"""A caller's pair scorer as an input: the similarity of rated pairs only (the CxC correlations), no matrix.

``PairScores(fn)``: ``fn(ids_1, ids_2)`` returns the model's similarity of each pair of ids (the rating
file's first and second column: captions for STS, images for SIS, captions then images for SITS). The
engine asks it for the rated pairs of each correlation benchmark and bootstraps Spearman's rho as for
embeddings or score matrices; it ranks nothing, so retrieval metrics are refused by name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.scored import ScoredInput


class PairScores(ScoredInput):
    """Similarities of the pairs a correlation asks for, from ``fn(ids_1, ids_2)`` (see the module docstring)."""

    kind = "pairs"

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], object]):
        if not callable(fn):
            raise EvaluationError(f"pair_scores must be a function (ids_1, ids_2) -> similarities, not {fn!r:.40}")
        super().__init__({})
        self.fn = fn

    def n_rows(self, kind: str) -> int | None:
        return None

    def cannot(self, view: View) -> str | None:
        return self.cannot_direction(view.direction)

    def cannot_direction(self, direction: str) -> str | None:
        return (
            "a pair scorer gives the similarity of rated pairs only (the CxC correlations): give ranked lists, "
            "a score matrix or embeddings for retrieval metrics"
        )

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        return None

    def pair_scores(
        self, collection: Collection, kinds: tuple[str, str], dense_1: np.ndarray, dense_2: np.ndarray, what: str
    ) -> np.ndarray:
        ids_1 = collection.index(kinds[0]).ids[dense_1]
        ids_2 = collection.index(kinds[1]).ids[dense_2]
        return np.asarray(self.fn(ids_1, ids_2))
