"""Queries ranked in groups of similar depth (eccv_metric.engine.buckets) give what one list of every query gives:
the same per-query values, bit for bit, and the same notes, on tie-heavy integer scores, for every depth kind and
view; uncapped PMRP equals a brute force; an error in a group is the one list's error, every query named."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import ScoreMatrix
from eccv_metric import TwoStage
from eccv_metric.engine import buckets
from eccv_metric.engine import depth as engine
from eccv_metric.inputs import tied
from eccv_metric.inputs.scored import ScoredInput
from tests.unit import brute
from tests.unit import twostage_brute as tb
from tests.unit.test_tie_note import first_stage
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors

METRICS = [
    "pmrp", "pmrp_pcme", "coco_5k_rprecision", "coco_5k_map_at_r", "eccv_map_at_r", "coco_5k_r1", "coco_5k_r10",
    "coco_1k_rprecision", "coco_1k_r1", "cxc_t2t_map_at_r", "cxc_t2t_r1",
]  # fmt: skip


@pytest.fixture
def groups(monkeypatch):
    """Every view's queries in as many groups as their depths allow; the groups each view got, recorded."""
    made: list[int] = []
    found = engine.depth_buckets

    def spy(*args: object) -> list[np.ndarray] | None:
        got = found(*args)  # type: ignore[arg-type]
        made.append(0 if got is None else len(got))
        return got

    monkeypatch.setattr(buckets, "ONE_LIST_BELOW", 0)
    monkeypatch.setattr(buckets, "GROUP_COST", 0)
    monkeypatch.setattr(engine, "depth_buckets", spy)
    return made


def one_list_and_groups(source_of, resources, made: list[int], metrics=METRICS):
    """(results with one list of every query, results in groups): each from a fresh input."""
    saved = buckets.ONE_LIST_BELOW
    buckets.ONE_LIST_BELOW = 1 << 62
    try:
        one = quiet_evaluate(source_of(), metrics, resources=resources)
    finally:
        buckets.ONE_LIST_BELOW = saved
    made.clear()
    return one, quiet_evaluate(source_of(), metrics, resources=resources)


def assert_same(one, grouped) -> None:
    assert list(one) == list(grouped) and one.notes == grouped.notes
    for metric in one:
        assert list(one[metric]) == list(grouped[metric])
        for direction, a in one[metric].items():
            b = grouped[metric][direction]
            assert a.query_ids.tobytes() == b.query_ids.tobytes(), (metric, direction)
            assert a.values.tobytes() == b.values.tobytes(), (metric, direction)


@pytest.mark.parametrize("kind", ["scores", "trec_eval", "embeddings", "float16", "two_stage"])
@pytest.mark.parametrize("seed", [1, 2])
def test_groups_give_the_one_lists_values_and_notes(world, groups, kind, seed):
    """Integer embeddings in -2..2 over 2 dimensions (most scores tie: the tie note names many queries), every
    depth kind (R@K, R-Precision, mAP@R, PMRP capped and not, PCME's mean over zeta), COCO 1K folds, t2t."""
    rng = np.random.default_rng(seed)
    img = rng.integers(-2, 3, (len(world.image_ids), 2)).astype(np.float32)
    cap = rng.integers(-2, 3, (len(world.caption_ids), 2)).astype(np.float32)

    def source_of():
        if kind == "embeddings":
            return Embeddings(img, cap)
        if kind == "two_stage":
            case = tb.make_case(world, seed, {"i2t": 3, "t2i": 4, "t2t": 5})
            return TwoStage(first_stage(case, "scores"), **case.as_reranked())
        dtype = np.float16 if kind == "float16" else np.float32
        ties = "trec_eval" if kind == "trec_eval" else "stable"
        return ScoreMatrix((img @ cap.T).astype(dtype), caption_scores=(cap @ cap.T).astype(dtype), ties=ties)

    for resources in (world.resources(r_cap=None), world.resources(r_cap=2)):
        one, grouped = one_list_and_groups(source_of, resources, groups)
        assert max(groups) >= 3, groups  # the views were ranked in groups
        assert_same(one, grouped)
        assert any("order of equal scores decides" in note for note in grouped.notes)


def test_uncapped_pmrp_in_groups_equals_a_brute_force(world, groups):
    """R-Precision over plausible matches, R uncapped, from a full stable sort written apart (tests/unit/brute.py)."""
    img, cap = vectors(world, seed=9, dim=2)
    results = quiet_evaluate(ScoreMatrix(img @ cap.T), ["pmrp"], resources=world.resources(r_cap=None))
    assert max(groups) >= 3, groups
    vec = {
        "image": dict(zip(world.image_ids, img, strict=True)),
        "caption": dict(zip(world.caption_ids, cap, strict=True)),
    }
    for direction, (q_kind, g_kind) in (("i2t", ("image", "caption")), ("t2i", ("caption", "image"))):
        pos = brute.positives(world, "pm", direction)
        gallery = world.caption_ids if g_kind == "caption" else world.image_ids
        queries, items = vec[q_kind], vec[g_kind]
        rankings = {q: brute.ranking(q, gallery, lambda g, v=queries[q], m=items: float(v @ m[g])) for q in pos}
        want = brute.metric_values("capped_rprecision", None, rankings, pos, None)
        got = results["pmrp"][direction]
        assert dict(zip(got.query_ids.tolist(), got.values.tolist(), strict=True)) == want, direction


def test_an_error_in_a_group_is_the_one_lists_error(world, groups):
    """Dot products that overflow for the captions of three images, queries of different depths: the error names
    them as one list of every query does (a group's error would name its own first)."""
    img, cap = vectors(world, seed=3, dim=2)
    img[[1, 7, 13]] *= np.float32(1e38)  # finite; their products are not
    messages = []
    for limit in (1 << 62, 0):
        buckets.ONE_LIST_BELOW = limit
        with pytest.raises(EvaluationError) as caught:
            quiet_evaluate(Embeddings(img, cap), ["pmrp"], resources=world.resources(r_cap=None), directions="t2i")
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "overflow" in messages[0]


def test_every_groups_lists_carry_the_ties_past_them(world, groups, monkeypatch):
    """The tie note counts a group of equal scores at a list's end from the items the top-k kept past the list
    (issue 59): every depth group's lists carry them, as one list of every query does, so neither reads a row
    again (tie-heavy integer scores, every group at its own depth)."""
    rng = np.random.default_rng(4)
    img = rng.integers(-2, 3, (len(world.image_ids), 2)).astype(np.float32)
    cap = rng.integers(-2, 3, (len(world.caption_ids), 2)).astype(np.float32)
    ranked, reads = [], []
    tops, count = ScoredInput.tops, tied.count_tied

    def spy_tops(self, view, asked, past=0):
        got = tops(self, view, asked, past)
        ranked.extend((past, lists.past is not None, lists.items.shape[1]) for lists in got)
        return got

    monkeypatch.setattr(ScoredInput, "tops", spy_tops)
    monkeypatch.setattr(tied, "count_tied", lambda *args: reads.append(len(args[3])) or count(*args))
    metrics = [m for m in METRICS if "t2t" not in m]
    one, grouped = one_list_and_groups(lambda: ScoreMatrix(img @ cap.T), world.resources(r_cap=None), groups, metrics)
    assert_same(one, grouped)
    assert any("order of equal scores decides" in note for note in grouped.notes)
    assert len({width for _, _, width in ranked}) >= 3  # lists of several depths
    assert ranked and all(past == 2 and carried for past, carried, _ in ranked), ranked
    assert not reads
