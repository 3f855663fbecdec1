"""The transformers pair heads through ``hf:<folder>`` (tiny random models built from configs, seeded): each
adapter's scores from cached image states equal the model's own forward pass on whole pairs (pixels per pair:
the oracle), whatever the batches; ``tokenize`` / ``score_tokens`` equal ``score_pairs``; BLIP's and FLAVA's own
first stages equal the models' contrastive outputs; the caption rules (BLIP's ``[ENC]`` and ``pre_caption``)
against hand-written expectations; ``hf-itm:`` and its refusals.

Tolerances: float32 on the CPU; cached states and the oracle run the same operations on differently shaped
batches (BLAS blocking, padding widths), so they agree to rounding: 2e-5 times the largest score's magnitude
(at least 1; the scores spread over one to ten units with ``pair_world.INIT``; measured differences up to 5e-6 of
it).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric.models import load_model
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.pair_scorer import is_pair_scorer
from eccv_metric.models.families.pair_scorer import join_states
from tests.unit.pair_world import BUILDERS
from tests.unit.pair_world import CAPTIONS
from tests.unit.pair_world import images
from tests.unit.pair_world import oracle
from tests.unit.pair_world import tiny_blip

ATOL = 2e-5
KINDS = tuple(BUILDERS)
VILT_SIZES = ((16, 16), (24, 16), (16, 20), (28, 16))  # ViLT keeps each image's aspect: 16 to 28 patches


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models on one torch thread: on a shared machine, two threads per tiny op wait on each other (measured
    here under load: 25x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {kind: build(tmp_path_factory.mktemp(kind)) for kind, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def scorers(folders):
    return {kind: load_model(f"hf:{folder}", device="cpu") for kind, folder in folders.items()}


def pictures(kind: str, n: int = 5) -> list:
    return images(n, seed=1, sizes=VILT_SIZES if kind == "vilt" else ((8, 8), (12, 9)))


def states_of(scorer, pics: list):
    prepared = [scorer.prepare_image(im) for im in pics]
    if hasattr(prepared[0], "shape"):  # as the image workers collate tensors: stacked
        import torch

        prepared = torch.stack(prepared)
    return scorer.image_states(prepared)


def all_pairs(n_images: int, n_texts: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_images * n_texts)
    return order // n_texts, order % n_texts


def expected(kind: str, scorer, pics: list, image_index: np.ndarray, text_index: np.ndarray) -> np.ndarray:
    """The oracle on every pair: the model's forward on (that image's pixels, our token ids for that caption)."""
    tokens = scorer.tokenize(CAPTIONS)
    out = np.empty(len(image_index), dtype=np.float32)
    for i in np.unique(image_index):  # one image's pairs at a time (ViLT's images differ in size)
        rows = np.flatnonzero(image_index == i)
        ids, mask = tokens.take(text_index[rows], "cpu")
        prepared = scorer.prepare_image(pics[i])
        pixels = prepared["pixel_values"] if isinstance(prepared, dict) else prepared
        pixel_mask = prepared["pixel_mask"][None].expand(len(rows), -1, -1) if isinstance(prepared, dict) else None
        out[rows] = oracle(kind, scorer.model, pixels[None].expand(len(rows), *pixels.shape), ids, mask, pixel_mask)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_scores_from_cached_states_equal_the_models_own_forward_on_whole_pairs(kind, scorers):
    scorer = scorers[kind]
    assert isinstance(scorer, PairScorer) and is_pair_scorer(scorer)
    pics = pictures(kind)
    image_index, text_index = all_pairs(len(pics), len(CAPTIONS))
    want = expected(kind, scorer, pics, image_index, text_index)
    assert want.std() > 0.02  # the scores are spread (1,000 times the tolerance): a wrong input shows
    states = states_of(scorer, pics)
    got = np.asarray(scorer.score_pairs(states, image_index, [CAPTIONS[t] for t in text_index]), dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("kind", KINDS)
def test_a_pair_scores_the_same_in_any_batch_and_through_score_tokens(kind, scorers):
    scorer = scorers[kind]
    pics = pictures(kind)
    image_index, text_index = all_pairs(len(pics), len(CAPTIONS), seed=3)
    states = states_of(scorer, pics)
    tokens = scorer.tokenize(CAPTIONS)
    whole = np.asarray(scorer.score_tokens(states, image_index, tokens, text_index))
    texts = [CAPTIONS[t] for t in text_index]
    np.testing.assert_allclose(np.asarray(scorer.score_pairs(states, image_index, texts)), whole, rtol=0, atol=ATOL)
    tolerance = ATOL * max(1.0, float(np.abs(whole).max()))
    for size, n in ((1, 4), (7, len(whole))):  # other batches, other batch widths
        parts = [
            np.asarray(scorer.score_tokens(states, image_index[s : s + size], tokens, text_index[s : s + size]))
            for s in range(0, n, size)
        ]
        np.testing.assert_allclose(np.concatenate(parts), whole[:n], rtol=0, atol=tolerance)
    # states made in two batches and joined score as the states of one batch
    joined = join_states([states_of(scorer, pics[:2]), states_of(scorer, pics[2:])])
    np.testing.assert_allclose(
        np.asarray(scorer.score_tokens(joined, image_index, tokens, text_index)), whole, rtol=0, atol=tolerance
    )


def test_blip_itc_first_stage_equals_the_models_use_itm_head_false_output(scorers):
    import torch

    scorer = scorers["blip"]
    stage = scorer.first_stage
    assert stage.similarity == "cosine" and stage.kinds == ("image", "caption")
    pics = pictures("blip")
    prepared = torch.stack([stage.prepare_image(im) for im in pics])
    rows_i = np.asarray(stage.encode_prepared(prepared))
    rows_t = np.asarray(stage.encode_texts(CAPTIONS))
    ids = scorer.first_stage.tokenize(CAPTIONS)  # [CLS] first, as BLIP's ITC reads
    assert int(ids["input_ids"][0, 0]) == scorer.parts.tokenizer.cls_token_id
    with torch.inference_mode():
        for i in range(len(pics)):
            out = scorer.model(
                input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], use_itm_head=False,
                pixel_values=prepared[i : i + 1],
            ).itm_score  # fmt: skip
            np.testing.assert_allclose(rows_i[i] @ rows_t.T, out[0].numpy(), rtol=0, atol=1e-6)


def test_flava_contrastive_first_stage_equals_its_contrastive_logits(scorers):
    import torch

    scorer = scorers["flava"]
    stage = scorer.first_stage
    pics = pictures("flava")
    prepared = torch.stack([stage.prepare_image(im) for im in pics])
    sims = np.asarray(stage.encode_prepared(prepared)) @ np.asarray(stage.encode_texts(CAPTIONS)).T
    ids = stage.tokenize(CAPTIONS)
    model = scorer.model
    with torch.inference_mode():
        for i in range(len(pics)):
            out = model(
                input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], return_loss=False,
                pixel_values=prepared[i : i + 1].expand(len(CAPTIONS), -1, -1, -1),
            )  # fmt: skip
            # every row of the batch is image i: the diagonal pairs image i with each caption
            logits = out.contrastive_logits_per_image.diagonal() / model.flava.logit_scale.exp()
            np.testing.assert_allclose(sims[i], logits.numpy(), rtol=0, atol=1e-6)


def test_first_stages_and_their_identities(scorers, folders):
    blip, flava = scorers["blip"], scorers["flava"]
    for scorer in (blip, flava):
        assert scorer.score_rules == ("itm", "itm+itc")
        stage = scorer.first_stage
        assert stage.identity["head"] == "itc" and scorer.identity["head"] == "itm"
        assert stage.identity["weights"] == scorer.identity["weights"]  # the same weights, another key
        assert stage.identity != scorer.identity and stage.spec == scorer.spec + "#itc"
    for kind in ("blip2", "vilt", "bridgetower"):
        assert scorers[kind].first_stage is None and scorers[kind].score_rules == ("itm",)
    assert "maximum over its 32 query embeddings" in scorers["blip2"].first_stage_note
    # a second load: the same identity (the cache can trust it), weights known by their files
    again = load_model(f"hf:{folders['blip']}", device="cpu")
    assert json.dumps(again.identity, sort_keys=True) == json.dumps(blip.identity, sort_keys=True)
    assert blip.identity["weights_from"] == "files" and blip.identity["class"] == "BlipForImageTextRetrieval"


def test_blip_follows_its_own_code_enc_token_pre_caption_30_words_35_tokens(scorers, folders, tmp_path):
    blip = scorers["blip"]
    tokenizer = blip.parts.tokenizer
    enc = tokenizer.convert_tokens_to_ids("[ENC]")
    tokens = blip.tokenize(CAPTIONS)
    assert (tokens.ids[:, 0] == enc).all() and blip.text_unit == "words" and blip.text_length == 30
    # pre_caption: lower case, .!"()*#:;~ to spaces, runs of spaces one, stripped (hand-written expectations)
    ids, _ = blip.tokenize(["two cats (sleeping) on a red sofa!"]).take(np.array([0]), "cpu")
    want = tokenizer("two cats sleeping on a red sofa")["input_ids"]
    assert ids[0].tolist() == [enc, *want[1:]]
    long_ids, _ = blip.tokenize([" ".join(["ab"] * 40)]).take(np.array([0]), "cpu")
    assert long_ids.shape[1] == 35  # 30 words of 2 tokens each, then BLIP's 35 tokens: [ENC] + 33 + [SEP]
    thirty, _ = blip.tokenize([" ".join(["a"] * 40)]).take(np.array([0]), "cpu")
    assert thirty.shape[1] == 32  # 30 one-token words: [ENC] + 30 + [SEP]
    assert blip.identity["preprocessing"]["text"] == {"first_token": "[ENC]", "max_tokens": 35, "pre_caption_words": 30}
    assert any("[ENC]" in note for note in blip.notes)
    words = load_model(f"hf:{folders['blip']}", device="cpu", text_length=3)  # LAVIS-like: another word cut
    short, _ = words.tokenize(["a b c d e"]).take(np.array([0]), "cpu")
    assert short[0].tolist() == [enc, *tokenizer("a b c")["input_ids"][1:]]
    assert words.identity != blip.identity
    # the transformers port: [CLS] first, the raw caption
    port = load_model(f"hf:{folders['blip']}", device="cpu", reference="transformers")
    raw, _ = port.tokenize(["A Dog!"]).take(np.array([0]), "cpu")
    assert raw[0].tolist() == tokenizer("A Dog!")["input_ids"] and port.text_unit == "tokens"
    # a tokenizer without [ENC]: the id after [DEC], where the text vocabulary ends (BLIP's init_tokenizer)
    derived = load_model(f"hf:{tiny_blip(tmp_path / 'noenc', enc=False)}", device="cpu")
    assert int(derived.tokenize(["a"]).ids[0, 0]) == derived.parts.tokenizer.convert_tokens_to_ids("[DEC]") + 1


def test_blip2_reads_cls_and_lavis_50_words(scorers):
    blip2 = scorers["blip2"]
    tokens = blip2.tokenize(CAPTIONS)
    assert (tokens.ids[:, 0] == blip2.parts.tokenizer.cls_token_id).all()
    assert blip2.text_length == 50 and blip2.text_unit == "words"


def test_vilt_states_do_not_depend_on_the_random_stream(scorers):
    import torch

    vilt = scorers["vilt"]
    pics = pictures("vilt")
    torch.manual_seed(1)
    a = states_of(vilt, pics)
    torch.manual_seed(2)
    b = states_of(vilt, pics)
    assert torch.equal(a, b)
    # each image's own number of tokens: [CLS] + its patches (4 x 4 pixels each), the rest padding
    patches = [int(np.prod(vilt.prepare_image(im)["pixel_values"].shape[1:])) // 16 for im in pics]
    assert [int(n) for n in a[:, :, -1].sum(1)] == [1 + p for p in patches] and len(set(patches)) > 2


def test_hf_itm_loads_the_head_of_a_checkpoint_naming_another_class_and_refuses_missing_weights(folders, tmp_path):
    import shutil

    from transformers import ViltConfig
    from transformers import ViltModel

    other = tmp_path / "renamed"
    shutil.copytree(folders["vilt"], other)
    config = json.loads((other / "config.json").read_text())
    config["architectures"] = ["ViltForMaskedLM"]
    (other / "config.json").write_text(json.dumps(config))
    scorer = load_model(f"hf-itm:{other}", device="cpu")
    assert type(scorer).__name__ == "ViltScorer"
    bare = tmp_path / "bare"  # a ViltModel checkpoint: no rank_output weights
    config = ViltConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                        vocab_size=93, max_position_embeddings=40, image_size=16, patch_size=4)  # fmt: skip
    ViltModel(config).save_pretrained(bare)
    shutil.copy(other / "tokenizer_config.json", bare)
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer.json", "vocab.txt"):
        if (other / name).exists():
            shutil.copy(other / name, bare)
    with pytest.raises(EvaluationError, match=r"weights ViltForImageAndTextRetrieval scores with are not in the "
                                              r"checkpoint \(rank_output\.bias, rank_output\.weight; its config "
                                              r"names another class\): they would be random$"):  # fmt: skip
        load_model(f"hf-itm:{bare}", device="cpu")
    with pytest.raises(EvaluationError, match=r"model type 'clip' has no pair head here"):
        from tests.unit.model_world import tiny_clip

        load_model(f"hf-itm:{tiny_clip(tmp_path / 'clip')}", device="cpu")


def test_a_python_object_with_score_pairs_is_a_pair_scorer_and_one_with_neither_is_refused():
    class Pairs:
        def score_pairs(self, images, texts):
            return [len(t) for t in texts]

    class Both(Pairs):
        def encode_texts(self, texts):
            return np.ones((len(texts), 2))

    scorer = load_model(Pairs())
    assert is_pair_scorer(scorer) and scorer.first_stage is None and scorer.score_rules == ("itm",)
    assert list(scorer.score_pairs(["a", "b"], np.array([1, 0]), ["xy", "z"])) == [2, 1]
    assert load_model(Both()).first_stage is not None
    with pytest.raises(EvaluationError, match=r"^model: a object has neither encode_images / encode_texts nor "
                                              r"score_pairs; .* \(a pair scorer\)$"):  # fmt: skip
        load_model(object())


def test_the_help_names_the_pair_heads_and_hf_itm():
    from eccv_metric.models.families.spec import spec_help

    text = spec_help()
    assert "hf-itm:<repo or folder>" in text and "BlipForImageTextRetrieval" in text and "pair scorer" in text


def test_an_empty_batch_scores_nothing_and_unequal_indices_are_refused(scorers):
    scorer = scorers["blip"]
    states = states_of(scorer, pictures("blip", 2))
    tokens = scorer.tokenize(CAPTIONS[:2])
    empty = np.zeros(0, dtype=np.int64)
    assert tuple(scorer.score_tokens(states, empty, tokens, empty).shape) == (0,)
    with pytest.raises(ValueError, match=r"\(2,\) image indices for \(1,\) text indices"):
        scorer.score_tokens(states, np.array([0, 1]), tokens, np.array([0]))


@pytest.mark.parametrize("kind", ["blip", "blip2"])
def test_cross_attention_projects_each_distinct_image_of_a_batch_once(kind, scorers):
    scorer = scorers[kind]
    modules = dict(scorer.model.named_modules())
    key = next(n for n in modules if "crossattention" in n and n.endswith(".key"))
    rows: list[int] = []
    handle = modules[key].register_forward_hook(lambda module, args, out: rows.append(args[0].shape[0]))
    pics = pictures(kind, 3)
    states = states_of(scorer, pics)
    tokens = scorer.tokenize(CAPTIONS)
    image_index, text_index = np.array([0, 0, 0, 0, 0, 0, 1, 0, 2, 1, 0]), np.array([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4])
    try:
        one = np.asarray(scorer.score_tokens(states, image_index[:6], tokens, text_index[:6]))
        mixed = np.asarray(scorer.score_tokens(states, image_index[6:], tokens, text_index[6:]))
    finally:
        handle.remove()
    assert rows == [1, 3]  # one image's keys for six pairs; three images' for five
    want = expected(kind, scorer, pics, image_index, text_index)
    np.testing.assert_allclose(np.concatenate([one, mixed]), want, rtol=0, atol=ATOL * max(1.0, np.abs(want).max()))


def test_blip_reference_lavis_cuts_captions_at_lavis_50_words(folders):
    """reference="lavis": LAVIS's blip_caption processor (50 words, where BLIP's own evaluation cuts at 30), [ENC]
    first as in LAVIS's compute_sim_matrix; the code it follows is named (the provenance's protocol.code)."""
    lavis = load_model(f"hf:{folders['blip']}", device="cpu", reference="lavis")
    enc = lavis.parts.tokenizer.convert_tokens_to_ids("[ENC]")
    assert lavis.text_length == 50 and lavis.text_unit == "words" and lavis.code.startswith("LAVIS's")
    ids, _ = lavis.tokenize([" ".join(["a"] * 40)]).take(np.array([0]), "cpu")
    assert ids.shape[1] == 35 and int(ids[0, 0]) == enc  # 40 one-token words kept, then LAVIS's 35 tokens
    assert any("LAVIS's blip_caption pre_caption" in note and "50 words" in note for note in lavis.notes)
    assert lavis.identity != load_model(f"hf:{folders['blip']}", device="cpu").identity  # its own cache entries


def test_bridgetower_reads_its_position_rule_positions_from_padding_idx_plus_one(scorers, folders):
    """BridgeTower's text embeddings number a caption's tokens from padding_idx + 1 (RoBERTa's rule): with 42
    positions and a tokenizer whose model_max_length is 42 too (pair_world's), 41 tokens fit ([PAD] = 0). A caption
    longer than that is cut at 41 and scored as the model's own forward scores those tokens (no index out of
    range); a text_length= above what the model reads is one error line."""
    import torch

    scorer = scorers["bridgetower"]
    assert scorer.model.config.text_config.max_position_embeddings == 42 == scorer.parts.tokenizer.model_max_length
    assert scorer.text_length == 41
    pics = pictures("bridgetower", 2)
    long = " ".join(["a very long caption"] * 8)  # 159 characters: as many tokens of the character-level tokenizer
    tokens = scorer.tokenize([long])
    assert tokens.lengths.tolist() == [41]
    got = np.asarray(scorer.score_pairs(states_of(scorer, pics), np.array([0, 1]), [long, long]), np.float32)
    ids, mask = tokens.take(np.array([0, 0]), "cpu")
    want = oracle("bridgetower", scorer.model, torch.stack([scorer.prepare_image(im) for im in pics]), ids, mask)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL * max(1.0, float(np.abs(want).max())))
    with pytest.raises(EvaluationError, match=r"text_length= 42 is above the 41 tokens its text model reads \(42 "
                       r"positions, from padding_idx \+ 1\): give at most 41$"):  # fmt: skip
        load_model(f"hf:{folders['bridgetower']}", device="cpu", text_length=42)
