"""``eccv-caption export-trec`` / ``import-trec``: qrels and runs as TREC files (a thin layer over formats.trec and
formats.qrels).

One file per direction: trec_eval's ``all`` line averages every query of a
file, so a file pooling i2t and t2i queries would report a mean over both
directions, which no benchmark defines. ``-o run.trec`` with two directions
writes ``run.i2t.trec`` and ``run.t2i.trec``; with one direction, ``run.trec``;
``--pooled`` writes every direction into the one file (and says so).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.cli.common import say
from eccv_metric.cli.evaluate import resources_of
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.core import progress
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import load_npy
from eccv_metric.core.files import named_file
from eccv_metric.formats import qrels
from eccv_metric.formats import trec
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import not_rankings
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.formats.rankings import write_rankings
from eccv_metric.inputs.matrix import ScoreMatrix

QRELS = ("coco", "cxc", "cxc_graded", "eccv", "pm")
TIES_HELP = (
    "how equal scores are ordered: stable = the given order (this project's rule), trec_eval = document id "
    "descending as strings (trec_eval, pytrec_eval and MTEB)"
)


def add_export_trec(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-trec", help="write TREC qrels of a benchmark, or a TREC run of rankings / scores")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--qrels",
        choices=QRELS,
        help="the positives of this benchmark as TREC qrels (relevance 1; cxc_graded: the SITS rating rounded half up)",
    )
    what.add_argument("--rankings", help="rankings JSON (official format) to write as a TREC run")
    what.add_argument("--scores", help=".npy score matrix (images x captions) to write as a top-depth TREC run")
    p.add_argument(
        "--direction",
        nargs="+",
        choices=["i2t", "t2i"],
        default=["i2t", "t2i"],
        help="the directions to write (default both: one file each, see --output)",
    )
    p.add_argument("--image-ids", help="image ids of the score rows; default Karpathy order")
    p.add_argument("--caption-ids", help="caption ids of the score columns; default Karpathy order")
    p.add_argument("--depth", type=int, default=100, help="run depth from a score matrix (default 100)")
    p.add_argument(
        "--ties",
        choices=trec.TIES,
        default="stable",
        help=TIES_HELP + "; with trec_eval a run from --scores carries the real scores (rankings keep their order)",
    )
    p.add_argument("--tag", default="eccv_caption", help="run tag (one word)")
    add_resource_flags(p, ("instances_json", "cxc_source"), source_dir=False)  # pm qrels; cxc_graded
    p.add_argument(
        "--output",
        "-o",
        required=True,
        help="the TREC file; with two directions one file each: run.trec -> run.i2t.trec, run.t2i.trec",
    )
    p.add_argument(
        "--pooled",
        action="store_true",
        help="write every direction into the one --output file (trec_eval's 'all' then averages over both)",
    )
    p.set_defaults(func=run_export)


def add_import_trec(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-trec", help="convert a TREC run into the official rankings JSON")
    p.add_argument("run", help="TREC run file: <query> Q0 <doc> <rank> <score> <tag>")
    p.add_argument("--ties", choices=trec.TIES, default="stable", help=TIES_HELP + "; stable = then by rank")
    p.add_argument("--output", "-o", required=True, help="rankings JSON to write")
    p.set_defaults(func=run_import)


def direction_path(output: str, direction: str) -> str:
    """``run.trec`` -> ``run.i2t.trec``; ``run`` -> ``run.i2t``."""
    path = Path(output)
    name = f"{path.stem}.{direction}{path.suffix}" if path.suffix else f"{path.name}.{direction}"
    return str(path.with_name(name))


def run_export(args: argparse.Namespace) -> int:
    resources = resources_of(args)
    gt = resources.gt
    directions = list(dict.fromkeys(args.direction))
    outputs = {
        d: args.output if args.pooled or len(directions) == 1 else direction_path(args.output, d) for d in directions
    }
    for path in dict.fromkeys(outputs.values()):
        check_output_path(path)
    parts: dict[str, Iterator[str]] = {}
    if args.qrels:
        bench = REGISTRY.get("coco_5k")
        relation = "cxc" if args.qrels == "cxc_graded" else args.qrels
        for direction in directions:  # PM: ~12M pairs a direction, listed in ~20 s
            with progress.working(f"listing the {args.qrels} positives ({direction})"):
                lists = qrels.positives_lists(gt, resources.relation(bench, relation, direction), direction)
            grades = qrels.cxc_grades(resources.ratings("sits"), direction) if args.qrels == "cxc_graded" else None
            parts[direction] = qrels.qrels_lines(lists, direction, grades)
    elif args.rankings:
        if is_mteb_predictions(args.rankings):
            raise not_rankings(args.rankings, "`eccv-caption evaluate --run` scores them; export-trec takes rankings")
        with named_file("--rankings"):
            rankings = load_rankings(args.rankings)
        for direction in directions:  # checked as evaluate checks them: no TREC line of an id it would refuse
            if direction in rankings:
                trec.check_lists(rankings[direction], gt, direction, args.rankings)
        parts = {d: trec.run_lines(rankings[d], d, args.tag) for d in directions if d in rankings}
    else:
        expected = "a .npy float matrix, scores[i, j] = similarity(image i, caption j)"
        with named_file("--image-ids"):
            image_ids = load_ids(args.image_ids, "image ids") if args.image_ids else None
        with named_file("--caption-ids"):
            caption_ids = load_ids(args.caption_ids, "caption ids") if args.caption_ids else None
        with named_file("--scores"):
            scores = load_npy(args.scores, expected)
        source = ScoreMatrix(scores, image_ids, caption_ids)
        parts = {d: trec.run_from_scores(source, gt, d, args.depth, args.tag, args.ties) for d in directions}
    if not parts:
        raise EvaluationError(f"nothing to write: no list for the directions {', '.join(directions)}")
    if args.pooled:
        lines = progress.iterate(
            (line for part in parts.values() for line in part), f"writing {args.output}", unit="line"
        )
        count = trec.write_lines(args.output, lines)
        say(args, f"wrote {args.output} ({count} lines, {' + '.join(parts)} pooled: trec_eval's 'all' mixes them)")
        return 0
    for direction, part in parts.items():
        lines = progress.iterate(part, f"writing {outputs[direction]}", unit="line")
        count = trec.write_lines(outputs[direction], lines)
        if not count:
            raise EvaluationError(f"nothing to write for {direction}: no list")
        say(args, f"wrote {outputs[direction]} ({count} lines, {direction})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    check_output_path(args.output)
    rankings, notes = trec.read_run_parts(args.run, args.ties)
    write_rankings(args.output, rankings)
    say(args, f"wrote {args.output}: " + ", ".join(f"{d} ({len(v[0])} queries)" for d, v in rankings.items()))
    for note in notes:  # the lists are written as trec_eval orders them: the note says why they may be reversed
        print(f"warning: {note}", file=sys.stderr)
    return 0
