"""The opt-in GPU decoder (``decode="gpu"``): its choices are one line each, its batches mix nvJPEG with PIL
(a CPU stand-in for nvJPEG here), the decoded path gives the PIL path's numbers when its pixels are the same,
and it has its own cache entries; the default path uses the PIL image processor.
"""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import EvaluationError

COCO = ["coco_5k", "cxc", "eccv", "coco_t2t"]


def _run(model, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    from tests.unit.model_world import run_model

    kwargs.setdefault("benchmarks", COCO)
    return run_model(model, data, world, tmp_path, **kwargs)


def _jpeg(seed: int, size: int = 16) -> bytes:
    import io

    from PIL import Image

    rng = np.random.default_rng(seed)
    out = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(out, "JPEG", quality=90)
    return out.getvalue()


def _pil_decoder(device: str = "cpu"):  # noqa: ANN202
    """A CPU stand-in for nvJPEG: PIL decodes each JPEG (a corrupt one raises RuntimeError, as nvJPEG does)."""
    from eccv_metric.models.encoding.decode import pil_tensor

    def decode_jpegs(data):  # noqa: ANN001, ANN202
        out = []
        for tensor in data:
            try:
                out.append(pil_tensor(tensor.numpy(), "x"))
            except EvaluationError as exc:
                raise RuntimeError(str(exc)) from None
        return out

    return decode_jpegs


def test_gpu_decoder_choices_are_one_line(world, data, clip, tmp_path):
    from eccv_metric.cli.model import MODEL_WORDS
    from eccv_metric.core.errors import in_words
    from eccv_metric.models.encoding.decode import check_decode
    from eccv_metric.models.families.encoder import FunctionEncoder as Encoder

    with pytest.raises(EvaluationError, match=r"^decode= must be one of pil, gpu, not 'jpeg'$"):
        _run(f"hf:{clip}", data, world, tmp_path, decode="jpeg")
    with pytest.raises(EvaluationError) as err:
        _run(f"hf:{clip}", data, world, tmp_path, decode="gpu")
    assert (
        in_words(err.value, MODEL_WORDS) == "--decode gpu decodes with nvJPEG on a CUDA device, and the model is on cpu"
    )
    bare = Encoder("python:x", ("image", "caption"), device="cuda")
    with pytest.raises(EvaluationError, match=r"^decode= gpu: python:x has no image preprocessing on tensors"):
        check_decode("gpu", bare)
    bare.tensor_preprocessing = lambda: None
    try:
        import torchvision  # noqa: F401
    except ImportError:  # here (the CPU torch): the one error naming the fix
        with pytest.raises(
            EvaluationError, match=r"^decode= gpu needs torchvision, built for your torch .*use decode= pil$"
        ):
            check_decode("gpu", bare)
    check_decode("gpu", Encoder("st:x", ("caption",), device="cpu"))  # no images to decode: nothing to check


def test_decoder_batch_mixes_jpeg_png_and_names_a_corrupt_file():
    from eccv_metric.models.encoding.decode import Decoder
    from eccv_metric.models.encoding.decode import pil_tensor
    from tests.unit.model_world import png

    calls = []
    inner = _pil_decoder()

    def counted(data):  # noqa: ANN001, ANN202
        calls.append(len(data))
        return inner(data)

    decoder = Decoder("cpu", counted, prepare=lambda images: images)
    blobs = [np.frombuffer(b, np.uint8).copy() for b in (_jpeg(1), png(2), _jpeg(3))]
    out = decoder.decode(blobs, ["a", "b", "c"])
    assert calls == [2]  # the JPEGs in one call, the PNG by PIL
    for got, blob in zip(out, blobs, strict=True):
        assert np.array_equal(got.numpy(), pil_tensor(blob, "x").numpy()) and got.dtype.is_floating_point is False
    bad = np.frombuffer(b"\xff\xd8 not a jpeg", np.uint8).copy()
    with pytest.raises(EvaluationError, match=r"^image 7 \(there\): cannot decode \("):
        decoder.decode([blobs[0], bad], ["a", "image 7 (there)"])


def test_decoded_path_gives_the_pil_numbers_with_the_same_pixels(world, data, clip, tmp_path, monkeypatch):
    """decode="gpu" with a CPU stand-in for nvJPEG and the model's own processor as its tensor preprocessing:
    bytes from the workers, decoding and preprocessing a batch ahead, the same embeddings as the PIL path, bit
    for bit; the decoder is in the cache key and the provenance."""
    from PIL import Image

    from eccv_metric.models.encoding import decode
    from eccv_metric.models.encoding.decode import Decoder

    processor = decode.load_image_processor(str(clip), "pil")  # the PIL path's (with torchvision, Auto* is not)

    def prepare(images):  # noqa: ANN001, ANN202
        import torch

        pil = [Image.fromarray(t.permute(1, 2, 0).numpy()) for t in images]
        return torch.from_numpy(np.stack([processor(images=p, return_tensors="np")["pixel_values"][0] for p in pil]))

    stand_in = Decoder("cpu", _pil_decoder(), prepare, {"decoder": "stand-in"})
    monkeypatch.setattr("eccv_metric.models.run.check_decode", lambda decode, encoder: None)
    monkeypatch.setattr("eccv_metric.models.run.gpu_decoder", lambda encoder: stand_in)
    pil = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"], save_embeddings=tmp_path / "p")
    gpu = _run(f"hf:{clip}", data, world, tmp_path, benchmarks=["coco_5k"], decode="gpu",
               save_embeddings=tmp_path / "g")  # fmt: skip
    name = "image_embeddings.npy"
    assert np.array_equal(np.load(tmp_path / "p" / "coco_5k" / name), np.load(tmp_path / "g" / "coco_5k" / name))
    assert gpu.results.means() == pil.results.means()
    assert (pil.provenance["decode"], gpu.provenance["decode"]) == ("pil", "gpu")
    images = "images.image"
    assert not gpu.provenance["items"][images]["cached"]  # not served from the PIL run's entry
    assert gpu.provenance["items"][images]["cache"] != pil.provenance["items"][images]["cache"]
    assert gpu.provenance["items"]["captions.caption"]["cached"]  # captions do not depend on the decoder
    assert decode.RawImages([("file", str(tmp_path / "none.jpg"))], np.asarray([5]))[0][2].startswith(
        "image 5 (" + str(tmp_path / "none.jpg") + "): cannot read (FileNotFoundError"
    )


def test_default_path_uses_the_pil_image_processor(clip, monkeypatch):
    """Where transformers would pick its torchvision backend, the default path loads the PIL one (with
    torchvision installed, as on a GPU machine, the real case; here, a stand-in for it)."""
    from transformers import AutoImageProcessor

    from eccv_metric.models.encoding import decode

    auto = AutoImageProcessor.from_pretrained(clip)
    if decode.is_torch_backend(auto):  # torchvision installed: transformers picked its fast processor
        swapped = decode.pil_image_processor(str(clip), auto)
        assert not decode.is_torch_backend(swapped) and swapped.to_dict()["crop_size"] == auto.to_dict()["crop_size"]
    loaded = decode.load_image_processor(str(clip), "pil")
    assert decode.pil_image_processor(str(clip), loaded) is loaded  # a PIL processor already: kept
    monkeypatch.setattr(decode, "is_torch_backend", lambda ip: ip is loaded)  # as if it were the torchvision one
    again = decode.pil_image_processor(str(clip), loaded)
    assert again is not loaded and type(again).__name__ in ("CLIPImageProcessorPil", "CLIPImageProcessor")
    assert again.to_dict()["crop_size"] == loaded.to_dict()["crop_size"]


def test_open_clip_transform_on_tensors():
    import torch

    from eccv_metric.models.encoding.decode import open_clip_tensor_preprocessing

    class Resize:
        def __call__(self, x):  # noqa: ANN001, ANN204
            return x[:, :4, :4]

    class ToTensor:
        pass

    class Normalize:
        def __call__(self, x):  # noqa: ANN001, ANN204
            return x - 0.5

    def _convert_to_rgb(image):  # noqa: ANN001, ANN202
        raise AssertionError("not on tensors")

    compose = type("Compose", (), {"transforms": [Resize(), _convert_to_rgb, ToTensor(), Normalize()]})()
    prepare, describe = open_clip_tensor_preprocessing(compose)
    images = [torch.full((3, 6, 6), 255, dtype=torch.uint8), torch.zeros((3, 5, 7), dtype=torch.uint8)]
    out = prepare(images)
    assert out.shape == (2, 3, 4, 4) and out[0].eq(0.5).all() and out[1].eq(-0.5).all()
    assert describe["on"] == "tensors"
    compose.transforms.append(type("RandomCrop", (), {})())
    with pytest.raises(
        EvaluationError, match=r"^decode= gpu: open_clip's transform step RandomCrop has no tensor form"
    ):
        open_clip_tensor_preprocessing(compose)


def test_open_clip_tensor_description_is_the_same_in_every_process():
    """The description goes into the cache key and the shared-decode key: torchvision's ``Compose`` repr shows
    open_clip's ``_convert_to_rgb`` step as ``<function _convert_to_rgb at 0x...>``, an address that moves from
    process to process (every ``decode="gpu"`` run of an open_clip model would miss the cache)."""
    from eccv_metric.models.encoding.decode import open_clip_tensor_preprocessing

    def _convert_to_rgb(image):  # noqa: ANN001, ANN202
        return image

    class Compose:  # as torchvision's: one line per step
        def __init__(self, transforms):  # noqa: ANN001, ANN204
            self.transforms = transforms

        def __repr__(self) -> str:
            return "Compose(\n" + "".join(f"    {t}\n" for t in self.transforms) + ")"

    _, describe = open_clip_tensor_preprocessing(Compose([_convert_to_rgb]))
    assert " at 0x" not in describe["transform"] and "_convert_to_rgb" in describe["transform"]
