"""What every ``eccv-caption`` subcommand shares: the CLI's words for library keywords, status lines, --quiet."""

from __future__ import annotations

import argparse
import sys

from eccv_metric.cli.resource_flags import resource_words

# the flag naming each library keyword (inputs, as eccv_metric.inputs.choose names them, and options): errors
# from the library name keywords (``instances_json=``), the CLI shows them as flags (core.errors.in_words)
CLI_WORDS = {
    "rankings": "--rankings / --run",
    "scores": "--scores",
    "caption_scores": "--caption-scores",
    "image_scores": "--image-scores",
    "image_embeddings": "--image-embeddings",
    "caption_embeddings": "--caption-embeddings",
    "image_ids": "--image-ids",
    "caption_ids": "--caption-ids",
    "normalize": "--normalize",
    "rerank": "--rerank",
    **resource_words(),  # instances_json: --instances-json, cxc_source: --cxc-source or --source-dir, ...
    "ground_truth_dir": "--ground-truth",
    "target_metrics": "--metrics",
    "metrics": "--metrics",
    "benchmark": "--benchmarks",
    "benchmarks": "--benchmarks",
    "Ks": "--ks",
    "ks": "--ks",
    "partial": "--partial",
    "n_resamples": "--n-resamples",
    "seed": "--seed",
    "source_dir": "--source-dir",
    "removed_captions": "--removed-captions",
    "paper_results": "--paper-results",
    "overwrite": "--overwrite",
    "dataset_dir": "--dataset-dir",
    "dataset_repo": "--dataset-repo",
    "space_repo": "--space-repo",
}


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 in ASCII digits."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, not {text!r}")
    return int(text)


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number >= 0 in ASCII digits (a seed)."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, not {text!r}")
    return int(text)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress bars (also transformers' and huggingface_hub's) and no status lines (warnings and errors "
        "still print)",
    )


def say(args: argparse.Namespace, text: str) -> None:
    """A status line (``wrote ...``): stdout, or stderr when stdout carries JSON (--json); none with --quiet."""
    if getattr(args, "quiet", False):
        return
    print(text, file=sys.stderr if getattr(args, "json", False) else sys.stdout)
