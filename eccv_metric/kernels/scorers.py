"""Blocks of scores: some queries x the gallery, read from a matrix or computed from embeddings.

A *scorer* hands the ranking kernels C-contiguous float32/64 blocks
(queries x gallery items), so that every ranking is done block by block and
peak memory is bounded by the block budget, never by the gallery:

- :class:`MatrixScorer`: rows (or columns) of a score matrix the caller holds;
- :class:`EmbeddingScorer`: ``queries[rows] @ gallery.T`` one block at a time.

Identical gallery embeddings always get identical scores: a float BLAS
product may round the same dot product differently at different positions of
its output (measured: duplicated rows of a 3,000 x 512 float32 matrix disagree
in the last bit in about one row in three), which would turn the tie rule into
noise for COCO's duplicate captions. Each distinct embedding is scored once
(:func:`distinct_rows`) and its score copied to its duplicates. Query rows are
computed in *aligned* blocks (fixed row ranges, ``aligned`` rows each, every
gallery item), so a similarity always comes from the same product call,
whichever queries, metrics or benchmarks ask for it. Beyond that, the last
bits of a float similarity are BLAS's (they may depend on the machine and its
threads, as in any float matrix product).

A :class:`DeviceScorer` (:mod:`eccv_metric.kernels.device`: torch tensors on
a GPU) also counts ranks and top-k lists where its blocks are, with the same
rules; only the counts come back.
"""

from __future__ import annotations

import copy
from typing import Protocol
from typing import runtime_checkable

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview

# top-k blocks of about 2 MB (float32): the block, its partitioned copy and its mask stay in cache between passes
TOPK_ELEMENTS = 1 << 19
# blocks of a blockwise computation that is not cache-bound (embedding products, exact ranks): ~16 MB of float32
CHUNK_ELEMENTS = 1 << 22


class Scratch(Protocol):
    def floats(self, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray: ...


class BlockScorer(Protocol):
    """Scores of query rows against gallery columns, one block at a time."""

    n_queries: int
    n_gallery: int
    parallel: bool  # whether blocks may run on the shared block workers (False: each block is itself parallel)
    aligned: int  # rows of a computed block (0: blocks are read, any rows at a time; see the module docstring)

    def block(self, rows: np.ndarray, cols: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray: ...

    def rows_per_block(self, n_cols: int, topk: bool) -> int: ...


@runtime_checkable
class DeviceScorer(Protocol):
    """A scorer whose blocks stay on a device (torch): it ranks them there and hands back only the results."""

    def aligned_block(self, b: int) -> object:
        """Scores of the aligned block ``b`` of query rows, every gallery column, on the device."""
        ...

    def count_ranks(
        self,
        block: object,
        local: np.ndarray,
        gallery_pos: np.ndarray | None,
        mask: np.ndarray,
        own: np.ndarray | None,
        excluded: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ranks, bad, low, high) of :func:`~eccv_metric.kernels.ranks.block_spans` of rows ``local`` of ``block``
        (columns ``gallery_pos``)."""
        ...

    def top_ranked(
        self, query_pos: np.ndarray, k: int, gallery_pos: np.ndarray | None, own: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~eccv_metric.kernels.topk.top_ranked` on the device."""
        ...


def as_score_matrix(scores: object, what: str = "scores") -> np.ndarray:
    """A 2-D float16/32/64 numpy array from numpy or torch input (torch is not imported)."""
    if hasattr(scores, "detach") and hasattr(scores, "cpu"):
        tensor = scores.detach().cpu()  # type: ignore[attr-defined]
        if str(getattr(tensor, "dtype", "")) == "torch.bfloat16":
            tensor = tensor.float()
        scores = tensor.numpy()
    arr = np.asarray(scores)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (2, 4, 8):
        raise EvaluationError(f"{what}= must be float16, float32 or float64, not {arr.dtype}")
    if arr.ndim != 2:
        raise EvaluationError(f"{what}= must be a 2-D matrix, got shape {arr.shape}")
    return arr


def require_finite(matrix: np.ndarray, keyword: str, skip_diagonal: bool = False) -> None:
    """Refuse a score matrix holding NaN or inf anywhere (also where no requested metric reads), naming the
    input as ``keyword=`` (front ends put it in their words: core.errors.in_words) and its first bad cell.

    One vectorised pass: a finite sum proves every entry finite (NaN and inf never cancel out); only a
    non-finite sum (a bad entry, or finite values whose sum overflows) is looked at block by block.
    ``skip_diagonal``: a square matrix's diagonal (a query's own score) is never read, so it may hold anything
    (e.g. ``-inf`` set to keep the query out)."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf in the sum: looked at below
        total = matrix.sum(dtype=np.float32 if matrix.dtype == np.float16 else None)
    if matrix.size == 0 or np.isfinite(total):
        return
    n_rows, n_cols = matrix.shape
    step = max(1, CHUNK_ELEMENTS // max(1, n_cols))
    first, count = None, 0
    for start in range(0, n_rows, step):
        bad = ~np.isfinite(matrix[start : start + step])
        if skip_diagonal:
            rows = np.arange(min(len(bad), max(0, n_cols - start)))
            bad[rows, start + rows] = False
        count += int(np.count_nonzero(bad))
        if first is None and count:
            row, col = np.argwhere(bad)[0]
            first = (start + int(row), int(col))
    if first is None:
        return
    value = "NaN" if np.isnan(matrix[first]) else str(float(matrix[first]))
    more = f" ({count:,} non-finite cells in all)" if count > 1 else ""
    own = "; a square matrix's diagonal, a query's own score, is never read" if skip_diagonal else ""
    raise EvaluationError(
        f"{keyword}= holds {value} at row {first[0]}, column {first[1]}{more}: every score must be finite, "
        f"also where no requested metric reads it (NaN / inf are refused{own})"
    )


class MatrixScorer:
    """Rows (or, ``along_columns``, columns) of a score matrix as query blocks; the matrix is never copied whole.

    A column-major matrix is read through its transpose (its storage order).
    ``query_map`` / ``gallery_map``: the matrix position of each query / gallery
    position (a matrix over distinct items, expanded on the fly to their copies).
    """

    parallel = True
    aligned = 0

    def __init__(
        self,
        matrix: np.ndarray,
        along_columns: bool = False,
        query_map: np.ndarray | None = None,
        gallery_map: np.ndarray | None = None,
    ):
        if not (matrix.flags.c_contiguous or matrix.flags.f_contiguous):
            matrix = np.ascontiguousarray(matrix)  # a strided view: one copy, then fast row access
        transposed = not matrix.flags.c_contiguous
        self.matrix = matrix.T if transposed else matrix
        self.along_columns = along_columns != transposed
        self.query_map = query_map
        self.gallery_map = gallery_map
        self.n_queries = matrix.shape[1 if along_columns else 0] if query_map is None else len(query_map)
        self.n_gallery = matrix.shape[0 if along_columns else 1] if gallery_map is None else len(gallery_map)

    def permuted(self, query_order: np.ndarray, gallery_order: np.ndarray) -> MatrixScorer:
        """The same matrix with query position i read as this scorer's ``query_order[i]`` (gallery likewise):
        a stable ranking of it breaks ties in ``gallery_order`` (no copy of the matrix)."""
        out = copy.copy(self)
        out.query_map = query_order if self.query_map is None else self.query_map[query_order]
        out.gallery_map = gallery_order if self.gallery_map is None else self.gallery_map[gallery_order]
        out.n_queries, out.n_gallery = len(out.query_map), len(out.gallery_map)
        return out

    def rows_per_block(self, n_cols: int, topk: bool) -> int:
        if topk:
            return max(1, min(512, TOPK_ELEMENTS // max(1, n_cols)))
        return max(1, CHUNK_ELEMENTS // max(1, n_cols))

    def _positions(self, rows: np.ndarray, cols: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        if self.query_map is not None:
            rows = self.query_map[rows]
        if self.gallery_map is not None:
            cols = self.gallery_map if cols is None else self.gallery_map[cols]
        return rows, cols

    def block(self, rows: np.ndarray, cols: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray:
        rows, cols = self._positions(rows, cols)
        if self.along_columns:
            return column_block(self.matrix, rows, cols, scratch)
        block = take(self.matrix, rows, axis=0)
        if cols is not None:
            block = take(block, cols, axis=1)
        dtype = np.float32 if self.matrix.dtype == np.float16 else self.matrix.dtype
        return np.ascontiguousarray(block, dtype=dtype)

    def pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Score of each (query position, gallery position) pair, float64."""
        rows, cols = self._positions(rows, cols)
        if self.along_columns:
            return self.matrix[cols, rows].astype(np.float64)
        return self.matrix[rows, cols].astype(np.float64)


class EmbeddingScorer:
    """``s[i, j] = <queries[i], gallery[j]>`` computed one block of queries at a time.

    Aligned blocks of about :data:`CHUNK_ELEMENTS` scores (module docstring), computed in the calling thread:
    the matrix product dominates and BLAS already runs it on every core (blocks on the two block workers would
    oversubscribe them, and small blocks waste the product's efficiency: measured 10x slower on t2t over 25,000
    captions).
    """

    parallel = False

    def __init__(self, queries: np.ndarray, gallery: np.ndarray):
        if queries.shape[1] != gallery.shape[1]:
            raise EvaluationError(
                f"the embeddings have {queries.shape[1]} and {gallery.shape[1]} dimensions: they must agree"
            )
        dtype = np.result_type(queries.dtype, gallery.dtype)
        self.queries = queries.astype(dtype, copy=False)
        self.gallery, self.copies = distinct_rows(gallery.astype(dtype, copy=False))
        self.n_queries = len(queries)
        self.n_gallery = len(gallery)
        self.aligned = max(1, CHUNK_ELEMENTS // max(1, self.n_gallery))

    def rows_per_block(self, n_cols: int, topk: bool) -> int:
        return self.aligned

    def block(self, rows: np.ndarray, cols: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray:
        """Scores of ``rows`` (columns ``cols``), each row computed in its aligned block."""
        blocks = rows // self.aligned
        parts = []
        for b in np.unique(blocks).tolist():
            start = b * self.aligned
            scores = self.queries[start : start + self.aligned] @ self.gallery.T
            local = rows[blocks == b] - start
            whole = len(local) == len(scores) and bool((local == np.arange(len(local))).all())
            parts.append(scores if whole else scores[local])
        scores = parts[0] if len(parts) == 1 else np.concatenate(parts)
        if len(parts) > 1 and (np.diff(blocks) < 0).any():  # rows given out of block order: back in theirs
            scores = scores[np.argsort(np.argsort(blocks, kind="stable"))]
        if self.copies is None:
            return scores if cols is None else np.ascontiguousarray(scores[:, cols])
        return scores.take(self.copies if cols is None else self.copies[cols], axis=1)

    def pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return pair_dots(self.queries, self.gallery if self.copies is None else self.gallery[self.copies], rows, cols)


def pair_dots(queries: np.ndarray, gallery: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``<queries[rows[k]], gallery[cols[k]]>`` of each pair k, float64 (8,192 pairs at a time)."""
    out = np.empty(len(rows))
    for s in range(0, len(rows), 8192):
        out[s : s + 8192] = np.einsum("ij,ij->i", queries[rows[s : s + 8192]], gallery[cols[s : s + 8192]])
    return out


def constant_value(matrix: np.ndarray, skip_diagonal: bool = False) -> float | None:
    """The one value of a matrix whose every entry is equal (its diagonal left out when ``skip_diagonal``: a
    query's own entry is never read), else None. The first row decides most matrices; a constant first row
    costs one pass over the rest, block by block."""
    n_rows, n_cols = matrix.shape
    if n_rows == 0 or n_cols <= int(skip_diagonal):
        return None
    first = matrix[0, 1:] if skip_diagonal else matrix[0]
    value = first[0]
    if not (first == value).all():  # NaN is never equal: non-finite scores are refused where they are read
        return None
    step = max(1, CHUNK_ELEMENTS // n_cols)
    for start in range(0, n_rows, step):
        equal = matrix[start : start + step] == value
        if skip_diagonal:
            rows = np.arange(len(equal))
            inside = start + rows < n_cols
            equal[rows[inside], start + rows[inside]] = True
        if not equal.all():
            return None
    return float(value)


def distinct_rows(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(distinct rows, copies)`` with ``arr == distinct[copies]``; ``(arr, None)`` when no row repeats.

    Rows are compared bit for bit (``-0.0`` counts as ``0.0``), by hashing each
    row's bytes once (about 0.1 s for 31,244 x 512 float32).
    """
    canon = np.ascontiguousarray(arr + arr.dtype.type(0))  # -0.0 + 0.0 == 0.0
    keys = canon.view(np.dtype((np.void, canon.itemsize * canon.shape[1])))[:, 0].tolist()
    seen: dict[bytes, int] = {}
    copies = np.fromiter((seen.setdefault(key, len(seen)) for key in keys), dtype=np.int64, count=len(keys))
    if len(seen) == len(keys):
        return arr, None
    firsts = np.unique(copies, return_index=True)[1]
    return arr[firsts], copies


def as_embeddings(values: object, what: str) -> np.ndarray:
    """A 2-D float32/float64 array from numpy or torch (bfloat16 / float16 upcast); its values are checked by
    :func:`require_finite_rows`."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        tensor = values.detach().cpu()  # type: ignore[attr-defined]
        if str(getattr(tensor, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            tensor = tensor.float()
        values = tensor.numpy()
    arr = np.asarray(values)
    if arr.dtype not in (np.float16, np.float32, np.float64):
        raise EvaluationError(f"{what} must be floats (float16/32/64), not {arr.dtype}")
    if arr.ndim != 2 or 0 in arr.shape:
        raise EvaluationError(f"{what} must be a non-empty 2-D (items x dimensions) array, got shape {arr.shape}")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    return arr


def require_finite_rows(arr: np.ndarray, what: str) -> np.ndarray:
    """``arr`` when every embedding is finite; else an error naming the rows and the first bad cell."""
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        col = int(np.flatnonzero(~np.isfinite(arr[row]))[0])
        value = "NaN" if np.isnan(arr[row, col]) else str(float(arr[row, col]))
        raise EvaluationError(
            f"{what}: rows {preview(np.flatnonzero(bad))} hold NaN or inf ({value} at row {row}, column {col}): "
            "every embedding must be finite, also where no requested metric reads it"
        )
    return arr


def unit_rows(arr: np.ndarray, what: str) -> np.ndarray:
    """Rows scaled to unit L2 norm (cosine similarity), without overflow or underflow.

    ``x / ||x||``; a row whose largest magnitude is outside a safe range (its
    squares would overflow to inf or underflow to 0) is first divided by that
    magnitude, which leaves its direction unchanged. All-zero rows have no
    direction: refused.
    """
    peak = np.abs(arr).max(axis=1, keepdims=True)
    if (peak == 0).any():
        raise EvaluationError(f"{what}: rows {preview(np.flatnonzero(peak[:, 0] == 0))} are zero (no cosine)")
    info = np.finfo(arr.dtype)
    safe = (peak >= np.sqrt(info.tiny) * 1e3) & (peak <= np.sqrt(info.max) / 1e4)
    if not safe.all():
        arr = np.where(safe, arr, arr / peak)
    return arr / np.linalg.norm(arr, axis=1, keepdims=True)


def column_block(
    scores: np.ndarray, pos: np.ndarray, gallery_pos: np.ndarray | None, scratch: Scratch | None = None
) -> np.ndarray:
    """Columns ``pos`` of ``scores`` (rows ``gallery_pos``) as a C-contiguous float32/64 (queries x gallery) copy.

    With ``scratch`` the copy is the thread's reusable buffer (valid until its next block).
    """
    dtype = np.dtype(np.float32 if scores.dtype == np.float16 else scores.dtype)
    if gallery_pos is not None and is_range(gallery_pos):
        scores, gallery_pos = take(scores, gallery_pos, axis=0), None  # a view: restrict rows first
    order = None if is_range(pos) or bool((np.diff(pos) > 0).all()) else np.argsort(pos, kind="stable")
    # permuted columns are gathered in ascending order (each row read front to back), and each lands on its
    # own row of the copy below
    cols = take(scores, pos if order is None else pos[order], axis=1)
    if gallery_pos is not None:
        cols = take(cols, gallery_pos, axis=0)
    shape = (cols.shape[1], cols.shape[0])
    out = np.empty(shape, dtype=dtype) if scratch is None else scratch.floats(shape, dtype)
    tile = 512
    rows = slice(None) if order is None else order
    for r in range(0, cols.shape[0], tile):  # tiled transpose: cache friendly
        out[rows, r : r + tile] = cols[r : r + tile].T
    return out


def is_range(pos: np.ndarray) -> bool:
    return bool(len(pos)) and pos[-1] - pos[0] == len(pos) - 1 and bool((np.diff(pos) == 1).all())


def take(arr: np.ndarray, pos: np.ndarray, axis: int) -> np.ndarray:
    """``arr.take(pos, axis)``, as a view when ``pos`` is a contiguous ascending range."""
    if is_range(pos):
        return arr[pos[0] : pos[-1] + 1] if axis == 0 else arr[:, pos[0] : pos[-1] + 1]
    return arr.take(pos, axis=axis)
