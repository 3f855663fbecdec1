"""``eccv-caption push-results``: a model's results to its Hub repo as eval results (layer over eccv_metric.hub)."""

from __future__ import annotations

import argparse

from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words

HUB_WORDS = {
    **CLI_WORDS,
    "model_repo": "--model-repo",
    "dataset_repo": "--dataset-repo",
    "direct": "--direct",
    "model_index": "--model-index",
    "from_hub": "--from-hub",
}


def add_push_results(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "push-results",
        help="publish a model's results (evaluate --model -o) as the Hub's eval results of its model repo",
    )
    p.add_argument("results", help="the results JSON of `eccv-caption evaluate --model SPEC --data DATASET -o`")
    p.add_argument(
        "--model-repo", help="the model repo, ORG/MODEL (default: the repo the results' model spec hf:ORG/MODEL loads)"
    )
    p.add_argument(
        "--dataset-repo",
        help="the benchmark dataset repo (default: the Hub dataset the results were scored on; needed for a local "
        "build)",
    )
    p.add_argument("--direct", action="store_true", help="commit to main (your own repo) instead of a pull request")
    p.add_argument(
        "--model-index", action="store_true", help="also write the model card's model-index (the older form)"
    )
    p.add_argument("--dry-run", action="store_true", help="print the files that would be sent, send nothing")
    p.set_defaults(func=run_push_results)


def run_push_results(args: argparse.Namespace) -> int:
    from eccv_metric.hub.eval_results import read_submission
    from eccv_metric.hub.publish import publish

    try:
        submission = read_submission(args.results, args.model_repo, args.dataset_repo)
        quiet = args.quiet and not args.dry_run  # a dry run's output is the files: --quiet keeps them
        publish(submission, args.direct, args.model_index, args.dry_run, log=(lambda _: None) if quiet else print)
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, HUB_WORDS)) from None
    return 0


def hub_rows(dataset_repo: str, taken: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """``leaderboard --from-hub``: the models of the Hub's leaderboard, as results (errors in flag words)."""
    from eccv_metric.hub.board import hub_results

    try:
        return hub_results(dataset_repo, taken, log=print)
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, HUB_WORDS)) from None
