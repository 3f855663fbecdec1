"""``eccv-caption`` command line: evaluate rankings or score matrices (and more subcommands)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.cli_trec import add_export_trec
from eccv_metric.cli_trec import add_import_trec
from eccv_metric.errors import EvaluationError
from eccv_metric.jsonio import id_keys
from eccv_metric.jsonio import int_list
from eccv_metric.jsonio import read_json
from eccv_metric.jsonio import require_object
from eccv_metric.leaderboard import CORRELATE_METRICS
from eccv_metric.metrics import Metrics
from eccv_metric.metrics import means
from eccv_metric.targets import ALL_TARGETS
from eccv_metric.targets import DEFAULT_TARGETS
from eccv_metric.targets import is_rank_stat

Results = dict[str, dict[str, float]]


def format_table(results: Results) -> str:
    """Results as a plain-text table, values in percent (MedR / MeanR: ranks, as they are)."""
    width = max([len("metric")] + [len(k) for k in results])
    lines = [f"{'metric':<{width}}  {'i2t':>7}  {'t2i':>7}", "-" * (width + 18)]
    for name, by_dir in results.items():
        scale = 1 if is_rank_stat(name) else 100
        cells = [f"{scale * by_dir[d]:7.2f}" if d in by_dir else f"{'-':>7}" for d in ("i2t", "t2i")]
        lines.append(f"{name:<{width}}  {cells[0]}  {cells[1]}")
    return "\n".join(lines)


def write_json_atomic(path: str | Path, payload: object) -> None:
    """Write JSON through a temporary file and rename, so a failure never leaves half a file."""
    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text through a temporary file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fout:
            fout.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


RANKINGS_FORMAT = 'a JSON object {"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": [...]}}'


def load_rankings(path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Read ``{"i2t": {query id: [ids]}, "t2i": {...}}``; keys must be canonical decimal ids, each id once."""
    return rankings_from_json(read_json(path, RANKINGS_FORMAT), path)


def rankings_from_json(raw: object, path: str | Path) -> dict[str, dict[int, list[int]]]:
    """Check parsed rankings JSON (``path`` names its source in errors) and give int query ids."""
    raw = require_object(raw, path, RANKINGS_FORMAT)
    unknown = sorted(set(raw) - {"i2t", "t2i"})
    if unknown or not raw:
        raise EvaluationError(
            f"{path}: top-level keys must be 'i2t' and/or 't2i' (lower case), got {unknown or 'none'}; "
            f"expected {RANKINGS_FORMAT}"
        )
    out: dict[str, dict[int, list[int]]] = {}
    for direction, lists in raw.items():
        lists = require_object(lists, path, f'"{direction}" to map query ids to ranked lists')
        keys = id_keys(lists, path, f"{direction} query id")
        out[direction] = dict(zip(keys.tolist(), lists.values(), strict=True))
    return out


def load_ids(path: str | Path, what: str = "ids") -> np.ndarray:
    """Ids from a .npy file, a JSON list, or a text file with one id per line (integers only)."""
    path = Path(path)
    if path.suffix == ".npy":
        arr = load_npy(path, f"a .npy array of {what}")
    elif path.suffix == ".json":
        arr = np.asarray(int_list(read_json(path, f"a JSON list of {what}"), path, what), dtype=np.int64)
    else:
        try:
            arr = np.asarray([int(tok) for tok in read_text(path).split()], dtype=np.int64)
        except ValueError as exc:
            raise EvaluationError(f"{path}: {what} must be integers, one per line: {exc}") from None
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise EvaluationError(f"{path}: {what} must be a flat list of integers, got {arr.dtype} shape {arr.shape}")
    return arr.astype(np.int64, copy=False)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"cannot read {path} as UTF-8 text: {exc}") from None


def load_npy(path: str | Path, expected: str) -> np.ndarray:
    """A .npy array (memory-mapped; no pickles); other formats are named in the error."""
    path = Path(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        if not isinstance(arr, np.ndarray):  # an .npz archive loads as a lazy NpzFile
            arr.close()
            raise ValueError("an archive of several arrays")
        return arr
    except IsADirectoryError:
        raise EvaluationError(f"{path} is a folder; expected {expected}") from None
    except FileNotFoundError:
        raise EvaluationError(f"{path}: no such file; expected {expected}") from None
    except (OSError, ValueError, EOFError) as exc:
        with open(path, "rb") as fin:
            head = fin.read(6)
        kind = "a .npz archive" if head[:2] == b"PK" else "not a .npy file" if head != b"\x93NUMPY" else "a broken .npy"
        raise EvaluationError(f"{path}: {kind} ({exc}); expected {expected}") from None


def check_output_path(path: str | Path | None) -> None:
    """Fail before any work when an output path cannot be written as a file."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise EvaluationError(f"output {path} is a folder: give a file name, e.g. {path / 'results.json'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise EvaluationError(f"output {path}: cannot create it under {parent}")


def demo_scores(metrics: Metrics, seed: int = 0) -> np.ndarray:
    """A synthetic, seeded 5,000 x 25,000 float32 score matrix: noise plus a boost on COCO pairs."""
    gt = metrics.gt
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((len(gt.image_ids), len(gt.caption_ids)), dtype=np.float32)
    scores[gt.caption_image, np.arange(len(gt.caption_ids))] += 3.0
    return scores


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score rankings (official JSON format) or a score matrix")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--rankings", help='JSON {"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}')
    src.add_argument("--scores", help=".npy matrix, scores[i, j] = similarity(image_ids[i], caption_ids[j])")
    src.add_argument("--run", help="a TREC run file (image-<id> / caption-<id> ids; see `eccv-caption export-trec`)")
    src.add_argument("--demo", action="store_true", help="a synthetic seeded score matrix (offline smoke run)")
    p.add_argument("--image-ids", help="image ids of the score rows (.npy, .json or text); default Karpathy order")
    p.add_argument("--caption-ids", help="caption ids of the score columns; default Karpathy order")
    p.add_argument(
        "--metrics",
        nargs="+",
        default=list(DEFAULT_TARGETS),
        help=f"target metrics (default: {' '.join(DEFAULT_TARGETS)}; also {', '.join(ALL_TARGETS)})",
    )
    p.add_argument("--ks", nargs="+", type=int, default=[1, 5, 10], help="K values for *_recalls")
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
    metrics = Metrics(instances_json=args.instances_json, pm_r_cap=args.pm_r_cap)
    if args.rankings or args.run:
        if args.run:
            from eccv_metric.trec import read_run

            rankings = read_run(args.run)
        else:
            rankings = load_rankings(args.rankings)
        per_query = metrics.per_query(rankings.get("i2t"), rankings.get("t2i"), args.metrics, args.ks)
    else:
        expected = "a .npy float matrix, scores[i, j] = similarity(image i, caption j)"
        scores = demo_scores(metrics) if args.demo else load_npy(args.scores, expected)
        image_ids = load_ids(args.image_ids, "image ids") if args.image_ids else None
        caption_ids = load_ids(args.caption_ids, "caption ids") if args.caption_ids else None
        per_query = metrics.per_query_from_scores(scores, image_ids, caption_ids, args.metrics, args.ks)
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
