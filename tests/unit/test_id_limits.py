"""Id limits: booleans are never ids (a Python or JSON true is not id 1), and ids beyond int64 (19-digit ids in JSON,
a uint64 .npy) are named with the file and the limit, never wrapped or truncated (issue 35)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric.analysis.compare import compare_files
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import load_rankings
from tests.unit.world import quiet_evaluate
from tests.unit.world import vectors

INT64_MAX = 2**63 - 1


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
