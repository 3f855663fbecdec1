"""Issue 24 (no silent number, round three) on the synthetic world: each input gives the right number or an error.

Real-data counterparts (the 5K split, MSCOCO-FG, the CLI over real files, memory caps) are in
``tests/integration/test_extreme_inputs.py``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from eccv_metric import ChanceLevelWarning
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Metrics
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.analysis.stats import MAX_DRAWS
from eccv_metric.analysis.stats import bootstrap_ci
from eccv_metric.analysis.stats import kendall_tau_b
from eccv_metric.analysis.stats import paired_test
from eccv_metric.analysis.stats import resample_means
from eccv_metric.core.jsonio import parse_json
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import parse_rankings
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.inputs.choose import input_from_parts
from eccv_metric.measures.formulas import recall_at_chance
from tests.unit import brute
from tests.unit.world import vectors

ROOT = Path(__file__).resolve().parents[2]


def brute_cosine_recall(world, img, cap, k: int) -> float:
    """coco_5k R@K i2t of cosine similarities, by a full stable sort in float64 (rows normalised in float64)."""
    a = img.astype(np.float64) / np.linalg.norm(img.astype(np.float64), axis=1, keepdims=True)
    b = cap.astype(np.float64) / np.linalg.norm(cap.astype(np.float64), axis=1, keepdims=True)
    pos = brute.positives(world, "coco", "i2t")
    hits = []
    for i, image in enumerate(world.image_ids):
        ranked = brute.ranking(image, world.caption_ids, lambda c, i=i: float(a[i] @ b[world.caption_ids.index(c)]))
        hits.append(brute.recall(ranked, pos[image], k))
    return float(np.mean(hits))


# Silent 1: cosine of rows whose squares overflow or underflow ----------------------------------------


@pytest.mark.parametrize("scale", [1e20, 1e-24, 1e30, 1e-30])
def test_cosine_of_scaled_rows_equals_unscaled(world, res, scale):
    rng = np.random.default_rng(8)  # no ties: the scaled rows' last bits may differ, the ranking may not
    img = rng.standard_normal((len(world.image_ids), 16)).astype(np.float32)
    cap = rng.standard_normal((len(world.caption_ids), 16)).astype(np.float32)
    cap += img[[world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]] * np.float32(0.3)
    names = ["coco_5k_r1", "coco_5k_r5"]
    plain = evaluate(Embeddings(img, cap, normalize=True), names, resources=res).means()
    scaled_img = img.copy()
    scaled_img[::2] *= np.float32(scale)  # half the image rows: |x| * sqrt(d) beyond float32's squares
    scaled_cap = cap.copy()
    scaled_cap[1::2] *= np.float32(scale)
    got = evaluate(Embeddings(scaled_img, scaled_cap, normalize=True), names, resources=res).means()
    assert got == plain
    assert plain["coco_5k_r1"]["i2t"] == brute_cosine_recall(world, img, cap, 1)
    assert plain["coco_5k_r5"]["i2t"] == brute_cosine_recall(world, img, cap, 5)


def test_zero_rows_have_no_cosine(world, res):
    img, cap = vectors(world)
    img[3] = 0
    with pytest.raises(EvaluationError, match=r"image embeddings: rows 3 are zero \(no cosine\)"):
        evaluate(Embeddings(img, cap, normalize=True), ["coco_5k_r1"], resources=res)
    tiny = np.full_like(img, np.float32(1e-40))  # subnormal, not zero: a direction
    assert Embeddings(tiny, cap, normalize=True).vectors["image"].dtype == np.float32


# Silent 3: booleans are booleans -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["False", "no", 0, 1, None, np.int64(0)])
def test_boolean_options_take_booleans_only(world, res, value):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="pm_include_own must be True or False"):
        Metrics(ground_truth=world.gt, pm_include_own=value)
    with pytest.raises(EvaluationError, match="pm_include_own must be True or False"):
        PMOptions(2, value, 50)
    with pytest.raises(EvaluationError, match="normalize must be True or False"):
        Embeddings(img, cap, normalize=value)
    with pytest.raises(EvaluationError, match="cxc_directed must be True or False"):
        Resources(world.gt, cxc_directed=value)
    with pytest.raises(EvaluationError, match="partial must be True or False"):
        evaluate(ScoreMatrix(img @ cap.T), ["coco_5k_r1"], resources=res, partial=value)
    assert PMOptions(2, np.bool_(True), 50).include_own is True


def test_normalize_with_scores_is_refused(world):
    img, cap = vectors(world)
    with pytest.raises(EvaluationError, match="normalize applies to embeddings only"):
        input_from_parts({"scores": img @ cap.T, "normalize": True})


# Silent 4: ASCII decimal ids only ----------------------------------------------------------------------


@pytest.mark.parametrize("token", ["３９１８９５", "٣٩١", "1_000", "+5", "0x10", "12345678901234567890", "1.0"])
def test_id_text_files_hold_ascii_decimal_ids(tmp_path, token):
    path = tmp_path / "ids.txt"
    path.write_text(f"5\n{token}\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match=rf"{path}: image ids must (be decimal integers|fit a 64-bit)"):
        load_ids(path, "image ids")


def test_rankings_json_keys_in_other_digits_are_refused():
    with pytest.raises(EvaluationError, match=r"r.json: i2t query id keys must be ids written as plain decimal"):
        parse_rankings('{"i2t": {"３９１８９５": [1]}}'.encode(), "r.json")


# Crash: K >= 2^63 in intramodal and FG tasks -----------------------------------------------------------


@pytest.mark.parametrize("k", [2**63, 2**64 + 1, 10**30])
def test_huge_k_in_intramodal_and_fg_tasks(world, res, k):
    img, cap = vectors(world)
    rng = np.random.default_rng(2)
    fg = world.fg["mscoco_fg"]
    gallery = rng.standard_normal((len(fg["gallery"]), 4)).astype(np.float32)
    captions = rng.standard_normal((len(fg["captions"]), 4)).astype(np.float32)
    got = evaluate(Embeddings(img, cap), [f"cxc_i2i_r{k}", f"cxc_t2t_r{k}"], resources=res).means()
    assert got == {f"cxc_i2i_r{k}": {"i2i": 1.0}, f"cxc_t2t_r{k}": {"t2t": 1.0}}
    got = evaluate(Embeddings(gallery, captions), [f"mscoco_fg_r{k}", f"mscoco_fg_original_pool_r{k}"], resources=res)
    assert {v for by in got.means().values() for v in by.values()} == {1.0}


# Silent 5: chance level --------------------------------------------------------------------------------


def test_recall_at_chance_is_the_hypergeometric_tail():
    from math import comb

    n, r = np.array([10, 7, 5000, 31244, 3]), np.array([2, 7, 5, 1, 0])
    for k in (1, 3, 10, 10**20):
        expected = [
            1 - comb(int(a) - int(b), min(k, int(a))) / comb(int(a), min(k, int(a))) for a, b in zip(n, r, strict=True)
        ]
        assert recall_at_chance(n, r, k) == pytest.approx(expected, abs=1e-15)


def test_rows_in_the_wrong_order_warn_and_the_right_order_does_not(world, res):
    rng = np.random.default_rng(0)
    img = rng.standard_normal((len(world.image_ids), 8)).astype(np.float32)
    cap = rng.standard_normal((len(world.caption_ids), 8)).astype(np.float32) * 0.1
    cap += img[[world.image_ids.index(world.caption_image[c]) for c in world.caption_ids]]  # each near its image
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChanceLevelWarning)
        right = evaluate(Embeddings(img, cap), ["coco_5k_r1"], directions="t2i", resources=res)
    assert right.notes == [] and right.means()["coco_5k_r1"]["t2i"] > 0.8
    shuffled = cap[rng.permutation(len(cap))]
    with pytest.warns(ChanceLevelWarning, match="t2i: numbers at chance level") as caught:
        wrong = evaluate(Embeddings(img, shuffled), ["coco_5k_r1"], directions="t2i", resources=res)
    assert wrong.notes == [str(caught[0].message)]
    assert (
        "common causes: rows not in the order of the benchmark's ids (give image_ids= / caption_ids=), a model "
        "that was not trained" in (wrong.notes[0])
    )


# Unclear errors --------------------------------------------------------------------------------------


def test_swapped_embeddings_are_named_embeddings(world, res):
    img, cap = vectors(world)
    message = (
        r"100 image embeddings \(rows\) but image_ids= was not given, so the rows are read as the benchmark's 20 "
        r"images in canonical order: one embedding per image \(were image and caption embeddings swapped\?\)"
    )
    with pytest.raises(EvaluationError, match=message):
        evaluate(Embeddings(cap, img), ["coco_5k_r1"], resources=res)
    with pytest.raises(EvaluationError, match=r"100 image embeddings \(rows\) but 20 image ids were given"):
        evaluate(Embeddings(cap, img, image_ids=world.image_ids), ["coco_5k_r1"], resources=res)
    with pytest.raises(EvaluationError, match=r"scores= has shape \(100, 20\) but image_ids= was not given"):
        evaluate(ScoreMatrix(cap @ img.T), ["coco_5k_r1"], resources=res)
    # the images given, the captions not: their ids are the columns', never "the rows are read as captions"
    message = (
        r"scores= has shape \(20, 20\) but caption_ids= was not given, so the columns are read as the benchmark's "
        r"100 captions in canonical order \(row i = the i-th image id, column j = the j-th caption id"
    )
    with pytest.raises(EvaluationError, match=message):
        evaluate(ScoreMatrix(img @ img.T, image_ids=world.image_ids), ["coco_5k_r1"], resources=res)


def test_numpy_integers_are_integers(world, res):
    values = np.r_[np.ones(30), np.zeros(30)]
    assert bootstrap_ci(values, n_resamples=np.int64(50)).n_resamples == 50
    assert paired_test(values, values[::-1].copy(), n_resamples=np.int32(50)).n_resamples == 50
    options = PMOptions(np.int64(1), False, np.int16(10))
    assert (options.zeta, options.r_cap) == (1, 10) and type(options.zeta) is int
    with pytest.raises(EvaluationError, match=r"n_resamples must be an integer between 1 and 1,000,000, not 0"):
        bootstrap_ci(values, n_resamples=np.int64(0))
    with pytest.raises(EvaluationError, match=r"n_resamples must be an integer, not np.float64\(5.0\)"):
        bootstrap_ci(values, n_resamples=np.float64(5))


def test_cxc_correlation_kind_is_case_insensitive_and_checked(world):
    metrics = Metrics(ground_truth=world.gt, cxc_source=world.cxc_dir)
    score = {c: float(k) for k, c in enumerate(world.caption_ids)}

    def pairs(a, b):
        return np.array([score[x] - score[y] for x, y in zip(a.tolist(), b.tolist(), strict=True)])

    assert metrics.cxc_correlation("STS", pairs, 50).mean == metrics.cxc_correlation("sts", pairs, 50).mean
    with pytest.raises(EvaluationError, match=r"kind must be one of sits, sts, sis \(CxC ratings\), not 'sts2'"):
        metrics.cxc_correlation("STS2", pairs)
    with pytest.raises(EvaluationError, match=r"sts: similarities must be numbers \(ints or floats\), not <U"):
        metrics.cxc_correlation("sts", lambda a, b: np.array([str(x) for x in a]))
    with pytest.raises(EvaluationError, match="sts: similarities must be numbers"):
        metrics.cxc_correlation("sts", lambda a, b: [object()] * len(a))


# strict JSON: never anything but an EvaluationError naming the source ---------------------------------


@pytest.mark.parametrize("digits", [20, 300, 5000])
def test_long_json_integers_are_refused_naming_the_file(digits):
    text = '{"i2t": {"391895": [1' + "0" * (digits - 1) + "]}}"
    for data in (text, text.encode(), text.encode("utf-16"), b"\xef\xbb\xbf" + text.encode()):
        with pytest.raises(EvaluationError, match=rf"up.json: an integer of {digits} digits"):
            parse_json(data, "up.json", "rankings")
    assert parse_json('{"a": [-9223372036854775808, 1.00000000000000000000001]}', "x", "y") == {"a": [-(2**63), 1.0]}


def test_rankings_json_size_is_bounded_before_parsing(monkeypatch):
    with pytest.raises(EvaluationError, match=r"r.json: 7 JSON objects; a rankings JSON holds at most 5"):
        parse_rankings(b'{"t2i": {"770337": [{}, {}, {}, {}, {}]}}', "r.json")
    import eccv_metric.formats.rankings as rankings

    monkeypatch.setattr(rankings, "MAX_VALUES", 10)
    with pytest.raises(EvaluationError, match=r"r.json: about 13 ids, more than .* \(10\); for larger rankings give"):
        parse_rankings(b'{"t2i": {"770337": [1,2,3,4,5,6,7,8,9,10]}}', "r.json")


# Memory: Kendall's tau-b and resampling ----------------------------------------------------------------


def test_kendall_tau_b_equals_scipy_with_ties_nan_and_infinities():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 8, 50, 400):
        for _ in range(10):
            x = rng.integers(0, 4, n).astype(float)
            y = rng.integers(0, 3, n).astype(float)
            if n > 3:
                x[rng.integers(0, n, 2)] = np.inf
                y[rng.integers(0, n, 1)] = -np.inf
                x[rng.integers(0, n, 1)] = np.nan
            keep = ~(np.isnan(x) | np.isnan(y))
            expected = kendalltau(x[keep], y[keep]).statistic if keep.sum() > 1 else np.nan
            got = kendall_tau_b(x, y)
            assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_kendall_tau_b_of_20000_items_under_1_gb():
    code = (
        "import numpy as np; from eccv_metric.analysis.stats import kendall_tau_b; from scipy.stats import kendalltau;"
        "r = np.random.default_rng(0); x = np.round(r.standard_normal(20000), 1); y = x + r.standard_normal(20000);"
        "x[::97] = np.nan; y[::89] = np.inf; k = ~(np.isnan(x) | np.isnan(y));"
        "print(kendall_tau_b(x, y), kendalltau(x[k], y[k]).statistic)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, preexec_fn=_limited, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours, scipy_tau = map(float, proc.stdout.split())
    assert ours == pytest.approx(scipy_tau, abs=1e-12)


def test_resampling_by_counts_has_the_bootstraps_distribution():
    """Binary values are resampled by multinomial counts: same mean and spread as drawing indices."""
    rng = np.random.default_rng(4)
    values = (rng.random(300) < 0.3).astype(float)
    means = resample_means(values, 100_000, seed=1)
    p = values.mean()
    assert means.mean() == pytest.approx(p, abs=1e-3)
    assert means.std() == pytest.approx(np.sqrt(p * (1 - p) / len(values)), rel=0.02)
    groups = np.arange(300) % 5
    folded = resample_means(values, 1000, seed=1, groups=groups)
    constant = np.repeat([0.0, 1.0, 0.0, 1.0, 1.0], 60)  # constant within each fold: nothing can move
    assert (resample_means(constant, 100, groups=np.repeat(np.arange(5), 60)) == 0.6).all()
    assert folded.std() > 0


def test_a_million_resamples_of_recall_values_and_a_bound_for_the_rest():
    rng = np.random.default_rng(5)
    a = (rng.random(25_000) < 0.40).astype(float)
    b = (rng.random(25_000) < 0.38).astype(float)
    result = paired_test(a, b, n_resamples=1_000_000)
    assert result.n_resamples == 1_000_000 and 0 < result.p_value < 0.01
    ci = bootstrap_ci(a, n_resamples=1_000_000)
    assert ci.low < a.mean() < ci.high
    continuous = rng.random(25_000)
    fits = MAX_DRAWS // 25_000
    with pytest.raises(
        EvaluationError, match=rf"bootstrap: 1,000,000 resamples x 25,000 .* at most {fits:,} resamples"
    ):
        bootstrap_ci(continuous, n_resamples=1_000_000)


# Skewed list lengths: stored flat, not padded ------------------------------------------------------------


def test_skewed_lists_equal_the_brute_force(world, res):
    """One list holds the whole gallery, the others one id each: flat storage gives the brute-force numbers."""
    rng = np.random.default_rng(6)
    pos = brute.positives(world, "coco", "t2i")
    t2i = {}
    for k, c in enumerate(world.caption_ids):
        order = [world.image_ids[j] for j in rng.permutation(len(world.image_ids))]
        t2i[c] = order if k == 0 else [world.caption_image[c]] if k % 2 else order[:1]
    names = ["coco_5k_r1", "coco_1k_r1", "coco_5k_medr", "coco_5k_meanr"]
    got = {}
    for source in (Rankings(t2i=t2i), Rankings(t2i=(np.array(list(t2i)), np.concatenate(list(t2i.values())),
                                                    np.array([len(v) for v in t2i.values()])))):  # fmt: skip
        try:
            got = evaluate(source, names[:2], resources=res).means()
        except EvaluationError as exc:  # lists of one id cannot decide a miss
            assert "too short" in str(exc)
        full = {c: v for c, v in t2i.items() if v[0] in pos[c] or len(v) == len(world.image_ids)}
        part = evaluate(Rankings(t2i=full), names, resources=res, partial=True).means()
        ranks = [brute.first_rank(v, pos[c]) for c, v in full.items()]
        assert part["coco_5k_r1"]["t2i"] == np.mean([r == 1 for r in ranks])
        assert part["coco_5k_meanr"]["t2i"] == np.mean(ranks)
        assert part["coco_5k_medr"]["t2i"] == np.median(ranks)
        folds = {c: [g for g in v if world.fold("image", g) == world.fold("caption", c)] for c, v in full.items()}
        assert part["coco_1k_r1"]["t2i"] == np.mean([brute.recall(v, pos[c], 1) for c, v in folds.items()])
    assert got == {} or set(got) == set(names[:2])


def test_output_json_is_refused_for_a_non_json_results_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("not json")
    from eccv_metric.analysis.results_files import read_results

    with pytest.raises(EvaluationError, match=rf"{path}: not valid JSON"):
        read_results(str(path))
    path.write_text(json.dumps({"coco_5k_r1": {"i2t": 35.0, "t2i": 30.0}}))
    with pytest.raises(EvaluationError, match="coco_5k_r1/i2t = 35.0 is not a fraction"):
        read_results(str(path))
