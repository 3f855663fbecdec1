"""TREC qrels / runs: pytrec_eval (trec_eval) and ranx on our exported files agree with the engine.

COCO R@K = success_K = hit_rate@K; R-Precision = Rprec = r-precision; mAP@R =
map_cut_R = map@R with each query's own R. Files are parsed here with a
separate minimal reader, then handed to the third-party tools.
"""

from __future__ import annotations

import json
import warnings
from collections import defaultdict

import numpy as np
import pytest
import pytrec_eval

from eccv_metric import EvaluationError
from eccv_metric.cli.main import main
from eccv_metric.formats import trec

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from ranx import Qrels
    from ranx import Run
    from ranx import evaluate as ranx_evaluate

KS = (1, 5, 10)


def parse_qrels(path):
    out = defaultdict(dict)
    for line in path.read_text().splitlines():
        q, _, d, rel = line.split()
        out[q][d] = int(rel)
    return dict(out)


def parse_run(path):
    out = defaultdict(dict)
    for line in path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        out[q][d] = float(score)
    return dict(out)


def third_party(qrels, run, rs):
    """Per-query values from pytrec_eval and ranx: success_K, Rprec, map_cut_R (each query's own R)."""
    measures = {"success_" + ",".join(map(str, KS)), "Rprec", "map_cut_" + ",".join(map(str, sorted(rs)))}
    tre = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = [f"hit_rate@{k}" for k in KS] + ["r-precision"] + [f"map@{r}" for r in sorted(rs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx_run = Run(run)
        ranx_evaluate(Qrels(qrels), ranx_run, names, make_comparable=True)
    return tre, ranx_run.scores


@pytest.fixture(scope="module")
def exported(tmp_path_factory, top50):
    folder = tmp_path_factory.mktemp("trec")
    i2t, t2i = top50
    (folder / "r.json").write_text(
        json.dumps({"i2t": {str(k): v for k, v in i2t.items()}, "t2i": {str(k): v for k, v in t2i.items()}})
    )
    assert main(["export-trec", "--rankings", str(folder / "r.json"), "-o", str(folder / "run.trec")]) == 0
    for bench in ("coco", "cxc", "eccv"):
        assert main(["export-trec", "--qrels", bench, "-o", str(folder / f"{bench}.qrels")]) == 0
    return folder


@pytest.mark.parametrize("bench", ["coco", "cxc", "eccv"])
def test_pytrec_eval_and_ranx_agree_with_the_engine(exported, metrics, top50, bench):
    qrels = parse_qrels(exported / f"{bench}.qrels")
    run = parse_run(exported / "run.trec")
    targets = [f"{'coco_5k' if bench == 'coco' else bench}_r{k}" for k in KS]
    if bench == "eccv":
        targets += ["eccv_map_at_r", "eccv_rprecision"]
    ours = metrics.per_query(*top50, targets, KS)
    for direction in ("i2t", "t2i"):
        prefix = "image-" if direction == "i2t" else "caption-"
        sub_qrels = {q: d for q, d in qrels.items() if q.startswith(prefix)}
        rs = {len(d) for d in sub_qrels.values()}
        tre, rx = third_party(sub_qrels, {q: run[q] for q in sub_qrels}, rs)
        for target in targets:
            per_query = ours[target][direction]
            qids = [prefix + str(q) for q in per_query.query_ids.tolist()]
            assert set(qids) == set(sub_qrels)
            if "_r" in target and target.rsplit("_r", 1)[1].isdigit():
                k = int(target.rsplit("_r", 1)[1])
                theirs = np.array([tre[q][f"success_{k}"] for q in qids])
                theirs_rx = np.array([rx[f"hit_rate@{k}"][q] for q in qids])
            elif target == "eccv_rprecision":
                theirs = np.array([tre[q]["Rprec"] for q in qids])
                theirs_rx = np.array([rx["r-precision"][q] for q in qids])
            else:
                theirs = np.array([tre[q][f"map_cut_{len(sub_qrels[q])}"] for q in qids])
                theirs_rx = np.array([rx[f"map@{len(sub_qrels[q])}"][q] for q in qids])
            assert np.abs(per_query.values - theirs).max() <= 1e-12, (target, direction)
            assert np.abs(per_query.values - theirs_rx).max() <= 1e-12, (target, direction)
            assert abs(per_query.mean - theirs.mean()) <= 1e-12


def test_pm_rprecision_matches_trec_rprec_where_r_fits_the_list(metrics, gt, top50, tmp_path):
    """PMRP caps R at 50; on queries with R <= 50 it is trec_eval's Rprec (a sample of queries)."""
    run = {}
    for direction, rankings in zip(("i2t", "t2i"), top50, strict=True):
        for line in trec.run_lines(rankings, direction):
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    ours = metrics.per_query(*top50, ["pmrp"])["pmrp"]
    rng = np.random.default_rng(0)
    for direction in ("i2t", "t2i"):
        rel = metrics.relevance("pm", direction)
        small = rel.query[rel.n_positives <= 50]  # materialise only the sampled queries' ~10M-pair lists
        picked = np.sort(rng.choice(small, size=min(150, len(small)), replace=False))
        lists = trec.positives_lists(gt, rel.to_positives().restrict(picked), direction)
        assert all(len(docs) <= 50 for docs in lists.values()) and len(lists) == len(picked)
        sample = list(lists)
        path = tmp_path / f"pm_{direction}.qrels"
        path.write_text("\n".join(trec.qrels_lines(lists, direction)) + "\n")
        qrels = parse_qrels(path)
        tre, rx = third_party(qrels, {q: run[q] for q in qrels}, {1})
        values = dict(zip(ours[direction].query_ids.tolist(), ours[direction].values.tolist(), strict=True))
        prefix = "image-" if direction == "i2t" else "caption-"
        for q in sample:
            assert abs(values[q] - tre[prefix + str(q)]["Rprec"]) <= 1e-12
            assert abs(values[q] - rx["r-precision"][prefix + str(q)]) <= 1e-12


def test_qrels_pair_counts_are_the_papers(exported):
    counts = {}
    for bench in ("eccv", "cxc"):
        qrels = parse_qrels(exported / f"{bench}.qrels")
        for prefix, direction in (("image-", "i2t"), ("caption-", "t2i")):
            sub = {q: d for q, d in qrels.items() if q.startswith(prefix)}
            counts[bench, direction] = (len(sub), sum(map(len, sub.values())))
    assert counts["eccv", "i2t"] == (1261, 22550)
    assert counts["eccv", "t2i"] == (1332, 11279)
    assert counts["cxc", "i2t"][1] == counts["cxc", "t2i"][1] == 35585


def test_round_trip_export_import_evaluate(exported, metrics, top50, scores_gauss, tmp_path, capsys):
    targets = ["coco_5k_r1", "coco_1k_r1", "eccv_map_at_r", "eccv_r1", "cxc_r1"]
    direct = metrics.compute_all_metrics(*top50, targets)
    assert main(["import-trec", str(exported / "run.trec"), "-o", str(tmp_path / "back.json")]) == 0
    for args in (["--rankings", str(tmp_path / "back.json")], ["--run", str(exported / "run.trec")]):
        out = tmp_path / "res.json"
        assert main(["evaluate", *args, "--metrics", *targets, "-o", str(out)]) == 0
        assert json.loads(out.read_text()) == direct
    # a run from a score matrix (top-50, stable ties) equals the metrics straight from the matrix
    np.save(tmp_path / "s.npy", scores_gauss)
    run = tmp_path / "s.trec"
    assert main(["export-trec", "--scores", str(tmp_path / "s.npy"), "--depth", "50", "-o", str(run)]) == 0
    out = tmp_path / "res2.json"
    assert main(["evaluate", "--run", str(run), "--metrics", "coco_5k_r1", "eccv_map_at_r", "-o", str(out)]) == 0
    expected = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=("coco_5k_r1", "eccv_map_at_r"))
    assert json.loads(out.read_text()) == expected
    capsys.readouterr()


@pytest.mark.parametrize(
    "line,message",
    [
        ("image-391895 Q0 caption-770337 1", "a run line has 6 fields"),
        ("image-391895 Q0 caption-770337 one 2.0 x", "rank must be an integer"),
        ("image-391895 Q0 caption-770337 1 nan x", "score must be a finite decimal number"),
        ("img-391895 Q0 caption-770337 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-0391895 Q0 caption-770337 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-３９１８９５ Q0 caption-770337 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-391895 Q0 caption-770337 1_0 2.0 x", "rank must be an integer"),
        ("image-391895 Q0 caption-770337 1 1_0.5 x", "score must be a finite decimal number"),
    ],
)
def test_bad_run_lines(tmp_path, line, message):
    path = tmp_path / "bad.trec"
    path.write_text(line + "\n")
    with pytest.raises(EvaluationError, match=message):
        trec.read_run(path)


def test_ambiguous_ties_are_refused(tmp_path):
    path = tmp_path / "tie.trec"
    path.write_text("image-391895 Q0 caption-770337 1 2.0 x\nimage-391895 Q0 caption-771687 1 2.0 x\n")
    with pytest.raises(EvaluationError, match="tie.trec:2: query image-391895 has two documents with the same score"):
        trec.read_run(path)
    path.write_text("image-391895 Q0 caption-770337 2 2.0 x\nimage-391895 Q0 caption-771687 1 2.0 x\n")
    assert trec.read_run(path) == {"i2t": {391895: [771687, 770337]}}
