"""TREC qrels and run files (trec_eval, pytrec_eval, ranx) for every benchmark and direction.

Ids: images and captions live in different id spaces, so TREC / BEIR ids carry
their modality: ``image-391895`` (a COCO image id), ``caption-770337`` (a COCO
caption id). A query's modality gives the direction (``image-*`` queries are
i2t, ``caption-*`` queries t2i).

- qrels: ``<query> 0 <doc> <relevance>``, one line per positive pair
  (relevance 1; ids outside the test split that the ground truth lists, such as
  the two ECCV captions outside the 25,000, are kept: they count in R).
- runs: ``<query> Q0 <doc> <rank> <score> <tag>``, rank 1-based. trec_eval
  orders a run by score (ties by document id), not by rank, so exported runs
  carry strictly decreasing scores ``depth - rank + 1``: every tool then sees
  exactly our ranking. Imported runs are ordered by score descending, then
  rank; two lines of one query with equal score and rank are ambiguous and
  refused.

Metric names across tools: COCO R@K = trec_eval ``success_K`` = ranx / MTEB
``hit_rate@K`` (not MTEB's ``recall_at_k``, which is IR recall); R-Precision =
``Rprec`` / ``r-precision``; mAP@R = ``map_cut_R`` / ranx ``map@R`` with each
query's own cut R (both divide by the number of positives).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.positives import Positives
from eccv_metric.ranking import int_ids
from eccv_metric.topk import as_score_matrix
from eccv_metric.topk import top_ranked

KINDS = ("image", "caption")
DIRECTION_OF_QUERY = {"image": "i2t", "caption": "t2i"}
GALLERY_OF = {"i2t": "caption", "t2i": "image"}
QUERY_OF = {"i2t": "image", "t2i": "caption"}


def trec_id(kind: str, ident: int) -> str:
    """``image-391895`` / ``caption-770337``."""
    return f"{kind}-{int(ident)}"


def parse_trec_id(token: str, where: str) -> tuple[str, int]:
    kind, sep, digits = token.partition("-")
    if not sep or kind not in KINDS or not digits.isdigit() or (digits != "0" and digits.startswith("0")):
        raise EvaluationError(f"{where}: id {token!r} is not 'image-<id>' or 'caption-<id>'")
    return kind, int(digits)


def positives_lists(gt: GroundTruth, relevance: object, direction: str) -> dict[int, list[int]]:
    """``{query id: [positive ids]}`` of CSR positives or of PM relevance (materialised)."""
    positives = relevance if isinstance(relevance, Positives) else relevance.to_positives()  # type: ignore[attr-defined]
    return positives.to_id_lists(gt.query_index(direction).ids, gt.gallery_index(direction).ids)


def qrels_lines(lists: Mapping[int, Sequence[int]], direction: str) -> list[str]:
    """qrels lines of ``{query id: [positive ids]}`` (relevance 1)."""
    q, g = QUERY_OF[direction], GALLERY_OF[direction]
    return [f"{q}-{query} 0 {g}-{doc} 1" for query, docs in lists.items() for doc in docs]


def run_lines(rankings: Mapping[int, Sequence[int]], direction: str, tag: str = "eccv_caption") -> list[str]:
    """Run lines of ``{query id: [ranked ids]}`` with strictly decreasing scores (see the module doc)."""
    if not tag or any(c.isspace() for c in tag):
        raise EvaluationError(f"run tag must be one word, not {tag!r}")
    q, g = QUERY_OF[direction], GALLERY_OF[direction]
    lines = []
    for query, ranked in rankings.items():
        depth = len(ranked)
        lines += [f"{q}-{query} Q0 {g}-{doc} {r} {depth - r + 1} {tag}" for r, doc in enumerate(ranked, 1)]
    return lines


def write_lines(path: str | Path, lines: list[str]) -> None:
    from eccv_metric.files import write_text_atomic

    write_text_atomic(path, "\n".join(lines) + "\n" if lines else "")


def read_run(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """A TREC run -> ``{direction: {query id: [ranked ids]}}`` (the official rankings format)."""
    rows: dict[str, list[tuple[float, int, str, int]]] = {}
    for n, line in enumerate(_lines(path), 1):
        parts = line.split()
        if not parts:
            continue
        where = f"{path}:{n}"
        if len(parts) != 6:
            raise EvaluationError(f"{where}: a run line has 6 fields '<query> Q0 <doc> <rank> <score> <tag>'")
        try:
            rank, score = int(parts[3]), float(parts[4])
        except ValueError:
            raise EvaluationError(f"{where}: rank must be an integer and score a number") from None
        if not math.isfinite(score):
            raise EvaluationError(f"{where}: score must be finite, not {parts[4]}")
        rows.setdefault(parts[0], []).append((-score, rank, parts[2], n))
    out: dict[str, dict[int, list[int]]] = {}
    for query, items in rows.items():
        kind, qid = parse_trec_id(query, f"{path}: query")
        direction = DIRECTION_OF_QUERY[kind]
        items.sort()
        keys = [(s, r) for s, r, _, _ in items]
        if len(set(keys)) != len(keys):
            dup = next(n for (s, r, _, n), prev in zip(items[1:], items, strict=False) if (s, r) == prev[:2])
            raise EvaluationError(f"{path}:{dup}: query {query} has two documents with the same score and rank")
        ranked = []
        for _, _, doc, n in items:
            dkind, did = parse_trec_id(doc, f"{path}:{n}")
            if dkind != GALLERY_OF[direction]:
                raise EvaluationError(f"{path}:{n}: a {kind} query ranks {doc}, which is not a {GALLERY_OF[direction]}")
            ranked.append(did)
        out.setdefault(direction, {})[qid] = ranked
    if not out:
        raise EvaluationError(f"{path}: no run lines")
    return out


def read_qrels(path: str | Path) -> dict[str, dict[int, dict[int, int]]]:
    """TREC qrels -> ``{direction: {query id: {doc id: relevance}}}``."""
    out: dict[str, dict[int, dict[int, int]]] = {}
    for n, line in enumerate(_lines(path), 1):
        parts = line.split()
        if not parts:
            continue
        where = f"{path}:{n}"
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
            raise EvaluationError(f"{where}: a qrels line is '<query> 0 <doc> <integer relevance>'")
        kind, qid = parse_trec_id(parts[0], where)
        _, did = parse_trec_id(parts[2], where)
        docs = out.setdefault(DIRECTION_OF_QUERY[kind], {}).setdefault(qid, {})
        if did in docs:
            raise EvaluationError(f"{where}: pair {parts[0]} {parts[2]} given twice")
        docs[did] = int(parts[3])
    return out


def rankings_from_scores(
    scores: object, image_ids: object, caption_ids: object, gt: GroundTruth, direction: str, depth: int
) -> dict[int, list[int]]:
    """Top-``depth`` ``{query id: [gallery ids]}`` of every test-split query row (i2t) or column (t2i).

    Same ranking as the metrics (stable descending: the item given first wins
    ties); extra gallery ids are kept in the lists.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise EvaluationError(f"depth must be a positive integer, not {depth!r}")
    matrix = as_score_matrix(scores)
    ids = {"image": int_ids(image_ids, "image ids", ndim=1), "caption": int_ids(caption_ids, "caption ids", ndim=1)}
    if (len(ids["image"]), len(ids["caption"])) != matrix.shape:
        raise EvaluationError(f"scores have shape {matrix.shape} but {len(ids['image'])} image and "
                              f"{len(ids['caption'])} caption ids were given")  # fmt: skip
    query_ids, gallery_ids = ids[QUERY_OF[direction]], ids[GALLERY_OF[direction]]
    query_pos = np.flatnonzero(gt.query_index(direction).positions(query_ids) >= 0)
    transposed = not matrix.flags.c_contiguous
    along_columns = (direction == "t2i") != transposed
    top, bad = top_ranked(matrix.T if transposed else matrix, query_pos, min(depth, len(gallery_ids)), along_columns)
    if bad.any():
        raise EvaluationError(f"{direction}: the scores of {int(bad.sum())} queries contain NaN or inf")
    return dict(zip(query_ids[query_pos].tolist(), gallery_ids[top].tolist(), strict=True))


def _lines(path: str | Path) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"cannot read {path} as a UTF-8 TREC file: {exc}") from None
