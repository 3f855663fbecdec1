"""The CLI and the front ends, what they say: a missing matplotlib is one line; errors in each front end's
words; compare checks every benchmark's queries; a NaN anywhere in a score matrix is refused; the smaller CLI
items (files of the wrong kind named, the missing half of an input named, help texts); a model run's chance
note advises on the model, not on ids it does not take."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Resources
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.analysis.compare import compare_files
from eccv_metric.cli.main import build_parser
from eccv_metric.cli.main import main
from eccv_metric.hub import space
from tests.unit.world import vectors

ROOT = Path(__file__).resolve().parents[2]


def quiet_evaluate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChanceLevelWarning)
        return evaluate(*args, **kwargs)


@pytest.fixture()
def world_evaluate(monkeypatch, res):
    """The CLI's evaluate (and compare, export-trec) with the world's ground truth and sources."""
    import eccv_metric.cli.analysis
    import eccv_metric.cli.evaluate

    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)
    monkeypatch.setattr(eccv_metric.cli.analysis, "resources_of", lambda args: res)


def error_line(capsys, argv: list[str]) -> str:
    """The one error line of a failing command (exit status 2): stderr's last line (--demo says what it is first)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("error: ") and all(not line.startswith("error") for line in lines[:-1]), lines
    assert len(lines) == 1 or (len(lines) == 2 and lines[0].startswith("demo: ")), lines
    return lines[-1]


# 1. correlate --plot without matplotlib -------------------------------------------------------------------------


def test_correlate_plot_without_matplotlib_is_one_error_line(tmp_path):
    fake = tmp_path / "site" / "matplotlib"  # a matplotlib that cannot be imported, first on the path
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('a broken matplotlib (test stand-in)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)])}
    plot = tmp_path / "tau.png"
    done = subprocess.run(
        [sys.executable, "-m", "eccv_metric.cli", "correlate", "--plot", str(plot)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: the heatmap needs matplotlib"), done.stderr
    assert "a broken matplotlib" in done.stderr and "pip install matplotlib" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # said before the table, not after it
    assert not plot.exists()


# 2. errors in each front end's words ---------------------------------------------------------------------------


def test_cli_names_flags_where_the_library_names_keywords(world, world_evaluate, tmp_path, capsys):
    img, cap = vectors(world)
    np.save(tmp_path / "img_cap.npy", img @ cap.T)
    np.save(tmp_path / "narrow.npy", (img @ cap.T)[:, :7])
    said = error_line(capsys, ["evaluate", "--metrics", "cxc_t2t_r1", "--demo"])
    assert said.endswith("give --caption-scores (or --caption-embeddings)")
    said = error_line(capsys, ["evaluate", "--scores", str(tmp_path / "img_cap.npy"), "--metrics", "cxc_sts_spearman"])
    assert said.endswith("needs --caption-scores (or --caption-embeddings)")
    said = error_line(capsys, ["evaluate", "--scores", str(tmp_path / "narrow.npy")])
    assert "--caption-ids was not given, so the columns are read as" in said  # its columns are the captions
    for line in (said,):
        assert "caption_ids" not in line and "image_ids" not in line
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(str(c) for c in world.caption_ids[:7]))
    said = error_line(capsys, ["evaluate", "--scores", str(tmp_path / "narrow.npy"), "--caption-ids", str(ids)])
    assert "missing from the caption ids given (--caption-ids)" in said


def test_space_names_its_boxes_where_the_library_names_keywords(world, res, monkeypatch, tmp_path):
    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    img, cap = vectors(world)
    np.save(tmp_path / "img_cap.npy", img @ cap.T)
    np.save(tmp_path / "narrow.npy", (img @ cap.T)[:, :7])
    got = space.score(upload=str(tmp_path / "img_cap.npy"), metrics=["cxc_t2t_r1"])
    assert not got.ok and "caption_scores" not in got.message and "caption_embeddings" not in got.message
    assert f"the '{space.LABELS['caption_embeddings']}' box" in got.message
    got = space.score(upload=str(tmp_path / "narrow.npy"), metrics=["coco_5k_r1"])
    assert not got.ok and "caption_ids" not in got.message
    assert f"the '{space.LABELS['caption_ids']}' box was not given" in got.message


# 3. compare checks the queries of every benchmark --------------------------------------------------------------


def _fg_per_query(world, res, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    fg = world.fg["mscoco_fg"]
    img = rng.integers(-2, 3, (len(fg["gallery"]), 3)).astype(np.float32)
    cap = rng.integers(-2, 3, (len(fg["captions"]), 3)).astype(np.float32)
    source = Embeddings(img, cap, fg["gallery"], fg["captions"])
    names = ["mscoco_fg_r1", "mscoco_fg_map_at_r", "mscoco_fg_original_pool_r1", "pmrp"]
    per_query = quiet_evaluate(source, names[:3], (1,), resources=res).per_query_json()
    pm = quiet_evaluate(Embeddings(*vectors(world, seed)), names[3:], (1,), resources=res).per_query_json()
    return {**per_query, **pm}


@pytest.mark.parametrize(
    ("metric", "direction", "bad"),
    [
        ("mscoco_fg_r1", "i2t", "distractor"),  # an image of the gallery, not an annotated query image
        ("mscoco_fg_map_at_r", "t2i", "unknown"),  # no item at all
        ("mscoco_fg_original_pool_r1", "t2i", "image"),  # an image id among caption queries
        ("pmrp", "i2t", "unannotated"),  # a test image without COCO categories: never a PM query
    ],
)
def test_compare_refuses_ids_that_are_not_queries_of_every_benchmark(world, res, tmp_path, metric, direction, bad):
    fg = world.fg["mscoco_fg"]
    files = []
    for seed in (1, 2):
        files.append(tmp_path / f"{seed}.json")
        files[-1].write_text(json.dumps(_fg_per_query(world, res, seed)))
    raw = json.loads(files[1].read_text())
    queries = raw[metric][direction]["query_ids"]
    replace = {
        "distractor": next(i for i in fg["gallery"] if i not in fg["annotated"]),
        "unknown": 123_456_789,
        "image": fg["gallery"][0],
        "unannotated": next((i for i in world.image_ids if i not in world.categories), None),
    }[bad]
    assert replace is not None and replace not in queries
    queries[0] = replace
    files[1].write_text(json.dumps(raw))
    assert compare_files(files[0], files[0], 50, resources=res)  # the good file is compared
    with pytest.raises(EvaluationError, match=rf"B {metric}/{direction}: 1 id\(s\) are not queries of this metric: "):
        compare_files(files[0], files[1], 50, resources=res)


def test_compare_says_where_a_metrics_queries_come_from_when_its_ground_truth_is_missing(world, res, tmp_path):
    from eccv_metric import GroundTruth

    path = tmp_path / "pq.json"
    path.write_text(json.dumps(quiet_evaluate(Embeddings(*vectors(world)), ["pmrp"], resources=res).per_query_json()))
    no_categories = Resources(GroundTruth.from_id_lists(world.caption_ids, world.lists))
    with pytest.raises(
        EvaluationError, match=r"^pmrp/i2t: its queries are told from its ground truth, .*instances_json="
    ):
        compare_files(path, path, 50, resources=no_categories)
    assert compare_files(path, path, 50, resources=res)


def test_compare_names_the_two_files_and_the_wrong_kind_of_file(world, world_evaluate, res, tmp_path, capsys):
    img, cap = vectors(world)
    results = quiet_evaluate(ScoreMatrix(img @ cap.T), ["coco_5k_r1"], resources=res)
    (tmp_path / "a_pq.json").write_text(json.dumps(results.per_query_json()))
    (tmp_path / "a_results.json").write_text(json.dumps(results.means()))
    (tmp_path / "rankings.json").write_text(json.dumps({"i2t": {str(world.image_ids[0]): world.caption_ids[:3]}}))
    a, results_file, rankings = (str(tmp_path / n) for n in ("a_pq.json", "a_results.json", "rankings.json"))
    assert main(["compare", a, a, "--n-resamples", "50"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [f"A: {a}", f"B: {a}"]
    said = error_line(capsys, ["compare", a, results_file])
    assert said == (
        f"error: {results_file} is a results file (evaluate -o), not per-query values: give the per-query file "
        "(evaluate --per-query)"
    )
    said = error_line(capsys, ["compare", rankings, a])
    assert said.startswith(f"error: {rankings} is a rankings file (evaluate --rankings), not per-query values")
    said = error_line(capsys, ["leaderboard", "--with", rankings])
    assert said.startswith(f"error: {rankings} is a rankings file (evaluate --rankings), not results: give the ")


# 4. NaN / inf anywhere in a score matrix is refused -------------------------------------------------------------


def _unread_cell(world) -> tuple[int, int]:
    """A cell no ECCV metric reads: an image that is no ECCV i2t query, a caption that is no ECCV t2i query."""
    row = next(k for k, i in enumerate(world.image_ids) if i not in world.lists["eccv"]["i2t"])
    col = next(k for k, c in enumerate(world.caption_ids) if c not in world.lists["eccv"]["t2i"])
    return row, col


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_non_finite_score_no_metric_reads_is_refused(world, res, value):
    img, cap = vectors(world)
    scores = img @ cap.T
    row, col = _unread_cell(world)
    scores[row, col] = value
    shown = "NaN" if np.isnan(value) else str(value)
    with pytest.raises(EvaluationError, match=rf"^scores= holds {shown} at row {row}, column {col}: every score"):
        quiet_evaluate(ScoreMatrix(scores), ["eccv_map_at_r"], resources=res)
    scores[0, 0] = np.nan  # several cells: the first named, all counted
    with pytest.raises(EvaluationError, match=r"holds NaN at row 0, column 0 \(2 non-finite cells in all\)"):
        quiet_evaluate(ScoreMatrix(scores), ["eccv_map_at_r"], resources=res)


def test_non_finite_square_scores_and_embeddings(world, res, world_evaluate, tmp_path, capsys):
    _, cap = vectors(world)
    square = cap @ cap.T
    np.fill_diagonal(square, -np.inf)  # a query's own score is never read: -inf there is common, and accepted
    want = quiet_evaluate(ScoreMatrix(caption_scores=cap @ cap.T), ["coco_t2t_r1"], resources=res).means()
    assert quiet_evaluate(ScoreMatrix(caption_scores=square), ["coco_t2t_r1"], resources=res).means() == want
    square[3, 5] = np.nan
    with pytest.raises(EvaluationError, match=r"^caption_scores= holds NaN at row 3, column 5: "):
        quiet_evaluate(ScoreMatrix(caption_scores=square), ["coco_t2t_r1"], resources=res)
    img, _ = vectors(world)
    img[2, 1] = np.nan  # image embeddings, though only the caption-caption metrics are asked
    with pytest.raises(EvaluationError, match=r"image embeddings: rows 2 hold NaN or inf \(NaN at row 2, column 1\): "):
        quiet_evaluate(Embeddings(img, cap), ["coco_t2t_r1"], resources=res)
    np.save(tmp_path / "square.npy", square)
    said = error_line(capsys, ["evaluate", "--caption-scores", str(tmp_path / "square.npy")])
    assert said.startswith("error: --caption-scores holds NaN at row 3, column 5: ")


# 5. the smaller items --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["image", "caption"])
def test_one_modality_alone_names_the_missing_half_before_the_failed_defaults(world, kind, tmp_path, capsys):
    import eccv_metric.cli.evaluate

    offline = Resources(world.gt, cxc_source=tmp_path / "no-cxc")  # the defaults' CxC ratings cannot be had
    img, cap = vectors(world)
    np.save(tmp_path / "emb.npy", img if kind == "image" else cap)
    other = "caption" if kind == "image" else "image"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: offline)
        said = error_line(capsys, ["evaluate", f"--{kind}-embeddings", str(tmp_path / "emb.npy")])
    assert said.startswith(
        f"error: only --{kind}-embeddings was given: the image-caption benchmarks need --{other}-embeddings too; "
        "scored alone, the defaults are "
    )
    assert "(they failed: " in said and "--cxc-source" in said
    with pytest.raises(EvaluationError, match=rf"^only {kind}_embeddings= was given: .* need {other}_embeddings="):
        quiet_evaluate(Embeddings(**{f"{kind}s": img if kind == "image" else cap}), resources=offline)


def _help_of(parser, *path: str) -> dict[str, str | None]:
    for name in path:
        parser = next(a for a in parser._actions if a.dest == "command").choices[name]
    return {opt: action.help for action in parser._actions for opt in action.option_strings}


def test_help_texts():
    assert _help_of(build_parser(), "benchmarks")["--format"]
    assert _help_of(build_parser(), "export-trec")["--direction"]
    top = build_parser().format_help()
    assert "--model" in top and "evaluate" in top
    evaluate_help = next(a for a in build_parser()._actions if a.dest == "command").choices["evaluate"]
    assert "--model" in evaluate_help.format_help()


@pytest.mark.parametrize("form", [[], ["--format", "json"]])
def test_benchmarks_name_the_flags_the_cli_takes(monkeypatch, capsys, res, form):
    """What a benchmark needs, in flags (the registry writes keywords, cli.common.CLI_WORDS words them), each a
    flag of evaluate; no Python keyword is printed."""
    import eccv_metric.cli.evaluate
    from eccv_metric.benchmarks.definitions import REGISTRY
    from eccv_metric.benchmarks.resource_options import ResourceOptions

    monkeypatch.setattr(eccv_metric.cli.evaluate, "default_resources", lambda: res)
    assert main(["benchmarks", *form]) == 0
    out = capsys.readouterr().out
    keywords = [f.name for f in fields(ResourceOptions)] + ["source_dir"]
    assert not re.search(r"\b(" + "|".join(keywords) + r")\b", out), out
    printed = set(re.findall(r"--[a-z][a-z-]+", out)) - set(form)
    assert printed == {"--instances-json", "--extra-file-dir", "--cxc-source", "--fg-source", "--source-dir"}
    assert printed <= set(_help_of(build_parser(), "evaluate"))
    needs = [row["needs"] for row in json.loads(out)] if form else re.findall(r"^  needs: (.*)$", out, re.M)
    assert len(needs) == len(list(REGISTRY))
    assert needs.count("CxC ratings (--cxc-source or --source-dir)") == 5
    assert needs.count("MSCOCO-FG files (--fg-source or --source-dir)") == 3


# 6. a model run's chance note advises on the model ----------------------------------------------------------------


class Noise:
    """A weight-free stand-in for an untrained model: seeded noise per item (from its pixels or its text)."""

    def encode_images(self, images):  # noqa: ANN001, ANN201
        return np.stack([np.random.default_rng(sum(im.tobytes())).standard_normal(8) for im in images])

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return np.stack([np.random.default_rng(sum(map(ord, t))).standard_normal(8) for t in texts])


def test_a_model_runs_chance_note_advises_on_the_model(world, tmp_path):
    from eccv_metric.models import evaluate_model
    from tests.unit.model_world import write_data

    data = write_data(world, tmp_path / "data")
    with pytest.warns(ChanceLevelWarning) as caught:
        out = evaluate_model(
            Noise(), data, benchmarks=["coco_5k"], resources=world.resources(), workers=0, batch_size=8, cache=False
        )
    notes = [n for n in out.results.notes if "chance level" in n]
    assert notes and all("image_ids" not in n and "different models" not in n for n in notes)
    assert all("not trained or whose weights were not loaded" in n for n in notes)
    warned = [str(w.message) for w in caught if "chance level" in str(w.message)]
    assert warned == notes  # the warning says what the notes say
    assert all(w.filename == __file__ for w in caught)  # at the caller's line
