"""A newcomer's folder of results (``evaluate --model A --model B -o DIR``) read by ``leaderboard`` and
``push-results``; rows named by their model; a leaderboard written as CSV or Markdown."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest

from eccv_metric.analysis.board_table import to_csv
from eccv_metric.analysis.board_table import to_markdown
from eccv_metric.cli.main import main

SHA = "0123456789abcdef0123456789abcdef01234567"
METRICS = ["eccv_map_at_r", "eccv_rprecision", "eccv_r1", "cxc_r1", "coco_5k_r1", "coco_1k_r1"]


def results(path, spec: str | None, value: float) -> str:
    """A results file of ``evaluate -o``; with ``spec``, the provenance ``evaluate --model`` records."""
    payload: dict = {m: {"i2t": value, "t2i": value / 2} for m in METRICS}
    if spec is not None:
        payload["provenance"] = {"model": spec, "data": "me/eccv-caption", "data_revision": SHA,
                                 "package": "eccv-caption-hf 0.2.0", "date": "2026-08-25T10:30:00Z"}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload))
    return str(path)


def sha256(payload: object) -> str:
    """A digest as evaluate records it, from its definition: sha256 of the JSON text, keys sorted, no spaces."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def board_rows(out: str) -> list[str]:
    """The model column of the printed table (the lines after its header, up to the first blank one)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("model "))
    end = lines.index("", start)
    return [line[:44].strip() for line in lines[start + 1 : end]]


def test_leaderboard_takes_the_folder_evaluate_writes_and_names_rows_by_model(tmp_path, capsys):
    """Issue 53: leaderboard refused the folder of `evaluate --model A --model B -o DIR`; rows were named by file."""
    folder = tmp_path / "out"
    results(folder / "0-hf_me_clip-a.json", "hf:me/clip-a", 0.5)
    results(folder / "1-hf_me_clip-b.json", "hf:me/clip-b", 0.4)
    results(tmp_path / "scores_run.json", None, 0.3)  # scored from files: no model, named by its file
    assert main(["leaderboard", "--with", str(folder), str(tmp_path / "scores_run.json")]) == 0
    out = capsys.readouterr().out
    rows = board_rows(out)
    assert {"hf:me/clip-a", "hf:me/clip-b", "scores_run"} <= set(rows) and len(rows) == 28
    assert "hf:me/clip-a ranks (of 28)" in out and "scores_run ranks (of 28)" in out


def test_two_files_of_one_model_are_told_apart_by_file_name(tmp_path, capsys):
    a = results(tmp_path / "fp32.json", "hf:me/clip", 0.5)
    b = results(tmp_path / "fp16.json", "hf:me/clip", 0.49)
    assert main(["leaderboard", "--with", a, b]) == 0
    rows = board_rows(capsys.readouterr().out)
    assert "hf:me/clip (fp32)" in rows and "hf:me/clip (fp16)" in rows
    folder = tmp_path / "empty"
    folder.mkdir()
    assert main(["leaderboard", "--with", str(folder)]) == 2
    assert capsys.readouterr().err == f"error: --with: {folder} is a folder without results files (*.json)\n"


def test_push_results_takes_one_folder_for_one_folder(tmp_path, capsys):
    """A folder of results goes with a folder of per-query files, each file to its own model (what each sends:
    tests/integration/test_hub_results.py)."""
    folder = tmp_path / "out"
    results(folder / "0-hf_me_clip-a.json", "hf:me/clip-a", 0.5)
    results(folder / "1-hf_me_clip-b.json", "hf:me/clip-b", 0.4)
    assert main(["push-results", str(folder), "--no-details", "--dry-run", "--model-repo", "me/x"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: --model-repo names one repo; {folder} holds 2 models' results") and err.count("\n") == 1
    )
    per_query = tmp_path / "pq.json"
    per_query.write_text("{}")
    assert main(["push-results", str(folder), "--per-query", str(per_query), "--dry-run"]) == 2
    assert "give a folder for a folder of results" in capsys.readouterr().err


def test_an_edited_file_is_refused_and_an_unsealed_name_is_said(tmp_path, capsys):
    """Issue 61: a results file's numbers and every field of its provenance are sealed by evaluate; --with refuses
    one changed since, and says when a row's name comes from a provenance no digest seals."""
    path = tmp_path / "res.json"
    results(path, "hf:me/clip", 0.5)
    written = json.loads(path.read_text())
    numbers = {k: v for k, v in written.items() if k != "provenance"}
    written["provenance"]["digests"] = {"results": sha256(numbers), "provenance": sha256(written["provenance"])}
    path.write_text(json.dumps(written))
    assert main(["leaderboard", "--with", str(path)]) == 0
    assert "no digest seals" not in capsys.readouterr().out
    for change, what in ((lambda r: r["eccv_r1"].update(i2t=0.99), "numbers"),
                         (lambda r: r["provenance"].update(model="hf:me/clip2"), "provenance")):  # fmt: skip
        edited = json.loads(json.dumps(written))
        change(edited)
        path.write_text(json.dumps(edited))
        assert main(["leaderboard", "--with", str(path)]) == 2
        assert capsys.readouterr().err == (
            f"error: --with: {path} was changed after the run: its {what} no longer match the digests the run "
            "recorded; give the file evaluate wrote (or run evaluate again)\n"
        )
    old = results(tmp_path / "old.json", "hf:me/clip", 0.5)  # provenance without digests: an earlier version's
    assert main(["leaderboard", "--with", old]) == 0
    assert f"note: {old} is named by the model its provenance records (hf:me/clip), which no digest seals" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize("writer", [to_csv, to_markdown])
def test_a_board_file_holds_every_number_of_every_row(writer):
    rows = [("hf:me/a|b", {"m": 32.5, "t": 0.1234}), ("VSE0", {"m": 22.67})]
    columns = [("m", "mAP@R", 2), ("t", "cxc_sts_spearman_t2t", 3)]
    text = writer(rows, columns)
    if writer is to_csv:
        parsed = list(csv.DictReader(io.StringIO(text)))
        assert parsed == [{"model": "hf:me/a|b", "mAP@R": "32.50", "cxc_sts_spearman_t2t": "0.123"},
                          {"model": "VSE0", "mAP@R": "22.67", "cxc_sts_spearman_t2t": ""}]  # fmt: skip
    else:
        assert text.splitlines() == ["| model | mAP@R | cxc_sts_spearman_t2t |", "|---|---:|---:|",
                                     "| hf:me/a\\|b | 32.50 | 0.123 |", "| VSE0 | 22.67 |  |"]  # fmt: skip
