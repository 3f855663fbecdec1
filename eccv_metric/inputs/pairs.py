"""A caller's pair scorer as an input: the similarity of rated pairs only (the CxC correlations), no matrix.

``PairScores(fn)``: ``fn(ids_1, ids_2)`` returns the model's similarity of each pair of ids (the rating
file's first and second column: captions for STS, images for SIS, captions then images for SITS). The
engine asks it for the rated pairs of each correlation benchmark and bootstraps Spearman's rho as for
embeddings or score matrices; it ranks nothing, so retrieval metrics are refused by name.

``RatedPairs(ids_1, ids_2, scores)``: the same from arrays, each pair's score given (a pair scorer's run scores
CxC SITS's rated pairs so: :mod:`eccv_metric.models.pairs.inputs`); a pair asked for that it does not hold is an
error naming it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
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


class RatedPairs(PairScores):
    """The scores of given pairs of ids (``scores[i]``: the pair ``(ids_1[i], ids_2[i])``), as a :class:`PairScores`;
    ``what`` names them in the error a pair it does not hold raises (``<what> were not scored``)."""

    def __init__(self, ids_1: object, ids_2: object, scores: object, what: str = "pairs"):
        self.ids_1 = np.asarray(ids_1, dtype=np.int64)
        self.ids_2 = np.asarray(ids_2, dtype=np.int64)
        self.scores = np.asarray(scores)
        if not (self.ids_1.ndim == self.ids_2.ndim == self.scores.ndim == 1) or not (
            len(self.ids_1) == len(self.ids_2) == len(self.scores)
        ):
            raise EvaluationError(f"{what}: ids_1, ids_2 and scores must be 1-D arrays of one length")
        self.what = what
        self._firsts, self._seconds = np.unique(self.ids_1), np.unique(self.ids_2)
        keys = self._keys_of(self.ids_1, self.ids_2)
        order = np.argsort(keys, kind="stable")
        self._sorted, self._values = keys[order], self.scores[order]
        super().__init__(self.lookup)

    def _keys_of(self, ids_1: np.ndarray, ids_2: np.ndarray) -> np.ndarray:
        """One integer per pair (-1: an id no held pair has): the first id's place among the held first ids, times
        their number, plus the second's."""
        first = np.searchsorted(self._firsts, ids_1).clip(0, max(len(self._firsts) - 1, 0))
        second = np.searchsorted(self._seconds, ids_2).clip(0, max(len(self._seconds) - 1, 0))
        known = (self._firsts[first] == ids_1) & (self._seconds[second] == ids_2) if len(self._firsts) else False
        return np.where(known, first * len(self._seconds) + second, -1)

    def lookup(self, ids_1: np.ndarray, ids_2: np.ndarray) -> np.ndarray:
        """The score of each pair ``(ids_1[i], ids_2[i])``; a pair not held is an error naming the first ids."""
        ids_1, ids_2 = np.asarray(ids_1, np.int64), np.asarray(ids_2, np.int64)
        keys = self._keys_of(ids_1, ids_2)
        at = np.searchsorted(self._sorted, keys).clip(0, max(len(self._sorted) - 1, 0))
        found = (keys >= 0) & (self._sorted[at] == keys) if len(self._sorted) else np.zeros(len(keys), bool)
        if not found.all():
            raise EvaluationError(f"{self.what} were not scored (first ids {preview(ids_1[~found])})")
        return self._values[at]
