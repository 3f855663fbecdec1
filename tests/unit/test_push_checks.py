"""What ``push`` refuses before anything is sent: folders that are not builds, repo ids without an owner."""

from __future__ import annotations

import pytest

from eccv_caption_dataset.push import check_build
from eccv_caption_dataset.push import check_repo_id
from eccv_caption_dataset.push import push
from eccv_metric import EvaluationError
from eccv_metric.cli.main import main

CARD = """---
license: mit
configs:
- config_name: positives
  data_files:
  - split: test
    path: data/positives/test-*.parquet
  default: true
- config_name: eccv-i2t-qrels
  data_files:
  - split: test
    path: data/eccv-i2t-qrels/test-*.parquet
---

# ECCV Caption
"""


def _build(folder):
    """A folder shaped like a build: the card, its license file and one Parquet file per config."""
    for config in ("positives", "eccv-i2t-qrels"):
        (folder / "data" / config).mkdir(parents=True)
        (folder / "data" / config / "test-00000-of-00001.parquet").write_bytes(b"PAR1")
    (folder / "README.md").write_text(CARD)
    (folder / "LICENSE.md").write_text("MIT")
    return folder


def test_a_build_passes_and_lists_its_files(tmp_path):
    assert check_build(_build(tmp_path / "ds")) == [
        "LICENSE.md",
        "README.md",
        "data/eccv-i2t-qrels/test-00000-of-00001.parquet",
        "data/positives/test-00000-of-00001.parquet",
    ]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: (d / "README.md").write_text("# my notes\n"), "no README.md card listing its configs"),
        (lambda d: (d / "README.md").unlink(), "no README.md card"),
        (lambda d: (d / "README.md").write_text("---\nconfigs: [\n---\n"), "no README.md card"),
        (lambda d: (d / "data/positives/test-00000-of-00001.parquet").unlink(), "names files it does not have"),
        (lambda d: (d / "model.safetensors").write_bytes(b"w"), "files a build does not write (model.safetensors)"),
        (lambda d: (d / "data" / "notes.txt").write_text("x"), "(data/notes.txt)"),
    ],
)
def test_a_folder_that_is_not_a_build_is_refused_even_in_a_dry_run(tmp_path, change, words):
    folder = _build(tmp_path / "ds")
    change(folder)
    with pytest.raises(EvaluationError, match="is not a built dataset folder") as err:
        check_build(folder)
    assert words in str(err.value)
    sent = []
    with pytest.raises(EvaluationError, match=r"dataset_dir= .* is not a built dataset folder"):
        push(folder, "me/eccv-caption", dry_run=True, log=sent.append)
    assert sent == []


def test_the_cli_names_its_flags_and_lists_nothing(tmp_path, capsys):
    assert main(["push", "--dataset-dir", str(tmp_path), "--dataset-repo", "me/x", "--dry-run"]) == 2
    out = capsys.readouterr()
    assert out.err.startswith(f"error: --dataset-dir {tmp_path} is not a built dataset folder") and not out.out
    assert out.err.count("\n") == 1
    ds = _build(tmp_path / "ds")
    assert main(["push", "--dataset-dir", str(ds), "--dataset-repo", "eccv-caption", "--dry-run"]) == 2
    out = capsys.readouterr()
    assert out.err.startswith("error: --dataset-repo 'eccv-caption' is not a Hub repo id: give <owner>/<name>")
    assert not out.out
    assert main(["push", "--space-repo", "eccv_map_at_r", "--dry-run"]) == 2
    assert "--space-repo 'eccv_map_at_r' is not a Hub repo id" in capsys.readouterr().err
    assert main(["push", "--dataset-dir", str(ds), "--dataset-repo", "me/eccv-caption", "--dry-run"]) == 0
    assert "would upload 4 files to dataset me/eccv-caption" in capsys.readouterr().out


@pytest.mark.parametrize("repo", ["x", "/x", "me/", "a/b/c", "me/x..y", "me/x--y", "me/-x", "me/x.git", "me/x y", ""])
def test_malformed_repo_ids_are_refused(repo):
    with pytest.raises(EvaluationError, match=r"dataset_repo= .* is not a Hub repo id"):
        check_repo_id(repo, "dataset_repo", "you/eccv-caption")


@pytest.mark.parametrize("repo", ["me/eccv-caption", "Org_1/eccv.caption_v2", "me/x", "me/_x"])
def test_well_formed_repo_ids_pass(repo):
    check_repo_id(repo, "dataset_repo", "you/eccv-caption")
