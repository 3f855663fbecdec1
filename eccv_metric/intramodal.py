"""CxC intramodal retrieval (t2t, i2i) and correlations (STS, SIS, SITS) on the 5K test split.

Definitions only: the tasks are :class:`~eccv_metric.tasks.RetrievalTask`
instances scored by the task engine; similarities come from embeddings (one
block of queries at a time) or from score matrices given by the caller.

- ``cxc_t2t``: queries = test captions with >= 1 STS positive (agg_score >= 3,
  the other caption of the pair); gallery = every given caption but the query.
- ``cxc_i2i``: the same over images with SIS >= 2.5.
- ``cxc_<kind>_spearman``: the bootstrap correlation of ``correlation``, on
  the test pairs of ``<kind>_test.csv`` (direction key t2t / i2i / t2i).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eccv_metric.correlation import DIRECTION
from eccv_metric.correlation import bootstrap_spearman
from eccv_metric.cxc import Ratings
from eccv_metric.cxc import intramodal_positives
from eccv_metric.engine import QueryScores
from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import IdIndex
from eccv_metric.targets import Request
from eccv_metric.tasks import EmbeddingScorer
from eccv_metric.tasks import MatrixScorer
from eccv_metric.tasks import RetrievalTask
from eccv_metric.tasks import Scorer
from eccv_metric.tasks import evaluate_task
from eccv_metric.tasks import gallery_columns

TASK_KIND = {"cxc_t2t": "sts", "cxc_i2i": "sis"}
# which similarities each CxC kind needs: (query modality, item modality)
MODALITIES = {"sts": ("caption", "caption"), "sis": ("image", "image"), "sits": ("caption", "image")}


def cxc_task(gt: GroundTruth, ratings: Ratings, directed: bool = False) -> RetrievalTask:
    """``cxc_t2t`` from STS ratings or ``cxc_i2i`` from SIS ratings (see :mod:`eccv_metric.cxc`)."""
    index = gt.captions if ratings.kind == "sts" else gt.images
    positives = intramodal_positives(ratings.within(index, index), index, directed)
    name = "cxc_t2t" if ratings.kind == "sts" else "cxc_i2i"
    return RetrievalTask(name, name[-3:], index, index, positives, exclude_self=True)


@dataclass(frozen=True)
class Similarity:
    """Similarities of the given items of two modalities (or one): embeddings or a matrix.

    ``rows_a[d]`` / ``rows_b[d]``: row of dense test item d in ``a`` / ``b`` (every test item has one);
    ``columns``: dense test index of each row of ``b`` (-1: an extra item).
    """

    rows_a: np.ndarray
    rows_b: np.ndarray
    columns: np.ndarray
    embeddings: tuple[np.ndarray, np.ndarray] | None = None
    matrix: np.ndarray | None = None

    def scorer(self) -> Scorer:
        if self.embeddings is not None:
            return EmbeddingScorer(*self.embeddings)
        return MatrixScorer(self.matrix)  # type: ignore[arg-type]

    def pairs(self, dense_a: np.ndarray, dense_b: np.ndarray) -> np.ndarray:
        """Similarity of each pair (dense_a[k], dense_b[k]) of test items, float64."""
        ra, rb = self.rows_a[dense_a], self.rows_b[dense_b]
        if self.embeddings is None:
            return self.matrix[ra, rb].astype(np.float64)  # type: ignore[index]
        a, b = self.embeddings
        out = np.empty(len(ra))
        for s in range(0, len(ra), 8192):
            out[s : s + 8192] = np.einsum("ij,ij->i", a[ra[s : s + 8192]], b[rb[s : s + 8192]])
        return out


def rows_of(columns: np.ndarray, n: int) -> np.ndarray:
    """Inverse of ``columns``: the row of each dense test item."""
    rows = np.full(n, -1, dtype=np.int64)
    rows[columns[columns >= 0]] = np.flatnonzero(columns >= 0)
    return rows


def intramodal_per_query(
    gt: GroundTruth,
    request: Request,
    ratings: Callable[[str], Ratings],
    similarity: Callable[[str], Similarity | None],
    directed: bool = False,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, dict[str, QueryScores]]:
    """Per-query values of the intramodal tasks and per-sample rho of the correlations in ``request``.

    ``similarity(kind)``: the similarities a CxC kind needs (``MODALITIES``), None if not given.
    """
    out: dict[str, dict[str, QueryScores]] = {}

    def need(kind: str, what: str) -> Similarity:
        sim = similarity(kind)
        if sim is None:
            a, b = MODALITIES[kind]
            raise EvaluationError(
                f"{what} needs {a}-{b} similarities: give {a} embeddings"
                + (f" and {b} embeddings of the same dimension" if a != b else "")
                + (f" or {a}_scores" if a == b else " or the image-caption scores")
            )
        return sim

    for name, kind in TASK_KIND.items():
        ks = request.tasks.get(name, ())
        stats = [stat for task, stat in request.task_stats if task == name]
        if not ks and not stats:
            continue
        sim = need(kind, name)
        task = cxc_task(gt, ratings(kind), directed)
        for metric, scores in evaluate_task(task, sim.scorer(), sim.rows_a, sim.columns, ks, stats).items():
            out[metric] = {task.direction: scores}
    for kind in request.correlations:
        name = f"cxc_{kind}_spearman"
        sim = need(kind, name)
        first, second = (gt.captions if m == "caption" else gt.images for m in MODALITIES[kind])
        rated = ratings(kind).within(first, second)
        rho = bootstrap_spearman(
            rated, sim.pairs(_dense(first, rated.id_1), _dense(second, rated.id_2)), n_resamples, seed
        )
        samples = np.arange(len(rho.samples))
        direction = DIRECTION[kind]
        out[name] = {direction: QueryScores(name, direction, samples, rho.samples)}
        out[name + "_std"] = {direction: QueryScores(name + "_std", direction, samples, rho.samples, "std")}
    return out


def _dense(index: IdIndex, ids: np.ndarray) -> np.ndarray:
    return index.positions(ids).astype(np.int64)


def _columns(ids: object, gt: GroundTruth, kind: str, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(dense test index of each given row, row of each dense test item)."""
    index, other = (gt.captions, gt.images) if kind == "caption" else (gt.images, gt.captions)
    columns = gallery_columns(index.ids if ids is None else ids, index, other, kind)
    if len(columns) != n_rows:
        raise EvaluationError(f"{n_rows} {kind} rows but {len(columns)} {kind} ids: one id per row")
    return columns, rows_of(columns, len(index))


def from_embeddings(
    gt: GroundTruth,
    images: np.ndarray | None,
    captions: np.ndarray | None,
    image_ids: object = None,
    caption_ids: object = None,
) -> dict[str, Similarity]:
    """Similarities per CxC kind from (checked) embeddings; rows default to the test split in Karpathy order."""
    given = {}
    if images is not None:
        given["image"] = (images, _columns(image_ids, gt, "image", len(images)))
    if captions is not None:
        given["caption"] = (captions, _columns(caption_ids, gt, "caption", len(captions)))
    out = {}
    for kind, (a, b) in MODALITIES.items():
        if a in given and b in given:
            (ea, (_, ra)), (eb, (cb, rb)) = given[a], given[b]
            if ea.shape[1] == eb.shape[1]:  # else SITS cannot be scored: left out, `need` says what is missing
                out[kind] = Similarity(ra, rb, cb, embeddings=(ea, eb))
    return out


def from_scores(
    gt: GroundTruth,
    scores: np.ndarray | None,
    image_ids: object = None,
    caption_ids: object = None,
    caption_scores: np.ndarray | None = None,
    image_scores: np.ndarray | None = None,
) -> dict[str, Similarity]:
    """Similarities per CxC kind from matrices: square caption / image matrices, and the image-caption one (SITS)."""
    out = {}
    for kind, matrix, ids, modality in (
        ("sts", caption_scores, caption_ids, "caption"),
        ("sis", image_scores, image_ids, "image"),
    ):
        if matrix is not None:
            if matrix.shape[0] != matrix.shape[1]:
                raise EvaluationError(
                    f"{modality}_scores must be square ({modality}s x {modality}s), got {matrix.shape}"
                )
            cols, rows = _columns(ids, gt, modality, matrix.shape[0])
            out[kind] = Similarity(rows, rows, cols, matrix=matrix)
    if scores is not None:
        img_cols, img_rows = _columns(image_ids, gt, "image", scores.shape[0])
        _, cap_rows = _columns(caption_ids, gt, "caption", scores.shape[1])
        out["sits"] = Similarity(cap_rows, img_rows, img_cols, matrix=scores.T)
    return out
