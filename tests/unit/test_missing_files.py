"""A file that cannot be read says what is wrong with it (missing, a folder, not UTF-8), never an encoding
problem for a missing file, and the CLI names the flag (Python: the keyword) that gave it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.cli.main import main
from eccv_metric.core.files import load_npy
from eccv_metric.core.files import read_text
from eccv_metric.core.jsonio import read_json
from eccv_metric.formats import qrels
from eccv_metric.formats import trec
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.groundtruth.cxc import read_csv
from eccv_metric.groundtruth.plausible import PMOptions

READERS = {
    "text": read_text,
    "json": lambda p: read_json(p, "a JSON object"),
    "npy": lambda p: load_npy(p, "a .npy array"),
    "ids": lambda p: load_ids(p, "image ids"),
    "rankings": load_rankings,
    "trec run": trec.read_run,
    "trec qrels": qrels.read_qrels,
    "cxc csv": lambda p: read_csv(p, "sits"),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_says_a_missing_file_is_missing(tmp_path, reader):
    missing = tmp_path / "nope.txt"
    with pytest.raises(EvaluationError) as raised:
        READERS[reader](missing)
    said = str(raised.value)
    assert said.startswith(f"{missing}: no such file") and "UTF-8" not in said and "Errno" not in said
    with pytest.raises(EvaluationError, match=rf"^{tmp_path} is a folder"):
        READERS[reader](tmp_path)


@pytest.mark.parametrize("reader", ["text", "ids", "trec run", "trec qrels", "cxc csv"])
def test_text_that_is_not_utf8_says_so(tmp_path, reader):
    path = tmp_path / "latin1.txt"
    path.write_bytes("image-1 Q0 caption-2 1 1.0 caf\xe9\n".encode("latin-1"))
    with pytest.raises(
        EvaluationError, match=rf"^{path} is not UTF-8 text \(invalid continuation byte: save it as UTF-8\)"
    ):
        READERS[reader](path)


@pytest.fixture()
def cli_world(monkeypatch, res):
    import eccv_metric.cli.evaluate

    monkeypatch.setattr(eccv_metric.cli.evaluate, "resources_of", lambda args: res)


def error_of(capsys, argv) -> str:
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--run", "{m}"],
        ["evaluate", "--rankings", "{m}"],
        ["evaluate", "--scores", "{m}"],
        ["evaluate", "--image-embeddings", "{m}"],
        ["evaluate", "--scores", "{ok}", "--caption-ids", "{m}"],
        ["export-trec", "--rankings", "{m}", "-o", "{out}"],
        ["export-trec", "--scores", "{m}", "-o", "{out}"],
        ["build", "-o", "{out}", "--image-ids", "{m}"],
        ["build", "-o", "{out}", "--paper-results", "{m}"],
        ["import-trec", "{m}", "-o", "{out}"],
    ],
)
def test_the_cli_names_the_flag_of_a_missing_file(cli_world, tmp_path, capsys, argv):
    np.save(tmp_path / "ok.npy", np.zeros((3, 4), np.float32))
    names = {"m": str(tmp_path / "missing.x"), "ok": str(tmp_path / "ok.npy"), "out": str(tmp_path / "out.trec")}
    said = error_of(capsys, [a.format(**names) for a in argv])
    flag = argv[argv.index("{m}") - 1]
    named = "" if argv[0] == "import-trec" else f"{flag} "  # a positional: the path alone
    assert said.startswith(f"error: {named}{names['m']}: no such file"), said
    assert not (tmp_path / "out.trec").exists() and not (tmp_path / "out").exists()


def test_a_resource_file_is_named_by_its_keyword_and_flag(world, tmp_path, capsys, monkeypatch):
    missing = tmp_path / "instances.json"
    with pytest.raises(EvaluationError, match=rf"^instances_json= {missing}: no such file; expected a COCO"):
        Resources(world.gt, instances_json=missing)
    with pytest.raises(EvaluationError, match=rf"^extra_file_dir= {tmp_path}/pm_image_to_caption.json: no such"):
        Resources(world.gt, extra_file_dir=tmp_path)
    for name, direction in (("pm_image_to_caption.json", "i2t"), ("pm_caption_to_image.json", "t2i")):
        (tmp_path / name).write_text(json.dumps({str(q): v for q, v in world.lists["coco"][direction].items()}))
    given = Resources(world.gt, extra_file_dir=tmp_path, pm=PMOptions(1, False, 50))
    assert given.pm == PMOptions(1, False, 50) and "pm" in given.gt.positives  # the options kept beside the files
    import eccv_metric.cli.evaluate

    monkeypatch.setattr(
        eccv_metric.cli.evaluate, "resources_of", lambda args: Resources(world.gt, instances_json=args.instances_json)
    )
    said = error_of(capsys, ["evaluate", "--demo", "--instances-json", str(missing)])
    assert said.startswith(f"error: --instances-json {missing}: no such file")
