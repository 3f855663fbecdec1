"""``eccv-caption compare``, ``correlate`` and ``leaderboard``: files in, analysis out (no metric math here)."""

from __future__ import annotations

import argparse
import json
import sys

from eccv_metric.analysis import leaderboard
from eccv_metric.analysis.compare import compare_files
from eccv_metric.analysis.plots import pyplot
from eccv_metric.analysis.plots import tau_heatmap
from eccv_metric.analysis.report import scale_of
from eccv_metric.analysis.report import shown
from eccv_metric.analysis.stats import tau_matrix
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.evaluate import resources_of
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import write_json_atomic
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import is_rankings_json

RESULTS_FORMAT = 'the results JSON of `eccv-caption evaluate -o` {metric: {"i2t": value, "t2i": value}} (fractions)'


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="two systems' per-query results: CIs and paired significance")
    p.add_argument("a", help="per-query JSON of system A (evaluate --per-query)")
    p.add_argument("b", help="per-query JSON of system B (the same metrics, the same queries)")
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
    rows = compare_files(
        args.a,
        args.b,
        args.n_resamples,
        args.confidence,
        args.seed,
        args.method,
        skipped=skipped,
        resources=resources_of(args),
    )
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


def _paper_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--paper-dir", help="folder of the paper's two CSVs (default: the copy shipped with the package)")
    p.add_argument("--with", dest="extra", nargs="+", default=[], help="your results JSON files (evaluate -o)")


def add_correlate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("correlate", help="Kendall tau-b between metrics over the paper's leaderboard (+ yours)")
    _paper_args(p)
    p.add_argument(
        "--plot", help="write a heatmap PNG here (needs matplotlib: pip install matplotlib, the package's [plot] extra)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table", help="table (default) or JSON")
    p.set_defaults(func=run_correlate)


def read_results(path: str) -> dict[str, dict[str, float]]:
    """A results file of ``evaluate -o``: fractions per metric and direction (errors name the file)."""
    if is_rankings_json(path) or is_mteb_predictions(path):
        rankings = is_rankings_json(path)
        what = "a rankings file (evaluate --rankings)" if rankings else "MTEB predictions (evaluate --run)"
        raise EvaluationError(f"{path} is {what}, not results: give the results file of `eccv-caption evaluate -o`")
    raw = require_object(read_json(path, RESULTS_FORMAT), path, RESULTS_FORMAT)
    out: dict[str, dict[str, float]] = {}
    for metric, by_dir in raw.items():
        if metric == "provenance":  # evaluate --model -o: where the numbers come from, not a metric
            continue
        by_dir = require_object(by_dir, path, f"{metric} to map directions to values")
        if any(isinstance(v, dict) for v in by_dir.values()):
            raise EvaluationError(f"{path} is a per-query file (evaluate --per-query): give the results file (-o)")
        for direction, value in by_dir.items():
            if type(value) not in (int, float):
                raise EvaluationError(f"{path}: {metric}/{direction} must be a number, not {value!r:.30}")
            try:
                kind = metric_info(metric)[1]
            except EvaluationError:
                continue  # a metric the leaderboard does not show
            if kind.scale == "fraction" and not 0 <= value <= 1:
                raise EvaluationError(
                    f"{path}: {metric}/{direction} = {value} is not a fraction in [0, 1] (results are fractions, "
                    "as evaluate -o writes them, not percent)"
                )
        out[metric] = dict(by_dir)
    return out


def _leaderboard(args: argparse.Namespace) -> tuple[dict[str, dict[str, float]], list[str]]:
    """The paper's table with the user's models (unique names, :func:`leaderboard.user_names`) and their names."""
    table = leaderboard.paper_table(leaderboard.paper_dir(args.paper_dir))
    names, notes = leaderboard.user_names(args.extra, list(table))
    for note in notes:  # stderr when stdout carries JSON
        print(note, file=sys.stderr if getattr(args, "format", "table") == "json" else sys.stdout)
    extra = {name: read_results(str(path)) for name, path in names.items()}
    if getattr(args, "from_hub", None):  # the Hub's leaderboard of the benchmark (eccv_metric.hub.board)
        from eccv_metric.cli.hub import hub_rows

        extra.update(hub_rows(args.from_hub, [*table, *extra]))
    merged = leaderboard.merge(table, extra)
    for name in extra:
        if not merged[name]:
            raise EvaluationError(
                f"{name}: no metric has both i2t and t2i values; the leaderboard ranks i2t/t2i averages"
            )
    return merged, list(names)


def run_correlate(args: argparse.Namespace) -> int:
    metrics = leaderboard.CORRELATE_METRICS
    if args.plot:  # a missing matplotlib is said before anything is printed
        check_output_path(args.plot)
        pyplot()
    taus = tau_matrix(_leaderboard(args)[0], metrics)
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


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="the paper's 25 models (i2t/t2i averages) with your models ranked in")
    _paper_args(p)
    p.add_argument("--sort", default="eccv_map_at_r", choices=leaderboard.CORRELATE_METRICS, help="metric to sort by")
    p.add_argument("--from-hub", metavar="DATASET_REPO", help="add the models of the Hub's leaderboard of this dataset")
    p.set_defaults(func=run_leaderboard)


def run_leaderboard(args: argparse.Namespace) -> int:
    metrics = leaderboard.CORRELATE_METRICS
    table, yours = _leaderboard(args)
    order = sorted(table, key=lambda m: -table[m].get(args.sort, float("-inf")))
    print(f"{'model':<44}" + "".join(f" {leaderboard.LABELS[m]:>9}" for m in metrics))
    for model in order:
        cells = "".join(f" {table[model][m]:9.2f}" if m in table[model] else f" {'-':>9}" for m in metrics)
        print(f"{model[:43]:<44}{cells}")
    for name in yours:
        rank = leaderboard.ranks(table, name)
        shown_ranks = ", ".join(f"{m} #{rank[m]}" for m in metrics if m in rank)
        print(f"\n{name} ranks (of {len(table)}): {shown_ranks}")
    return 0
