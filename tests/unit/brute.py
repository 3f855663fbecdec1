"""Brute force, written apart from the engine: full stable sorts and the metrics' formulas, query by query.

Positives are rebuilt here from the world's raw values (id lists, categories, rating rows), rankings are
``sorted`` over each query's whole gallery (stable: the item given first wins ties), and every metric is a
plain loop over one ranking. Nothing here imports the engine.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from tests.unit.world import World

Score = Callable[[str, int, str, int], float]
KIND = {
    "i2t": ("image", "caption"),
    "t2i": ("caption", "image"),
    "t2t": ("caption", "caption"),
    "i2i": ("image", "image"),
}


def positives(world: World, relation: str, direction: str, zeta: int = 2) -> dict[int, set[int]]:
    """{query id: positive ids} of a relation (queries with none are absent)."""
    if relation in ("coco", "cxc", "eccv"):
        return {q: set(v) for q, v in world.lists[relation][direction].items() if v}
    if relation == "coco+cxc":
        a, b = positives(world, "coco", direction), positives(world, "cxc", direction)
        return {q: a.get(q, set()) | b.get(q, set()) for q in set(a) | set(b)}
    if relation.startswith("pm"):
        z = int(relation[len("pm_zeta") :]) if relation.startswith("pm_zeta") else zeta
        cats = world.categories
        match = {
            q: {g for g in cats if g != q and len(cats[q] ^ cats[g]) <= z} for q in cats
        }  # own image out, unannotated images take no part
        out: dict[int, set[int]] = {}
        if direction == "i2t":
            for q, imgs in match.items():
                caps = {c for c, i in world.caption_image.items() if i in imgs}
                if caps:
                    out[q] = caps
        else:
            for c, img in world.caption_image.items():
                if img in match and match[img]:
                    out[c] = set(match[img])
        return out
    if relation in ("co_captions", "co_captions+sts"):
        out = {
            c: {d for d, j in world.caption_image.items() if j == i and d != c} for c, i in world.caption_image.items()
        }
        if relation == "co_captions+sts":
            for a, b, s in world.ratings["sts"]:
                if s >= 3 and a != b and a in out and b in out:
                    out[a].add(b)
                    out[b].add(a)
        return {q: v for q, v in out.items() if v}
    if relation == "sis":
        out = {}
        for a, b, s in world.ratings["sis"]:
            if s >= 2.5 and a != b:
                out.setdefault(a, set()).add(b)
                out.setdefault(b, set()).add(a)
        return out
    if relation == "fg":
        raise ValueError("fg positives depend on the benchmark: see fg_positives")
    raise ValueError(relation)


def fg_positives(world: World, bench: str, direction: str) -> dict[int, set[int]]:
    fg = world.fg[bench]
    if direction == "t2i":
        return {c: {fg["image_of"][c]} for c in fg["captions"]}
    return {img: {c for c in fg["captions"] if fg["image_of"][c] == img} for img in fg["annotated"]}


def ranking(query: int, gallery: list[int], score: Callable[[int], float]) -> list[int]:
    """The full stable descending sort of the gallery (the query's own item already removed by the caller)."""
    return sorted(gallery, key=lambda g: -score(g))


def recall(ranked: list[int], pos: set[int], k: int) -> float:
    return float(any(g in pos for g in ranked[:k]))


def r_precision(ranked: list[int], pos: set[int], cap: int | None = None) -> float:
    r = len(pos) if cap is None else min(len(pos), cap)
    return sum(g in pos for g in ranked[:r]) / r


def map_at_r(ranked: list[int], pos: set[int]) -> float:
    r, hits, total = len(pos), 0, 0.0
    for i, g in enumerate(ranked[:r], 1):
        if g in pos:
            hits += 1
            total += hits / i
    return total / r


def first_rank(ranked: list[int], pos: set[int]) -> int:
    return next(i for i, g in enumerate(ranked, 1) if g in pos)


def metric_values(
    kind: str, k: int | None, rankings: dict[int, list[int]], pos: dict[int, set[int]], cap: int | None
) -> dict[int, float]:
    """Per-query values of one metric (``medr`` / ``meanr``: the ranks)."""
    out = {}
    for q, ranked in rankings.items():
        if kind == "recall":
            out[q] = recall(ranked, pos[q], k)  # type: ignore[arg-type]
        elif kind == "rprecision":
            out[q] = r_precision(ranked, pos[q])
        elif kind == "capped_rprecision":
            out[q] = r_precision(ranked, pos[q], cap)
        elif kind == "map_at_r":
            out[q] = map_at_r(ranked, pos[q])
        else:
            out[q] = float(first_rank(ranked, pos[q]))
    return out


def aggregate(kind: str, values: dict[int, float]) -> float:
    v = list(values.values())
    return statistics.median(v) if kind == "medr" else sum(v) / len(v)


def percent(fraction: float) -> float:
    """A fraction in percent: the decimal its repr writes times 100, exactly (``Fraction``), rounded once to a
    float; what a published value must equal (``0.07`` -> ``7.0``; ``100 * 0.07`` is ``7.000000000000001``)."""
    return float(Fraction(repr(fraction)) * 100)


def numbers(path: str | Path) -> dict:
    """The numbers of a results file of ``evaluate -o``: every key but ``provenance`` (when the run was)."""
    return {k: v for k, v in json.loads(Path(path).read_text()).items() if k != "provenance"}
