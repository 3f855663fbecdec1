"""A pair scorer through the model path (eccv_metric.models.pairs): known answers on the synthetic world.

Checks: an exhaustive run gives the numbers of a score matrix of every pair computed here from the pixels and
texts; a rerank gives LAVIS's numbers (its loop re-implemented in tests/unit/pair_answers.py) on every metric that
reads no deeper than k, both directions; blocks are cached and a rerun scores no pair; bad input is one line.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from tests.unit.model_world import caption_text
from tests.unit.model_world import run_model
from tests.unit.pair_answers import DotPairs
from tests.unit.pair_answers import DotPairsWithFirst
from tests.unit.pair_answers import FirstOnly
from tests.unit.pair_answers import TorchPairs
from tests.unit.pair_answers import brute_scores
from tests.unit.pair_answers import lavis

COCO = ["coco_5k", "coco_1k", "eccv", "cxc", "pm", "cxc_sits"]


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    kwargs.setdefault("benchmarks", COCO)
    return run_model(model, data, world, tmp_path, **kwargs)


def test_exhaustive_equals_every_pair(world, data, tmp_path):
    """Every pair scored: the numbers of the brute-force score matrix, every metric, both directions."""
    model = DotPairs()
    out = _run(model, data, world, tmp_path, cache=False)
    assert model.pairs == len(world.image_ids) * len(world.caption_ids)
    expected = evaluate(ScoreMatrix(brute_scores(world)), benchmarks=COCO, resources=world.resources(), n_resamples=20)
    assert out.results.means() == expected.means()
    assert out.provenance["protocol"]["name"] == "exhaustive"
    assert out.provenance["protocol"]["score_rule"] == "itm"


def test_blocks_are_cached(world, data, tmp_path):
    """A scorer with an identity keeps its blocks: a rerun scores no pair and gives the same numbers; the
    provenance counts the blocks computed and read."""
    from eccv_metric.models.families.pair_scorer import ObjectPairScorer

    model = DotPairs()
    scorer = ObjectPairScorer(model, identity={"name": "dot-pairs", "version": 1})
    first = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    assert model.pairs == 2000 and first.provenance["pairs"]["blocks_computed"] == 1
    again = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    assert model.pairs == 2000
    assert again.results.means() == first.results.means()
    assert again.provenance["pairs"]["blocks_cached"] == 1 and again.provenance["pairs"]["blocks_computed"] == 0


def _blocks(folder):  # noqa: ANN001, ANN202
    """{block file name: its scores} of every pair entry under a cache folder."""
    return {p.name: np.load(p)["scores"] for p in sorted((folder / "pairs").glob("*/block-*.npz"))}


def test_shards_then_a_scoring_run_equal_one_process(world, data, tmp_path, monkeypatch):
    """shard 1/2 and 2/2 over one cache folder, then a run without a shard: the numbers and the block bits of one
    process; the jobs score nothing and say so; the last run computes no block (a torch scorer with its own first
    stage, exhaustive under itm+itc: the first stage's batches are dealt too)."""
    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)
    kwargs = {"benchmarks": ["coco_5k", "eccv"], "protocol": "exhaustive", "pair_batch_size": 64}
    one = _run(TorchPairs(), data, world, tmp_path, cache_dir=tmp_path / "one", **kwargs)
    assert one.provenance["protocol"]["score_rule"] == "itm+itc"
    shared = tmp_path / "shared"
    for k in (1, 2):
        job = _run(TorchPairs(), data, world, tmp_path, cache_dir=shared, shard=f"{k}/2", **kwargs)
        assert not job.scored and job.results.means() == {}
        assert job.provenance["parallel"] == {"how": "shard", "shard": f"{k}/2"}
        assert job.provenance["pairs"]["blocks_computed"] == (4 if k == 1 else 3)
    last = _run(TorchPairs(), data, world, tmp_path, cache_dir=shared, **kwargs)
    assert last.provenance["pairs"]["blocks_computed"] == 0 and last.provenance["pairs"]["blocks_cached"] == 7
    assert last.results.means() == one.results.means()
    mine, theirs = _blocks(tmp_path / "one"), _blocks(shared)
    assert len(mine) == 7 and mine.keys() == theirs.keys()
    assert all(np.array_equal(mine[name], theirs[name]) for name in mine)


class Wrong(DotPairs):
    """A pair scorer returning one score too few, NaN, or one buffer it overwrites at every call."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.buffer = np.zeros(4096)

    def score_pairs(self, images, texts):  # noqa: ANN001, ANN201
        scores = super().score_pairs(images, texts)
        if self.how == "short":
            return scores[:-1]
        if self.how == "nan":
            scores[len(scores) // 2] = np.nan
            return scores
        self.buffer[: len(scores)] = scores  # "reused": every call overwrites the array handed out before
        return self.buffer[: len(scores)]


class TextsOnly:
    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return np.ones((len(texts), 3), np.float32)


class Widths(TextsOnly):  # images and captions embedded in spaces of different widths
    def encode_images(self, images):  # noqa: ANN001, ANN201
        return np.ones((len(images), 4), np.float32)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": Wrong("short")}, r"returned shape \(\d+,\) for \d+ pairs; it must return one score per pair"),
        ({"model": Wrong("nan")}, r"returned NaN for 1 of \d+ pairs; every pair needs a finite score$"),
        ({"model": Wrong("reused"), "pair_batch_size": 16}, r"returned a buffer it reuses"),
        ({"rerank_k": 0}, r"^rerank_k= 0 reranks nothing"),
        ({"rerank_k": -3}, r"^rerank_k= must be a positive integer"),
        ({"shard": "3/2"}, r"^shard= 3/2: job 3 of 2 does not exist"),
        ({"shard": "two"}, r"^shard= must be i/N"),
        ({"protocol": "rerank"}, r"has no first stage to rerank: give first_stage="),
        ({"first_stage": TextsOnly()}, r"^first_stage= python:.*TextsOnly encodes texts only: a rerank's first stage"),
        ({"first_stage": DotPairs()}, r"^first_stage= python:.*DotPairs scores pairs: a rerank's first stage embeds"),
        ({"first_stage": Widths()}, r"^first_stage= python:.*Widths: image embeddings have 4 dimensions but caption "),
        ({"model": DotPairs(), "score_rule": "itm+itc", "protocol": "exhaustive"}, r"^score_rule= itm\+itc adds"),
        ({"save_embeddings": "x"}, r"^save_embeddings= keeps a dual encoder's embeddings"),
        ({"save_embeddings": "x", "shard": "1/2"}, r"^shard= 1/2 computes this job's share .* drop save_embeddings="),
        ({"first_stage": " "}, r"^first_stage= is empty: give a dual encoder spec"),
        (
            {"model": DotPairsWithFirst(), "rerank_k": 50},
            r"^rerank_k= 50 is above the gallery of coco_5k t2i \(20 items\)",
        ),
        ({"model": DotPairs(), "shard": "1/2"}, r"several processes \(torchrun or shard=\) meet in the cache"),
    ],
)
def test_bad_pair_input_is_one_line(kwargs, match, world, data, tmp_path):
    model = kwargs.pop("model", DotPairs())
    if "save_embeddings" in kwargs:
        kwargs["save_embeddings"] = tmp_path / "emb"
    with pytest.raises(EvaluationError, match=match) as err:
        _run(model, data, world, tmp_path, benchmarks=["coco_5k"], cache=False, **kwargs)
    assert "\n" not in str(err.value)


def test_above_max_pairs_stops_after_measuring(world, data, tmp_path, monkeypatch):
    """Above max_pairs= a run scores its first blocks (kept in the cache), then stops with the measured rate and the
    time the whole would take; a rerun with the budget raised goes on from the blocks kept."""
    from eccv_metric.models.families.pair_scorer import ObjectPairScorer

    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)
    model = DotPairs()
    scorer = ObjectPairScorer(model, identity={"name": "dot-pairs"})
    with pytest.raises(EvaluationError, match=r"2,000 pairs to score is above max_pairs= 1,000: at the [\d,]+ pairs/s "
                       r"measured here it would take about \d+ s; give max_pairs= 2,000"):  # fmt: skip
        _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"], max_pairs=1000)
    assert model.pairs == 600  # two blocks measured
    out = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"], max_pairs=2000)
    assert out.provenance["pairs"]["blocks_cached"] == 2 and model.pairs == 2000


def test_a_block_that_does_not_match_is_scored_again(world, data, tmp_path, monkeypatch):
    """Block files are used only for the pairs and bytes they name: one copied over another, one whose bytes
    changed and one cut short are each warned about once and scored again; the numbers stay those of a clean run."""
    from eccv_metric.models.cache.entries import CacheWarning
    from eccv_metric.models.families.pair_scorer import ObjectPairScorer

    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)
    scorer = ObjectPairScorer(DotPairs(), identity={"name": "dot-pairs"})
    clean = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    files = sorted((tmp_path / "cache" / "pairs").glob("*/block-*.npz"))
    files[1].write_bytes(files[0].read_bytes())  # another block's file: its pairs differ
    stored = dict(np.load(files[2]))
    stored["scores"] = stored["scores"] + 1  # its bytes changed, its checksum not
    np.savez(files[2], **stored)
    files[3].write_bytes(files[3].read_bytes()[:100])  # cut short
    with pytest.warns(CacheWarning) as caught:
        again = _run(scorer, data, world, tmp_path, benchmarks=["coco_5k"])
    found = sorted(str(w.message) for w in caught if w.category is CacheWarning)
    assert len(found) == 3
    assert any("the pairs this block scores" in m for m in found) and any("its checksum" in m for m in found)
    assert any("unreadable" in m for m in found)
    assert again.results.means() == clean.results.means()
    assert again.provenance["pairs"]["blocks_computed"] == 3


def _first_stage(world):  # noqa: ANN001, ANN202
    """The first stage's similarity of every (image, caption) pair as the engine computes it (its cosine of the
    model's embeddings, one product), read through the public pair_scores."""
    from eccv_metric import Embeddings
    from tests.unit.pair_answers import first_image
    from tests.unit.pair_answers import first_text
    from tests.unit.pair_answers import pil

    images = np.stack([first_image(pil(i)) for i in world.image_ids])
    texts = np.stack([first_text(caption_text(c)) for c in world.caption_ids])
    emb = Embeddings(images, texts, world.image_ids, world.caption_ids, normalize=True)
    collection = world.resources().collection("coco_5k")
    dense_i, dense_c = np.meshgrid(np.arange(len(images)), np.arange(len(texts)), indexing="ij")
    sims = emb.pair_scores(collection, ("image", "caption"), dense_i.ravel(), dense_c.ravel(), "first stage")
    return sims.reshape(len(images), len(texts)).astype(np.float32)


LAVIS_SAME = {  # metric -> directions LAVIS's loop decides at k = 20 in this world (what it reads is within the k)
    "coco_5k_r1": ("i2t", "t2i"), "coco_5k_r5": ("i2t", "t2i"), "coco_5k_r10": ("i2t", "t2i"),
    "eccv_map_at_r": ("i2t", "t2i"), "eccv_rprecision": ("i2t", "t2i"), "eccv_r1": ("i2t", "t2i"),
    "cxc_r1": ("i2t", "t2i"), "cxc_r5": ("i2t", "t2i"), "cxc_r10": ("i2t", "t2i"), "pmrp": ("t2i",),
}  # fmt: skip


@pytest.mark.parametrize(("rule", "given"), [("itm+itc", False), ("itm", False), ("itm", True)])
def test_rerank_gives_lavis_numbers(world, data, tmp_path, rule, given):
    """A k=20 rerank (the t2i gallery whole, 20 of i2t's 100 captions) against LAVIS's compute_sim_matrix
    re-implemented on the same first stage, k and score rule: every metric reading no deeper than k is equal, both
    directions; t2i, every item reranked, is equal on every metric; each metric reading deeper is warned about. The
    first stage the scorer's own, or another model's (first_stage=)."""
    from eccv_metric.models.pairs.options import RerankWarning

    model = DotPairs() if given else DotPairsWithFirst()
    benches = ["coco_5k", "eccv", "cxc", "pm"]
    extra = {"first_stage": FirstOnly()} if given else {}
    with pytest.warns(RerankWarning) as caught:
        out = _run(model, data, world, tmp_path, benchmarks=benches, rerank_k=20, score_rule=rule, cache=False, **extra)
    deep = {str(w.message).split(" reads")[0].split(" items ")[-1] for w in caught if w.category is RerankWarning}
    assert "pmrp (i2t)" in deep and not any("t2i" in d for d in deep)
    from eccv_metric.models.pairs.options import CANDIDATES
    from eccv_metric.models.pairs.options import RANKING

    assert out.provenance["protocol"] | {"first_stage": None} == {
        "name": "rerank", "rerank_k": 20, "score_rule": rule, "coco_1k": "restrict", "first_stage": None,
        "max_pairs": 20_000_000, "code": None, "reference": None, "candidates": CANDIDATES, "ranking": RANKING,
    }  # fmt: skip
    assert model.pairs == len(np.unique(_candidate_pairs(world, 20)))
    i2t, t2i = lavis(brute_scores(world), _first_stage(world), 20, 20, rule)
    res = world.resources()
    lav_i2t = evaluate(ScoreMatrix(i2t), benchmarks=benches, directions="i2t", resources=res).means()
    lav_t2i = evaluate(ScoreMatrix(t2i.T), benchmarks=benches, directions="t2i", resources=res).means()
    ours = out.results.means()
    for metric, directions in LAVIS_SAME.items():
        for d in directions:
            assert ours[metric][d] == (lav_i2t if d == "i2t" else lav_t2i)[metric][d], (metric, d)
    assert {m: v["t2i"] for m, v in ours.items()} == {m: v["t2i"] for m, v in lav_t2i.items()}


def _candidate_pairs(world, k):  # noqa: ANN001, ANN202
    """The (image, caption) pairs a k rerank scores, as keys image * n_captions + caption."""
    first = _first_stage(world)
    n_c = first.shape[1]
    i2t = np.argsort(-first, axis=1, kind="stable")[:, :k]
    t2i = np.argsort(-first.T, axis=1, kind="stable")[:, :k]
    keys = [i * n_c + i2t[i] for i in range(first.shape[0])] + [t2i[c] * n_c + c for c in range(n_c)]
    return np.concatenate(keys)


@pytest.mark.parametrize("family", ["blip", "vilt"])
def test_tiny_transformers_heads_exhaustive_equal_every_pair(family, world, data, tmp_path):
    """A tiny random BLIP / ViLT (built from configs; the adapters, BridgeTower's and FLAVA's too, are checked against
    their models' own forward in test_pair_heads): the raw scores of an exhaustive run (its blocks
    in the cache) are the scorer's own scores of every pair, image by image (2e-5 of the largest), and the numbers
    are the engine's on that matrix."""
    import tests.unit.pair_world as heads
    from eccv_metric.models.families.spec import load_model
    from tests.unit.pair_answers import pil

    folder = getattr(heads, f"tiny_{family}")(tmp_path / family)
    benches = ["coco_5k", "eccv"]
    out = _run(f"hf:{folder}", data, world, tmp_path, benchmarks=benches, protocol="exhaustive", score_rule="itm")
    ours = next(iter(_blocks(tmp_path / "cache").values())).reshape(len(world.image_ids), len(world.caption_ids))
    scorer = load_model(f"hf:{folder}", "cpu")
    import torch

    prepared = [scorer.prepare_image(pil(i)) for i in world.image_ids]
    states = scorer.image_states(torch.stack(prepared) if hasattr(prepared[0], "shape") else prepared)
    texts = [caption_text(c) for c in world.caption_ids]
    brute = np.stack([
        np.asarray(scorer.score_pairs(states, np.full(len(texts), i), texts), np.float32)
        for i in range(len(world.image_ids))
    ])  # fmt: skip
    assert np.abs(ours - brute).max() <= 2e-5 * np.abs(brute).max()
    expected = evaluate(ScoreMatrix(brute), benchmarks=benches, resources=world.resources(), n_resamples=20)
    assert out.results.means() == expected.means()
    assert out.provenance["pairs"]["pairs"] == brute.size


def test_exhaustive_itm_plus_itc_adds_the_first_stage(world, data, tmp_path):
    """Exhaustive under itm+itc (the default of a scorer with its own first stage): every pair's score plus the
    first stage's similarity, the numbers of that brute-force matrix; CxC SITS alone is scored too."""
    benches = ["coco_5k", "eccv", "cxc_sits"]
    out = _run(DotPairsWithFirst(), data, world, tmp_path, benchmarks=benches, protocol="exhaustive", cache=False)
    assert out.provenance["protocol"]["score_rule"] == "itm+itc"
    matrix = brute_scores(world) + _first_stage(world)
    expected = evaluate(ScoreMatrix(matrix), benchmarks=benches, resources=world.resources(), n_resamples=20)
    assert out.results.means() == expected.means()
    alone = _run(
        DotPairsWithFirst(), data, world, tmp_path, benchmarks=["cxc_sits"], protocol="exhaustive", cache=False
    )
    assert alone.results.means() == {k: v for k, v in expected.means().items() if k.startswith("cxc_sits")}


def test_candidates_are_the_first_stage_top_k(world):
    """Each query's candidates: its k first gallery items under a stable sort of the first stage's scores (ties in
    the gallery's order), with those scores; within COCO 1K's folds, the same among the fold's items."""
    from eccv_metric import Embeddings
    from eccv_metric.benchmarks.definitions import REGISTRY
    from eccv_metric.models.pairs.candidates import candidates
    from tests.unit.pair_answers import first_image
    from tests.unit.pair_answers import first_text
    from tests.unit.pair_answers import pil

    res = world.resources()
    images = np.stack([first_image(pil(i)) for i in world.image_ids])
    texts = np.stack([first_text(caption_text(c)) for c in world.caption_ids])
    emb = Embeddings(images, texts, world.image_ids, world.caption_ids, normalize=True)
    first = _first_stage(world)
    for bench in ("coco_5k", "coco_1k"):
        for direction, scores in (("i2t", first), ("t2i", first.T)):
            view = res.view(REGISTRY.get(bench), REGISTRY.get(bench).task(direction))
            queries = np.arange(len(view.queries))
            got = candidates(emb, view, queries, 3, view.restriction)
            for q in queries:
                pool = np.arange(scores.shape[1])
                if view.restricted:
                    qgroup = 0 if view.query_group is None else view.query_group[q]
                    pool = np.flatnonzero(view.gallery_group == qgroup)
                expected = pool[np.argsort(-scores[q, pool], kind="stable")[:3]]
                assert got.items[q].tolist() == expected.tolist(), (bench, direction, q)
                assert np.array_equal(got.sims[q], scores[q, expected])


def test_coco_1k_within_reranks_each_fold(world, data, tmp_path):
    """coco_1k="within": each query's top k within its fold; with k = a fold's 4 images, t2i reranks every image of
    its fold, so its numbers are those of every pair scored (an exhaustive run restricted to the folds); the
    default, restrict, reads the 5K ranking per fold (other numbers here). Recorded in the provenance."""
    within = _run(DotPairsWithFirst(), data, world, tmp_path, benchmarks=["coco_1k"], rerank_k=4, score_rule="itm",
                  coco_1k="within", cache=False)  # fmt: skip
    every = _run(DotPairs(), data, world, tmp_path, benchmarks=["coco_1k"], protocol="exhaustive", cache=False)
    restrict = _run(DotPairsWithFirst(), data, world, tmp_path, benchmarks=["coco_1k"], rerank_k=4, score_rule="itm",
                    cache=False)  # fmt: skip
    t2i = {m: v["t2i"] for m, v in within.results.means().items()}
    assert t2i == {m: v["t2i"] for m, v in every.results.means().items()}
    assert t2i != {m: v["t2i"] for m, v in restrict.results.means().items()}
    assert within.provenance["protocol"]["coco_1k"] == "within"
    assert restrict.provenance["protocol"]["coco_1k"] == "restrict"


def test_a_tiny_blip_rerank_gives_lavis_numbers(world, data, tmp_path):
    """A tiny random BLIP (from its config), its own ITC first stage, k = 20 (t2i: every image; i2t: 20 of 100
    captions), itm+itc: R@1/5/10, ECCV mAP@R / R-P (both directions) and capped PMRP (t2i) equal LAVIS's
    compute_sim_matrix re-implemented (one forward pass per query's k pairs, -100 elsewhere); the provenance records
    BLIP's [ENC] note, its caption length, whose code it follows and the tie rule at the k-th candidate."""
    import torch

    from eccv_metric import Embeddings
    from eccv_metric.models.families.spec import load_model
    from tests.unit.pair_answers import pil
    from tests.unit.pair_world import tiny_blip

    folder = tiny_blip(tmp_path / "blip")
    benches = ["coco_5k", "eccv", "pm"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _run(f"hf:{folder}", data, world, tmp_path, benchmarks=benches, rerank_k=20)
    provenance = out.provenance
    assert provenance["protocol"]["score_rule"] == "itm+itc" and provenance["protocol"]["first_stage"]["own"]
    assert any("[ENC]" in note for note in provenance["notes"]) and provenance["text_length"] == 30
    protocol = provenance["protocol"]  # the code it follows, and the rule choosing among candidates tied at the k-th
    assert protocol["code"].startswith("BLIP's own (salesforce/BLIP") and protocol["reference"] == "original"
    assert "tied at the k-th, the items given first" in protocol["candidates"] and protocol["ranking"]
    assert provenance["text_unit"] == "words" and any("torch.topk" in note for note in provenance["notes"])
    scorer = load_model(f"hf:{folder}", "cpu")
    prepared = torch.stack([scorer.prepare_image(pil(i)) for i in world.image_ids])
    texts = [caption_text(c) for c in world.caption_ids]
    first = scorer.first_stage
    emb = Embeddings(np.asarray(first.encode_prepared(prepared)), np.asarray(first.encode_texts(texts)),
                     world.image_ids, world.caption_ids, normalize=True)  # fmt: skip
    collection = world.resources().collection("coco_5k")
    dense_i, dense_c = np.meshgrid(np.arange(len(world.image_ids)), np.arange(len(texts)), indexing="ij")
    sims = emb.pair_scores(collection, ("image", "caption"), dense_i.ravel(), dense_c.ravel(), "itc")
    sims = sims.reshape(dense_i.shape).astype(np.float32)
    states = scorer.image_states(prepared)
    i2t = np.full(sims.shape, -100.0, np.float32)
    for q in range(sims.shape[0]):  # LAVIS: one ITM pass over each image query's k captions
        top = np.argsort(-sims[q], kind="stable")[:20]
        itm = np.asarray(scorer.score_pairs(states, np.full(20, q), [texts[c] for c in top]), np.float32)
        i2t[q, top] = itm + sims[q, top]
    t2i = np.full(sims.T.shape, -100.0, np.float32)
    for q in range(sims.shape[1]):  # and over each caption query's k images
        top = np.argsort(-sims[:, q], kind="stable")[:20]
        itm = np.asarray(scorer.score_pairs(states, top, [texts[q]] * 20), np.float32)
        t2i[q, top] = itm + sims[top, q]
    res = world.resources()
    lav_i2t = evaluate(ScoreMatrix(i2t), benchmarks=benches, directions="i2t", resources=res).means()
    lav_t2i = evaluate(ScoreMatrix(t2i.T), benchmarks=benches, directions="t2i", resources=res).means()
    ours = out.results.means()
    same = {"coco_5k_r1": "both", "coco_5k_r5": "both", "coco_5k_r10": "both", "eccv_map_at_r": "both",
            "eccv_rprecision": "both", "eccv_r1": "both", "pmrp": "t2i"}  # fmt: skip
    for metric, where in same.items():
        for d in ("i2t", "t2i") if where == "both" else (where,):
            assert ours[metric][d] == (lav_i2t if d == "i2t" else lav_t2i)[metric][d], (metric, d)


def test_keywords_a_run_does_not_use_are_said_in_a_sweep_never_refused(world, data, tmp_path):
    """A sweep of a dual encoder and a pair scorer given score_rule= and coco_1k=: the pair scorer uses the rule,
    the dual encoder says it ignores both (refused for a dual encoder alone: tests/unit/test_pair_cli.py), and the
    pair scorer says coco_1k= does nothing when no benchmark reads COCO 1K's folds."""
    from eccv_metric.models import NotUsedWarning
    from eccv_metric.models import evaluate_models

    kwargs = {"benchmarks": ["coco_5k"], "resources": world.resources(), "workers": 0, "n_resamples": 20,
              "cache_dir": tmp_path / "cache", "score_rule": "itm", "coco_1k": "within", "rerank_k": 5}  # fmt: skip
    with pytest.warns(NotUsedWarning) as caught:
        runs = evaluate_models([FirstOnly(), DotPairsWithFirst()], data, **kwargs)
    said = sorted(str(w.message) for w in caught if w.category is NotUsedWarning)
    assert said == [
        "coco_1k= does nothing: no benchmark asked for ranks within COCO 1K's folds",
        "rerank_k=, score_rule=, coco_1k= do nothing: python:tests.unit.pair_answers.FirstOnly is a dual encoder, "
        "which ranks every item by its embeddings (these are options of a model that scores pairs: its rerank, score "
        "rule and pair batches)",
    ]
    assert runs[1].provenance["protocol"]["score_rule"] == "itm"


def test_a_sweep_mixes_pair_scorers_and_dual_encoders(world, data, clip, tmp_path):
    """evaluate_models with a pair scorer between dual encoders: each its own numbers, as a run of its own."""
    from eccv_metric.models import evaluate_models

    kwargs = {"benchmarks": ["coco_5k"], "resources": world.resources(), "workers": 0, "n_resamples": 20,
              "cache_dir": tmp_path / "cache", "batch_size": 8, "text_batch_size": 8}  # fmt: skip
    runs = evaluate_models([f"hf:{clip}", DotPairs(), f"hf:{clip}"], data, **kwargs)
    assert runs[0].results.means() == runs[2].results.means()
    assert runs[1].provenance["kind"] == "pair scorer"
    assert runs[1].results.means() == _run(DotPairs(), data, world, tmp_path, benchmarks=["coco_5k"]).results.means()
