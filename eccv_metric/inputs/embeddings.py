"""Embeddings given by the user: similarity = dot product (cosine with ``normalize=True``)."""

from __future__ import annotations

import threading

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.core.view import ITEM_KINDS
from eccv_metric.core.view import View
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.scorers import EmbeddingScorer
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.scorers import as_embeddings
from eccv_metric.kernels.scorers import distinct_rows
from eccv_metric.kernels.scorers import unit_rows

# the similarity matrix of two embedding sets is computed in one product when it fits this budget
MATRIX_BUDGET = 1 << 30


class Embeddings(ScoredInput):
    """Similarity = dot product of embeddings (cosine with ``normalize=True``).

    Two embedding sets whose similarity matrix fits :data:`MATRIX_BUDGET` are
    multiplied once (the image-caption matrix of the 5K split: 5,000 x 25,000
    float32 = 0.5 GB), even when both directions ask for it at the same time;
    larger ones (t2t over 25,000 captions, a gallery with tens of thousands of
    distractors) are scored one block of queries at a time, so memory stays
    bounded by the block budget. Distinct embeddings are
    scored once: identical embeddings always tie (the one given first wins).
    """

    kind = "embeddings"

    def __init__(
        self,
        images: object = None,
        captions: object = None,
        image_ids: object = None,
        caption_ids: object = None,
        normalize: bool = False,
    ):
        super().__init__({"image": image_ids, "caption": caption_ids})
        normalize = require_bool(normalize, "normalize")
        self.vectors: dict[str, np.ndarray] = {}
        for kind, values in (("image", images), ("caption", captions)):
            if values is not None:
                arr = as_embeddings(values, f"{kind} embeddings")
                self.vectors[kind] = unit_rows(arr, f"{kind} embeddings") if normalize else arr
        if not self.vectors:
            raise EvaluationError("no embeddings: give image and/or caption embeddings")
        self._scorers: dict[tuple[str, str], object] = {}
        # the two directions run in two threads and share one matrix: built once, the other direction waits
        self._building = threading.Lock()

    def n_rows(self, kind: str) -> int | None:
        return None if kind not in self.vectors else len(self.vectors[kind])

    def shape_error(self, kind: str, n_rows: int, n_ids: int) -> str:
        return (
            f"{n_rows} {kind} embeddings (rows) but {self._ids_named(kind, n_ids)}: one embedding per {kind} "
            "(were image and caption embeddings swapped?)"
        )

    def cannot(self, view: View) -> str | None:
        return self.cannot_pairs((view.query_kind, view.gallery_kind))

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        missing = [k for k in dict.fromkeys(kinds) if k not in self.vectors]
        if missing:
            return f"needs {' and '.join(missing)} embeddings"
        if kinds[0] != kinds[1] and self.vectors["image"].shape[1] != self.vectors["caption"].shape[1]:
            return (
                f"image embeddings have {self.vectors['image'].shape[1]} dimensions but caption embeddings "
                f"{self.vectors['caption'].shape[1]}"
            )
        return None

    def scorer(self, view: View) -> BlockScorer:
        return self._scorer((view.query_kind, view.gallery_kind))

    def pair_scorer(self, kinds: tuple[str, str]) -> MatrixScorer | EmbeddingScorer:
        return self._scorer(kinds)  # type: ignore[return-value]

    def _scorer(self, kinds: tuple[str, str]) -> BlockScorer:
        with self._building:
            return self._build_scorer(kinds)

    def _build_scorer(self, kinds: tuple[str, str]) -> BlockScorer:
        if kinds not in self._scorers:
            q, g = kinds
            a, b = sorted(kinds, key=ITEM_KINDS.index)  # one matrix serves both directions: images x captions
            rows_a, copies_a = distinct_rows(self.vectors[a])
            rows_b, copies_b = distinct_rows(self.vectors[b]) if b != a else (rows_a, copies_a)
            dtype = np.result_type(rows_a.dtype, rows_b.dtype)
            if len(rows_a) * len(rows_b) * dtype.itemsize <= MATRIX_BUDGET:
                matrix = rows_a.astype(dtype, copy=False) @ rows_b.astype(dtype, copy=False).T
                maps = {a: copies_a, b: copies_b}
                self._scorers[(a, b)] = MatrixScorer(matrix, False, maps[a], maps[b])
                self._scorers[(b, a)] = MatrixScorer(matrix, a != b, maps[b], maps[a])
            else:
                self._scorers[kinds] = EmbeddingScorer(self.vectors[q], self.vectors[g])
        return self._scorers[kinds]  # type: ignore[return-value]
