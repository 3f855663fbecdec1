"""One table of input readers (formats.readers): each file is read as what its content is; a file the CLI reads,
the Space reads with the same numbers, for every format of the table (or says, from the table, that it does not)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import eccv_metric.cli.evaluate
from eccv_metric.cli.main import main
from eccv_metric.formats import readers
from eccv_metric.hub import space

METRICS = ["coco_5k_r1", "coco_5k_r5", "eccv_map_at_r", "coco_5k_medr"]


@pytest.fixture()
def front_ends(monkeypatch, res):
    monkeypatch.setattr(space, "resources_for", lambda instances, sources: res)
    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)


@pytest.fixture(scope="module")
def files(world, tmp_path_factory):
    """One file of every format, from integer embeddings (ties included); names that hide the format where the
    content tells it."""
    folder = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(11)
    img = rng.integers(-2, 3, (len(world.image_ids), 3)).astype(np.float32)
    cap = rng.integers(-2, 3, (len(world.caption_ids), 3)).astype(np.float32)
    order = rng.permutation(len(world.image_ids))  # rows in another order than the canonical one, with ids
    scores = img[order] @ cap.T
    out = {}
    np.save(folder / "scores.npy", scores)
    (folder / "scores.npy").rename(folder / "scores.bin")  # a .npy by its magic bytes, whatever its name
    out["npy"] = folder / "scores.bin"
    np.save(folder / "img.npy", img[order])
    np.save(folder / "cap.npy", cap)
    out["image_embeddings"], out["caption_embeddings"] = folder / "img.npy", folder / "cap.npy"
    ids = [int(world.image_ids[k]) for k in order]
    out["ids.npy"] = folder / "ids.npy"
    np.save(out["ids.npy"], np.array(ids, dtype=np.int64))
    out["ids.json"] = folder / "ids.json"
    out["ids.json"].write_text(json.dumps(ids))
    out["ids.txt"] = folder / "ids.txt"
    out["ids.txt"].write_text("\n".join(map(str, ids)) + "\n")
    i2t = {ids[a]: [world.caption_ids[j] for j in np.argsort(-scores[a], kind="stable")] for a in range(len(ids))}
    t2i = {c: [ids[j] for j in np.argsort(-scores[:, b], kind="stable")] for b, c in enumerate(world.caption_ids)}
    out["rankings"] = folder / "lists.txt"  # a rankings JSON by its first key, whatever its name
    out["rankings"].write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    lines = [
        f"image-{q} Q0 caption-{c} {r} {100 - r} run" for q, ranked in i2t.items() for r, c in enumerate(ranked, 1)
    ]
    lines += [
        f"caption-{q} Q0 image-{i} {r} {100 - r} run" for q, ranked in t2i.items() for r, i in enumerate(ranked, 1)
    ]
    out["trec_run"] = folder / "run.json"  # a TREC run by its lines, whatever its name
    out["trec_run"].write_text("\n".join(lines) + "\n")
    predictions = {
        f"image-{q}": {f"caption-{c}": float(100 - r) for r, c in enumerate(ranked)} for q, ranked in i2t.items()
    }
    out["mteb_predictions"] = folder / "eccv_predictions.json"
    meta = {"mteb_model_meta": {"model_name": "x/y", "revision": "1"}}
    out["mteb_predictions"].write_text(json.dumps({**meta, "coco_5k-i2t": {"test": predictions}}))
    return out


def cli(capsys, *argv) -> dict:
    code = main(["evaluate", *map(str, argv), "--metrics", *METRICS, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def by_space(**boxes) -> dict:
    answer = space.score(**{k: str(v) for k, v in boxes.items()}, metrics=METRICS)
    assert answer.ok, answer.message
    return answer.means


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_each_reader_recognises_its_content_whatever_the_name(files):
    for name in ("rankings", "trec_run", "npy", "mteb_predictions"):
        assert readers.detect(files[name]).name == name
    assert readers.recognise(files["ids.txt"]) is None  # one field a line: no TREC run
    assert readers.detect(files["ids.json"]).name == "rankings"  # not recognised: its suffix names the reader


@pytest.mark.parametrize("name", ["rankings", "trec_run", "npy"])
def test_the_space_reads_what_the_cli_reads_with_the_same_numbers(files, front_ends, capsys, name):
    flag = {"rankings": "--rankings", "trec_run": "--run", "npy": "--scores"}[name]
    extra = ["--image-ids", files["ids.npy"]] if name == "npy" else []
    boxes = {"image_ids": files["ids.npy"]} if name == "npy" else {}
    assert by_space(upload=files[name], **boxes) == cli(capsys, flag, files[name], *extra)


@pytest.mark.parametrize("ids", ["ids.npy", "ids.json", "ids.txt"])
def test_embeddings_and_ids_of_every_format_read_alike(files, front_ends, capsys, ids):
    flags = ["--image-embeddings", files["image_embeddings"], "--caption-embeddings", files["caption_embeddings"]]
    got = cli(capsys, *flags, "--image-ids", files[ids])
    boxes = {"image_embeddings": files["image_embeddings"], "caption_embeddings": files["caption_embeddings"]}
    assert by_space(**boxes, image_ids=files[ids]) == got
    assert got == cli(capsys, "--scores", files["npy"], "--image-ids", files[ids])  # the same ranking


def test_what_the_space_does_not_read_it_says_from_the_table(files, front_ends, capsys):
    assert readers.MTEB_PREDICTIONS.space is not None
    main(["evaluate", "--run", str(files["mteb_predictions"]), "--metrics", "coco_5k_r1", "--json"])
    assert set(json.loads(capsys.readouterr().out)) == {"coco_5k_r1"}  # the CLI reads them
    answer = space.score(upload=str(files["mteb_predictions"]), metrics=["coco_5k_r1"])
    reason = readers.MTEB_PREDICTIONS.space.format(name=files["mteb_predictions"].name)
    assert not answer.ok and reason in answer.message and space.LABELS["upload"] in answer.message
    assert [r.name for r in space.SPACE_READERS] == ["rankings", "trec_run", "npy"]


def test_a_file_of_no_format_is_named_with_the_formats(tmp_path, front_ends):
    odd = tmp_path / "scores.bin"
    odd.write_bytes(b"\x00" * 16)
    answer = space.score(upload=str(odd), metrics=["coco_5k_r1"])
    assert not answer.ok and answer.message.endswith(
        f"scores.bin is none of {readers.formats_text(space.SPACE_READERS)}"
    )


def test_a_file_given_to_another_flag_is_named_with_its_flag(files, front_ends, capsys):
    assert main(["evaluate", "--rankings", str(files["trec_run"])]) == 2
    assert capsys.readouterr().err == f"error: {files['trec_run']}: a TREC run, not a rankings JSON: give it as --run\n"
    assert main(["evaluate", "--run", str(files["npy"])]) == 2
    assert capsys.readouterr().err.rstrip().endswith("a .npy array, not a run: give it as --scores")
