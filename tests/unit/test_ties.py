"""Ties: the trec_eval / MTEB tie rule on scores and embeddings equals a full sort by score then id string (a brute
force written here) and the TREC run path; scores that all tie are noted, never silently ranked (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric.inputs.choose import input_from_parts
from tests.unit import brute
from tests.unit.world import int_embeddings
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors

# -- 9. the trec_eval / MTEB tie rule on scores and embeddings --------------------------------------------------------


def _trec_order(gallery: list[int], score) -> list[int]:
    """trec_eval's order, written apart from the engine: score descending, then id descending as strings."""
    by_id = sorted(gallery, key=str, reverse=True)
    return sorted(by_id, key=lambda g: -score(g))  # stable: equal scores keep the id-string order


KIND_OF = {"i2t": ("image", "caption"), "t2i": ("caption", "image"), "t2t": ("caption", "caption")}
TIE_METRICS = [
    ("coco_5k_r1", "coco", "recall", 1, None),
    ("coco_5k_r5", "coco", "recall", 5, None),
    ("coco_5k_medr", "coco", "medr", None, None),
    ("coco_5k_map_at_r", "coco", "map_at_r", None, None),
    ("coco_5k_rprecision", "coco", "rprecision", None, None),
    ("coco_1k_r1", "coco", "recall", 1, "fold"),
    ("coco_1k_meanr", "coco", "meanr", None, "fold"),
    ("cxc_t2t_r1", "co_captions+sts", "recall", 1, "self"),
    ("cxc_t2t_map_at_r", "co_captions+sts", "map_at_r", None, "self"),
]


@pytest.mark.parametrize("kind", ["embeddings", "scores"])
@pytest.mark.parametrize("seed", [1, 2])
def test_trec_eval_ties_equal_a_full_sort_by_score_then_id_string(world, res, kind, seed):
    rng = np.random.default_rng(seed)
    img_of = int_embeddings(rng, world.image_ids, 2)  # 2 dims in -2..2: most scores tie
    cap_of = int_embeddings(rng, world.caption_ids, 2)
    caption_ids = [world.caption_ids[k] for k in rng.permutation(len(world.caption_ids))]  # rows not in id order
    img = np.stack([img_of[i] for i in world.image_ids])
    cap = np.stack([cap_of[c] for c in caption_ids])
    if kind == "embeddings":
        source = Embeddings(img, cap, caption_ids=caption_ids, ties="trec_eval")
    else:
        source = ScoreMatrix(img @ cap.T, caption_ids=caption_ids, caption_scores=cap @ cap.T, ties="trec_eval")
    results = quiet_evaluate(source, [m for m, *_ in TIE_METRICS], resources=res)
    for metric, relation, kind_, k, restriction in TIE_METRICS:
        for direction in ("i2t", "t2i") if relation == "coco" else ("t2t",):
            q_kind, g_kind = KIND_OF[direction]
            vec = {"image": img_of, "caption": cap_of}
            gallery_all = world.image_ids if g_kind == "image" else world.caption_ids
            pos = brute.positives(world, relation, direction)
            rankings = {}
            for q in pos:
                gallery = [g for g in gallery_all if not (restriction == "self" and g == q)]
                if restriction == "fold":
                    gallery = [g for g in gallery if world.fold(g_kind, g) == world.fold(q_kind, q)]
                qv, gv = vec[q_kind][q], vec[g_kind]
                rankings[q] = _trec_order(gallery, lambda g, qv=qv, gv=gv: float(qv @ gv[g]))
            want = brute.metric_values(kind_, k, rankings, pos, None)
            got = results[metric][direction]
            assert dict(zip(got.query_ids.tolist(), got.values.tolist(), strict=True)) == want, (metric, direction)


def test_trec_eval_ties_equal_the_trec_run_path(world, res, tmp_path):
    from eccv_metric.formats.trec import read_run
    from eccv_metric.formats.trec import run_from_scores

    rng = np.random.default_rng(4)
    img = np.stack(list(int_embeddings(rng, world.image_ids, 2).values()))
    cap = np.stack(list(int_embeddings(rng, world.caption_ids, 2).values()))
    names = ["coco_5k_r1", "coco_5k_r5", "coco_5k_r10", "coco_5k_map_at_r", "coco_5k_medr"]
    path = tmp_path / "run.trec"
    with open(path, "w") as out:
        for direction in ("i2t", "t2i"):
            depth = len(world.caption_ids)
            for line in run_from_scores(ScoreMatrix(img @ cap.T), world.gt, direction, depth, ties="trec_eval"):
                out.write(line + "\n")
    from_run = quiet_evaluate(Rankings(**read_run(path, "trec_eval")), names, resources=res).means()
    for source in (ScoreMatrix(img @ cap.T, ties="trec_eval"), Embeddings(img, cap, ties="trec_eval")):
        assert quiet_evaluate(source, names, resources=res).means() == from_run
    stable = quiet_evaluate(ScoreMatrix(img @ cap.T), names, resources=res).means()
    assert stable != from_run  # the tie rule matters on these scores: the test can tell the rules apart
    assert stable == quiet_evaluate(ScoreMatrix(img @ cap.T, ties="stable"), names, resources=res).means()


@pytest.mark.parametrize("ties", ["mteb", "", None, True])
def test_unknown_tie_rules_are_refused(world, ties):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="ties must be 'stable' or 'trec_eval'"):
        Embeddings(img, cap, ties=ties)
    with pytest.raises(EvaluationError, match="ties must be 'stable' or 'trec_eval'"):
        ScoreMatrix(img @ cap.T, ties=ties)


def test_input_parts_take_the_tie_rule_for_scores_only(world, res):
    img, cap = vectors(world)
    for parts in ({"scores": img @ cap.T}, {"image_embeddings": img, "caption_embeddings": cap}):
        source = input_from_parts({**parts, "ties": "trec_eval"})
        assert source.ties == "trec_eval" and input_from_parts(parts).ties == "stable"
    with pytest.raises(EvaluationError, match="ties is the tie rule of scores and embeddings"):
        input_from_parts({"rankings": {"i2t": {world.image_ids[0]: [world.caption_ids[0]]}}, "ties": "trec_eval"})


# -- scores that are all equal, or a query's: noted, scored in the rows' order ------------------------------------


@pytest.mark.parametrize(
    ("make", "metric", "expected"),
    [
        (lambda n_i, n_c: ScoreMatrix(np.full((n_i, n_c), 0.5)), "coco_5k_r1", "of the image x caption scores is 0.5"),
        (lambda n_i, n_c: ScoreMatrix(caption_scores=np.eye(n_c) + 1.0), "cxc_t2t_r1", "of caption_scores= is 1.0"),
        (lambda n_i, n_c: Embeddings(np.ones((n_i, 3)), np.ones((n_c, 3))), "coco_5k_r1", "image-caption dot product"),
        (lambda n_i, n_c: Embeddings(None, np.ones((n_c, 3))), "cxc_t2t_r1", "caption-caption dot product"),
    ],
)
def test_entirely_constant_scores_are_noted_once(world, res, make, metric, expected):
    """Exactly equal scores are scored exactly (the tie order of the rows), so they are noted, not refused."""
    results = quiet_evaluate(make(len(world.image_ids), len(world.caption_ids)), metric, resources=res)
    notes = [n for n in results.notes if "every ranking is the tie order of the rows" in n]
    assert len(notes) == 1 and expected in notes[0], results.notes
    assert not [n for n in results.notes if "query(ies) is equal" in n]  # not again query by query
    if metric == "coco_5k_r1":  # the given order decides: every image ranks caption 0 first, every caption image 0
        assert results.means()[metric] == {"i2t": 1 / len(world.image_ids), "t2i": 5 / len(world.caption_ids)}


def test_one_differing_score_is_ranked_not_refused(world, res):
    scores = np.zeros((len(world.image_ids), len(world.caption_ids)))
    scores[-1, -1] = -1.0
    got = quiet_evaluate(ScoreMatrix(scores), "coco_5k_r1", resources=res).means()["coco_5k_r1"]
    assert got == {"i2t": 1 / len(world.image_ids), "t2i": 5 / len(world.caption_ids)}  # the given order wins


def test_queries_whose_scores_all_tie_are_noted(world, res):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((len(world.image_ids), len(world.caption_ids)))
    scores[3] = 0.25  # image 3 scores every caption the same
    scores[:, 7] = np.where(np.arange(len(world.image_ids)) == 3, 0.25, 1.5)  # caption 7: not all equal
    caption_scores = rng.standard_normal((len(world.caption_ids),) * 2)
    caption_scores[5] = 2.0  # caption 5 ties every other caption (its own entry is never read)
    caption_scores[5, 5] = -7.0
    results = quiet_evaluate(
        ScoreMatrix(scores, caption_scores=caption_scores), ["coco_5k_r5", "cxc_t2t_r1"], resources=res
    )
    notes = [n for n in results.notes if "every score of" in n]
    assert [n.split(":")[0] for n in notes] == ["i2t", "t2t"]
    expected = ((world.image_ids[3], "coco_5k_r5"), (world.caption_ids[5], "cxc_t2t_r1"))
    for note, (ident, metric) in zip(notes, expected, strict=True):
        # one note per direction: the values the tie order decides, and the queries whose every score is equal
        assert note.startswith(f"{note[:3]}: the order of equal scores decides {metric}: 1 of "), note
        assert note.endswith(
            f"; every score of 1 query(ies) is equal ({ident}): their rankings are the rows' given order, not the "
            "model's (check the scores of these queries)"
        ), note
    varied = quiet_evaluate(ScoreMatrix(rng.standard_normal(scores.shape)), ["coco_5k_r5"], resources=res)
    assert not [n for n in varied.notes if "every score of" in n]
