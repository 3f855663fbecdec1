"""A score matrix given by the user: image x caption scores, and square caption / image matrices."""

from __future__ import annotations

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import View
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.scorers import as_score_matrix
from eccv_metric.kernels.scorers import constant_value
from eccv_metric.kernels.scorers import require_finite


class ScoreMatrix(ScoredInput):
    """``scores[i, j]`` = similarity of ``image_ids[i]`` and ``caption_ids[j]``; optionally square
    ``caption_scores`` (captions x captions over ``caption_ids``) and ``image_scores`` for the intramodal views.

    A given matrix is never written; a query's own entry of a square matrix is never read. Every other entry
    must be finite, also where no requested metric reads it (NaN / inf: an error naming the matrix and a cell,
    raised when the input is scored; the diagonal of a square matrix may hold anything, e.g. ``-inf``).
    ``ties``: ``"stable"`` (equal scores in the given order) or ``"trec_eval"`` (item id descending as strings,
    as trec_eval / MTEB).
    """

    kind = "scores"

    def __init__(
        self,
        scores: object = None,
        image_ids: object = None,
        caption_ids: object = None,
        *,
        caption_scores: object = None,
        image_scores: object = None,
        ties: str = "stable",
    ):
        super().__init__({"image": image_ids, "caption": caption_ids}, ties)
        self.scores = None if scores is None else as_score_matrix(scores)
        if self.scores is not None:
            self.hold(require_finite, self.scores, "scores")
        self.square = {}
        for kind, matrix in (("caption", caption_scores), ("image", image_scores)):
            if matrix is not None:
                matrix = as_score_matrix(matrix, f"{kind}_scores")
                if matrix.shape[0] != matrix.shape[1]:
                    raise EvaluationError(f"{kind}_scores= must be square ({kind}s x {kind}s), got {matrix.shape}")
                self.hold(require_finite, matrix, f"{kind}_scores", True)
                self.square[kind] = matrix
        if self.scores is None and not self.square:
            raise EvaluationError("no scores: give the image x caption scores= (or caption_scores= / image_scores=)")

    def n_rows(self, kind: str) -> int | None:
        if self.scores is not None:
            return self.scores.shape[0 if kind == "image" else 1]
        return None if kind not in self.square else self.square[kind].shape[0]

    def shape_error(self, kind: str, n_rows: int, n_ids: int) -> str:
        if self.scores is not None:
            return (
                f"scores= has shape {self.scores.shape} but "
                f"{self._ids_named(kind, n_ids, 'rows' if kind == 'image' else 'columns')} "
                "(row i = the i-th image id, column j = the j-th caption id: one id per row / column)"
            )
        return f"{kind}_scores= has {n_rows} rows but {self._ids_named(kind, n_ids)}: one id per row"

    def cannot_direction(self, direction: str) -> str | None:
        q, g = DIRECTION_KINDS[direction]
        if q != g:
            return None if self.scores is not None else "image-caption metrics need the image x caption scores="
        if q not in self.square:
            return f"{q}-{q} similarities are needed: give {q}_scores= (or {q}_embeddings=)"
        if self.scores is not None and self.square[q].shape[0] != self.n_rows(q):
            return f"{q}_scores= must be over the {q}_ids= of scores= ({self.n_rows(q)} {q}s)"
        return None

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        if kinds[0] != kinds[1]:
            return None if self.scores is not None else "needs the image x caption scores="
        return None if kinds[0] in self.square else f"needs {kinds[0]}_scores= (or {kinds[0]}_embeddings=)"

    def constant_scores(self, kinds: tuple[str, str]) -> tuple[str, bool] | None:
        """A constant matrix is scored exactly (every list is the tie rule's order): noted, not refused."""
        square = kinds[0] == kinds[1]
        matrix = self.square[kinds[0]] if square else self.scores
        value = constant_value(matrix, skip_diagonal=square)  # type: ignore[arg-type]
        if value is None:
            return None
        what = f"{kinds[0]}_scores=" if square else "the image x caption scores"
        return f"every score of {what} is {value!r}: every ranking is the tie order of the rows, not a model's", False

    def scorer(self, view: View) -> MatrixScorer:
        q, g = view.query_kind, view.gallery_kind
        if q == g:
            scorer = MatrixScorer(self.square[q])
        else:
            scorer = MatrixScorer(self.scores, along_columns=q == "caption")  # type: ignore[arg-type]
        query_order, gallery_order = (self.row_order(view.collection, k) for k in (q, g))
        if query_order is None or gallery_order is None:
            return scorer
        return scorer.permuted(query_order, gallery_order)

    def pair_scorer(self, kinds: tuple[str, str]) -> MatrixScorer:
        if kinds[0] == kinds[1]:
            return MatrixScorer(self.square[kinds[0]])
        return MatrixScorer(self.scores, along_columns=kinds[0] == "caption")  # type: ignore[arg-type]
