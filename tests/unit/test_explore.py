"""A query's view and the query sets (eccv_metric.explore) against the brute force, on the synthetic world.

Every query of each case: its top items are the first items of a full stable sort of its gallery (tests/unit/
brute.py, through test_matrix's Setup: shuffled rows, extra distractor ids, tie-heavy integer scores); each
item's marks are membership in the positives rebuilt from the world's raw lists, categories and ratings; each
pair's CxC rating is the rating row's; each per-query value is the brute force's. Each query set's queries are a
filter written here over the brute force's rankings.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import EvaluationError
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.explore import query_sets
from eccv_metric.explore import query_view
from eccv_metric.explore import table_of
from eccv_metric.explore.sets import better
from eccv_metric.explore.sets import false_negatives
from eccv_metric.explore.sets import sample
from eccv_metric.explore.sets import worst
from eccv_metric.explore.view import view_of
from tests.unit import brute
from tests.unit.test_matrix import EXTRA_CAPTIONS
from tests.unit.test_matrix import EXTRA_IMAGES
from tests.unit.test_matrix import Setup
from tests.unit.test_matrix import expected

CASES = [("eccv", "i2t"), ("eccv", "t2i"), ("coco_1k", "t2i"), ("cxc_t2t", "t2t"), ("mscoco_fg", "i2t")]
# the benchmarks marking each case's view: the browsed one, then those ranking the same gallery
MARKED = {"eccv": ["eccv", "coco_5k", "cxc", "pm"], "coco_1k": ["coco_1k"], "cxc_t2t": ["cxc_t2t", "coco_t2t"],
          "mscoco_fg": ["mscoco_fg"]}  # fmt: skip
RELATION = {"coco_5k": "coco", "eccv": "eccv", "cxc": "cxc", "pm": "pm", "coco_1k": "coco", "coco_t2t": "co_captions",
            "cxc_t2t": "co_captions+sts"}  # fmt: skip


def gallery_of(world, setup: Setup, bench: str, direction: str, query: int) -> list[int]:
    """The items the query is ranked against, in the input's order (written apart from the engine's views)."""
    task = REGISTRY.get(bench).task(direction)
    qk, gk = brute.KIND[direction]
    gallery = [g for g in setup.order(gk) if not (task.exclude_self and g == query)]
    if task.restriction == "coco_1k_folds":
        gallery = [g for g in gallery if g not in EXTRA_IMAGES + EXTRA_CAPTIONS]
        gallery = [g for g in gallery if world.fold(gk, g) == world.fold(qk, query)]
    return gallery


def ranked(world, setup: Setup, bench: str, direction: str, query: int) -> list[int]:
    qk, gk = brute.KIND[direction]
    gallery = gallery_of(world, setup, bench, direction, query)
    return brute.ranking(query, gallery, lambda g: setup.score(qk, query, gk, g))


def positives_of(world, name: str, direction: str) -> dict[int, set[int]]:
    if name in ("mscoco_fg", "flickr30k_fg"):
        return brute.fg_positives(world, name, direction)
    return brute.positives(world, RELATION[name], direction)


def rating_of(world, direction: str, query: int, item: int) -> float | None:
    if direction in ("i2t", "t2i"):
        caption, image = (query, item) if direction == "t2i" else (item, query)
        return next((s for c, i, s in world.ratings["sits"] if (c, i) == (caption, image)), None)
    rows = world.ratings["sts" if direction == "t2t" else "sis"]
    found = next((s for a, b, s in rows if (a, b) == (query, item)), None)
    return found if found is not None else next((s for a, b, s in rows if (a, b) == (item, query)), None)


def brute_values(world, setup: Setup, metric: str, direction: str) -> dict[int, float]:
    bench, kind = metric_info(metric)
    match = re.fullmatch(r".*_r(\d+)", metric)
    return expected(world, setup, bench, direction, kind.key, int(match.group(1)) if match else None)


@pytest.mark.parametrize("kind", ["dicts", "scores", "embeddings"])
@pytest.mark.parametrize("bench,direction", CASES)
def test_every_query_view_equals_the_brute_force(world, res, tmp_path, kind, bench, direction):
    setup = Setup(world, REGISTRY.get(bench).collection, kind)
    table = table_of(setup.make_input(tmp_path), bench, direction, res)
    own = positives_of(world, bench, direction)
    assert sorted(table.query_ids.tolist()) == sorted(own)  # every query of the benchmark direction, nothing else
    marked = [m.name for m in table.members if m.available]
    assert marked == MARKED[bench] and not table.notes
    relations = {name: positives_of(world, name, direction) for name in marked}
    values = {m: brute_values(world, setup, m, direction) for m in table.values}
    for row, query in enumerate(table.query_ids.tolist()):
        view = view_of(table, row)
        top = ranked(world, setup, bench, direction, query)[:10]
        assert [item.id for item in view.items] == top, (query, kind)
        for item in view.items:
            assert item.inside == (item.id not in EXTRA_IMAGES + EXTRA_CAPTIONS)
            assert item.marks == {n: item.id in relations[n].get(query, set()) for n in marked}
            if table.ratings is not None:
                assert item.rating == rating_of(world, direction, query, item.id)
            if item.score is not None:
                qk, gk = brute.KIND[direction]
                assert item.score == setup.score(qk, query, gk, item.id)
        assert set(view.queries_of) == {n for n in marked if query in relations[n]}
        assert view.n_positives == {n: len(relations[n].get(query, ())) for n in marked}
        assert view.values == {m: v[query] for m, v in values.items() if query in v}


def test_query_sets_are_the_filters_written_apart(world, res, tmp_path):
    """COCO's false negatives, A right and B wrong and the reverse, the worst, a sample: the queries each holds
    are a filter over the brute force's rankings (top item in or out of each relation's positives)."""
    a_setup, b_setup = Setup(world, "coco_5k", "embeddings", seed=3), Setup(world, "coco_5k", "scores", seed=8)
    a = table_of(a_setup.make_input(tmp_path), "eccv", "t2i", res)
    b = table_of(b_setup.make_input(tmp_path), "eccv", "t2i", res)
    queries = a.query_ids.tolist()
    first = {s: {q: ranked(world, s, "eccv", "t2i", q)[0] for q in queries} for s in (a_setup, b_setup)}
    coco = positives_of(world, "coco_5k", "t2i")
    for name in ("eccv", "cxc", "pm"):
        pos = positives_of(world, name, "t2i")
        want = [q for q in queries if q in pos and first[a_setup][q] not in coco[q] and first[a_setup][q] in pos[q]]
        found = false_negatives(a, name)
        assert found.query_ids.tolist() == want and found.count == len(want)
    eccv = positives_of(world, "eccv", "t2i")
    a_wins = [q for q in queries if first[a_setup][q] in eccv[q] and first[b_setup][q] not in eccv[q]]
    b_wins = [q for q in queries if first[b_setup][q] in eccv[q] and first[a_setup][q] not in eccv[q]]
    assert better(a, b).query_ids.tolist() == a_wins and better(b, a).query_ids.tolist() == b_wins
    sets = {s.name: s for s in query_sets(a, b, n=5, seed=4)}
    assert sets["a_better"].query_ids.tolist() == a_wins and sets["b_better"].query_ids.tolist() == b_wins
    map_r = brute_values(world, a_setup, "eccv_map_at_r", "t2i")
    by_value = sorted(queries, key=lambda q: map_r[q])  # stable: ties in the benchmark's order
    assert worst(a, None, 5).query_ids.tolist() == by_value[:5] and sets["worst"].count == 5
    rows = np.sort(np.random.default_rng(4).choice(len(queries), 5, replace=False))
    assert sample(a, 5, 4).query_ids.tolist() == [queries[r] for r in rows] == sets["sample"].query_ids.tolist()


def test_bad_queries_and_sets_are_one_line(world, res, tmp_path):
    source = Setup(world, "coco_5k", "embeddings").make_input(tmp_path)
    with pytest.raises(EvaluationError, match=r"query 5: not an image id of eccv .*e\.g\. 100"):
        query_view(source, "eccv", "i2t", 5, resources=res)
    t2i = table_of(source, "eccv", "t2i", res)
    not_eccv = next(c for c in world.caption_ids if c not in t2i.query_ids)
    with pytest.raises(EvaluationError, match=f"query {not_eccv}: a caption of the collection but not a t2i query"):
        query_view(source, "eccv", "t2i", not_eccv, resources=res)
    refused = [(("cxc_sts", "t2t"), "a correlation"), (("pm_pcme", "i2t"), "averages several relations"),
               (("eccv", "t2t"), "eccv has no t2t direction"), (("nope", "i2t"), "unknown benchmark")]  # fmt: skip
    for bad, said in refused:
        with pytest.raises(EvaluationError, match=said):
            table_of(source, *bad, res)
    with pytest.raises(EvaluationError, match="k: the items shown per query must be a whole number in 1..100"):
        table_of(source, "eccv", "i2t", res, 0)
    with pytest.raises(EvaluationError, match="COCO's false negatives need the COCO pairs"):
        false_negatives(table_of(source, "coco_1k", "i2t", res), "eccv")
    with pytest.raises(EvaluationError, match="compare two runs on one benchmark direction"):
        better(t2i, table_of(source, "eccv", "i2t", res))
    with pytest.raises(EvaluationError, match="n must be a whole number >= 1"):
        sample(t2i, 0)


def test_a_rank_metric_worst_is_its_highest(world, res, tmp_path):
    setup = Setup(world, "coco_5k", "embeddings")
    table = table_of(setup.make_input(tmp_path), "eccv", "i2t", res)
    ranks = {q: float(brute.first_rank(ranked(world, setup, "eccv", "i2t", q), p))
             for q, p in positives_of(world, "coco_5k", "i2t").items()}  # fmt: skip
    table.values["coco_5k_meanr"] = np.array([ranks[q] for q in table.query_ids.tolist()])  # a metric a run has
    order = sorted(table.query_ids.tolist(), key=lambda q: -ranks[q])
    assert worst(table, "coco_5k_meanr", 3).query_ids.tolist() == order[:3]


def test_short_and_partial_ranked_lists(world, res):
    """Ranked lists of some queries only, some shorter than k: the view shows what the lists hold, the sets hold
    the queries given, a metric the lists cannot decide is left out with its reason."""
    from eccv_metric import Rankings

    images = world.image_ids[:6]
    lists = {q: [c for c in world.caption_ids if c % 7 == q % 7][: 3 + k] for k, q in enumerate(images)}
    table = table_of(Rankings(i2t=lists), "coco_5k", "i2t", res)
    assert table.query_ids.tolist() == images
    for row, query in enumerate(images):
        view = view_of(table, row)
        assert [item.id for item in view.items] == lists[query][:10] and view.list_length == len(lists[query])
        assert all(item.score is None for item in view.items)
    assert "coco_5k_r1" in table.values and "coco_5k_r10" not in table.values  # 4 items cannot decide R@10
    assert any(n.startswith("coco_5k_r10: no per-query values (") and "too short" in n for n in table.notes)
