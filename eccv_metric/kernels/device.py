"""Scores and exact ranks on a torch device: the embeddings' products never leave it, only the counts do.

Imported only when embeddings are ranked with torch (``Embeddings(..., device=...)``, or torch tensors on a
GPU): the numpy engine stays the reference and the only path without torch.

Every metric needs only counts of each query's scores against one of them: the rank of a query's
best-ranked positive is ``#{g : s[g] > s*} + #{g before p* : s[g] = s*} + 1``
(:mod:`eccv_metric.kernels.ranks`), and a top-k list is the items above the k-th largest score plus the
first tied ones in gallery order, ordered by a stable sort (:mod:`eccv_metric.kernels.topk`). Both are
counted here on the device, with the numpy engine's rules: the same aligned blocks of query rows, each
distinct gallery embedding scored once and copied to its duplicates, a query's own item ranked below every
other item, rows holding NaN / inf reported.

The rule: **the ranks are exact for the scores this path computes** (float32 or float64 products of the
same L2-normalised rows the numpy engine multiplies; TF32 is switched off for these products). Its matrix
product is torch's, not numpy's BLAS: on integer-valued embeddings with small magnitudes both are exact,
so every per-query value equals the numpy engine's to the bit (tested); on float embeddings the last bit
of a score may differ, which can swap two items whose scores differ by about one float32 ulp.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from eccv_metric.core.errors import EvaluationError
from eccv_metric.kernels.scorers import CHUNK_ELEMENTS
from eccv_metric.kernels.scorers import Scratch
from eccv_metric.kernels.scorers import distinct_rows
from eccv_metric.kernels.scorers import pair_dots

# scores per block on an accelerator (128 MB of float32): big blocks keep it busy, memory stays bounded
DEVICE_ELEMENTS = 1 << 25
_PRECISION = threading.Lock()  # TF32 is a process-wide switch: set and restored around each product


def device_of(name: str) -> torch.device:
    """The torch device named by ``device=`` (an error names the keyword when torch cannot use it)."""
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as exc:
        raise EvaluationError(f"device={name!r} is not a torch device ('cuda', 'cuda:1', 'mps', 'cpu'): {exc}") from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise EvaluationError(f"device={name!r}: torch sees no CUDA device here; leave device out (numpy ranks)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise EvaluationError(f"device={name!r}: torch sees no MPS device here; leave device out (numpy ranks)")
    return device


@contextmanager
def full_precision() -> Iterator[None]:
    """float32 products in float32 (no TF32), whatever the process set with torch.set_float32_matmul_precision."""
    with _PRECISION:
        saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = saved


class TorchScorer:
    """``s[i, j] = <queries[i], gallery[j]>`` on a torch device, in aligned blocks (a
    :class:`~eccv_metric.kernels.scorers.DeviceScorer`); ``block`` copies scores to the host for the rare
    reads that need them (a constant matrix, tied queries)."""

    parallel = False

    def __init__(self, queries: np.ndarray, gallery: np.ndarray, device: torch.device):
        if queries.shape[1] != gallery.shape[1]:
            raise EvaluationError(
                f"the embeddings have {queries.shape[1]} and {gallery.shape[1]} dimensions: they must agree"
            )
        dtype = np.result_type(queries.dtype, gallery.dtype)
        if dtype == np.float64 and device.type == "mps":
            raise EvaluationError("float64 embeddings cannot be ranked on mps: give float32 ones or device='cpu'")
        self.host_queries = queries.astype(dtype, copy=False)
        self.host_gallery, copies = distinct_rows(gallery.astype(dtype, copy=False))
        self.device = device
        self.queries = torch.from_numpy(np.ascontiguousarray(self.host_queries)).to(device)
        self.gallery = torch.from_numpy(np.ascontiguousarray(self.host_gallery)).to(device)
        self.copies = None if copies is None else torch.from_numpy(copies).to(device)
        self.host_copies = copies
        self.n_queries = len(queries)
        self.n_gallery = len(gallery)
        elements = CHUNK_ELEMENTS if device.type == "cpu" else DEVICE_ELEMENTS
        self.aligned = max(1, elements // max(1, self.n_gallery))

    def rows_per_block(self, n_cols: int, topk: bool) -> int:
        return self.aligned

    def aligned_block(self, b: int) -> torch.Tensor:
        start = b * self.aligned
        with full_precision():
            scores = self.queries[start : start + self.aligned] @ self.gallery.T
        return scores if self.copies is None else scores.index_select(1, self.copies)

    def block(self, rows: np.ndarray, cols: np.ndarray | None, scratch: Scratch | None = None) -> np.ndarray:
        """Scores of ``rows`` (columns ``cols``) on the host, each row computed in its aligned block."""
        out = np.empty((len(rows), self.n_gallery if cols is None else len(cols)), dtype=self.host_queries.dtype)
        blocks = rows // self.aligned
        for b in np.unique(blocks).tolist():
            at = np.flatnonzero(blocks == b)
            part = self.aligned_block(b).index_select(0, self._tensor(rows[at] - b * self.aligned))
            if cols is not None:
                part = part.index_select(1, self._tensor(cols))
            out[at] = part.cpu().numpy()
        return out

    def pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        gallery = self.host_gallery if self.host_copies is None else self.host_gallery[self.host_copies]
        return pair_dots(self.host_queries, gallery, rows, cols)

    def _tensor(self, values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(values, dtype=np.int64)).to(self.device)

    def _part(self, block: torch.Tensor, local: np.ndarray, gallery_pos: np.ndarray | None) -> torch.Tensor:
        """Rows ``local`` (ascending) and columns ``gallery_pos`` of an aligned block (a new tensor)."""
        part = block if len(local) == len(block) else block.index_select(0, self._tensor(local))
        if gallery_pos is not None:
            part = part.index_select(1, self._tensor(gallery_pos))
        return part.clone() if part is block else part

    def _without_self(self, part: torch.Tensor, own: np.ndarray | None) -> torch.Tensor:
        """Rows free of NaN / inf, with each own column (``own`` >= 0) set below the rest of its row, in place (as
        :func:`~eccv_metric.kernels.ranks.without_self`)."""
        if own is None:
            return torch.isfinite(part).all(dim=1)
        has = np.flatnonzero(own >= 0)
        rows, cols = self._tensor(has), self._tensor(own[has])
        part[rows, cols] = 0
        finite = torch.isfinite(part).all(dim=1)
        floor = torch.full((), -torch.inf, dtype=part.dtype, device=part.device)
        part[rows, cols] = torch.nextafter(part.amin(dim=1)[rows], floor)
        return finite

    def count_ranks(
        self,
        block: torch.Tensor,
        local: np.ndarray,
        gallery_pos: np.ndarray | None,
        mask: np.ndarray,
        own: np.ndarray | None,
        excluded: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Exact first-positive ranks of rows ``local`` of an aligned block, counted on the device: (ranks, bad,
        low, high) of :func:`~eccv_metric.kernels.ranks.block_spans` (``excluded`` columns take no part)."""
        part = self._part(block, local, gallery_pos)
        finite = self._without_self(part, own)
        positive = torch.from_numpy(mask).to(self.device)
        n = part.shape[1]
        if excluded is not None:
            ex_rows, ex_at = np.nonzero(excluded >= 0)
            ex_r, ex_c = self._tensor(ex_rows), self._tensor(excluded[ex_rows, ex_at])
            positive[ex_r, ex_c] = False
        best = torch.where(positive, part, torch.full_like(part, -torch.inf)).amax(dim=1, keepdim=True)
        at_best = part == best
        cols = torch.arange(n, device=self.device)
        first = torch.where(positive & at_best, cols, n).amin(dim=1, keepdim=True)
        higher = (part > best).sum(dim=1)
        before = (at_best & (cols < first)).sum(dim=1)
        others = at_best.sum(dim=1) - (positive & at_best).sum(dim=1)  # items tied with the best that are negatives
        if excluded is not None and len(ex_rows):
            values, top, lead = part[ex_r, ex_c], best[ex_r, 0], first[ex_r, 0]

            def per_row(flags: torch.Tensor) -> torch.Tensor:
                return torch.zeros_like(higher).index_add_(0, ex_r, flags.to(higher.dtype))

            higher = higher - per_row(values > top)
            others = others - per_row(values == top)
            before = before - per_row((values == top) & (ex_c < lead))
        low = higher + 1
        bad = ~finite | ~positive.any(dim=1)
        out = [torch.where(bad, 0, x).cpu().numpy().astype(np.float64) for x in (low + before, low, low + others)]
        return out[0], bad.cpu().numpy(), out[1], out[2]

    def top_ranked(
        self, query_pos: np.ndarray, k: int, gallery_pos: np.ndarray | None, own: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-``k`` gallery positions of the query rows ``query_pos`` (stable: equal scores in gallery order), the
        queries whose scores hold NaN or inf, and the top items' scores (as
        :func:`~eccv_metric.kernels.topk.top_ranked`)."""
        order = np.argsort(query_pos, kind="stable")
        pos = query_pos[order]
        top = np.zeros((len(pos), k), np.int32)
        values = np.zeros((len(pos), k), self.host_queries.dtype)
        bad = np.zeros(len(pos), dtype=bool)
        blocks = pos // self.aligned
        for b in np.unique(blocks).tolist():
            at = np.flatnonzero(blocks == b)
            part = self._part(self.aligned_block(b), pos[at] - b * self.aligned, gallery_pos)
            finite = self._without_self(part, None if own is None else own[order[at]])
            bad[at] = ~finite.cpu().numpy()
            if not bad[at].any():
                cols = stable_top(part, k)
                top[at] = cols.cpu().numpy()
                values[at] = part.gather(1, cols.long()).cpu().numpy()
        out_bad = np.zeros(len(pos), dtype=bool)
        out_bad[order] = bad
        if bad.any():
            return np.zeros((len(pos), 0), np.int32), out_bad, np.zeros((len(pos), 0))
        out = np.empty_like(top)
        out[order] = top
        out_values = np.empty_like(values)
        out_values[order] = values
        return (out if gallery_pos is None else gallery_pos[out].astype(np.int32)), out_bad, out_values


def stable_top(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Columns of the ``k`` first items of each row under a stable descending sort (finite rows).

    The k-th largest value ``v`` of a row: every item above ``v`` and the first ``k - #{> v}`` items equal to
    ``v``, in column order, are the row's top-k; a stable sort of their scores orders them.
    """
    n = scores.shape[1]
    if k >= n:
        return torch.sort(scores, dim=1, descending=True, stable=True).indices.to(torch.int32)
    kth = torch.topk(scores, k, dim=1, largest=True, sorted=True).values[:, -1:]
    above = scores > kth
    tied = scores == kth
    need = k - above.sum(dim=1, keepdim=True)
    take = above | (tied & (torch.cumsum(tied, dim=1, dtype=torch.int32) <= need))
    cols = take.nonzero()[:, 1].view(len(scores), k)  # row by row, columns ascending
    order = torch.sort(scores.gather(1, cols), dim=1, descending=True, stable=True).indices
    return cols.gather(1, order).to(torch.int32)
