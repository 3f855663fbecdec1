"""``eccv-caption``: evaluate, benchmarks, export-trec, import-trec, build, push, compare, correlate, leaderboard."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence

from eccv_metric.cli.analysis import add_compare
from eccv_metric.cli.analysis import add_correlate
from eccv_metric.cli.analysis import add_leaderboard
from eccv_metric.cli.data import add_build
from eccv_metric.cli.data import add_push
from eccv_metric.cli.evaluate import add_benchmarks
from eccv_metric.cli.evaluate import add_evaluate
from eccv_metric.cli.trec import add_export_trec
from eccv_metric.cli.trec import add_import_trec
from eccv_metric.core.errors import EvaluationError

SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_evaluate,
    add_benchmarks,
    add_export_trec,
    add_import_trec,
    add_build,
    add_push,
    add_compare,
    add_correlate,
    add_leaderboard,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eccv-caption", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # the reader (e.g. `| head`) left: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (EvaluationError, FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
