"""``eccv-caption push-results``: a model's results to its Hub repo as eval results, its per-query values to a
details repo (a layer over eccv_metric.hub)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words

HUB_WORDS = {
    **CLI_WORDS,
    "model_repo": "--model-repo",
    "dataset_repo": "--dataset-repo",
    "details_repo": "--details-repo",
    "details=False": "--no-details",
    "details": "--no-details",
    "per_query": "--per-query",
    "evidence": "--evidence",
    "direct": "--direct",
    "model_index": "--model-index",
    "from_hub": "--from-hub",
    "other_model": "--other-model",
}


def add_push_results(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "push-results",
        help="publish a model's results (evaluate --model -o) as the Hub's eval results of its model repo, with "
        "the per-query values behind them in a details dataset repo",
    )
    p.add_argument(
        "results",
        help="the results JSON of `eccv-caption evaluate --model SPEC --data DATASET -o` (or the folder -o wrote "
        "for several --model: each model's file)",
    )
    p.add_argument(
        "--per-query",
        help="the per-query JSON of the same run (evaluate --per-query; a folder for several --model): published "
        "as the details the numbers' source points at",
    )
    p.add_argument(
        "--evidence",
        metavar="DIR",
        help="the evidence folder of the same run (evaluate --evidence; a folder of them for several --model), "
        "published in the details repo so anyone can recompute the numbers (default: the folder the results record)",
    )
    p.add_argument(
        "--model-repo", help="the model repo, ORG/MODEL (default: the repo the results' model spec hf:ORG/MODEL loads)"
    )
    p.add_argument(
        "--other-model",
        action="store_true",
        help="publish on --model-repo results whose provenance names a model of another repo (refused without it); "
        "the entries' notes name the model that was run",
    )
    p.add_argument(
        "--dataset-repo",
        help="the benchmark dataset repo (default: the Hub dataset the results were scored on; needed for a local "
        "build, checked to hold the same files, and for MTEB's predictions)",
    )
    p.add_argument(
        "--details-repo",
        help="the dataset repo of the per-query details (default: YOUR_ACCOUNT/details_<model owner>__<model name>)",
    )
    p.add_argument("--no-details", action="store_true", help="publish the numbers alone (no --per-query)")
    p.add_argument(
        "--direct",
        action="store_true",
        help="commit to main (your own repo) instead of a pull request (without it, a rerun adds a commit to the pull "
        "request you opened before)",
    )
    p.add_argument(
        "--model-index", action="store_true", help="also write the model card's model-index (the older form)"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the two commits the push would make (each file added, replaced or deleted; asked of the Hub with "
        "the same token), send nothing",
    )
    p.set_defaults(func=run_push_results)


def run_push_results(args: argparse.Namespace) -> int:
    from eccv_metric.hub.publish import publish
    from eccv_metric.hub.submission import read_submission
    from eccv_metric.hub.submission import results_files

    try:
        files = results_files(args.results)
        several = Path(args.results).is_dir()
        if several and len(files) > 1:
            for flag, given in (("--model-repo", args.model_repo), ("--details-repo", args.details_repo)):
                if given:
                    raise EvaluationError(f"{flag} names one repo; {args.results} holds {len(files)} models' results: "
                                          "push their files one at a time")  # fmt: skip
        if args.per_query and several != Path(args.per_query).is_dir():
            raise EvaluationError(f"--per-query {args.per_query}: give a folder for a folder of results (the one "
                                  "evaluate --per-query wrote beside -o), a file for a file")  # fmt: skip
        quiet = args.quiet and not args.dry_run  # a dry run's output is the files: --quiet keeps them
        log = (lambda _: None) if quiet else print
        repos = (args.model_repo, args.dataset_repo)
        subs = [
            read_submission(path, *repos, _per_query(args.per_query, path, several), args.other_model,
                            _evidence(args.evidence, path, several))
            for path in files
        ]  # fmt: skip
        for submission in subs:
            if several:
                log(f"{submission.path}:")
            publish(submission, args.direct, args.model_index, args.dry_run, log=log,
                    details_repo=args.details_repo, details=not args.no_details)  # fmt: skip
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, HUB_WORDS)) from None
    return 0


def _per_query(given: str | None, results: Path, several: bool) -> Path | None:
    """The per-query file of a results file: the one given, or in a folder the file of the same name."""
    if given is None:
        return None
    if not several:
        return Path(given)
    path = Path(given) / results.name
    if not path.is_file():
        raise EvaluationError(f"--per-query {given} has no {results.name} (the per-query file of {results})")
    return path


def _evidence(given: str | None, results: Path, several: bool) -> Path | None:
    """The evidence folder of a results file: the one given, or in a folder of them the one of its model."""
    if given is None or not several:
        return None if given is None else Path(given)
    return Path(given) / results.stem


def hub_board_rows(dataset_repo: str, taken: list[str], verify: bool = True) -> dict:
    """``leaderboard --from-hub``: the models of the Hub's leaderboards, as published, each row marked with what it
    rests on (``verify``: recomputed from its evidence; errors in flag words)."""
    from eccv_metric.hub.board import hub_board

    try:
        return hub_board(dataset_repo, taken, log=print, verify=verify)
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, HUB_WORDS)) from None


def hub_per_query(spec: str, dataset_repo: str | None) -> tuple[dict, dict]:
    """``compare --from-hub``: a model's published per-query values and their ``results.json``."""
    from eccv_metric.hub.board import model_details

    try:
        return model_details(spec, dataset_repo)
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, HUB_WORDS)) from None
