"""Issue 35 (round four), the front ends on the synthetic world: the Space's handler, the CLI and the evaluate
module's glue read every option strictly, name their own boxes / flags / keywords, and never merge, drop or
write what they cannot score."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.hub import space
from eccv_metric.hub.space_words import hide_paths
from eccv_metric.hub.space_words import note_in_space_words
from eccv_metric.hub.space_words import plot_points


@pytest.fixture()
def world_space(monkeypatch, res):
    """The Space's handler with the world's ground truth and sources."""
    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    return space


def unequal_norms(world, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings whose rows have very different norms: dot product and cosine rank differently."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((len(world.image_ids), 6)) * rng.uniform(0.1, 10, (len(world.image_ids), 1))
    cap = rng.standard_normal((len(world.caption_ids), 6)) * rng.uniform(0.1, 10, (len(world.caption_ids), 1))
    return img, cap


# 1. booleans are parsed strictly -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["False", "false", "FALSE", False])
def test_space_normalize_false_as_text_is_the_dot_product(world, res, world_space, tmp_path, text):
    img, cap = unequal_norms(world)
    np.save(tmp_path / "img.npy", img)
    np.save(tmp_path / "cap.npy", cap)
    names = ["coco_5k_r1", "coco_5k_r5"]
    dot = evaluate(Embeddings(img, cap, normalize=False), names, resources=res).means()
    cosine = evaluate(Embeddings(img, cap, normalize=True), names, resources=res).means()
    assert dot != cosine  # the test can tell them apart
    kwargs = {"image_embeddings": str(tmp_path / "img.npy"), "caption_embeddings": str(tmp_path / "cap.npy")}
    got = world_space.score(metrics=names, normalize=text, **kwargs)
    assert got.ok, got.message
    assert got.means == dot
    assert world_space.score(metrics=names, normalize="True", **kwargs).means == cosine


@pytest.mark.parametrize("value", ["yes", "0", "", 1, None, "False!"])
@pytest.mark.parametrize("box", ["normalize", "partial"])
def test_space_other_booleans_are_one_line_naming_the_tick(world, world_space, tmp_path, box, value):
    img, cap = unequal_norms(world)
    np.save(tmp_path / "img.npy", img)
    np.save(tmp_path / "cap.npy", cap)
    got = world_space.score(
        metrics=["coco_5k_r1"],
        image_embeddings=str(tmp_path / "img.npy"),
        caption_embeddings=str(tmp_path / "cap.npy"),
        **{box: value},
    )
    assert not got.ok
    assert space.LABELS[box] in got.message and "true or false" in got.message
    assert "\n" not in got.message


def test_space_partial_false_as_text_refuses_missing_queries(world, world_space):
    some = {"i2t": {str(world.image_ids[0]): world.caption_ids[:5]}}
    assert world_space.score(pasted=json.dumps(some), metrics=["coco_5k_r1"], partial="true").ok
    got = world_space.score(pasted=json.dumps(some), metrics=["coco_5k_r1"], partial="False")
    assert not got.ok  # read as true before: scored as partial


@pytest.mark.parametrize("keyword", ["normalize", "partial"])
def test_module_glue_refuses_text_booleans_naming_the_keyword(world, res, keyword):
    from eccv_metric import EvaluationError
    from eccv_metric.hub.evaluate_glue import compute

    img, cap = unequal_norms(world)
    parts = {"image_embeddings": img, "caption_embeddings": cap, "normalize": False}
    options = {"partial": False}
    (parts if keyword == "normalize" else options)[keyword] = "False"
    with pytest.raises(EvaluationError, match=f"{keyword}.* must be True or False"):
        compute({}, parts, ["coco_5k_r1"], (1,), res, **options)


# 2. correlate / leaderboard: one row per model, never merged with the paper's -------------------------------


def results_file(path: Path, value: np.ndarray) -> str:
    """A results file of `evaluate -o` with every leaderboard metric at ``value`` (fractions)."""
    names = ["eccv_map_at_r", "eccv_rprecision", "eccv_r1", "cxc_r1", "coco_5k_r1", "coco_5k_r5", "coco_5k_r10"]
    names += ["coco_1k_r1", "coco_1k_r5", "coco_1k_r10", "pmrp"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({n: {"i2t": float(v), "t2i": float(v) / 2} for n, v in zip(names, value, strict=True)}))
    return str(path)


def correlate(capsys, *files: str) -> tuple[dict, str]:
    assert main(["correlate", "--format", "json", "--with", *files]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_correlate_a_file_named_like_a_paper_model_is_its_own_row(tmp_path, capsys):
    values = np.linspace(0.9, 0.1, 11)  # a made-up model, unlike the paper's PCME
    mine, _ = correlate(capsys, results_file(tmp_path / "a" / "mine.json", values))
    pcme, err = correlate(capsys, results_file(tmp_path / "b" / "PCME.json", values))
    assert pcme == mine  # the paper's PCME row is kept, the user's row added beside it
    assert "PCME (yours)" in err and "one of the paper's models" in err


def test_leaderboard_shows_the_paper_row_and_the_renamed_user_row(tmp_path, capsys):
    path = results_file(tmp_path / "VSE++.json", np.linspace(0.9, 0.1, 11))
    assert main(["leaderboard", "--with", path]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("VSE++") and " ranks " not in line]
    assert len(rows) == 2 and any(r.startswith("VSE++ (yours)") for r in rows)
    assert "VSE++ (yours) ranks (of 26)" in out
    assert "note: " in out and "'VSE++ (yours)'" in out


def test_two_user_files_with_one_name_are_an_error_naming_both(tmp_path, capsys):
    a = results_file(tmp_path / "a" / "model.json", np.linspace(0.9, 0.1, 11))
    b = results_file(tmp_path / "b" / "model.json", np.linspace(0.2, 0.8, 11))
    for command in (["correlate"], ["leaderboard"]):
        assert main([*command, "--with", a, b]) == 2
        err = capsys.readouterr().err
        assert a in err and b in err and "--with" in err
        assert err.count("\n") == 1


# 3. export-trec writes only what evaluate would score -------------------------------------------------------


@pytest.fixture()
def world_cli(monkeypatch, res):
    """The CLI's export-trec with the world's ground truth."""
    import eccv_metric.cli.trec

    monkeypatch.setattr(eccv_metric.cli.trec, "resources_of", lambda args: res)


@pytest.mark.parametrize(
    "bad, said",
    [
        (lambda c: [c[0], 424242], "not test-split captions: 424242"),  # an unknown id
        (lambda c: [c[0], c[1], c[0]], "more than once"),
        (lambda c: [c[0], None], "ranked ids must be integers"),
        (lambda c: [c[0], [c[1]]], "ranked ids must be integers"),
        (lambda c: [c[0], c[1] + 0.5], "ranked ids must be integers, got float64"),
    ],
)
def test_export_trec_refuses_rankings_that_evaluate_refuses(world, res, world_cli, tmp_path, capsys, bad, said):
    from eccv_metric import EvaluationError
    from eccv_metric import Rankings

    image = world.image_ids[1]
    lists = {"i2t": {str(image): bad(world.caption_ids)}}
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps(lists))
    out = tmp_path / "run.trec"
    assert main(["export-trec", "--rankings", str(path), "--direction", "i2t", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") and said in err and err.count("\n") == 1
    assert not out.exists() and not list(tmp_path.glob("*.trec*"))
    with pytest.raises(EvaluationError):  # evaluate refuses the same lists
        evaluate(Rankings(i2t={image: bad(world.caption_ids)}), ["coco_5k_r1"], resources=res, partial=True)


def test_export_trec_still_writes_valid_partial_rankings(world, world_cli, tmp_path):
    image = world.image_ids[1]
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps({"i2t": {str(image): world.caption_ids[:3]}}))
    out = tmp_path / "run.trec"
    assert main(["export-trec", "--rankings", str(path), "--direction", "i2t", "-o", str(out), "-q"]) == 0
    assert out.read_text().splitlines() == [
        f"image-{image} Q0 caption-{c} {r} {4 - r} eccv_caption" for r, c in enumerate(world.caption_ids[:3], 1)
    ]


# 6, 7. evaluate: --partial with a score input says it changes nothing; defaults follow the input's directions --


@pytest.fixture()
def world_evaluate(monkeypatch, res):
    """The CLI's evaluate with the world's ground truth and sources."""
    import eccv_metric.cli.evaluate

    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)


def cli_json(capsys, *argv: str) -> tuple[dict, str]:
    assert main(["evaluate", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_evaluate_partial_with_scores_prints_a_note_and_the_same_numbers(world, world_evaluate, tmp_path, capsys):
    img, cap = unequal_norms(world)
    np.save(tmp_path / "s.npy", img @ cap.T)
    plain, err = cli_json(capsys, "--scores", str(tmp_path / "s.npy"), "--metrics", "coco_5k_r1")
    assert "--partial" not in err  # (the random scores may add a chance-level warning line)
    noted, err = cli_json(capsys, "--scores", str(tmp_path / "s.npy"), "--metrics", "coco_5k_r1", "--partial")
    assert noted == plain
    notes = [line for line in err.splitlines() if "--partial" in line]
    assert len(notes) == 1 and notes[0].startswith("note: --partial changes nothing") and "--scores" in notes[0]


def mteb_t2t(world, img_cap: np.ndarray, name: str) -> dict:
    """MTEB predictions of one t2t subset: every caption query with every caption scored (itself included)."""
    scores = img_cap @ img_cap.T
    queries = {
        f"caption-{q}": {f"caption-{d}": float(scores[a, b]) for b, d in enumerate(world.caption_ids)}
        for a, q in enumerate(world.caption_ids)
    }
    return {"mteb_model_meta": {"model_name": "x/y", "revision": "1"}, name: {"test": queries}}


def test_evaluate_t2t_mteb_predictions_default_to_their_subsets_benchmark(world, res, world_evaluate, tmp_path, capsys):
    from eccv_metric.formats.mteb import read_predictions

    _, cap = unequal_norms(world)
    path = tmp_path / "coco_t2t_predictions.json"
    path.write_text(json.dumps(mteb_t2t(world, cap, "coco_t2t-t2t")))
    got, _ = cli_json(capsys, "--run", str(path))
    assert got == evaluate(read_predictions(path), benchmarks=["coco_t2t"], resources=res).means()
    assert set(got) == {"coco_t2t_r1", "coco_t2t_r5", "coco_t2t_r10"} and set(got["coco_t2t_r1"]) == {"t2t"}


def test_evaluate_caption_embeddings_alone_default_to_the_t2t_benchmarks(world, res, world_evaluate, tmp_path, capsys):
    _, cap = unequal_norms(world)
    np.save(tmp_path / "cap.npy", cap)
    got, _ = cli_json(capsys, "--caption-embeddings", str(tmp_path / "cap.npy"))
    want = evaluate(Embeddings(None, cap), benchmarks=["cxc_t2t", "coco_t2t"], resources=res).means()
    assert got == want and {m.split("_r")[0] for m in got} == {"cxc_t2t", "coco_t2t"}


def test_evaluate_image_caption_inputs_keep_the_official_defaults(world, res, world_evaluate, tmp_path, capsys):
    img, cap = unequal_norms(world)
    np.save(tmp_path / "s.npy", img @ cap.T)
    got, _ = cli_json(capsys, "--scores", str(tmp_path / "s.npy"))
    assert set(got) == {"coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r"}


# 5. compare: --seed named, the footnote whole sentences ----------------------------------------------------


@pytest.fixture()
def per_query_files(world, res, monkeypatch, tmp_path):
    import eccv_metric.cli.analysis

    # the world's resources for compare's id checks (a patched wheel would enter the process-wide cache)
    monkeypatch.setattr(eccv_metric.cli.analysis, "resources_of", lambda args: res)
    ids = world.image_ids
    files = []
    for shift in (0, 1):
        values = {
            "coco_5k_r1": {"i2t": {"query_ids": ids, "values": [float((k + shift) % 2) for k in range(len(ids))]}},
            "coco_5k_meanr": {"i2t": {"query_ids": ids, "values": [float(1 + (k * 7 + shift) % 5) for k in range(20)]}},
        }
        files.append(tmp_path / f"{shift}.json")
        files[-1].write_text(json.dumps(values))
    return [str(f) for f in files]


@pytest.mark.parametrize("seed", ["-1", "1.5", "x"])
def test_compare_bad_seed_names_the_flag(per_query_files, capsys, seed):
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", *per_query_files, "--seed", seed])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("eccv-caption compare: error: argument --seed: must be a whole number")


def test_compare_footnote_is_whole_sentences(per_query_files, capsys):
    assert main(["compare", *per_query_files, "--n-resamples", "200", "--seed", "3"]) == 0
    note = capsys.readouterr().out.splitlines()[-1]
    assert note.endswith("; values: fractions in percent and ranks as they are.")
    assert note.startswith("95% percentile bootstrap CIs (200 resamples, seed 3); p: two-sided paired randomization")


# 8. --cxc-source errors say that a folder of the CxC CSVs works ----------------------------------------------


@pytest.mark.parametrize("source", ["missing", "not_csv", "empty"])
def test_cxc_source_errors_name_a_folder_of_the_csvs(world, tmp_path, capsys, source):
    from eccv_metric import Resources

    path = tmp_path / source
    if source == "not_csv":
        path.write_text('{"i2t": {}}')
    elif source == "empty":
        path.mkdir()
    resources = Resources(world.gt, cxc_source=path)
    img, cap = unequal_norms(world)
    from eccv_metric import EvaluationError

    with pytest.raises(EvaluationError) as info:
        evaluate(Embeddings(img, cap), ["cxc_t2t_r1"], resources=resources)
    message = str(info.value)
    assert str(path) in message and "a folder with the CxC CSVs sts_test.csv" in message
    assert "\n" not in message


# 4. MTEB predictions where rankings are expected, and predictions without their metadata ---------------------


def test_mteb_predictions_given_as_rankings_name_the_run_flag(world, world_evaluate, world_cli, tmp_path, capsys):
    _, cap = unequal_norms(world)
    path = tmp_path / "coco_t2t_predictions.json"
    path.write_text(json.dumps(mteb_t2t(world, cap, "coco_t2t-t2t")))
    assert main(["evaluate", "--rankings", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: MTEB predictions") and err.rstrip().endswith("give it as --run")
    assert main(["export-trec", "--rankings", str(path), "-o", str(tmp_path / "run.trec")]) == 2
    assert "evaluate --run" in capsys.readouterr().err
    got = space.score(upload=str(path), metrics=["coco_t2t_r1"])
    assert not got.ok and space.LABELS["upload"] in got.message
    assert "MTEB predictions" in got.message and "eccv-caption evaluate --run coco_t2t_predictions.json" in got.message
    assert str(tmp_path) not in got.message


def test_mteb_predictions_without_metadata_name_the_missing_key(world, world_evaluate, tmp_path, capsys):
    _, cap = unequal_norms(world)
    body = mteb_t2t(world, cap, "coco_t2t-t2t")
    del body["mteb_model_meta"]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(body))
    assert main(["evaluate", "--run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no 'mteb_model_meta' key" in err and "6 fields" not in err and err.count("\n") == 1
    rankings = tmp_path / "r.json"
    rankings.write_text(json.dumps({"t2t": {str(world.caption_ids[0]): world.caption_ids[1:4]}}))
    assert main(["evaluate", "--run", str(rankings)]) == 2
    assert capsys.readouterr().err == f"error: {rankings}: a rankings JSON, not a run: give it as --rankings\n"


# 10. the Space's upload errors: the box's name, never the server's path, never allow_pickle --------------------


@pytest.mark.parametrize("box", ["upload", "image_embeddings", "image_ids"])
@pytest.mark.parametrize("content", ["objects", "not_npy"])
def test_space_bad_npy_names_the_box_not_the_path_nor_pickle(world, world_space, tmp_path, box, content):
    path = tmp_path / "server" / "tmp" / "upload.npy"
    path.parent.mkdir(parents=True)
    if content == "objects":
        np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    else:
        path.write_bytes(b"\x80\x04K\x01.")  # a pickle: numpy's text would advise allow_pickle
    img, cap = unequal_norms(world)
    np.save(tmp_path / "cap.npy", cap)
    np.save(tmp_path / "scores.npy", img @ cap.T)
    boxes = {
        "upload": {"upload": str(path)},
        "image_ids": {"upload": str(tmp_path / "scores.npy"), "image_ids": str(path)},
    }
    kwargs = boxes.get(box, {"image_embeddings": str(path), "caption_embeddings": str(tmp_path / "cap.npy")})
    got = world_space.score(metrics=["coco_5k_r1"], **kwargs)
    assert not got.ok
    assert got.message.startswith(f"error: the '{space.LABELS[box]}' box: upload.npy: ")
    assert str(tmp_path) not in got.message and "/server/" not in got.message
    assert "pickle" not in got.message.lower() and "\n" not in got.message


def test_space_hides_server_folders_but_not_urls():
    import tempfile

    root = tempfile.gettempdir()
    said = hide_paths(f"{root}/gradio/ab12/my file.json: bad; see https://example.org/a/b.csv")
    assert said == "my file.json: bad; see https://example.org/a/b.csv"


# 9. the evaluate module's unknown keywords (the real evaluate.load: tests/integration/test_evaluate_module.py) --


def test_module_keywords_outside_compute_are_named_with_the_accepted_ones():
    from eccv_metric import EvaluationError
    from eccv_metric.hub.evaluate_glue import check_keywords

    def _compute(self, predictions, references, directions, scores=None, Ks=(1, 5, 10)):  # noqa: N803
        raise AssertionError("not called")

    check_keywords(["scores", "Ks", "directions"], _compute)
    with pytest.raises(EvaluationError) as info:
        check_keywords(["Ks", "k", "normalise"], _compute)
    assert str(info.value) == (
        "Bad inputs for evaluation module: ['k', 'normalise']; compute() takes predictions, references, directions, "
        "scores, Ks"
    )


# 11. the Space's R@K plot: the Ks given only; its chance note in the Space's words -----------------------------


def test_space_plot_has_the_given_ks_only_in_numeric_order(world, world_space, tmp_path):
    img, cap = unequal_norms(world)
    np.save(tmp_path / "s.npy", img @ cap.T)
    got = world_space.score(upload=str(tmp_path / "s.npy"), metrics=["coco_5k_recalls"], ks_text="10 1 5 2")
    assert got.ok, got.message
    points, order = plot_points(got.curves)
    assert order == ["1", "2", "5", "10"]  # numeric, not "1", "10", "2", "5"
    assert {p["K"] for p in points} == set(order) and all(isinstance(p["K"], str) for p in points)
    assert sorted((int(p["K"]), p["series"]) for p in points) == sorted(
        (k, f"COCO 5K {d}") for k in (1, 2, 5, 10) for d in ("i2t", "t2i")
    )  # the benchmark's title from the registry
    assert got.columns == ["metric", "id", "i2t", "t2i", "unit"]
    assert [row[0] for row in got.rows] == [f"COCO 5K R@{k}" for k in (1, 2, 5, 10)]
    assert [row[1] for row in got.rows] == [f"coco_5k_r{k}" for k in (1, 2, 5, 10)]


@pytest.mark.parametrize(
    "note",
    [  # the note before issue 35, and as reworded there (api/chance.py)
        "t2i: every R@K is at chance level (coco_5k_r1 = 0.0100 (random rankings: 0.0100)): likely a row order or id "
        "mix-up: give image_ids / caption_ids (CLI: --image-ids / --caption-ids)",
        "t2i: numbers at chance level (coco_5k_r1 = 0.01 (random rankings: 0.01)); common causes: rows not in the "
        "order of the benchmark's ids (give image_ids / caption_ids; CLI: --image-ids / --caption-ids), a model that "
        "was not trained",
        "t2i: numbers at chance level (coco_5k_r1 = 0.01 (random rankings: 0.01)); common causes: rows not in the "
        "order of the benchmark's ids (give image_ids= / caption_ids=), a model that was not trained",
    ],
)
def test_space_chance_note_names_the_boxes_not_the_cli(note):
    said = note_in_space_words(note)
    assert "CLI" not in said and "--" not in said and "image_ids" not in said
    assert f"files in the '{space.LABELS['image_ids']}' and '{space.LABELS['caption_ids']}' boxes" in said
    assert said.count("(") == said.count(")")


def test_space_chance_note_of_shuffled_rows_names_the_boxes(world, world_space, tmp_path):
    rng = np.random.default_rng(0)
    img, cap = unequal_norms(world)
    cap = cap + 3 * img[[world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]]
    np.save(tmp_path / "s.npy", (img @ cap.T)[:, rng.permutation(len(world.caption_ids))])  # columns shuffled
    got = world_space.score(upload=str(tmp_path / "s.npy"), metrics=["coco_5k_recalls"])
    assert got.ok and "chance level" in got.message, got.message
    assert "CLI" not in got.message and "--image-ids" not in got.message
    assert space.LABELS["caption_ids"] in got.message
