"""Progress bars: drawn on a terminal-like stream, never when quiet or on a plain stream; numbers unchanged."""

from __future__ import annotations

import io

import numpy as np
import pytest

from eccv_metric.core import progress
from eccv_metric.kernels.ranks import first_ranks
from eccv_metric.kernels.scorers import MatrixScorer
from eccv_metric.kernels.topk import top_ranked


class Terminal(io.StringIO):
    """A stream that says it is a terminal (what tqdm writes to when a person watches)."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def settings(monkeypatch):
    monkeypatch.delenv(progress.ENV, raising=False)
    saved = progress.configure()
    yield
    progress.reset(saved)


def rank_both(scores: np.ndarray, k: int):
    """top_ranked and first_ranks of every row (4+ blocks of 512 rows: the blocks run on the workers)."""
    scorer = MatrixScorer(scores)
    rows = np.arange(len(scores))
    top, bad, _ = top_ranked(scorer, rows, k)
    positives = (np.arange(scores.shape[1])[None, :] % 97) == (rows[:, None] % 97)
    ranks, _ = first_ranks(scorer, rows, lambda members, n: positives[members])
    assert not bad.any()
    return top, ranks, positives


def brute(scores: np.ndarray, k: int, positives: np.ndarray):
    order = np.argsort(-scores, axis=1, kind="stable")
    hit = np.take_along_axis(positives, order, axis=1)
    return order[:, :k], hit.argmax(axis=1) + 1.0


@pytest.mark.parametrize(
    "stream,quiet,env,drawn",
    [
        ("terminal", False, None, True),
        ("terminal", True, None, False),  # --quiet
        ("plain", False, None, False),  # stderr redirected to a file or a pipe
        ("plain", False, "1", True),  # forced
        ("terminal", False, "0", False),  # silenced
    ],
)
def test_bars_only_where_someone_watches_and_the_numbers_never_change(settings, monkeypatch, stream, quiet, env, drawn):
    if env is not None:
        monkeypatch.setenv(progress.ENV, env)
    out = Terminal() if stream == "terminal" else io.StringIO()
    progress.configure(quiet=quiet, file=out, delay=0)
    rng = np.random.default_rng(3)
    scores = np.round(rng.standard_normal((2100, 900)), 1).astype(np.float32)  # ties everywhere
    top, ranks, positives = rank_both(scores, 20)
    expected_top, expected_ranks = brute(scores, 20, positives)
    assert np.array_equal(top, expected_top) and np.array_equal(ranks, expected_ranks)
    text = out.getvalue()
    both = "ranking 2,100 queries x 900 items" in text and "exact ranks of 2,100 queries" in text
    assert both == drawn, text[-300:]
    assert bool(text) == drawn


def test_short_steps_never_draw(settings):
    out = Terminal()
    progress.configure(file=out, delay=3600)  # the default delay: a step must last before its bar shows
    with progress.bar("a short step", 10) as shown:
        shown.update(10)
    assert out.getvalue() == ""


def test_iterate_counts_and_download_bars(settings, tmp_path):
    out = Terminal()
    progress.configure(file=out, delay=0)
    assert list(progress.iterate(range(5), "counting")) == [0, 1, 2, 3, 4]
    assert "counting" in out.getvalue()
    progress.configure(quiet=True)
    assert list(progress.iterate(iter("ab"), "quiet")) == ["a", "b"] and "quiet" not in out.getvalue()


def test_the_demo_matrix_drawn_block_by_block_is_the_one_shot_draw():
    from types import SimpleNamespace

    from eccv_metric.cli.evaluate import demo_scores

    gt = SimpleNamespace(image_ids=np.arange(600), caption_ids=np.arange(40), caption_image=np.arange(40) * 7 % 600)
    expected = np.random.default_rng(0).standard_normal((600, 40), dtype=np.float32)
    expected[gt.caption_image, np.arange(40)] += 3.0
    assert np.array_equal(demo_scores(gt), expected)  # 600 rows: three blocks of 250 rows


def test_a_long_call_shows_its_elapsed_time(settings):
    import time

    out = Terminal()
    progress.configure(file=out, delay=0.1)
    with progress.working("listing the pm positives (i2t)"):
        time.sleep(1.5)  # one long call: nothing updates the bar, its thread redraws it
    assert "listing the pm positives (i2t): 00:0" in out.getvalue()
    out = Terminal()
    progress.configure(file=out, delay=3600)
    with progress.working("short"):
        pass
    assert out.getvalue() == ""
