"""``eccv-caption`` command line: evaluate rankings or score matrices (and more subcommands)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.cli_fg import fine_grained
from eccv_metric.cli_trec import add_export_trec
from eccv_metric.cli_trec import add_import_trec
from eccv_metric.errors import EvaluationError
from eccv_metric.files import check_output_path
from eccv_metric.files import load_ids
from eccv_metric.files import load_npy
from eccv_metric.files import load_rankings
from eccv_metric.files import write_json_atomic
from eccv_metric.leaderboard import CORRELATE_METRICS
from eccv_metric.metrics import Metrics
from eccv_metric.metrics import means
from eccv_metric.targets import ALL_TARGETS
from eccv_metric.targets import DEFAULT_TARGETS
from eccv_metric.targets import EXTRA_TARGETS
from eccv_metric.targets import is_rank_stat

Results = dict[str, dict[str, float]]


def format_table(results: Results) -> str:
    """Results as a plain-text table, values in percent (MedR / MeanR: ranks, as they are)."""
    width = max([len("metric")] + [len(k) for k in results])
    present = {d for by_dir in results.values() for d in by_dir}
    directions = [d for d in ("i2t", "t2i", "t2t", "i2i") if d in present] or ["i2t", "t2i"]
    lines = [f"{'metric':<{width}}" + "".join(f"  {d:>7}" for d in directions), "-" * (width + 9 * len(directions))]
    for name, by_dir in results.items():
        scale = 1 if is_rank_stat(name) else 100
        cells = [f"{scale * by_dir[d]:7.2f}" if d in by_dir else f"{'-':>7}" for d in directions]
        lines.append(f"{name:<{width}}" + "".join(f"  {c}" for c in cells))
    return "\n".join(lines)


def demo_scores(metrics: Metrics, seed: int = 0) -> np.ndarray:
    """A synthetic, seeded 5,000 x 25,000 float32 score matrix: noise plus a boost on COCO pairs."""
    gt = metrics.gt
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((len(gt.image_ids), len(gt.caption_ids)), dtype=np.float32)
    scores[gt.caption_image, np.arange(len(gt.caption_ids))] += 3.0
    return scores


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score rankings (official JSON format) or a score matrix")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rankings", help='JSON {"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}')
    src.add_argument("--scores", help=".npy matrix, scores[i, j] = similarity(image_ids[i], caption_ids[j])")
    p.add_argument("--image-embeddings", help=".npy image embeddings (rows: --image-ids or Karpathy order)")
    src.add_argument("--run", help="a TREC run file (image-<id> / caption-<id> ids; see `eccv-caption export-trec`)")
    src.add_argument("--demo", action="store_true", help="a synthetic seeded score matrix (offline smoke run)")
    p.add_argument("--caption-embeddings", help=".npy caption embeddings (rows: --caption-ids or Karpathy order)")
    p.add_argument("--caption-scores", help=".npy captions x captions matrix (over --caption-ids): cxc_t2t, STS")
    p.add_argument("--image-scores", help=".npy images x images matrix (over --image-ids): cxc_i2i, SIS")
    p.add_argument(
        "--source-dir", help="CxC ratings: a built dataset folder or a folder with the CSVs (default: download once)"
    )
    p.add_argument("--cxc-directed", action="store_true", help="CxC intramodal pairs: first column = query")
    p.add_argument("--n-resamples", type=int, default=1000, help="bootstrap samples of cxc_*_spearman (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the cxc_*_spearman bootstrap")
    p.add_argument("--normalize", action="store_true", help="embeddings: cosine similarity instead of dot product")
    p.add_argument("--image-ids", help="image ids of the score rows (.npy, .json or text); default Karpathy order")
    p.add_argument("--caption-ids", help="caption ids of the score columns; default Karpathy order")
    p.add_argument(
        "--metrics",
        nargs="+",
        help=f"target metrics (default: {' '.join(DEFAULT_TARGETS)}, or <benchmark>_recalls for mscoco_fg / "
        f"flickr30k_fg; also {', '.join(ALL_TARGETS + EXTRA_TARGETS)})",
    )
    p.add_argument("--ks", nargs="+", type=int, default=[1, 5, 10], help="K values for *_recalls")
    p.add_argument(
        "--benchmark",
        choices=["eccv_caption", "mscoco_fg", "flickr30k_fg"],
        default="eccv_caption",
        help="eccv_caption: the COCO 5K split (ECCV, CxC, COCO, PM); mscoco_fg / flickr30k_fg: Chen et al. 2023 "
        "(--source-dir: a folder with their files; default: download once)",
    )
    p.add_argument("--instances-json", help="COCO-format instances JSON: categories for pmrp")
    p.add_argument(
        "--pm-r-cap", type=pm_r_cap, default=50, help="PMRP uses R = min(R, cap); 'none' = no cap (default 50)"
    )
    p.add_argument("--output", "-o", help="write the results as JSON here")
    p.add_argument("--per-query", help="also write per-query values as JSON here (for `eccv-caption compare`)")
    p.set_defaults(func=_run_evaluate)


def pm_r_cap(text: str) -> int | None:
    """``--pm-r-cap``: a positive integer, or ``none`` for the uncapped R-Precision (0 is refused, as in the API)."""
    if text.strip().lower() == "none":
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or 'none', not {text!r}")
    return int(text)


def _run_evaluate(args: argparse.Namespace) -> int:
    check_output_path(args.output)
    check_output_path(args.per_query)
    embeddings = args.image_embeddings or args.caption_embeddings
    matrices = args.caption_scores or args.image_scores
    if sum(map(bool, (args.rankings, args.scores or matrices, args.run, args.demo, embeddings))) != 1:
        raise EvaluationError(
            "give one input: --rankings, --run, --scores (and/or --caption-scores / --image-scores), "
            "--image-embeddings / --caption-embeddings, or --demo"
        )
    image_ids = load_ids(args.image_ids, "image ids") if args.image_ids else None
    caption_ids = load_ids(args.caption_ids, "caption ids") if args.caption_ids else None
    if args.benchmark != "eccv_caption":
        per_query = fine_grained(args, image_ids, caption_ids)
        return _write_results(args, per_query)
    args.metrics = args.metrics or list(DEFAULT_TARGETS)
    metrics = Metrics(
        instances_json=args.instances_json,
        pm_r_cap=args.pm_r_cap,
        cxc_source=args.source_dir,
        cxc_directed=args.cxc_directed,
    )
    bootstrap = {"n_resamples": args.n_resamples, "seed": args.seed}
    if args.rankings or args.run:
        if args.run:
            from eccv_metric.trec import read_run

            rankings = read_run(args.run)
        else:
            rankings = load_rankings(args.rankings)
        per_query = metrics.per_query(rankings.get("i2t"), rankings.get("t2i"), args.metrics, args.ks)
    elif embeddings:
        per_query = metrics.per_query_from_embeddings(
            _npy(args.image_embeddings, "a .npy float array (images x dimensions)"),
            _npy(args.caption_embeddings, "a .npy float array (captions x dimensions)"),
            image_ids,
            caption_ids,
            args.metrics,
            args.ks,
            normalize=args.normalize,
            **bootstrap,
        )
    else:
        expected = "a .npy float matrix, scores[i, j] = similarity(image i, caption j)"
        scores = demo_scores(metrics) if args.demo else _npy(args.scores, expected)
        per_query = metrics.per_query_from_scores(
            scores,
            image_ids,
            caption_ids,
            args.metrics,
            args.ks,
            caption_scores=_npy(args.caption_scores, "a .npy float matrix (captions x captions)"),
            image_scores=_npy(args.image_scores, "a .npy float matrix (images x images)"),
            **bootstrap,
        )
    return _write_results(args, per_query)


def _write_results(args: argparse.Namespace, per_query: dict) -> int:
    results = means(per_query)
    print(format_table(results))
    if args.output:
        write_json_atomic(args.output, results)
        print(f"wrote {args.output}")
    if args.per_query:
        write_json_atomic(
            args.per_query,
            {
                name: {d: {"query_ids": q.query_ids.tolist(), "values": q.values.tolist()} for d, q in by.items()}
                for name, by in per_query.items()
            },
        )
        print(f"wrote {args.per_query}")
    return 0


def _npy(path: str | None, expected: str) -> np.ndarray | None:
    return None if path is None else load_npy(path, expected)


def _add_build(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build the Hub-ready ECCV Caption dataset folder (Parquet + card)")
    p.add_argument("--output", "-o", required=True, help="folder to create (written atomically)")
    p.add_argument("--source-dir", help="local copies: COCO captions/instances JSON, CxC CSVs, val2014 images")
    p.add_argument("--configs", nargs="+", help="images captions positives cxc_ratings (default: all buildable)")
    p.add_argument("--download", action="store_true", help="download missing sources from their canonical homes")
    p.add_argument("--image-ids", help="embed only these images (a file of ids); default: every available one")
    p.add_argument(
        "--removed-captions", help="caption ids to flag as removed_in_eccv (default: the paper's appendix C.1 list)"
    )
    p.add_argument("--paper-results", help="a results CSV for the card (default: the paper's Table 4, shipped)")
    p.add_argument("--repo-id", help="the Hub dataset repo the card's usage snippet loads (push also sets it)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.set_defaults(func=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    from eccv_caption_dataset.hub_folder import build

    report = build(
        args.output,
        source_dir=args.source_dir,
        configs=args.configs,
        download=args.download,
        embed_image_ids=load_ids(args.image_ids).tolist() if args.image_ids else None,
        removed_captions=load_ids(args.removed_captions).tolist() if args.removed_captions else None,
        paper_results=args.paper_results,
        overwrite=args.overwrite,
        repo_id=args.repo_id,
    )
    print(f"wrote {args.output}: " + ", ".join(f"{k} ({v} rows)" for k, v in report["built"].items()))
    return 0


def _add_push(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("push", help="upload the dataset folder and the metric Space to the Hub")
    p.add_argument("--dataset-dir", help="a folder made by `eccv-caption build`")
    p.add_argument("--dataset-repo", help="dataset repo id, e.g. user/eccv-caption")
    p.add_argument("--space-repo", help="Space repo id for the evaluate metric, e.g. user/eccv_map_at_r")
    p.add_argument("--private", action="store_true", help="create private repos")
    p.add_argument("--revision", help="branch to push to (created if missing)")
    p.add_argument("--dry-run", action="store_true", help="list exactly what would be sent, send nothing")
    p.set_defaults(func=_run_push)


def _run_push(args: argparse.Namespace) -> int:
    from eccv_caption_dataset.push import push

    if not (args.dataset_repo or args.space_repo):
        raise EvaluationError("nothing to push: give --dataset-repo and/or --space-repo")
    push(args.dataset_dir, args.dataset_repo, args.space_repo, args.private, args.revision, args.dry_run)
    return 0


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="two systems' per-query results: CIs and paired significance")
    p.add_argument("a", help="per-query JSON of system A (evaluate --per-query)")
    p.add_argument("b", help="per-query JSON of system B")
    p.add_argument("--n-resamples", type=int, default=10_000)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--method", choices=["randomization", "bootstrap"], default="randomization")
    p.add_argument("--output", "-o", help="write the comparison as JSON here")
    p.set_defaults(func=_run_compare)


def _run_compare(args: argparse.Namespace) -> int:
    from eccv_metric.compare import compare_files

    rows = compare_files(args.a, args.b, args.n_resamples, args.confidence, args.seed, args.method)
    width = max(len(r["metric"]) for r in rows) + 4
    print(f"{'metric':<{width}} {'A':>7} {'CI A':>15} {'B':>7} {'CI B':>15} {'A-B':>7} {'p':>8} {'p Holm':>8}")
    for r in rows:
        print(
            f"{r['metric'] + '/' + r['direction']:<{width}} {100 * r['a']:7.2f} "
            f"[{100 * r['a_low']:5.2f}, {100 * r['a_high']:5.2f}] {100 * r['b']:7.2f} "
            f"[{100 * r['b_low']:5.2f}, {100 * r['b_high']:5.2f}] {100 * r['diff']:+7.2f} {r['p_value']:8.4f} "
            f"{r['p_holm']:8.4f}"
        )
    print(
        f"{args.confidence:.0%} percentile bootstrap CIs ({args.n_resamples} resamples, seed {args.seed}); "
        f"p: two-sided paired {args.method} test; p Holm: Holm-Bonferroni adjusted over the {len(rows)} rows; "
        "COCO 1K resampled within folds."
    )
    if args.output:
        write_json_atomic(args.output, rows)
    return 0


def _add_correlate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("correlate", help="Kendall tau-b between metrics over the paper's leaderboard (+ yours)")
    p.add_argument("--paper-dir", help="folder of the paper's two CSVs (default: the copy shipped with the package)")
    p.add_argument("--with", dest="extra", nargs="+", default=[], help="your results JSON files (evaluate -o)")
    p.add_argument("--plot", help="write a heatmap PNG here (needs matplotlib: pip install '.[plot]')")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_run_correlate)


def _leaderboard(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    from eccv_metric import leaderboard

    table = leaderboard.paper_table(leaderboard.paper_dir(args.paper_dir))
    extra = {Path(p).stem: json.loads(Path(p).read_text()) for p in args.extra}
    return leaderboard.merge(table, extra)


def _run_correlate(args: argparse.Namespace) -> int:
    from eccv_metric.leaderboard import CORRELATE_METRICS
    from eccv_metric.leaderboard import LABELS
    from eccv_metric.stats import tau_matrix

    taus = tau_matrix(_leaderboard(args), CORRELATE_METRICS)
    if args.format == "json":
        print(json.dumps(taus, indent=1))
    else:
        print(f"{'':<16}" + "".join(f" {LABELS[m]:>9}" for m in CORRELATE_METRICS))
        for m in CORRELATE_METRICS:
            print(f"{m:<16}" + "".join(f"{taus[m][n]:10.2f}" for n in CORRELATE_METRICS))
    if args.plot:
        from eccv_metric.plots import tau_heatmap

        tau_heatmap(taus, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr if args.format == "json" else sys.stdout)
    return 0


def _add_leaderboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="the paper's 25 models (i2t/t2i averages) with your models ranked in")
    p.add_argument("--paper-dir", help="folder of the paper's two CSVs (default: the copy shipped with the package)")
    p.add_argument("--with", dest="extra", nargs="+", default=[], help="your results JSON files (evaluate -o)")
    p.add_argument("--sort", default="eccv_map_at_r", choices=CORRELATE_METRICS, help="metric to sort by")
    p.set_defaults(func=_run_leaderboard)


def _run_leaderboard(args: argparse.Namespace) -> int:
    from eccv_metric.leaderboard import LABELS
    from eccv_metric.leaderboard import ranks

    table = _leaderboard(args)
    order = sorted(table, key=lambda m: -table[m].get(args.sort, float("-inf")))
    print(f"{'model':<44}" + "".join(f" {LABELS[m]:>9}" for m in CORRELATE_METRICS))
    for model in order:
        cells = "".join(f" {table[model][m]:9.2f}" if m in table[model] else f" {'-':>9}" for m in CORRELATE_METRICS)
        print(f"{model[:43]:<44}{cells}")
    for path in args.extra:
        name = Path(path).stem
        rank = ranks(table, name)
        print(
            f"\n{name} ranks (of {len(table)}): " + ", ".join(f"{m} #{rank[m]}" for m in CORRELATE_METRICS if m in rank)
        )
    return 0


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_evaluate,
    add_export_trec,
    add_import_trec,
    _add_build,
    _add_push,
    _add_compare,
    _add_correlate,
    _add_leaderboard,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eccv-caption", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # the reader (e.g. `| head`) left: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (EvaluationError, FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
