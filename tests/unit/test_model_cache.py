"""The embedding cache never scores what it does not hold: its key covers everything that changes an embedding
(the tokenizer in full, the items' contents), and an entry is checked before use (its stored key, rows,
dimensions, readable files, the checksum of its array); one that does not match is named in one warning line
and encoded afresh.

Each reference number is a run without the cache (``cache=False``) on the same model and items.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from eccv_metric.models.cache.entries import CacheWarning
from eccv_metric.models.cache.entries import batch_name
from tests.unit.model_world import Counting
from tests.unit.model_world import png
from tests.unit.model_world import run_model
from tests.unit.model_world import write_data

BENCH = ["coco_5k", "coco_t2t"]


def _means(model: str, data: Path, world, tmp_path: Path, **kwargs):  # noqa: ANN001, ANN202
    return run_model(model, data, world, tmp_path, benchmarks=BENCH, **kwargs)


def _swap_tokens(folder: Path, a: str = "a", b: str = "e") -> None:
    """The tokenizer changed in place (same weights): two characters trade their token ids in tokenizer.json."""
    path = folder / "tokenizer.json"
    spec = json.loads(path.read_text())
    vocab = spec["model"]["vocab"]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    path.write_text(json.dumps(spec))


def _an_edit_in_place_is_not_served(edit, world, data, clip, tmp_path) -> None:  # noqa: ANN001
    """``edit`` changes a copy of the model folder in place (the weight files untouched): the run after it is
    not read from the cache, its caption embeddings differ from the stale ones and equal a run without cache."""
    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    before = _means(f"hf:{folder}", data, world, tmp_path, save_embeddings=tmp_path / "a")
    edit(folder)
    after = _means(f"hf:{folder}", data, world, tmp_path, save_embeddings=tmp_path / "b")
    fresh = _means(f"hf:{folder}", data, world, tmp_path, cache=False, save_embeddings=tmp_path / "c")
    assert not after.provenance["items"]["captions.caption"]["cached"]
    old, new, ref = (np.load(tmp_path / d / "coco_5k" / "caption_embeddings.npy") for d in "abc")
    assert not np.array_equal(old, new)  # the change matters: the stale entry would give other numbers
    assert np.array_equal(new, ref)
    assert after.results.means() == fresh.results.means()
    assert before.provenance["identity"]["weights"] == after.provenance["identity"]["weights"]


def test_a_tokenizer_changed_in_place_is_not_served_from_the_cache(world, data, clip, tmp_path):
    _an_edit_in_place_is_not_served(_swap_tokens, world, data, clip, tmp_path)


def test_a_model_config_changed_in_place_is_not_served_from_the_cache(world, data, clip, tmp_path):
    """config.json edited beside the same weight files (a layer-norm epsilon, as a fine-tune's export may
    change it): the embeddings change, so the cache entry of the old config is not used."""

    def edit_config(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        config["text_config"]["layer_norm_eps"] = 0.5
        config["vision_config"]["layer_norm_eps"] = 0.5
        (folder / "config.json").write_text(json.dumps(config))

    _an_edit_in_place_is_not_served(edit_config, world, data, clip, tmp_path)


def _entry(out, label: str) -> Path:  # noqa: ANN001
    return Path(out.provenance["items"][label]["cache"])


def _replace(entry: Path, other: Path) -> None:
    """A cache folder copied or synced over another: ``entry`` now holds ``other``'s files."""
    shutil.rmtree(entry)
    shutil.copytree(other, entry)


@pytest.mark.parametrize("origin", ["model", "tokenizer"])
def test_an_entry_from_another_model_or_tokenizer_is_not_used(origin, world, data, clip, tmp_path):
    """The same spec (a folder) once held other weights or another tokenizer; that run's entry is copied over
    this one's: named (the first part of the key that differs) and encoded afresh."""
    from tests.unit.model_world import tiny_clip

    folder = Path(shutil.copytree(clip, tmp_path / "clip"))
    spec = f"hf:{folder}"
    kept = {name: (folder / name).read_bytes() for name in ("model.safetensors", "tokenizer.json")}
    if origin == "model":
        other = tiny_clip(tmp_path / "other", seed=1)
        shutil.copy(other / "model.safetensors", folder / "model.safetensors")
    else:
        _swap_tokens(folder)
    theirs = _means(spec, data, world, tmp_path)
    for name, content in kept.items():
        (folder / name).write_bytes(content)
    mine = _means(spec, data, world, tmp_path)
    _replace(_entry(mine, "captions.caption"), _entry(theirs, "captions.caption"))
    differs = "weights" if origin == "model" else "preprocessing.processor"
    with pytest.warns(CacheWarning) as caught:
        again = _means(spec, data, world, tmp_path)
    [line] = [str(w.message) for w in caught if w.category is CacheWarning]
    entry = _entry(mine, "captions.caption")
    assert line == f"cache {entry} does not match the model and items it stands for (key.model.{differs} differs): " + (
        "re-encoding"
    )
    assert again.results.means() == _means(spec, data, world, tmp_path, cache=False).results.means()
    assert not again.provenance["items"]["captions.caption"]["cached"]
    third = _means(spec, data, world, tmp_path)  # the entry was replaced by the right one
    assert third.provenance["items"]["captions.caption"]["cached"] and third.results.means() == again.results.means()


def _damage(kind: str, entry: Path, other: Path) -> str:
    """Damage a finished entry; returns what the warning names."""
    if kind == "items":  # another item set's entry (100 captions where 20 images belong)
        _replace(entry, other)
        return r"the model and items it stands for \(key\.\w+ differs\)"
    if kind == "rows":  # its key, another set's array
        shutil.copy(other / "embeddings.npy", entry / "embeddings.npy")
        return r"the items \(100 rows for 20 items\)"
    if kind == "short":
        data = (entry / "embeddings.npy").read_bytes()
        (entry / "embeddings.npy").write_bytes(data[: len(data) // 2])
        return r"its files \(unreadable: ValueError\)"
    if kind == "meta":
        (entry / "meta.json").write_text("{not json")
        return r"its files \(unreadable: JSONDecodeError\)"
    if kind in ("rolled", "flipped"):  # a valid, finite array of the right shape, meta.json intact: not what was kept
        values = np.load(entry / "embeddings.npy")
        if kind == "rolled":  # rows moved by one
            np.save(entry / "embeddings.npy", np.roll(values, 1, axis=0))
        else:  # one bit of one value changed on disk (the lowest of its mantissa: still finite, nearly equal)
            data = bytearray((entry / "embeddings.npy").read_bytes())
            data[len(data) - values.nbytes + 4 * 17] ^= 1
            (entry / "embeddings.npy").write_bytes(bytes(data))
        return r"its checksum \(the array's sha256 is not the one meta\.json records: its rows or bytes changed\)"
    if kind == "earlier":  # written by the version before checksums: re-encoded once
        meta = json.loads((entry / "meta.json").read_text())
        del meta["array_sha256"]
        (entry / "meta.json").write_text(json.dumps(meta))
        return r"its checksum \(none recorded: written by an earlier version\)"
    values = np.load(entry / "embeddings.npy")  # "nan": a finite array no longer
    values[3, 0] = np.nan
    np.save(entry / "embeddings.npy", values)
    return r"finite embeddings \(NaN or inf rows\)"


@pytest.mark.parametrize("kind", ["items", "rows", "short", "meta", "nan", "rolled", "flipped", "earlier"])
def test_an_entry_of_other_items_or_damaged_is_not_used(kind, world, data, clip, tmp_path):
    first = _means(f"hf:{clip}", data, world, tmp_path)
    entry = _entry(first, "images.image")
    why = _damage(kind, entry, _entry(first, "captions.caption"))
    with pytest.warns(CacheWarning, match=rf"^cache {entry} does not match {why}: re-encoding$") as caught:
        again = _means(f"hf:{clip}", data, world, tmp_path)
    assert len([w for w in caught if w.category is CacheWarning]) == 1
    assert again.results.means() == first.results.means()
    assert not again.provenance["items"]["images.image"]["cached"]
    if kind == "earlier":  # re-encoded once: the entry written again, with its checksum, is used
        third = _means(f"hf:{clip}", data, world, tmp_path)
        assert third.provenance["items"]["images.image"]["cached"] and third.results.means() == first.results.means()


def test_a_damaged_or_foreign_batch_of_an_interrupted_run_is_encoded_again(world, data, clip, tmp_path):
    """The batches an interrupted run left (written here as the store writes them): a damaged one is encoded
    again, the others kept; batches of another key (another run's) are all encoded again."""
    first = _means(f"hf:{clip}", data, world, tmp_path)
    entry = _entry(first, "images.image")
    payload = json.loads((entry / "meta.json").read_text())["key"]
    values = np.load(entry / "embeddings.npy")

    def interrupted(key: dict, batches: dict[str, bytes | np.ndarray]) -> None:
        shutil.rmtree(entry)
        (entry / "partial").mkdir(parents=True)
        (entry / "partial" / "key.json").write_text(json.dumps(key))
        for name, content in batches.items():
            if isinstance(content, bytes):
                (entry / "partial" / name).write_bytes(content)
            else:
                np.save(entry / "partial" / name, content)

    first_batch, second = batch_name((0, 8), values[:8]), batch_name((8, 16), values[8:16])
    interrupted(payload, {first_batch: values[:8], second: b"\x93NUMPY broken"})
    with pytest.warns(CacheWarning, match=r"does not match a finished batch \(unreadable: ValueError\): re-encoding$"):
        again = _means(f"hf:{clip}", data, world, tmp_path)
    assert again.provenance["items"]["images.image"]["resumed"] == 8
    assert again.results.means() == first.results.means()
    # a valid batch whose rows moved (the checksum in its name is the kept rows'): encoded again, the other kept
    interrupted(payload, {first_batch: np.roll(values[:8], 1, axis=0), second: values[8:16]})
    with pytest.warns(CacheWarning, match=rf"{first_batch} does not match its checksum \(the array's sha256 is not the "
                      r"one its file name records: its rows or bytes changed\): re-encoding$") as caught:  # fmt: skip
        again = _means(f"hf:{clip}", data, world, tmp_path)
    assert len([w for w in caught if w.category is CacheWarning]) == 1
    assert again.provenance["items"]["images.image"]["resumed"] == 8
    assert again.results.means() == first.results.means()
    # an earlier version's batches (no checksum in their names): the folder named once, every batch encoded again
    interrupted(payload, {"000000000-000000008.npy": values[:8], "000000008-000000016.npy": values[8:16]})
    with pytest.warns(CacheWarning, match=r"partial does not match its batches' checksums \(none recorded: written by "
                      r"an earlier version\): re-encoding$") as caught:  # fmt: skip
        again = _means(f"hf:{clip}", data, world, tmp_path)
    assert len([w for w in caught if w.category is CacheWarning]) == 1
    assert again.provenance["items"]["images.image"]["resumed"] == 0
    assert again.results.means() == first.results.means()
    interrupted({**payload, "precision": "bf16"}, {first_batch: values[:8]})  # another run's batches
    with pytest.warns(CacheWarning, match=r"partial does not match the model and items it stands for \(key\.precision"):
        again = _means(f"hf:{clip}", data, world, tmp_path)
    assert again.provenance["items"]["images.image"]["resumed"] == 0
    assert again.results.means() == first.results.means()


def _same_size_png(seed: int, size: int) -> bytes:
    """Another picture whose PNG file has exactly ``size`` bytes."""
    for other in range(seed + 1, seed + 500):
        data = png(other)
        if len(data) == size:
            return data
    raise AssertionError("no PNG of that size")


@pytest.mark.parametrize("container", ["folder", "zip"])
def test_items_replaced_with_the_same_size_and_mtime_are_encoded_again(container, world, tmp_path, monkeypatch):
    """images= files replaced by others of the same size whose modification time is set back: the data digest
    follows the contents (a file's sha256, a zip member's CRC-32), so the cache is not used."""
    import eccv_metric.models.data.digests
    from eccv_metric.models.families.encoder import wrap_object

    bare = write_data(world, tmp_path / "bare", skip_pixels=tuple(world.image_ids))
    folder = tmp_path / "val2014"
    folder.mkdir()
    names = [f"COCO_val2014_{i:012d}.jpg" for i in world.image_ids]
    for i, name in zip(world.image_ids, names, strict=True):
        (folder / name).write_bytes(png(i))
    given = folder
    if container == "zip":
        given = tmp_path / "val2014.zip"
        with zipfile.ZipFile(given, "w", zipfile.ZIP_STORED) as zf:
            for name in names:
                zf.write(folder / name, f"val2014/{name}")

    def run(**kwargs):  # noqa: ANN003, ANN202
        model = wrap_object(Counting(), identity={"spec": "counting", "weights": "none"})  # cached
        return run_model(model, bare, world, tmp_path, benchmarks=["coco_5k"], images=[given], **kwargs)

    first = run()
    hashed = []
    real = eccv_metric.models.data.digests.sha256_file
    monkeypatch.setattr(eccv_metric.models.data.digests, "sha256_file", lambda p: hashed.append(p) or real(p))
    second = run()
    assert second.provenance["items"]["images.image"]["cached"] and not hashed  # remembered, nothing re-read
    target = folder / names[3]
    stat = target.stat()
    target.write_bytes(_same_size_png(world.image_ids[3], stat.st_size))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if container == "zip":
        stat = given.stat()
        with zipfile.ZipFile(given, "w", zipfile.ZIP_STORED) as zf:
            for name in names:
                zf.write(folder / name, f"val2014/{name}")
        assert given.stat().st_size == stat.st_size
        os.utime(given, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    third = run()
    assert not third.provenance["items"]["images.image"]["cached"]
    assert third.results.means() == run(cache=False).results.means()
    assert first.provenance["items"]["images.image"]["digest"] != third.provenance["items"]["images.image"]["digest"]
