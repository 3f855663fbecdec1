"""The embedding cache's folder: one that cannot be a folder is one error naming it and the next step, before the
model loads; one that fills up (a real full disk: a small tmpfs) or cannot be written (a read-only file system)
is one warning naming it and the next step, and the run's numbers are those of a run without the cache, with
nothing half-written left. In the CLI's words with ``evaluate --model``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models import CacheWarning
from eccv_metric.models.cache.folder import CacheFolder
from tests.unit.model_world import run_model

BENCH = ["coco_5k"]
PAGE = 4096


@contextlib.contextmanager
def small_disk(folder: Path, free_pages: int | None = None, read_only: bool = False) -> Iterator[Path]:
    """A real file system of its own at ``folder``: a 3 MB tmpfs (mounting needs root: CI runs as root), filled
    until ``free_pages`` pages are left; unmounted afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode and os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root, as CI runs")
    assert mounted.returncode == 0, mounted.stderr
    try:
        if free_pages is not None:
            st = os.statvfs(folder)
            (folder / "filler").write_bytes(b"\0" * (st.f_bavail * st.f_frsize - free_pages * PAGE))
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _cache_warnings(caught) -> list[str]:  # noqa: ANN001
    return [str(w.message) for w in caught if w.category is CacheWarning]


def _numbers(out: str) -> dict:
    """The numbers of ``--json``'s output (its provenance left out: times, cache folders)."""
    printed = json.loads(out)
    printed.pop("provenance")
    return printed


def _loads_nothing(monkeypatch) -> None:  # noqa: ANN001
    import eccv_metric.models.run

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(eccv_metric.models.run, "load_model", refuse)


@pytest.mark.parametrize("where", ["file", "below a file"])
def test_a_cache_folder_that_cannot_be_one_is_one_error_before_the_model_loads(where, world, data, clip, tmp_path,
                                                                               monkeypatch, capsys):  # fmt: skip
    from eccv_metric.cli.main import main

    (tmp_path / "notes").write_text("a file")
    cache = tmp_path / "notes" if where == "file" else tmp_path / "notes" / "cache"
    what = "is a file, not a folder" if where == "file" else "cannot be made (one of its parents is a file)"
    _loads_nothing(monkeypatch)
    with pytest.raises(EvaluationError) as caught:
        run_model(f"hf:{clip}", data, world, tmp_path, benchmarks=BENCH, cache_dir=cache)
    assert str(caught.value) == f"the embedding cache {cache} {what}: give another cache_dir=, or cache=False"
    monkeypatch.setattr("eccv_metric.models.plan.default_resources", lambda source, options=None: world.resources())
    args = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--workers", "0", "--cache-dir", str(cache)]
    assert main(args) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: the embedding cache {cache} {what}: give another --cache-dir, or --no-cache"
    ]
    assert (tmp_path / "notes").read_text() == "a file"


@pytest.mark.parametrize("free_pages", [0, 2, 5])
def test_a_full_disk_is_one_warning_and_the_numbers_of_a_run_without_the_cache(free_pages, world, data, clip,
                                                                               tmp_path):  # fmt: skip
    """0 pages left: the first write (the file-digest memo) fails; 2: an entry's key.json; 5: its batches. One
    warning for the run, nothing more written after it, no temporary file left; once there is room again, the
    next run writes its entries and the one after reads them."""
    fresh = run_model(f"hf:{clip}", data, world, tmp_path, benchmarks=BENCH, cache=False).results.means()
    with small_disk(tmp_path / "disk", free_pages) as disk:
        cache = disk / "cache"
        with pytest.warns(CacheWarning) as caught:
            out = run_model(f"hf:{clip}", data, world, tmp_path, benchmarks=BENCH, cache_dir=cache)
        assert _cache_warnings(caught) == [
            f"cannot write the embedding cache {cache} (no space left on its disk: 0 bytes free): this run goes on "
            "without writing it; free space there, give another cache_dir=, or cache=False"
        ]
        assert out.results.means() == fresh
        assert not [p for p in disk.rglob("*") if p.name.endswith(".tmp")]  # nothing half-written
        assert not list(disk.rglob("meta.json"))
        (disk / "filler").unlink()
        with warnings.catch_warnings():  # what the full disk left (a folder, finished batches) is used without a word
            warnings.simplefilter("error", CacheWarning)
            again = run_model(f"hf:{clip}", data, world, tmp_path, benchmarks=BENCH, cache_dir=cache)
            third = run_model(f"hf:{clip}", data, world, tmp_path, benchmarks=BENCH, cache_dir=cache)
    assert again.results.means() == third.results.means() == fresh
    assert third.provenance["items"]["images.image"]["cached"] and third.provenance["model_loaded"] is False


def test_a_full_disk_in_the_cli_and_a_read_only_cache(world, data, clip, tmp_path, monkeypatch, capsys):
    """The CLI: the warning in its words (exit 0, the numbers printed). A read-only cache (a lab's copy): what it
    holds is read without a word; an entry it lacks is encoded, and the run says once that it cannot be written."""
    from eccv_metric.cli.main import main

    monkeypatch.setattr("eccv_metric.models.plan.default_resources", lambda source, options=None: world.resources())
    args = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--workers", "0", "--batch-size", "8",
            "--n-resamples", "20", "--benchmarks", "coco_5k", "--json"]  # fmt: skip
    assert main([*args, "--no-cache"]) == 0
    fresh = _numbers(capsys.readouterr().out)
    with small_disk(tmp_path / "disk", free_pages=5) as disk:
        assert main([*args, "--cache-dir", str(disk / "cache")]) == 0
        out, err = capsys.readouterr()
        assert _numbers(out) == fresh
        assert [line for line in err.splitlines() if "embedding cache" in line] == [
            f"warning: cannot write the embedding cache {disk / 'cache'} (no space left on its disk: 0 bytes free): "
            "this run goes on without writing it; free space there, give another --cache-dir, or --no-cache"
        ]
    with small_disk(tmp_path / "lab") as lab:
        assert main([*args, "--cache-dir", str(lab / "cache")]) == 0  # the lab's copy, filled
        capsys.readouterr()
        subprocess.run(["mount", "-o", "remount,ro", str(lab)], check=True)
        assert main([*args, "--cache-dir", str(lab / "cache")]) == 0  # read as it is: no warning
        out, err = capsys.readouterr()
        assert _numbers(out) == fresh and "embedding cache" not in err
        assert main([*args, "--cache-dir", str(lab / "cache"), "--text-batch-size", "4"]) == 0  # a new entry
        out, err = capsys.readouterr()
        assert _numbers(out) == fresh
        assert [line for line in err.splitlines() if "embedding cache" in line] == [
            f"warning: cannot write the embedding cache {lab / 'cache'} (a read-only file system): this run goes on "
            "without writing it; give another --cache-dir, or --no-cache"
        ]


def test_a_short_write_names_the_free_space(tmp_path):
    """numpy's short write (``N requested and M written``: no error number, what a full disk gave before) is
    worded as one, with the free space of the folder's disk."""
    folder = CacheFolder(tmp_path)
    free = shutil.disk_usage(tmp_path).free
    why = folder.why(OSError("400000 requested and 283616 written"))
    assert why.startswith("a write was cut short (400000 requested and 283616 written): ")
    assert why.endswith(" bytes free on its disk")
    assert abs(int(why.split(": ")[1].split()[0].replace(",", "")) - free) < 2**26  # the disk is shared
