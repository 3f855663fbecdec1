"""Bad input gets a clear EvaluationError that names the query; never a -1, a crash or a silent miscount."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import GroundTruth
from eccv_metric import Metrics


def copy_rankings(top50):
    i2t, t2i = top50
    return {k: list(v) for k, v in i2t.items()}, {k: list(v) for k, v in t2i.items()}


def first_eccv_image(gt):
    return int(gt.image_ids[gt.positives["eccv"]["i2t"].query[0]])


def test_missing_query_is_named(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    del i2t[391895]
    with pytest.raises(
        EvaluationError, match=r"i2t: 1 query image id\(s\) needed by coco_5k_r1 have no ranked list: 391895"
    ):
        metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1",))


def test_unknown_query_id(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    t2i[123] = t2i[770337]
    with pytest.raises(EvaluationError, match="t2i: 1 query id.* not test-split captions: 123"):
        metrics.compute_all_metrics(i2t, t2i)


def test_ranked_id_outside_the_gallery(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    i2t[391895][3] = 999_999_999
    with pytest.raises(EvaluationError, match="i2t query 391895 ranks id.* not test-split captions: 999999999"):
        metrics.compute_all_metrics(i2t, t2i)
    i2t, t2i = copy_rankings(top50)
    t2i[770337][0] = 770337  # a caption id where an image id belongs
    with pytest.raises(EvaluationError, match="t2i query 770337 ranks id.* not test-split images: 770337"):
        metrics.compute_all_metrics(i2t, t2i)


def test_duplicate_ids_in_a_ranking(metrics, top50):
    """The official counts set(list[:R]): a duplicate inflates its precision. We refuse."""
    i2t, t2i = copy_rankings(top50)
    i2t[391895][7] = i2t[391895][2]
    with pytest.raises(
        EvaluationError, match=f"i2t query 391895 ranks the same caption more than once: {i2t[391895][2]}"
    ):
        metrics.compute_all_metrics(i2t, t2i)


def test_ragged_lists_are_checked_row_by_row(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    i2t[391895] = i2t[391895][:20]
    i2t[60623] = i2t[60623][:30] + [i2t[60623][0]]
    with pytest.raises(EvaluationError, match="i2t query 60623 ranks the same caption more than once"):
        metrics.compute_all_metrics(i2t, t2i)


@pytest.mark.parametrize("bad", [1.5, "770337", None, 2.0])
def test_non_integer_ids(metrics, top50, bad):
    i2t, t2i = copy_rankings(top50)
    i2t[391895][4] = bad
    with pytest.raises(EvaluationError, match="i2t query 391895: ranked ids must be integers"):
        metrics.compute_all_metrics(i2t, t2i)
    i2t, t2i = copy_rankings(top50)
    i2t[bad] = i2t.pop(391895)
    with pytest.raises(EvaluationError, match="i2t query ids must be integers"):
        metrics.compute_all_metrics(i2t, t2i)


class _Index:
    def __index__(self) -> int:
        return 3

    def __repr__(self) -> str:
        return "_Index()"


KEPT = [7, np.int32(4), np.uint64(5), np.int64(-(2**63)), 2**63 - 1, _Index()]
REFUSED = [1.5, 2.0, np.float32(3), "770337", b"7", None, True, np.True_, 2**63, -(2**63) - 1, np.uint64(2**64 - 1)]
ID_VALUES = KEPT + REFUSED + [[3], 3 + 0j, np.timedelta64(3)]


def _expected_id(value: object) -> int | None:
    """The reference rule, written apart from the engine: an id is an integer (``__index__``) within int64, never a
    boolean (issue 35: ``True`` is not id 1)."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if not hasattr(value, "__index__"):
        return None
    number = value.__index__()
    return number if -(2**63) <= number < 2**63 else None


@pytest.mark.parametrize("value", ID_VALUES, ids=repr)
@pytest.mark.parametrize("ragged", [False, True])
def test_ranked_ids_are_integers_exactly(value, ragged):
    from eccv_metric.inputs.list_ids import ranked_to_arrays

    lists = [[11, 12, 13], [21, value, 23], [31, 32, 33]]
    if ragged:
        lists[2] = [31, 32]
    keys = np.array([100, 200, 300])
    expected = _expected_id(value)
    if expected is None:
        with pytest.raises(EvaluationError, match="query 200: ranked ids must be integers"):
            ranked_to_arrays(lists, keys)
        return
    flat, lengths = ranked_to_arrays(lists, keys)
    assert flat.dtype == np.int64 and lengths.tolist() == [3, 3, 2 if ragged else 3]
    assert flat.tolist() == [11, 12, 13, 21, expected, 23, 31, 32] + ([] if ragged else [33])


BIG = np.array([2**63], dtype=np.uint64)


@pytest.mark.parametrize(
    "lists",
    [
        [[np.int32(1), 0], [1.5], [3]],  # numpy and __index__ ids pass the rule: the faulty list is named, not them
        [[_Index(), 4], [1, "2"], [3]],
        [np.array([1], np.uint64), BIG, [3]],  # above int64 it would wrap to a negative id
        [np.array([1], np.uint64), BIG, np.array([3], np.uint64)],
        [np.array([5]), BIG, np.array([3], np.int8)],
    ],
)
def test_the_faulty_list_is_named(lists):
    from eccv_metric.inputs.list_ids import ranked_to_arrays

    with pytest.raises(EvaluationError, match="^query 200: ranked ids must be integers"):
        ranked_to_arrays(lists, np.array([100, 200, 300]))


@pytest.mark.parametrize("other", [[1, 2], np.array([1, 2])])
def test_an_empty_array_row_of_any_dtype_holds_no_id(other):
    from eccv_metric.inputs.list_ids import ranked_to_arrays

    flat, lengths = ranked_to_arrays([np.array([]), other, np.array([3], np.uint8)], np.array([100, 200, 300]))
    assert flat.tolist() == [1, 2, 3] and lengths.tolist() == [0, 2, 1]


def test_integer_array_rows_beside_lists(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    expected = metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1", "eccv_map_at_r"))
    for k in list(t2i)[::2]:
        t2i[k] = np.asarray(t2i[k], dtype=np.uint32)
    assert metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1", "eccv_map_at_r")) == expected
    t2i[k] = t2i[k].astype(np.float64)
    with pytest.raises(EvaluationError, match=f"t2i query {k}: "):
        metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1",))


def test_not_a_dict_or_not_lists(metrics, top50):
    i2t, t2i = copy_rankings(top50)
    with pytest.raises(EvaluationError, match="must be a dict"):
        metrics.compute_all_metrics(list(i2t.items()), t2i)
    i2t[391895] = 5
    with pytest.raises(EvaluationError, match="i2t query 391895: a ranked list must be a list, tuple or 1-D"):
        metrics.compute_all_metrics(i2t, t2i)


def test_list_too_short_for_map_at_r(gt, metrics, top50):
    i2t, t2i = copy_rankings(top50)
    query = first_eccv_image(gt)
    i2t[query] = i2t[query][:3]
    with pytest.raises(EvaluationError, match=f"i2t eccv_map_at_r: .*mAP@R needs the first R items.*: {query}"):
        metrics.compute_all_metrics(i2t, t2i, ("eccv_map_at_r",))


def test_recall_decidable_only_with_k_items_or_a_hit(gt, metrics, top50):
    i2t, t2i = copy_rankings(top50)
    coco = gt.positives["coco"]["i2t"]
    captions_of = set(gt.caption_ids[coco.indices[coco.indptr[0] : coco.indptr[1]]].tolist())
    query = int(gt.image_ids[coco.query[0]])
    negatives = [c for c in i2t[query] if c not in captions_of]
    i2t[query] = negatives[:3]
    with pytest.raises(
        EvaluationError, match=f"i2t coco_5k_r5: .*R@5 needs 5 items or a positive among them.*: {query}"
    ):
        metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r5",))
    i2t[query] = [min(captions_of)] + negatives[:2]  # a hit at rank 1 decides R@5 = 1
    per_query = metrics.per_query(i2t, t2i, ("coco_5k_r5",))["coco_5k_r5"]["i2t"]
    assert per_query.values[list(per_query.query_ids).index(query)] == 1.0


def test_empty_ranking_is_undecidable(gt, metrics, top50):
    i2t, t2i = copy_rankings(top50)
    i2t[391895] = []
    with pytest.raises(EvaluationError, match="too short.*391895"):
        metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1",))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_scores(gt, metrics, value):
    scores = np.zeros((5000, 25000), np.float32)
    scores[17, 100] = value
    shown = "NaN" if np.isnan(value) else str(value)
    for directions in (("i2t",), ("t2i",)):  # refused as a whole: the cell is named, whichever direction is asked
        with pytest.raises(EvaluationError, match=rf"^scores= holds {shown} at row 17, column 100: every score must"):
            metrics.compute_all_metrics_from_scores(scores, target_metrics=("coco_5k_r1",), directions=directions)


def test_score_matrix_shapes_and_ids(gt, metrics):
    scores = np.zeros((5000, 25000), np.float32)
    with pytest.raises(EvaluationError, match="scores= has shape"):
        metrics.compute_all_metrics_from_scores(scores[:, :-1])
    with pytest.raises(EvaluationError, match="2-D"):
        metrics.compute_all_metrics_from_scores(scores[0])
    with pytest.raises(EvaluationError, match="float16, float32 or float64"):
        metrics.compute_all_metrics_from_scores(scores.astype(np.int32))
    dup = gt.image_ids.copy()
    dup[1] = dup[0]
    with pytest.raises(EvaluationError, match=f"duplicate given image ids: {dup[0]}"):
        metrics.compute_all_metrics_from_scores(scores, dup)
    other = gt.caption_ids.copy()
    other[5] = 1
    with pytest.raises(EvaluationError, match=f"must cover the test split: 1 test caption .*: {gt.caption_ids[5]}"):
        metrics.compute_all_metrics_from_scores(scores, None, other)
    with pytest.raises(EvaluationError, match="image ids must be integers"):
        metrics.compute_all_metrics_from_scores(scores, gt.image_ids.astype(float).tolist())


def test_target_metrics_and_ks(metrics, top50):
    i2t, t2i = top50
    with pytest.raises(EvaluationError, match="unknown target metric 'eccv_map@r'"):
        metrics.compute_all_metrics(i2t, t2i, ("eccv_map@r",))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(EvaluationError, match="Ks must be positive integers"):
            metrics.compute_all_metrics(i2t, t2i, ("coco_5k_recalls",), (1, bad))
    out = metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r7", "eccv_r3"))
    assert set(out) == {"coco_5k_r7", "eccv_r3"}


def test_pmrp_without_categories_says_how_to_provide_them(top50):
    bare = Metrics(ground_truth=GroundTruth.from_wheel())
    i2t, t2i = top50
    with pytest.raises(EvaluationError, match="pmrp needs COCO categories: pass instances_json="):
        bare.compute_all_metrics(i2t, t2i, ("pmrp",))
    assert "pmrp" not in bare.compute_all_metrics(i2t, t2i)


def test_all_lists_shorter_than_the_largest_r(gt, metrics, top50):
    """Top-20 lists: every ECCV i2t query with R > 20 is named, none crashes."""
    i2t, t2i = top50
    short = {k: v[:20] for k, v in i2t.items()}
    eccv = gt.positives["eccv"]["i2t"]
    too_long = int((eccv.n_positives > 20).sum())
    with pytest.raises(EvaluationError, match=rf"i2t eccv_map_at_r: the ranked lists of {too_long} query image"):
        metrics.compute_all_metrics(short, t2i, ("eccv_map_at_r",))
    with pytest.raises(EvaluationError, match=rf"i2t eccv_rprecision: the ranked lists of {too_long} query image"):
        metrics.compute_all_metrics(short, t2i, ("eccv_rprecision",))
    assert set(metrics.compute_all_metrics(short, t2i, ("coco_5k_r10", "eccv_r5"))) == {"coco_5k_r10", "eccv_r5"}


def test_all_lists_empty(gt, metrics):
    i2t = {int(q): [] for q in gt.image_ids}
    t2i = {int(q): [] for q in gt.caption_ids}
    for target in ("coco_5k_r1", "coco_1k_r1", "eccv_map_at_r", "eccv_rprecision"):
        with pytest.raises(EvaluationError, match="too short"):
            metrics.compute_all_metrics(i2t, t2i, (target,))
