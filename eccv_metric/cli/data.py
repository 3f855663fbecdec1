"""``eccv-caption build`` and ``push``: the dataset folder and the Hub upload (layers over eccv_caption_dataset)."""

from __future__ import annotations

import argparse

from eccv_caption_dataset.sources import EXPECTED
from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import say
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import check_input_path
from eccv_metric.core.files import named_file
from eccv_metric.formats.ids import load_ids


def add_build(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build the Hub-ready ECCV Caption dataset folder (Parquet + card)")
    p.add_argument("--output", "-o", required=True, help="folder to create (written atomically)")
    p.add_argument("--source-dir", help=f"a folder searched, in any subfolder, for local copies of: {EXPECTED}")
    p.add_argument("--configs", nargs="+", help="which configs (default: all buildable; see the dataset card)")
    p.add_argument("--download", action="store_true", help="download missing sources from their canonical homes")
    p.add_argument("--image-ids", help="embed only these images (a file of ids); default: every available one")
    p.add_argument(
        "--removed-captions", help="caption ids to flag as removed_in_eccv (default: the paper's appendix C.1 list)"
    )
    p.add_argument("--paper-results", help="a results CSV for the card (default: the paper's Table 4, shipped)")
    p.add_argument("--repo-id", help="the Hub dataset repo the card's usage snippet loads (push also sets it)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from eccv_caption_dataset.hub_folder import build

    ids = {}
    for flag in ("image_ids", "removed_captions"):
        with named_file(CLI_WORDS[flag]):
            ids[flag] = load_ids(getattr(args, flag)).tolist() if getattr(args, flag) else None
    with named_file(CLI_WORDS["paper_results"]):  # read when the card is written: checked before the build
        check_input_path(args.paper_results, "a results CSV")
    report = build(
        args.output,
        source_dir=args.source_dir,
        configs=args.configs,
        download=args.download,
        embed_image_ids=ids["image_ids"],
        removed_captions=ids["removed_captions"],
        paper_results=args.paper_results,
        overwrite=args.overwrite,
        repo_id=args.repo_id,
        log=(lambda _: None) if args.quiet else print,
    )
    say(args, f"wrote {args.output}: " + ", ".join(f"{k} ({v} rows)" for k, v in report["built"].items()))
    return 0


def add_push(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("push", help="upload the dataset folder and the metric Space to the Hub")
    p.add_argument("--dataset-dir", help="a folder made by `eccv-caption build`")
    p.add_argument("--dataset-repo", help="dataset repo id, e.g. user/eccv-caption")
    p.add_argument("--space-repo", help="Space repo id for the evaluate metric, e.g. user/eccv_map_at_r")
    p.add_argument("--private", action="store_true", help="create private repos")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="list exactly what would be sent, send nothing")
    p.set_defaults(func=run_push)


def run_push(args: argparse.Namespace) -> int:
    from eccv_caption_dataset.push import push

    if not (args.dataset_repo or args.space_repo):
        raise EvaluationError("nothing to push: give --dataset-repo and/or --space-repo")
    push(args.dataset_dir, args.dataset_repo, args.space_repo, args.private, args.revision, args.dry_run)
    return 0
