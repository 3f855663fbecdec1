"""Embeddings given by the user: similarity = dot product (cosine with ``normalize=True``)."""

from __future__ import annotations

import threading
from types import ModuleType

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import ITEM_KINDS
from eccv_metric.core.view import View
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.kernels.scorers import BlockScorer
from eccv_metric.kernels.scorers import EmbeddingScorer
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.scorers import as_embeddings
from eccv_metric.kernels.scorers import constant_value
from eccv_metric.kernels.scorers import distinct_rows
from eccv_metric.kernels.scorers import require_finite_rows
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
    bounded by the block budget. Distinct embeddings are scored once: identical
    embeddings always tie (the one given first wins, or the one with the larger
    id string with ``ties="trec_eval"``, as trec_eval / MTEB).

    ``device``: where the scores are computed and ranked. None (default): torch
    tensors on a GPU are ranked on it, everything else by the numpy engine; a
    torch device name (``"cuda"``, ``"cuda:1"``, ``"mps"``, ``"cpu"``) ranks
    there with torch (:mod:`eccv_metric.kernels.device`: exact ranks of the
    scores it computes, the numpy engine's numbers to the bit on integer-valued
    embeddings); ``"numpy"``: the numpy engine whatever the tensors.
    Normalisation and the embeddings kept in :attr:`vectors` are numpy's on
    both paths. Every embedding must be finite (and non-zero for ``normalize=True``): checked on input, refused
    when the input is scored, by the rows and the first bad cell.
    """

    kind = "embeddings"

    def __init__(
        self,
        images: object = None,
        captions: object = None,
        image_ids: object = None,
        caption_ids: object = None,
        normalize: bool = False,
        ties: str = "stable",
        device: str | None = None,
    ):
        super().__init__({"image": image_ids, "caption": caption_ids}, ties)
        normalize = require_bool(normalize, "normalize")
        self.device = scoring_device(device, images, captions)
        if self.device is not None:
            torch_module().device_of(self.device)  # a device torch cannot use is refused here, by its keyword
        self.normalize = normalize
        self.vectors: dict[str, np.ndarray] = {}
        self.given: dict[
            str, np.ndarray
        ] = {}  # the embeddings as given (before normalize=): what a run's evidence keeps
        for kind, values in (("image", images), ("caption", captions)):
            if values is not None:
                arr = self.given[kind] = as_embeddings(values, f"{kind} embeddings")
                finite = self.hold(require_finite_rows, arr, f"{kind} embeddings")  # raised when scored
                unit = self.hold(unit_rows, arr, f"{kind} embeddings") if normalize and finite is not None else None
                self.vectors[kind] = arr if unit is None else unit
        if not self.vectors:
            raise EvaluationError("no embeddings: give image and/or caption embeddings")
        self._scorers: dict[tuple[str, str], object] = {}
        self._tie_scorers: dict[tuple, BlockScorer] = {}
        # the two directions run in two threads and share one matrix: built once, the other direction waits
        self._building = threading.Lock()

    def __getstate__(self) -> dict:
        """Picklable (multiprocessing, copies): the lock is not state; a copy gets its own."""
        state = dict(self.__dict__)
        del state["_building"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._building = threading.Lock()

    def n_rows(self, kind: str) -> int | None:
        return None if kind not in self.vectors else len(self.vectors[kind])

    def shape_error(self, kind: str, n_rows: int, n_ids: int) -> str:
        return (
            f"{n_rows} {kind} embeddings (rows) but {self._ids_named(kind, n_ids)}: one embedding per {kind} "
            "(were image and caption embeddings swapped?)"
        )

    def cannot_direction(self, direction: str) -> str | None:
        return self.cannot_pairs(DIRECTION_KINDS[direction])

    def cannot_pairs(self, kinds: tuple[str, str]) -> str | None:
        missing = [k for k in dict.fromkeys(kinds) if k not in self.vectors]
        if missing:
            return f"needs {' and '.join(f'{k}_embeddings=' for k in missing)}"
        if kinds[0] != kinds[1] and self.vectors["image"].shape[1] != self.vectors["caption"].shape[1]:
            return (
                f"image embeddings have {self.vectors['image'].shape[1]} dimensions but caption embeddings "
                f"{self.vectors['caption'].shape[1]}"
            )
        return None

    def constant_scores(self, kinds: tuple[str, str]) -> tuple[str, bool] | None:
        """Products that underflow to 0 lost the model's scores: refused. Products equal in exact arithmetic
        (identical embeddings) are scored exactly: noted."""
        q, g = kinds
        base = self._scorer(kinds)
        if isinstance(base, MatrixScorer):  # the product of the distinct rows
            matrix = base.matrix
            if matrix.size == 1 and q == g:  # one distinct embedding: every pair of items scores the same
                value: float | None = float(matrix[0, 0])
            else:
                value = constant_value(matrix, skip_diagonal=q == g)
        else:  # too large for one product: the first query's scores, then (rarely) every block
            first = base.block(np.zeros(1, dtype=np.int64), None)[0]
            own = 0 if q == g else None
            row = np.delete(first, own) if own is not None else first
            value = None if not len(row) or not (row == row[0]).all() else float(row[0])
            step = base.rows_per_block(base.n_gallery, False)
            for start in range(0, base.n_queries, step) if value is not None else ():
                rows = np.arange(start, min(start + step, base.n_queries))
                block = base.block(rows, None)
                equal = block == value
                if q == g:
                    equal[np.arange(len(rows)), rows] = True
                if not equal.all():
                    value = None
                    break
        if value is None:
            return None
        peaks = [float(np.abs(self.vectors[k]).max()) for k in dict.fromkeys(kinds)]
        what = f"every {q}-{g} dot product of the embeddings is {value!r}"
        if value == 0 and min(peaks) > 0:
            return (
                f"{what}: the embeddings are not zero (largest magnitude {min(peaks):.3g}), their products underflow "
                "to 0 and rank nothing; give normalize=True (cosine similarity)"
            ), True
        return f"{what}: every ranking is the tie order of the rows, not a model's", False

    def nonfinite(self, view: View) -> tuple[str, str]:
        """The embeddings are finite (checked before scoring): a non-finite score is a dot product that overflows."""
        dtype = np.result_type(*(self.vectors[k].dtype for k in (view.query_kind, view.gallery_kind)))
        fix = "normalize=True (cosine similarity)" + (" or float64 embeddings" if dtype != np.float64 else "")
        return "overflow (inf or NaN)", (
            f"; the embeddings are finite, but their dot products exceed the largest {dtype} "
            f"({float(np.finfo(dtype).max):.3g}): give {fix}"
        )

    def scorer(self, view: View) -> BlockScorer:
        q, g = view.query_kind, view.gallery_kind
        base = self._scorer((q, g))
        if self.ties == "stable":
            return base
        key = (id(view.collection), q, g)
        if key not in self._tie_scorers:  # the rows in the tie rule's order (module docstring of .scored)
            query_order, gallery_order = (self.row_order(view.collection, k) for k in (q, g))
            if isinstance(base, MatrixScorer):
                self._tie_scorers[key] = base.permuted(query_order, gallery_order)  # type: ignore[arg-type]
            elif self.device is not None:
                queries, gallery = self.vectors[q][query_order], self.vectors[g][gallery_order]  # type: ignore[index]
                self._tie_scorers[key] = device_scorer(queries, gallery, self.device)
            else:
                self._tie_scorers[key] = EmbeddingScorer(self.vectors[q][query_order], self.vectors[g][gallery_order])
        return self._tie_scorers[key]

    def pair_scorer(self, kinds: tuple[str, str]) -> MatrixScorer | EmbeddingScorer:
        return self._scorer(kinds)  # type: ignore[return-value]

    def _scorer(self, kinds: tuple[str, str]) -> BlockScorer:
        with self._building:
            return self._build_scorer(kinds)

    def _build_scorer(self, kinds: tuple[str, str]) -> BlockScorer:
        if kinds not in self._scorers and self.device is not None:
            self._scorers[kinds] = device_scorer(self.vectors[kinds[0]], self.vectors[kinds[1]], self.device)
        if kinds not in self._scorers:
            q, g = kinds
            a, b = sorted(kinds, key=ITEM_KINDS.index)  # one matrix serves both directions: images x captions
            rows_a, copies_a = distinct_rows(self.vectors[a])
            rows_b, copies_b = distinct_rows(self.vectors[b]) if b != a else (rows_a, copies_a)
            dtype = np.result_type(rows_a.dtype, rows_b.dtype)
            if len(rows_a) * len(rows_b) * dtype.itemsize <= MATRIX_BUDGET:
                with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused, named, when ranked
                    matrix = rows_a.astype(dtype, copy=False) @ rows_b.astype(dtype, copy=False).T
                maps = {a: copies_a, b: copies_b}
                self._scorers[(a, b)] = MatrixScorer(matrix, False, maps[a], maps[b])
                self._scorers[(b, a)] = MatrixScorer(matrix, a != b, maps[b], maps[a])
            else:
                self._scorers[kinds] = EmbeddingScorer(self.vectors[q], self.vectors[g])
        return self._scorers[kinds]  # type: ignore[return-value]


def scoring_device(device: object, *values: object) -> str | None:
    """The torch device that ranks (None: the numpy engine): ``device`` when named, else the GPU the tensors
    are on (see :class:`Embeddings`)."""
    if device is not None and not isinstance(device, str) and type(device).__name__ != "device":
        raise EvaluationError(f"device must be a torch device name such as 'cuda', or 'numpy', not {device!r:.40}")
    if device is not None:
        return None if str(device) == "numpy" else str(device)
    places = {str(v.device) for v in values if hasattr(v, "detach") and hasattr(v, "device")}  # type: ignore[attr-defined]
    places.discard("cpu")
    if len(places) > 1:
        raise EvaluationError(
            f"the embeddings are on different devices ({', '.join(sorted(places))}): move them to one, or give "
            "device= (a torch device name, or 'numpy')"
        )
    return places.pop() if places else None


def device_scorer(queries: np.ndarray, gallery: np.ndarray, device: str) -> BlockScorer:
    """A :class:`~eccv_metric.kernels.device.TorchScorer` on ``device``."""
    module = torch_module()
    return module.TorchScorer(queries, gallery, module.device_of(device))  # type: ignore[no-any-return]


def torch_module() -> ModuleType:
    """:mod:`eccv_metric.kernels.device`, imported here and not before (it imports torch)."""
    try:
        from eccv_metric.kernels import device
    except ImportError as exc:
        raise EvaluationError(
            f"device= ranks with torch, which cannot be imported ({exc}): pip install torch, or leave device out "
            "(the numpy engine)"
        ) from exc
    return device
