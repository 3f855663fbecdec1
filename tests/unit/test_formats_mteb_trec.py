"""Subsets from the registry, MTEB predictions read as runs, TREC tie rules and CxC grades (synthetic files)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import EvaluationError
from eccv_metric.benchmarks.subsets import not_offered
from eccv_metric.benchmarks.subsets import subset
from eccv_metric.benchmarks.subsets import subsets
from eccv_metric.cli.trec import direction_path
from eccv_metric.formats import qrels
from eccv_metric.formats import trec
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import read_predictions
from eccv_metric.groundtruth.cxc import Ratings


def test_subsets_are_the_registrys_retrieval_benchmarks():
    names = [s.name for s in subsets()]
    assert len(names) == len(set(names)) == 23
    offered = {b.name for b in REGISTRY if not_offered(b) is None}
    assert {s.benchmark for s in subsets()} == offered == {
        "coco_1k", "coco_5k", "cxc", "cxc_extended", "eccv", "cxc_t2t", "coco_t2t", "cxc_i2i",
    }  # fmt: skip
    folds = [s for s in subsets() if s.benchmark == "coco_1k"]
    assert [s.name for s in folds if s.direction == "t2i"] == [f"coco_1k_fold{f}-t2i" for f in range(5)]
    assert {s.group for s in folds} == {"coco_1k-i2t", "coco_1k-t2i"}
    assert subset("cxc_graded-t2i").grading == "sits" and subset("cxc-t2i").grading is None
    assert subset("cxc_t2t-t2t").exclude_self and subset("cxc_t2t-t2t").kinds == ("caption", "caption")
    assert subset("eccv-i2t").kinds == ("image", "caption") and not subset("eccv-i2t").exclude_self
    assert "~10M pairs" in not_offered(REGISTRY.get("pm_pcme")) and "correlation" in not_offered(
        REGISTRY.get("cxc_sts")
    )
    assert "FG galleries" in not_offered(REGISTRY.get("mscoco_fg"))
    with pytest.raises(EvaluationError, match="unknown subset 'query'"):
        subset("query")


def write(path, obj) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


META = {"mteb_model_meta": {"model_name": "x/y", "revision": "1"}}


def test_predictions_are_ordered_as_mteb_scores_them(tmp_path):
    """Score descending, then the document id descending as a string: caption-9 before caption-10."""
    docs = {"caption-10": 1.0, "caption-9": 1.0, "caption-11": 2.0, "caption-100": 0.5}
    path = write(tmp_path / "p.json", META | {"eccv-i2t": {"test": {"image-1": docs}}})
    assert is_mteb_predictions(path) and not is_mteb_predictions(write(tmp_path / "r.json", {"i2t": {}}))
    run = read_predictions(path)
    assert run.raw == {"i2t": {1: [11, 9, 10, 100]}} and run.restrictions == {"i2t": (None, ["eccv-i2t"])}
    folds = META | {f"coco_1k_fold{f}-t2i": {"test": {f"caption-{f}": {"image-5": 1.0}}} for f in (0, 1)}
    run = read_predictions(write(tmp_path / "f.json", folds))
    assert run.raw == {"t2i": {0: [5], 1: [5]}} and run.restrictions["t2i"][0] == "coco_1k_folds"


@pytest.mark.parametrize(
    "body,message",
    [
        ({"eccv-i2t": {"test": {}}}, "no 'mteb_model_meta' key"),
        (META | {"query": {"test": {}}}, "unknown subset 'query'"),
        (META | {"eccv-i2t": {"train": {}}}, "has no 'test' split"),
        (META | {"eccv-i2t": {"test": {"caption-1": {"caption-2": 1.0}}}}, "i2t queries are image-<id>"),
        (META | {"eccv-i2t": {"test": {"image-1": {"image-2": 1.0}}}}, "document image-2 is not a caption"),
        (META | {"eccv-i2t": {"test": {"image-1": {"caption-2": "1.0"}}}}, "must be a finite number"),
        (META | {"eccv-i2t": {"test": {"image-1": {"caption-02": 1.0}}}}, "is not 'image-<id>' or 'caption-<id>'"),
        (
            META | {f"coco_1k_fold{f}-t2i": {"test": {"caption-1": {"image-5": 1.0}}} for f in (0, 1)},
            "the query appears in two subsets",
        ),
        (
            META | {"coco_5k-t2i": {"test": {"caption-1": {}}}, "coco_1k_fold0-t2i": {"test": {}}},
            "searched different galleries",
        ),
        (META, "no subset"),
    ],
)
def test_bad_predictions_are_refused(tmp_path, body, message):
    with pytest.raises(EvaluationError, match=message):
        read_predictions(write(tmp_path / "p.json", body))


def test_non_finite_scores_are_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(META)[:-1] + ', "eccv-i2t": {"test": {"image-1": {"caption-2": NaN}}}}')
    with pytest.raises(EvaluationError, match="must be a finite number, not nan"):
        read_predictions(path)


def test_runs_read_by_either_tie_rule(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text(
        "image-1 Q0 caption-10 1 5.0 t\nimage-1 Q0 caption-9 2 5.0 t\nimage-1 Q0 caption-3 3 7.0 t\n"
        "caption-4 Q0 image-2 1 1.0 t\n"
    )
    assert trec.read_run(path) == {"i2t": {1: [3, 10, 9]}, "t2i": {4: [2]}}
    assert trec.read_run(path, "trec_eval") == {"i2t": {1: [3, 9, 10]}, "t2i": {4: [2]}}
    with pytest.raises(EvaluationError, match="ties must be 'stable' or 'trec_eval'"):
        trec.read_run(path, "rank")


def test_cxc_grades_round_half_up_and_keep_the_highest():
    ratings = Ratings("sits", np.array([10, 10, 11, 12]), np.array([1, 1, 2, 3]), np.array([2.5, 3.49, 4.5, 3.0]), "x")
    assert qrels.cxc_grades(ratings, "t2i") == {(10, 1): 3, (11, 2): 5, (12, 3): 3}
    assert qrels.cxc_grades(ratings, "i2t") == {(1, 10): 3, (2, 11): 5, (3, 12): 3}
    grades = qrels.cxc_grades(ratings, "t2i")
    assert list(qrels.qrels_lines({10: [1], 11: [2]}, "t2i", grades)) == [
        "caption-10 0 image-1 3",
        "caption-11 0 image-2 5",
    ]
    with pytest.raises(EvaluationError, match="positive caption-12 image-9 has no grade"):
        list(qrels.qrels_lines({12: [9]}, "t2i", grades))
    with pytest.raises(EvaluationError, match="SITS ratings of i2t / t2i pairs"):
        qrels.cxc_grades(Ratings("sts", ratings.id_1, ratings.id_2, ratings.score), "t2t")


@pytest.mark.parametrize(
    "output,expected", [("run.trec", "run.i2t.trec"), ("out/run", "out/run.i2t"), ("a.b.qrels", "a.b.i2t.qrels")]
)
def test_one_file_per_direction_is_named_by_the_direction(output, expected):
    assert direction_path(output, "i2t") == expected
