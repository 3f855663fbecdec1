"""TREC qrels / runs: pytrec_eval (trec_eval) and ranx on our exported files agree with the engine.

COCO R@K = success_K = hit_rate@K; R-Precision = Rprec = r-precision; mAP@R =
map_cut_R = map@R with each query's own R. Files are parsed here with a
separate minimal reader, then handed to the third-party tools.
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections import defaultdict

import numpy as np
import pytest
import pytrec_eval

from eccv_metric import EvaluationError
from eccv_metric.cli.main import main
from eccv_metric.formats import trec
from eccv_metric.formats.qrels import positives_lists
from eccv_metric.formats.qrels import qrels_lines
from tests.fixtures import SHARED
from tests.fixtures import make_scores
from tests.unit.brute import numbers

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from ranx import Qrels
    from ranx import Run
    from ranx import evaluate as ranx_evaluate

KS = (1, 5, 10)


def parse_qrels(*paths):
    out = defaultdict(dict)
    for path in paths:
        for line in path.read_text().splitlines():
            q, _, d, rel = line.split()
            out[q][d] = int(rel)
    return dict(out)


def parse_run(*paths):
    out = defaultdict(dict)
    for path in paths:
        for line in path.read_text().splitlines():
            q, _, d, _, score, _ = line.split()
            out[q][d] = float(score)
    return dict(out)


def both(folder, stem, suffix):
    """The per-direction files ``export-trec -o <stem><suffix>`` writes (i2t, t2i)."""
    return folder / f"{stem}.i2t{suffix}", folder / f"{stem}.t2i{suffix}"


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
    cxc = ["--cxc-source", str(SHARED / "cxc")]
    assert main(["export-trec", "--qrels", "cxc_graded", *cxc, "-o", str(folder / "cxc_graded.qrels")]) == 0
    return folder


def test_export_writes_one_file_per_direction(exported, tmp_path):
    """trec_eval's 'all' averages a file's queries: i2t and t2i never share a file unless --pooled."""
    assert not (exported / "run.trec").exists() and not (exported / "eccv.qrels").exists()
    for stem, suffix in (("run", ".trec"), ("eccv", ".qrels"), ("cxc_graded", ".qrels")):
        for path, prefix in zip(both(exported, stem, suffix), ("image-", "caption-"), strict=True):
            assert {line.split()[0].split("-")[0] + "-" for line in path.read_text().splitlines()} == {prefix}
    one = tmp_path / "t2i_only.qrels"
    assert main(["export-trec", "--qrels", "eccv", "--direction", "t2i", "-o", str(one)]) == 0
    assert one.read_text() == both(exported, "eccv", ".qrels")[1].read_text()
    pooled = tmp_path / "pooled.qrels"
    assert main(["export-trec", "--qrels", "eccv", "--pooled", "-o", str(pooled)]) == 0
    assert pooled.read_text() == "".join(p.read_text() for p in both(exported, "eccv", ".qrels"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pooled.qrels", "t2i_only.qrels"]


def test_cxc_grades_binary_and_graded_name_the_same_pairs(exported):
    """`cxc` is binary (the benchmark); `cxc_graded` = the SITS rating rounded half up, on exactly the same pairs."""
    binary = parse_qrels(*both(exported, "cxc", ".qrels"))
    graded = parse_qrels(*both(exported, "cxc_graded", ".qrels"))
    assert {q: set(d) for q, d in binary.items()} == {q: set(d) for q, d in graded.items()}
    assert {r for d in binary.values() for r in d.values()} == {1}
    grades = [r for d in graded.values() for r in d.values()]
    assert set(grades) == {3, 4, 5} and len(grades) == 2 * 35585
    ratings = {}  # independent: the CSV read here, rounded half up, the highest rating of a pair
    with open(SHARED / "cxc" / "sits_test.csv", encoding="utf-8") as fin:
        next(fin)
        for row in csv.reader(fin):
            caption = "caption-" + row[0].rsplit(":", 1)[1]
            image = "image-" + str(int(row[1].rsplit("_", 1)[1].split(".")[0]))
            value = int(math.floor(float(row[2]) + 0.5))
            ratings[caption, image] = max(ratings.get((caption, image), 0), value)
    for query, docs in graded.items():
        for doc, grade in docs.items():
            assert grade == ratings[(query, doc) if query.startswith("caption-") else (doc, query)]


@pytest.mark.parametrize("bench", ["coco", "cxc", "eccv"])
def test_pytrec_eval_and_ranx_agree_with_the_engine(exported, metrics, top50, bench):
    qrels = parse_qrels(*both(exported, bench, ".qrels"))
    run = parse_run(*both(exported, "run", ".trec"))
    targets = [f"{'coco_5k' if bench == 'coco' else bench}_r{k}" for k in KS]
    if bench == "eccv":
        targets += ["eccv_map_at_r", "eccv_rprecision"]
    ours = metrics.per_query(*top50, targets, KS)
    # R@K reads a list's first K items: the third parties get the first max(KS) of each list for R@K alone (a
    # fifth of the file: their cost is per entry), every item where R-Precision and mAP@R read up to R (<= 48)
    depth = max(KS) if bench != "eccv" else None
    for direction in ("i2t", "t2i"):
        prefix = "image-" if direction == "i2t" else "caption-"
        sub_qrels = {q: d for q, d in qrels.items() if q.startswith(prefix)}
        rs = {len(d) for d in sub_qrels.values()}
        sub_run = {q: dict(list(run[q].items())[:depth]) for q in sub_qrels}  # the file's order: rank order
        tre, rx = third_party(sub_qrels, sub_run, rs)
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
        lists = positives_lists(gt, rel.to_positives().restrict(picked), direction)
        assert all(len(docs) <= 50 for docs in lists.values()) and len(lists) == len(picked)
        sample = list(lists)
        path = tmp_path / f"pm_{direction}.qrels"
        path.write_text("\n".join(qrels_lines(lists, direction)) + "\n")
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
        qrels = parse_qrels(*both(exported, bench, ".qrels"))
        for prefix, direction in (("image-", "i2t"), ("caption-", "t2i")):
            sub = {q: d for q, d in qrels.items() if q.startswith(prefix)}
            counts[bench, direction] = (len(sub), sum(map(len, sub.values())))
    assert counts["eccv", "i2t"] == (1261, 22550)
    assert counts["eccv", "t2i"] == (1332, 11279)
    assert counts["cxc", "i2t"][1] == counts["cxc", "t2i"][1] == 35585


def test_round_trip_export_import_evaluate(exported, metrics, top50, scores_gauss, tmp_path, capsys):
    targets = ["coco_5k_r1", "coco_1k_r1", "eccv_map_at_r", "eccv_r1", "cxc_r1"]
    direct = metrics.compute_all_metrics(*top50, targets)
    pooled = tmp_path / "run.trec"  # a run holding both directions reads back as both
    pooled.write_text("".join(p.read_text() for p in both(exported, "run", ".trec")))
    assert main(["import-trec", str(pooled), "-o", str(tmp_path / "back.json")]) == 0
    for args in (["--rankings", str(tmp_path / "back.json")], ["--run", str(pooled)]):
        out = tmp_path / "res.json"
        assert main(["evaluate", *args, "--metrics", *targets, "-o", str(out)]) == 0
        assert numbers(out) == direct
    # a run from a score matrix (top-50, stable ties) equals the metrics straight from the matrix
    np.save(tmp_path / "s.npy", scores_gauss)
    run = tmp_path / "s.trec"
    assert main(["export-trec", "--scores", str(tmp_path / "s.npy"), "--depth", "50", "--pooled", "-o", str(run)]) == 0
    out = tmp_path / "res2.json"
    assert main(["evaluate", "--run", str(run), "--metrics", "coco_5k_r1", "eccv_map_at_r", "-o", str(out)]) == 0
    expected = metrics.compute_all_metrics_from_scores(scores_gauss, target_metrics=("coco_5k_r1", "eccv_map_at_r"))
    assert numbers(out) == expected
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


def ordered_top(scores: np.ndarray, tie_rank: np.ndarray, depth: int) -> np.ndarray:
    """Brute force written apart: each row by score descending, then by ``tie_rank`` descending (scores in 0.5
    steps, so one exact integer key orders both)."""
    out = []
    for start in range(0, len(scores), 500):  # blocks: bounded memory
        key = np.round(scores[start : start + 500].astype(np.float64) * 2).astype(np.int64) * len(tie_rank) + tie_rank
        top = np.argpartition(-key, depth - 1, axis=1)[:, :depth]
        out.append(np.take_along_axis(top, np.argsort(-np.take_along_axis(key, top, axis=1), axis=1), axis=1))
    return np.vstack(out)


def test_ties_exported_and_imported_as_trec_eval_orders_them(gt, metrics, tmp_path):
    """The seeded 'ties' matrix (scores in 0.5 steps: 18 distinct values a row). ``--ties trec_eval`` writes the
    real scores in trec_eval's order and reads runs back in it; ``stable`` keeps the given order. pytrec_eval
    agrees with the engine under each rule, per query; the two rules differ (measured: ECCV i2t R@1)."""
    scores = make_scores(gt, "ties").astype(np.float16)  # 0.5 steps are exact in float16: half the memory
    np.save(tmp_path / "ties.npy", scores)
    depth = 20
    rows = gt.positives["eccv"]["i2t"].query  # the ECCV image queries
    n = len(gt.caption_ids)
    expected = {  # stable: the column given first wins a tie; trec_eval: the larger id string
        "stable": ordered_top(scores[rows], np.arange(n)[::-1], depth),
        "trec_eval": ordered_top(scores[rows], np.argsort(np.argsort(gt.caption_ids.astype(str))), depth),
    }
    qrels = {
        f"image-{q}": {f"caption-{c}": 1 for c in cs}
        for q, cs in positives_lists(gt, gt.positives["eccv"]["i2t"], "i2t").items()
    }
    eccv = gt.image_ids[rows].tolist()
    r1 = {}
    for ties, order in expected.items():
        run = tmp_path / f"{ties}.trec"
        args = ["export-trec", "--scores", str(tmp_path / "ties.npy"), "--direction", "i2t", "--depth", str(depth)]
        assert main([*args, "--ties", ties, "-o", str(run)]) == 0
        lists = trec.read_run(run, ties)["i2t"]
        assert len(lists) == 5000 and all(len(v) == depth for v in lists.values())
        assert {q: lists[q] for q in eccv} == {q: gt.caption_ids[r].tolist() for q, r in zip(eccv, order, strict=True)}
        parsed = parse_run(run)
        if ties == "trec_eval":  # the real scores, as given
            row = scores[rows[0]].astype(np.float64)
            assert parsed[f"image-{eccv[0]}"] == {f"caption-{gt.caption_ids[j]}": float(row[j]) for j in order[0]}
        tre = pytrec_eval.RelevanceEvaluator(qrels, {"success_1,5,10"}).evaluate({q: parsed[q] for q in qrels})
        ours = metrics.per_query(lists, None, ["eccv_r1", "eccv_r5", "eccv_r10"], partial=False)
        for k in KS:
            per_query = ours[f"eccv_r{k}"]["i2t"]
            theirs = np.array([tre[f"image-{q}"][f"success_{k}"] for q in per_query.query_ids.tolist()])
            assert np.array_equal(per_query.values, theirs), (ties, k)
        r1[ties] = ours["eccv_r1"]["i2t"].mean
    assert (round(r1["stable"], 5), round(r1["trec_eval"], 5)) == (0.27914, 0.26011)


def test_a_tied_third_party_run_reads_by_rank_or_by_trec_eval(gt, tmp_path):
    """Two captions tie at score 2.0; the rank column says the positive first, trec_eval's id rule the other."""
    image = int(gt.image_ids[0])
    positive = int(gt.caption_ids[0])
    other = next(
        int(c) for c, i in zip(gt.caption_ids, gt.caption_image, strict=True) if i != 0 and str(c) > str(positive)
    )
    path = tmp_path / "tied.trec"
    path.write_text(f"image-{image} Q0 caption-{positive} 1 2.0 x\nimage-{image} Q0 caption-{other} 2 2.0 x\n")
    assert trec.read_run(path)["i2t"][image] == [positive, other]
    assert trec.read_run(path, "trec_eval")["i2t"][image] == [other, positive]
    qrels = {f"image-{image}": {f"caption-{positive}": 1}}
    tre = pytrec_eval.RelevanceEvaluator(qrels, {"success_1"}).evaluate(parse_run(path))
    assert tre[f"image-{image}"]["success_1"] == 0.0  # trec_eval ranks the other caption first
    with pytest.raises(EvaluationError, match="ties must be 'stable' or 'trec_eval'"):
        trec.read_run(path, "ranx")


@pytest.mark.parametrize(("tied", "given_first_wins"), [(2, True), (15, True), (16, False), (200, False)])
def test_ranx_keeps_the_given_order_of_tied_documents_only_for_short_runs(tied, given_first_wins):
    """What the README says of ranx (0.3.x): it orders a query's documents with numba's ``np.argsort`` of the
    negated scores, a quicksort that is not stable. Up to 15 tied documents keep the order given (the sort's
    insertion sort); longer runs of ties come out in an order of the sort's making: with 200 tied documents,
    the relevant one given first, hit_rate@1 is 0 (trec_eval: the largest id string; this project: the first)."""
    docs = [f"caption-{1000 + i}" for i in range(tied)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = Run({"image-1": {doc: 1.0 for doc in docs}})
        hit = ranx_evaluate(Qrels({"image-1": {docs[0]: 1}}), run, "hit_rate@1")
        order = list(run.to_dict()["image-1"])
    assert hit == (1.0 if given_first_wins else 0.0)
    assert (order == docs) is given_first_wins
    if tied == 16:
        assert order[0] == docs[14]  # the 15th given is ranked first
