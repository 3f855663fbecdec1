"""``eccv-caption leaderboard``: the paper's table with your results files and the Hub's models ranked in, as a
table, a CSV or Markdown file, and (``--significance``) whether adjacent published models differ beyond chance."""

from __future__ import annotations

import argparse
import sys

from eccv_metric.analysis import leaderboard
from eccv_metric.analysis.board_table import check_board_path
from eccv_metric.analysis.board_table import write_board
from eccv_metric.analysis.compare import compare
from eccv_metric.analysis.report import shown
from eccv_metric.analysis.results_files import read_results
from eccv_metric.analysis.results_files import user_names
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.common import positive_int
from eccv_metric.cli.common import say
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.hub.eval_tasks import TASKS
from eccv_metric.hub.eval_tasks import shown as shown_in_unit


def paper_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--paper-dir", help="folder of the paper's two CSVs (default: the copy shipped with the package)")
    p.add_argument(
        "--with",
        dest="extra",
        nargs="+",
        default=[],
        help="your results JSON files (evaluate -o), or the folder -o wrote for several --model; rows are named by "
        "the model each file's provenance records (the file name where there is none)",
    )


def add_leaderboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="the paper's 25 models (i2t/t2i averages) with your models ranked in")
    paper_args(p)
    p.add_argument("--sort", default="eccv_map_at_r", choices=leaderboard.CORRELATE_METRICS, help="metric to sort by")
    p.add_argument(
        "--from-hub",
        metavar="DATASET_REPO",
        help="add the models of the Hub's leaderboards of this benchmark dataset (every task of its eval.yaml)",
    )
    p.add_argument(
        "--output",
        "-o",
        help="also write the table here, every number of every row: .csv or .md (Markdown), by the name",
    )
    p.add_argument(
        "--significance",
        action="store_true",
        help="--from-hub: for each two adjacent models that published details, the paired test and CIs of compare "
        "on the --sort metric",
    )
    p.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="--from-hub: do not recompute the published numbers from their evidence (by default every model's "
        "evidence is downloaded once and scored again, the outcome kept for the next run); the rows are then marked "
        "'not checked'",
    )
    p.add_argument(
        "--verified-only",
        action="store_true",
        help="--from-hub: show only the Hub's models whose every number was recomputed equal from its evidence (the "
        "paper's rows and --with files stay, marked)",
    )
    p.add_argument("--n-resamples", type=positive_int, default=10_000, help="--significance: resamples (10000)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="--significance: seed of the resampling (0)")
    p.set_defaults(func=run_leaderboard)


def leaderboard_table(args: argparse.Namespace) -> tuple[dict, list[str], dict, dict]:
    """(the table: the paper's models with yours and the Hub's, your row names, every row's per-direction results
    (fractions) where known, the Hub's rows as published)."""
    folder = leaderboard.paper_dir(args.paper_dir)
    table = leaderboard.paper_table(folder)
    names, notes = user_names(args.extra, list(table))
    for note in notes:  # stderr when stdout carries JSON
        print(note, file=sys.stderr if getattr(args, "format", "table") == "json" else sys.stdout)
    extra = {name: read_results(str(path)) for name, path in names.items()}
    hub: dict = {}
    if getattr(args, "from_hub", None):  # the Hub's leaderboard of the benchmark (eccv_metric.hub.board)
        from eccv_metric.cli.hub import hub_board_rows

        hub = hub_board_rows(args.from_hub, [*table, *extra], getattr(args, "verify", True))
        if getattr(args, "verified_only", False):
            hub = verified_only(hub)
        extra.update({name: row.published.results for name, row in hub.items()})
    merged = leaderboard.merge(table, extra)
    for name in extra:
        if not merged[name] and name not in hub:  # a Hub model with one direction: its row, its numbers in -o
            raise EvaluationError(
                f"{name}: no metric has both i2t and t2i values; the leaderboard ranks i2t/t2i averages"
            )
    by_direction = {m: {k: {d: v / 100 for d, v in by.items()} for k, by in r.items()}
                    for m, r in leaderboard.per_direction(folder).items()}  # fmt: skip
    return merged, list(names), {**by_direction, **extra}, hub


def run_leaderboard(args: argparse.Namespace) -> int:
    metrics = leaderboard.CORRELATE_METRICS
    if args.output:
        check_board_path(args.output)
    if args.significance and not args.from_hub:
        raise EvaluationError("--significance compares published details: give --from-hub DATASET_REPO")
    if args.verified_only and not args.from_hub:
        raise EvaluationError("--verified-only keeps the Hub's models recomputed from their evidence: give --from-hub "
                              "DATASET_REPO")  # fmt: skip
    if args.verified_only and not args.verify:
        raise EvaluationError("--verified-only needs the numbers verified: drop --no-verify")
    if args.significance and args.sort == "rsum":
        raise EvaluationError("--significance tests the --sort metric's per-query values; RSUM is a sum: sort by a "
                              "metric (e.g. --sort eccv_map_at_r)")  # fmt: skip
    table, yours, directions, hub = leaderboard_table(args)
    order = sorted(table, key=lambda m: -table[m].get(args.sort, float("-inf")))
    marks = {m: trust_label(m, yours, hub) for m in order} if args.from_hub else {}
    print(f"{'model':<44}" + "".join(f" {leaderboard.LABELS[m]:>9}" for m in metrics) + ("  trust" if marks else ""))
    for model in order:
        cells = "".join(f" {table[model][m]:9.2f}" if m in table[model] else f" {'-':>9}" for m in metrics)
        print(f"{model[:43]:<44}{cells}" + (f"  {marks[model]}" if marks else ""))
    if marks:
        from eccv_metric.hub.trust import LEGEND

        print(f"\n{LEGEND}")
    for name in yours:
        rank = leaderboard.ranks(table, name)
        shown_ranks = ", ".join(f"{m} #{rank[m]}" for m in metrics if m in rank)
        print(f"\n{name} ranks (of {len(table)}): {shown_ranks}")
    if args.output:
        columns = [(m, leaderboard.LABELS[m], 2) for m in metrics]
        columns += [(t.id, t.id, 2 if t.scale == "fraction" else 3) for t in TASKS]
        rows = [(m, {**table[m], **_per_task(directions.get(m, {})), **({"trust": marks[m]} if marks else {})})
                for m in order]  # fmt: skip
        columns += [("trust", "trust", 0)] if marks else []
        write_board(args.output, rows, columns)
        say(args, f"wrote {args.output}")
    if args.significance:
        for line in significance(args, [name for name in order if name in hub], hub):
            print(line)
    return 0


def trust_label(name: str, yours: list[str], hub: dict) -> str:
    """A row's mark (:mod:`eccv_metric.hub.trust`): the Hub's rows as verified, the paper's and your files' named."""
    if name in hub:
        return hub[name].trust.label
    return "your file" if name in yours else "paper"


def verified_only(hub: dict) -> dict:
    """``--verified-only``: the Hub's rows whose every number was recomputed equal; the others named."""
    from eccv_metric.hub.trust import RECOMPUTED

    kept = {name: row for name, row in hub.items() if row.trust.mark == RECOMPUTED}
    left = [f"{name} ({row.trust.mark})" for name, row in hub.items() if name not in kept]
    if left:
        print(f"left out (--verified-only: not recomputed from their evidence): {', '.join(left)}")
    return kept


def _per_task(results: dict) -> dict[str, float]:
    """A row's per-direction numbers under their task ids, in the task's unit (percent, rho)."""
    return {t.id: shown_in_unit(t, results[t.metric][t.direction]) for t in TASKS
            if t.direction in results.get(t.metric, {})}  # fmt: skip


def significance(args: argparse.Namespace, ranked: list[str], hub: dict) -> list[str]:
    """For each two adjacent Hub rows (in rank order) with details: compare's paired test on the --sort metric, each
    metric's queries those of the benchmark's ground truth at the revision the first row's details were scored
    on."""
    from eccv_metric.hub.board import board_details
    from eccv_metric.hub.board import board_truth
    from eccv_metric.hub.trust import DIFFERS
    from eccv_metric.hub.trust import NOT_RECOMPUTABLE

    doubted = [name for name in ranked if hub[name].trust.mark in (DIFFERS, NOT_RECOMPUTABLE)]
    try:
        details = board_details(hub, [name for name in ranked if name not in doubted])
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, {"dataset_repo": "--from-hub"})) from None
    with_details = [name for name in ranked if name in details]
    lines = [
        f"\nsignificance of {leaderboard.LABELS[args.sort]} between adjacent models with published details "
        f"(paired randomization test, {args.n_resamples} resamples, seed {args.seed}; 95% CI of the difference):"
    ]
    lines += [f"  {name}: not compared (marked {hub[name].trust.mark}: its evidence does not vouch for its per-query "
              "values)" for name in doubted]  # fmt: skip
    if len(with_details) < 2:
        return [*lines, f"  {len(with_details)} model(s) published details: nothing to compare"]
    truths: dict = {}  # revision -> the benchmark's ground truth there
    for a, b in zip(with_details, with_details[1:], strict=False):
        pq_a, pq_b = ({args.sort: details[n][0].get(args.sort, {})} for n in (a, b))
        if not pq_a[args.sort] or not pq_b[args.sort]:
            lines.append(f"  {a} vs {b}: no per-query {args.sort} in both details")
            continue
        revisions = {details[n][1]["dataset"].get("revision") for n in (a, b)}
        revision = details[a][1]["dataset"].get("revision")
        try:
            if revision not in truths:
                truths[revision] = board_truth(args.from_hub, revision if isinstance(revision, str) else None)
        except EvaluationError as exc:
            raise EvaluationError(in_words(exc, {"dataset_repo": "--from-hub"})) from None
        try:
            rows = compare(pq_a, pq_b, args.n_resamples, 0.95, args.seed, resources=truths[revision])
        except EvaluationError as exc:  # one pair that cannot be compared is said; the others stand
            lines.append(f"  {a} vs {b}: not compared ({exc})")
            continue
        cells = "; ".join(
            f"{r['direction']} {'+' if r['diff'] >= 0 else '-'}{shown(args.sort, abs(r['diff']))} "
            f"[{shown(args.sort, r['diff_low'])}, {shown(args.sort, r['diff_high'])}] p={r['p_value']:.4f}"
            for r in rows
        )
        note = " (note: scored on different dataset revisions)" if len(revisions) > 1 else ""
        lines.append(f"  {a} vs {b}: {cells}{note}")
    return lines
