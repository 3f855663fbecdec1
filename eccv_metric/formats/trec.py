"""TREC qrels and run files (trec_eval, pytrec_eval, ranx) for every benchmark and direction: the formats and
their ids, and runs (qrels are written and read in :mod:`eccv_metric.formats.qrels`, a run's lines read into
columns in :mod:`eccv_metric.formats.trec_lines`).

Ids: images and captions live in different id spaces, so TREC / BEIR ids carry
their modality: ``image-391895`` (a COCO image id), ``caption-770337`` (a COCO
caption id); ASCII decimal digits only. The query's and the document's
modalities give the direction (``image-*`` queries ranking ``caption-*``
documents are i2t; ``caption-*`` ranking ``caption-*`` is t2t).

- qrels: ``<query> 0 <doc> <relevance>``, one line per positive pair
  (relevance 1, or a graded CxC rating where asked; ids outside the test split
  that the ground truth lists, such as the two ECCV captions outside the
  25,000, are kept: they count in R).
- runs: ``<query> Q0 <doc> <rank> <score> <tag>``, rank 1-based. trec_eval,
  pytrec_eval and MTEB order a run by score, ties by document id *descending
  as strings* (``caption-9`` before ``caption-10``), never by rank; this
  project keeps the given order among ties (``stable``). Two tie rules, named
  ``ties``:

  - ``stable`` (default): exported runs carry strictly decreasing scores
    ``depth - rank + 1`` (every tool then sees exactly our ranking); imported
    runs are ordered by score descending, then rank (two lines of one query
    with equal score and rank are ambiguous and refused).
  - ``trec_eval``: exported runs from scores carry the real scores, each list
    ordered (and cut at ``depth``) as trec_eval orders it; imported runs are
    ordered by score descending, then document id descending as strings
    (ranks ignored), which is what trec_eval, pytrec_eval and MTEB score.

  Under either rule a run is ranked by score, highest first: a run whose scores rise with rank (a distance
  written as a score) is scored in reverse, as those tools score it, with a note when most of a direction's
  queries rise (:func:`rising_notes`; :func:`read_run_rankings` carries it into every result).

- CxC grades: the ``cxc`` positives (SITS >= 3) are binary like every
  benchmark's; ``cxc_graded`` gives each pair its SITS rating rounded half up
  (3, 4 or 5) as the relevance (:func:`eccv_metric.formats.qrels.cxc_grades`), the same in the dataset's
  ``cxc_graded-*-qrels`` configs.

Metric names across tools: COCO R@K = trec_eval ``success_K`` = ranx / MTEB
``hit_rate@K`` (not MTEB's ``recall_at_k``, which is IR recall); R-Precision =
``Rprec`` / ``r-precision``; mAP@R = ``map_cut_R`` / ranx ``map@R`` with each
query's own cut R (both divide by the number of positives).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import atomic_open
from eccv_metric.core.options import TIES as TIES
from eccv_metric.core.options import check_ties
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import View
from eccv_metric.formats.trec_lines import ITEM_KIND_CODES
from eccv_metric.formats.trec_lines import parse_trec_id
from eccv_metric.formats.trec_lines import read_columns
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix

DIRECTION_OF = {kinds: direction for direction, kinds in DIRECTION_KINDS.items()}


def trec_id(kind: str, ident: int) -> str:
    """``image-391895`` / ``caption-770337``."""
    return f"{kind}-{int(ident)}"


def run_lines(rankings: Mapping[int, Sequence[int]], direction: str, tag: str = "eccv_caption") -> Iterator[str]:
    """Run lines of ``{query id: [ranked ids]}`` with strictly decreasing scores (see the module doc)."""
    check_tag(tag)
    q, g = DIRECTION_KINDS[direction]
    for query, ranked in rankings.items():
        depth = len(ranked)
        for r, doc in enumerate(ranked, 1):
            yield f"{q}-{query} Q0 {g}-{doc} {r} {depth - r + 1} {tag}"


def check_lists(rankings: Mapping[int, Sequence[int]], gt: GroundTruth, direction: str, where: str) -> None:
    """Refuse lists that ``evaluate`` refuses, by its own code path (:meth:`Rankings.lists` on the test split):
    ids are integers (no float, None, bool or nested list) of test-split queries and gallery items, each query
    once and each item at most once per list. ``where`` (the file) starts the error line."""
    try:
        Rankings(**{direction: rankings}).lists(View(direction, gt))
    except EvaluationError as exc:
        raise EvaluationError(f"{where}: {exc}") from None


def check_tag(tag: str) -> None:
    if not tag or any(c.isspace() for c in tag):
        raise EvaluationError(f"run tag must be one word, not {tag!r}")


def write_lines(path: str | Path, lines: Iterable[str]) -> int:
    """Write lines (streamed, atomically: never half a file); returns how many were written."""
    count = 0
    with atomic_open(path, "w") as fout:
        for line in lines:
            fout.write(line + "\n")
            count += 1
    return count


def read_run(path: str | Path, ties: str = "stable") -> dict[str, dict[int, list[int]]]:
    """A TREC run -> ``{direction: {query id: [ranked ids]}}`` (the official rankings format).

    A query's documents of one modality form one list (an image query may rank captions, i2t, and
    images, i2i, in the same file); each list is ordered by score descending, then rank (``ties="stable"``)
    or then document id descending as strings, as trec_eval orders it (``ties="trec_eval"``).
    """
    out: dict[str, dict[int, list[int]]] = {}
    for direction, (query_ids, flat, lengths) in read_run_arrays(path, ties).items():
        ends = np.cumsum(lengths)
        out[direction] = {
            q: flat[e - n : e].tolist() for q, e, n in zip(query_ids.tolist(), ends, lengths, strict=True)
        }
    return out


class RunRankings(Rankings):
    """Rankings read from a TREC run (:func:`read_run_rankings`), with the notes of its reading
    (:func:`rising_notes`): every result scored on them carries these notes."""

    def __init__(self, path: str | Path, notes: Sequence[str], **directions: object):
        super().__init__(**directions)
        self.path = str(path)
        self.notes = tuple(notes)


def read_run_rankings(path: str | Path, ties: str = "stable") -> RunRankings:
    """A TREC run as an input: :func:`read_run_arrays`' lists, and a note per direction whose scores rise with
    rank in most queries (:func:`rising_notes`). What ``evaluate --run`` and the Space read."""
    arrays, notes = read_run_parts(path, ties)
    return RunRankings(path, notes, **arrays)


def read_run_arrays(path: str | Path, ties: str = "stable") -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A TREC run -> ``{direction: (query ids, ranked ids of all lists concatenated, list lengths)}``
    (:func:`read_run_parts` without its notes)."""
    return read_run_parts(path, ties)[0]


RISING_SHARE = 0.5  # a direction is noted when more than this share of its queries (those that tell) rise


def rising_notes(path: str | Path, rising: Mapping[str, tuple[int, int]]) -> list[str]:
    """A note per direction whose scores rise with rank in most queries: ``rising[direction]`` = (queries whose
    score at their first rank is below the one at their last, queries whose two differ: the others tell
    nothing). trec_eval orders a run by score, highest first, whatever its ranks: such lists are scored in
    reverse, as trec_eval, pytrec_eval and MTEB score them (the rule stays); the note says why the numbers are
    low and what to do. "Most": more than :data:`RISING_SHARE` of the queries that tell."""
    notes = []
    for direction, (up, told) in rising.items():
        if told and up > RISING_SHARE * told:
            notes.append(
                f"{direction}: the scores of {path} rise with rank in {up:,} of {told:,} queries (rank 1 holds the "
                "lowest score): a run is ranked by score, highest first (trec_eval's rule, as pytrec_eval and MTEB), "
                "so these lists were scored in reverse; if the scores are distances, write similarities "
                "(negate them) and read the run again"
            )
    return notes


def read_run_parts(
    path: str | Path, ties: str = "stable"
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], list[str]]:
    """A TREC run -> ``({direction: (query ids, ranked ids of all lists concatenated, list lengths)}, notes)``;
    the notes: :func:`rising_notes`.

    Each list is ordered by score descending, then rank (``ties="stable"``: two documents of one query
    with equal score and rank are ambiguous and refused) or then document id descending as strings, as
    trec_eval, pytrec_eval and MTEB order them (``ties="trec_eval"``, the rank column ignored).

    The arrays form of :class:`~eccv_metric.inputs.given.Rankings` (no Python list per query). Lines
    are read into typed columns (~41 bytes a line, :func:`~eccv_metric.formats.trec_lines.read_columns`: in
    chunks, vectorised, or one line at a time for the refused files and their errors), never held as text or
    Python objects: peak memory is a small fraction of the file beyond these columns. Queries in order of first
    appearance.
    """
    check_ties(ties)
    col, line, queries = read_columns(path)
    if not len(line):
        raise EvaluationError(f"{path}: no run lines")
    group = col["query"].astype(np.int64) * 2 + col["kind"]
    descending = -col["score"]
    if ties == "trec_eval":  # score descending, then the document id as a string descending (trec_eval's order)
        order = trec_eval_order(group, descending, col["doc"], line)
    elif in_order(group, descending, col["rank"], col["doc"], line):
        order = np.arange(len(line))  # the file is in this order already (an exported run): no sort
    else:
        order = np.lexsort((line, col["doc"], col["rank"], descending, group))
    del descending
    ordered = group[order]  # sorted: each list's lines are one run of equal groups (np.unique would sort again)
    same = ordered[1:] == ordered[:-1]
    for name in ("score", "rank") if ties == "stable" else ():  # one column in this order at a time (memory)
        column = col[name][order]
        same &= column[1:] == column[:-1]
        del column
    if ties == "trec_eval":
        same[:] = False  # a repeated document is refused when scored
    if same.any():
        k = int(np.argmax(same)) + 1
        token = next(t for t, code in queries.items() if code == col["query"][order[k]])
        raise EvaluationError(f"{path}:{line[order[k]]}: query {token} has two documents with the same score and rank")
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    groups, lengths = ordered[first], np.diff(np.r_[first, len(ordered)])
    del ordered
    appear = np.argsort(np.minimum.reduceat(line[order], first), kind="stable")  # first appearance in the file
    by_rank = (  # each list in its rank column's order: the same groups
        np.arange(len(line)) if in_order(group, col["rank"], line) else np.lexsort((line, col["rank"], group))
    )
    low, high = col["score"][by_rank[first]], col["score"][by_rank[first + lengths - 1]]
    tokens = list(queries)
    out: dict[str, list[tuple[int, int, int]]] = {}
    rising: dict[str, tuple[int, int]] = {}
    for g in appear.tolist():
        kind, qid = parse_trec_id(tokens[int(groups[g]) // 2], f"{path}: query")
        direction = DIRECTION_OF[(kind, ITEM_KIND_CODES[int(groups[g]) % 2])]
        out.setdefault(direction, []).append((qid, int(first[g]), int(lengths[g])))
        up, told = rising.get(direction, (0, 0))
        rising[direction] = (up + int(low[g] < high[g]), told + int(low[g] != high[g]))
    docs = col["doc"][order]
    del col, line, group, order, by_rank  # the columns are read: memory for the lists alone
    arrays = {}
    for direction, parts in out.items():
        qids, starts, counts = (np.asarray(v, dtype=np.int64) for v in zip(*parts, strict=True))
        at = np.repeat(starts - (np.cumsum(counts) - counts), counts)  # each line's place in docs, built in place
        at += np.arange(len(at))
        arrays[direction] = (qids, docs[at], counts)
        del at
    found = {d: arrays[d] for d in DIRECTION_KINDS if d in arrays}
    return found, rising_notes(path, {d: rising[d] for d in found})


def in_order(*keys: np.ndarray) -> bool:
    """Whether the rows are in the ascending order of ``keys`` (the most significant first) already: then
    ``np.lexsort(keys[::-1])`` is ``0, 1, 2, ...`` (a stable sort keeps rows equal in every key in place). One
    pass per key, no sort."""
    decided = np.zeros(max(len(keys[0]) - 1, 0), dtype=bool)  # pairs of rows an earlier key put in order
    for key in keys:
        before, after = key[:-1], key[1:]
        if (~decided & (before > after)).any():
            return False
        decided |= before < after
    return True


def trec_eval_order(group: np.ndarray, descending: np.ndarray, doc: np.ndarray, line: np.ndarray) -> np.ndarray:
    """The lines of each list by score descending, then document id descending as strings, then line
    (``line``: ascending, the rows' order); without a sort where the file is in that order (a run exported so)."""
    if in_order(group, descending):  # rows of equal score in one list: their ids as strings must descend
        tied = np.flatnonzero((group[1:] == group[:-1]) & (descending[1:] == descending[:-1]))
        if (doc[tied].astype(str) >= doc[tied + 1].astype(str)).all():
            return np.arange(len(line))
    as_text = np.unique(doc.astype(str), return_inverse=True)[1].ravel()
    return np.lexsort((line, -as_text, descending, group))


def run_from_scores(
    source: ScoreMatrix, gt: GroundTruth, direction: str, depth: int, tag: str = "eccv_caption", ties: str = "stable"
) -> Iterator[str]:
    """Run lines of the top-``depth`` items of every test-split query of a score matrix, streamed.

    ``ties="stable"``: the metrics' ranking (stable descending: the item given
    first wins ties), written with scores ``depth - rank + 1``. ``ties="trec_eval"``:
    each list as trec_eval / MTEB order it (score descending, then document id
    descending as strings), cut at ``depth`` by that order, with the given
    scores. Extra gallery ids are kept in the lists.
    """
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise EvaluationError(f"depth must be a positive integer, not {depth!r}")
    check_tag(tag)
    check_ties(ties)
    source.check_values()  # NaN / inf scores: refused, as evaluate refuses them
    if direction not in ("i2t", "t2i") or source.scores is None:
        raise EvaluationError(
            f"a run from scores needs the image x caption scores and direction i2t or t2i, not {direction}"
        )
    q, g = DIRECTION_KINDS[direction]
    if ties == "trec_eval":
        source = _trec_ordered(source, gt, g)
    view = View(direction, gt)
    gallery_ids = source.given_ids(gt, g)
    query_rows = source.mapping(gt, q)[1]
    n_queries = len(gt.index(q))
    step = max(1, (1 << 22) // max(1, min(int(depth), len(gallery_ids))))  # bounded memory whatever the depth
    for start in range(0, n_queries, step):
        queries = np.arange(start, min(start + step, n_queries))
        top = source.top_positions(view, int(depth), queries)
        width = top.shape[1]
        if ties == "stable":
            scores = [[str(width - r) for r in range(width)]] * len(queries)
        else:
            rows = query_rows[queries][:, None]
            values = source.scores[rows, top] if direction == "i2t" else source.scores[top, rows]  # type: ignore[index]
            scores = [[repr(v) for v in row] for row in values.astype(np.float64).tolist()]
        for query, row, row_scores in zip(
            gt.index(q).ids[queries].tolist(), gallery_ids[top].tolist(), scores, strict=True
        ):
            for r, (doc, score) in enumerate(zip(row, row_scores, strict=True)):
                yield f"{q}-{query} Q0 {g}-{doc} {r + 1} {score} {tag}"


def _trec_ordered(source: ScoreMatrix, gt: GroundTruth, gallery_kind: str) -> ScoreMatrix:
    """The same scores with the gallery's rows / columns in descending id-string order: a stable descending sort
    of it is trec_eval's order (score, then document id descending as strings). Copies the matrix once."""
    image_ids, caption_ids = source.given_ids(gt, "image"), source.given_ids(gt, "caption")
    ids = image_ids if gallery_kind == "image" else caption_ids
    order = np.argsort(ids.astype(str), kind="stable")[::-1]
    if gallery_kind == "image":
        return ScoreMatrix(source.scores[order], image_ids[order], caption_ids)  # type: ignore[index]
    return ScoreMatrix(source.scores[:, order], image_ids, caption_ids[order])  # type: ignore[index]
