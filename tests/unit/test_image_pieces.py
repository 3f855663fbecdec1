"""Image batches read in pieces (eccv_metric.models.encoding.workers): the loader's units cover each batch exactly, in
order, in equal pieces, enough of them for every worker; joined again they are the batch."""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric.models.encoding import workers as w


def _brute_cover(todo, units):  # noqa: ANN001, ANN202
    """Each batch of todo is the concatenation of consecutive units, in order."""
    at = 0
    for start, stop in todo:
        covered = []
        while at < len(units) and units[at][1] <= stop:
            covered.extend(range(*units[at]))
            at += 1
        assert covered == list(range(start, stop)), (start, stop)
    assert at == len(units)


@pytest.mark.parametrize("n, batch, workers", [(5000, 256, 15), (5000, 64, 1), (20, 8, 2), (1, 1, 8), (100, 7, 3)])
def test_pieces_cover_the_batches_in_order(n, batch, workers):
    todo = [(s, min(s + batch, n)) for s in range(0, n, batch)]
    units = w.pieces(todo, workers)
    _brute_cover(todo, units)
    if workers < 2:
        assert units == todo
        return
    ends = {stop for _, stop in todo}
    assert all(stop - start >= w.LEAST_PIECE for start, stop in units if stop not in ends)  # a batch's last: short
    assert _makespan(units, workers) <= _makespan(todo, workers) + 1e-9
    if n >= w.LEAST_PIECE * w.PIECES_PER_WORKER * workers:
        assert _makespan(units, workers) < 1.25


def _makespan(units, workers):  # noqa: ANN001, ANN202
    """The DataLoader deals its units to the workers in turn: the largest load over the even share."""
    loads = [0] * workers
    for k, (start, stop) in enumerate(units):
        loads[k % workers] += stop - start
    return max(loads) / (sum(loads) / workers)


def test_the_issue_case_is_cut_so_no_worker_does_the_tail_alone():
    """5,000 images in batches of 256 with 15 workers: as 20 whole batches, 5 workers do a second round alone
    (1.5x the even share); in pieces the largest load is within 5% of it."""
    todo = [(s, min(s + 256, 5000)) for s in range(0, 5000, 256)]
    units = w.pieces(todo, 15)
    assert _makespan(todo, 15) > 1.5
    assert len(units) >= 15 * (w.PIECES_PER_WORKER - 1) and _makespan(units, 15) < 1.05


def test_join_gives_the_batch():
    torch = pytest.importorskip("torch")
    values = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    parts = [([0, 1], values[:2], []), ([2, 3, 4], values[2:5], []), ([5], values[5:], [])]
    index, joined, errors = w.join(parts, "cpu")
    assert index == list(range(6)) and errors == [] and torch.equal(joined, values)
    listed = w.join([([0], ["a"], []), ([1, 2], ["b", "c"], [])], "cpu")
    assert listed == ([0, 1, 2], ["a", "b", "c"], [])
    failed = w.join([([0], None, ["image 1: empty image"]), ([1], values[:1], [])], "cpu")
    assert failed == ([0, 1], None, ["image 1: empty image"])


def test_collate_stacks_tensors_and_keeps_errors():
    torch = pytest.importorskip("torch")
    got = w.collate([(0, torch.ones(2), None), (1, torch.zeros(2), None)])
    assert got[0] == [0, 1] and np.array_equal(got[1].numpy(), [[1, 1], [0, 0]]) and got[2] == []
    assert w.collate([(0, None, "bad"), (1, torch.ones(2), None)]) == ([0, 1], None, ["bad"])


class _Rows:
    """Item i: a tensor of i (what a prepared image would be), no error."""

    def __len__(self) -> int:
        return 300

    def __getitem__(self, i: int):  # noqa: ANN204
        import torch

        return i, torch.full((3,), float(i)), None


@pytest.mark.parametrize("workers", [0, 2])
def test_image_batches_with_gaps_give_each_batch_in_order(workers):
    """The batches a resumed run still encodes have gaps between them (the finished ones are read back): each
    comes back whole, in order, its rows its own (forked workers, pieces of at least 16)."""
    torch = pytest.importorskip("torch")
    todo = [(0, 64), (128, 192), (192, 256), (256, 300)]
    got = list(w.image_batches(_Rows(), todo, workers, "cpu"))
    assert [bounds for bounds, _ in got] == todo
    for (start, stop), (index, values, errors) in got:
        assert index == list(range(start, stop)) and errors == []
        assert torch.equal(values[:, 0], torch.arange(start, stop, dtype=torch.float32))
