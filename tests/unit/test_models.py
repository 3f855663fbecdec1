"""The model path (eccv_metric.models): tiny random models built here, the synthetic world with pixels.

Checks: the pipeline's embeddings are the model's own forward pass on its own preprocessing, item by
item, in the config's order with its ids; its numbers are evaluate(Embeddings(...)) on them; CLIP_benchmark
(its zeroshot_retrieval.evaluate, on the same model, images and captions) gives our coco_5k R@K; a second
run performs no forward pass; an interrupted run resumes to the same numbers; bad input is one error line
and leaves nothing half-written; the base install never imports torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import evaluate
from tests.unit.model_world import Counting
from tests.unit.model_world import caption_text
from tests.unit.model_world import png
from tests.unit.model_world import run_model
from tests.unit.model_world import write_data

ROOT = Path(__file__).resolve().parents[2]
COCO = ["coco_1k", "coco_5k", "cxc", "eccv", "coco_t2t", "cxc_sts", "cxc_sits"]


def test_base_install_never_imports_torch(tmp_path):
    """eccv_metric, its CLI parser and evaluate run with torch (and the model libraries) blocked."""
    code = f"""
import sys
for name in ("torch", "transformers", "sentence_transformers", "open_clip"):
    sys.modules[name] = None
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
import eccv_metric, eccv_metric.models, eccv_metric.models.run, eccv_metric.cli.main
from tests.unit.world import make_world
from pathlib import Path
world = make_world(Path({str(tmp_path)!r}))
rng = np.random.default_rng(0)
emb = eccv_metric.Embeddings(rng.normal(size=(20, 4)), rng.normal(size=(100, 4)))
r = eccv_metric.evaluate(emb, ["coco_5k_r1"], resources=world.resources())
eccv_metric.cli.main.build_parser().parse_args(["evaluate", "--model", "hf:x", "--data", "y"])
try:
    eccv_metric.models.load_model("hf:some/model")
except eccv_metric.EvaluationError as exc:
    print("ERR", exc)
heavy = ("torch", "transformers", "sentence_transformers", "open_clip")
print("OK", sorted(m for m, v in sys.modules.items() if v is not None and m.split(".")[0] in heavy))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "OK []" in out.stdout
    err = next(line for line in out.stdout.splitlines() if line.startswith("ERR"))
    assert 'pip install -e ".[models]" in the eccv-caption-hf clone' in err and "\n" not in err


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    kwargs.setdefault("benchmarks", COCO)
    return run_model(model, data, world, tmp_path, **kwargs)


def _hf_forward(folder: Path, images: list[bytes], texts: list[str], siglip: bool = False):  # noqa: ANN202
    """The model's own forward pass on its own processor: one item at a time."""
    import io

    import torch
    from PIL import Image
    from transformers import AutoModel
    from transformers import AutoProcessor

    model = AutoModel.from_pretrained(folder).eval()
    processor = AutoProcessor.from_pretrained(folder)
    pad = "max_length" if siglip else True
    rows_i, rows_t = [], []
    with torch.inference_mode():
        for data in images:
            pixels = processor(images=Image.open(io.BytesIO(data)).convert("RGB"), return_tensors="pt")
            rows_i.append(model.get_image_features(**pixels).pooler_output[0].numpy())
        for text in texts:
            tokens = processor.tokenizer([text], padding=pad, truncation=True, return_tensors="pt")
            rows_t.append(model.get_text_features(**tokens).pooler_output[0].numpy())
    return np.stack(rows_i), np.stack(rows_t)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_hf_pipeline_is_the_models_forward_pass(family, world, data, clip, tmp_path):
    from tests.unit.model_world import tiny_siglip

    folder = clip if family == "clip" else tiny_siglip(tmp_path / "siglip")
    out = _run(f"hf:{folder}", data, world, tmp_path, save_embeddings=tmp_path / "emb")
    saved = tmp_path / "emb" / "coco_5k"
    assert np.load(saved / "image_ids.npy").tolist() == world.image_ids  # the config's order, its ids
    assert np.load(saved / "caption_ids.npy").tolist() == world.caption_ids
    images, texts = _hf_forward(folder, [png(i) for i in world.image_ids], [caption_text(c) for c in world.caption_ids],
                                family == "siglip")  # fmt: skip
    got_i, got_t = np.load(saved / "image_embeddings.npy"), np.load(saved / "caption_embeddings.npy")
    np.testing.assert_allclose(got_i, _unit(images), rtol=0, atol=2e-6)
    np.testing.assert_allclose(got_t, _unit(texts), rtol=0, atol=2e-6)
    # the numbers are evaluate(Embeddings(...)) on those embeddings
    names = list(out.results)
    direct = evaluate(Embeddings(got_i, got_t), names, resources=world.resources(), n_resamples=20)
    assert direct.means() == out.results.means()
    assert out.provenance["model"] == f"hf:{folder}" and out.provenance["identity"]["weights"]
    assert {"device", "precision", "batch_size", "package", "data_revision", "seconds"} <= set(out.provenance)
    steps = out.provenance["step_seconds"]
    assert set(steps) == {"open", "embed", "score"} and min(steps.values()) >= 0
    assert sum(steps.values()) <= out.provenance["seconds"] + 0.01  # the steps are parts of the run
    assert out.provenance["ranking"] == "numpy"  # a model on the CPU: ranked by the reference engine


def test_a_gpu_run_ranks_with_torch_and_gives_the_same_numbers(world, data, clip, tmp_path, monkeypatch):
    """On a CUDA model the run ranks with torch on that device (models.score.ranking_device); forced onto the CPU's
    torch here, every per-query value equals the numpy engine's on the same embeddings."""
    import eccv_metric.models.run
    from eccv_metric.models.score import ranking_device

    assert ranking_device("cuda:1") == "cuda:1" and ranking_device("cpu") is None and ranking_device("mps") is None
    numpy_run = _run(f"hf:{clip}", data, world, tmp_path)
    monkeypatch.setattr(eccv_metric.models.run, "ranking_device", lambda device: "cpu")
    torch_run = _run(f"hf:{clip}", data, world, tmp_path)  # the same embeddings, from the cache
    assert torch_run.provenance["ranking"] == "torch on cpu"
    assert torch_run.results.per_query_json() == numpy_run.results.per_query_json()


def test_clip_benchmark_gives_our_coco_5k_recalls(world, data, clip, tmp_path):
    """CLIP_benchmark's zeroshot_retrieval.evaluate on the same model, images and captions: its R@1/5/10 = ours."""
    import io

    import torch
    from clip_benchmark.metrics import zeroshot_retrieval
    from PIL import Image
    from transformers import AutoModel
    from transformers import AutoProcessor

    out = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"])
    model = AutoModel.from_pretrained(clip).eval()
    processor = AutoProcessor.from_pretrained(clip)

    class Wrapped(torch.nn.Module):
        def encode_image(self, pixels):  # noqa: ANN001, ANN202
            return model.get_image_features(pixel_values=pixels).pooler_output

        def encode_text(self, tokens):  # noqa: ANN001, ANN202
            return model.get_text_features(**tokens).pooler_output

    by_image = {i: [caption_text(c) for c in world.caption_ids if world.caption_image[c] == i] for i in world.image_ids}
    pixels = [
        processor(images=Image.open(io.BytesIO(png(i))).convert("RGB"), return_tensors="pt") for i in world.image_ids
    ]
    rows = [(p["pixel_values"][0], by_image[i]) for p, i in zip(pixels, world.image_ids, strict=True)]
    loader = torch.utils.data.DataLoader(
        rows, batch_size=8, collate_fn=lambda b: (torch.stack([x for x, _ in b]), [t for _, t in b])
    )

    def tokenizer(texts):  # noqa: ANN001, ANN202
        return processor.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")

    theirs = zeroshot_retrieval.evaluate(Wrapped(), loader, tokenizer, "cpu", amp=False, recall_k_list=[1, 5, 10])
    ours = out.results.means()
    for k in (1, 5, 10):
        assert theirs[f"image_retrieval_recall@{k}"] == pytest.approx(ours[f"coco_5k_r{k}"]["t2i"], abs=1e-7)
        assert theirs[f"text_retrieval_recall@{k}"] == pytest.approx(ours[f"coco_5k_r{k}"]["i2t"], abs=1e-7)


def test_second_run_encodes_nothing_and_a_killed_run_resumes(world, data, clip, tmp_path, monkeypatch):
    from transformers import CLIPModel

    fresh = _run(f"hf:{clip}", data, world, tmp_path, cache=False).results.means()
    real = CLIPModel.get_image_features
    calls = {"n": 0}

    def dies_after_two(self, *args, **kwargs):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt  # killed mid-way, after two finished batches
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CLIPModel, "get_image_features", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        _run(f"hf:{clip}", data, world, tmp_path)
    partial = list((tmp_path / "cache").glob("*/partial/*.npy"))
    assert len(partial) == 2  # the images: two batches; the captions (encoded first) are finished
    assert [p.parent for p in partial[:1]] != list((tmp_path / "cache").glob("*/embeddings.npy"))[:1]
    monkeypatch.setattr(CLIPModel, "get_image_features", real)
    resumed = _run(f"hf:{clip}", data, world, tmp_path)
    assert resumed.provenance["items"]["images.image"]["resumed"] == 16  # two batches of 8 kept
    assert resumed.results.means() == fresh

    def no_forward(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a forward pass on a cached run")

    monkeypatch.setattr(CLIPModel, "get_image_features", no_forward)
    monkeypatch.setattr(CLIPModel, "get_text_features", no_forward)
    again = _run(f"hf:{clip}", data, world, tmp_path)
    assert again.results.means() == fresh
    assert all(v["cached"] for v in again.provenance["items"].values())


def test_workers_give_the_same_embeddings(world, data, clip, tmp_path):
    from eccv_metric.models import evaluate_model

    one = _run(f"hf:{clip}", data, world, tmp_path, cache=False, save_embeddings=tmp_path / "a")
    two = evaluate_model(f"hf:{clip}", data, benchmarks=["coco_5k"], resources=world.resources(), workers=2,
                         batch_size=8, text_batch_size=8, cache=False, save_embeddings=tmp_path / "b")  # fmt: skip
    for name in ("image_embeddings.npy", "caption_embeddings.npy"):
        assert np.array_equal(np.load(tmp_path / "a" / "coco_5k" / name), np.load(tmp_path / "b" / "coco_5k" / name))
    assert two.results.means()["coco_5k_r1"] == one.results.means()["coco_5k_r1"]


def test_sentence_transformers_text_model(world, data, tmp_path):
    from tests.unit.model_world import tiny_st

    st = tiny_st(tmp_path / "st")
    out = _run(f"st:{st}", data, world, tmp_path, benchmarks=None)  # default: what its items allow
    assert set(out.results.means()) == {"cxc_t2t_r1", "coco_t2t_r1", "cxc_sts_spearman", "cxc_sts_spearman_std"} | {
        f"{b}_r{k}" for b in ("cxc_t2t", "coco_t2t") for k in (5, 10)
    }
    assert "encodes no images" in out.skipped["coco_5k"]
    with pytest.raises(EvaluationError, match=r"^eccv: st:.* encodes no images \(it has texts only\)$"):
        _run(f"st:{st}", data, world, tmp_path, benchmarks=["eccv"])


class Bad:
    """A Python model with the two methods, returning what it is told to."""

    def __init__(self, image_dim: int = 4, nan: bool = False):
        self.image_dim, self.nan = image_dim, nan

    def encode_images(self, images):  # noqa: ANN001, ANN201
        out = np.ones((len(images), self.image_dim), np.float32)
        if self.nan:
            out[0, 0] = np.nan
        return out

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return np.arange(len(texts) * 4, dtype=np.float32).reshape(len(texts), 4) + 1


@pytest.mark.parametrize(
    ("model", "match"),
    [
        ("clip:ViT-B-32", r"^unknown model spec 'clip:ViT-B-32': use hf:<repo or folder>, hf-itm:<repo or "),
        (Bad(nan=True), r"returned NaN or inf for 1 of 8 items of a batch$"),
        (Bad(image_dim=3), r"image embeddings have 3 dimensions but caption embeddings 4"),
        (object(), r"has neither encode_images / encode_texts nor score_pairs"),
    ],
)
def test_bad_models_are_one_line(model, match, world, data, tmp_path):
    with pytest.raises(EvaluationError, match=match) as err:
        _run(model, data, world, tmp_path, benchmarks=["coco_5k"], save_embeddings=tmp_path / "emb")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "emb").exists()


def test_missing_and_corrupt_pixels(world, tmp_path, clip):
    missing = write_data(world, tmp_path / "missing", skip_pixels=tuple(world.image_ids[:3]))
    with pytest.raises(EvaluationError, match=r"^coco_5k: 3 of 20 images have no pixels \(3 val2014: .*images= "):
        _run(f"hf:{clip}", missing, world, tmp_path, benchmarks=["coco_5k"])
    assert not list((tmp_path / "cache").glob("*/"))  # checked before any encoding (no entry; the file digests)
    folder = tmp_path / "val2014"
    folder.mkdir()
    for i in world.image_ids[:3]:
        (folder / f"COCO_val2014_{i:012d}.jpg").write_bytes(png(i))
    ok = _run(f"hf:{clip}", missing, world, tmp_path, benchmarks=["coco_5k"], images=[tmp_path], cache=False)
    assert "coco_5k_r1" in ok.results
    (folder / f"COCO_val2014_{world.image_ids[1]:012d}.jpg").write_bytes(b"")
    (folder / f"COCO_val2014_{world.image_ids[2]:012d}.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(EvaluationError, match=rf"^image {world.image_ids[1]} \(.*\): empty image \(and 1 more in this"):
        _run(f"hf:{clip}", missing, world, tmp_path, benchmarks=["coco_5k"], images=[folder])
    finished = [json.loads(p.read_text())["key"]["items"] for p in (tmp_path / "cache").glob("*/meta.json")]
    assert finished == ["captions.caption"]  # encoded first; no image entry


def test_open_clip_adapter_shares_the_path(world, data, tmp_path, monkeypatch):
    """open_clip cannot be imported beside the CPU torch here: a stand-in module with its API (a torch model with
    encode_image / encode_text, a transform, a tokenizer) runs the adapter through the shared encoding path."""
    import types

    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.image = torch.nn.Linear(3 * 8 * 8, 6)
            self.text = torch.nn.EmbeddingBag(128, 6)

        def encode_image(self, pixels):  # noqa: ANN001, ANN202
            return self.image(pixels.flatten(1))

        def encode_text(self, tokens):  # noqa: ANN001, ANN202
            return self.text(tokens)

    def transform(image):  # noqa: ANN001, ANN202
        return torch.tensor(np.asarray(image, dtype=np.float32) / 255).permute(2, 0, 1)

    def tokenizer(texts):  # noqa: ANN001, ANN202
        return torch.tensor([[ord(c) % 128 for c in (t + " " * 40)[:40]] for t in texts])

    calls = []
    stub = types.SimpleNamespace(
        __version__="stub",
        create_model_and_transforms=lambda arch, pretrained=None, device=None: (
            calls.append((arch, pretrained)) or Model(),
            None,
            transform,
        ),
        get_tokenizer=lambda arch: tokenizer,
    )
    monkeypatch.setitem(sys.modules, "open_clip", stub)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # a stand-in's pretrained tag: nothing to download
    out = _run("open_clip:ViT-T/laion", data, world, tmp_path, benchmarks=["coco_5k"], save_embeddings=tmp_path / "e")
    assert calls == [("ViT-T", "laion")]
    model = Model().eval()
    import io

    from PIL import Image

    from tests.unit.model_world import png as make_png

    with torch.inference_mode():
        pixels = torch.stack([transform(Image.open(io.BytesIO(make_png(i))).convert("RGB")) for i in world.image_ids])
        images = model.encode_image(pixels).numpy()
        texts = model.encode_text(tokenizer([caption_text(c) for c in world.caption_ids])).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "e" / "coco_5k" / "image_embeddings.npy"), _unit(images), atol=2e-6)
    np.testing.assert_allclose(np.load(tmp_path / "e" / "coco_5k" / "caption_embeddings.npy"), _unit(texts), atol=2e-6)
    assert out.provenance["identity"]["library"] == "open_clip stub"


def test_cli_words(world, data, clip, tmp_path, capsys):
    from eccv_metric.cli.main import main

    base = ["evaluate", "--model", "hf:nowhere", "--data", str(data)]
    spec = "hf:<repo or folder>, hf-itm:<repo or folder>, open_clip:<arch>/<pretrained>, open_clip:hf-hub:<repo> or "
    spec += "st:<name or folder>"
    nowhere = tmp_path / "no"
    built = "a folder built by `eccv-caption build`"
    cases = [
        (["evaluate", "--model", "hf:x"], f"--model needs --data: {built} or its Hub dataset repo"),
        (["evaluate", "--data", str(data)], "--data is where --model's items come from: give --model SPEC too"),
        ([*base, "--scores", "s.npy"], "--model is an input of its own: drop --scores"),
        ([*base[:2], "clip:x", *base[3:], "--benchmarks", "coco_5k"], f"unknown model spec 'clip:x': use {spec}"),
        ([*base[:4], str(nowhere)], f"--data {nowhere}: neither {built} nor a Hub repo id"),
        ([*base[:2], f"hf:{clip}", *base[3:], "--precision", "fp16"], "--precision fp16 (autocast) is for a GPU"),
        ([*base[:2], f"hf:{clip}", *base[3:], "--device", "nodevice"], "--device nodevice is not usable here"),
    ]  # fmt: skip
    for argv, expected in cases:
        assert main(argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1].startswith(f"error: {expected}")


def test_an_item_several_benchmarks_share_is_encoded_once(world, data, tmp_path):
    """COCO val2014 test images are in coco_5k and in MSCOCO-FG's gallery, the original COCO captions in
    coco_5k and mscoco_fg_original_texts: each is encoded once, and the numbers are those of separate runs."""
    from eccv_metric import Resources

    fg = Resources(world.gt, fg_source=world.fg_dir).collection("mscoco_fg")
    files = fg.image_files.tolist()  # type: ignore[attr-defined]
    distractors = tmp_path / "unlabeled2017"
    distractors.mkdir()
    for i, name in zip(fg.images.ids.tolist(), files, strict=True):  # type: ignore[attr-defined]
        if not name.startswith("COCO_val2014_"):
            (distractors / name).write_bytes(png(int(i)))
    names = ["coco_5k", "mscoco_fg", "mscoco_fg_original_texts"]
    model = Counting()
    together = _run(model, data, world, tmp_path, benchmarks=names, images=[distractors], cache=False)
    n_gallery, n_test = len(files), len(world.image_ids)
    assert len(model.images) == n_gallery  # the 5K test images once, then only the distractors
    assert len(model.images) == len(set(model.images))
    originals = {caption_text(c) for c in world.caption_ids}
    assert sorted(set(model.texts) & originals) == sorted(originals)  # the original captions once
    assert sum(t in originals for t in model.texts) == len(world.caption_ids)
    assert together.provenance["items"]["mscoco_fg_gallery.image"]["shared"] == n_test
    for name in names:  # each benchmark alone encodes everything it needs: the same numbers
        alone = _run(Counting(), data, world, tmp_path, benchmarks=[name], images=[distractors], cache=False)
        means = alone.results.means()
        assert {m: together.results.means()[m] for m in means} == means


def test_a_whole_cached_item_set_is_read_not_encoded_again(world, data, clip, tmp_path):
    """MSCOCO-FG's gallery cached by a run of its own is read whole when coco_5k joins: nothing is encoded."""
    from eccv_metric import Resources

    fg = Resources(world.gt, fg_source=world.fg_dir).collection("mscoco_fg")
    distractors = tmp_path / "unlabeled2017"
    distractors.mkdir()
    for i, name in zip(fg.images.ids.tolist(), fg.image_files.tolist(), strict=True):  # type: ignore[attr-defined]
        if not name.startswith("COCO_val2014_"):
            (distractors / name).write_bytes(png(int(i)))
    alone = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["mscoco_fg"], images=[distractors])
    both = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k", "mscoco_fg"], images=[distractors])
    gallery = both.provenance["items"]["mscoco_fg_gallery.image"]
    assert gallery["encoded"] == 0 and gallery["cached"] and gallery["shared"] == 0
    means = alone.results.means()
    assert {m: both.results.means()[m] for m in means} == means
