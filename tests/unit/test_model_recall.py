"""A rerun whose embeddings are all cached is scored without loading the model (eccv_metric.models.cache.recall), with
the numbers, identity and cache entries of a run that loads it; anything the remembered description does not
cover loads the model.

"Not loaded" is shown by making a load fail (``run.load_model`` raising): a run that still gives its numbers
never loaded the model. The reference numbers are runs that loaded it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from eccv_metric.models import run as run_module
from eccv_metric.models.cache import recall as recall_module
from eccv_metric.models.cache.entries import CacheWarning
from tests.unit.model_world import run_model

BENCH = ["coco_5k", "coco_t2t"]


@pytest.fixture
def loads(monkeypatch):
    """The specs loaded from now on (each load still happens)."""
    seen: list[str] = []
    real = run_module.load_model

    def counting(model, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(run_module, "load_model", counting)
    return seen


def _no_load(monkeypatch) -> None:  # noqa: ANN001
    def fail(model, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise AssertionError(f"{model} was loaded")

    monkeypatch.setattr(run_module, "load_model", fail)


def _run(spec: str, data, world, tmp_path: Path, save: str, **kwargs):  # noqa: ANN001, ANN202
    kwargs.setdefault("benchmarks", BENCH)
    return run_model(spec, data, world, tmp_path, save_embeddings=tmp_path / save, **kwargs)


def _same_run(a, b, tmp_path: Path, saves: tuple[str, str]) -> None:  # noqa: ANN001
    assert a.results.means() == b.results.means()
    assert a.provenance["identity"] == b.provenance["identity"]
    for label, item in a.provenance["items"].items():
        assert b.provenance["items"][label]["cache"] == item["cache"]
    for name in ("image_embeddings.npy", "caption_embeddings.npy"):
        x, y = (np.load(tmp_path / s / "coco_5k" / name) for s in saves)
        assert np.array_equal(x, y)


def test_a_warm_rerun_gives_the_loaded_runs_numbers_without_loading_the_model(world, data, clip, tmp_path, monkeypatch):
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    assert first.provenance["model_loaded"] is True
    _no_load(monkeypatch)
    again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert again.provenance["model_loaded"] is False
    assert all(item["cached"] for item in again.provenance["items"].values())
    _same_run(first, again, tmp_path, ("a", "b"))
    monkeypatch.undo()
    fresh = _run(f"hf:{clip}", data, world, tmp_path, "c", cache=False)
    assert fresh.results.means() == again.results.means()


def test_an_item_set_not_in_the_cache_loads_the_model_and_encodes_only_it(world, data, clip, tmp_path, loads):
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    shutil.rmtree(first.provenance["items"]["captions.caption"]["cache"])
    again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert loads == [f"hf:{clip}"] * 2 and again.provenance["model_loaded"] is True
    assert again.provenance["items"]["images.image"]["cached"]
    assert not again.provenance["items"]["captions.caption"]["cached"]
    _same_run(first, again, tmp_path, ("a", "b"))


@pytest.mark.parametrize(
    "change",
    [{"batch_size": 4}, {"text_batch_size": 4}, {"library": True}, {"file": True}],
    ids=["batch size", "caption batch size", "a library's version", "a new file in the folder"],
)
def test_what_the_memo_does_not_cover_loads_the_model(change, world, data, clip, tmp_path, monkeypatch, loads):
    """A key that covers what the load is made from: another batching, library version or file loads again
    (batch sizes also change the cache entries; a library or a file beside the model does not, so those runs
    read their embeddings from the cache once the model has been loaded and described)."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    _run(f"hf:{folder}", data, world, tmp_path, "a")
    kwargs = {k: v for k, v in change.items() if k in ("batch_size", "text_batch_size")}
    if "library" in change:
        real = recall_module.versions
        monkeypatch.setattr(recall_module, "versions", lambda: {**real(), "transformers": "0.0.1"})
    if "file" in change:
        (folder / "README.md").write_text("a model card written after the first run\n")
    again = _run(f"hf:{folder}", data, world, tmp_path, "b", **kwargs)
    assert len(loads) == 2 and again.provenance["model_loaded"] is True


def test_an_edited_tokenizer_is_loaded_and_encoded_afresh(world, data, clip, tmp_path, monkeypatch):
    """The file an edit touched changes the key: the run loads the model (its identity changes with the
    tokenizer's serialisation) and encodes the captions again; the old entry is not served."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    first = _run(f"hf:{folder}", data, world, tmp_path, "a")
    path = folder / "tokenizer.json"
    spec = json.loads(path.read_text())
    vocab = spec["model"]["vocab"]
    vocab["a"], vocab["e"] = vocab["e"], vocab["a"]
    path.write_text(json.dumps(spec))
    again = _run(f"hf:{folder}", data, world, tmp_path, "b")
    assert again.provenance["model_loaded"] is True
    assert again.provenance["identity"] != first.provenance["identity"]
    assert not again.provenance["items"]["captions.caption"]["cached"]


def test_weights_initialised_at_load_are_never_recalled(world, data, clip, tmp_path, loads):
    from safetensors.torch import load_file
    from safetensors.torch import save_file

    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    state = load_file(folder / "model.safetensors")
    del state["logit_scale"]  # initialised at load (from the config): its weights are its tensors
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    _run(f"hf:{folder}", data, world, tmp_path, "a", benchmarks=["coco_5k"])
    again = _run(f"hf:{folder}", data, world, tmp_path, "b", benchmarks=["coco_5k"])
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    assert not (tmp_path / "cache" / recall_module.FOLDER).exists()


def test_a_damaged_entry_is_not_trusted_for_a_model_not_loaded(world, data, clip, tmp_path, loads):
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    entry = Path(first.provenance["items"]["images.image"]["cache"])
    values = np.load(entry / "embeddings.npy")
    values[3] = np.nan
    np.save(entry / "embeddings.npy", values)
    with pytest.warns(CacheWarning, match="finite embeddings"):
        again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert len(loads) == 2 and not again.provenance["items"]["images.image"]["cached"]
    _same_run(first, again, tmp_path, ("a", "b"))


def test_a_memo_of_another_key_is_not_used(world, data, clip, tmp_path, loads):
    """A memo file whose stored key is not the one asked (copied over, or a digest collision) is not read."""
    _run(f"hf:{clip}", data, world, tmp_path, "a")
    (memo,) = (tmp_path / "cache" / recall_module.FOLDER).iterdir()
    stored = json.loads(memo.read_text())
    stored["key"]["precision"] = "bf16"
    memo.write_text(json.dumps(stored))
    again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    assert json.loads(memo.read_text())["key"]["precision"] == "fp32"  # the load wrote it afresh


def test_a_load_that_describes_the_model_otherwise_is_never_recalled_again(world, data, clip, tmp_path, monkeypatch):
    """Two loads of the same files that describe the model differently (something the key does not cover
    changed what loads) mark the key: every later run loads the model."""
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    shutil.rmtree(first.provenance["items"]["captions.caption"]["cache"])  # the next run must load
    real = run_module.load_model

    def other(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        encoder = real(*args, **kwargs)
        encoder.identity = {**encoder.identity, "config": "another"}
        return encoder

    monkeypatch.setattr(run_module, "load_model", other)
    _run(f"hf:{clip}", data, world, tmp_path, "b")
    (memo,) = (tmp_path / "cache" / recall_module.FOLDER).iterdir()
    assert json.loads(memo.read_text())["description"] is None
    monkeypatch.setattr(run_module, "load_model", real)
    _run(f"hf:{clip}", data, world, tmp_path, "c")  # loads, caches under the real identity
    calls = []
    monkeypatch.setattr(run_module, "load_model", lambda *a, **k: calls.append(a) or real(*a, **k))
    last = _run(f"hf:{clip}", data, world, tmp_path, "d")
    assert len(calls) == 1 and last.provenance["model_loaded"] is True
    assert last.results.means() == first.results.means()


def test_no_cache_no_memo(world, data, clip, tmp_path, loads):
    _run(f"hf:{clip}", data, world, tmp_path, "a", cache=False)
    _run(f"hf:{clip}", data, world, tmp_path, "b", cache=False)
    assert len(loads) == 2 and not (tmp_path / "cache").exists()


def test_a_warm_sweep_loads_no_model(world, data, clip, tmp_path, monkeypatch):
    """evaluate_models: models whose embeddings are cached are scored without loading (nor reading their image
    processors to group them); each gets the numbers of its own run."""
    from eccv_metric.models import many
    from eccv_metric.models.many import evaluate_models
    from tests.unit.model_world import tiny_clip

    other = tiny_clip(tmp_path / "clip1", seed=1)
    specs = [f"hf:{clip}", f"hf:{other}"]
    kwargs = {"benchmarks": BENCH, "resources": world.resources(), "workers": 0, "n_resamples": 20,
              "batch_size": 8, "text_batch_size": 8, "cache_dir": tmp_path / "cache"}  # fmt: skip
    first = evaluate_models(specs, data, **kwargs)
    _no_load(monkeypatch)
    monkeypatch.setattr(many, "image_key", lambda *a: pytest.fail("a model was grouped for loading"))
    again = evaluate_models(specs, data, **kwargs)
    for a, b in zip(first, again, strict=True):
        assert a.results.means() == b.results.means() and b.provenance["model_loaded"] is False
        assert a.provenance["identity"] == b.provenance["identity"]
    assert first[0].results.means() != first[1].results.means()


def test_a_sweep_loads_only_the_models_it_must(world, data, clip, tmp_path, loads):
    from eccv_metric.models.many import evaluate_models
    from tests.unit.model_world import tiny_clip

    other = tiny_clip(tmp_path / "clip1", seed=1)
    kwargs = {"benchmarks": BENCH, "resources": world.resources(), "workers": 0, "n_resamples": 20,
              "batch_size": 8, "text_batch_size": 8, "cache_dir": tmp_path / "cache"}  # fmt: skip
    evaluate_models([f"hf:{clip}"], data, **kwargs)
    alone = evaluate_models([f"hf:{other}"], data, **{**kwargs, "cache": False})
    runs = evaluate_models([f"hf:{other}", f"hf:{clip}"], data, **kwargs)
    assert loads == [f"hf:{clip}", f"hf:{other}", f"hf:{other}"]
    assert [r.provenance["model_loaded"] for r in runs] == [True, False]
    assert runs[0].results.means() == alone[0].results.means()


def test_a_folder_changed_while_the_model_loads_is_not_remembered(world, data, clip, tmp_path, monkeypatch):
    """Which state of the folder the load read is not known: nothing is remembered, the next run loads."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    real = run_module.load_model
    calls = []

    def editing(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[0])
        encoder = real(*args, **kwargs)
        if len(calls) == 1:
            (folder / "README.md").write_text("written while the model loaded\n")
        return encoder

    monkeypatch.setattr(run_module, "load_model", editing)
    _run(f"hf:{folder}", data, world, tmp_path, "a")
    assert not (tmp_path / "cache" / recall_module.FOLDER).exists()
    again = _run(f"hf:{folder}", data, world, tmp_path, "b")
    assert len(calls) == 2 and again.provenance["model_loaded"] is True
    assert (tmp_path / "cache" / recall_module.FOLDER).exists()


def _memo(tmp_path: Path) -> Path:
    (memo,) = (tmp_path / "cache" / recall_module.FOLDER).iterdir()
    return memo


def _describe(memo: Path, **fields: object) -> None:
    stored = json.loads(memo.read_text())
    stored["description"].update(fields)
    memo.write_text(json.dumps(stored))


def test_a_remembered_description_the_plan_refuses_loads_the_model(world, data, clip, tmp_path, loads):
    """A description that fails the plan (here: it says the model encodes no images) is not the run's error:
    the model is loaded, and the run is the one its load gives."""
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    _describe(_memo(tmp_path), kinds=["caption"])
    again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    _same_run(first, again, tmp_path, ("a", "b"))


def test_a_load_after_a_remembered_description_plans_afresh(world, data, clip, tmp_path, loads):
    """When the cache does not answer, the loaded model's plan is its own: no benchmark skipped for what the
    remembered description said."""
    first = _run(f"hf:{clip}", data, world, tmp_path, "a", benchmarks=None)
    _describe(_memo(tmp_path), kinds=["caption"])
    shutil.rmtree(first.provenance["items"]["captions.caption"]["cache"])  # the cache cannot answer: a load
    again = _run(f"hf:{clip}", data, world, tmp_path, "b", benchmarks=None)
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    assert again.skipped == first.skipped
    assert again.results.means() == first.results.means()


@pytest.mark.parametrize(
    "fields",
    [{"kinds": "caption"}, {"device": 5}, {"similarity": "euclid"}, {"identity": "x"}, {"sort_texts": "yes"},
     {"precision": None}, {"decoder": [1]}, {"image_preprocessing": 3}, {"spec": "hf:another"}],
)  # fmt: skip
def test_a_memo_of_the_wrong_types_loads_the_model(fields, world, data, clip, tmp_path, loads):
    """A memo whose description is not what a load describes (edited, damaged) is not used: the model loads."""
    first = _run(f"hf:{clip}", data, world, tmp_path, "a")
    _describe(_memo(tmp_path), **fields)
    again = _run(f"hf:{clip}", data, world, tmp_path, "b")
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    _same_run(first, again, tmp_path, ("a", "b"))


def test_a_chat_template_edited_in_its_folder_loads_the_model(world, data, clip, tmp_path, loads):
    """transformers reads ``additional_chat_templates/`` with the tokenizer: its files are in the key."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    (folder / "additional_chat_templates").mkdir()
    template = folder / "additional_chat_templates" / "short.jinja"
    template.write_text("{{ messages[0]['content'] }}")
    _run(f"hf:{folder}", data, world, tmp_path, "a")
    template.write_text("{{ messages[-1]['content'] }}")
    again = _run(f"hf:{folder}", data, world, tmp_path, "b")
    fresh = _run(f"hf:{folder}", data, world, tmp_path, "c", cache=False)
    assert again.provenance["identity"] == fresh.provenance["identity"]
    assert len(loads) == 3 and again.provenance["model_loaded"] is True
    assert _run(f"hf:{folder}", data, world, tmp_path, "d").provenance["model_loaded"] is False


def test_the_cli_says_when_the_model_was_not_loaded(world, data, clip, tmp_path, capsys, monkeypatch):
    from eccv_metric.cli.main import main

    real = run_module.evaluate_model_request  # the world's ground truth (the CLI reads the data's own)
    monkeypatch.setattr(run_module, "evaluate_model_request",
                        lambda *a, **k: real(*a, **{**k, "resources": world.resources()}))  # fmt: skip

    argv = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--benchmarks", "coco_5k", "--workers", "0",
            "--cache-dir", str(tmp_path / "cache"), "--json"]  # fmt: skip
    assert main(argv) == 0
    first = capsys.readouterr()
    assert main(argv) == 0
    second = capsys.readouterr()
    assert "the model was not loaded" not in first.err
    assert (f"note: hf:{clip}: every embedding was read from the cache, so the model was not loaded (--no-cache "
            "loads it and encodes afresh)") in second.err.splitlines()  # fmt: skip
    one, two = json.loads(first.out), json.loads(second.out)
    assert two["provenance"]["model_loaded"] is False
    assert {k: v for k, v in one.items() if k != "provenance"} == {k: v for k, v in two.items() if k != "provenance"}


def test_a_sentence_transformers_folder_is_recalled_and_its_modules_edits_load_it(
    world, data, tmp_path, monkeypatch, loads
):
    """st: a folder whose modules sit in subfolders (1_Pooling/): a rerun is scored without loading, with the
    loaded run's numbers; an edit of a module's file (pooling mode) loads the model again: other embeddings."""
    from tests.unit.model_world import tiny_st

    folder = tiny_st(tmp_path / "st")
    bench = {"benchmarks": ["coco_t2t"]}
    first = _run(f"st:{folder}", data, world, tmp_path, "a", **bench)
    again = _run(f"st:{folder}", data, world, tmp_path, "b", **bench)
    assert loads == [f"st:{folder}"] and again.provenance["model_loaded"] is False
    assert again.results.means() == first.results.means()
    assert again.provenance["identity"] == first.provenance["identity"]
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    if "pooling_mode" in config:  # sentence-transformers >= 6
        config["pooling_mode"] = "max"
    else:
        config["pooling_mode_mean_tokens"], config["pooling_mode_max_tokens"] = False, True
    pooling.write_text(json.dumps(config))
    edited = _run(f"st:{folder}", data, world, tmp_path, "c", **bench)
    assert len(loads) == 2 and edited.provenance["model_loaded"] is True
    assert edited.provenance["identity"]["preprocessing"] != first.provenance["identity"]["preprocessing"]
    old, new = (np.load(tmp_path / d / "coco_5k" / "caption_embeddings.npy") for d in "ac")
    assert not np.array_equal(old, new)


def test_a_folder_with_a_peft_adapter_is_known_by_its_tensors_and_never_recalled(world, data, clip, tmp_path, loads):
    """With peft installed, transformers loads an adapter folder's base model from the repo its adapter_config.json
    names: its weights are not the folder's files, so they are hashed as loaded and the model is never recalled
    (the base model's repo may move)."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "someone/base"}))
    first = _run(f"hf:{folder}", data, world, tmp_path, "a", benchmarks=["coco_5k"])
    again = _run(f"hf:{folder}", data, world, tmp_path, "b", benchmarks=["coco_5k"])
    assert first.provenance["identity"]["weights_from"] == "tensors"
    assert len(loads) == 2 and again.provenance["model_loaded"] is True
    assert again.provenance["items"]["images.image"]["cached"]  # the same tensors: the same cache entries


def test_a_sweep_asks_for_each_models_key_once_before_its_load(world, data, clip, tmp_path, monkeypatch):
    """evaluate_models plans each model and makes its key (for a Hub model: one request for its commit) once:
    the recall pass's opening is the one its load uses; the key is made again only after the load."""
    from eccv_metric.models.many import evaluate_models
    from tests.unit.model_world import tiny_clip

    other = tiny_clip(tmp_path / "clip1", seed=1)
    made: list[object] = []
    real = run_module.files_key
    monkeypatch.setattr(run_module, "files_key", lambda model, *a, **k: made.append(model) or real(model, *a, **k))
    kwargs = {"benchmarks": BENCH, "resources": world.resources(), "workers": 0, "n_resamples": 20,
              "batch_size": 8, "text_batch_size": 8, "cache_dir": tmp_path / "cache"}  # fmt: skip
    runs = evaluate_models([f"hf:{clip}", f"hf:{other}"], data, **kwargs)
    assert sorted(made) == sorted([f"hf:{clip}", f"hf:{other}"] * 2)  # before and after each load
    assert all(r.provenance["model_loaded"] for r in runs)
