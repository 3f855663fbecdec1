"""The adversarial audit's inputs (issue: no silent number on bad input), through every public path.

Each bad input goes through the Python API, the CLI and the evaluate module
where it can reach them, and must give an ``EvaluationError`` (CLI: exit 2 and
one ``error:`` line) whose message names the query, file or field.
"""

from __future__ import annotations

import json

import evaluate
import numpy as np
import pytest
from scipy.stats import kendalltau

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import EvaluationError
from eccv_metric import Metrics
from eccv_metric.analysis.compare import compare
from eccv_metric.analysis.stats import bootstrap_ci
from eccv_metric.analysis.stats import kendall_tau_b
from eccv_metric.analysis.stats import paired_test
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.cli.main import main
from tests.fixtures import INSTANCES
from tests.unit.brute import numbers

TOP50 = ("coco_5k_r1", "eccv_r1")


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(EVALUATE_MODULE_DIR))


@pytest.fixture(scope="module")
def small(top50):
    """Top-50 lists as JSON-ready text keys."""
    i2t, t2i = top50
    return {"i2t": {str(k): v for k, v in i2t.items()}, "t2i": {str(k): v for k, v in t2i.items()}}


def cli_error(args, capsys) -> str:
    assert main([str(a) for a in args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing printed before the error, nothing half-written
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def evaluate_cli(path, capsys, *extra) -> str:
    return cli_error(["evaluate", "--rankings", path, "--metrics", *TOP50, *extra], capsys)


def module_inputs(i2t, t2i):
    return {
        "predictions": list(i2t.values()) + list(t2i.values()),
        "references": list(i2t) + list(t2i),
        "directions": ["i2t"] * len(i2t) + ["t2i"] * len(t2i),
    }


# 1. aliased query keys -------------------------------------------------------------------------


@pytest.mark.parametrize("alias", ["0391895", " 391895 ", "+391895", "391_895", "391895.0", "-0"])
def test_aliased_rankings_keys_are_refused(tmp_path, capsys, small, alias):
    raw = json.loads(json.dumps(small))
    raw["i2t"][alias] = raw["i2t"]["391895"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw))
    line = evaluate_cli(path, capsys)
    assert str(path) in line and "plain decimal integers" in line and repr(alias) in line


def test_a_key_given_twice_in_the_json_text_is_refused(tmp_path, capsys, small):
    text = json.dumps(small)
    first = json.dumps(small["i2t"]["391895"])
    text = text.replace('"391895": ' + first, '"391895": ' + first + ', "391895": ' + first, 1)
    path = tmp_path / "r.json"
    path.write_text(text)
    assert "the key '391895' appears twice" in evaluate_cli(path, capsys)


def test_string_query_ids_are_refused_by_the_api_and_the_module(metrics, module, top50):
    i2t, t2i = top50
    with pytest.raises(EvaluationError, match="i2t query ids must be integers"):
        metrics.compute_all_metrics({str(k): v for k, v in i2t.items()}, t2i, TOP50)
    inputs = module_inputs(i2t, t2i)
    inputs["references"] = [str(r) for r in inputs["references"]]
    with pytest.raises(EvaluationError, match="references .* must be integers"):
        module.compute(**inputs, target_metrics=TOP50)


# 2. dicts and sets are not ranked lists ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["dict", "set", "str", "2d"])
def test_ranked_lists_must_be_sequences(metrics, module, top50, tmp_path, capsys, small, kind):
    i2t, t2i = dict(top50[0]), top50[1]
    ranked = i2t[391895]
    bad = {
        "dict": {c: 1.0 / (r + 1) for r, c in enumerate(ranked[::-1])},
        "set": set(ranked),
        "str": "391895",
        "2d": np.array([ranked]),
    }[kind]
    i2t[391895] = bad
    with pytest.raises(EvaluationError, match="i2t query 391895: a ranked list must be a list, tuple or 1-D"):
        metrics.compute_all_metrics(i2t, t2i, TOP50)
    with pytest.raises(EvaluationError, match="query 391895: a ranked list must be a list, tuple or 1-D"):
        module.compute(**module_inputs(i2t, t2i), target_metrics=TOP50)
    if kind == "dict":
        raw = json.loads(json.dumps(small))
        raw["i2t"]["391895"] = {str(c): s for c, s in bad.items()}
        (tmp_path / "r.json").write_text(json.dumps(raw))
        assert "i2t query 391895: a ranked list must be" in evaluate_cli(tmp_path / "r.json", capsys)


def test_tuples_and_integer_arrays_are_ranked_lists(metrics, top50):
    i2t, t2i = top50
    expected = metrics.compute_all_metrics(i2t, t2i, TOP50)
    as_tuples = {k: tuple(v) for k, v in i2t.items()}
    as_arrays = {k: np.asarray(v, dtype=np.int32) for k, v in t2i.items()}
    assert metrics.compute_all_metrics(as_tuples, as_arrays, TOP50) == expected


# 3. a partial instances file ----------------------------------------------------------------------


def write_instances(path, keep_images, list_images=None):
    raw = json.loads(INSTANCES.read_text())
    keep = set(keep_images)
    raw["annotations"] = [a for a in raw["annotations"] if a["image_id"] in keep]
    listed = keep if list_images is None else set(list_images)
    raw["images"] = [i for i in raw["images"] if i["id"] in listed]
    path.write_text(json.dumps(raw))
    return path


def test_partial_instances_are_refused_everywhere(gt, module, top50, tmp_path, capsys, small):
    half = write_instances(tmp_path / "half.json", gt.image_ids[::2].tolist())
    none = write_instances(tmp_path / "none.json", [])
    for path in (half, none):
        n_missing = len(gt.image_ids) - (len(gt.image_ids) + 1) // 2 if path is half else len(gt.image_ids)
        message = rf"{path.name}: the COCO instances do not cover the test split: {n_missing} of the 5000"
        with pytest.raises(EvaluationError, match=message):
            Metrics(instances_json=path)
        with pytest.raises(EvaluationError, match=message):
            module.compute(**module_inputs(*top50), target_metrics=["pmrp"], instances_json=str(path))
        (tmp_path / "r.json").write_text(json.dumps(small))
        line = cli_error(
            ["evaluate", "--rankings", tmp_path / "r.json", "--metrics", "pmrp", "--instances-json", path], capsys
        )
        assert f"{n_missing} of the 5000 test images are neither annotated nor listed" in line


def test_images_listed_without_annotations_are_fine_but_no_positive_is_an_error(gt, top50, metrics, tmp_path):
    # all listed, every annotation kept: the real file, same numbers as the fixture's
    full = write_instances(tmp_path / "full.json", gt.image_ids.tolist())
    assert Metrics(instances_json=full).compute_all_metrics(*top50, ["pmrp"]) == metrics.compute_all_metrics(
        *top50, ["pmrp"]
    )
    # all listed, no annotation at all: no PM query has a positive; no NaN
    empty = write_instances(tmp_path / "empty.json", [], gt.image_ids.tolist())
    with pytest.raises(EvaluationError, match="i2t pmrp: no query has a positive"):
        Metrics(instances_json=empty).compute_all_metrics(*top50, ["pmrp"])


@pytest.mark.parametrize("field,value", [("image_id", 391895.0), ("category_id", "1"), ("category_id", True)])
def test_instances_ids_must_be_integers(gt, tmp_path, field, value):
    path = write_instances(tmp_path / "i.json", gt.image_ids.tolist())
    raw = json.loads(path.read_text())
    raw["annotations"][3][field] = value
    path.write_text(json.dumps(raw))
    with pytest.raises(EvaluationError, match=r"i.json: annotations\[3\]: image_id and category_id must be"):
        Metrics(instances_json=path)


def test_pm_files_with_float_ids_are_refused(tmp_path):
    (tmp_path / "pm_image_to_caption.json").write_text(json.dumps({"391895": [770337.0]}))
    (tmp_path / "pm_caption_to_image.json").write_text(json.dumps({"770337": [391895]}))
    with pytest.raises(EvaluationError, match="pm_image_to_caption.json: the list of query 391895 must be"):
        Metrics(extra_file_dir=tmp_path)


# 4. / 5. compare ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def per_query_files(metrics, top50, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pq")
    i2t, t2i = top50
    weaker = {k: v[1:] + v[:1] for k, v in i2t.items()}
    out = []
    for name, lists in (("a", i2t), ("b", weaker)):
        per_query = metrics.per_query(lists, t2i, ("coco_5k_r1", "coco_1k_r1"))
        raw = {
            m: {d: {"query_ids": q.query_ids.tolist(), "values": q.values.tolist()} for d, q in by.items()}
            for m, by in per_query.items()
        }
        (folder / f"{name}.json").write_text(json.dumps(raw))
        out.append(folder / f"{name}.json")
    return out


def mutated(path, tmp_path, change):
    raw = json.loads(path.read_text())
    change(raw["coco_5k_r1"]["i2t"])
    new = tmp_path / f"bad_{path.name}"
    new.write_text(json.dumps(raw).replace("NaN", "NaN"))
    return new


def _nan(entry):
    entry["values"][7] = float("nan")


def _duplicated(entry):
    entry["query_ids"] = entry["query_ids"] * 2
    entry["values"] = entry["values"] + [0.0] * len(entry["values"])


def _short(entry):
    entry["values"] = entry["values"][:-1]


def _not_a_query(entry):
    entry["query_ids"][0] = 770337  # a caption id among image queries


@pytest.mark.parametrize(
    "change,message",
    [
        (_nan, r"B coco_5k_r1/i2t: non-finite values \(NaN or inf\) for queries"),
        (_duplicated, r"duplicate B coco_5k_r1/i2t query ids: "),
        (_short, r"B coco_5k_r1/i2t: 5000 query ids but 4999 values"),
        (_not_a_query, r"B coco_5k_r1/i2t: 1 id\(s\) are not queries of this metric: 770337"),
    ],
)
def test_compare_refuses_bad_per_query_files(per_query_files, tmp_path, capsys, change, message):
    a, b = per_query_files
    bad = mutated(b, tmp_path, change)
    with pytest.raises(EvaluationError, match=message):
        compare(json.loads(a.read_text()), json.loads(bad.read_text()), n_resamples=50)
    assert "error: " + message.replace("\\", "")[:20] in cli_error(
        ["compare", a, bad, "--n-resamples", 50], capsys
    ).replace("\\", "")


def test_coco_1k_ids_outside_the_folds_are_not_queries(per_query_files, tmp_path):
    a, b = per_query_files
    raw = json.loads(b.read_text())
    raw["coco_1k_r1"]["t2i"]["query_ids"][0] = 391895  # an image id: not a caption query
    with pytest.raises(EvaluationError, match="coco_1k_r1/t2i: 1 id.* not queries of this metric: 391895"):
        compare(json.loads(a.read_text()), raw, n_resamples=50)


@pytest.mark.parametrize("n,conf", [(0, 0.95), (-5, 0.95), (10**9, 0.95), (2.5, 0.95), (100, 0), (100, 1.0)])
def test_resampling_arguments(per_query_files, capsys, n, conf):
    a, b = per_query_files
    with pytest.raises(EvaluationError, match="n_resamples must be|confidence must be"):
        compare(json.loads(a.read_text()), json.loads(b.read_text()), n_resamples=n, confidence=conf)
    with pytest.raises(EvaluationError, match="n_resamples must be|confidence must be"):
        bootstrap_ci(np.ones(10), n_resamples=n, confidence=conf)
    with pytest.raises(EvaluationError, match="n_resamples must be|confidence must be"):
        paired_test(np.ones(10), np.zeros(10), n_resamples=n, confidence=conf)
    if isinstance(n, int):
        line = cli_error(["compare", a, b, "--n-resamples", n, "--confidence", conf], capsys)
        assert "n_resamples must be" in line or "confidence must be" in line


def test_kendall_tau_b_with_infinities_equals_scipy():
    x = np.array([1.0, np.inf, 3.0, -np.inf, 2.0, np.inf])
    y = np.array([2.0, 5.0, 1.0, 0.0, 2.0, 4.0])
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


# 6. huge K never allocates by K ------------------------------------------------------------------


@pytest.mark.parametrize("k", [20_000, 10**9, 2**70])
def test_huge_k_from_lists_and_matrix(metrics, module, top50, scores_gauss, k):
    """Top-50 lists cannot decide R@K for queries without a hit: named; a full matrix gives R@K = 1."""
    i2t, t2i = top50
    name = f"coco_5k_r{k}"
    with pytest.raises(EvaluationError, match=rf"i2t {name}: the ranked lists of \d+ query image\(s\) are too short"):
        metrics.compute_all_metrics(i2t, t2i, (name,))
    with pytest.raises(EvaluationError, match=rf"eccv_r{k}: the ranked lists of \d+ query .* are too short"):
        module.compute(**module_inputs(i2t, t2i), target_metrics=["eccv_recalls"], Ks=[k])
    out = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=(name,), directions="i2t")
    assert out == {name: {"i2t": 1.0}}


# 7. types ----------------------------------------------------------------------------------------


def test_numpy_int_ks_work(metrics, top50):
    expected = metrics.compute_all_metrics(*top50, ("coco_5k_recalls",), (5,))
    assert metrics.compute_all_metrics(*top50, ("coco_5k_recalls",), np.int64(5)) == expected
    assert metrics.compute_all_metrics(*top50, ("coco_5k_recalls",), np.array([5])) == expected


def test_target_metrics_none_is_refused_by_metrics_and_the_defaults_in_the_module(metrics, module, top50):
    """The official API takes names only; the evaluate module's documented default (None) is the defaults."""
    with pytest.raises(EvaluationError, match="target_metrics must be a metric name or a list of names, not NoneType"):
        metrics.compute_all_metrics(*top50, target_metrics=None)
    got = module.compute(**module_inputs(*top50), target_metrics=None)
    assert sorted({k.rsplit("/", 1)[0] for k in got}) == sorted(DEFAULT_TARGETS)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"Ks": 5.0}, "Ks must be a positive integer or a list of them, not 5.0"),
        ({"Ks": None}, "Ks must be a positive integer or a list of them, not None"),
        ({"Ks": ()}, "coco_5k_recalls needs at least one K: Ks is empty"),
        ({"Ks": [True]}, "Ks must be positive integers, not True"),
        ({"target_metrics": {"eccv_r1": 1}}, "target_metrics must be a metric name or a list of names, not dict"),
    ],
)
def test_bad_argument_types(metrics, module, top50, kwargs, message):
    args = {"target_metrics": ("coco_5k_recalls",), "Ks": (1,)} | kwargs
    with pytest.raises(EvaluationError, match=message):
        metrics.compute_all_metrics(*top50, **args)
    with pytest.raises(EvaluationError, match=message):
        module.compute(**module_inputs(*top50), **args)


@pytest.mark.parametrize("ids", [391895, "391895", {391895: 1}, np.int64(391895)])
def test_bare_ids_are_refused(metrics, ids):
    scores = np.zeros((5000, 25000), np.float16)
    with pytest.raises(EvaluationError, match="image ids must be a list or array of integer ids"):
        metrics.compute_all_metrics_from_scores(scores, image_ids=ids)


def test_directions_given_as_one_string(metrics, scores_gauss):
    one = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=("coco_5k_r1",), directions="i2t")
    assert set(one["coco_5k_r1"]) == {"i2t"}
    for bad in ("i2i", ["i2t", "i2t"], [], None):
        with pytest.raises(EvaluationError, match="directions must be 'i2t' and/or 't2i'"):
            metrics.compute_all_metrics_from_scores(scores_gauss, directions=bad)


# 8. files ----------------------------------------------------------------------------------------


def test_bom_and_utf16_rankings_read_like_utf8(tmp_path, capsys, small):
    text = json.dumps(small)
    expected = None
    for name, data in (
        ("utf8.json", text.encode()),
        ("bom.json", b"\xef\xbb\xbf" + text.encode()),
        ("utf16.json", text.encode("utf-16")),
    ):
        (tmp_path / name).write_bytes(data)
        out = tmp_path / f"{name}.out"
        assert main(["evaluate", "--rankings", str(tmp_path / name), "--metrics", *TOP50, "-o", str(out)]) == 0
        got = numbers(out)  # the numbers (the provenance holds each run's time)
        expected = expected or got
        assert got == expected
    capsys.readouterr()


@pytest.mark.parametrize("content", [b"", b'{"i2t": {"391895": [1, 2', b"\xff\xfe\x00garbage", b"[1, 2, 3]"])
def test_unreadable_rankings_files_name_the_file_and_format(tmp_path, capsys, content):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    line = evaluate_cli(path, capsys)
    assert str(path) in line and '{"i2t": {"<image id>": [caption ids, best first]}' in line


def test_misspelled_top_level_key(tmp_path, capsys, small):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"i2t": small["i2t"], "T2I": small["t2i"]}))
    assert "top-level keys must be 'i2t', 't2i', 't2t' or 'i2i' (lower case), got ['T2I']" in evaluate_cli(path, capsys)


def test_scores_given_as_npz_json_or_folder(tmp_path, capsys):
    np.savez(tmp_path / "s.npz", scores=np.zeros((2, 2), np.float32))
    (tmp_path / "s.json").write_text("[[0.5]]")
    for path, what in ((tmp_path / "s.npz", "a .npz archive"), (tmp_path / "s.json", "not a .npy file")):
        line = cli_error(["evaluate", "--scores", path], capsys)
        assert f"{path}: {what}" in line and "expected a .npy float matrix" in line
    assert "is a folder; expected a .npy" in cli_error(["evaluate", "--scores", tmp_path], capsys)
    assert "no such file" in cli_error(["evaluate", "--scores", tmp_path / "missing.npy"], capsys)


def test_output_that_is_a_folder_fails_before_any_work(tmp_path, capsys, small):
    (tmp_path / "r.json").write_text(json.dumps(small))
    line = evaluate_cli(tmp_path / "r.json", capsys, "-o", tmp_path)
    assert f"output {tmp_path} is a folder" in line


def test_id_files_must_hold_integers(tmp_path, capsys, scores_gauss):
    np.save(tmp_path / "s.npy", np.zeros((5000, 25000), np.float16))
    (tmp_path / "ids.json").write_text(json.dumps([1.5, 2]))
    (tmp_path / "ids.npy").write_bytes(b"")
    np.save(tmp_path / "f.npy", np.array([1.0, 2.0]))
    for ids, message in (
        ("ids.json", "image ids must be a list of integer ids"),
        ("f.npy", "image ids must be a flat list of integers, got float64"),
        ("ids.npy", "expected a .npy array of image ids"),
    ):
        line = cli_error(["evaluate", "--scores", tmp_path / "s.npy", "--image-ids", tmp_path / ids], capsys)
        assert ids in line and message in line


# 9. more accepted-bad input ----------------------------------------------------------------------


def test_extra_image_ids_must_not_be_negative_or_caption_ids(metrics, gt):
    scores = np.zeros((5001, 25000), np.float16)
    for extra, message in (
        (-7, "image ids must be non-negative: -7"),
        (
            int(gt.caption_ids[3]),
            f"1 of the image ids beside the test split are test-split caption ids.*: {gt.caption_ids[3]}",
        ),
    ):
        ids = np.concatenate([gt.image_ids, [extra]])
        with pytest.raises(EvaluationError, match=message):
            metrics.compute_all_metrics_from_scores(scores, image_ids=ids)


def test_pm_r_cap_zero_is_one_rule_everywhere(module, top50, tmp_path, capsys, small):
    with pytest.raises(EvaluationError, match="pm_r_cap must be an integer >= 1, not 0"):
        Metrics(pm_r_cap=0)
    with pytest.raises(EvaluationError, match="pm_r_cap must be an integer >= 1, not 0"):
        module.compute(**module_inputs(*top50), target_metrics=["pmrp"], instances_json=str(INSTANCES), pm_r_cap=0)
    (tmp_path / "r.json").write_text(json.dumps(small))
    with pytest.raises(SystemExit):
        main(["evaluate", "--rankings", str(tmp_path / "r.json"), "--metrics", "pmrp", "--pm-r-cap", "0"])
    assert "must be a positive integer or 'none', not '0'" in capsys.readouterr().err


# the Space's scoring function ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def space():
    from eccv_metric.hub import space

    return space


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda raw: raw["i2t"].__setitem__("0391895", raw["i2t"]["391895"]), "plain decimal integers"),
        (lambda raw: raw.__setitem__("T2I", raw.pop("t2i")), "got ['T2I']"),
        (lambda raw: raw["i2t"].__setitem__("391895", {"770337": 0.9}), "i2t query 391895: a ranked list must be"),
        (lambda raw: raw["i2t"]["391895"].__setitem__(0, 1.5), "i2t query 391895: ranked ids must be integers"),
    ],
)
def test_space_scoring_function_refuses_bad_files(space, small, tmp_path, change, message):
    raw = json.loads(json.dumps(small))
    change(raw)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw))
    answer = space.score(str(path), "", [], list(TOP50), "1")
    assert not answer.ok and answer.message.startswith("error: ") and message in answer.message
    assert answer.raw == "{}" and answer.rows == []
    answer = space.score(None, path.read_text(), [], list(TOP50), "1")  # pasted: the same rules
    assert answer.message.startswith("error: ") and message in answer.message


def test_space_scoring_function_bounds_k_and_sizes(space, small, tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(small))
    for ks, message in (
        ("1.5", "'1.5' is not a whole number written in 0-9"),
        ("²", "'²' is not a whole number written in 0-9"),
        (" ".join(["1"] * 11), "11 values; give at most 10"),
    ):
        answer = space.score(str(path), "", [], ["coco_5k_recalls"], ks)
        assert answer.message.startswith("error: Ks: ") and message in answer.message, answer.message
    monkeypatch.setattr(space, "MAX_FILE_BYTES", 1000)
    answer = space.score(str(path), "", [], ["coco_5k_r1"], "1")
    assert (
        answer.message.startswith("error: the 'rankings .json, TREC run")
        and "more than the Space takes" in answer.message
    )
    answer = space.score(None, "", [], ["coco_5k_r1"], "1")
    assert answer.message.startswith("error: nothing to score: give rankings (the 'rankings .json")


def test_partial_rankings_only_when_asked(space, metrics, top50):
    """Partial lists: refused by default; with partial=True, per-query values equal the full run's."""
    i2t, t2i = top50
    sub_i = dict(list(i2t.items())[:300])
    sub_t = dict(list(t2i.items())[:1000])
    targets = ("coco_5k_r1", "coco_1k_r1", "eccv_map_at_r", "cxc_r1", "pmrp")
    with pytest.raises(EvaluationError, match="have no ranked list"):
        metrics.compute_all_metrics(sub_i, sub_t, targets)
    full = metrics.per_query(i2t, t2i, targets)
    part = metrics.per_query(sub_i, sub_t, targets, partial=True)
    for name in targets:
        for direction, given in (("i2t", sub_i), ("t2i", sub_t)):
            keep = np.isin(full[name][direction].query_ids, list(given))
            assert keep.sum() > 0
            assert (part[name][direction].query_ids == full[name][direction].query_ids[keep]).all()
            assert (part[name][direction].values == full[name][direction].values[keep]).all()
    pasted = json.dumps({"i2t": {str(k): v for k, v in sub_i.items()}})
    answer = space.score(None, pasted, [], list(targets[:2]), "1")
    assert answer.message.startswith("error: i2t: 4700 query image id(s) needed by")
    answer = space.score(None, pasted, [], list(targets[:2]), "1", True)
    assert answer.message.startswith("scored 300 i2t ranked lists (partial") and len(answer.rows) == 2
