"""TREC qrels, ``<query> 0 <doc> <relevance>`` (the format and its ids: :mod:`eccv_metric.formats.trec`): written
from any benchmark's positives (relevance 1) or, for ``cxc_graded``, from the CxC SITS ratings rounded half up,
and read back."""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import read_text
from eccv_metric.core.positives import Positives
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.formats.trec import DIRECTION_OF
from eccv_metric.formats.trec_lines import INTEGER
from eccv_metric.formats.trec_lines import parse_trec_id
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.groundtruth.split import GroundTruth


def positives_lists(gt: GroundTruth, relevance: object, direction: str) -> dict[int, list[int]]:
    """``{query id: [positive ids]}`` of CSR positives or of PM relevance (materialised)."""
    positives = relevance if isinstance(relevance, Positives) else relevance.to_positives()  # type: ignore[attr-defined]
    q, g = DIRECTION_KINDS[direction]
    return positives.to_id_lists(gt.index(q).ids, gt.index(g).ids)


def cxc_grades(ratings: Ratings, direction: str) -> dict[tuple[int, int], int]:
    """``{(query id, doc id): SITS rating rounded half up}`` of every rated caption-image pair (``cxc_graded``).

    A pair rated more than once keeps its highest grade. ``direction``: ``t2i`` keys are (caption, image),
    ``i2t`` keys (image, caption).
    """
    if ratings.kind != "sits" or direction not in ("i2t", "t2i"):
        raise EvaluationError(f"CxC grades are SITS ratings of i2t / t2i pairs, not {ratings.kind} {direction}")
    grade = np.floor(ratings.score + 0.5).astype(np.int64)
    captions, images = ratings.id_1.tolist(), ratings.id_2.tolist()
    pairs = zip(captions, images, strict=True) if direction == "t2i" else zip(images, captions, strict=True)
    out: dict[tuple[int, int], int] = {}
    for pair, value in zip(pairs, grade.tolist(), strict=True):
        if value > out.get(pair, -1):
            out[pair] = value
    return out


def qrels_lines(
    lists: Mapping[int, Sequence[int]], direction: str, grades: Mapping[tuple[int, int], int] | None = None
) -> Iterator[str]:
    """qrels lines of ``{query id: [positive ids]}``: relevance 1, or ``grades[(query, doc)]`` (every pair needs
    one: a positive without a grade is an error, never a silent 1)."""
    q, g = DIRECTION_KINDS[direction]
    for query, docs in lists.items():
        for doc in docs:
            yield f"{q}-{query} 0 {g}-{doc} {relevance(grades, direction, query, doc)}"


def relevance(grades: Mapping[tuple[int, int], int] | None, direction: str, query: int, doc: int) -> int:
    """1 (binary positives), or the pair's grade; a graded positive without a grade is an error."""
    if grades is None:
        return 1
    if (query, doc) not in grades:
        q, g = DIRECTION_KINDS[direction]
        raise EvaluationError(f"{direction} positive {q}-{query} {g}-{doc} has no grade (no SITS rating)")
    return grades[(query, doc)]


def read_qrels(path: str | Path) -> dict[str, dict[int, dict[int, int]]]:
    """TREC qrels -> ``{direction: {query id: {doc id: relevance}}}``."""
    out: dict[str, dict[int, dict[int, int]]] = {}
    for n, line in enumerate(read_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        where = f"{path}:{n}"
        if len(parts) != 4 or not INTEGER.fullmatch(parts[3]):
            raise EvaluationError(f"{where}: a qrels line is '<query> 0 <doc> <integer relevance>'")
        kind, qid = parse_trec_id(parts[0], where)
        dkind, did = parse_trec_id(parts[2], where)
        docs = out.setdefault(DIRECTION_OF[(kind, dkind)], {}).setdefault(qid, {})
        if did in docs:
            raise EvaluationError(f"{where}: pair {parts[0]} {parts[2]} given twice")
        docs[did] = int(parts[3])
    return out
