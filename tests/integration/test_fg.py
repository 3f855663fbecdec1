"""MSCOCO-FG / Flickr30K-FG: real files, and the engine against brute force written here (full stable sort)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import FineGrainedMetrics
from tests.fixtures import SHARED
from tests.unit.brute import numbers

FG = SHARED / "mscoco_fg"


@pytest.fixture(scope="module")
def mscoco_fg(gt):
    return FineGrainedMetrics("mscoco_fg", FG, gt)


def test_real_galleries_and_caption_mapping(mscoco_fg):
    flickr = FineGrainedMetrics("flickr30k_fg", FG).fg
    coco = mscoco_fg.fg
    assert (len(coco.images), len(coco.captions)) == (31244, 25000)
    assert (len(flickr.images), len(flickr.captions)) == (6867, 5000)
    assert len(set(coco.query_images.tolist())) == 5000 and len(set(flickr.query_images.tolist())) == 1000
    # hand-readable spot checks: the first annotated image of each file and its first refined caption
    first = coco.captions.ids[0]
    assert coco.images.ids[coco.caption_image[0]] == 452113 and first == 659308
    assert coco.texts[0] == "a group of people posing with half a dozen large cupcakes on a counter"
    assert flickr.images.ids[flickr.caption_image[0]] == 1007129816 and flickr.captions.ids[0] == 10071298160
    assert "orange hat" in flickr.texts[0]
    # every refined caption keeps its COCO caption id: 12,688 are the original apart from case and final period
    raw = json.loads((SHARED / "coco" / "captions_karpathy_test.json").read_text())
    original = {a["id"]: a["caption"] for a in raw["annotations"]}
    assert {original_image(raw)[c] for c in coco.captions.ids[:5].tolist()} == {452113}

    def norm(text):
        return text.lower().strip().rstrip(".")

    same = sum(norm(original[c]) == norm(t) for c, t in zip(coco.captions.ids.tolist(), coco.texts, strict=True))
    assert same == 12688
    # and the refined caption k is closest (word Jaccard) to original caption k of its image for 99% of them
    words = [set(re.findall(r"[a-z]+", t.lower())) for t in coco.texts]
    orig = [set(re.findall(r"[a-z]+", original[c].lower())) for c in coco.captions.ids.tolist()]
    best = 0
    for i in range(0, 25000, 5):
        for k in range(5):
            sim = [len(words[i + k] & orig[i + j]) / len(words[i + k] | orig[i + j]) for j in range(5)]
            best += int(np.argmax(sim)) == k
    assert best == 24763


def original_image(raw):
    return {a["id"]: a["image_id"] for a in raw["annotations"]}


# ---------------------------------------------------------------------------
# a small synthetic Flickr30K-FG (same file formats), scored exhaustively


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fg")
    rng = np.random.default_rng(3)
    flickr = np.unique(rng.integers(2_000_000, 9_000_000_000, 40))[:12]  # sparse ids: the sorted-search index
    coco = rng.choice(np.arange(1, 581_000), 18, replace=False)
    files = [f"{f}.jpg" for f in flickr] + [f"{c:012d}.jpg" for c in coco]
    np.save(folder / "Flickr30K_FG_img_filenames.npy", np.array(files))
    order = rng.permutation(12)  # annotation order differs from gallery order, as in the real files
    ann = {str(flickr[k]): [f"caption {k} {j}" for j in range(5)] for k in order}
    (folder / "Flickr30K_FG_ann.json").write_text(json.dumps(ann))
    return FineGrainedMetrics("flickr30k_fg", folder)


def brute(query_emb, gallery_emb, gallery_ids, positives):
    """{query index: 1-based rank of its best positive}, full stable argsort."""
    out = {}
    for q, pos in positives.items():
        scores = np.array([float(np.dot(query_emb[q], g)) for g in gallery_emb])
        ranked = [gallery_ids[j] for j in np.argsort(-scores, kind="stable")]
        out[q] = 1 + min(ranked.index(p) for p in pos)
    return out


@pytest.mark.parametrize("values", ["integer", "float"])
@pytest.mark.parametrize("shuffled", [False, True])
def test_small_benchmark_equals_brute_force(small, values, shuffled):
    fg = small.fg
    rng = np.random.default_rng(hash((values, shuffled)) % 2**32)
    image_ids, caption_ids = fg.images.ids.tolist(), fg.captions.ids.tolist()
    if shuffled:  # any order, plus extra distractors of each modality
        image_ids = [int(i) for i in rng.permutation(image_ids + [7, 8, 9])]
        caption_ids = [int(c) for c in rng.permutation(caption_ids + [11, 12])]
    if values == "integer":  # exact dot products, heavy ties
        images = rng.integers(-1, 2, size=(len(image_ids), 3)).astype(np.float32)
        captions = rng.integers(-1, 2, size=(len(caption_ids), 3)).astype(np.float32)
    else:
        images, captions = rng.standard_normal((len(image_ids), 8)), rng.standard_normal((len(caption_ids), 8))
    image_of = {int(c): int(fg.images.ids[i]) for c, i in zip(fg.captions.ids, fg.caption_image, strict=True)}
    t2i_pos = {k: {image_of[c]} for k, c in enumerate(caption_ids) if c in image_of}
    i2t_pos = {k: {c for c, i in image_of.items() if i == img} for k, img in enumerate(image_ids)}
    i2t_pos = {k: v for k, v in i2t_pos.items() if v}
    ranks = {
        "t2i": brute(captions, images, image_ids, t2i_pos),
        "i2t": brute(images, captions, caption_ids, i2t_pos),
    }
    targets = ["flickr30k_fg_recalls", "flickr30k_fg_medr", "flickr30k_fg_meanr"]
    ks = (1, 2, 5, 40)
    got = small.compute_all_metrics_from_embeddings(images, captions, image_ids, caption_ids, targets, ks)
    for direction, by_query in ranks.items():
        r = np.array([by_query[q] for q in sorted(by_query)])
        n_gal = len(image_ids) if direction == "t2i" else len(caption_ids)
        for k in ks:
            assert got[f"flickr30k_fg_r{k}"][direction] == float(np.mean(r <= min(k, n_gal)))
        assert got["flickr30k_fg_medr"][direction] == float(np.median(r))
        assert got["flickr30k_fg_meanr"][direction] == float(np.mean(r))
    from_scores = small.compute_all_metrics_from_scores(images @ captions.T, image_ids, caption_ids, targets, ks)
    assert from_scores == got
    # ranked lists: the full stable rankings give the same numbers
    scores = images @ captions.T
    i2t = {int(image_ids[q]): [caption_ids[j] for j in np.argsort(-scores[q], kind="stable")] for q in i2t_pos}
    t2i = {int(caption_ids[q]): [image_ids[j] for j in np.argsort(-scores[:, q], kind="stable")] for q in t2i_pos}
    if not shuffled:  # extra ids are not benchmark items: lists hold benchmark items only
        assert small.compute_all_metrics(i2t, t2i, targets, ks) == got


@pytest.mark.parametrize("chunk", [None, 7])
def test_lists_of_any_depth_equal_brute_force(small, monkeypatch, chunk):
    """Lists cut at random depths (each keeps its first positive), read a few lists at a time or all at once."""
    if chunk is not None:
        monkeypatch.setattr("eccv_metric.kernels.scorers.CHUNK_ELEMENTS", chunk)
    fg = small.fg
    rng = np.random.default_rng(12)
    image_ids, caption_ids = fg.images.ids.tolist(), fg.captions.ids.tolist()
    images = rng.integers(-1, 2, size=(len(image_ids), 3)).astype(np.float32)
    captions = rng.integers(-1, 2, size=(len(caption_ids), 3)).astype(np.float32)
    image_of = {int(c): int(fg.images.ids[i]) for c, i in zip(fg.captions.ids, fg.caption_image, strict=True)}
    t2i_pos = {k: {image_of[c]} for k, c in enumerate(caption_ids)}
    ranks = brute(captions, images, image_ids, t2i_pos)
    scores = images @ captions.T
    lists = {}
    for q, rank in ranks.items():
        full = [image_ids[j] for j in np.argsort(-scores[:, q], kind="stable")]
        lists[caption_ids[q]] = full[: int(rng.integers(rank, len(full) + 1))]
    targets = ["flickr30k_fg_r1", "flickr30k_fg_r5", "flickr30k_fg_medr", "flickr30k_fg_meanr"]
    got = small.compute_all_metrics(t2i_retrieved_items=lists, target_metrics=targets)
    r = np.array([ranks[q] for q in sorted(ranks)])
    assert got == {
        "flickr30k_fg_r1": {"t2i": float(np.mean(r <= 1))},
        "flickr30k_fg_r5": {"t2i": float(np.mean(r <= 5))},
        "flickr30k_fg_medr": {"t2i": float(np.median(r))},
        "flickr30k_fg_meanr": {"t2i": float(np.mean(r))},
    }
    bad = dict(lists)
    last = caption_ids[-1]
    bad[last] = bad[last] + [bad[last][0]]  # a repeat at the end of one list is found whatever the chunk
    with pytest.raises(EvaluationError, match=f"query {last} ranks the same image more than once"):
        small.compute_all_metrics(t2i_retrieved_items=bad, target_metrics=targets)


def test_lists_errors_name_queries(small):
    fg = small.fg
    cap = int(fg.captions.ids[0])
    with pytest.raises(EvaluationError, match="have no ranked list"):
        small.compute_all_metrics(t2i_retrieved_items={cap: [int(fg.images.ids[0])]})
    lists = {int(c): [] for c in fg.captions.ids}
    with pytest.raises(EvaluationError, match="too short"):
        small.compute_all_metrics(t2i_retrieved_items=lists, target_metrics=["flickr30k_fg_r1"])
    with pytest.raises(EvaluationError, match="target_metrics is empty"):
        small.compute_all_metrics(t2i_retrieved_items=lists, target_metrics=[])
    with pytest.raises(EvaluationError, match="unknown target metric 'mscoco_fg_r1'"):
        small.compute_all_metrics(t2i_retrieved_items=lists, target_metrics=["mscoco_fg_r1"])
    with pytest.raises(EvaluationError, match="one id per row"):
        small.compute_all_metrics_from_scores(np.zeros((3, 4)))


def test_real_mscoco_fg_sampled_queries_equal_brute_force(mscoco_fg):
    """The 31,244 x 25,000 benchmark from integer embeddings (blockwise); 30 queries a direction by full sort."""
    fg = mscoco_fg.fg
    rng = np.random.default_rng(6)
    images = rng.integers(-1, 2, size=(len(fg.images), 6)).astype(np.float32)
    captions = images[fg.caption_image] + rng.integers(-1, 2, size=(len(fg.captions), 6)).astype(np.float32)
    per_query = mscoco_fg.per_query_from_embeddings(
        images, captions, target_metrics=["mscoco_fg_meanr", "mscoco_fg_r1"]
    )
    t2i = per_query["mscoco_fg_meanr"]["t2i"]
    assert (t2i.query_ids == fg.captions.ids).all()
    for q in rng.choice(len(fg.captions), 30, replace=False).tolist():
        order = np.argsort(-(images @ captions[q]), kind="stable")
        assert t2i.values[q] == 1 + int(np.flatnonzero(order == fg.caption_image[q])[0])
    i2t = per_query["mscoco_fg_meanr"]["i2t"]
    assert len(i2t.values) == 5000
    row_of = {int(i): k for k, i in enumerate(i2t.query_ids)}
    for img in rng.choice(fg.query_images, 30, replace=False).tolist():
        order = np.argsort(-(captions @ images[img]), kind="stable")  # every refined caption, stable
        want = 1 + int(np.flatnonzero(fg.caption_image[order] == img)[0])
        assert i2t.values[row_of[int(fg.images.ids[img])]] == want
    for direction, ranks in (("t2i", t2i.values), ("i2t", i2t.values)):
        assert per_query["mscoco_fg_r1"][direction].mean == float(np.mean(ranks <= 1))


def test_cli_and_evaluate_module(small, tmp_path, capsys):
    import evaluate

    from eccv_metric import EVALUATE_MODULE_DIR
    from eccv_metric.cli.main import main
    from eccv_metric.hub.evaluate_glue import nest

    fg = small.fg
    folder = str(fg.source).rsplit("/", 1)[0]
    rng = np.random.default_rng(1)
    images = rng.standard_normal((len(fg.images), 8)).astype(np.float32)
    captions = rng.standard_normal((len(fg.captions), 8)).astype(np.float32)
    expected = small.compute_all_metrics_from_embeddings(images, captions)
    assert set(expected) == {"flickr30k_fg_r1", "flickr30k_fg_r5", "flickr30k_fg_r10"}
    np.save(tmp_path / "i.npy", images)
    np.save(tmp_path / "c.npy", captions)
    args = ["evaluate", "--benchmark", "flickr30k_fg", "--source-dir", folder, "-o", str(tmp_path / "o.json")]
    assert (
        main(args + ["--image-embeddings", str(tmp_path / "i.npy"), "--caption-embeddings", str(tmp_path / "c.npy")])
        == 0
    )
    assert numbers(tmp_path / "o.json") == expected
    assert "flickr30k_fg_r10" in capsys.readouterr().out
    module = evaluate.load(str(EVALUATE_MODULE_DIR), "flickr30k_fg")
    assert nest(module.compute(image_embeddings=images, caption_embeddings=captions, fg_source=folder)) == expected
    scores = images @ captions.T
    refs = fg.captions.ids.tolist()
    preds = [fg.images.ids[np.argsort(-scores[:, q], kind="stable")].tolist() for q in range(len(refs))]
    flat = module.compute(predictions=preds, references=refs, directions=["t2i"] * len(refs), fg_source=folder)
    assert nest(flat) == {k: {"t2i": v["t2i"]} for k, v in expected.items()}
