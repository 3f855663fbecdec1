"""Runs read from the files evaluate reads or writes (eccv_metric.explore.runs), their pixels and texts
(eccv_metric.explore.media), and ``eccv-caption explore`` called in-process: the same views as the inputs made in
Python, and each bad input one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric import TwoStage
from eccv_metric.cli.main import main
from eccv_metric.explore import query_sets
from eccv_metric.explore import read_run
from eccv_metric.explore import table_of
from eccv_metric.explore.media import Media
from eccv_metric.explore.runs import read_run_files
from eccv_metric.explore.view import view_of
from eccv_metric.formats.reranked import save_reranked
from eccv_metric.formats.trec import run_lines
from eccv_metric.formats.trec import write_lines
from eccv_metric.inputs.reranked import Reranked
from tests.unit.world import vectors


def items_of(source, res, bench="eccv", direction="t2i") -> list[list[int]]:
    table = table_of(source, bench, direction, res)
    return [[item.id for item in view_of(table, row).items] for row in range(len(table.queries))]


@pytest.fixture(scope="module")
def vecs(world):
    return vectors(world)


def test_every_run_file_gives_the_views_of_its_input(world, res, vecs, tmp_path):
    """A rankings JSON, a TREC run, a scores .npy, a folder of embeddings with ids (rows shuffled), the folder of
    folders --save-embeddings writes, a two-stage folder: each read as evaluate reads the same files."""
    img, cap = vecs
    direct = Embeddings(img, cap)
    want = items_of(direct, res)
    scores = img @ cap.T
    gallery = {"i2t": np.asarray(world.caption_ids), "t2i": np.asarray(world.image_ids)}
    lists = {
        d: {int(q): gallery[d][row].tolist() for q, row in zip(ids, np.argsort(-m, axis=1, kind="stable"), strict=True)}
        for d, m, ids in (("i2t", scores, world.image_ids), ("t2i", scores.T, world.caption_ids))
    }
    (tmp_path / "run.json").write_text(json.dumps(lists))
    write_lines(tmp_path / "run.trec", (line for d, v in lists.items() for line in run_lines(v, d)))
    np.save(tmp_path / "sims.npy", scores)
    folder = tmp_path / "shuffled"
    folder.mkdir()
    order_i, order_c = np.random.default_rng(1).permutation(len(img)), np.random.default_rng(2).permutation(len(cap))
    np.save(folder / "image_embeddings.npy", img[order_i])
    np.save(folder / "caption_embeddings.npy", cap[order_c])
    (folder / "image_ids.json").write_text(json.dumps(np.asarray(world.image_ids)[order_i].tolist()))
    np.save(folder / "caption_ids.npy", np.asarray(world.caption_ids)[order_c])
    (folder / "results.json").write_text(json.dumps({"eccv_r1": {"i2t": 0.5}}))  # beside the run: left alone
    saved = tmp_path / "saved"
    for group in ("coco_5k", "mscoco_fg"):
        (saved / group).mkdir(parents=True)
        np.save(saved / group / "image_embeddings.npy", img)
        np.save(saved / group / "caption_embeddings.npy", cap)
    for path in ("run.json", "run.trec", "sims.npy", "saved"):
        run = read_run(tmp_path / path)
        assert items_of(run, res) == want, path
    ids = np.asarray(world.image_ids)[order_i], np.asarray(world.caption_ids)[order_c]
    assert items_of(read_run(folder), res) == items_of(Embeddings(img[order_i], cap[order_c], *ids), res)
    assert sorted(read_run(saved).groups) == ["coco_5k", "mscoco_fg"]
    two = tmp_path / "two"
    two.mkdir()
    np.save(two / "scores.npy", scores)
    candidates = np.asarray(world.image_ids)[np.argsort(-scores.T, axis=1, kind="stable")[:, :4]][:, ::-1].copy()
    reranked = Reranked(np.asarray(world.caption_ids), candidates, np.tile(np.arange(4.0), (len(cap), 1)))
    save_reranked(two / "rerank_t2i.npz", reranked)
    direct_two = TwoStage(ScoreMatrix(scores), t2i=reranked)
    assert items_of(read_run(two), res) == items_of(direct_two, res)
    files = read_run_files([two / "scores.npy", two / "rerank_t2i.npz"], name="B")
    assert items_of(files, res) == items_of(direct_two, res) and files.name == "B"


def test_bad_runs_are_one_line(world, res, vecs, tmp_path):
    img, cap = vecs
    cases = {}
    (tmp_path / "results.json").write_text(json.dumps({"eccv_r1": {"i2t": 0.5}, "provenance": {}}))
    cases["results.json"] = "is a results file (evaluate -o): numbers only, not which items each query retrieved"
    (tmp_path / "pq.json").write_text(json.dumps({"eccv_r1": {"i2t": {"query_ids": [1], "values": [1.0]}}}))
    cases["pq.json"] = "is a per-query file (evaluate --per-query): numbers only"
    (tmp_path / "two").mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / "two" / name).write_text(json.dumps({"i2t": {"100": [1000]}}))
    cases["two"] = "2 ranked-lists files (a.json, b.json): one"
    (tmp_path / "odd").mkdir()
    np.save(tmp_path / "odd" / "vectors.npy", img)
    np.save(tmp_path / "odd" / "scores.npy", img @ cap.T)
    cases["odd"] = "a .npy array named vectors.npy: a run's files are named scores.npy"
    (tmp_path / "empty").mkdir()
    cases["empty"] = "no run in it: give a rankings JSON or TREC run"
    np.save(tmp_path / "wide.npy", np.zeros((len(img) - 1, len(cap)), np.float32))  # another benchmark's items
    cases["wide.npy"] = "scores= has shape (19, 100)"  # the library's words: the front ends name the file
    cases["nowhere"] = "no such file or folder"
    for path, said in cases.items():
        with pytest.raises(EvaluationError, match=re.escape(said)) as caught:
            items_of(read_run(tmp_path / path), res)
        assert "\n" not in str(caught.value), path
    fg_lists = {"t2i": {world.caption_ids[0]: [50_000]}}  # an FG distractor is no item of the 5K split
    with pytest.raises(EvaluationError, match="50000"):
        items_of(Rankings(**fg_lists), res)


def test_media_from_the_data_or_folders_and_why_not(world, res, tmp_path):
    from eccv_metric import REGISTRY
    from tests.unit.model_world import caption_text
    from tests.unit.model_world import png
    from tests.unit.model_world import write_data

    data = write_data(world, tmp_path / "data", skip_pixels=(world.image_ids[1],))
    eccv = REGISTRY.get("eccv")
    media = Media(data)
    assert media.texts(eccv, world.caption_ids[:2]) == {c: caption_text(c) for c in world.caption_ids[:2]}
    thumbs = media.thumbs(eccv, res, world.image_ids[:2])
    assert thumbs[world.image_ids[0]].jpeg.startswith(b"\xff\xd8")  # a JPEG thumbnail
    assert thumbs[world.image_ids[1]].jpeg is None and "no pixels" in thumbs[world.image_ids[1]].why
    folder = tmp_path / "pixels"
    folder.mkdir()
    (folder / f"COCO_val2014_{world.image_ids[0]:012d}.jpg").write_bytes(png(world.image_ids[0]))
    (folder / f"COCO_val2014_{world.image_ids[1]:012d}.jpg").write_bytes(b"not an image")
    found = Media(None, folder).thumbs(eccv, res, world.image_ids[:3])
    assert found[world.image_ids[0]].jpeg is not None
    assert "cannot be decoded" in found[world.image_ids[1]].why and "in none of the images folders" in found[
        world.image_ids[2]].why  # fmt: skip
    assert "no dataset with pixels" in Media().thumbs(eccv, res, world.image_ids[:1])[world.image_ids[0]].why
    with pytest.raises(EvaluationError, match="images= .*: no such folder or zip"):
        Media(None, tmp_path / "nowhere")


def test_cli_explore_sets_query_and_bad_input(world, vecs, tmp_path, capsys):
    """``eccv-caption explore`` in-process: the sets' counts are the library's, --query prints the view, and each
    bad input is one ``error:`` line (exit 2)."""
    from tests.unit.model_world import write_data
    from tests.unit.model_world import write_ground_truth

    data = write_ground_truth(world, write_data(world, tmp_path / "data"))
    img, cap = vecs
    for name, seed in (("a", 5), ("b", 9)):
        (tmp_path / name).mkdir()
        i, c = vectors(world, seed=seed)
        np.save(tmp_path / name / "image_embeddings.npy", i)
        np.save(tmp_path / name / "caption_embeddings.npy", c)
    flags = ["--data", str(data), "--cxc-source", str(world.cxc_dir), "-q"]
    assert main(["explore", str(tmp_path / "a"), "--vs", str(tmp_path / "b"), "--json", "-n", "3", *flags]) == 0
    out = json.loads(capsys.readouterr().out)
    res = world.resources()
    a, b = read_run(tmp_path / "a"), read_run(tmp_path / "b")
    for direction in ("i2t", "t2i"):
        sets = query_sets(table_of(a, "eccv", direction, res), table_of(b, "eccv", direction, res), n=3)
        assert [(s["name"], s["count"]) for s in out[direction]] == [(s.name, s.count) for s in sets]
    assert main(["explore", str(tmp_path / "a"), "--query", str(world.image_ids[0]), *flags]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"a: eccv i2t image {world.image_ids[0]}\n  values: ") and "  1 " in printed
    (tmp_path / "results.json").write_text(json.dumps({"eccv_r1": {"i2t": 0.5}, "provenance": {}}))
    np.save(tmp_path / "wide.npy", np.zeros((len(img) - 1, len(cap)), np.float32))  # another benchmark's items
    bad = {
        ("a", "--query", "5"): "error: --query 5 is not a query here (i2t: not an image id of eccv",
        ("a", "--images", str(tmp_path / "nowhere")): "error: --images ",  # images missing: before any loading
        ("results.json",): "error: " + str(tmp_path / "results.json") + " is a results file (evaluate -o): numbers",
        ("wide.npy",): f"error: {tmp_path / 'wide.npy'}: its scores.npy has shape (19, 100) but its image_ids file",
    }
    for (run, *extra), said in bad.items():
        assert main(["explore", str(tmp_path / run), *extra, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(said) and err.count("\n") == 1, err
