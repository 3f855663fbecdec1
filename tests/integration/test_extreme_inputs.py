"""Extreme and malformed inputs on the real data, through the API, the CLI and the evaluate module: huge K
and depths, scaled rows, ids and ranks out of range, BOMs, skewed list lengths, options of the wrong type,
targets of another collection, chance-level inputs; each is refused with a message naming it, or scored
exactly in memory bounded by the input. Memory bounds are checked in child processes (the peak resident
set of the child's own address space, ``VmHWM``: ``ru_maxrss`` would carry the parent's peak over the exec),
never wall-clock times.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import evaluate
import numpy as np
import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import GroundTruth
from eccv_metric import Metrics
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import evaluate as evaluate_input
from eccv_metric.analysis.compare import compare
from eccv_metric.cli.main import main
from tests.fixtures import INSTANCES
from tests.fixtures import SHARED
from tests.unit.brute import numbers

ROOT = Path(__file__).resolve().parents[2]
FG = SHARED / "mscoco_fg"
HUGE = 2**63


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(EVALUATE_MODULE_DIR))


@pytest.fixture(scope="module")
def fg_module():
    return evaluate.load(str(EVALUATE_MODULE_DIR), "mscoco_fg")


@pytest.fixture(scope="module")
def fg_resources(gt):
    return Resources(gt, fg_source=FG, cxc_source=SHARED / "cxc")


def cli(args, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def cli_error(args, capsys) -> str:
    code, out, err = cli(args, capsys)
    assert code == 2 and out == "", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def child_peak_mb(code: str, timeout: int = 600) -> tuple[str, float]:
    """Run ``code`` in a child Python; (its stdout, its peak resident set in MB)."""
    script = code + (
        "\nfrom pathlib import Path\n"
        "print('PEAK', next(int(x.split()[1]) for x in Path('/proc/self/status').read_text().splitlines()"
        " if x.startswith('VmHWM:')) / 1024)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    return "\n".join(lines[:-1]), float(lines[-1].split()[1])


def embeddings_5k(gt, seed: int = 0, dim: int = 32, noise: float = 1.0):
    """Seeded image and caption embeddings in Karpathy order: each caption near its image."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((len(gt.image_ids), dim)).astype(np.float32)
    cap = noise * rng.standard_normal((len(gt.caption_ids), dim)).astype(np.float32) + img[gt.caption_image]
    return img, cap


# Silent 1: cosine without overflow or underflow -------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e20, 1e-24])
def test_scaled_rows_give_the_unscaled_cosine(metrics, gt, scale):
    img, cap = embeddings_5k(gt, noise=2.0)
    names = ("coco_5k_r1", "coco_5k_r5")
    plain = metrics.compute_all_metrics_from_embeddings(img, cap, target_metrics=names, normalize=True)
    scaled = img.copy()
    scaled[::2] *= np.float32(scale)  # half the image rows: their squares overflow (1e20) or underflow (1e-24)
    assert metrics.compute_all_metrics_from_embeddings(scaled, cap, target_metrics=names, normalize=True) == plain
    assert 0.05 < plain["coco_5k_r1"]["i2t"] < 0.95  # a ranking with something to lose
    img[7] = 0
    with pytest.raises(EvaluationError, match=r"image embeddings: rows 7 are zero \(no cosine\)"):
        metrics.compute_all_metrics_from_embeddings(img, cap, target_metrics=names, normalize=True)


# Silent 2: a query given twice on the FG path ----------------------------------------------------------------


def test_fg_module_refuses_a_query_given_twice(fg_module, module, gt, fg_resources):
    fg = fg_resources.collection("mscoco_fg")
    captions = fg.index("caption").ids[:3].tolist()
    image = int(fg.index("image").ids[0])
    refs = captions + [captions[1]]
    preds = [[image]] * len(refs)
    with pytest.raises(EvaluationError, match=rf"t2i: queries given more than once: {captions[1]}"):
        fg_module.compute(predictions=preds, references=refs, directions=["t2i"] * 4, fg_source=FG, partial=True)
    with pytest.raises(EvaluationError, match=rf"t2i: queries given more than once: {captions[1]}"):
        module.compute(predictions=preds, references=refs, directions=["t2i"] * 4, fg_source=FG, benchmark="mscoco_fg")


def test_fg_config_refuses_target_metrics_of_another_collection(fg_module):
    with pytest.raises(EvaluationError, match=r"target_metrics eccv_r1 are not metrics of mscoco_fg"):
        fg_module.compute(predictions=[[1]], references=[770337], directions=["t2i"], target_metrics=["eccv_r1"])
    defaults = ["coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r"]  # equal to, not, the defaults
    with pytest.raises(EvaluationError, match=r"target_metrics coco_1k_r1, coco_5k_r1, cxc_r1 are not metrics of"):
        fg_module.compute(predictions=[[1]], references=[770337], directions=["t2i"], target_metrics=defaults)


# Silent 3: booleans ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["pm_include_own", "normalize", "cxc_directed", "partial", "nested"])
def test_module_boolean_options_take_booleans_only(module, top50, option):
    i2t, _ = top50
    refs = list(i2t)[:2]
    with pytest.raises(EvaluationError, match=rf"{option} must be True or False, not 'False'"):
        module.compute(
            predictions=[i2t[q] for q in refs], references=refs, directions=["i2t"] * 2,
            target_metrics=["coco_5k_r1"], **{"partial": True, option: "False"},
        )  # fmt: skip


# Silent 5: rows in the wrong order ---------------------------------------------------------------------------


def test_karpathy_ordered_fg_captions_are_noted_as_chance(gt, fg_resources):
    """The issue's case: MSCOCO-FG from caption embeddings in Karpathy order without caption_ids."""
    fg = fg_resources.collection("mscoco_fg")
    rng = np.random.default_rng(1)
    gallery = rng.standard_normal((len(fg.index("image")), 16)).astype(np.float32)
    q, g = fg.positives("t2i").pairs()
    captions = rng.standard_normal((len(fg.index("caption")), 16)).astype(np.float32)
    captions[q] += 2 * gallery[g]  # canonical (annotation) order: each caption near its image
    karpathy = captions[fg.index("caption").positions(gt.caption_ids)]
    names = ["mscoco_fg_r1", "mscoco_fg_r5", "mscoco_fg_r10"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChanceLevelWarning)
        right = evaluate_input(Embeddings(gallery, captions), names, directions="t2i", resources=fg_resources)
    assert right.notes == [] and right.means()["mscoco_fg_r1"]["t2i"] > 0.1
    with pytest.warns(ChanceLevelWarning, match="t2i: numbers at chance level"):
        wrong = evaluate_input(Embeddings(gallery, karpathy), names, directions="t2i", resources=fg_resources)
    assert wrong.means()["mscoco_fg_r1"]["t2i"] < 0.001
    assert (
        "common causes: rows not in the order of the benchmark's ids (give image_ids= / caption_ids=), a model "
        "that was not trained" in (wrong.notes[0])
    )
    given = Embeddings(gallery, karpathy, caption_ids=gt.caption_ids)  # ids name the rows: right again
    fixed = evaluate_input(given, names, directions="t2i", resources=fg_resources)
    assert fixed.means() == right.means() and fixed.notes == []
    useless = Embeddings(gallery, rng.standard_normal(captions.shape).astype(np.float32))  # at chance: noted too
    with pytest.warns(ChanceLevelWarning, match="mscoco_fg_r1 = "):
        evaluate_input(useless, names[:1], directions="t2i", resources=fg_resources)


def test_cli_prints_the_chance_note_as_a_warning(gt, tmp_path, capsys):
    img, cap = embeddings_5k(gt, dim=8)
    np.save(tmp_path / "img.npy", img)
    np.save(tmp_path / "cap.npy", cap[np.random.default_rng(2).permutation(len(cap))])
    code, out, err = cli(
        ["evaluate", "--image-embeddings", tmp_path / "img.npy", "--caption-embeddings", tmp_path / "cap.npy",
         "--metrics", "coco_5k_r1", "coco_5k_r5"], capsys,
    )  # fmt: skip
    assert code == 0 and "coco_5k_r1" in out
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("warning: ") for line in lines), err
    assert lines[0].startswith("warning: i2t: numbers at chance level (coco_5k_r1 = ")
    assert lines[1].startswith("warning: t2i: numbers at chance level (coco_5k_r1 = ")
    assert all("(give --image-ids / --caption-ids)" in line for line in lines)  # the note in the CLI's words
    np.save(tmp_path / "cap.npy", cap)
    code, out, err = cli(
        ["evaluate", "--image-embeddings", tmp_path / "img.npy", "--caption-embeddings", tmp_path / "cap.npy",
         "--metrics", "coco_5k_r1"], capsys,
    )  # fmt: skip
    assert code == 0 and err == ""


# Crash: K >= 2^63 in intramodal and FG tasks -----------------------------------------------------------------


def test_huge_k_intramodal_and_fg_everywhere(gt, fg_resources, module, tmp_path, capsys):
    img, cap = embeddings_5k(gt, dim=8)
    metrics = Metrics(cxc_source=SHARED / "cxc")
    names = [f"cxc_i2i_r{HUGE}", f"cxc_t2t_r{10**30}"]
    assert metrics.compute_all_metrics_from_embeddings(img, cap, target_metrics=names) == {
        names[0]: {"i2i": 1.0},
        names[1]: {"t2t": 1.0},
    }
    flat = module.compute(image_embeddings=img, target_metrics=[names[0]], cxc_source=SHARED / "cxc")
    assert flat == {f"{names[0]}/i2i": 1.0}
    np.save(tmp_path / "img.npy", img)
    code, out, _ = cli(
        ["evaluate", "--image-embeddings", tmp_path / "img.npy", "--metrics", names[0], "--cxc-source",
         SHARED / "cxc", "-o", tmp_path / "r.json"], capsys,
    )  # fmt: skip
    assert code == 0 and numbers(tmp_path / "r.json") == {names[0]: {"i2i": 1.0}}
    fg = fg_resources.collection("mscoco_fg")
    t2i = {int(c): [int(fg.index("image").ids[0])] for c in fg.index("caption").ids[:50]}
    name = f"mscoco_fg_r{HUGE}"
    with pytest.raises(EvaluationError, match=rf"t2i {name}: the ranked lists of \d+ query caption\(s\) are too short"):
        evaluate_input(Rankings(t2i=t2i), [name], resources=fg_resources, partial=True)
    with pytest.raises(EvaluationError, match=rf"t2i {name}: the ranked lists .* too short \(R@{HUGE} needs 31244"):
        module.compute(
            predictions=list(t2i.values()), references=list(t2i), directions=["t2i"] * 50, fg_source=FG,
            target_metrics=[name], partial=True,
        )  # fmt: skip
    (tmp_path / "fg.json").write_text(json.dumps({"t2i": {str(k): v for k, v in t2i.items()}}))
    line = cli_error(["evaluate", "--rankings", tmp_path / "fg.json", "--metrics", name, "--fg-source", FG,
                      "--partial"], capsys)  # fmt: skip
    assert f"R@{HUGE} needs 31244 items" in line


def test_coco_1k_k_beyond_a_fold_names_the_folds_size(metrics, top50):
    with pytest.raises(EvaluationError, match=r"R@1000000000000 needs 1000 items of the query's COCO 1K fold"):
        metrics.compute_all_metrics(None, top50[1], target_metrics=[f"coco_1k_r{10**12}"])


# strict JSON: the CLI names the file; memory bounded by the input -----------------------------------------------


def test_long_integers_in_rankings_json_name_the_file(tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text('{"t2i": {"770337": [' + "1" * 5000 + "]}}")
    line = cli_error(["evaluate", "--rankings", path, "--metrics", "coco_5k_r1"], capsys)
    assert line.startswith(f"error: {path}: an integer of 5000 digits")
    path.write_text("{" + "x" * 10)
    assert cli_error(["evaluate", "--rankings", path], capsys).startswith(f"error: {path}: not valid JSON")


def test_a_json_of_empty_objects_is_refused_before_parsing(tmp_path):
    """The issue's 450 MB upload, at 45 MB: counted on its bytes, refused with the file's own memory only."""
    path = tmp_path / "objects.json"
    with open(path, "wb") as fout:
        fout.write(b'{"t2i": {"770337": [')
        fout.write(b"{}, " * (45 << 18))
        fout.write(b"{}]}}")
    code = (
        "from eccv_metric.formats.rankings import load_rankings\nfrom eccv_metric import EvaluationError\n"
        f"try:\n    load_rankings({str(path)!r})\nexcept EvaluationError as exc:\n    print(exc)"
    )
    out, peak = child_peak_mb(code)
    assert "JSON objects; a rankings JSON holds at most 5" in out
    assert peak < 200 + path.stat().st_size / 2**20  # the file and the interpreter; no Python object per element


# export-trec: a huge depth streams its lines --------------------------------------------------------------------


def test_run_export_with_a_huge_depth_streams(tmp_path):
    """A 1,000-image x 5,000-caption split, depth 10^8 (capped at the gallery): 5M lines, peak bounded by blocks."""
    out = tmp_path / "run.trec"
    code = f"""
import numpy as np
from eccv_metric import GroundTruth, ScoreMatrix
from eccv_metric.formats.trec import run_from_scores, write_lines
captions = list(range(10_000, 15_000))
coco = {{"i2t": {{i: captions[5 * i:5 * i + 5] for i in range(1000)}},
        "t2i": {{c: [(c - 10_000) // 5] for c in captions}}}}
gt = GroundTruth.from_id_lists(captions, {{"coco": coco, "cxc": coco, "eccv": coco}})
scores = np.random.default_rng(0).standard_normal((1000, 5000)).astype(np.float16)
print(write_lines({str(out)!r}, run_from_scores(ScoreMatrix(scores, gt.image_ids, gt.caption_ids), gt, "i2t", 10**8)))
"""
    text, peak = child_peak_mb(code)
    assert int(text.split()[-1]) == 5_000_000
    size_mb = out.stat().st_size / 2**20
    assert size_mb > 200 and peak < 350, (size_mb, peak)  # lines held in memory would be ~2x the file
    with open(out) as fin:
        first = fin.readline().split()
    assert first[0] == "image-0" and first[3] == "1" and first[4] == "5000"


# import-trec: typed columns, not Python objects per line ----------------------------------------------------------


def test_import_trec_memory_is_a_fraction_of_the_file(gt, tmp_path):
    """A top-100 run of both 5K directions (3M lines, ~122 MB): peak under 3x the file, interpreter included
    (measured 2.5x; it was 7.9x: per-line tuples of Python objects, then 3.03x with the rising-score
    note's second sort and np.unique's copies)."""
    run = tmp_path / "run.trec"
    rng = np.random.default_rng(0)
    with open(run, "w") as fout:
        for kind, other, queries, docs in (("image", "caption", gt.image_ids, gt.caption_ids),
                                           ("caption", "image", gt.caption_ids, gt.image_ids)):  # fmt: skip
            for q in queries.tolist():
                ranked = docs[rng.choice(len(docs), 100, replace=False)].tolist()
                fout.write("".join(f"{kind}-{q} Q0 {other}-{d} {r} {101 - r}.5 t\n" for r, d in enumerate(ranked, 1)))
    out = tmp_path / "rankings.json"
    code = f"from eccv_metric.cli.main import main\nprint(main(['import-trec', {str(run)!r}, '-o', {str(out)!r}]))"
    text, peak = child_peak_mb(code)
    assert text.splitlines()[-1] == "0"
    size_mb = run.stat().st_size / 2**20
    assert peak < 3 * size_mb, (peak, size_mb)
    loaded = json.loads(out.read_text())
    assert len(loaded["i2t"]) == 5000 and len(loaded["t2i"]) == 25000
    assert all(len(v) == 100 for v in loaded["t2i"].values())


@pytest.mark.parametrize(
    "line,message",
    [
        ("image-391895 Q0 caption-" + "7" * 30 + " 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-391895 Q0 caption-７７０３３７ 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-39１895 Q0 caption-770337 1 2.0 x", "is not 'image-<id>' or 'caption-<id>'"),
        ("image-391895 Q0 caption-770337 １ 2.0 x", "rank must be an integer"),
        ("image-391895 Q0 caption-770337 1 ２.0 x", "score must be a finite decimal number"),
        ("image-391895 Q0 caption-770337 " + "9" * 19 + " 2.0 x", "rank must be an integer"),
    ],
)
def test_trec_ids_ranks_and_scores_are_ascii_and_bounded(tmp_path, capsys, line, message):
    path = tmp_path / "run.trec"
    path.write_text(line + "\n", encoding="utf-8")
    assert message in cli_error(["import-trec", path, "-o", tmp_path / "out.json"], capsys)


def test_trec_files_with_a_bom_read_like_without(tmp_path, top50, capsys):
    i2t, _ = top50
    lines = "".join(f"image-{q} Q0 caption-{d} {r} {60 - r} t\n" for q, v in i2t.items() for r, d in enumerate(v, 1))
    plain, bom = tmp_path / "plain.trec", tmp_path / "bom.trec"
    plain.write_text(lines, encoding="utf-8")
    bom.write_text(lines, encoding="utf-8-sig")
    outs = []
    for run in (plain, bom):
        code, out, _ = cli(["evaluate", "--run", run, "--metrics", "coco_5k_r1", "eccv_r1", "-o",
                            tmp_path / f"{run.stem}.json"], capsys)  # fmt: skip
        assert code == 0
        outs.append(numbers(tmp_path / f"{run.stem}.json"))  # the numbers (the provenance holds each run's time)
    assert outs[0] == outs[1] and set(outs[0]["coco_5k_r1"]) == {"i2t"}


# Memory: skewed list lengths ------------------------------------------------------------------------------------


def test_skewed_list_lengths_cost_the_input_not_the_longest_list():
    """One list of 5,000 ids, 24,999 of one (240 KB of ids): it peaked at 2.5-5 GB padded to the longest."""
    code = """
import warnings
import numpy as np
import evaluate
from eccv_metric import EVALUATE_MODULE_DIR, Metrics
warnings.simplefilter("ignore")
m = Metrics()
gt = m.gt
lengths = np.ones(len(gt.caption_ids), dtype=np.int64)
lengths[0] = 5000
flat = np.concatenate([np.random.default_rng(0).permutation(gt.image_ids), gt.image_ids[gt.caption_image[1:]]])
names = ["coco_5k_r1", "coco_1k_r1", "coco_5k_medr", "cxc_r1"]
out = m.per_query_from_arrays(t2i=(gt.caption_ids, flat, lengths), target_metrics=names)
print({k: v["t2i"].value for k, v in out.items()})
module = evaluate.load(str(EVALUATE_MODULE_DIR))
lists = [flat[:5000].tolist()] + [[x] for x in flat[5000:].tolist()]
print(module.compute(predictions=lists, references=gt.caption_ids.tolist(), directions=["t2i"] * len(lists),
                     target_metrics=names, nested=True))
"""
    text, peak = child_peak_mb(code)
    api, via_module = (eval(line) for line in text.splitlines()[-2:])
    assert api == {k: v["t2i"] for k, v in via_module.items()}
    assert api["coco_5k_r1"] in (24_999 / 25_000, 1.0) and api["coco_5k_medr"] == 1.0  # the other lists: own image
    assert peak < 1000, peak


# Unclear errors and accepted bad input ----------------------------------------------------------------------


def test_pmrp_from_a_built_folder_without_its_images_config(built, tmp_path, top50):
    folder, _ = built
    partial = tmp_path / "no_images"
    shutil.copytree(folder, partial, ignore=shutil.ignore_patterns("images"))
    assert not (partial / "data" / "images").exists()
    ours = Metrics(ground_truth=GroundTruth.from_dataset(partial)).compute_all_metrics(*top50, target_metrics=["pmrp"])
    assert ours == Metrics(instances_json=INSTANCES).compute_all_metrics(*top50, target_metrics=["pmrp"])
    with pytest.raises(EvaluationError, match="are zeta=2 without the query's own image, not pm_zeta=1"):
        Metrics(ground_truth=GroundTruth.from_dataset(partial), pm_zeta=1).compute_all_metrics(
            *top50, target_metrics=["pmrp"]
        )


def test_normalize_with_scores_is_refused_by_the_module_and_the_cli(module, gt, tmp_path, capsys):
    scores = np.zeros((len(gt.image_ids), len(gt.caption_ids)), dtype=np.float16)
    with pytest.raises(EvaluationError, match="normalize= applies to embeddings only"):
        module.compute(scores=scores, normalize=True, target_metrics=["coco_5k_r1"])
    np.save(tmp_path / "s.npy", scores)
    line = cli_error(["evaluate", "--scores", tmp_path / "s.npy", "--normalize"], capsys)
    assert line == "error: --normalize applies to embeddings only (cosine similarity)"


def test_compare_refuses_values_outside_the_metrics_range(metrics, top50):
    i2t, t2i = top50
    raw = {
        m: {d: {"query_ids": q.query_ids.tolist(), "values": q.values.tolist()} for d, q in by.items()}
        for m, by in metrics.per_query(i2t, t2i, ("coco_5k_r1", "eccv_map_at_r")).items()
    }
    bad = json.loads(json.dumps(raw))
    bad["coco_5k_r1"]["i2t"]["values"][3] = 5.0
    with pytest.raises(EvaluationError, match=r"B coco_5k_r1/i2t: values outside \[0, 1\] .*fractions, not percent"):
        compare(raw, bad, n_resamples=20)
    bad = json.loads(json.dumps(raw))
    bad["eccv_map_at_r"]["t2i"]["values"][0] = -0.5
    with pytest.raises(EvaluationError, match=r"B eccv_map_at_r/t2i: values outside \[0, 1\]"):
        compare(raw, bad, n_resamples=20)


def test_leaderboard_with_bad_results_files(tmp_path, capsys, metrics, top50):
    per_query = tmp_path / "pq.json"
    per_query.write_text(json.dumps({"coco_5k_r1": {"i2t": {"query_ids": [1], "values": [1.0]}}}))
    assert "is a per-query file (evaluate --per-query)" in cli_error(["leaderboard", "--with", per_query], capsys)
    text = tmp_path / "notes.json"
    text.write_text("coco_5k_r1 = 0.5")
    assert cli_error(["leaderboard", "--with", text], capsys).startswith(f"error: {text}: not valid JSON")
    percent = tmp_path / "percent.json"
    percent.write_text(json.dumps({"eccv_map_at_r": {"i2t": 35.0, "t2i": 30.0}}))
    assert "is not a fraction in [0, 1]" in cli_error(["leaderboard", "--with", percent], capsys)
    one = tmp_path / "one_direction.json"
    one.write_text(json.dumps(metrics.compute_all_metrics(top50[0], None, ("coco_5k_r1", "eccv_map_at_r"))))
    line = cli_error(["leaderboard", "--with", one], capsys)
    assert line == (
        "error: one_direction: no metric has both i2t and t2i values; the leaderboard ranks i2t/t2i averages"
    )


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_cli_outputs_follow_the_umask(top50, tmp_path, capsys, umask):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"i2t": {str(k): v for k, v in top50[0].items()}}))
    old = os.umask(umask)
    try:
        code, _, _ = cli(["evaluate", "--rankings", path, "--metrics", "coco_5k_r1", "-o", tmp_path / "out.json",
                          "--per-query", tmp_path / "pq.json"], capsys)  # fmt: skip
        assert code == 0
        assert main(["import-trec", str(_run(tmp_path, top50)), "-o", str(tmp_path / "imported.json")]) == 0
    finally:
        os.umask(old)
    for name in ("out.json", "pq.json", "imported.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask, name


def _run(tmp_path, top50) -> Path:
    run = tmp_path / "small.trec"
    q, ranked = next(iter(top50[0].items()))
    run.write_text("".join(f"image-{q} Q0 caption-{d} {r} {60 - r} t\n" for r, d in enumerate(ranked, 1)))
    return run
