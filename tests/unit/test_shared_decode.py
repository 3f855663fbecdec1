"""Several models, one decode (issue 40, item 3): images are decoded once per distinct preprocessing and fed to
every model sharing it; each model gets exactly the numbers, embeddings and cache entries of a run of its own.

The decodes are counted where they happen (``ImageItems.__getitem__``: one call per image read, decoded and
prepared; workers=0 keeps it in this process)."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric.models.encoding.encode import ImageItems
from eccv_metric.models.many import evaluate_models
from eccv_metric.models.many import model_slug
from tests.unit.model_world import pixel_folder
from tests.unit.model_world import run_model
from tests.unit.model_world import tiny_clip
from tests.unit.model_world import tiny_siglip
from tests.unit.model_world import tiny_st

IMAGES = "images.image"


@pytest.fixture
def decodes(monkeypatch):
    """Every image decoded (and prepared) in this process, in order."""
    seen: list[int] = []
    real = ImageItems.__getitem__

    def counted(self, i):  # noqa: ANN001, ANN202
        seen.append(int(self.ids[i]))
        return real(self, i)

    monkeypatch.setattr(ImageItems, "__getitem__", counted)
    return seen


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two CLIPs with different weights and the same image processor, a SigLIP (another processor), a text model."""
    root = tmp_path_factory.mktemp("models")
    return [
        f"hf:{tiny_clip(root / 'clip_a', seed=0)}",
        f"hf:{tiny_clip(root / 'clip_b', seed=1)}",
        f"hf:{tiny_siglip(root / 'siglip', seed=2)}",
        f"st:{tiny_st(root / 'st', seed=3)}",
    ]


def _many(models, data, world, tmp_path, **kwargs):  # noqa: ANN001, ANN202
    options = {"resources": world.resources(), "workers": 0, "batch_size": 8, "text_batch_size": 8, "benchmarks": None}
    return evaluate_models(models, data, n_resamples=20, **{**options, **kwargs})


def _images(world) -> int:  # noqa: ANN001
    return len(world.image_ids)


def test_models_sharing_a_preprocessing_decode_once_and_get_their_own_numbers(world, data, models, tmp_path, decodes):
    """The two CLIPs decode once; each model's numbers and embeddings are those of a run of its own, bit for bit;
    the second CLIP's provenance says whose decode fed it; its cache entries are its own (a later run of it alone
    reads them, decoding nothing)."""
    together = _many(models, data, world, tmp_path, cache_dir=tmp_path / "cache", save_embeddings=tmp_path / "many")
    n = _images(world)
    assert len(decodes) == 2 * n  # the CLIPs' decode, the SigLIP's (the text model has no images)
    assert sorted(decodes[:n]) == sorted(world.image_ids) == sorted(decodes[n:])
    fed = together[1].provenance["items"][IMAGES]
    assert fed["shared_decode"] == {"items": n, "decoded_by": {models[0]: n}} and fed["encoded"] == n
    assert "shared_decode" not in together[0].provenance["items"][IMAGES]
    assert "shared_decode" not in together[2].provenance["items"][IMAGES]
    for k, spec in enumerate(models):
        alone = run_model(spec, data, world, tmp_path, cache=False, save_embeddings=tmp_path / f"alone{k}")
        assert together[k].results.means() == alone.results.means(), spec
        assert together[k].provenance["model"] == spec and together[k].skipped == alone.skipped
        for group in (tmp_path / f"alone{k}").iterdir():
            for path in group.iterdir():
                got = np.load(tmp_path / "many" / model_slug(k, spec) / group.name / path.name)
                assert np.array_equal(got, np.load(path)), (spec, group.name, path.name)
    decodes.clear()
    again = run_model(models[1], data, world, tmp_path, cache_dir=tmp_path / "cache")
    assert decodes == [] and again.provenance["items"][IMAGES]["cached"]
    assert again.results.means() == together[1].results.means()


def test_a_model_that_waits_loaded_counts_no_wait_in_its_steps(world, data, models, tmp_path, monkeypatch):
    """Provenance ``step_seconds``: the second CLIP, loaded with the first, waits while the first runs (its
    scoring made 0.5 s longer here); its ``seconds`` hold the wait, none of its steps does."""
    import time

    from eccv_metric.models import run as run_module

    real, calls = run_module.score, []

    def first_slow(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "score", first_slow)
    first, second = (r.provenance for r in _many(models[:2], data, world, tmp_path, cache=False))
    assert second["items"][IMAGES]["shared_decode"]  # loaded together: it waited
    assert first["step_seconds"]["score"] >= 0.5
    assert second["seconds"] - sum(second["step_seconds"].values()) >= 0.49
    for steps in (first["step_seconds"], second["step_seconds"]):
        assert set(steps) == {"open", "embed", "score"} and min(steps.values()) >= 0


def test_share_decode_false_decodes_per_model(world, data, models, tmp_path, decodes):
    _many(models[:2], data, world, tmp_path, cache=False, share_decode=False)
    assert len(decodes) == 2 * _images(world)


def test_a_model_whose_images_are_cached_leaves_the_decode_to_the_next(world, data, models, tmp_path, decodes):
    """The first CLIP's images are cached: it decodes nothing, the second decodes once and feeds a third."""
    third = f"hf:{tiny_clip(tmp_path / 'clip_c', seed=5)}"
    run_model(models[0], data, world, tmp_path, cache_dir=tmp_path / "cache")
    decodes.clear()
    runs = _many([models[0], models[1], third], data, world, tmp_path, cache_dir=tmp_path / "cache")
    n = _images(world)
    assert len(decodes) == n
    assert runs[0].provenance["items"][IMAGES]["cached"]
    assert runs[2].provenance["items"][IMAGES]["shared_decode"]["decoded_by"] == {models[1]: n}
    alone = run_model(third, data, world, tmp_path, cache=False)
    assert runs[2].results.means() == alone.results.means()


def test_batches_the_first_model_resumed_are_decoded_by_the_next(world, data, models, tmp_path, decodes, monkeypatch):
    """The first CLIP resumes half its image batches from an interrupted run: the second is fed the batches the
    first encodes now and decodes the others itself, feeding them to a third, whose provenance names both
    decodes; each gives its own run's numbers."""
    from transformers import CLIPModel

    real = CLIPModel.get_image_features
    calls = {"n": 0}

    def dies_after_two(self, *args, **kwargs):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt  # killed mid-way, after two finished image batches
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CLIPModel, "get_image_features", dies_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_model(models[0], data, world, tmp_path, cache_dir=tmp_path / "cache")
    monkeypatch.setattr(CLIPModel, "get_image_features", real)
    decodes.clear()
    third = f"hf:{tiny_clip(tmp_path / 'clip_c', seed=5)}"
    runs = _many([*models[:2], third], data, world, tmp_path, cache_dir=tmp_path / "cache")
    first, second, last = (r.provenance["items"][IMAGES] for r in runs)
    n = _images(world)
    assert first["resumed"] == 16 and second["shared_decode"] == {"items": n - 16, "decoded_by": {models[0]: n - 16}}
    assert last["shared_decode"] == {"items": n, "decoded_by": {models[0]: n - 16, models[1]: 16}}
    assert len(decodes) == n  # the first's rest, then the second's resumed part decoded for it and the third
    for k, spec in enumerate([*models[:2], third]):
        alone = run_model(spec, data, world, tmp_path, cache=False)
        assert runs[k].results.means() == alone.results.means()


def test_a_gallery_part_of_its_own_is_fed_too(world, data, models, tmp_path, decodes):
    """MSCOCO-FG's gallery holds the coco_5k images: each model encodes only the rest, as a subset of its own;
    the second CLIP is fed that subset too, and both give their own runs' numbers."""
    names, pixels = ["coco_5k", "mscoco_fg"], [pixel_folder(world, tmp_path / "pixels")]
    runs = _many(models[:2], data, world, tmp_path, benchmarks=names, images=pixels, cache=False)
    gallery = runs[1].provenance["items"]["mscoco_fg_gallery.image"]
    rest = gallery["items"] - gallery["shared"]
    assert 0 < rest < gallery["items"] and gallery["shared_decode"] == {"items": rest, "decoded_by": {models[0]: rest}}
    assert len(decodes) == _images(world) + rest
    for k in range(2):
        alone = run_model(models[k], data, world, tmp_path, benchmarks=names, images=pixels, cache=False)
        assert runs[k].results.means() == alone.results.means()


@pytest.mark.parametrize(("flag", "shared"), [([], True), (["--decode-per-model"], False)])
def test_cli_decode_per_model_flag(world, data, tmp_path, monkeypatch, flag, shared):
    from eccv_metric.cli.main import main

    seen = {}

    def fake(models, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr("eccv_metric.models.many.evaluate_models_request", fake)
    argv = ["evaluate", "--model", "hf:a/b", "--model", "hf:c/d", "--data", str(data), "--quiet", *flag]
    with pytest.raises(SystemExit):
        main(argv)
    assert seen["share_decode"] is shared


def test_only_models_sharing_a_preprocessing_are_loaded_together(world, data, models, tmp_path, monkeypatch):
    """Models are grouped by their image preprocessing read before the weights load: the two CLIPs are loaded
    together, the SigLIP, the text model and a Python object each alone (at most two models in memory), and
    the results come back in the given order."""
    from eccv_metric.models import many
    from tests.unit.model_world import Counting

    alive, most, order = [0], [0], []
    real_open, real_finish = many.open_run, many.finish_run

    def counted_open(model, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        alive[0] += 1
        most[0] = max(most[0], alive[0])
        order.append(model)
        return real_open(model, *args, **kwargs)

    def counted_finish(run):  # noqa: ANN001, ANN202
        alive[0] -= 1
        return real_finish(run)

    monkeypatch.setattr(many, "open_run", counted_open)
    monkeypatch.setattr(many, "finish_run", counted_finish)
    counting = Counting()
    given = [models[0], models[2], models[1], models[3], counting]
    runs = _many(given, data, world, tmp_path, cache=False)
    assert most[0] == 2 and alive[0] == 0
    assert order == [models[0], models[1], models[2], models[3], counting]  # the CLIPs' group first
    assert [r.provenance["model"] for r in runs[:4]] == given[:4]
    assert runs[2].provenance["items"][IMAGES]["shared_decode"]["decoded_by"] == {models[0]: _images(world)}


def test_the_preprocessing_read_before_loading_is_the_loaded_models(models):
    """What groups the models (read before the weights) is what the loaded model declares (what shares)."""
    import json

    from eccv_metric.models.families.registry import LoadOptions
    from eccv_metric.models.families.spec import image_key
    from eccv_metric.models.families.spec import load_model

    for spec in models[:3]:
        loaded = load_model(spec, "cpu", workers=0)
        assert image_key(spec, LoadOptions("cpu")) == json.dumps(loaded.image_preprocessing, sort_keys=True)
    assert image_key(models[3], LoadOptions("cpu")) is None  # sentence-transformers: not known before loading
    assert image_key(object(), LoadOptions("cpu")) is None


def test_a_model_that_fails_on_a_fed_batch_is_named(world, data, models, tmp_path, monkeypatch):
    """The second CLIP's forward pass fails on the first CLIP's prepared batch: one error naming the second
    model, the batch and whose decode fed it, with the way out in the caller's words."""
    from transformers import CLIPModel

    from eccv_metric import EvaluationError
    from eccv_metric.cli.model import MODEL_WORDS
    from eccv_metric.core.errors import in_words

    real = CLIPModel.get_image_features

    def second_fails(self, *args, **kwargs):  # noqa: ANN001, ANN202
        if self.config.name_or_path.endswith("clip_b"):
            raise RuntimeError("CUDA out of memory.\nTried to allocate 2 GiB")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CLIPModel, "get_image_features", second_fails)
    with pytest.raises(EvaluationError) as err:
        _many(models[:2], data, world, tmp_path, cache=False)
    message = str(err.value)
    assert message.startswith(f"{models[1]} on ") and f"(fed {models[0]}'s decode)" in message
    assert "RuntimeError: CUDA out of memory.)" in message and "\n" not in message
    assert in_words(err.value, MODEL_WORDS).endswith("run it alone, or with --decode-per-model")


def test_models_known_only_once_loaded_join_the_ones_before_them(world, data, models, tmp_path, decodes, monkeypatch):
    """With nothing known before loading (as for open_clip), a model joins the models loaded just before it when
    it shares their decode: CLIP, CLIP, SigLIP, CLIP decode three times (the last CLIP follows the SigLIP)."""
    from eccv_metric.models import many

    monkeypatch.setattr(many, "image_key", lambda model, options: None)
    third = f"hf:{tiny_clip(tmp_path / 'clip_c', seed=5)}"
    runs = _many([models[0], models[1], models[2], third], data, world, tmp_path, cache=False)
    n = _images(world)
    assert len(decodes) == 3 * n
    assert runs[1].provenance["items"][IMAGES]["shared_decode"]["decoded_by"] == {models[0]: n}
    assert "shared_decode" not in runs[3].provenance["items"][IMAGES]
    alone = run_model(models[1], data, world, tmp_path, cache=False)
    assert runs[1].results.means() == alone.results.means()


def test_a_model_run_is_released_before_the_next_one_loads(world, data, models, tmp_path, monkeypatch):
    """Models already run are released before the next model loads (nothing but the models held to share a
    decode stays loaded): a model known only once loaded that ran before a known group, and a group of such
    models run once the next one does not share with them."""
    import gc
    import weakref

    from eccv_metric.models import many

    refs: list = []
    alive: list[int] = []
    real_open, real_key = many.open_run, many.image_key

    def counted_open(model, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        gc.collect()
        alive.append(sum(ref() is not None for ref in refs))
        run = real_open(model, *args, **kwargs)
        refs.append(weakref.ref(run.encoder))
        return run

    monkeypatch.setattr(many, "open_run", counted_open)
    # the SigLIP as if known only once loaded: run alone, then the CLIPs' group loads
    monkeypatch.setattr(many, "image_key", lambda m, options: None if m == models[2] else real_key(m, options))
    _many([models[2], models[0], models[1]], data, world, tmp_path, cache=False)
    assert alive == [0, 0, 1]
    # nothing known before loading: CLIP, CLIP held; the SigLIP loads beside them, then they run; the text model
    # loads beside the SigLIP alone
    monkeypatch.setattr(many, "image_key", lambda model, options: None)
    refs.clear()
    alive.clear()
    _many([models[0], models[1], models[2], models[3]], data, world, tmp_path, cache=False)
    assert alive == [0, 1, 2, 1]
