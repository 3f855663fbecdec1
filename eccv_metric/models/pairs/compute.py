"""Every block of a run's pair sets, on one process or many: count, deal, compute, wait, gather.

The blocks of every pair set of a run are numbered in one sequence (set after set) and dealt by
:class:`~eccv_metric.models.parallel.world.Workers` (block ``j`` to rank ``j mod N``). Before any work the run says
how many pairs it scores and how many are still to score (blocks whose file is in the cache count as done; each
is checked when read); every rank counts before any writes (a barrier), so all take the same decisions. Each
process then computes its blocks that the cache does not hold (a block whose file does not match is warned
about and computed again). After the first blocks the leader says the measured pairs per second and the time
the rest will take; a run with more pairs still to score than ``max_pairs`` stops there, with that estimate (the
blocks it scored are kept: a rerun with a larger ``max_pairs`` goes on from them). When every process is done
(a barrier), the scoring process reads every block it did not compute itself and computes whatever is still
missing (a rank that failed, jobs of a ``shard=`` split that did not run), so a run that scores always scores
every pair.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eccv_metric.core import progress
from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.pairs.stage import Pace
from eccv_metric.models.pairs.stage import PairStage
from eccv_metric.models.pairs.stage import Side
from eccv_metric.models.pairs.stage import duration
from eccv_metric.models.parallel.world import Workers

MEASURED_AFTER = 5.0  # seconds of pair scoring after which the pace is told (or, from two blocks, at once)


@dataclass
class Tally:
    """What the pair stage did in this run (for the provenance)."""

    pairs: int = 0
    to_score: int = 0  # not in the cache when the run began (every process's share)
    pairs_computed: int = 0  # by this process
    blocks: int = 0
    blocks_computed: int = 0
    blocks_cached: int = 0
    late: int = 0  # pairs the scoring process computed after the others finished (blocks whose file failed its check)
    seconds: float = 0.0  # the pair stage in this process: its share, the wait for the others, the blocks read and late
    every_process: bool = False  # torchrun: the rate is the run's (every rank's pairs over the stage's time)

    def describe(self) -> dict:
        done = self.to_score + self.late if self.every_process else self.pairs_computed
        rate = done / self.seconds if self.seconds > 0 and done else None
        return {
            "pairs": self.pairs,
            "pairs_to_score": self.to_score,
            "pairs_scored_here": self.pairs_computed,
            "blocks": self.blocks,
            "blocks_computed": self.blocks_computed,
            "blocks_cached": self.blocks_cached,
            "seconds": round(self.seconds, 3),
            "pairs_per_second": None if rate is None else round(rate, 1),
        }


def say(text: str, workers: Workers) -> None:
    """A line on stderr for the user (above any progress bar), from one torchrun rank only; none when quiet."""
    if (workers.how != "torchrun" or workers.rank == 0) and not progress.quiet():
        progress.above_bars(lambda line: print(line, file=sys.stderr))(text)


def compute_all(sides: list[Side], stage: PairStage, workers: Workers, max_pairs: int, what: str) -> Tally:
    """Every block of ``sides`` (see the module docstring); on the scoring process each side's ``scores`` is then
    every pair's raw score. Returns what was done."""
    work = [(side, b) for side in sides for b in range(side.pairs.n_blocks)]
    sizes = [side.pairs.bounds(b)[1] - side.pairs.bounds(b)[0] for side, b in work]
    present = [side.cache is not None and side.cache.has(b) for side, b in work]
    todo = sum(n for n, p in zip(sizes, present, strict=True) if not p)
    tally = Tally(pairs=sum(sizes), to_score=todo, blocks=len(work), every_process=workers.how == "torchrun")
    held = f" ({tally.pairs - todo:,} in the cache)" if todo < tally.pairs else ""
    share = "" if workers.alone else f", {workers.size} processes ({workers.describe()['how']})"
    blocks = f"{len(work):,} block" + ("s" if len(work) != 1 else "")
    say(f"{what}: {tally.pairs:,} pairs in {blocks}; {todo:,} to score{held}{share}", workers)
    workers.barrier()  # every process counted before any writes: all decide alike
    mine = {j for j in range(len(work)) if workers.mine(j) and not present[j]}
    pace = Pace(sum(sizes[j] for j in mine))
    over = todo > max_pairs  # refused after the first blocks, with the time measured on them
    told = [False]

    def done(block: int, pairs: int) -> None:
        pace.add(pairs)
        tally.pairs_computed += pairs
        tally.blocks_computed += 1
        bar.update(pairs)
        if told[0] or not (pace.blocks >= 2 or pace.seconds >= MEASURED_AFTER or pace.pairs >= pace.todo):
            return
        told[0] = True
        ranks = workers.size if workers.how == "torchrun" else 1  # the ranks running now (shards: this job alone)
        rate = pace.rate * ranks
        if over:
            alone = " (one job)" if workers.how == "shard" else ""
            raise EvaluationError(
                f"{what}: {todo:,} pairs to score is above max_pairs= {max_pairs:,}: at the {rate:,.0f} pairs/s "
                f"measured here it would take about {duration(todo / max(rate, 1e-9))}{alone}; give max_pairs= "
                f"{todo:,} (or more) to score them (the blocks scored so far are kept)"
            )
        rest = max(pace.todo - pace.pairs, 0) / max(pace.rate, 1e-9)  # this process's share: the ranks run alike
        if rest >= 1:
            share = "" if workers.alone else " of this process's share"
            say(f"{what}: {rate:,.0f} pairs/s measured; the rest{share}: about {duration(rest)}", workers)

    if over and not mine:
        raise EvaluationError(
            f"{what}: {todo:,} pairs to score is above max_pairs= {max_pairs:,}: give max_pairs= {todo:,} (or more)"
        )
    with progress.bar(f"scoring pairs ({what})", pace.todo, "pair", unit_scale=True) as bar:
        for side in sides:
            blocks = [b for j, (s, b) in enumerate(work) if s is side and j in mine]
            fresh, again = read(side, blocks)
            tally.blocks_cached += len(fresh)
            for b in fresh:
                bar.update(len(fresh[b]))
            side.done.update(fresh)
            for b, scores in stage.run(side, again, done):
                side.done[b] = scores
    workers.barrier()
    tally.seconds = pace.seconds  # every process's share done
    if not workers.scores:
        return tally
    late = done_late(tally)
    for side in sides:  # the scoring process: every other block from the cache, whatever is missing computed now
        rest = [b for b in range(side.pairs.n_blocks) if b not in side.done]
        fresh, again = read(side, rest)
        tally.blocks_cached += len(fresh)
        side.done.update(fresh)
        for b, scores in stage.run(side, again, late):
            side.done[b] = scores
        side.scores = (
            np.concatenate([side.done[b] for b in range(side.pairs.n_blocks)])
            if side.pairs.n_blocks
            else np.zeros(0, np.float32)
        )
        side.done.clear()
    tally.seconds = pace.seconds  # the blocks read and scored late included
    return tally


def read(side: Side, blocks: list[int]) -> tuple[dict[int, np.ndarray], list[int]]:
    """({block: scores} of ``blocks`` the cache holds and that match, the others)."""
    fresh, again = {}, []
    for b in blocks:
        got = None if side.cache is None else side.cache.read(b, side.pairs.digest(b), _size(side, b))
        if got is None:
            again.append(b)
        else:
            fresh[b] = got
    return fresh, again


def _size(side: Side, block: int) -> int:
    start, stop = side.pairs.bounds(block)
    return stop - start


def done_late(tally: Tally) -> Callable[[int, int], None]:
    """The ``done`` callback of blocks the scoring process computes after the others finished."""

    def late(block: int, pairs: int) -> None:
        tally.pairs_computed += pairs
        tally.late += pairs
        tally.blocks_computed += 1

    return late
