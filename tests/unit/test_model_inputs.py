"""What the model path is given, each case checked against a reference computed apart: encoder objects that
reuse their output buffer or return what cannot be copied or stored, 16-bit images, tokenizers without a
length, the items a restricted benchmark ranks, a single ``images=`` path, a Hub without network, a source
folder given as ``--data``, ``--save-embeddings`` twice, and the CLI's words in the results file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from eccv_metric import EvaluationError
from tests.unit.model_world import Counting
from tests.unit.model_world import pixel_folder
from tests.unit.model_world import run_model
from tests.unit.model_world import write_data

ROOT = Path(__file__).resolve().parents[2]


class Reusing(Counting):
    """Counting's embeddings written into one buffer that every call returns (numpy, or a torch tensor on it)."""

    def __init__(self, torch_out: bool = False) -> None:
        super().__init__()
        self.buffer = np.zeros((8, 3), np.float32)
        self.torch_out = torch_out

    def _out(self, values: np.ndarray) -> object:
        self.buffer[: len(values)] = values
        out = self.buffer[: len(values)]
        if self.torch_out:
            import torch

            return torch.from_numpy(out)
        return out

    def encode_images(self, images):  # noqa: ANN001, ANN201
        return self._out(super().encode_images(images))

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return self._out(super().encode_texts(texts))


@pytest.mark.parametrize("torch_out", [False, True])
def test_an_encoder_reusing_its_output_buffer(torch_out, world, data, tmp_path):
    """Every batch is copied before the next call: the numbers of an encoder returning fresh arrays."""
    kwargs = {"benchmarks": ["coco_5k", "coco_t2t"], "cache": False}
    reusing = run_model(Reusing(torch_out), data, world, tmp_path, save_embeddings=tmp_path / "a", **kwargs)
    fresh = run_model(Counting(), data, world, tmp_path, save_embeddings=tmp_path / "b", **kwargs)
    for name in ("image_embeddings.npy", "caption_embeddings.npy"):
        assert np.array_equal(np.load(tmp_path / "a" / "coco_5k" / name), np.load(tmp_path / "b" / "coco_5k" / name))
    assert reusing.results.means() == fresh.results.means()


class Returns(Counting):
    """Counting's images; texts as ``make(n)`` says."""

    def __init__(self, make) -> None:  # noqa: ANN001
        super().__init__()
        self.make = make

    def encode_texts(self, texts):  # noqa: ANN001, ANN201
        return self.make(len(texts))


def _meta(n: int) -> object:
    import torch

    return torch.empty((n, 3), device="meta")


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (_meta, r"0\.\.7: cannot copy the model's output to the CPU "
                r"\(NotImplementedError: .*\); check that the model's weights are loaded"),
        (lambda n: np.full((n, 3), 1e39), r"0\.\.7: the model's values overflow float32 .* for 8 of 8 items"),
        (lambda n: np.full((n, 3), 1e-50), r"0\.\.7: the model's values underflow float32 .* for 8 of 8 items"),
        (lambda n: np.full((n, 3), 1e-41), r"0\.\.7: the model's values underflow float32"),
        (lambda n: np.full((n, 3), np.nan), r"0\.\.7: the model returned NaN or inf for 8 of 8 items of a batch$"),
    ],
)  # fmt: skip
def test_outputs_that_cannot_be_stored_are_one_line_naming_the_encoder_and_batch(make, match, world, data, tmp_path):
    model = Returns(make)
    what = r"^python:tests\.unit\.test_model_inputs\.Returns on coco_5k captions \(captions\.caption\) "
    with pytest.raises(EvaluationError, match=what + match) as err:
        run_model(model, data, world, tmp_path, benchmarks=["coco_5k"], cache=False)
    assert "\n" not in str(err.value)
    assert model.images == []  # the text side is encoded (and fails) before any image


def _sixteen_bit(path: Path, values: np.ndarray) -> Path:
    from PIL import Image

    Image.fromarray(values.astype(np.uint16)).save(path, "PNG")
    return path


def test_a_16_bit_grayscale_png_keeps_its_picture(tmp_path):
    """A real I;16 PNG: scaled by the 16-bit range (v * 255 / 65535, rounded), not clipped to white."""
    from PIL import Image

    from eccv_metric.models.encoding.encode import ImageItems

    values = np.arange(64).reshape(8, 8) * 1000 + 17
    path = _sixteen_bit(tmp_path / "deep.png", values)
    assert Image.open(path).mode.startswith("I;16")  # what PIL reads such a file as
    _, image, error = ImageItems([("file", str(path))], np.array([7]))[0]
    assert error is None and image.mode == "RGB"
    expected = np.floor(values * 255 / 65535 + 0.5).astype(np.uint8)
    for channel in range(3):
        assert np.array_equal(np.asarray(image)[:, :, channel], expected)
    assert np.asarray(image).mean() < 200  # PIL's own convert("RGB") gives 255 everywhere
    tiff = tmp_path / "float.tiff"
    Image.fromarray(np.ones((8, 8), np.float32)).save(tiff)
    _, image, error = ImageItems([("file", str(tiff))], np.array([9]))[0]
    assert image is None and error.startswith(f"image 9 ({tiff}): 32-bit float pixels (mode F) have no 8-bit range")


def test_16_bit_images_reach_the_model_scaled(world, tmp_path):
    bare = write_data(world, tmp_path / "bare", skip_pixels=tuple(world.image_ids))
    folder = tmp_path / "val2014"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in world.image_ids:
        _sixteen_bit(folder / f"COCO_val2014_{i:012d}.jpg", rng.integers(0, 65536, (8, 8)))
    model = Counting()
    run_model(model, bare, world, tmp_path, benchmarks=["coco_5k"], images=[folder], cache=False)
    means = [np.frombuffer(b, np.uint8).mean() for b in model.images]
    assert len(means) == len(world.image_ids) and max(means) < 160  # uniform noise: ~127.5 each, never white


def test_a_tokenizer_without_a_length_is_cut_to_the_models(world, data, clip, tmp_path):
    """A tokenizer_config.json without model_max_length (transformers: 1e30): texts are cut to the text model's
    max_position_embeddings (32 here), the numbers of the same tokenizer saying 32."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    del config["model_max_length"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    kwargs = {"benchmarks": ["coco_5k", "coco_t2t"], "cache": False}
    unset = run_model(f"hf:{folder}", data, world, tmp_path, save_embeddings=tmp_path / "a", **kwargs)
    told = run_model(f"hf:{clip}", data, world, tmp_path, save_embeddings=tmp_path / "b", **kwargs)
    a, b = (np.load(tmp_path / d / "coco_5k" / "caption_embeddings.npy") for d in "ab")
    assert np.array_equal(a, b)
    assert unset.results.means() == told.results.means()
    assert unset.provenance["identity"]["preprocessing"]["max_length"] == 32


def test_the_original_pool_needs_only_the_images_it_ranks(world, data, tmp_path):
    """mscoco_fg_original_pool ranks the test images only: scored from a build without the distractors' pixels,
    the numbers of a run given every gallery image."""
    model = Counting()
    pool = run_model(model, data, world, tmp_path, benchmarks=["mscoco_fg_original_pool"], cache=False)
    items = pool.provenance["items"]["mscoco_fg_gallery.image[original_pool]"]
    assert items["items"] == len(world.image_ids) == len(model.images)
    pixels = pixel_folder(world, tmp_path / "pixels")
    full = run_model(Counting(), data, world, tmp_path, benchmarks=["mscoco_fg", "mscoco_fg_original_pool"],
                     images=[pixels], cache=False)  # fmt: skip
    assert "mscoco_fg_gallery.image" in full.provenance["items"]  # the whole gallery, once
    assert pool.results.means() == {m: full.results.means()[m] for m in pool.results.means()}


def test_images_may_be_one_path(world, tmp_path):
    bare = write_data(world, tmp_path / "bare", skip_pixels=tuple(world.image_ids[:2]))
    folder = tmp_path / "val2014"
    folder.mkdir()
    from tests.unit.model_world import png

    for i in world.image_ids[:2]:
        (folder / f"COCO_val2014_{i:012d}.jpg").write_bytes(png(i))
    kwargs = {"benchmarks": ["coco_5k"], "cache": False}
    one = run_model(Counting(), bare, world, tmp_path, images=str(folder), **kwargs)
    listed = run_model(Counting(), bare, world, tmp_path, images=[folder], **kwargs)
    assert one.results.means() == listed.results.means() == run_model(Counting(), data_of(world, tmp_path), world,
                                                                      tmp_path, **kwargs).results.means()  # fmt: skip
    path = run_model(Counting(), bare, world, tmp_path, images=folder, **kwargs)
    assert path.results.means() == one.results.means()


def data_of(world, tmp_path: Path) -> Path:  # noqa: ANN001
    return write_data(world, tmp_path / "full")


def test_cli_source_folder_save_embeddings_twice_and_skipped_words(world, data, clip, tmp_path, capsys, monkeypatch):
    import eccv_metric.models.plan
    from eccv_metric.cli.main import main

    monkeypatch.setattr(eccv_metric.models.plan, "default_resources", lambda source, options=None: world.resources())
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    base = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--workers", "0", "--n-resamples", "20",
            "--batch-size", "8"]  # fmt: skip
    # a source folder (no data/<config>/*.parquet): one short line, once
    source = tmp_path / "coco"
    (source / "annotations").mkdir(parents=True)
    assert main([*base[:4], str(source)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and len(err[0].replace(str(source), "SOURCE")) < 250  # the folder named twice, once per line
    assert err[0].startswith(f"error: --data {source} is not a folder built by `eccv-caption build`")
    # --save-embeddings twice: the folder is replaced
    emb, res = tmp_path / "emb", tmp_path / "res.json"
    assert main([*base, "--save-embeddings", str(emb), "-o", str(res), "-q"]) == 0
    first = sorted(p.relative_to(emb) for p in emb.rglob("*"))
    shutil.copytree(emb / "coco_5k", emb / "stale")  # something of an earlier run that this one does not write
    assert main([*base, "--save-embeddings", str(emb), "-q"]) == 0
    assert sorted(p.relative_to(emb) for p in emb.rglob("*")) == first
    # the results file's skipped entries in the CLI's words
    skipped = json.loads(res.read_text())["provenance"]["skipped"]
    assert skipped and all("=" not in why for why in skipped.values())
    assert any("--images" in why for why in skipped.values())
    capsys.readouterr()
    # a folder that is not ours, or a file: refused, naming the flag
    (emb / "notes.txt").write_text("mine")
    assert main([*base, "--save-embeddings", str(emb)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: --save-embeddings {emb} holds notes.txt, which no earlier --save-embeddings wrote: give a new "
        "folder (an earlier one is replaced whole)"
    )
    assert (emb / "notes.txt").read_text() == "mine"
    assert main([*base, "--save-embeddings", str(emb / "notes.txt")]) == 2
    assert "--save-embeddings" in capsys.readouterr().err and (emb / "notes.txt").is_file()
