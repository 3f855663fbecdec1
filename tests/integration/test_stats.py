"""Confidence intervals, paired tests, Kendall tau-b, the leaderboard and their CLI commands."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from eccv_metric.analysis.leaderboard import CORRELATE_METRICS
from eccv_metric.analysis.leaderboard import paper_table
from eccv_metric.analysis.stats import bootstrap_ci
from eccv_metric.analysis.stats import holm
from eccv_metric.analysis.stats import kendall_tau_b
from eccv_metric.analysis.stats import paired_test
from eccv_metric.cli.main import main
from tests.fixtures import SHARED

PAPER = SHARED / "paper"


def test_kendall_tau_b_hand_computed_with_ties():
    # x = [1, 2, 2, 3], y = [1, 3, 2, 2]: pairs (6): (12) C, (13) C, (14) C, (23) tie x, (24) D, (34) tie y
    # C = 3, D = 1, n0 = 6, n1 = 1, n2 = 1 -> tau_b = 2 / sqrt(5 * 5) = 0.4
    assert kendall_tau_b([1, 2, 2, 3], [1, 3, 2, 2]) == pytest.approx(0.4)
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau_b([1, 2, np.nan, 4], [1, 2, 9, 4]) == pytest.approx(1.0)  # pairwise deletion
    assert np.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_ci_covers_the_true_mean_at_about_the_nominal_rate():
    rng = np.random.default_rng(0)
    covered = 0
    trials = 200
    for t in range(trials):
        sample = rng.binomial(1, 0.3, size=300).astype(float)
        ci = bootstrap_ci(sample, n_resamples=1000, confidence=0.9, seed=t)
        covered += ci.low <= 0.3 <= ci.high
        assert ci.low <= ci.mean <= ci.high
    assert 0.84 <= covered / trials <= 0.96


def test_stratified_bootstrap_keeps_fold_sizes():
    values = np.r_[np.zeros(500), np.ones(500)]
    groups = np.r_[np.zeros(500, int), np.ones(500, int)]
    ci = bootstrap_ci(values, n_resamples=500, groups=groups)
    assert ci.low == ci.high == ci.mean == 0.5  # within-fold resampling cannot move a constant fold
    assert bootstrap_ci(values, n_resamples=500).low < 0.5


@pytest.mark.parametrize("method", ["randomization", "bootstrap"])
def test_paired_tests(method):
    rng = np.random.default_rng(1)
    a = rng.uniform(size=400)
    same = paired_test(a, a.copy(), n_resamples=2000, method=method)
    assert same.diff == 0 and same.p_value == 1.0
    better = paired_test(a + 0.05 + rng.normal(0, 0.02, 400), a, n_resamples=2000, method=method)
    assert better.p_value < 0.001 and better.low > 0
    noise = paired_test(a + rng.normal(0, 0.2, 400), a, n_resamples=2000, method=method)
    assert noise.p_value > 0.01


def test_paper_correlation_coco_r1_vs_ecc_map_is_the_papers_047():
    table = paper_table(PAPER)
    assert len(table) == 25
    assert kendall_tau_b(
        [row["coco_1k_r1"] for row in table.values()], [row["eccv_map_at_r"] for row in table.values()]
    ) == pytest.approx(0.47, abs=0.005)
    assert table["BLIP"]["pmrp"] == 57.17  # Table 4's column, as the paper correlated
    assert table["BLIP"]["rsum"] == 564.4


def test_cli_correlate_json_table_and_plot(tmp_path, capsys):
    assert main(["correlate", "--paper-dir", str(PAPER), "--format", "json"]) == 0
    taus = json.loads(capsys.readouterr().out)
    assert list(taus) == CORRELATE_METRICS and all(taus[m][m] == pytest.approx(1.0) for m in CORRELATE_METRICS)
    png = tmp_path / "tau.png"
    assert main(["correlate", "--paper-dir", str(PAPER), "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rsum" in capsys.readouterr().out


def test_cli_evaluate_compare_and_leaderboard(tmp_path, capsys, gt, top50):
    i2t, t2i = top50
    rankings = tmp_path / "model_a.json"
    rankings.write_text(json.dumps({"i2t": i2t, "t2i": t2i}))
    worse = {k: v[1:] + v[:1] for k, v in t2i.items()}  # rank 1 moved to the end
    (tmp_path / "model_b.json").write_text(json.dumps({"i2t": i2t, "t2i": worse}))
    # top-50 lists decide COCO 1K R@1 but not R@5/R@10 for every query: ask for the decidable ones
    targets = ["eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_recalls", "cxc_r1", "coco_1k_r1"]
    for name in ("model_a", "model_b"):
        assert (
            main(
                [
                    "evaluate",
                    "--rankings",
                    str(tmp_path / f"{name}.json"),
                    "--metrics",
                    *targets,
                    "-o",
                    str(tmp_path / f"{name}_results.json"),
                    "--per-query",
                    str(tmp_path / f"{name}_pq.json"),
                ]
            )
            == 0
        )
    out = tmp_path / "cmp.json"
    assert (
        main(
            [
                "compare",
                str(tmp_path / "model_a_pq.json"),
                str(tmp_path / "model_b_pq.json"),
                "--n-resamples",
                "500",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    rows = {(r["metric"], r["direction"]): r for r in json.loads(out.read_text())}
    assert rows[("coco_5k_r1", "i2t")]["p_value"] == 1.0 and rows[("coco_5k_r1", "i2t")]["diff"] == 0
    assert rows[("coco_5k_r1", "t2i")]["p_value"] < 0.01 and rows[("coco_5k_r1", "t2i")]["diff"] > 0
    results = json.loads((tmp_path / "model_a_results.json").read_text())
    assert rows[("eccv_map_at_r", "t2i")]["a"] == results["eccv_map_at_r"]["t2i"]
    capsys.readouterr()
    assert main(["leaderboard", "--paper-dir", str(PAPER), "--with", str(tmp_path / "model_a_results.json")]) == 0
    text = capsys.readouterr().out
    assert "model_a_results ranks (of 26)" in text and "BLIP" in text


def test_shipped_paper_figures_are_the_transcription_and_need_no_flag(monkeypatch, capsys):
    """The package's cited copy holds the same figures as ../shared/data/paper (its transcription)."""
    from eccv_metric.analysis.leaderboard import SHIPPED

    monkeypatch.delenv("ECCV_CAPTION_PAPER_DIR", raising=False)
    assert paper_table(SHIPPED) == paper_table(PAPER)
    assert main(["correlate", "--format", "json"]) == 0
    taus = json.loads(capsys.readouterr().out)
    assert taus["coco_1k_r1"]["eccv_map_at_r"] == pytest.approx(0.47, abs=0.005)
    assert main(["leaderboard"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[1:4] == ["mAP@R", "R-P", "ECCV"] and len(lines) == 26
    assert lines[1].startswith("VSE-infinity (WSL grid)")  # the best ECCV mAP@R of Table 4 (42.41)


def test_leaderboard_sort_is_validated_and_a_closed_pipe_is_quiet(capsys):
    with pytest.raises(SystemExit):
        main(["leaderboard", "--sort", "map"])
    assert "invalid choice: 'map'" in capsys.readouterr().err
    done = subprocess.run(
        f"{sys.executable} -m eccv_metric.cli leaderboard --sort coco_1k_r1 | head -n 2",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 2 and done.stderr == ""


def test_holm_bonferroni_hand_computed():
    # sorted p: 0.005, 0.01, 0.03, 0.04 (m = 4) -> 0.02, 0.03, max(0.03, 0.06), max(0.06, 0.04)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([0.2]) == [0.2]
