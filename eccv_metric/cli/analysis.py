"""``eccv-caption compare`` and ``correlate``: files (or published details) in, analysis out (no metric math here).
``leaderboard`` is :mod:`eccv_metric.cli.board`."""

from __future__ import annotations

import argparse
import json
import sys

from eccv_metric.analysis import leaderboard
from eccv_metric.analysis.compare import compare
from eccv_metric.analysis.compare import compare_files
from eccv_metric.analysis.plots import pyplot
from eccv_metric.analysis.plots import tau_heatmap
from eccv_metric.analysis.report import scale_of
from eccv_metric.analysis.report import shown
from eccv_metric.analysis.stats import tau_matrix
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.cli.board import leaderboard_table
from eccv_metric.cli.board import paper_args
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.evaluate import resources_of
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import write_json_atomic


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="two systems' per-query results: CIs and paired significance")
    p.add_argument("a", help="per-query JSON of system A (evaluate --per-query); --from-hub: a model repo ORG/MODEL")
    p.add_argument("b", help="per-query JSON of system B (the same metrics, the same queries); --from-hub: ORG/MODEL")
    p.add_argument(
        "--from-hub",
        action="store_true",
        help="A and B are Hub model repos (ORG/MODEL, or ORG/MODEL@refs/pr/N): compare the per-query details their "
        "published eval results point at",
    )
    p.add_argument("--dataset-repo", help="--from-hub: the benchmark dataset (default: the one the models published)")
    p.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap / randomization samples (default 10000)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the intervals (default 0.95)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the resampling (default 0)")
    p.add_argument(
        "--method",
        choices=["randomization", "bootstrap"],
        default="randomization",
        help="paired test: sign-flip randomization (default) or paired bootstrap",
    )
    p.add_argument("--output", "-o", help="write the comparison as JSON here")
    g = p.add_argument_group("ground truth (each metric's queries, as evaluate read them; the same flags)")
    add_resource_flags(g)
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    skipped: dict[str, str] = {}
    notes: list[str] = []
    options: dict = dict(skipped=skipped)
    if args.from_hub:
        from eccv_metric.cli.hub import hub_per_query
        from eccv_metric.hub.board import board_truth

        (a, about_a), (b, about_b) = (hub_per_query(spec, args.dataset_repo) for spec in (args.a, args.b))
        if about_a["dataset"].get("id") != about_b["dataset"].get("id"):
            raise EvaluationError(f"--from-hub: {args.a} and {args.b} published details on different benchmarks "
                                  "(give --dataset-repo)")  # fmt: skip
        if options_of(args) == ResourceOptions():  # no ground-truth flag: the benchmark's own, as A was scored on
            revision = about_a["dataset"].get("revision")
            where = about_a["dataset"]["id"]
            try:
                options["resources"] = board_truth(where, revision if isinstance(revision, str) else None)
            except EvaluationError as exc:
                raise EvaluationError(in_words(exc, {"dataset_repo": "--dataset-repo"})) from None
        else:
            options["resources"] = resources_of(args)
        rows = compare(a, b, args.n_resamples, args.confidence, args.seed, args.method, **options)  # type: ignore[arg-type]
        revisions = [about["dataset"].get("revision") or "an unnamed revision" for about in (about_a, about_b)]
        if revisions[0] != revisions[1]:
            notes.append(f"note: A was scored on the benchmark at {revisions[0]}, B at {revisions[1]}")
    else:
        options["resources"] = resources_of(args)
        rows = compare_files(args.a, args.b, args.n_resamples, args.confidence, args.seed, args.method, **options)
    table = [("metric", "A", "CI A", "B", "CI B", "A-B", "p", "p Holm")]
    for r in rows:
        m = r["metric"]
        table.append(
            (
                f"{m}/{r['direction']}",
                shown(m, r["a"]),
                f"[{shown(m, r['a_low'])}, {shown(m, r['a_high'])}]",
                shown(m, r["b"]),
                f"[{shown(m, r['b_low'])}, {shown(m, r['b_high'])}]",
                ("+" if r["diff"] >= 0 else "-") + shown(m, abs(r["diff"])),
                f"{r['p_value']:.4f}",
                f"{r['p_holm']:.4f}",
            )
        )
    if args.output:
        write_json_atomic(args.output, rows)
    if args.quiet:
        return 0
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    print(f"A: {args.a}\nB: {args.b}")
    for row in table:
        print(
            " ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print(footnote(args, rows))
    for metric, why in skipped.items():
        print(f"skipped {metric}: {why}")
    for note in notes:
        print(note)
    return 0


def footnote(args: argparse.Namespace, rows: list[dict]) -> str:
    """What the table's columns mean, as whole sentences."""
    units = sorted({scale_of(r["metric"]) for r in rows})
    shown_as = [w for unit, w in (("fraction", "fractions in percent"), ("rank", "ranks as they are")) if unit in units]
    parts = [
        f"{args.confidence:.0%} percentile bootstrap CIs ({args.n_resamples} resamples, seed {args.seed})",
        f"p: two-sided paired {args.method} test",
        f"p Holm: Holm-Bonferroni adjusted over the {len(rows)} row(s)",
    ]
    if shown_as:
        parts.append("values: " + " and ".join(shown_as))
    if any(r["stratified"] for r in rows):
        parts.append("COCO 1K resampled within its folds")
    return "; ".join(parts) + "."


def add_correlate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("correlate", help="Kendall tau-b between metrics over the paper's leaderboard (+ yours)")
    paper_args(p)
    p.add_argument(
        "--plot", help="write a heatmap PNG here (needs matplotlib: pip install matplotlib, the package's [plot] extra)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table", help="table (default) or JSON")
    p.set_defaults(func=run_correlate)


def run_correlate(args: argparse.Namespace) -> int:
    metrics = leaderboard.CORRELATE_METRICS
    if args.plot:  # a missing matplotlib is said before anything is printed
        check_output_path(args.plot)
        pyplot()
    taus = tau_matrix(leaderboard_table(args)[0], metrics)
    if args.format == "json":
        print(json.dumps(taus, indent=1))
    else:
        print(f"{'':<16}" + "".join(f" {leaderboard.LABELS[m]:>9}" for m in metrics))
        for m in metrics:
            print(f"{m:<16}" + "".join(f"{taus[m][n]:10.2f}" for n in metrics))
    if args.plot:
        tau_heatmap(taus, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0
