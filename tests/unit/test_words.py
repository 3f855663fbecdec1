"""Errors in a front end's words: library keywords (``name=``) reworded, one line, the rest untouched."""

from __future__ import annotations

import pytest

from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.groundtruth.cxc import MISSING_HINT
from eccv_metric.groundtruth.plausible import MISSING_CATEGORIES


@pytest.mark.parametrize(
    "message,expected",
    [
        (MISSING_CATEGORIES, "pass --instances-json (a COCO-format instances file"),
        (MISSING_HINT, "give --cxc-source or --source-dir (a folder with the CxC CSVs"),
        ("give fg_source= (a folder)", "give --fg-source or --source-dir (a folder)"),
        ("missing from the image ids given (image_ids=): 1, 2", "missing from the image ids given (--image-ids): 1, 2"),
        ("unknown_kw= stays; my_image_ids= is another word", "unknown_kw= stays; my_image_ids= is another word"),
        ("two\nlines\n", "two; lines"),
    ],
)
def test_cli_words(message, expected):
    assert expected in in_words(EvaluationError(message), CLI_WORDS)
    assert "\n" not in in_words(EvaluationError(message), CLI_WORDS)


def test_python_words_are_the_keywords_and_odd_exceptions_say_something():
    assert in_words(EvaluationError(MISSING_CATEGORIES), {}) == MISSING_CATEGORIES
    assert in_words(KeyError("i2t"), {}) == "missing key 'i2t'"
    assert in_words(MemoryError(), {}) == "MemoryError"
    assert len(in_words(ValueError("x" * 10_000), {})) <= 2000


def test_boolean_switches_become_the_flag_or_the_tick():
    message = "3 queries have no ranked list: 1, 2, 3; give every query a list, or partial=True to score them only"
    assert "or --partial to score them only" in in_words(EvaluationError(message), CLI_WORDS)
    assert "or the 'partial' tick to" in in_words(EvaluationError(message), {"partial": "the 'partial' tick"})
    assert in_words(EvaluationError(message), {}) == message


def test_a_switch_turned_off_has_words_of_its_own():
    """``share_decode=False`` is the CLI's ``--decode-per-model`` (a flag that turns a default off); a keyword
    without such words stays as Python writes it; ``x=True`` is still the flag of ``x``."""
    from eccv_metric.cli.model import MODEL_WORDS

    assert (
        in_words("run it alone, or with share_decode=False", MODEL_WORDS) == "run it alone, or with --decode-per-model"
    )
    assert in_words("pin=False and batch_size= 3", MODEL_WORDS) == "pin=False and --batch-size 3"
    assert in_words("drop cache=False", MODEL_WORDS) == "drop --no-cache"
    assert in_words("partial=True", {"partial": "the partial box"}) == "the partial box"
