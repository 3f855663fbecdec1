"""One rule for metrics beside benchmarks (benchmarks.request): the metrics named and every named benchmark's
defaults; neither: the defaults for the input. The front ends (evaluate(), the CLI, the evaluate module's glue,
the Space's handler, evaluate_model's request) give the same metric names for the same request, on every input
kind; the expected names are written out here."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import eccv_metric.cli.evaluate
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.core.defaults import KS
from eccv_metric.hub import space
from eccv_metric.hub.evaluate_glue import compute
from eccv_metric.hub.evaluate_glue import module_benchmarks
from eccv_metric.models import run as model_run

OFFICIAL = {"coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r"}
COCO_5K = {"coco_5k_r1", "coco_5k_r5", "coco_5k_r10"}
COCO_T2T = {"coco_t2t_r1", "coco_t2t_r5", "coco_t2t_r10"}
CXC_T2T = {"cxc_t2t_r1", "cxc_t2t_r5", "cxc_t2t_r10"}
# (metrics, benchmarks) -> the names the rule gives, per kind of input (image-caption; captions only)
IMAGE_CAPTION = [
    ((["eccv_r1", "coco_5k_r5"], None), {"eccv_r1", "coco_5k_r5"}),  # metrics only
    ((None, ["coco_5k"]), COCO_5K),  # benchmarks only
    ((["eccv_r1", "coco_5k_r5"], ["coco_5k"]), {"eccv_r1"} | COCO_5K),  # both: added up, each once
    ((["coco_5k_r5"], ["eccv_caption"]), OFFICIAL | {"coco_5k_r5"}),  # the official alias beside a metric
    ((None, None), OFFICIAL),  # neither: the defaults for the input
]
CAPTIONS = [
    ((["cxc_t2t_r1"], None), {"cxc_t2t_r1"}),
    ((None, ["coco_t2t"]), COCO_T2T),
    ((["cxc_t2t_r1"], ["coco_t2t"]), {"cxc_t2t_r1"} | COCO_T2T),
    ((None, None), COCO_T2T | CXC_T2T),
]


@pytest.fixture(scope="module")
def inputs(world, tmp_path_factory):
    """Each input kind as every front end takes it: the library object, the CLI's flags, the Space's boxes, the
    module's keywords (files written once)."""
    folder = tmp_path_factory.mktemp("rule")
    rng = np.random.default_rng(5)
    img = rng.integers(-3, 4, (len(world.image_ids), 4)).astype(np.float64)
    cap = rng.integers(-3, 4, (len(world.caption_ids), 4)).astype(np.float64)
    scores = img @ cap.T
    np.save(folder / "scores.npy", scores)
    np.save(folder / "captions.npy", cap)
    ranked = {d: np.argsort(-m, axis=1, kind="stable") for d, m in (("i2t", scores), ("t2i", scores.T))}
    i2t = {q: [world.caption_ids[j] for j in row] for q, row in zip(world.image_ids, ranked["i2t"], strict=True)}
    t2i = {q: [world.image_ids[j] for j in row] for q, row in zip(world.caption_ids, ranked["t2i"], strict=True)}
    (folder / "lists.json").write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    arrays = {"i2t": _arrays(i2t), "t2i": _arrays(t2i)}
    files = {name: str(folder / name) for name in ("scores.npy", "captions.npy", "lists.json")}
    return {  # (the input, the CLI's flags, the Space's boxes, (the module's ranked lists, its keywords))
        "scores": (ScoreMatrix(scores), ["--scores", files["scores.npy"]], {"upload": files["scores.npy"]},
                   ({}, {"scores": scores})),
        "lists": (Rankings(i2t=i2t, t2i=t2i), ["--rankings", files["lists.json"]], {"upload": files["lists.json"]},
                  (arrays, {})),
        "captions": (Embeddings(None, cap), ["--caption-embeddings", files["captions.npy"]],
                     {"caption_embeddings": files["captions.npy"]}, ({}, {"caption_embeddings": cap})),
    }  # fmt: skip


def _arrays(lists: dict[int, list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    queries = np.array(list(lists), dtype=np.int64)
    flat = np.array([i for ranked in lists.values() for i in ranked], dtype=np.int64)
    return queries, flat, np.array([len(v) for v in lists.values()], dtype=np.int64)


def by_evaluate(given, request, res, capsys) -> set[str]:
    metrics, benchmarks = request
    return set(evaluate(given[0], metrics, benchmarks=benchmarks, resources=res).means())


def by_cli(given, request, res, capsys) -> set[str]:
    metrics, benchmarks = request
    argv = ["evaluate", *given[1], "--json"]
    argv += ["--metrics", *metrics] if metrics else []
    argv += ["--benchmarks", *benchmarks] if benchmarks else []
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return set(json.loads(out))


def by_module(given, request, res, capsys) -> set[str]:
    metrics, benchmarks = request
    arrays, parts = given[3]
    benchmark = module_benchmarks(metrics, KS, benchmarks, "default")  # the module without a config
    return set(compute(arrays, parts, metrics, KS, res, benchmark).means())


def by_space(given, request, res, capsys) -> set[str]:
    metrics, benchmarks = request
    answer = space.score(**given[2], benchmarks=benchmarks or [], metrics=metrics or [])
    assert answer.ok, answer.message
    return set(answer.means)


FRONT_ENDS = [by_evaluate, by_cli, by_module, by_space]


@pytest.fixture()
def world_front_ends(monkeypatch, res):
    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)


@pytest.mark.parametrize(
    ("kind", "request_", "expected"),
    [(k, r, e) for k in ("scores", "lists") for r, e in IMAGE_CAPTION] + [("captions", r, e) for r, e in CAPTIONS],
)
def test_every_front_end_gives_the_rules_names(inputs, res, world_front_ends, capsys, kind, request_, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # chance-level notes of a small random world
        for front_end in FRONT_ENDS:
            assert front_end(inputs[kind], request_, res, capsys) == expected, front_end.__name__


@pytest.mark.parametrize(("request_", "expected"), IMAGE_CAPTION[:-1])
def test_the_model_paths_request_is_the_rules(request_, expected, monkeypatch):
    """evaluate_model parses its request through Request.parse before any model loads (caught here as it reaches
    evaluate_model_request); with neither, a model is scored on every benchmark its data has (its default)."""
    metrics, benchmarks = request_
    seen = {}
    monkeypatch.setattr(model_run, "evaluate_model_request", lambda model, data, request, **kw: seen.update(
        request=request, skip=kw["skip_unavailable"]))  # fmt: skip
    model_run.evaluate_model(None, "unused", metrics, KS, benchmarks=benchmarks)
    assert {r.name for r in seen["request"].metrics} == expected and not seen["skip"]


def test_the_module_config_is_a_default_and_a_scope():
    assert module_benchmarks(None, KS, None, "mscoco_fg") == "mscoco_fg"  # neither named: the config's defaults
    assert module_benchmarks(["mscoco_fg_r1"], KS, None, "mscoco_fg") is None  # named metrics: those only
    assert module_benchmarks(["eccv_r1"], KS, ["coco_5k"], "mscoco_fg") == ["coco_5k"]  # benchmark= wins
    with pytest.raises(EvaluationError, match="target_metrics eccv_r1 are not metrics of mscoco_fg"):
        module_benchmarks(["eccv_r1"], KS, None, "mscoco_fg")


def test_the_spaces_box_fill_is_what_the_rule_adds(inputs, res, world_front_ends):
    """Picking a benchmark fills the metrics box with its defaults: scoring the filled box alone, or beside the
    pick, gives the same names (the fill shows the rule, it does not change the outcome)."""
    picked = ["coco_5k", "eccv"]
    filled = space.metrics_for(picked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = space.score(**inputs["scores"][2], benchmarks=picked, metrics=filled)
        alone = space.score(**inputs["scores"][2], metrics=filled)
    assert both.ok and alone.ok and both.means == alone.means
    assert space.metrics_for(space.EXAMPLE_BENCHMARKS) == space.EXAMPLE_METRICS
