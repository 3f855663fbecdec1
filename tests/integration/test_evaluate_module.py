"""The evaluate module, loaded for real with evaluate.load(path), offline."""

from __future__ import annotations

import doctest
import importlib.util
import json
import warnings

import evaluate
import numpy as np
import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import EvaluationError
from eccv_metric.hub.evaluate_glue import nest
from tests.fixtures import INSTANCES

TOP50 = ("eccv_r1", "eccv_map_at_r", "eccv_rprecision", "coco_5k_recalls", "cxc_recalls")


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(EVALUATE_MODULE_DIR))


def as_inputs(i2t, t2i):
    return {
        "predictions": list(i2t.values()) + list(t2i.values()),
        "references": list(i2t) + list(t2i),
        "directions": ["i2t"] * len(i2t) + ["t2i"] * len(t2i),
    }


def test_doctest_examples_run():
    spec = importlib.util.spec_from_file_location("eccv_map_at_r", EVALUATE_MODULE_DIR / "eccv_map_at_r.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(mod.EccvMapAtR, "EccvMapAtR", globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 8 and result.failed == 0


def test_same_numbers_as_library_and_official(module, metrics, official, top50):
    i2t, t2i = top50
    flat = module.compute(**as_inputs(i2t, t2i), target_metrics=TOP50, Ks=(1, 5, 10))
    library = metrics.compute_all_metrics(i2t, t2i, TOP50, (1, 5, 10))
    assert nest(flat) == library
    assert set(flat) == {f"{m}/{d}" for m in library for d in ("i2t", "t2i")}
    expected = official.compute_all_metrics(i2t, t2i, target_metrics=TOP50, Ks=(1, 5, 10))
    for name, by_dir in expected.items():
        for direction, value in by_dir.items():
            assert abs(flat[f"{name}/{direction}"] - float(value)) <= 1e-12


def test_batches_and_single_examples_add_up(module, metrics, top50):
    i2t, t2i = top50
    inputs = as_inputs(i2t, t2i)
    n = len(inputs["references"])
    for start in range(0, n, 7000):
        module.add_batch(**{k: v[start : start + 7000] for k, v in inputs.items()})
    batched = module.compute(target_metrics=("eccv_map_at_r", "coco_5k_r1"))
    for q, ranked in list(i2t.items()):
        module.add(prediction=ranked, reference=q, direction="i2t")
    one_direction = module.compute(target_metrics=("eccv_map_at_r", "coco_5k_r1"), nested=True)
    assert one_direction == {k: {"i2t": v["i2t"]} for k, v in nest(batched).items()}
    assert nest(batched) == metrics.compute_all_metrics(i2t, t2i, ("eccv_map_at_r", "coco_5k_r1"))


def test_score_matrix_path(module, metrics, scores_gauss):
    targets = ("coco_1k_recalls", "eccv_map_at_r", "eccv_rprecision")
    flat = module.compute(scores=scores_gauss, target_metrics=targets)
    assert nest(flat) == metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=targets)
    nested = module.compute(
        scores=scores_gauss[::-1], image_ids=metrics.gt.image_ids[::-1], target_metrics=targets, nested=True
    )
    assert nested == nest(flat)


def test_pmrp_with_categories_and_without(module, metrics, top50):
    i2t, t2i = top50
    flat = module.compute(**as_inputs(i2t, t2i), target_metrics=["pmrp"], instances_json=str(INSTANCES))
    assert nest(flat) == metrics.compute_all_metrics(i2t, t2i, ("pmrp",))
    with pytest.raises(EvaluationError, match="pmrp needs COCO categories: pass instances_json="):
        module.compute(**as_inputs(i2t, t2i), target_metrics=["pmrp"])


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda x: x["predictions"].__setitem__(0, [1.5] + x["predictions"][0][1:]),
            "query 391895: ranked ids must be integers",
        ),
        (lambda x: x["references"].__setitem__(0, 391895.0), "references .query ids. must be integers"),
        (
            lambda x: x["directions"].__setitem__(3, "x2y"),
            "directions must be 'i2t', 't2i', 't2t' or 'i2i', got \\['x2y'\\]",
        ),
        (lambda x: x["directions"].pop(), "must have one entry per query"),
        (
            lambda x: x["predictions"][0].__setitem__(1, x["predictions"][0][0]),
            "i2t query 391895 ranks the same caption",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(module, top50, change, message):
    i2t, t2i = top50
    inputs = as_inputs(i2t, t2i)
    inputs["predictions"] = [list(p) for p in inputs["predictions"]]
    change(inputs)
    with pytest.raises(EvaluationError, match=message):
        module.compute(**inputs)


def test_library_errors_reach_the_user_unchanged(module, metrics, top50):
    i2t, t2i = top50
    i2t = dict(i2t)
    del i2t[391895]
    with pytest.raises(EvaluationError) as from_library:
        metrics.compute_all_metrics(i2t, t2i, ("coco_5k_r1",))
    with pytest.raises(EvaluationError) as from_module:
        module.compute(**as_inputs(i2t, t2i), target_metrics=["coco_5k_r1"])
    assert str(from_module.value) == str(from_library.value)
    with pytest.raises(EvaluationError, match="nothing to score"):
        module.compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(EvaluationError, match="give one input"):
            module.compute(**as_inputs(i2t, t2i), scores=np.zeros((5000, 25000), np.float16))


def test_space_handler_scores_an_uploaded_rankings_file(top50, metrics, tmp_path):
    from eccv_metric.hub import space

    i2t, t2i = top50
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    answer = space.score(str(path), "", [], ["eccv_map_at_r", "coco_5k_recalls"], "1, 5")
    assert json.loads(answer.raw) == metrics.compute_all_metrics(i2t, t2i, ("eccv_map_at_r", "coco_5k_recalls"), (1, 5))
    assert [r[1] for r in answer.rows] == ["coco_5k_r1", "coco_5k_r5", "eccv_map_at_r"] and answer.ok  # the ids
    error = space.score(str(path), "", [], ["pmrp"], "1")
    assert not error.ok and error.message.startswith("error: pmrp needs COCO categories") and error.raw == "{}"
    assert error.rows == []


def test_space_requirements_install_what_the_module_imports():
    lines = (EVALUATE_MODULE_DIR / "requirements.txt").read_text().split()
    assert "eccv_caption==0.1.0" in lines and not any(line.endswith(".whl") for line in lines)
    assert any(line.startswith("evaluate") for line in lines) and any(line.startswith("gradio==") for line in lines)
    header = (EVALUATE_MODULE_DIR / "README.md").read_text().split("---")[1]
    for key in ("title:", "emoji:", "sdk: gradio", "app_file: app.py", "- evaluate", "- metric", "description:"):
        assert key in header


def test_ground_truth_from_a_built_dataset_folder(top50, tmp_path):
    from eccv_caption_dataset.hub_folder import build

    build(tmp_path / "ds", log=lambda _: None)
    i2t, t2i = top50
    targets = ["eccv_map_at_r", "cxc_r1", "coco_1k_r1"]
    default = evaluate.load(str(EVALUATE_MODULE_DIR)).compute(**as_inputs(i2t, t2i), target_metrics=targets)
    via_load = evaluate.load(str(EVALUATE_MODULE_DIR), ground_truth=str(tmp_path / "ds"))
    assert via_load.compute(**as_inputs(i2t, t2i), target_metrics=targets) == default
    module = evaluate.load(str(EVALUATE_MODULE_DIR))
    assert module.compute(**as_inputs(i2t, t2i), target_metrics=targets, ground_truth=str(tmp_path / "ds")) == default


def test_interleaved_directions_give_the_same_numbers(module, top50):
    i2t, t2i = top50
    inputs = as_inputs(i2t, t2i)
    order = np.random.default_rng(0).permutation(len(inputs["references"]))
    shuffled = {k: [v[i] for i in order] for k, v in inputs.items()}
    targets = ["eccv_map_at_r", "coco_5k_r1", "cxc_r1"]
    assert module.compute(**shuffled, target_metrics=targets) == module.compute(**inputs, target_metrics=targets)


def test_importing_the_library_loads_no_arrow_datasets_or_evaluate():
    import subprocess
    import sys

    code = "import sys, eccv_metric; print(sorted(m for m in ('pyarrow', 'datasets', 'evaluate') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-1000:]


def test_unknown_keywords_are_one_line_naming_them_and_the_accepted_ones(module):
    """Issue 35: compute(foo=...) was a TypeError from evaluate's internals."""
    for call in (lambda: module.compute(foo=1), lambda: module.compute(scores=None, Ks=(1,), foo=1, bar=2)):
        with pytest.raises(EvaluationError) as info:
            call()
        message = str(info.value)
        assert message.startswith("Bad inputs for evaluation module: ['")
        assert "'foo'" in message and "compute() takes predictions, references, directions, scores" in message
        assert "target_metrics" in message and "\n" not in message
    with pytest.raises(EvaluationError, match=r"Bad inputs for evaluation module: \['bar', 'foo'\]"):
        module.compute(foo=1, bar=2)
