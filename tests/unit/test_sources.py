"""Where the dataset builder looks for its sources: a given folder must exist, hold some, and links are followed."""

from __future__ import annotations

import os

import pytest

from eccv_caption_dataset.sources import SourceError
from eccv_caption_dataset.sources import resolve
from eccv_metric.cli.main import main
from eccv_metric.core.files import find_below


def _sources(folder):
    """Files named like the real sources (resolve finds them by name; their content is read later, by the build)."""
    (folder / "coco" / "val2014").mkdir(parents=True)
    (folder / "coco" / "captions_val2014.json").write_text("{}")
    (folder / "coco" / "instances_val2014.json").write_text("{}")
    (folder / "coco" / "val2014" / "COCO_val2014_000000391895.jpg").write_bytes(b"\xff\xd8")
    (folder / "cxc").mkdir()
    for kind in ("sits", "sts", "sis"):
        (folder / "cxc" / f"{kind}_test.csv").write_text("caption1,caption2,agg_score\n")
    (folder / "fg").mkdir()
    (folder / "fg" / "MSCOCO_FG_ann.json").write_text("[]")
    return folder


def test_a_missing_source_dir_is_an_error_not_a_smaller_build(tmp_path, capsys):
    with pytest.raises(SourceError, match=r"source_dir= .*nope does not exist"):
        resolve(tmp_path / "nope")
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(SourceError, match="is not a folder"):
        resolve(tmp_path / "file.json")
    out = tmp_path / "out"
    assert main(["build", "--output", str(out), "--source-dir", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --source-dir ") and "does not exist" in err and err.count("\n") == 1
    assert not out.exists()


def test_a_source_dir_holding_none_of_the_sources_fails_and_says_so(tmp_path, capsys):
    (tmp_path / "src" / "unrelated").mkdir(parents=True)
    (tmp_path / "src" / "unrelated" / "notes.txt").write_text("x")
    with pytest.raises(SourceError, match=r"holds none of the sources .*captions_val2014\.json"):
        resolve(tmp_path / "src")
    assert main(["build", "--output", str(tmp_path / "out"), "--source-dir", str(tmp_path / "src")]) == 2
    err = capsys.readouterr().err
    assert "--source-dir" in err and "holds none of the sources" in err and "source_dir=" not in err
    assert not (tmp_path / "out").exists()


def test_symlinked_subfolders_are_followed(tmp_path):
    real = _sources(tmp_path / "real")
    root = tmp_path / "links"
    root.mkdir()
    for name in ("coco", "cxc", "fg"):
        os.symlink(real / name, root / name, target_is_directory=True)
    os.symlink(root, root / "loop", target_is_directory=True)  # a link back up: walked once, no endless loop
    found = resolve(root, cache_dir=tmp_path / "cache")
    assert found.captions_json == root / "coco" / "captions_val2014.json"
    assert found.instances_json == root / "coco" / "instances_val2014.json"
    assert found.cxc_dir == root / "cxc" and found.fg_dir == root
    assert found.image_dir == root / "coco" / "val2014"
    assert "captions" not in found.skipped and "cxc_ratings" not in found.skipped and "images" not in found.skipped
    assert find_below(root, "MSCOCO_FG_ann.json") == [root / "fg" / "MSCOCO_FG_ann.json"]


def test_a_direct_folder_still_resolves_as_before(tmp_path):
    root = _sources(tmp_path / "src")
    found = resolve(root, cache_dir=tmp_path / "cache")
    assert found.captions_json == root / "coco" / "captions_val2014.json" and found.cxc_dir == root / "cxc"
    assert set(found.digests) == {
        "captions_val2014.json",
        "instances_val2014.json",
        *(f"{k}_test.csv" for k in ("sits", "sts", "sis")),
    }


def test_build_help_lists_every_file_the_source_dir_is_searched_for(capsys):
    """--source-dir's help names every file resolve() looks for (the FG files too), from their own tables."""
    from eccv_metric.benchmarks.definitions import REGISTRY
    from eccv_metric.groundtruth.cxc import CXC_FILES
    from eccv_metric.groundtruth.split import WHEEL_FILES

    with pytest.raises(SystemExit):
        main(["build", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    fg = [f.name for entry in REGISTRY.collections() for f in entry.files]
    assert fg == ["MSCOCO_FG_ann.json", "MSCOCO_FG_img_filenames.npy"] + [
        "Flickr30K_FG_ann.json", "Flickr30K_FG_img_filenames.npy"
    ]  # fmt: skip
    coco = ["captions_val2014.json", "instances_val2014.json", "annotations_trainval2014.zip", "val2014.zip"]
    for name in [*fg, *CXC_FILES, *WHEEL_FILES, *coco, "COCO_val2014_*.jpg"]:
        assert name in shown, name


@pytest.mark.parametrize("stem", ["MSCOCO", "Flickr30K"])
def test_either_fg_annotation_file_is_found(tmp_path, stem):
    (tmp_path / "deep" / "fg").mkdir(parents=True)
    (tmp_path / "deep" / "fg" / f"{stem}_FG_ann.json").write_text("[]")
    assert resolve(tmp_path).fg_dir == tmp_path
