"""``eccv-caption evaluate`` and ``eccv-caption benchmarks``: argparse in, :func:`eccv_metric.evaluate` out."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from eccv_metric.analysis.report import format_table
from eccv_metric.api.evaluate import default_resources
from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.docs import sizes
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.benchmarks.request import OFFICIAL
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import add_quiet
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.common import positive_int
from eccv_metric.cli.common import say
from eccv_metric.cli.model import add_model_args
from eccv_metric.cli.model import run_model
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.core import progress
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import KS_TEXT
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import named_file
from eccv_metric.core.files import write_json_atomic
from eccv_metric.core.provenance import run_stamp
from eccv_metric.core.provenance import with_digests
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.evidence.layout import check_evidence_folder
from eccv_metric.evidence.layout import evidence_bytes
from eccv_metric.evidence.layout import model_record
from eccv_metric.evidence.layout import write_evidence
from eccv_metric.formats.mteb import PredictionRankings
from eccv_metric.formats.mteb import is_json_object
from eccv_metric.formats.mteb import not_rankings
from eccv_metric.formats.readers import IDS
from eccv_metric.formats.readers import MTEB_PREDICTIONS
from eccv_metric.formats.readers import NPY
from eccv_metric.formats.readers import RANKINGS
from eccv_metric.formats.readers import RERANKED
from eccv_metric.formats.readers import TREC_RUN
from eccv_metric.formats.readers import recognise
from eccv_metric.formats.trec import TIES
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.choose import PARTS
from eccv_metric.inputs.choose import input_from_parts
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.twostage import TwoStage


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score rankings, a TREC run, score matrices, embeddings (with --rerank: a two-stage result) or a model "
        "(--model SPEC --data BUILD) on any benchmark",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rankings", help='JSON {"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}')
    src.add_argument(
        "--run",
        help="a TREC run file (image-<id> / caption-<id> ids; see `eccv-caption export-trec`) or MTEB's saved "
        "predictions (<task>_predictions.json of mteb.evaluate(..., prediction_folder=...))",
    )
    src.add_argument("--scores", help=".npy matrix, scores[i, j] = similarity(image_ids[i], caption_ids[j])")
    src.add_argument("--demo", action="store_true", help="a synthetic seeded score matrix (offline smoke run)")
    p.add_argument("--image-embeddings", help=".npy image embeddings (rows: --image-ids or the canonical order)")
    p.add_argument("--caption-embeddings", help=".npy caption embeddings (rows: --caption-ids or the canonical order)")
    p.add_argument("--caption-scores", help=".npy captions x captions matrix (over --caption-ids): t2t, STS")
    p.add_argument("--image-scores", help=".npy images x images matrix (over --image-ids): i2i, SIS")
    p.add_argument("--normalize", action="store_true", help="embeddings: cosine similarity instead of dot product")
    p.add_argument(
        "--rerank",
        action="append",
        metavar="DIRECTION=FILE",
        help="a second stage over --scores or the embeddings (then its first stage): an .npz of query_ids, "
        "candidate_ids (each query's candidates, gallery ids) and scores (their final scores), one per direction "
        "(repeat: --rerank i2t=i2t.npz --rerank t2i=t2i.npz); ranked: the candidates by final score, then every "
        "other item in the first stage's order",
    )
    p.add_argument("--image-ids", help="image ids of the rows (.npy, .json or text); default: canonical order")
    p.add_argument("--caption-ids", help="caption ids of the rows / columns; default: canonical order")
    p.add_argument(
        "--metrics",
        nargs="+",
        help="metric names, scored beside the --benchmarks' defaults (neither given: "
        f"{' '.join(DEFAULT_TARGETS)} for image-caption inputs; t2t / i2i-only inputs: their benchmarks' defaults); "
        "`eccv-caption benchmarks` lists them all",
    )
    p.add_argument(
        "--benchmarks",
        "--benchmark",
        nargs="+",
        choices=[*REGISTRY.names(), OFFICIAL],
        metavar="BENCHMARK",
        help="add these benchmarks' default metrics to --metrics (`eccv-caption benchmarks`; eccv_caption = the "
        "official defaults)",
    )
    p.add_argument(
        "--ks", nargs="+", type=positive_int, default=list(KS), help=f"K values for *_recalls (default {KS_TEXT})"
    )
    add_resource_flags(p)
    p.add_argument(
        "--n-resamples",
        type=int,
        default=N_RESAMPLES,
        help=f"bootstrap samples of cxc_*_spearman (default {N_RESAMPLES})",
    )
    p.add_argument(
        "--seed", type=non_negative_int, default=SEED, help=f"seed of the cxc_*_spearman bootstrap (default {SEED})"
    )
    p.add_argument("--partial", action="store_true", help="ranked lists: score only the queries given")
    p.add_argument(
        "--ties",
        choices=TIES,
        help="--run: equal scores ordered by rank (stable, the default for TREC runs) or by document id descending "
        "as strings (trec_eval: what trec_eval, pytrec_eval and MTEB score; always for MTEB predictions)",
    )
    p.add_argument("--output", "-o", help="write the results as JSON here (fractions, the official keys)")
    p.add_argument("--per-query", help="also write per-query values as JSON here (for `eccv-caption compare`)")
    p.add_argument(
        "--evidence",
        metavar="DIR",
        help="also keep what the engine scored in this folder (embeddings, pair scores, ranked lists: a manifest and "
        "arrays): the evidence anyone recomputes the numbers from (`eccv-caption verify`; push-results uploads it); "
        "with several --model, one subfolder per model",
    )
    p.add_argument(
        "--json", action="store_true", help="print the results as JSON on stdout (what -o writes) instead of the table"
    )
    add_model_args(p)
    add_quiet(p)
    p.set_defaults(func=run_evaluate)


TWO_STAGE_RANKING = (
    "each query's candidates by final score (equal final scores: the first stage's order), then every other item in "
    "the first stage's order"
)
DEMO_NOTE = (
    "demo: synthetic numbers, not a model's: a seeded random 5,000 x 25,000 score matrix over the real test ids "
    "(noise, +3 on the original COCO pairs), scored like your own --scores"
)


def demo_scores(gt: GroundTruth, seed: int = 0) -> np.ndarray:
    """A synthetic, seeded 5,000 x 25,000 float32 score matrix: noise plus a boost on COCO pairs."""
    rng = np.random.default_rng(seed)
    scores = np.empty((len(gt.image_ids), len(gt.caption_ids)), dtype=np.float32)
    # row blocks draw the very numbers of one standard_normal call on the whole shape (the stream is sequential)
    for start in progress.iterate(range(0, len(scores), 250), "demo: drawing the synthetic scores", unit="block"):
        rng.standard_normal(out=scores[start : start + 250], dtype=np.float32)
    scores[gt.caption_image, np.arange(len(gt.caption_ids))] += 3.0
    return scores


def resources_of(args: argparse.Namespace) -> Resources:
    """The ground truth the flags name (:meth:`~eccv_metric.benchmarks.resource_options.ResourceOptions.resources`)."""
    return options_of(args).resources()


def input_of(args: argparse.Namespace, resources: Resources) -> Rankings | ScoreMatrix | Embeddings | TwoStage:
    """The one input the flags give (:func:`~eccv_metric.inputs.choose.input_from_parts`, in flag words)."""
    if args.demo:
        others = [CLI_WORDS[name] for name in (*PARTS, "rerank") if name != "normalize" and _given(args, name)]
        if others:
            raise EvaluationError(f"--demo is an input of its own: drop {', '.join(others)}")
        print(DEMO_NOTE, file=sys.stderr)
        return ScoreMatrix(demo_scores(resources.gt))
    if args.ties and not args.run:
        raise EvaluationError("--ties orders the equal scores of a --run file; the other inputs have no such choice")
    parts: dict[str, object] = {"rankings": None}
    for given in ("run", "rankings"):  # ranked lists: the file's reader (formats.readers), checked against the flag
        if getattr(args, given):
            with named_file(f"--{given}"):
                parts["rankings"] = read_ranked(getattr(args, given), given, args.ties)
    for name in PARTS:
        path = getattr(args, name) if name != "rankings" else None
        if name == "normalize" or not path:
            continue
        with named_file(CLI_WORDS[name]):
            parts[name] = (IDS if name.endswith("_ids") else NPY).read(path, name, None)
    return input_from_parts({**parts, "normalize": args.normalize, "rerank": read_reranks(args.rerank)}, CLI_WORDS)


def read_reranks(values: list[str] | None) -> dict[str, object] | None:
    """``--rerank DIRECTION=FILE`` (repeated): each direction's second stage (:mod:`eccv_metric.formats.reranked`)."""
    if not values:
        return None
    out: dict[str, object] = {}
    for value in values:
        direction, sep, path = value.partition("=")
        if not sep or not path:
            raise EvaluationError(f"--rerank takes DIRECTION=FILE (e.g. --rerank i2t=reranked_i2t.npz), not {value!r}")
        if direction not in DIRECTION_KINDS:
            raise EvaluationError(f"--rerank {value}: the direction must be i2t, t2i, t2t or i2i, not {direction!r}")
        if direction in out:
            raise EvaluationError(f"--rerank gives {direction} twice: one file per direction")
        reader = recognise(path)
        if reader is not None and reader is not RERANKED:
            raise EvaluationError(
                f"--rerank {value}: {reader.title}, not a two-stage result (an .npz of query_ids, candidate_ids "
                f"and scores){'' if reader.name not in FLAG_OF else f': give it as {FLAG_OF[reader.name]}'}"
            )
        with named_file("--rerank"):
            out[direction] = RERANKED.read(path, "rerank", None)
    return out


PARTIAL_NOTE = (
    "note: --partial changes nothing here: a score matrix or embeddings (--scores, --image-embeddings / "
    "--caption-embeddings, --caption-scores, --image-scores) rank every query against the whole gallery; --partial "
    "is for ranked lists (--rankings / --run) that leave queries out"
)


FLAG_READERS = {"rankings": (RANKINGS,), "run": (TREC_RUN, MTEB_PREDICTIONS)}
FLAG_OF = {
    "rankings": "--rankings",
    "trec_run": "--run",
    "mteb_predictions": "--run",
    "npy": "--scores",
    "reranked": "--rerank DIRECTION=FILE",
}
FLAG_TAKES = {"rankings": "a rankings JSON", "run": "a run"}


def read_ranked(path: str, flag: str, ties: str | None) -> object:
    """``--rankings`` / ``--run``: the ranked lists of the file's reader (:mod:`eccv_metric.formats.readers`).

    A file is read as what its content is; a file of another input flag is named with that flag. A JSON object
    no reader recognises is MTEB predictions for ``--run`` (their errors name a missing key), never a TREC run."""
    allowed = FLAG_READERS[flag]
    reader = recognise(path) or next((r for r in allowed if r.reads_json == is_json_object(path)), allowed[0])
    if reader is MTEB_PREDICTIONS and reader not in allowed:
        raise not_rankings(path, f"give it as {FLAG_OF[reader.name]}")
    if reader not in allowed:
        raise EvaluationError(f"{path}: {reader.title}, not {FLAG_TAKES[flag]}: give it as {FLAG_OF[reader.name]}")
    if reader is MTEB_PREDICTIONS and ties == "stable":
        raise EvaluationError(
            f"{path}: MTEB predictions hold no ranks: their ties are ordered as MTEB scored them (--ties trec_eval)"
        )
    return reader.read(path, "rankings", ties)


def _given(args: argparse.Namespace, name: str) -> bool:
    if name == "rankings":
        return bool(args.rankings or args.run)
    return bool(getattr(args, name))


def run_evaluate(args: argparse.Namespace) -> int:
    if args.model or args.data:
        return run_model(args)
    check_output_path(args.output)
    check_output_path(args.per_query)
    if args.evidence:
        check_evidence_folder(args.evidence)
    resources = resources_of(args)
    source = input_of(args, resources)
    if args.partial and not isinstance(source, Rankings):  # a standing decision: partial is about ranked lists
        print(PARTIAL_NOTE, file=sys.stderr)
    with warnings.catch_warnings():  # the notes are printed below, in the CLI's words
        warnings.simplefilter("ignore", ChanceLevelWarning)
        results = evaluate(  # no --metrics / --benchmarks: the defaults follow the input (benchmarks.request)
            source,
            args.metrics,
            args.ks,
            benchmarks=args.benchmarks,
            resources=resources,
            partial=args.partial,
            n_resamples=args.n_resamples,
            seed=args.seed,
        )
    means = results.means()
    per_query = results.per_query_json() if args.per_query else None
    provenance = score_provenance(source, args.normalize) | ({"partial": True} if args.partial else {})
    if args.demo:
        provenance["demo"] = True  # synthetic numbers (DEMO_NOTE)
    evidence = keep_evidence(args, source, means, provenance) if args.evidence else None
    written = {**means, "provenance": with_digests(provenance, means, per_query, evidence)}
    if args.json:  # the numbers (as before); the results file carries them with their provenance
        print(json.dumps(means, indent=1))
    elif not args.quiet:
        print(format_table(means))
    for note in results.notes:
        print(f"warning: {in_words(note, CLI_WORDS)}", file=sys.stderr)
    if args.output:
        write_json_atomic(args.output, written)
        say(args, f"wrote {args.output}")
    if args.per_query:
        write_json_atomic(args.per_query, per_query)
        say(args, f"wrote {args.per_query}")
    if args.evidence:
        say(args, f"wrote {args.evidence}")
    return 0


def keep_evidence(args: argparse.Namespace, source: object, means: dict, provenance: dict) -> str:
    """``--evidence DIR``: the input as the engine scored it, with the request; recorded in the provenance (its
    folder, where push-results and verify find it: published as ``(local path)``). Returns the manifest's digest."""
    from eccv_metric.models.options import Scored

    benchmarks: dict[str, list[str]] = {}
    for metric in means:
        benchmarks.setdefault(metric_info(metric)[0].name, []).append(metric)
    manifest, digest = write_evidence(
        args.evidence,
        [Scored("input", source, benchmarks)],
        n_resamples=args.n_resamples,
        seed=args.seed,
        partial=args.partial,
        resources=options_of(args).record(),
        run=model_record(provenance),  # MTEB's predictions name their model; files scored alone name none
    )
    provenance["evidence"] = {"folder": str(Path(args.evidence).resolve()), "bytes": evidence_bytes(manifest)}
    return digest


def score_provenance(source: object, normalize: bool = False) -> dict:
    """The provenance of results scored from files: the run's date and package, what the input was
    (:func:`input_provenance`), and for MTEB predictions who produced them
    (:meth:`~eccv_metric.formats.mteb.PredictionRankings.provenance`). No file path is recorded (results are
    shared; a path says nothing to a reader elsewhere). ``partial`` (push-results refuses it) is the caller's."""
    if isinstance(source, PredictionRankings):
        return {**run_stamp(), **source.provenance()}
    return {**run_stamp(), **input_provenance(source, normalize)}


def input_provenance(source: object, normalize: bool = False) -> dict:
    """What an input was, in the results file: its kind (``input``: rankings, scores, embeddings or two-stage), its
    shapes, its tie rule; a two-stage input's first stage (as an input of its own), each direction's reranked
    queries and candidates per query, and the rule ranking them."""
    if isinstance(source, TwoStage):
        second = {d: {"queries": len(r.query_ids), "candidates_per_query": r.k} for d, r in source.reranked.items()}
        return {"input": "two-stage", "first_stage": input_provenance(source.first, normalize), "second_stage": second,
                "ranking": TWO_STAGE_RANKING}  # fmt: skip
    if isinstance(source, ScoreMatrix):
        shapes = {} if source.scores is None else {"image_caption": list(source.scores.shape)}
        shapes.update({f"{kind}_{kind}": list(matrix.shape) for kind, matrix in source.square.items()})
        return {"input": "scores", "shapes": shapes, "ties": source.ties}
    if isinstance(source, Embeddings):
        shapes = {kind: list(values.shape) for kind, values in source.vectors.items()}
        similarity = "cosine (--normalize)" if normalize else "dot product"
        return {"input": "embeddings", "shapes": shapes, "similarity": similarity, "ties": source.ties}
    return {"input": "rankings" if isinstance(source, Rankings) else type(source).__name__}


def add_benchmarks(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("benchmarks", help="list the registered benchmarks: directions, queries, metrics, citation")
    p.add_argument(
        "--format", choices=["table", "json"], default="table", help="a text table (default) or JSON, one object each"
    )
    p.set_defaults(func=run_benchmarks)


def run_benchmarks(args: argparse.Namespace) -> int:
    resources = default_resources()
    rows = [
        {
            "name": b.name,
            "title": b.title,
            "directions": list(b.directions),
            "collection": b.collection,
            "queries_gallery": sizes(b, resources),
            "metrics": b.metric_names(),
            "default": b.default_metric_names(),
            "needs": in_words(b.needs, CLI_WORDS) if b.needs else "the eccv_caption wheel",  # keywords as flags
            "citation": b.citation,
            "description": in_words(b.description, CLI_WORDS),
        }
        for b in REGISTRY
    ]
    if args.format == "json":
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        print(f"{row['name']}  ({row['title']}; {', '.join(row['directions'])}; {row['collection']})")
        if row["queries_gallery"]:
            shown = "; ".join(f"{d}: {q:,} queries x {g:,} items" for d, (q, g) in row["queries_gallery"].items())
            print(f"  {shown}")
        print(f"  metrics: {', '.join(row['metrics'])}   default: {', '.join(row['default'])}")
        print(f"  needs: {row['needs']}")
        print(f"  {row['citation']}")
    return 0
