"""``--quiet``: no progress bar from the libraries a model run calls (transformers' ``Loading weights``, also under
sentence-transformers; huggingface_hub's), their warnings and errors still printed, and every library's setting
as it was once the command returns (a Python caller of ``main`` keeps its bars)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eccv_metric.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
BARS = ("Loading weights", "it/s]", "%|")


@pytest.fixture(scope="module")
def st_model(tmp_path_factory):
    from tests.unit.model_world import tiny_st

    return tiny_st(tmp_path_factory.mktemp("st") / "model")


@pytest.mark.parametrize("family", ["hf", "st"])
def test_quiet_silences_the_libraries_bars_not_their_messages(family, world, data, clip, st_model, monkeypatch,
                                                              capsys):  # fmt: skip
    import huggingface_hub.utils
    import transformers.utils.logging

    monkeypatch.setattr("eccv_metric.models.plan.default_resources", lambda source, options=None: world.resources())
    model = f"hf:{clip}" if family == "hf" else f"st:{st_model}"
    args = ["evaluate", "--model", model, "--data", str(data), "--workers", "0", "--batch-size", "8", "--n-resamples",
            "20", "--benchmarks", "coco_t2t", "--no-cache"]  # fmt: skip
    assert main(args) == 0  # without --quiet the libraries draw their bars (on any stream)
    assert "Loading weights" in capsys.readouterr().err
    assert main([*args, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and not [bar for bar in BARS if bar in err]
    assert "warning: t2t: numbers at chance level" in err  # what the run says is still said
    assert transformers.utils.logging.is_progress_bar_enabled()  # as it was: on
    assert not huggingface_hub.utils.are_progress_bars_disabled()
    assert main([*args, "--quiet", "--model", "hf:/no/such/model"]) == 2  # errors still print
    assert capsys.readouterr().err.startswith("error: ")


def test_libraries_quiet_puts_every_setting_back():
    """In a fresh Python (transformers imported inside the context, as a CLI run imports it): off inside; after
    it transformers as its import sets it, huggingface_hub's groups as they were (one group turned off before)."""
    code = """
import sys
from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars
from eccv_metric.core import progress
disable_progress_bars("peft")
with progress.libraries_quiet():
    import transformers.utils.logging as tlog
    inside = (tlog.is_progress_bar_enabled(), are_progress_bars_disabled(), are_progress_bars_disabled("peft"))
after = (tlog.is_progress_bar_enabled(), are_progress_bars_disabled(), are_progress_bars_disabled("peft"))
with progress.libraries_quiet():  # imported before: switched, then put back
    again = tlog.is_progress_bar_enabled()
print("STATES", inside, after, again, tlog.is_progress_bar_enabled())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "STATES (False, True, True) (True, False, True) False True" in done.stdout
