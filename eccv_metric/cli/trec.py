"""``eccv-caption export-trec`` / ``import-trec``: qrels and runs as TREC files (a thin layer over formats.trec)."""

from __future__ import annotations

import argparse

from eccv_metric.cli.evaluate import resources_of
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import load_npy
from eccv_metric.formats import trec
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.formats.rankings import write_rankings
from eccv_metric.inputs.matrix import ScoreMatrix

QRELS = ("coco", "cxc", "eccv", "pm")


def add_export_trec(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-trec", help="write TREC qrels of a benchmark, or a TREC run of rankings / scores")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--qrels", choices=QRELS, help="the positives of this benchmark as TREC qrels")
    what.add_argument("--rankings", help="rankings JSON (official format) to write as a TREC run")
    what.add_argument("--scores", help=".npy score matrix (images x captions) to write as a top-depth TREC run")
    p.add_argument("--direction", nargs="+", choices=["i2t", "t2i"], default=["i2t", "t2i"])
    p.add_argument("--image-ids", help="image ids of the score rows; default Karpathy order")
    p.add_argument("--caption-ids", help="caption ids of the score columns; default Karpathy order")
    p.add_argument("--depth", type=int, default=100, help="run depth from a score matrix (default 100)")
    p.add_argument("--tag", default="eccv_caption", help="run tag (one word)")
    p.add_argument("--instances-json", help="COCO instances JSON or a built dataset folder (PM qrels)")
    p.add_argument("--output", "-o", required=True, help="the TREC file to write")
    p.set_defaults(func=run_export)


def add_import_trec(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-trec", help="convert a TREC run into the official rankings JSON")
    p.add_argument("run", help="TREC run file: <query> Q0 <doc> <rank> <score> <tag>")
    p.add_argument("--output", "-o", required=True, help="rankings JSON to write")
    p.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    check_output_path(args.output)
    resources = resources_of(args)
    gt = resources.gt
    parts = []
    if args.qrels:
        from eccv_metric.benchmarks.definitions import REGISTRY

        bench = REGISTRY.get("coco_5k")
        for direction in args.direction:
            lists = trec.positives_lists(gt, resources.relation(bench, args.qrels, direction), direction)
            parts.append(trec.qrels_lines(lists, direction))
    elif args.rankings:
        rankings = load_rankings(args.rankings)
        parts = [trec.run_lines(rankings[d], d, args.tag) for d in args.direction if d in rankings]
    else:
        expected = "a .npy float matrix, scores[i, j] = similarity(image i, caption j)"
        image_ids = load_ids(args.image_ids, "image ids") if args.image_ids else None
        caption_ids = load_ids(args.caption_ids, "caption ids") if args.caption_ids else None
        source = ScoreMatrix(load_npy(args.scores, expected), image_ids, caption_ids)
        parts = [trec.run_from_scores(source, gt, d, args.depth, args.tag) for d in args.direction]
    count = trec.write_lines(args.output, (line for part in parts for line in part))
    if not count:
        raise EvaluationError("nothing to write: no list for the requested directions")
    print(f"wrote {args.output} ({count} lines)")
    return 0


def run_import(args: argparse.Namespace) -> int:
    check_output_path(args.output)
    rankings = trec.read_run_arrays(args.run)
    write_rankings(args.output, rankings)
    print(f"wrote {args.output}: " + ", ".join(f"{d} ({len(v[0])} queries)" for d, v in rankings.items()))
    return 0
