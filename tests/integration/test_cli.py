"""`eccv-caption evaluate` on a score matrix file and on bad input."""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import stat
import threading
from dataclasses import replace

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.cli.main import main
from eccv_metric.groundtruth import cxc as cxc_module
from tests.unit.brute import numbers


def test_evaluate_scores_npy_with_id_files(tmp_path, metrics, gt, scores_gauss, capsys):
    np.save(tmp_path / "s.npy", scores_gauss[::-1])
    (tmp_path / "images.txt").write_text("\n".join(map(str, gt.image_ids[::-1].tolist())))
    (tmp_path / "captions.json").write_text(json.dumps(gt.caption_ids.tolist()))
    out = tmp_path / "r" / "results.json"
    args = [
        "evaluate",
        "--scores",
        str(tmp_path / "s.npy"),
        "--image-ids",
        str(tmp_path / "images.txt"),
        "--caption-ids",
        str(tmp_path / "captions.json"),
        "--metrics",
        "coco_1k_recalls",
        "eccv_map_at_r",
        "-o",
        str(out),
    ]
    assert main(args) == 0
    expected = metrics.compute_all_metrics_from_scores(
        scores_gauss, target_metrics=("coco_1k_recalls", "eccv_map_at_r")
    )
    assert numbers(out) == expected
    table = capsys.readouterr().out
    assert f"{100 * expected['eccv_map_at_r']['i2t']:7.2f}" in table


def test_evaluate_bad_input_exits_2_with_the_message(tmp_path, capsys):
    (tmp_path / "r.json").write_text(json.dumps({"i2t": {"391895": [1, 2]}}))
    assert main(["evaluate", "--rankings", str(tmp_path / "r.json"), "-o", str(tmp_path / "out.json")]) == 2
    assert "ranks id(s) that are not test-split captions: 1, 2" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


# -- one error line in flag words, --json / --quiet, file modes ------------------------------------------------------


@pytest.fixture
def failing_server(monkeypatch, tmp_path):
    """The canonical homes of the CxC and FG files replaced by a server on 127.0.0.1 that answers 500."""

    class Broken(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_error(500, "Internal Server Error")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Broken)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    monkeypatch.setattr(cxc_module, "CXC_RAW", base + "cxc/")
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    with REGISTRY.scoped():
        for entry in REGISTRY.collections():
            if entry.home:
                REGISTRY.add_collection(replace(entry, home=base + "fg/"), replace=True)
        yield base
    server.shutdown()
    server.server_close()


def tiny_embeddings(tmp_path):
    np.save(tmp_path / "img.npy", np.zeros((2, 4), np.float32))
    np.save(tmp_path / "cap.npy", np.zeros((3, 4), np.float32))
    return ["--image-embeddings", str(tmp_path / "img.npy"), "--caption-embeddings", str(tmp_path / "cap.npy")]


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "args,flag,source",
    [
        (["--benchmarks", "flickr30k_fg"], "--fg-source or --source-dir", "Flickr30K_FG_ann.json"),
        (["--metrics", "cxc_t2t_r1"], "--cxc-source or --source-dir", "sts_test.csv"),
    ],
)
def test_a_failed_download_is_one_line_saying_which_flag_to_pass(failing_server, tmp_path, capsys, args, flag, source):
    assert main(["evaluate", *tiny_embeddings(tmp_path), *args]) == 2
    err = one_error_line(capsys)
    assert f"could not download {failing_server}" in err and "Internal Server Error" in err, err
    assert f"give {flag} (" in err and source in err and "fg_source" not in err and "cxc_source" not in err


def test_a_failed_download_in_python_and_in_the_space_words(failing_server):
    from eccv_metric import Resources
    from eccv_metric import evaluate
    from eccv_metric.hub import space

    with pytest.raises(EvaluationError, match=r"give fg_source= \(a folder holding Flickr30K_FG_ann.json"):
        evaluate(Embeddings(np.zeros((2, 4)), np.zeros((3, 4))), benchmarks="flickr30k_fg", resources=Resources())
    # mscoco_fg_r1, not cxc_t2t_r1: the example holds no t2t lists, which is said before any download (issue 35)
    answer = space.score(pasted=space.EXAMPLE, metrics=["mscoco_fg_r1"], partial=True)
    assert not answer.ok and "\n" not in answer.message
    assert f"give the files in the '{space.LABELS['sources']}' box" in answer.message, answer.message


def test_missing_sources_and_categories_name_the_flags(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert (
        main(
            [
                "evaluate",
                *tiny_embeddings(tmp_path),
                "--benchmarks",
                "mscoco_fg",
                "--fg-source",
                str(tmp_path / "empty"),
            ]
        )
        == 2
    )
    err = one_error_line(capsys)
    assert "no MSCOCO_FG_ann.json below it; give --fg-source or --source-dir (a folder holding" in err, err
    assert (
        main(
            ["evaluate", *tiny_embeddings(tmp_path), "--metrics", "cxc_i2i_r1", "--cxc-source", str(tmp_path / "empty")]
        )
        == 2
    )
    assert "holding sis_test.csv; give --cxc-source or --source-dir (" in one_error_line(capsys)
    assert main(["evaluate", *tiny_embeddings(tmp_path), "--metrics", "pmrp"]) == 2
    err = one_error_line(capsys)
    assert "pmrp needs COCO categories: pass --instances-json (a COCO-format instances file" in err, err


def example_rankings(tmp_path):
    from eccv_metric.hub.space import EXAMPLE

    (tmp_path / "example.json").write_text(EXAMPLE)
    return ["--rankings", str(tmp_path / "example.json"), "--partial", "--metrics", "eccv_map_at_r", "coco_5k_medr"]


def test_json_prints_the_results_and_quiet_prints_nothing(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert main(["evaluate", *example_rankings(tmp_path), "--json", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == numbers(out)  # stdout is the numbers alone (the file adds their provenance)
    assert captured.err.strip() == f"wrote {out}"
    assert main(["evaluate", *example_rankings(tmp_path), "--quiet", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert main(["evaluate", *example_rankings(tmp_path)]) == 0
    table = capsys.readouterr().out
    medr = json.loads(out.read_text())["coco_5k_medr"]
    assert re.search(rf"coco_5k_medr +{medr['i2t']:.2f} +{medr['t2i']:.2f} +rank\n", table), table  # ranks as is


def test_bars_on_a_terminal_and_none_with_quiet(tmp_path, capsys):
    from eccv_metric.core import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    saved = progress.configure(file=stream, delay=0)
    try:
        args = ["export-trec", "--qrels", "coco", "--direction", "t2i", "-o"]
        assert main([*args, str(tmp_path / "a.qrels")]) == 0
        assert "writing" in stream.getvalue() and "line" in stream.getvalue()
        drawn = len(stream.getvalue())
        assert main([*args, str(tmp_path / "b.qrels"), "--quiet"]) == 0
        assert len(stream.getvalue()) == drawn and capsys.readouterr().out.count("wrote") == 1
    finally:
        progress.reset(saved)
    assert (tmp_path / "a.qrels").read_bytes() == (tmp_path / "b.qrels").read_bytes()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_follow_the_umask(tmp_path, capsys, umask, mode):
    out, per_query, qrels = tmp_path / "r.json", tmp_path / "pq.json", tmp_path / "q.qrels"
    old = os.umask(umask)
    try:
        assert main(["evaluate", *example_rankings(tmp_path), "-o", str(out), "--per-query", str(per_query)]) == 0
        assert main(["export-trec", "--qrels", "eccv", "--direction", "i2t", "-o", str(qrels)]) == 0
    finally:
        os.umask(old)
    for path in (out, per_query, qrels):
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
