"""``eccv-caption``: evaluate, benchmarks, export-trec, import-trec, build, push, push-results, compare, correlate,
leaderboard, explore, verify."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence

from eccv_metric.cli.analysis import add_compare
from eccv_metric.cli.analysis import add_correlate
from eccv_metric.cli.board import add_leaderboard
from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import add_quiet
from eccv_metric.cli.data import add_build
from eccv_metric.cli.data import add_push
from eccv_metric.cli.evaluate import add_benchmarks
from eccv_metric.cli.evaluate import add_evaluate
from eccv_metric.cli.explore import add_explore
from eccv_metric.cli.hub import add_push_results
from eccv_metric.cli.trec import add_export_trec
from eccv_metric.cli.trec import add_import_trec
from eccv_metric.cli.verify import add_verify
from eccv_metric.core import progress
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_evaluate,
    add_benchmarks,
    add_export_trec,
    add_import_trec,
    add_build,
    add_push,
    add_push_results,
    add_compare,
    add_correlate,
    add_leaderboard,
    add_explore,
    add_verify,
]


DESCRIPTION = (
    "Image-text retrieval metrics of the ECCV Caption family (COCO 1K/5K, CxC, ECCV Caption, PM/PMRP, "
    "MSCOCO-FG, Flickr30K-FG). `evaluate` scores ranked lists, TREC runs, score matrices, embeddings, or a model: "
    "`evaluate --model hf:<repo or folder> --data <build folder>` encodes the benchmarks' images and captions "
    "with it (transformers, sentence-transformers or open_clip: the package's [models] extra; the build folder: "
    "`eccv-caption build`). "
    "`eccv-caption <command> --help` shows each command's flags."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eccv-caption", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    for command in sub.choices.values():  # every subcommand takes --quiet
        if "--quiet" not in command._option_string_actions:
            add_quiet(command)
    return parser


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of one subcommand (its usage and flags)."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; an expected failure is one ``error:`` line on stderr in flag words (exit 2)."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse would tell a subcommand's unknown flag under the top-level usage: tell it under its own
        command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    saved = progress.configure(quiet=True) if args.quiet else None
    try:
        with progress.libraries_quiet() if args.quiet else contextlib.nullcontext():  # the libraries' bars too
            return int(args.func(args))
    except BrokenPipeError:  # the reader (e.g. `| head`) left: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (EvaluationError, ValueError, OSError) as exc:  # bad input, missing or unreadable files, downloads
        print(f"error: {in_words(exc, CLI_WORDS)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory: give smaller inputs or a machine with more memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if saved is not None:
            progress.reset(saved)


if __name__ == "__main__":
    sys.exit(main())
