"""The rows of a scored input named by ids (:class:`RowIds`): which collection item each row is, read in the
order of the tie rule.

Rows are named by ids (default: the collection's canonical order: Karpathy
order for the 5K split, the annotation order for FG). Extra ids beside the
collection's items are distractors (ranked as negatives in unrestricted
views; a restricted view ranks only its own items); an id of the other
modality among them is refused as a likely mix-up. Every item a view ranks
must have a row.

Ties (``ties``): ``stable`` (default) ranks equal scores in the given order
(the item given first wins); ``trec_eval`` ranks them as trec_eval,
pytrec_eval and MTEB order a run (:mod:`eccv_metric.formats.trec`): by item id
descending as strings (``9`` before ``10``). The rows of each modality are
then read in that order (:meth:`RowIds.row_order`: the scorer reads the
same matrix or embeddings through the permutation, nothing is copied but
indices) and ranked with the same stable kernels: equal scores fall in the
rule's order.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import check_extra_ids
from eccv_metric.core.ids import int_ids
from eccv_metric.core.ids import require_unique
from eccv_metric.core.options import check_ties
from eccv_metric.core.view import Collection
from eccv_metric.core.view import View

OTHER = {"image": "caption", "caption": "image"}


class RowIds:
    """The ids of a scored input's rows per modality (``ids``: given, or None for the canonical order) and the
    tie rule that orders them; a subclass says how many rows it has and words a mismatch."""

    def __init__(self, ids: dict[str, object], ties: str = "stable"):
        self.ties = check_ties(ties)
        self._ids = ids
        self._orders: dict[tuple, np.ndarray] = {}
        self._maps: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def row_ids(self) -> dict[str, object]:
        """The ids of the rows of each kind as given (None: the collection's canonical order)."""
        return dict(self._ids)

    def n_rows(self, kind: str) -> int | None:
        """How many rows the input has for a modality (None: none given)."""
        raise NotImplementedError

    def shape_error(self, kind: str, n_rows: int, n_ids: int) -> str:
        """The mismatch of rows and given ids, in the input's words."""
        raise NotImplementedError

    def _ids_named(self, kind: str, n_ids: int, lines: str = "rows") -> str:
        """How the ids of the ``lines`` (``rows``, or a score matrix's caption ``columns``) came about: given, or the
        collection's canonical order (the user gave none)."""
        if self._ids.get(kind) is not None:
            return f"{n_ids} {kind} ids were given"
        return (
            f"{kind}_ids= was not given, so the {lines} are read as the benchmark's {n_ids} {kind}s in canonical order"
        )

    def mapping(self, collection: Collection, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """(dense item of each row (-1: an extra id), row of each dense item (-1: none)) for one modality."""
        key = (id(collection), kind)
        if key not in self._maps:
            index = collection.index(kind)
            n_rows = self.n_rows(kind)
            given = self._ids.get(kind)
            arr = int_ids(index.ids if given is None else given, f"{kind} ids", ndim=1)
            if n_rows is None or len(arr) != n_rows:
                raise EvaluationError(self.shape_error(kind, n_rows or 0, len(arr)))
            require_unique(arr, f"given {kind}")
            check_extra_ids(arr, index, collection.index(OTHER[kind]))
            if self.ties == "trec_eval":  # rows read in descending id-string order: trec_eval's order of ties
                order = np.argsort(arr.astype(str), kind="stable")[::-1].copy()
                self._orders[key] = order
                arr = arr[order]
            dense = index.positions(arr).astype(np.int64)
            row = np.full(len(index), -1, dtype=np.int64)
            row[dense[dense >= 0]] = np.flatnonzero(dense >= 0)
            self._maps[key] = (dense, row)
        return self._maps[key]

    def row_order(self, collection: Collection, kind: str) -> np.ndarray | None:
        """The given row behind each row of :meth:`mapping` (None: the given order, ``ties="stable"``)."""
        self.mapping(collection, kind)
        return self._orders.get((id(collection), kind))

    def _rows(self, view: View, kind: str, needed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The mapping of a modality; the items ``needed`` (dense; None: all) must have rows."""
        dense, row = self.mapping(view.collection, kind)
        missing = row < 0 if needed is None else np.zeros(len(row), bool)
        if needed is not None:
            missing[needed[row[needed] < 0]] = True
        if missing.any():
            ids = view.collection.index(kind).ids[missing]
            raise EvaluationError(
                f"the gallery must cover the test split: {len(ids)} test {kind} id(s) are missing from "
                f"the {kind} ids given ({kind}_ids=): {preview(ids)}"
            )
        return dense, row

    def given_ids(self, collection: Collection, kind: str) -> np.ndarray:
        """The id of each row of a modality (given, or the collection's canonical order)."""
        given = self._ids.get(kind)
        return collection.index(kind).ids if given is None else int_ids(given, f"{kind} ids", ndim=1)
