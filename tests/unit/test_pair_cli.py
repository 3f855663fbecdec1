"""``eccv-caption evaluate --model`` with a pair scorer: a test family whose specs load a known-answer pair scorer
(registered here alone), the same table as any input of those scores, the protocol in the provenance, every new
flag in ``--help``, bad flags one ``error:`` line in flag words; ``--shard`` jobs then a scoring run."""

from __future__ import annotations

import json

import pytest

from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.analysis.report import format_table
from eccv_metric.models import Family
from eccv_metric.models import register
from eccv_metric.models.families.encoder import wrap_object
from eccv_metric.models.families.pair_scorer import ObjectPairScorer
from eccv_metric.models.families.registry import FAMILIES
from tests.unit.pair_answers import DotPairs
from tests.unit.pair_answers import FirstOnly
from tests.unit.pair_answers import brute_scores

FLAGS = ("--protocol", "--rerank-k", "--score-rule", "--coco-1k", "--first-stage", "--max-pairs", "--pair-batch-size",
         "--shard")  # fmt: skip


def load_pairs(name: str, spec: str, options: object) -> ObjectPairScorer:
    scorer = ObjectPairScorer(DotPairs(), identity={"spec": spec})
    scorer.spec = spec
    return scorer


PAIRS = Family("dotpairs", (("dotpairs:<name>", "integer dot products of pairs: a test's pair scorer"),), load_pairs)


def load_dual(name: str, spec: str, options: object) -> object:
    encoder = wrap_object(FirstOnly(), identity={"spec": spec})
    encoder.spec = spec
    return encoder


DUAL = Family("dotdual", (("dotdual:<name>", "a test's dual encoder (small integer vectors)"),), load_dual)


def never_loaded(name: str, spec: str, options: object) -> object:
    raise AssertionError(f"{spec} was loaded")


NEVER = Family("neverload", (("neverload:<name>", "a model a test refuses before it loads"),), never_loaded)


@pytest.fixture()
def cli(world, data, tmp_path, monkeypatch):
    import eccv_metric.models.plan
    from eccv_metric.cli.main import main

    for family in (PAIRS, DUAL, NEVER):
        register(family)
    monkeypatch.setattr(eccv_metric.models.plan, "default_resources", lambda source, options=None: world.resources())
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    base = ["evaluate", "--data", str(data), "--workers", "0", "--n-resamples", "20"]
    yield lambda *args: main([*base, *args])
    for family in (PAIRS, DUAL, NEVER):
        FAMILIES.pop(family.prefix)


def test_a_pair_scorer_prints_the_table_of_its_scores(cli, world, tmp_path, capsys):
    """Exhaustive (no first stage): the table the engine prints for the brute-force score matrix; -o holds the
    protocol; the run says how many pairs it scores."""
    out = tmp_path / "res.json"
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", "eccv", "-o", str(out)) == 0
    printed = capsys.readouterr()
    expected = evaluate(ScoreMatrix(brute_scores(world)), benchmarks=["coco_5k", "eccv"], resources=world.resources())
    assert printed.out == format_table(expected.means()) + f"\nwrote {out}\n"
    assert "dotpairs:a (exhaustive): 2,000 pairs in 1 block; 2,000 to score" in printed.err
    provenance = json.loads(out.read_text())["provenance"]
    assert provenance["protocol"]["name"] == "exhaustive" and provenance["kind"] == "pair scorer"
    assert provenance["pairs"]["pairs"] == 2000


def test_help_documents_every_pair_flag(capsys):
    from eccv_metric.cli.main import main

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    assert all(flag in text for flag in FLAGS)
    assert "itm+itc" in text and "restrict" in text and "exhaustive" in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rerank-k", "0"], "error: --rerank-k 0 reranks nothing"),
        (["--shard", "3/2"], "error: --shard 3/2: job 3 of 2 does not exist (jobs are numbered 1 to 2)"),
        (["--protocol", "rerank"], "has no first stage to rerank: give --first-stage"),
        (["--score-rule", "itm+itc"], "--score-rule itm+itc adds the first stage's similarity"),
        (["--first-stage", ""], "error: --first-stage is empty: give a dual encoder spec"),
    ],
)
def test_bad_pair_flags_are_one_line(cli, capsys, flags, message):
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", *flags) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_shard_jobs_then_a_scoring_run(cli, tmp_path, capsys, monkeypatch):
    """Two --shard jobs print how to score and nothing else; the run without --shard prints the table of one
    process and scores no pair."""
    monkeypatch.setattr("eccv_metric.models.pairs.pairset.PAIRS_PER_BLOCK", 300)
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", "--no-cache") == 0
    alone = capsys.readouterr().out
    for k in (1, 2):
        assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", "--shard", f"{k}/2") == 0
        printed = capsys.readouterr()
        assert printed.out == "" and f"shard {k}/2: its share is in the cache" in printed.err
        assert "run the same command without --shard to score" in printed.err
    out = tmp_path / "res.json"
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", "-o", str(out)) == 0
    assert capsys.readouterr().out == alone + f"wrote {out}\n"
    assert json.loads(out.read_text())["provenance"]["pairs"]["blocks_computed"] == 0


def test_a_vilt_rerank_of_a_clip_first_stage(cli, world, data, clip, tmp_path, capsys):
    """--model hf:<tiny ViLT> --first-stage hf:<tiny CLIP> --rerank-k 8: the table of the same run in Python, the
    first stage's spec in the provenance, each metric reading deeper than k named in one warning line."""
    from tests.unit.model_world import run_model
    from tests.unit.pair_world import tiny_vilt

    vilt = tiny_vilt(tmp_path / "vilt")
    out = tmp_path / "res.json"
    args = ["--model", f"hf:{vilt}", "--first-stage", f"hf:{clip}", "--rerank-k", "8", "--benchmarks", "coco_5k"]
    assert cli(*args, "-o", str(out)) == 0
    printed = capsys.readouterr()
    python = run_model(f"hf:{vilt}", data, world, tmp_path / "py", benchmarks=["coco_5k"], first_stage=f"hf:{clip}",
                       rerank_k=8, batch_size=64, text_batch_size=None)  # fmt: skip
    assert printed.out == format_table(python.results.means()) + f"\nwrote {out}\n"
    assert "warning: --rerank-k 8 is below the 10 items coco_5k_r10" in printed.err
    protocol = json.loads(out.read_text())["provenance"]["protocol"]
    assert protocol["name"] == "rerank" and protocol["first_stage"]["spec"] == f"hf:{clip}"
    assert protocol["score_rule"] == "itm" and not protocol["first_stage"]["own"]


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if " nothing: " in line]


def test_pair_flags_a_dual_encoder_ignores_are_one_line(cli, capsys):
    """A dual encoder given the flags of a pair scorer: its own table, and one line naming every flag that did
    nothing and why."""
    assert cli("--model", "dotdual:a", "--benchmarks", "coco_5k") == 0
    alone = capsys.readouterr().out
    flags = ["--rerank-k", "64", "--coco-1k", "within", "--max-pairs", "5", "--pair-batch-size", "8", "--text-length",
             "20", "--reference", "transformers", "--protocol", "exhaustive"]  # fmt: skip
    assert cli("--model", "dotdual:a", "--benchmarks", "coco_5k", *flags) == 0
    printed = capsys.readouterr()
    assert printed.out == alone
    assert _lines(printed.err) == [
        "warning: --protocol, --rerank-k, --coco-1k, --max-pairs, --pair-batch-size, --text-length, --reference do "
        "nothing: dotdual:a is a dual encoder, which ranks every item by its embeddings (these are options of a model "
        "that scores pairs: its rerank, score rule and pair batches)"
    ]


@pytest.mark.parametrize(
    "flags", [["--score-rule", "itm"], ["--first-stage", "dotdual:b"], ["--protocol", "rerank", "--rerank-k", "5"]]
)
def test_pair_flags_a_dual_encoder_cannot_mean_are_refused(cli, capsys, flags):
    """A score rule, a first stage or a rerank asked of a dual encoder can only be a mistake: one error line."""
    assert cli("--model", "dotdual:a", "--benchmarks", "coco_5k", *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flags[0]}") and "do" in err and "nothing: dotdual:a is a dual encoder" in err
    assert err.count("\n") == 1 and err.rstrip().endswith(("drop it", "drop them"))


def test_flags_an_exhaustive_run_ignores_are_one_line(cli, capsys):
    """--rerank-k and --coco-1k under --protocol exhaustive, --text-length for a scorer that cuts no caption and
    --reference for one that follows one code: one line each, the numbers those of the run without them."""
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k") == 0
    alone = capsys.readouterr().out
    flags = ["--protocol", "exhaustive", "--rerank-k", "8", "--coco-1k", "within", "--text-length", "20", "--reference",
             "lavis"]  # fmt: skip
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k", *flags) == 0
    printed = capsys.readouterr()
    assert printed.out == alone
    assert _lines(printed.err) == [
        "warning: --rerank-k, --coco-1k do nothing: --protocol exhaustive scores every pair with dotpairs:a (no "
        "rerank)",
        "warning: --text-length does nothing: dotpairs:a cuts no caption (its own code reads each caption as it is "
        "given)",
        "warning: --reference does nothing: dotpairs:a follows one code (no library port of it differs from its own)",
    ]


@pytest.mark.parametrize(
    ("flags", "named"),
    [(["-o", "res.json"], "-o"), (["--per-query", "pq.json", "--json"], "--per-query, --json"),
     (["--save-embeddings", "emb"], "--save-embeddings")],
)  # fmt: skip
def test_a_shard_job_refuses_outputs_before_the_model_loads(cli, capsys, tmp_path, flags, named):
    """A --shard job writes no numbers: -o, --per-query, --json or --save-embeddings would be dropped, so they are
    refused up front (the model never loads), naming the run that writes them."""
    args = [tmp_path / f if i % 2 and f != "--json" else f for i, f in enumerate(flags)]
    assert cli("--model", "neverload:a", "--benchmarks", "coco_5k", "--shard", "1/2", *map(str, args)) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: --shard 1/2 computes this job's share into the cache and prints no numbers: drop {named} (the run "
        "without --shard, once every job is done, scores and writes them)\n"
    )
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--benchmarks", "coco_5k", "--rerank-k", "50"], "the gallery of coco_5k t2i (20 items): give at most 20"),
        (["--benchmarks", "coco_1k", "--coco-1k", "within", "--rerank-k", "5"], "within coco_1k_folds (4 items)"),
    ],
)
def test_rerank_k_above_a_gallery_is_refused_before_the_model_loads(cli, capsys, flags, message):
    """The galleries are the data's: a --rerank-k above one is one error line before any model loads."""
    assert cli("--model", "neverload:a", *flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --rerank-k {flags[-1]} is above ") and message in err and err.count("\n") == 1


def test_a_rank_whose_peers_never_come_says_so_then_stops(cli, capsys, monkeypatch):
    """RANK=0 WORLD_SIZE=2 and no second rank (a job script exporting torchrun's variables for one process): the
    rank says that it waits, where, and for how long (ECCV_CAPTION_JOIN_TIMEOUT, here 0.5 s), then stops with one
    error line; no process group is left open."""
    import time

    import torch.distributed as dist

    port = alone_in_a_world_of_two(monkeypatch, 0)
    began = time.monotonic()
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k") == 2
    assert time.monotonic() - began < 60
    err = capsys.readouterr().err
    where = f"127.0.0.1:{port}"
    assert (f"rank 0 of 2: waiting for the other ranks to join at {where}, up to 0.5 s (ECCV_CAPTION_JOIN_TIMEOUT "
            "sets the seconds)\n") in err  # fmt: skip
    assert f"error: rank 0 of 2: the other ranks did not join at {where} within 0.5 s" in err
    assert "torchrun --nproc_per_node 2" in err and not dist.is_initialized()


def test_a_rank_whose_rank_0_never_comes_ends_in_one_line(cli, capfd, monkeypatch):
    """Review of issue 61: RANK=1 WORLD_SIZE=2 and no rank 0: torch's store client printed about 35 lines of C++
    frames (socket.cpp, DistNetworkError) to the process's stderr before the error, and retried past the time
    given. The rank now waits for rank 0's address with a plain socket, within the same time (here 0.5 s), saying
    that it waits as rank 0 does; the stderr it leaves is that line and the error, nothing of torch's."""
    import time

    port = alone_in_a_world_of_two(monkeypatch, 1)
    began = time.monotonic()
    assert cli("--model", "dotpairs:a", "--benchmarks", "coco_5k") == 2
    assert time.monotonic() - began < 30
    err = capfd.readouterr().err  # the file descriptor's: what torch's C++ writes too
    where = f"127.0.0.1:{port}"
    assert err.splitlines() == [
        f"rank 1 of 2: waiting for the other ranks to join at {where}, up to 0.5 s (ECCV_CAPTION_JOIN_TIMEOUT sets "
        "the seconds)",
        f"error: rank 1 of 2: the other ranks did not join at {where} within 0.5 s (ECCV_CAPTION_JOIN_TIMEOUT sets the "
        "seconds): start every rank (torchrun --nproc_per_node 2 starts them together), or unset WORLD_SIZE to run one "
        f"process (nothing listens at {where}: rank 0 never opened its store there)",
    ], err


def alone_in_a_world_of_two(monkeypatch, rank: int) -> int:
    """torchrun's variables for ``rank`` of a world of two whose other rank never comes, on a free local port (the
    port), a join timeout of 0.5 s and its notice after 0.1 s."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "ECCV_CAPTION_JOIN_TIMEOUT": "0.5"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("eccv_metric.models.parallel.world.JOIN_NOTICE", 0.1)
    return port
