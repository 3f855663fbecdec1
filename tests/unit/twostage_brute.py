"""Two-stage rankings by brute force, written apart from the engine: each query's whole ranking built with Python's
``sorted`` (candidates in the view by final score, then the others by first-stage score; equal keys in the
gallery's given order), then every metric read off it with the brute force of ``tests/unit/brute.py``.

Also a brute force of *decided by tie order* (``eccv_metric.engine.ties``): a value is decided by the tie order
when the two extreme orders of equal scores (positives first in each group of equal scores, positives last)
give different values, and of *decided by the first stage* (a rank past the query's candidates in the view; a
cut past them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tests.unit import brute
from tests.unit.world import World

KIND = {"i2t": ("image", "caption"), "t2i": ("caption", "image"), "t2t": ("caption", "caption")}
# (metric, relation, kind, K, restriction) as the world's registry names them; restriction "fold" / "self"
METRICS = [
    ("coco_5k_r1", "coco", "recall", 1, None),
    ("coco_5k_r5", "coco", "recall", 5, None),
    ("coco_5k_r10", "coco", "recall", 10, None),
    ("coco_5k_medr", "coco", "medr", None, None),
    ("coco_5k_meanr", "coco", "meanr", None, None),
    ("coco_5k_map_at_r", "coco", "map_at_r", None, None),
    ("coco_5k_rprecision", "coco", "rprecision", None, None),
    ("coco_1k_r1", "coco", "recall", 1, "fold"),
    ("coco_1k_r5", "coco", "recall", 5, "fold"),
    ("coco_1k_medr", "coco", "medr", None, "fold"),
    ("coco_1k_map_at_r", "coco", "map_at_r", None, "fold"),
    ("eccv_map_at_r", "eccv", "map_at_r", None, None),
    ("eccv_rprecision", "eccv", "rprecision", None, None),
    ("eccv_r1", "eccv", "recall", 1, None),
    ("pmrp", "pm", "capped_rprecision", None, None),
    ("pm_rprecision", "pm", "rprecision", None, None),
    ("pm_meanr", "pm", "meanr", None, None),
    ("cxc_t2t_r1", "co_captions+sts", "recall", 1, "self"),
    ("cxc_t2t_r5", "co_captions+sts", "recall", 5, "self"),
    ("cxc_t2t_map_at_r", "co_captions+sts", "map_at_r", None, "self"),
    ("cxc_t2t_medr", "co_captions+sts", "medr", None, "self"),
]


@dataclass
class Case:
    """A first stage over the world (its rows, given order, vectors) and each direction's second stage."""

    image_rows: list[int]
    caption_rows: list[int]
    vectors: dict[tuple[str, int], np.ndarray]
    reranked: dict[str, dict[int, tuple[list[int], list[float]]]]  # direction -> query -> (candidates, finals)
    ties: str = "stable"

    def rows(self, kind: str) -> list[int]:
        return self.image_rows if kind == "image" else self.caption_rows

    def first(self, q_kind: str, q: int, g_kind: str, g: int) -> float:
        return float(self.vectors[(q_kind, q)] @ self.vectors[(g_kind, g)])

    def given_order(self, kind: str) -> list[int]:
        """The gallery's order of equal scores: the rows as given, or trec_eval's (id descending as strings)."""
        rows = self.rows(kind)
        return sorted(rows, key=str, reverse=True) if self.ties == "trec_eval" else list(rows)

    def as_reranked(self) -> dict[str, object]:
        """Each direction's second stage as the engine takes it (the only engine import here)."""
        from eccv_metric import Reranked

        out = {}
        for direction, by_query in self.reranked.items():
            queries = list(by_query)
            cands = np.array([by_query[q][0] for q in queries], dtype=np.int64)
            finals = np.array([by_query[q][1] for q in queries], dtype=np.float64)
            out[direction] = Reranked(np.array(queries), cands, finals)
        return out


def make_case(world: World, seed: int, ks: dict[str, int], ties: str = "stable", extras: int = 0) -> Case:
    """Integer first-stage vectors (2 dims in -2..2: most scores tie), captions given out of id order with
    ``extras`` distractor captions; each query's candidates: the first stage's top k for half of the queries, k
    random gallery rows (the query's own caption among them, t2t) for the others; integer final scores in -2..2."""
    rng = np.random.default_rng(seed)
    caption_rows = [world.caption_ids[k] for k in rng.permutation(len(world.caption_ids))]
    caption_rows += [900_000 + 7 * k for k in range(extras)]
    vectors = {("image", i): rng.integers(-2, 3, 2).astype(np.float64) for i in world.image_ids}
    vectors |= {("caption", c): rng.integers(-2, 3, 2).astype(np.float64) for c in caption_rows}
    case = Case(list(world.image_ids), caption_rows, vectors, {}, ties)
    for direction, k in ks.items():
        q_kind, g_kind = KIND[direction]
        gallery = case.rows(g_kind)
        by_query = {}
        for n, q in enumerate(world.image_ids if q_kind == "image" else world.caption_ids):
            if n % 2:
                order = sorted(gallery, key=lambda g, q=q: -case.first(q_kind, q, g_kind, g))  # stable: given order
                cands = order[:k]
            else:
                cands = [gallery[j] for j in rng.choice(len(gallery), k, replace=False)]
                if direction == "t2t" and q not in cands:
                    cands[0] = q  # the query's own caption among its candidates: outside its view
            by_query[q] = (cands, rng.integers(-2, 3, k).astype(float).tolist())
        case.reranked[direction] = by_query
    return case


def view_gallery(world: World, case: Case, direction: str, q: int, restriction: str | None) -> list[int]:
    """The items query ``q`` is ranked against, in the gallery's order of equal scores."""
    q_kind, g_kind = KIND[direction]
    gallery = case.given_order(g_kind)
    if restriction == "self":
        gallery = [g for g in gallery if g != q]
    if restriction == "fold":
        known = set(world.image_ids if g_kind == "image" else world.caption_ids)
        gallery = [g for g in gallery if g in known and world.fold(g_kind, g) == world.fold(q_kind, q)]
    return gallery


def two_stage(
    gallery: list[int], cands: list[int], finals: list[float], first: Callable[[int], float], positive=None, last=False
) -> list[int]:
    """The rule: the candidates in the gallery by final score, then every other item by first-stage score; equal
    keys in the gallery's order. ``positive`` / ``last``: among equal keys, positives first (``last``: last)."""
    index = {g: i for i, g in enumerate(gallery)}
    final = dict(zip(cands, finals, strict=True))

    def flag(g: int) -> int:
        if positive is None:
            return 0
        return int(g in positive) if last else int(g not in positive)

    head = sorted((c for c in cands if c in index), key=lambda c: (-final[c], flag(c), index[c]))
    rest = sorted((g for g in gallery if g not in final), key=lambda g: (-first(g), flag(g), index[g]))
    return head + rest


def expected(world: World, case: Case, metric: tuple, zeta: int = 2, cap: int | None = 50) -> dict[str, dict]:
    """Per direction: {query id: value} of one metric by brute force, and the queries decided by tie order and
    by the first stage."""
    name, relation, kind, k, restriction = metric
    directions = ("t2t",) if restriction == "self" else ("i2t", "t2i")
    out = {}
    for direction in directions:
        if direction not in case.reranked:
            continue
        q_kind, g_kind = KIND[direction]
        pos = brute.positives(world, relation, direction, zeta)
        values, tied, tail = {}, set(), set()
        for q, positives in pos.items():
            cands, finals = case.reranked[direction][q]
            gallery = view_gallery(world, case, direction, q, restriction)

            def first(g: int, q: int = q, q_kind: str = q_kind, g_kind: str = g_kind) -> float:
                return case.first(q_kind, q, g_kind, g)

            ranked = two_stage(gallery, cands, finals, first)
            values.update(brute.metric_values(kind, k, {q: ranked}, {q: positives}, cap))
            best = brute.metric_values(kind, k, {q: two_stage(gallery, cands, finals, first, positives)}, pos, cap)
            worst = brute.metric_values(
                kind, k, {q: two_stage(gallery, cands, finals, first, positives, True)}, pos, cap
            )
            if best[q] != worst[q]:
                tied.add(q)
            m = len([c for c in cands if c in set(gallery)])
            if past_candidates(kind, k, cap, ranked, positives, m):
                tail.add(q)
        out[direction] = {"values": values, "tied": tied, "tail": tail}
    return out


def past_candidates(kind: str, k: int | None, cap: int | None, ranked: list[int], positives: set, m: int) -> bool:
    """Whether the value reads the first stage's order past the ``m`` candidates (eccv_metric.engine.ties)."""
    rank = brute.first_rank(ranked, positives)
    r = len(positives) if kind != "capped_rprecision" or cap is None else min(len(positives), cap)
    cut = min(r, len(ranked))
    if kind in ("medr", "meanr"):
        return rank > m
    if kind == "recall":
        return min(k, len(ranked)) > m and rank > m  # type: ignore[type-var]
    return cut > m
