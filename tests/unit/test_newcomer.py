"""What a newcomer met (issue 59, item 5), each said in our words: an offline Hub is not a repo without eval.yaml,
a model path that does not exist is not a malformed repo id, an extra's install is the one that works from the
clone, and a mistyped flag shows its command's usage. (A push that fails leaves the build as it was:
tests/integration/test_push.py.)"""

from __future__ import annotations

import sys

import pytest

from eccv_metric import EvaluationError
from eccv_metric.cli.main import main


@pytest.fixture()
def offline(monkeypatch, tmp_path):
    """huggingface_hub in offline mode (HF_HUB_OFFLINE=1) with an empty cache."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


@pytest.mark.parametrize(
    ("argv", "again"),
    [
        (["leaderboard", "--from-hub", "you/eccv-caption"], "run the leaderboard again"),
        (["compare", "--from-hub", "you/a", "you/b", "--dataset-repo", "you/eccv-caption"], "run compare again"),
    ],
)
def test_an_offline_hub_is_said_so_not_blamed_on_the_repo(offline, capsys, argv, again):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "eval.yaml" not in err, err
    assert "failed: could not reach the Hub at " in err and "(HF_HUB_OFFLINE is set) and no copy is cached" in err
    assert err.endswith(f"check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE), then {again}"), err


@pytest.mark.parametrize("spec", ["hf:/no/such/folder", "st:./no/such", "hf:models/clip/v1"])
def test_a_model_folder_that_is_not_there_is_named(spec):
    from eccv_metric.models import load_model

    with pytest.raises(EvaluationError) as caught:
        load_model(spec, device="cpu")
    said = str(caught.value)
    assert said.startswith(f"{spec}: no such folder or file: {spec.partition(':')[2]} (nor a Hub repo id"), said
    assert "Repo id must be" not in said


def test_a_missing_extra_names_the_install_that_works(monkeypatch):
    from eccv_metric.models import load_model

    monkeypatch.setitem(sys.modules, "open_clip", None)  # `import open_clip` fails
    with pytest.raises(EvaluationError, match=r'pip install -e "\.\[open_clip\]" in the eccv-caption-hf clone'):
        load_model("open_clip:ViT-B-32/openai", device="cpu")


def test_a_mistyped_flag_shows_its_command_usage(capsys):
    with pytest.raises(SystemExit) as done:
        main(["evaluate", "--scorse", "sims.npy"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: eccv-caption evaluate ") and "--scores" in err, err[:200]
    assert err.rstrip().endswith("eccv-caption evaluate: error: unrecognized arguments: --scorse sims.npy")
