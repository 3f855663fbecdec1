"""Groups of equal scores a scored input's lists leave open (what the tie note needs,
:mod:`eccv_metric.engine.ties`): queries whose every score is equal, and the size of a group of equal scores
past the end of a list: from what the top-k counted in its own blocks (:func:`group_totals`), else by reading
the rows again (:func:`count_tied`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from eccv_metric.core.view import View
from eccv_metric.inputs.base import Relevance
from eccv_metric.inputs.lists import RankedLists
from eccv_metric.kernels.ranks import RankRequest
from eccv_metric.kernels.ranks import count_equal
from eccv_metric.kernels.scorers import BlockScorer


class Scored(Protocol):
    """What :func:`count_tied` reads of a scored input (:class:`~eccv_metric.inputs.scored.ScoredInput`)."""

    def scorer(self, view: View) -> BlockScorer: ...

    def rank_requests(self, view: View, rel: Relevance) -> Iterable[tuple[np.ndarray, RankRequest]]: ...


def all_tied(
    scorer: BlockScorer, rows: np.ndarray, top: np.ndarray, gallery_pos: np.ndarray | None, own: np.ndarray | None
) -> np.ndarray:
    """Positions (into ``rows``) of the queries whose every score is equal (their list is the given order, not
    the model's), for a note. Cheap: only lists that are exactly the first gallery items (own item left out) are
    candidates, found one column at a time, and only their rows are read again."""
    k = top.shape[1]
    if k == 0 or len(rows) == 0:
        return np.zeros(0, np.int64)
    cols = np.arange(scorer.n_gallery) if gallery_pos is None else gallery_pos
    mine = np.full(len(rows), -1, np.int64) if own is None else np.asarray(own, dtype=np.int64)
    lead = np.minimum((mine == 0).astype(np.int64), len(cols) - 1)  # each query's first column but its own
    part = np.flatnonzero(top[:, 0] == cols[lead])  # one column of the lists first: memory stays small
    first = np.arange(k)[None, :]
    first = np.minimum(first + ((mine[part, None] >= 0) & (first >= mine[part, None])), len(cols) - 1)
    part = part[(top[part] == cols[first]).all(axis=1)]
    step = max(1, scorer.rows_per_block(len(cols), False))
    found = []
    for start in range(0, len(part), step):
        chunk = part[start : start + step]
        block = np.array(scorer.block(rows[chunk], gallery_pos), dtype=np.float64)
        has = np.flatnonzero(mine[chunk] >= 0)  # the own entry is never read: it takes a read entry's value
        block[has, mine[chunk][has]] = block[has, lead[chunk][has]]
        found.append(chunk[(block == block[np.arange(len(chunk)), lead[chunk]][:, None]).all(axis=1)])
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def count_tied(
    source: Scored,
    view: View,
    rel: Relevance,
    members: np.ndarray,
    values: np.ndarray,
    excluded: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """For the queries ``rel.query[members]`` (ascending): how many items of their view gallery score ``values``
    (one per query; the own item left out) and how many of those are positives. ``excluded``: scorer gallery
    positions (one row per member, -1 padded) that take no part (a two-stage input's candidates)."""
    n_tied = np.zeros(len(members), np.int64)
    n_positive = np.zeros(len(members), np.int64)
    if not len(members):
        return n_tied, n_positive
    sub = rel.restrict(rel.query[members])
    scorer = source.scorer(view)
    for part, request in source.rank_requests(view, sub):
        ex = None if excluded is None else columns_of(request.gallery_pos, excluded[part])
        n_tied[part], n_positive[part] = count_equal(scorer, request, values[part], ex)
    return n_tied, n_positive


def columns_of(gallery_pos: np.ndarray | None, positions: np.ndarray | None) -> np.ndarray | None:
    """Scorer gallery positions (rows x m, -1 padded) as columns of a request over ``gallery_pos`` (None: every
    position); positions outside it become -1."""
    if positions is None or gallery_pos is None:
        return positions
    at = np.searchsorted(gallery_pos, np.maximum(positions, 0))
    inside = (positions >= 0) & (at < len(gallery_pos))
    inside[inside] = gallery_pos[at[inside]] == positions[inside]
    return np.where(inside, at, -1)


def tie_totals(
    source: Scored,
    view: View,
    rel: Relevance,
    members: np.ndarray,
    lists: RankedLists,
    rows: np.ndarray,
    at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(members, positives) of the group of equal scores holding the item at position ``at`` of each list
    (``lists`` row ``rows``) for the queries ``rel.query[members]`` (ascending), in the whole view gallery: from
    the lists (:func:`group_totals`), else (:func:`count_tied`) the rows read again."""
    n_tied, n_positive, found = group_totals(rel, members, lists, rows, at)
    again = np.flatnonzero(~found)
    if len(again):
        values = lists.scores[rows[again], at[again]]  # type: ignore[index]
        n_tied[again], n_positive[again] = count_tied(source, view, rel, members[again], values)
    return n_tied, n_positive


def group_totals(
    rel: Relevance, members: np.ndarray, lists: RankedLists, rows: np.ndarray, at: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`count_tied` of the group of equal scores holding the item at position ``at`` of each list (``lists``
    row ``rows``) for the queries ``rel.query[members]``, from the lists alone: the group's listed items (equal
    scores are adjacent in a list ranked by score), and the items past the held ones that tie with the last
    (:attr:`RankedLists.past`: counted by the top-k in the blocks it read, or filtered from the whole ranking's
    for a restricted view). Returns (members, positives, found):
    ``found`` False where the lists cannot tell (the group goes on past a list whose ties past it were not
    kept: the caller reads those rows again)."""
    n = len(members)
    n_tied, n_positive, found = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, dtype=bool)
    scores, past = lists.scores, lists.past
    if scores is None or past is None or not n:
        return n_tied, n_positive, found
    width = scores.shape[1]
    held = np.minimum(lists.lengths[rows], width)
    equal = (scores[rows] == scores[rows, at][:, None]) & (np.arange(width)[None, :] < held[:, None])
    goes_on = equal[np.arange(n), np.maximum(held - 1, 0)] & (held > 0) & (past.count[rows] != 0)
    found = ~goes_on | past.kept()[rows]
    n_tied = equal.sum(axis=1) + np.where(goes_on & found, past.count[rows], 0)
    # the group's items, listed and past, as (list, item) pairs: their positives in one lookup
    r, p = np.nonzero(equal & found[:, None])
    owner, items = past.pairs(rows[goes_on & found])
    owner = np.flatnonzero(goes_on & found)[owner]
    owner, items = np.concatenate([r, owner]), np.concatenate([lists.items[rows[r], p], items])
    hits = rel.lookup(rel.query[members[owner]], items)
    n_positive = np.bincount(owner[hits], minlength=n).astype(np.int64)
    return n_tied, n_positive, found
    width = scores.shape[1]
    held = np.minimum(lists.lengths[rows], width)
    equal = (scores[rows] == scores[rows, at][:, None]) & (np.arange(width)[None, :] < held[:, None])
    goes_on = equal[:, -1] & (lists.lengths[rows] > width) if width else np.zeros(n, dtype=bool)
    found = ~goes_on | past.kept()[rows]
    more = np.where(goes_on & found, past.count[rows], 0)
    n_tied = equal.sum(axis=1) + more
    # the group's items, listed and past, as (list, item) pairs: their positives in one lookup
    r, p = np.nonzero(equal & found[:, None])
    first = past.start[rows]
    owner = np.repeat(np.arange(n), more)
    items = past.items[np.repeat(first, more) + np.arange(len(owner)) - np.repeat(np.cumsum(more) - more, more)]
    owner, items = np.concatenate([r, owner]), np.concatenate([lists.items[rows[r], p], items])
    hits = rel.lookup(rel.query[members[owner]], items)
    n_positive = np.bincount(owner[hits], minlength=n).astype(np.int64)
    return n_tied, n_positive, found
