"""Issue 35 (round four: no silent number and no surprise), engine and input items, on the synthetic world.

Only whole numbers are K; booleans are never ids; ids beyond int64 are named with the limit; overflowing and
constant scores are named; every metric kind gets the chance check; the tie rule of trec_eval / MTEB on scores
and embeddings, proven against a brute force written here.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.analysis.compare import compare_files
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.inputs.choose import input_from_parts
from tests.unit import brute
from tests.unit.world import int_embeddings
from tests.unit.world import vectors

INT64_MAX = 2**63 - 1


def quiet_evaluate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(*args, **kwargs)


class ZeroDimTensor:
    """A torch-like 0-d tensor (torch is not imported): ``__index__`` works for integer values only."""

    ndim = 0

    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value

    def __index__(self):
        if isinstance(self.value, float):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return self.value

    def __int__(self):
        return int(self.value)  # what the old code used: truncates 5.7 to 5

    def __repr__(self):
        return f"tensor({self.value})"


# -- 1. Ks are whole numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ks",
    [np.float64(5.7), np.array(5.7), [np.array(5.7)], ZeroDimTensor(5.7), [ZeroDimTensor(5.7)], [5.0], [np.float32(5)]],
    ids=["np.float64", "0-d float array", "[0-d float array]", "float tensor", "[float tensor]", "[5.0]", "[f32]"],
)
def test_non_integral_ks_are_refused_not_truncated(world, res, ks):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="Ks must be"):
        quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res)


@pytest.mark.parametrize("ks", [np.array(5), np.int32(5), ZeroDimTensor(5), [ZeroDimTensor(5)], [np.array(5)]])
def test_integer_scalars_arrays_and_tensors_are_ks(world, res, ks):
    img, cap = vectors(world)
    got = quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res).means()
    want = quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", 5, resources=res).means()
    assert got == want and list(got) == ["coco_5k_r5"]


@pytest.mark.parametrize("ks", [[True], np.array(True), [np.array(True)], [np.bool_(True)]])
def test_boolean_ks_are_refused(world, res, ks):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="Ks must be"):
        quiet_evaluate(Embeddings(img, cap), "coco_5k_recalls", ks, resources=res)


# -- 2. booleans are never ids -------------------------------------------------------------------------------------


def test_a_python_true_is_not_a_distractor_id(world, res):
    img, cap = vectors(world)
    ids = list(world.image_ids) + [True]  # True would be image id 1: a distractor beside the test split
    with pytest.raises(EvaluationError, match=r"image ids must be integers, not booleans \(True"):
        quiet_evaluate(Embeddings(np.vstack([img, img[:1]]), cap, image_ids=ids), "coco_5k_r1", resources=res)


def test_booleans_in_nested_id_lists_are_refused(world, res):
    rows = [[c for c in world.caption_ids[:3]] for _ in world.image_ids]
    rows[4][1] = False
    with pytest.raises(EvaluationError, match="not booleans"):
        quiet_evaluate(Rankings(i2t=(list(world.image_ids), rows)), "coco_5k_r1", resources=res, partial=True)


def test_a_true_in_ranked_lists_is_refused_naming_the_query(world, res):
    lists = {i: list(world.caption_ids) for i in world.image_ids}
    lists[world.image_ids[3]] = [True] + list(world.caption_ids)
    with pytest.raises(EvaluationError, match=f"i2t query {world.image_ids[3]}: ranked ids must be integers, not bool"):
        quiet_evaluate(Rankings(i2t=lists), "coco_5k_r1", resources=res)


def test_json_true_in_a_rankings_file_is_not_caption_1(world, res, tmp_path):
    lists = {str(i): list(world.caption_ids) for i in world.image_ids}
    lists[str(world.image_ids[0])] = [True] + list(world.caption_ids)
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps({"i2t": lists}))
    with pytest.raises(EvaluationError, match="not booleans"):
        quiet_evaluate(Rankings(**load_rankings(path)), "coco_5k_r1", resources=res)


def test_json_true_in_an_ids_file_is_shown_as_true(world, tmp_path):
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(list(world.image_ids[:-1]) + [True]))
    with pytest.raises(EvaluationError, match="non-integer values: True$"):
        load_ids(path)


# -- 3. ids beyond int64 -------------------------------------------------------------------------------------------


def test_a_19_digit_id_in_an_ids_json_names_the_file_and_the_limit(world, tmp_path):
    path = tmp_path / "ids.json"
    path.write_text("[" + ", ".join(map(str, world.image_ids[:-1])) + ", 9999999999999999999]")
    with pytest.raises(EvaluationError) as info:
        load_ids(path, "image ids")
    assert str(path) in str(info.value) and "9999999999999999999" in str(info.value)
    assert str(INT64_MAX) in str(info.value)


def test_a_19_digit_id_in_a_per_query_file_for_compare_names_the_file(world, tmp_path):
    good = {"coco_5k_r1": {"i2t": {"query_ids": list(world.image_ids), "values": [1.0] * len(world.image_ids)}}}
    bad = json.loads(json.dumps(good))
    bad["coco_5k_r1"]["i2t"]["query_ids"][0] = 9999999999999999999
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, content in zip(paths, (good, bad), strict=True):
        path.write_text(json.dumps(content))
    with pytest.raises(EvaluationError) as info:
        compare_files(paths[0], paths[1], 200, gt=world.gt)
    assert str(paths[1]) in str(info.value) and str(INT64_MAX) in str(info.value)


def test_a_huge_id_in_a_rankings_json_is_named_with_the_limit(world, res, tmp_path):
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps({"i2t": {str(world.image_ids[0]): [world.caption_ids[0], 9999999999999999999]}}))
    with pytest.raises(EvaluationError) as info:
        quiet_evaluate(Rankings(**load_rankings(path)), "coco_5k_r1", resources=res, partial=True)
    message = str(info.value)
    assert "9999999999999999999" in message and str(INT64_MAX) in message and "float64" not in message


def test_a_uint64_npy_id_past_int64_is_named_not_wrapped(world, tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.array(list(world.image_ids[:-1]) + [2**64 - 1], dtype=np.uint64))
    with pytest.raises(EvaluationError) as info:
        load_ids(path, "image ids")
    message = str(info.value)
    assert str(2**64 - 1) in message and str(INT64_MAX) in message and "non-negative" not in message


# -- 4. overflowing dot products of finite embeddings ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "scale", "metric", "advice"),
    [
        (np.float32, 1e20, "coco_5k_r1", "normalize=True (cosine similarity) or float64 embeddings"),
        (np.float64, 1e160, "coco_5k_r1", "normalize=True (cosine similarity)"),
        (np.float64, 1e160, "coco_5k_medr", "normalize=True (cosine similarity)"),
    ],
)
def test_overflowing_products_are_named_with_the_fix(world, res, dtype, scale, metric, advice):
    img, cap = vectors(world)
    source = Embeddings(img.astype(dtype) * scale, cap.astype(dtype) * scale)
    with pytest.raises(EvaluationError, match="overflow") as info:
        quiet_evaluate(source, metric, resources=res)
    assert "the embeddings are finite" in str(info.value)
    assert str(info.value).endswith(advice)
    scaled = Embeddings(img.astype(dtype) * scale, cap.astype(dtype) * scale, normalize=True)
    got = quiet_evaluate(scaled, metric, resources=res).means()
    assert got == quiet_evaluate(Embeddings(img, cap, normalize=True), metric, resources=res).means()


# -- 7. what the input cannot serve is named before resources load ----------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "make", "expected"),
    [
        ("cxc_t2t_r1", lambda img, cap: ScoreMatrix(img @ cap.T), "give caption_scores"),
        ("cxc_i2i_r1", lambda img, cap: ScoreMatrix(img @ cap.T), "give image_scores"),
        ("cxc_sts_spearman", lambda img, cap: ScoreMatrix(img @ cap.T), "needs caption_scores"),
        ("cxc_t2t_r1", lambda img, cap: Embeddings(img), "needs caption embeddings"),
        ("mscoco_fg_map_at_r", lambda img, cap: Embeddings(None, cap), "needs image embeddings"),
    ],
)
def test_the_input_is_checked_before_resources_load(world, tmp_path, metric, make, expected):
    img, cap = vectors(world)
    offline = Resources(world.gt, cxc_source=tmp_path / "no-cxc", fg_source=tmp_path / "no-fg")  # would fail to load
    with pytest.raises(EvaluationError, match=expected) as info:
        quiet_evaluate(make(img, cap), metric, resources=offline)
    assert str(tmp_path) not in str(info.value)


# -- 8. a direction with no query to score fails in evaluate() --------------------------------------------------------


def test_empty_lists_with_partial_fail_in_evaluate_naming_the_direction(world, res):
    with pytest.raises(
        EvaluationError, match="i2t coco_5k_r1: no query has a positive and a ranking: no query to score"
    ):
        evaluate(Rankings(i2t={}), "coco_5k_r1", resources=res, partial=True)


# -- 5. every metric kind gets the chance check ---------------------------------------------------------------------


def _brute_chance(n: int, r: int) -> dict[str, tuple[float, float]]:
    """Mean and variance of first rank, R-Precision and mAP@R over every placement of r positives among n items
    (all equally likely under a random order), counted one by one."""
    from itertools import combinations

    firsts, rps, maps = [], [], []
    for positions in combinations(range(1, n + 1), r):
        rel = [i in positions for i in range(1, n + 1)]
        firsts.append(positions[0])
        rps.append(sum(rel[:r]) / r)
        maps.append(sum(sum(rel[:i]) / i for i in range(1, r + 1) if rel[i - 1]) / r)
    return {k: (float(np.mean(v)), float(np.var(v))) for k, v in (("first", firsts), ("rp", rps), ("map", maps))}


@pytest.mark.parametrize(("n", "r"), [(1, 1), (5, 1), (6, 2), (9, 3), (10, 10), (12, 5)])
def test_chance_expectations_equal_an_enumeration(n, r):
    from eccv_metric.measures.formulas import first_rank_at_chance
    from eccv_metric.measures.formulas import map_at_r_at_chance
    from eccv_metric.measures.formulas import rprecision_at_chance

    want = _brute_chance(n, r)
    nn, rr = np.array([float(n)]), np.array([float(r)])
    mean, var = first_rank_at_chance(nn, rr)
    assert mean[0] == pytest.approx(want["first"][0]) and var[0] == pytest.approx(want["first"][1], abs=1e-12)
    mean, var = rprecision_at_chance(nn, rr, rr)
    assert mean[0] == pytest.approx(want["rp"][0]) and var[0] == pytest.approx(want["rp"][1], abs=1e-12)
    assert map_at_r_at_chance(nn, rr)[0] == pytest.approx(want["map"][0])
    assert want["map"][1] <= want["map"][0] + 1e-12  # the variance bound the note uses


def _near_images(world, seed: int = 0):
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((len(world.image_ids), 8)).astype(np.float32)
    cap = rng.standard_normal((len(world.caption_ids), 8)).astype(np.float32) * 0.1
    cap += img[[world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]]  # each near its image
    return img, cap, cap[rng.permutation(len(cap))]


@pytest.mark.parametrize("metrics", [["coco_5k_medr"], ["coco_5k_meanr"], ["coco_5k_medr", "coco_5k_meanr"]])
def test_rank_metrics_alone_get_the_chance_note(world, res, metrics):
    img, cap, shuffled = _near_images(world)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        right = evaluate(Embeddings(img, cap), metrics, directions="t2i", resources=res)
    assert right.notes == []
    with pytest.warns(ChanceLevelWarning, match="t2i: numbers at chance level") as caught:
        wrong = evaluate(Embeddings(img, shuffled), metrics, directions="t2i", resources=res)
    assert wrong.notes == [str(caught[0].message)] and "mean rank" in wrong.notes[0]


def test_map_at_r_alone_gets_the_chance_note(world, res):
    img, cap, shuffled = _near_images(world)
    right = quiet_evaluate(Embeddings(img, cap), ["coco_5k_r1", "coco_5k_rprecision"], resources=res)
    assert right.notes == []
    wrong = quiet_evaluate(Embeddings(img, shuffled), ["coco_5k_rprecision"], directions="t2i", resources=res)
    assert len(wrong.notes) == 1 and "coco_5k_rprecision = " in wrong.notes[0]


# -- 6. the chance warning says what it knows and points at the caller's line ---------------------------------------


def test_the_chance_warning_names_causes_and_points_at_the_callers_line(world, res):
    img, _, shuffled = _near_images(world)
    with pytest.warns(ChanceLevelWarning) as caught:
        evaluate(Embeddings(img, shuffled), ["coco_5k_r1"], directions="t2i", resources=res)  # this line
    warning = caught[0]
    assert warning.filename == __file__
    message = str(warning.message)
    assert message.startswith("t2i: numbers at chance level (coco_5k_r1 = ")
    assert "common causes: rows not in the order of the benchmark's ids" in message
    assert "a model that was not trained or whose weights were not loaded" in message
    assert "likely" not in message


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


# -- 5b. scores that are all equal: refused when products underflow, noted when given so ---------------------------


@pytest.mark.parametrize("budget", [None, 10])  # one product, and blocks of a product too large for one
def test_products_that_underflow_to_zero_are_refused(world, res, monkeypatch, budget):
    if budget is not None:
        monkeypatch.setattr("eccv_metric.inputs.embeddings.MATRIX_BUDGET", budget)
    img, cap = (v.astype(np.float64) * 2.0**-540 for v in vectors(world))  # finite, non-zero; products are 0.0
    for metric in ("coco_5k_medr", "coco_5k_r1"):
        with pytest.raises(EvaluationError, match="dot product of the embeddings is 0.0.*underflow.*normalize=True"):
            quiet_evaluate(Embeddings(img, cap), metric, resources=res)
    assert quiet_evaluate(Embeddings(img, cap, normalize=True), "coco_5k_medr", resources=res).means()


@pytest.mark.parametrize(
    ("make", "metric", "expected"),
    [
        (lambda n_i, n_c: ScoreMatrix(np.full((n_i, n_c), 0.5)), "coco_5k_r1", "of the image x caption scores is 0.5"),
        (lambda n_i, n_c: ScoreMatrix(caption_scores=np.eye(n_c) + 1.0), "cxc_t2t_r1", "of caption_scores is 1.0"),
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
    assert notes == [
        f"i2t: every score of 1 query(ies) is equal ({world.image_ids[3]}): their rankings are the rows' given order, "
        "not the model's (check the scores of these queries)",
        f"t2t: every score of 1 query(ies) is equal ({world.caption_ids[5]}): their rankings are the rows' given "
        "order, not the model's (check the scores of these queries)",
    ]
    varied = quiet_evaluate(ScoreMatrix(rng.standard_normal(scores.shape)), ["coco_5k_r5"], resources=res)
    assert not [n for n in varied.notes if "every score of" in n]
