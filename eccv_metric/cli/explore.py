"""``eccv-caption explore``: a run's retrievals (:mod:`eccv_metric.explore`) as text, JSON or a self-contained
HTML report (:mod:`eccv_metric.cli.explore_page`); flags in, the library's views out (no metric math here).

A run is a file or folder (``RUN``, ``--vs RUN2``: :func:`~eccv_metric.explore.runs.read_run`, an evidence folder
included) or a model's published run (``--from-hub MODEL``, ``--vs-from-hub MODEL2``, with ``--dataset-repo``, named
as ``verify --from-hub`` names them: :func:`~eccv_metric.hub.explore_hub.published_run`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from eccv_metric.analysis.compare import compare
from eccv_metric.analysis.compare import intervals
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.common import positive_int
from eccv_metric.cli.common import say
from eccv_metric.cli.explore_page import bar_chart
from eccv_metric.cli.explore_page import numbers_table
from eccv_metric.cli.explore_page import page
from eccv_metric.cli.explore_page import set_section
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import write_text_atomic
from eccv_metric.explore.family import browsable
from eccv_metric.explore.media import Media
from eccv_metric.explore.runs import FILE_WORDS
from eccv_metric.explore.runs import Run
from eccv_metric.explore.runs import own_resources
from eccv_metric.explore.runs import read_run
from eccv_metric.explore.runs import scored_options
from eccv_metric.explore.sets import query_sets
from eccv_metric.explore.table import DEPTH
from eccv_metric.explore.table import QueryTable
from eccv_metric.explore.view import table_of
from eccv_metric.explore.view import view_of
from eccv_metric.hub.browse import browsable_benchmarks
from eccv_metric.hub.cards import cards_html

RUN_HELP = (
    "the run: a rankings JSON, a TREC run or a scores .npy (images x captions), or a folder of its files "
    "(image_embeddings.npy / caption_embeddings.npy with image_ids / caption_ids, scores.npy, "
    "rerank_<direction>.npz: what evaluate --model ... --save-embeddings DIR writes), or an evidence folder "
    "(evaluate --evidence DIR); not with --from-hub"
)
EXPLORE_WORDS = {
    **CLI_WORDS,
    "from_hub": "--from-hub",
    "vs_from_hub": "--vs-from-hub",
    "dataset_repo": "--dataset-repo",
    "data": "--data",
    "images": "--images",
}


def add_explore(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="look at a run's retrievals: each query's top items marked by COCO, ECCV Caption, CxC and PM; query "
        "sets (COCO's false negatives, A right and B wrong, the worst, a sample); --html: a self-contained report",
    )
    p.add_argument("run", nargs="?", help=RUN_HELP)
    p.add_argument("--vs", metavar="RUN2", help="a second run (the same kinds of files), shown beside the first")
    p.add_argument("--from-hub", metavar="MODEL", help="the run ORG/MODEL published for --dataset-repo (or "
                   "ORG/MODEL@REVISION, @refs/pr/N): its evidence at the details commit its eval results name, the "
                   "benchmark's ground truth at their dataset.revision, its published per-query values")  # fmt: skip
    p.add_argument("--vs-from-hub", metavar="MODEL2", help="a second published run, shown beside the first")
    p.add_argument("--dataset-repo", help="--from-hub / --vs-from-hub: the benchmark dataset repo, ORG/NAME")
    p.add_argument("--benchmark", default="eccv", choices=browsable_benchmarks(), metavar="BENCHMARK",
                   help="the benchmark whose queries are shown (default eccv); the items are marked by every "
                   "benchmark ranking the same gallery")  # fmt: skip
    p.add_argument("--directions", nargs="+", choices=["i2t", "t2i", "t2t", "i2i"],
                   help="the directions (default: the benchmark's)")  # fmt: skip
    p.add_argument(
        "--query", type=non_negative_int, help="print this query's view (in each direction it is a query of)"
    )
    p.add_argument("--k", type=positive_int, default=DEPTH, help=f"items shown per query (default {DEPTH})")
    p.add_argument("-n", type=positive_int, default=8, help="queries of each set shown (default 8)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random sample (default 0)")
    p.add_argument("--html", help="write the report here: one self-contained HTML file (thumbnails embedded)")
    p.add_argument("--json", action="store_true", help="print the query sets (or --query's view) as JSON")
    p.add_argument("--data", help="a built folder or Hub dataset repo: the items' pixels and texts (and, without "
                   "--ground-truth, its ground truth)")  # fmt: skip
    p.add_argument("--images", nargs="+", help="image folders or zips: pixels a build does not embed")
    p.add_argument("--normalize", action="store_true", help="embeddings: cosine similarity instead of dot product")
    p.add_argument("--n-resamples", type=positive_int, default=1000,
                   help="bootstrap samples of the report's intervals (default 1000)")  # fmt: skip
    g = p.add_argument_group("ground truth (as evaluate reads it; the same flags)")
    add_resource_flags(g)
    p.set_defaults(func=run_explore)


def resources_for(args: argparse.Namespace, options: ResourceOptions) -> Resources:
    """The flags' ground truth (``options``); with ``--data``, the data's own for what the flags leave out (as
    ``evaluate --model --data`` reads it)."""
    if not args.data:
        return options.resources()
    from eccv_metric.models.data.source import DataSource
    from eccv_metric.models.data.source import default_resources

    return default_resources(DataSource(args.data), options)


def run_explore(args: argparse.Namespace) -> int:
    check_output_path(args.html)
    started = time.perf_counter()
    try:  # a folder that is not there, flags that do not go together: one line, before any loading
        hub = check_runs(args)
        media = Media(args.data, args.images)
        runs = read_runs(args)
        own = own_resources(runs)
        resources = own if own is not None else resources_for(args, scored_options(runs, options_of(args)))
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, EXPLORE_WORDS)) from None
    if hub and not args.quiet:
        for run in runs:
            print(f"{run.name}: {run.about}", file=sys.stderr)
    directions = args.directions or list(REGISTRY.get(args.benchmark).directions)
    for direction in directions:
        browsable(args.benchmark, direction)  # a direction the benchmark lacks: one line, before any loading
    tables = {d: [load_table(run, args.benchmark, d, resources, args.k) for run in runs] for d in directions}
    if args.query is not None:
        return print_query(args, tables)
    sets = {d: query_sets(pair[0], pair[1] if len(pair) > 1 else None, n=args.n, seed=args.seed)
            for d, pair in tables.items()}  # fmt: skip
    if args.html:
        text = report(args, runs, tables, sets, media, resources)
        write_text_atomic(args.html, text)
        say(args, f"wrote {args.html} ({len(text.encode()) / 2**20:.1f} MB) in {time.perf_counter() - started:.1f} s")
        return 0
    if args.json:
        out = {
            d: [{"name": s.name, "title": s.title, "rule": s.rule, "count": s.count,
                 "query_ids": s.query_ids[: args.n].tolist()} for s in found]
            for d, found in sets.items()
        }  # fmt: skip
        print(json.dumps(out, indent=1))
        return 0
    for direction, found in sets.items():
        table = tables[direction][0]
        print(f"{args.benchmark} {direction}: {len(table.queries):,} queries")
        for s in found:
            shown = " ".join(str(i) for i in s.query_ids[: args.n].tolist())
            print(f"  {s.title}: {s.count:,} ({s.rule}){': ' + shown if shown else ''}")
        for note in table.notes:
            print(f"note: {note}", file=sys.stderr)
    return 0


def load_table(run: Run, benchmark: str, direction: str, resources: Resources, k: int) -> QueryTable:
    """The run's table; an error names the run, its files in their own names (``scores.npy``, not ``scores=``)."""
    try:
        return table_of(run, benchmark, direction, resources, k)
    except EvaluationError as exc:
        raise EvaluationError(f"{run.about}: {in_words(exc, FILE_WORDS)}") from None


def check_runs(args: argparse.Namespace) -> bool:
    """The runs' flags go together; True when a run is read from the Hub."""
    if args.run and args.from_hub:
        raise EvaluationError("give the run (RUN) or --from-hub MODEL, not both")
    if not (args.run or args.from_hub):
        raise EvaluationError("give a run (RUN: a file or folder), or --from-hub MODEL --dataset-repo DATASET")
    if args.vs and args.vs_from_hub:
        raise EvaluationError("give the second run as --vs RUN2 or --vs-from-hub MODEL2, not both")
    hub = bool(args.from_hub or args.vs_from_hub)
    if hub and not args.dataset_repo:
        raise EvaluationError("--from-hub needs --dataset-repo: the benchmark dataset repo its eval results name")
    if args.dataset_repo and not hub:
        raise EvaluationError("--dataset-repo names the benchmark of --from-hub / --vs-from-hub; a run's files "
                              "name no benchmark repo")  # fmt: skip
    if hub and not options_of(args).is_default():
        raise EvaluationError("--from-hub reads the benchmark's own ground truth at its entries' revision: drop the "
                              "ground-truth flags")  # fmt: skip
    return hub


def read_runs(args: argparse.Namespace) -> list[Run]:
    """Run A and, with ``--vs`` / ``--vs-from-hub``, run B (named ``A`` and ``B`` where their names are one)."""

    def one(path: str | None, model: str | None, keyword: str, fallback: str) -> Run:
        if model is not None:
            from eccv_metric.hub.explore_hub import published_run

            flag = "--" + keyword.replace("_", "-")
            return published_run(model, args.dataset_repo, what=f"explore {flag} {model}", keyword=keyword,
                                 log=lambda line: print(line, file=sys.stderr))  # fmt: skip
        return read_run(path, args.normalize, Path(path).stem or fallback)  # type: ignore[arg-type]

    runs = [one(args.run, args.from_hub, "from_hub", "A")]
    if args.vs or args.vs_from_hub:
        runs.append(one(args.vs, args.vs_from_hub, "vs_from_hub", "B"))
        if runs[1].name == runs[0].name:
            runs[0].name, runs[1].name = "A", "B"
    return runs


def print_query(args: argparse.Namespace, tables: dict[str, list[QueryTable]]) -> int:
    """``--query``: the query's view in every direction it is a query of (an error when in none)."""
    found, reasons = [], []
    for direction, pair in tables.items():
        try:
            rows = [table.row(args.query) for table in pair]
        except EvaluationError as exc:
            reasons.append(f"{direction}: {str(exc).removeprefix(f'query {args.query}: ')}")
            continue
        found.append((direction, [view_of(t, r) for t, r in zip(pair, rows, strict=True)]))
    if not found:
        raise EvaluationError(f"--query {args.query} is not a query here ({'; '.join(reasons)})")
    if args.json:
        print(json.dumps({d: [asdict(v) for v in views] for d, views in found}, indent=1))
        return 0
    for direction, views in found:
        for view in views:
            print(f"{view.run}: {args.benchmark} {direction} {view.query_kind} {view.query_id}")
            print("  values: " + ", ".join(f"{m} {v:g}" for m, v in view.values.items()))
            for item in view.items:
                marks = " ".join(f"{n}{'+' if ok else '-'}" for n, ok in item.marks.items())
                score = "" if item.score is None else f" {item.score:.6g}"
                rating = "" if item.rating is None else f" rating {item.rating:g}"
                outside = "" if item.inside else " (a distractor, not an item of the benchmark)"
                print(f"  {item.rank:>3} {item.id}{outside}{score}  {marks}{rating}")
    return 0


def report(
    args: argparse.Namespace, runs: list[Run], tables: dict[str, list[QueryTable]], sets: dict, media: Media,
    resources: Resources,
) -> str:  # fmt: skip
    """The self-contained HTML page (:mod:`eccv_metric.cli.explore_page`)."""
    names = [run.name for run in runs]
    charts = []
    for direction, pair in tables.items():
        per_query = [_as_json(t) for t in pair]
        rows = []
        for name, values in zip(names, per_query, strict=True):
            rows += [r | {"run": name} for r in intervals(values, args.n_resamples, 0.95, args.seed, resources)]
        tests = None
        if len(pair) == 2:
            found = compare(per_query[0], per_query[1], args.n_resamples, 0.95, args.seed, resources=resources)
            tests = {r["metric"]: r for r in found}
        charts.append(f"<h2>{direction}: means and 95% intervals</h2>" + bar_chart(rows, names, direction, tests))
    sections = []
    for direction, found in sets.items():
        pair = tables[direction]
        for s in found:
            other = pair[1] if len(pair) == 2 else None
            cards = cards_html(pair[0], other, s.rows[: args.n].tolist(), media, resources)
            sections.append(set_section(s.title, s.count, s.rule, cards, direction))
    about = [f"{name}: {run.about}" for name, run in zip("AB", runs, strict=False)]
    about.append(f"benchmark {args.benchmark}; ground truth: {resources.gt.source or 'the eccv_caption wheel'}")
    notes = [n for pair in tables.values() for t in pair for n in t.notes]
    title = "eccv-caption explore: " + " vs ".join(names)
    return page(title, about, numbers_table(tables), "".join(charts), sections, list(dict.fromkeys(notes)))


def _as_json(table: QueryTable) -> dict:
    """A table's per-query values as ``evaluate --per-query`` writes them (what compare reads)."""
    return {m: {table.direction: {"query_ids": s.query_ids.tolist(), "values": s.values.tolist(),
                                  "aggregate": s.aggregate}} for m, s in table.per_query.items()}  # fmt: skip
