"""The model path's speed-ups keep every number: length-sorted caption batches tokenised ahead of the model,
non-blocking copies, the image workers, the weights digest from the weights files.

Checks: captions encoded in length order equal, row by row, the captions encoded in the given order (float
tolerance) and give the same per-query ranks up to near-ties; an interrupted caption side resumes to
bit-identical embeddings; the cache key records the caption batching; the background iterator and the lagged
copies hand on every item in order, exceptions where they happened.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric.models.encoding.background import ahead
from eccv_metric.models.encoding.background import lagged
from eccv_metric.models.encoding.text_batches import given_order
from eccv_metric.models.encoding.text_batches import text_order
from tests.unit.model_world import caption_text

COCO = ["coco_5k", "cxc", "eccv", "coco_t2t"]


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    from tests.unit.model_world import run_model

    kwargs.setdefault("benchmarks", COCO)
    return run_model(model, data, world, tmp_path, **kwargs)


def test_text_order_is_longest_first_and_stable():
    texts = ["ab", "abcd", "a", "abcd", "", "abc", "ab"]
    order = text_order(texts, by_length=True)
    assert order.tolist() == [1, 3, 5, 0, 6, 2, 4]  # brute: by -len, ties in the given order
    assert text_order(texts, by_length=False).tolist() == list(range(7))
    rows = np.arange(7, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32)
    encoded = rows[order]  # row k is caption order[k]
    assert np.array_equal(given_order(encoded, order), rows)


def _ranks(img: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Brute force: each caption query's rank of every image (0 = best), ties by the image's position."""
    scores = cap @ img.T
    return np.argsort(np.argsort(-scores, axis=1, kind="stable"), axis=1, kind="stable")


def test_length_sorted_batches_equal_the_given_order(world, data, clip, tmp_path, monkeypatch):
    """The same captions in batches of 7 cut in length order and in the given order: the same embeddings to float
    tolerance, and the same per-query ranks except where two scores are within float noise."""
    from eccv_metric.models.families import spec

    sorted_run = _run(
        f"hf:{clip}", data, world, tmp_path, text_batch_size=7, cache=False, save_embeddings=tmp_path / "s"
    )
    real = spec.load_model

    def unsorted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        encoder = real(*args, **kwargs)
        encoder.sort_texts = False
        return encoder

    monkeypatch.setattr("eccv_metric.models.run.load_model", unsorted)
    given_run = _run(
        f"hf:{clip}", data, world, tmp_path, text_batch_size=7, cache=False, save_embeddings=tmp_path / "g"
    )
    got = {k: np.load(tmp_path / k / "coco_5k" / "caption_embeddings.npy") for k in ("s", "g")}
    np.testing.assert_allclose(got["s"], got["g"], rtol=0, atol=2e-6)
    img = np.load(tmp_path / "s" / "coco_5k" / "image_embeddings.npy")
    a, b = _ranks(img, got["s"]), _ranks(img, got["g"])
    scores = got["s"] @ img.T
    for q, col in zip(*np.nonzero(a != b), strict=True):  # a rank differs only beside a near-tie
        others = np.delete(scores[q], col)
        assert np.min(np.abs(others - scores[q, col])) < 1e-5
    assert sorted_run.provenance["items"]["captions.caption"]["order"] == "length"
    assert given_run.provenance["items"]["captions.caption"]["order"] == "given"
    assert sorted_run.provenance["text_batch_size"] == 7


def test_interrupted_captions_resume_bit_identical(world, data, clip, tmp_path, monkeypatch):
    from transformers import CLIPModel

    _run(f"hf:{clip}", data, world, tmp_path, text_batch_size=16, cache=False, save_embeddings=tmp_path / "fresh")
    real = CLIPModel.get_text_features
    calls = {"n": 0}

    def dies_after_two(self, *args, **kwargs):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CLIPModel, "get_text_features", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        _run(f"hf:{clip}", data, world, tmp_path, text_batch_size=16)
    partial = sorted(p.name.split(".") for p in (tmp_path / "cache").glob("*/partial/*.npy"))
    assert [p[0] for p in partial] == ["000000000-000000016", "000000016-000000032"]  # two caption batches of 100
    assert all(len(p[1]) == 64 for p in partial)  # each named with its checksum
    monkeypatch.setattr(CLIPModel, "get_text_features", real)
    resumed = _run(f"hf:{clip}", data, world, tmp_path, text_batch_size=16, save_embeddings=tmp_path / "resumed")
    assert resumed.provenance["items"]["captions.caption"]["resumed"] == 32
    for name in ("caption_embeddings.npy", "image_embeddings.npy"):
        fresh = np.load(tmp_path / "fresh" / "coco_5k" / name)
        assert np.array_equal(np.load(tmp_path / "resumed" / "coco_5k" / name), fresh)


def test_cache_key_records_the_caption_batching(world, data, clip, tmp_path):
    first = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_t2t"], text_batch_size=16)
    same = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_t2t"], text_batch_size=16)
    other = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_t2t"], text_batch_size=32)
    label = "captions.caption"
    assert not first.provenance["items"][label]["cached"] and same.provenance["items"][label]["cached"]
    assert not other.provenance["items"][label]["cached"]
    assert other.provenance["items"][label]["cache"] != first.provenance["items"][label]["cache"]
    assert other.results.means()["coco_t2t_r1"] == pytest.approx(first.results.means()["coco_t2t_r1"], abs=0.02)


def test_cache_key_records_the_image_batch_size(world, data, clip, tmp_path):
    """Images batched otherwise may round otherwise (a kernel's shape): another image batch size is another
    entry; the captions' entry, batched as before, is reused."""
    first = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"])  # image batches of 8
    other = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"], batch_size=4)
    assert not other.provenance["items"]["images.image"]["cached"]
    assert other.provenance["items"]["images.image"]["cache"] != first.provenance["items"]["images.image"]["cache"]
    assert other.provenance["items"]["captions.caption"]["cached"]


def test_text_batch_size_words(world, data, clip, tmp_path, capsys, monkeypatch):
    with pytest.raises(EvaluationError, match=r"^text_batch_size= must be a positive integer, not 0$"):
        _run(f"hf:{clip}", data, world, tmp_path, text_batch_size=0)
    from eccv_metric.cli.main import main

    argv = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--benchmarks", "coco_t2t", "--no-cache"]
    with pytest.raises(SystemExit):  # argparse's own check of the flag
        main([*argv, "--text-batch-size", "0"])
    assert "--text-batch-size: must be a positive whole number" in capsys.readouterr().err
    seen = {}

    def stop(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.update(kwargs)
        raise EvaluationError("text_batch_size= seen")

    monkeypatch.setattr("eccv_metric.models.run.evaluate_model_request", stop)
    assert main([*argv, "--text-batch-size", "9"]) == 2
    assert seen["text_batch_size"] == 9
    assert capsys.readouterr().err.strip().endswith("error: --text-batch-size seen")


def test_ahead_keeps_order_raises_in_place_and_stops_early():
    assert list(ahead(iter(range(50)), depth=3)) == list(range(50))

    def bad():  # noqa: ANN202
        yield 1
        yield 2
        raise ValueError("third item")

    got = []
    with pytest.raises(ValueError, match="third item"):
        for x in ahead(bad()):
            got.append(x)
    assert got == [1, 2]
    produced = []

    def endless():  # noqa: ANN202
        k = 0
        while True:
            produced.append(k)
            yield k
            k += 1

    before = threading.active_count()
    stream = ahead(endless(), depth=2)
    assert next(stream) == 0
    stream.close()  # the consumer stops: so does the producer
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
    assert len(produced) <= 5


def test_lagged_hands_on_every_batch_before_the_error():
    def batches():  # noqa: ANN202
        yield (0, 2), np.zeros((2, 3))
        yield (2, 4), np.ones((2, 3))
        raise KeyboardInterrupt

    got = []
    with pytest.raises(KeyboardInterrupt):
        for bounds, values in lagged(batches()):
            got.append((bounds, values.sum()))
    assert got == [((0, 2), 0.0), ((2, 4), 6.0)]
    assert [b for b, _ in lagged(iter([((0, 1), 1), ((1, 2), 2)]))] == [(0, 1), (1, 2)]


def test_captions_of_every_item_set_keep_their_ids(world, data, clip, tmp_path):
    """Length order inside, the config's order outside: caption k's embedding is the model's on caption k."""
    from transformers import AutoModel
    from transformers import AutoProcessor

    _run(
        f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_t2t"], text_batch_size=5, save_embeddings=tmp_path / "e"
    )
    got = np.load(tmp_path / "e" / "coco_5k" / "caption_embeddings.npy")
    model = AutoModel.from_pretrained(clip).eval()
    processor = AutoProcessor.from_pretrained(clip)
    import torch

    texts = [caption_text(c) for c in world.caption_ids]
    with torch.inference_mode():
        one = [
            model.get_text_features(**processor.tokenizer([t], truncation=True, return_tensors="pt")).pooler_output[0]
            for t in texts
        ]
    expected = torch.stack(one).numpy()
    np.testing.assert_allclose(got, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=0, atol=2e-6)


def test_a_sweep_starts_its_workers_for_the_families_it_lists(monkeypatch):
    """start_workers_early: the device picked as a load picks it, every listed family's worker modules once;
    nothing for a list without specs (Python objects), unknown prefixes (their load says why), families without
    images, or ``workers=0``."""
    import eccv_metric.models.families.spec  # noqa: F401 - registers the families
    from eccv_metric.models.families import torchutil
    from eccv_metric.models.families.registry import FAMILIES
    from eccv_metric.models.families.registry import Family
    from eccv_metric.models.families.registry import LoadOptions

    calls = []
    monkeypatch.setattr(torchutil, "start_early", lambda *args: calls.append(args))
    texts = Family("txt", (("txt:<name>", "a text-only family"),), lambda *a: None, modalities=("caption",))
    monkeypatch.setitem(FAMILIES, "txt", texts)
    torchutil.start_workers_early([object(), "nope:x", "txt:a"], LoadOptions(device="cpu", workers=3))
    torchutil.start_workers_early(["hf:a"], LoadOptions(device="cpu", workers=0))  # no workers: no server
    assert calls == []
    torchutil.start_workers_early(["hf:a", "open_clip:b/c", "hf:d", object()], LoadOptions(device="cpu", workers=3))
    assert calls == [("cpu", 3, ("transformers.image_processing_utils", "open_clip"))]


def test_worker_defaults_and_start_methods(monkeypatch):
    from eccv_metric.models.encoding import workers

    monkeypatch.setattr(workers, "cores", lambda: 16)
    assert workers.default_workers("cuda") == 15 and workers.default_workers("cuda:1") == 15
    assert workers.default_workers("cpu") == 8
    monkeypatch.setattr(workers, "cores", lambda: 4)  # a CPU model shares every core with its workers
    assert workers.default_workers("cuda") == 3 and workers.default_workers("cpu") == 4
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert workers.default_workers("cuda") == 1 and workers.default_workers("cpu") == 2
    monkeypatch.setattr(workers, "cores", lambda: 1)
    assert workers.default_workers("cuda") == 0 and workers.default_workers("cpu") == 0
    monkeypatch.delenv(workers.START_ENV, raising=False)
    assert workers.start_method("cpu") is None  # the platform's default (fork on Linux)
    assert workers.start_method("cuda") in ("forkserver", "spawn")
    monkeypatch.setenv(workers.START_ENV, "spawn")
    assert workers.start_method("cpu") == "spawn"
    monkeypatch.setenv(workers.START_ENV, "sideways")
    with pytest.raises(EvaluationError, match=r"^ECCV_CAPTION_WORKER_START=sideways is not a start method here"):
        workers.start_method("cpu")


def test_pickled_modules_name_what_unpickling_imports():
    from eccv_metric.models.encoding.encode import ImageItems
    from eccv_metric.models.encoding.workers import pickled_modules

    dataset = ImageItems([("file", "x.jpg")], np.asarray([1]), prepare=given_order)
    assert {"eccv_metric.models.encoding.encode", "eccv_metric.models.encoding.text_batches"} <= set(
        pickled_modules(dataset)
    )


def test_text_batches_threaded_and_grouped_give_the_same_batches():
    """The GPU path (a tokenizer thread one batch ahead) and the CPU path (groups tokenised, then encoded) hand
    the same batches, in the same order, to the model."""
    from eccv_metric.models.encoding.text_batches import CPU_GROUP
    from eccv_metric.models.encoding.text_batches import encode_text_batches
    from eccv_metric.models.families.encoder import FunctionEncoder

    texts = [caption_text(c) for c in range(100)]
    order = text_order(texts, by_length=True)
    todo = [(s, min(s + 3, 100)) for s in range(0, 100, 3)]
    assert len(todo) > CPU_GROUP  # several groups

    def run(device: str) -> list:
        seen = []
        encoder = FunctionEncoder("x", ("caption",), device=device, tokenize=lambda batch: list(batch),
                          encode_tokens=lambda tokens: seen.append(tokens) or np.ones((len(tokens), 2)))  # fmt: skip
        bounds = [b for b, _ in encode_text_batches(encoder, texts, order, todo)]
        return [bounds, seen]

    cpu, gpu = run("cpu"), run("cuda")
    assert cpu == gpu and cpu[0] == todo
    assert cpu[1][0] == [texts[i] for i in order[:3].tolist()]


def _file_digest(folder, names):  # noqa: ANN001, ANN202
    """Brute force: sha256 over 'name|sha256(content)' lines."""
    import hashlib

    lines = "".join(f"{n}|{hashlib.sha256((folder / n).read_bytes()).hexdigest()}\n" for n in names)
    return hashlib.sha256(lines.encode()).hexdigest()


def test_weights_digest_is_of_the_files_and_remembered(tmp_path, monkeypatch):
    from eccv_metric.models.data import digests
    from eccv_metric.models.data.digests import FileDigests
    from eccv_metric.models.families.spec import load_model
    from tests.unit.model_world import tiny_clip

    folder = tiny_clip(tmp_path / "clip")
    (folder / "training_args.bin").write_bytes(b"not weights")
    identity = load_model(f"hf:{folder}", digests=FileDigests(tmp_path / "memo")).identity
    assert identity["weights_from"] == "files" and identity["weights_files"] == ["model.safetensors"]
    assert identity["weights"] == _file_digest(folder, ["model.safetensors"])
    assert (tmp_path / "memo" / "file_digests.json").is_file()

    def no_hashing(path):  # noqa: ANN001, ANN202
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(digests, "sha256_file", no_hashing)
    remembered = load_model(f"hf:{folder}", digests=FileDigests(tmp_path / "memo")).identity  # nothing read
    assert remembered["weights"] == identity["weights"]
    with pytest.raises(AssertionError, match="hashed again"):
        load_model(f"hf:{folder}", digests=FileDigests(None))  # no memo (cache=False): hashed
    monkeypatch.undo()
    tiny_clip(folder, seed=1)  # other weights, same file names
    again = load_model(f"hf:{folder}", digests=FileDigests(tmp_path / "memo")).identity
    assert again["weights"] == _file_digest(folder, ["model.safetensors"]) != identity["weights"]


def test_weights_initialised_at_load_are_hashed_as_tensors(tmp_path):
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    from eccv_metric.models.families.spec import load_model
    from tests.unit.model_world import tiny_clip

    folder = tiny_clip(tmp_path / "clip")
    state = load_file(folder / "model.safetensors")
    del state["logit_scale"]  # initialised at load (from the config)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    encoder = load_model(f"hf:{folder}")
    assert encoder.identity["weights_from"] == "tensors"
    assert encoder.identity["weights"] != _file_digest(folder, ["model.safetensors"])


def test_sentence_transformers_weights_from_its_folder(tmp_path):
    from eccv_metric.models.families import weights
    from eccv_metric.models.families.spec import load_model
    from tests.unit.model_world import tiny_st

    folder = tiny_st(tmp_path / "st")
    identity = load_model(f"st:{folder}").identity
    names = weights.weight_files(folder)
    assert identity["weights_from"] == "files" and names
    assert identity["weights"] == _file_digest(folder, [p.relative_to(folder).as_posix() for p in names])


def test_many_models_give_each_its_own_numbers(world, data, clip, tmp_path):
    """A CLIP, a SigLIP and a text-only model in one run: each model's numbers and embeddings those of a run of
    its own, bit for bit, its embeddings in a subfolder of its own."""
    from eccv_metric.models import evaluate_model
    from eccv_metric.models.many import evaluate_models
    from eccv_metric.models.many import model_slug
    from tests.unit.model_world import tiny_siglip
    from tests.unit.model_world import tiny_st

    specs = [f"hf:{clip}", f"hf:{tiny_siglip(tmp_path / 'siglip')}", f"st:{tiny_st(tmp_path / 'st')}"]
    options = {"resources": world.resources(), "workers": 0, "batch_size": 8, "n_resamples": 20, "cache": False}
    alone = [
        evaluate_model(s, data, save_embeddings=tmp_path / f"a{k}", **options)  # type: ignore[arg-type]
        for k, s in enumerate(specs)
    ]
    together = evaluate_models(specs, data, save_embeddings=tmp_path / "many", **options)
    for k, (one, many) in enumerate(zip(alone, together, strict=True)):
        assert many.results.means() == one.results.means()
        assert many.provenance["model"] == specs[k] and many.skipped == one.skipped
        for group in (tmp_path / f"a{k}").iterdir():
            for name in (p.name for p in group.iterdir()):
                got = np.load(tmp_path / "many" / model_slug(k, specs[k]) / group.name / name)
                assert np.array_equal(got, np.load(group / name)), (specs[k], group.name, name)
    with pytest.raises(EvaluationError, match=r"^models= takes a list of one model or more"):
        evaluate_models([], data)


def test_cli_several_models_write_one_file_each(world, data, clip, tmp_path, monkeypatch, capsys):
    import json

    from eccv_metric.cli.main import main

    runs = [_run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"], cache=False)] * 2
    seen = {}

    def fake(models, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen["models"] = models
        return runs

    monkeypatch.setattr("eccv_metric.models.many.evaluate_models_request", fake)
    out = tmp_path / "out"
    argv = ["evaluate", "--model", "hf:a/b", "--model", "st:c", "--data", str(data), "-o", str(out), "--quiet"]
    assert main(argv) == 0
    assert seen["models"] == ["hf:a/b", "st:c"]
    assert sorted(p.name for p in out.iterdir()) == ["0-hf_a_b.json", "1-st_c.json"]
    saved = json.loads((out / "0-hf_a_b.json").read_text())
    assert saved["coco_5k_r1"] == runs[0].results.means()["coco_5k_r1"] and "provenance" in saved
    (tmp_path / "file.json").write_text("{}")
    assert main([*argv[:-3], "-o", str(tmp_path / "file.json")]) == 2
    assert "with several --model it is a folder" in capsys.readouterr().err


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_tokenising_through_numpy_gives_the_libraries_tensors(family, clip, tmp_path):
    """hf: captions are tokenised to numpy arrays and viewed as torch tensors: the same ids, masks and dtypes as
    the tokenizer's own return_tensors="pt" (short, long and truncated, empty and non-ASCII captions)."""
    import torch
    from transformers import AutoTokenizer

    from eccv_metric.models.families.spec import load_model
    from tests.unit.model_world import tiny_siglip

    folder = clip if family == "clip" else tiny_siglip(tmp_path / "siglip")
    encoder = load_model(f"hf:{folder}", "cpu", workers=0)
    texts = ["", "a", "ünïcödé caption", caption_text(1003), " ".join(["word"] * 200), caption_text(1000) * 3]
    got = encoder.tokenize(texts)  # type: ignore[attr-defined]
    padding = "max_length" if family == "siglip" else True
    want = AutoTokenizer.from_pretrained(folder)(texts, padding=padding, truncation=True, max_length=32,
                                                 return_tensors="pt")  # fmt: skip
    assert set(got) == set(want)
    for key, tensor in want.items():
        assert got[key].dtype == tensor.dtype and torch.equal(got[key], tensor), key


def test_tokens_are_int64_whatever_numpy_gives():
    """numpy 1.x on Windows makes int32 arrays of Python ints where return_tensors="pt" gives int64: the ids and
    masks are int64 tensors all the same (an int64 array is viewed, not copied)."""
    import torch

    from eccv_metric.models.families.hf import as_tensor

    narrow = np.array([[49406, 7, 49407], [49406, 49407, 0]], dtype=np.int32)
    got = as_tensor(narrow)
    assert got.dtype == torch.int64 and got.tolist() == narrow.tolist()
    wide = narrow.astype(np.int64)
    assert as_tensor(wide).data_ptr() == wide.ctypes.data


def test_a_checkpoint_without_an_embedding_weight_is_refused(tmp_path):
    """A saved CLIP without its text projection loaded with that layer at random and gave numbers of no model."""
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    from eccv_metric.models.families.spec import load_model
    from tests.unit.model_world import tiny_clip

    folder = tiny_clip(tmp_path / "clip")
    state = load_file(folder / "model.safetensors")
    del state["text_projection.weight"]
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(EvaluationError, match=r"1 weights of CLIPModel .*\(text_projection.weight\): they would be"):
        load_model(f"hf:{folder}")
