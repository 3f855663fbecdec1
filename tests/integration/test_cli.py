"""`eccv-caption evaluate` on a score matrix file and on bad input."""

from __future__ import annotations

import json

import numpy as np

from eccv_metric.cli.main import main


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
    assert json.loads(out.read_text()) == expected
    table = capsys.readouterr().out
    assert f"{100 * expected['eccv_map_at_r']['i2t']:7.2f}" in table


def test_evaluate_bad_input_exits_2_with_the_message(tmp_path, capsys):
    (tmp_path / "r.json").write_text(json.dumps({"i2t": {"391895": [1, 2]}}))
    assert main(["evaluate", "--rankings", str(tmp_path / "r.json"), "-o", str(tmp_path / "out.json")]) == 2
    assert "ranks id(s) that are not test-split captions: 1, 2" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
