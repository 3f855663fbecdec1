"""CxC intramodal retrieval (t2t, i2i) and the task engine, against brute force written here (full stable sort).

A small synthetic world (40 images, 200 captions, CxC-format CSVs) is scored
exhaustively; the real test split and the real CxC files are checked on the
protocol's facts and on sampled queries.
"""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import EvaluationError
from eccv_metric import Metrics
from eccv_metric.groundtruth.split import GroundTruth
from tests.unit.brute import numbers

CXC = "../shared/data/cxc"
N_IMG, PER = 40, 5
IMAGE_IDS = [10 + 3 * i for i in range(N_IMG)]
CAPTION_IDS = [1000 + k for k in range(N_IMG * PER)]
THRESHOLD = {"sts": 3.0, "sis": 2.5}


def _caption_key(c: int) -> str:
    return f"COCO_val2014:sentid:{c}"


def _image_key(i: int) -> str:
    return f"COCO_val2014_{i:012d}.jpg"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A GroundTruth of 40 images / 200 captions and CxC CSVs with pairs rated in both orders."""
    rng = np.random.default_rng(5)
    lists = {
        "i2t": {img: CAPTION_IDS[k * PER : (k + 1) * PER] for k, img in enumerate(IMAGE_IDS)},
        "t2i": {c: [IMAGE_IDS[k // PER]] for k, c in enumerate(CAPTION_IDS)},
    }
    gt = GroundTruth.from_id_lists(CAPTION_IDS, {"coco": lists, "cxc": lists, "eccv": lists})
    folder = tmp_path_factory.mktemp("cxc")
    rows = {}
    for kind, ids, key, n in (
        ("sts", CAPTION_IDS, _caption_key, 500),
        ("sis", IMAGE_IDS, _image_key, 150),
        ("sits", None, None, 300),
    ):
        if kind == "sits":
            pairs = [(int(rng.choice(CAPTION_IDS)), int(rng.choice(IMAGE_IDS))) for _ in range(n)]
        else:
            pairs = {tuple(int(x) for x in rng.choice(ids, 2, replace=False)) for _ in range(n)}
            pairs = sorted(pairs) + [(b, a) for a, b in sorted(pairs)[:40]]  # 40 pairs rated in both orders
        scores = rng.choice([0.0, 1.5, 2.4, 2.5, 3.0, 3.6, 5.0], size=len(pairs))
        rows[kind] = [(a, b, float(s)) for (a, b), s in zip(pairs, scores, strict=True)]
        keys = (_caption_key, _image_key) if kind == "sits" else (key, key)
        with open(folder / f"{kind}_test.csv", "w", newline="") as fout:
            writer = csv.writer(fout)
            writer.writerow(["item1", "item2", "agg_score", "sampling_method"])
            writer.writerows([keys[0](a), keys[1](b), s, "synthetic"] for a, b, s in rows[kind])
    return gt, folder, rows


def brute_positives(rows, kind, directed=False, caption_image=None):
    """CxC pairs at or above the threshold; for t2t (``caption_image`` given) plus each caption's co-captions."""
    pos = defaultdict(set)
    for a, b, s in rows:
        if a != b and s >= THRESHOLD[kind]:
            pos[a].add(b)
            if not directed:
                pos[b].add(a)
    if caption_image is not None:
        by_image = defaultdict(set)  # image -> its captions, so each caption's co-captions are one lookup
        for c, i in caption_image.items():
            by_image[i].add(c)
        for c, i in caption_image.items():
            pos[c] |= by_image[i] - {c}
    return pos


def co_captions(caption_ids, per=PER):
    """Caption -> image key of a split whose captions come ``per`` to an image, in order."""
    return {c: k // per for k, c in enumerate(caption_ids)}


def brute_ranks(emb, ids, positives):
    """{query id: 1-based rank of its best positive} with a full stable argsort over every other row."""
    out = {}
    for qi, q in enumerate(ids):
        if q not in positives:
            continue
        gallery = np.array([j for j in range(len(ids)) if j != qi])
        scores = np.array([float(np.dot(emb[qi], emb[j])) for j in gallery])
        ranked = [ids[gallery[o]] for o in np.argsort(-scores, kind="stable")]
        out[q] = 1 + min(ranked.index(p) for p in positives[q])
    return out


def engine_ranks(metrics, task, **kwargs):
    per_query = metrics.per_query_from_embeddings(target_metrics=[f"{task}_meanr"], **kwargs)
    scores = per_query[f"{task}_meanr"][task[-3:]]
    return dict(zip(scores.query_ids.tolist(), scores.values.tolist(), strict=True))


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("kind", ["sts", "sis"])
@pytest.mark.parametrize("values", ["integer", "float"])
def test_intramodal_ranks_equal_brute_force(world, kind, values, directed):
    gt, folder, rows = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder, cxc_directed=directed)
    rng = np.random.default_rng(hash((kind, values, directed)) % 2**32)
    ids = list(CAPTION_IDS if kind == "sts" else IMAGE_IDS)
    extra = [90_000 + k for k in range(7)]  # distractors: neither test captions nor test images
    given = [ids[k] for k in rng.permutation(len(ids))] + extra
    rng.shuffle(given)
    if values == "integer":  # exact dot products, heavy ties
        emb = rng.integers(-1, 2, size=(len(given), 3)).astype(np.float32)
    else:
        emb = rng.standard_normal((len(given), 16))
    positives = brute_positives(rows[kind], kind, directed, co_captions(CAPTION_IDS) if kind == "sts" else None)
    expected = brute_ranks(emb, given, positives)
    side = "caption" if kind == "sts" else "image"
    got = engine_ranks(
        metrics,
        f"cxc_{'t2t' if kind == 'sts' else 'i2i'}",
        **{
            f"{side}_embeddings": emb,
            f"{side}_ids": given,
        },
    )
    assert got == expected
    task = "cxc_t2t" if kind == "sts" else "cxc_i2i"
    ks = (1, 2, 5, 10, 1000)
    result = metrics.compute_all_metrics_from_embeddings(
        **{f"{side}_embeddings": emb, f"{side}_ids": given},
        target_metrics=[f"{task}_recalls", f"{task}_medr", f"{task}_meanr"],
        Ks=ks,
    )
    ranks = np.array([expected[q] for q in sorted(expected)])
    direction = task[-3:]
    for k in ks:
        assert result[f"{task}_r{k}"] == {direction: float(np.mean(ranks <= min(k, len(given) - 1)))}
    assert result[f"{task}_medr"] == {direction: float(np.median(ranks))}
    assert result[f"{task}_meanr"] == {direction: float(np.mean(ranks))}


def test_embeddings_and_scores_agree_exactly(world):
    gt, folder, _ = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    rng = np.random.default_rng(2)
    images = rng.integers(-2, 3, size=(N_IMG, 4)).astype(np.float32)
    captions = rng.integers(-2, 3, size=(N_IMG * PER, 4)).astype(np.float32)
    targets = ["cxc_t2t_recalls", "cxc_i2i_recalls", "cxc_t2t_medr", "cxc_i2i_meanr", "coco_5k_r1"]
    targets += ["cxc_sts_spearman", "cxc_sis_spearman", "cxc_sits_spearman"]
    from_embeddings = metrics.compute_all_metrics_from_embeddings(images, captions, target_metrics=targets)
    from_scores = metrics.compute_all_metrics_from_scores(
        images @ captions.T,
        target_metrics=targets,
        caption_scores=captions @ captions.T,
        image_scores=images @ images.T,
    )
    assert from_embeddings == from_scores
    expected = {f"cxc_{t}_r{k}" for t in ("t2t", "i2i") for k in (1, 5, 10)} | {"cxc_t2t_medr", "cxc_i2i_meanr"}
    expected |= {"coco_5k_r1"} | {f"cxc_{k}_spearman{s}" for k in ("sts", "sis", "sits") for s in ("", "_std")}
    assert set(from_embeddings) == expected


def test_bad_inputs_name_what_is_missing(world):
    gt, folder, _ = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    captions = np.ones((N_IMG * PER, 4), np.float32)
    with pytest.raises(EvaluationError, match=r"cxc_i2i_r1 \(i2i\): needs image_embeddings="):
        metrics.compute_all_metrics_from_embeddings(caption_embeddings=captions, target_metrics=["cxc_i2i_r1"])
    with pytest.raises(EvaluationError, match=r"cxc_r1 \(i2t\): needs image_embeddings="):
        metrics.compute_all_metrics_from_embeddings(
            caption_embeddings=captions, target_metrics=["cxc_t2t_r1", "cxc_r1"]
        )
    with pytest.raises(EvaluationError, match="no t2t ranked lists were given"):
        metrics.compute_all_metrics({c: [] for c in CAPTION_IDS}, target_metrics=["cxc_t2t_r1"])
    with pytest.raises(EvaluationError, match="missing"):
        metrics.compute_all_metrics_from_embeddings(
            caption_embeddings=captions[:-1], caption_ids=CAPTION_IDS[:-1], target_metrics=["cxc_t2t_r1"]
        )
    with pytest.raises(EvaluationError, match="test-split image ids"):  # an image id among caption ids
        metrics.compute_all_metrics_from_embeddings(
            caption_embeddings=np.ones((N_IMG * PER + 1, 4)),
            caption_ids=CAPTION_IDS + [IMAGE_IDS[0]],
            target_metrics=["cxc_t2t_r1"],
        )
    # different dimensions: t2t and i2i still work, SITS cannot
    images = np.arange(N_IMG * 3, dtype=np.float32).reshape(N_IMG, 3) % 5
    ok = metrics.compute_all_metrics_from_embeddings(images, captions + np.arange(4), target_metrics=["cxc_i2i_r1"])
    assert set(ok) == {"cxc_i2i_r1"}
    with pytest.raises(EvaluationError, match="image embeddings have 3 dimensions but caption embeddings 4"):
        metrics.compute_all_metrics_from_embeddings(images, captions, target_metrics=["cxc_sits_spearman"])
    nan = captions.copy()
    nan[3, 1] = np.nan
    with pytest.raises(EvaluationError, match="NaN or inf"):
        metrics.compute_all_metrics_from_embeddings(caption_embeddings=nan, target_metrics=["cxc_t2t_r1"])
    with pytest.raises(EvaluationError, match="constant"):  # every similarity equal: no rank correlation
        metrics.compute_all_metrics_from_embeddings(caption_embeddings=captions, target_metrics=["cxc_sts_spearman"])
    with pytest.raises(EvaluationError, match="unknown target metric"):
        metrics.compute_all_metrics_from_embeddings(caption_embeddings=captions, target_metrics=["cxc_t2i_r1"])


def test_duplicate_captions_tie_and_the_first_given_wins(world):
    """Float32 embeddings with duplicated captions: a float32 BLAS product alone rounds the copies apart, which
    would make the tie rule noise; the engine scores them identically, as the pair-by-pair brute force does."""
    gt, folder, rows = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    rng = np.random.default_rng(8)
    emb = rng.standard_normal((len(CAPTION_IDS), 64)).astype(np.float32)
    sources = rng.choice(len(CAPTION_IDS), 20, replace=False)
    copies = rng.choice(np.setdiff1d(np.arange(len(CAPTION_IDS)), sources), 80, replace=False)
    emb[copies] = emb[rng.choice(sources, 80)]
    expected = brute_ranks(
        emb, CAPTION_IDS, brute_positives(rows["sts"], "sts", caption_image=co_captions(CAPTION_IDS))
    )
    assert engine_ranks(metrics, "cxc_t2t", caption_embeddings=emb) == expected


def test_given_matrix_is_never_written_and_its_own_entries_are_ignored(world):
    gt, folder, _ = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    rng = np.random.default_rng(6)
    captions = rng.integers(-2, 3, size=(N_IMG * PER, 4)).astype(np.float32)
    scores = captions @ captions.T
    targets = ["cxc_t2t_recalls", "cxc_t2t_meanr"]
    expected = metrics.compute_all_metrics_from_scores(caption_scores=scores, target_metrics=targets)
    for diagonal in (0.0, np.nan, np.inf, -np.inf):  # a query's own score is never looked at
        given = scores.copy()
        np.fill_diagonal(given, diagonal)
        before = given.copy()
        assert metrics.compute_all_metrics_from_scores(caption_scores=given, target_metrics=targets) == expected
        assert np.array_equal(given, before, equal_nan=True)  # rows of the caller's matrix are views: untouched
        given.setflags(write=False)
        assert metrics.compute_all_metrics_from_scores(caption_scores=given, target_metrics=targets) == expected
        fortran = np.asfortranarray(before)
        assert metrics.compute_all_metrics_from_scores(caption_scores=fortran, target_metrics=targets) == expected
        assert np.array_equal(fortran, before, equal_nan=True)


def test_bad_rows_are_counted_over_every_block(world, monkeypatch):
    gt, folder, rows = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    monkeypatch.setattr("eccv_metric.kernels.scorers.CHUNK_ELEMENTS", 10 * N_IMG * PER)  # blocks of 10 queries
    monkeypatch.setattr("eccv_metric.kernels.scorers.TOPK_ELEMENTS", 10 * N_IMG * PER)
    scores = np.ones((N_IMG * PER, N_IMG * PER), np.float32)
    queries = sorted(brute_positives(rows["sts"], "sts", caption_image=co_captions(CAPTION_IDS)))
    bad = [CAPTION_IDS.index(q) for q in queries[::4]]
    scores[bad, (np.array(bad) + 1) % len(scores)] = np.nan
    first = f"row {bad[0]}, column {(bad[0] + 1) % len(scores)}"  # a given matrix: refused whole, cells counted
    with pytest.raises(EvaluationError, match=rf"caption_scores= holds NaN at {first} \({len(bad)} non-finite cells"):
        metrics.compute_all_metrics_from_scores(caption_scores=scores, target_metrics=["cxc_t2t_r1"])
    # finite embeddings whose products overflow float32 (between two rows of `bad` only): the rows are found
    # as they are ranked, block by block
    captions = np.tile(np.array([[0.0, 1.0]], np.float32), (len(scores), 1))
    captions[bad, 0] = 1e20
    for target in ("cxc_t2t_r1", "cxc_t2t_medr"):  # the top-k and the exact-rank passes
        with pytest.raises(EvaluationError, match=rf"the scores of {len(bad)} query caption\(s\) overflow"):
            metrics.compute_all_metrics_from_embeddings(caption_embeddings=captions, target_metrics=[target])


# ---------------------------------------------------------------------------
# the real test split and the real CxC files


def _csv_rows(kind):
    with open(f"{CXC}/{kind}_test.csv", newline="") as fin:
        reader = csv.reader(fin)
        next(reader)
        out = []
        for a, b, s, _ in reader:
            parse = (lambda k: int(k.rsplit(":", 1)[1])) if kind == "sts" else (lambda k: int(k[-16:-4]))
            out.append((parse(a), parse(b), float(s)))
    return out


def _caption_image(gt):
    return dict(zip(gt.caption_ids.tolist(), gt.caption_image.tolist(), strict=True))


@pytest.mark.parametrize("kind", ["sts", "sis"])
def test_real_cxc_positives_equal_the_csv_read_by_hand(gt, kind):
    rows = _csv_rows(kind)
    bench = REGISTRY.get("cxc_t2t" if kind == "sts" else "cxc_i2i")
    direction = bench.directions[0]
    for directed in (False, True):
        expected = brute_positives(rows, kind, directed, _caption_image(gt) if kind == "sts" else None)
        resources = Metrics(ground_truth=gt, cxc_source=CXC, cxc_directed=directed).resources
        index = gt.index("caption" if kind == "sts" else "image")
        got = resources.positives(bench, bench.task(direction).relation, direction).to_id_lists(index.ids, index.ids)
        assert got == {q: sorted(v) for q, v in expected.items() if v}
    if kind == "sts":  # every caption is a query: its 4 co-captions at least
        assert len(got) == 25_000 and min(map(len, got.values())) == 4
    if kind == "sis":  # the protocol note: 2,863 pairs rated in both orders, 512 on both sides of 2.5
        score = {(a, b): s for a, b, s in rows}
        both = [(a, b) for a, b in score if (b, a) in score and a < b]
        split = [p for p in both if (score[p] >= 2.5) != (score[p[::-1]] >= 2.5)]
        assert (len(both), len(split)) == (2863, 512)


def test_real_t2t_sampled_queries_equal_brute_force(metrics, gt):
    """All 25,000 captions as the gallery (blockwise), 60 sampled queries checked by a full stable sort."""
    m = Metrics(ground_truth=gt, cxc_source=CXC)
    rng = np.random.default_rng(4)
    emb = rng.integers(-1, 2, size=(len(gt.caption_ids), 6)).astype(np.float32)  # heavy ties
    got = engine_ranks(m, "cxc_t2t", caption_embeddings=emb)
    positives = brute_positives(_csv_rows("sts"), "sts", caption_image=_caption_image(gt))
    assert set(got) == set(positives)
    ids = gt.caption_ids.tolist()
    row = {c: k for k, c in enumerate(ids)}
    for q in rng.choice(sorted(positives), 60, replace=False).tolist():
        scores = emb @ emb[row[q]]
        order = [j for j in np.argsort(-scores, kind="stable") if j != row[q]]
        ranked = [ids[j] for j in order]
        assert got[q] == 1 + min(ranked.index(p) for p in positives[q]), q


def test_cli_and_evaluate_module_score_intramodal_tasks(gt, tmp_path, capsys):
    """The same numbers from the library, the CLI (.npy files) and evaluate.load (kwargs)."""

    import evaluate

    from eccv_metric import EVALUATE_MODULE_DIR
    from eccv_metric.cli.main import main
    from eccv_metric.hub.evaluate_glue import nest

    rng = np.random.default_rng(8)
    images = rng.integers(-2, 3, size=(len(gt.image_ids), 6)).astype(np.float32)
    captions = images[gt.caption_image] + rng.integers(-2, 3, size=(len(gt.caption_ids), 6)).astype(np.float32)
    targets = ["cxc_t2t_r1", "cxc_i2i_medr", "cxc_sis_spearman", "cxc_sits_spearman"]
    expected = Metrics(ground_truth=gt, cxc_source=CXC).compute_all_metrics_from_embeddings(
        images, captions, target_metrics=targets, n_resamples=50
    )
    assert 0 < expected["cxc_t2t_r1"]["t2t"] < 1 and expected["cxc_sits_spearman"]["t2i"] > 0.05
    np.save(tmp_path / "i.npy", images)
    np.save(tmp_path / "c.npy", captions)
    args = ["evaluate", "--image-embeddings", str(tmp_path / "i.npy"), "--caption-embeddings", str(tmp_path / "c.npy")]
    args += ["--source-dir", CXC, "--n-resamples", "50", "-o", str(tmp_path / "out.json"), "--metrics", *targets]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "t2t" in table and "i2i" in table and "cxc_sis_spearman_std" in table
    assert numbers(tmp_path / "out.json") == expected
    module = evaluate.load(str(EVALUATE_MODULE_DIR))
    flat = module.compute(
        image_embeddings=images, caption_embeddings=captions, cxc_source=CXC, n_resamples=50, target_metrics=targets
    )
    assert nest(flat) == expected


@pytest.mark.parametrize("values", ["integer", "float"])
def test_correlations_from_embeddings_with_permuted_and_extra_ids(world, values):
    """The embeddings path maps ids to rows right: the same bootstrap as a pair scorer written here."""
    gt, folder, _ = world
    metrics = Metrics(ground_truth=gt, cxc_source=folder)
    rng = np.random.default_rng(11)
    image_ids = [IMAGE_IDS[k] for k in rng.permutation(N_IMG)] + [90_000, 90_001]
    caption_ids = [CAPTION_IDS[k] for k in rng.permutation(N_IMG * PER)] + [95_000, 95_001, 95_002]
    rng.shuffle(image_ids), rng.shuffle(caption_ids)
    if values == "integer":  # exact dot products in any order: heavy ties in the similarities
        images = rng.integers(-2, 3, size=(len(image_ids), 4)).astype(np.float32)
        captions = rng.integers(-2, 3, size=(len(caption_ids), 4)).astype(np.float32)
    else:
        images = rng.standard_normal((len(image_ids), 16))
        captions = rng.standard_normal((len(caption_ids), 16))
    row = {("image", i): k for k, i in enumerate(image_ids)} | {("caption", c): k for k, c in enumerate(caption_ids)}
    table = {"image": images, "caption": captions}

    def scorer(first: str, second: str):
        def pair_scores(ids_1, ids_2):
            return np.array(
                [
                    float(np.dot(table[first][row[first, a]].astype(np.float64), table[second][row[second, b]]))
                    for a, b in zip(ids_1.tolist(), ids_2.tolist(), strict=True)
                ]
            )

        return pair_scores

    got = metrics.compute_all_metrics_from_embeddings(
        images,
        captions,
        image_ids,
        caption_ids,
        target_metrics=["cxc_sts_spearman", "cxc_sis_spearman", "cxc_sits_spearman"],
        n_resamples=300,
        seed=4,
    )
    for kind, first, second, direction in (
        ("sts", "caption", "caption", "t2t"),
        ("sis", "image", "image", "i2i"),
        ("sits", "caption", "image", "t2i"),
    ):
        want = metrics.cxc_correlation(kind, scorer(first, second), n_resamples=300, seed=4)
        tol = 0 if values == "integer" else 1e-12
        assert got[f"cxc_{kind}_spearman"][direction] == pytest.approx(want.mean, abs=tol)
        assert got[f"cxc_{kind}_spearman_std"][direction] == pytest.approx(want.std, abs=tol)
