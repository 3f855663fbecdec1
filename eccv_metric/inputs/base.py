"""The protocol every input answers: rank a view's queries, give exact ranks, score rated pairs.

Four kinds of inputs implement it: ranked lists (:mod:`eccv_metric.inputs.given`:
dicts, arrays, TREC runs), score matrices and embeddings
(:mod:`eccv_metric.inputs.scored`: both scored block by block), and a two-stage
result over one of them (:mod:`eccv_metric.inputs.twostage`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol
from typing import TypeVar

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.kernels.ranks import Ranked


class Relevance(Protocol):
    """Positives of one task: CSR :class:`~eccv_metric.core.positives.Positives` or the PM relation."""

    query: np.ndarray
    n_positives: np.ndarray

    def hits(self, items: np.ndarray) -> np.ndarray: ...

    def lookup(self, q: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Whether dense gallery item ``g`` is a positive of dense query ``q`` (broadcast; ``g`` < 0 never is)."""
        ...

    def restrict(self, queries: np.ndarray) -> Relevance: ...

    def positive_mask(self, part: np.ndarray, columns: np.ndarray, col_of_dense: np.ndarray) -> np.ndarray: ...


class Input(Protocol):
    """What the engine asks of an input (see the module docstring).

    ``exact_ranks``: whether :meth:`first_ranks` is exact for every query
    (scores: yes; ranked lists: only where a positive is listed), so that R@K
    for a deep K can be read off ranks instead of a K-deep top-K.
    """

    kind: str
    exact_ranks: bool
    made_for: tuple[str, ...]  # the benchmarks the input says it was made for (MTEB predictions), else ()

    def cannot(self, view: View) -> str | None:
        """Why this input cannot rank ``view`` (None: it can)."""
        ...

    def cannot_direction(self, direction: str) -> str | None:
        """Why this input cannot rank a direction at all, told before any resource is loaded (None: it may)."""
        ...

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        """Why this input cannot score pairs of items of these kinds (None: it can)."""
        ...

    def given_queries(self, view: View) -> np.ndarray | None:
        """Dense queries the input has a ranking for (None: every query)."""
        ...

    def top(
        self, view: View, depth: int, queries: np.ndarray, decided_by: Relevance | None = None, past: int = 0
    ) -> RankedLists:
        """The first ``depth`` items of the rankings of ``queries`` (dense).

        ``decided_by``: the only relevance whose first hits will be read; a
        restricted view's list may then stop at its first positive. ``past`` > 0: the
        tie note reads that many of the ``depth`` items past the deepest cut; the
        lists also carry the ties past their ends where the input can count them as
        it ranks (:attr:`RankedLists.past`, else None), and a list that carries them
        may stop up to ``past`` items short (they tell what the items would).
        """
        ...

    def tops(self, view: View, groups: list[tuple[int, np.ndarray]], past: int = 0) -> list[RankedLists]:
        """:meth:`top` of each group ``(depth, dense queries)``, where the input can in one pass over what it reads
        (queries of similar depth ranked together: :mod:`eccv_metric.engine.buckets`); ``past``: as :meth:`top`'s,
        each group's lists carrying what one list of every query would carry of the ties past them."""
        ...

    def prefers_ranks(self, view: View) -> bool:
        """Whether R@K of this view is cheaper from exact ranks than from a top-K (e.g. blocks of a matrix product,
        where a second pass would compute every score again)."""
        ...

    def first_ranks(self, view: View, rel: Relevance, name: str) -> np.ndarray:
        """1-based rank of each ``rel.query``'s best-ranked positive (float64); an error names undecidable queries."""
        ...

    def first_ranks_many(self, wanted: list[tuple[View, Relevance, str]]) -> list[Ranked]:
        """:meth:`first_ranks` of each (view, relevance, metric name), at once: what they share is done once
        (scores: one pass over each scorer's blocks for every request on it); with the best and worst rank any
        order of equal scores gives (:class:`~eccv_metric.kernels.ranks.Ranked`: the tie note)."""
        ...

    def tie_totals(
        self, view: View, rel: Relevance, members: np.ndarray, lists: RankedLists, rows: np.ndarray, at: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For ``rel.query[members]``: the size of the group of equal scores holding the item at position ``at`` of
        its list (``lists`` row ``rows``), past the list's end too, and its positives (lists that carry ``ties``)."""
        ...

    def reranked_depth(self, view: View, queries: np.ndarray) -> np.ndarray | None:
        """How many reranked candidates each query (dense) has in its view gallery (a two-stage input, whose
        ranking past them is the first stage's); None: the input is not one."""
        ...

    def pair_scores(
        self, collection: Collection, kinds: tuple[str, str], dense_1: np.ndarray, dense_2: np.ndarray, what: str
    ) -> np.ndarray:
        """The similarity of each pair (dense_1[k], dense_2[k]) of items of the two kinds (float64)."""
        ...


T = TypeVar("T")


class HeldChecks:
    """Checks of the values an input was given (NaN / inf, zero rows for a cosine), made when it is made and
    raised when it is scored (:meth:`check_values`), where a caller of many inputs names this one
    (``evaluate_many``: ``sources[i]: ...``); ``refused``: the first that failed, in its words."""

    refused: str | None = None

    def hold(self, check: Callable[..., T], *args: object) -> T | None:
        """``check(*args)``; its error is kept (:attr:`refused`). Returns the check's result, None when it failed."""
        try:
            return check(*args)
        except EvaluationError as exc:
            self.refused = self.refused or str(exc)
            return None

    def check_values(self) -> None:
        """Refuse values found unscorable when the input was made (the first check that failed)."""
        if self.refused is not None:
            raise EvaluationError(self.refused)
