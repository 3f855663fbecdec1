"""``eccv-caption verify``: published numbers recomputed from the evidence their run kept (a layer over
:func:`eccv_metric.verify` and :mod:`eccv_metric.hub.verify_hub`).

``verify RESULTS`` reads a results file and the evidence folder ``evaluate --evidence DIR`` wrote (``--evidence``,
default the folder the results record), the ground truth the run read (its data: a built folder, or a Hub repo at
the revision it recorded; the ground-truth flags name others); ``verify --from-hub MODEL --dataset-repo DATASET``
reads a model's published entries, each from the details commit it points at. One line per number (equal, differs,
not recomputable), then a summary; exit status 0 when every number is recomputed equal (and every item re-encoded
within its tolerance), 1 otherwise, 2 for an error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import non_negative_int
from eccv_metric.cli.common import positive_int
from eccv_metric.cli.resource_flags import add_resource_flags
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words

VERIFY_WORDS = {
    **CLI_WORDS,
    "from_hub": "--from-hub",
    "dataset_repo": "--dataset-repo",
    "reencode": "--reencode",
    "evidence": "--evidence",
    "per_query": "--per-query",
    "resources": "the ground-truth flags (--ground-truth, --cxc-source, ...)",
    "model": "--model",
}


def add_verify(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="recompute published numbers from the evidence their run kept (evaluate --evidence): a results file "
        "and its evidence folder, or a model's eval results on the Hub (--from-hub)",
    )
    p.add_argument(
        "results",
        nargs="?",
        help="a results JSON of `eccv-caption evaluate ... -o results.json --evidence DIR` (not with --from-hub)",
    )
    p.add_argument("--evidence", metavar="DIR", help="the evidence folder of the run (default: the one the results "
                   "record, where evaluate --evidence wrote it)")  # fmt: skip
    p.add_argument("--per-query", help="the per-query JSON of the same run: compared query by query")
    p.add_argument(
        "--from-hub",
        metavar="MODEL",
        help="ORG/MODEL (or ORG/MODEL@REVISION, @refs/pr/N): every eval result it publishes for --dataset-repo, each "
        "from the details commit its source.url names and the benchmark at its dataset.revision",
    )
    p.add_argument("--dataset-repo", help="--from-hub: the benchmark dataset repo, ORG/NAME")
    p.add_argument(
        "--device",
        help="where the embeddings are ranked again (default: numpy on the CPU, the reference) and, with --reencode, "
        "where the model runs",
    )
    g = p.add_argument_group('the evidence came from the model (pip install "eccv-caption-hf[models]")')
    g.add_argument(
        "--reencode",
        type=positive_int,
        metavar="N",
        help="encode N items of each item set again with --model (a pair scorer: also score N of its pairs), chosen "
        "by --seed, and compare them with the evidence within its precision's tolerance (fp32 1e-4, fp16 1e-2, "
        "bf16 5e-2)",
    )
    g.add_argument("--model", help="--reencode: the model spec (default: the run's, when it names a Hub model)")
    g.add_argument(
        "--data",
        help="--reencode: where the items are (default: the run's data; --from-hub: the benchmark at its revision)",
    )
    g.add_argument("--images", nargs="+", help="--reencode: folders or zips with the pixels the build lacks")
    g.add_argument("--seed", type=non_negative_int, default=0, help="--reencode: which items (default 0)")
    add_resource_flags(p)
    p.set_defaults(func=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    try:
        if args.from_hub:
            return from_hub(args)
        return local(args)
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, VERIFY_WORDS)) from None


def local(args: argparse.Namespace) -> int:
    from eccv_metric.evidence.check import read_results
    from eccv_metric.evidence.check import verify
    from eccv_metric.evidence.load import load_evidence
    from eccv_metric.evidence.truth import run_resources
    from eccv_metric.evidence.truth import with_run_options

    if not args.results:
        raise EvaluationError("give a results file (verify results.json), or --from-hub MODEL --dataset-repo DATASET")
    if args.dataset_repo:
        raise EvaluationError("--dataset-repo names the benchmark of --from-hub; a results file names its own data")
    _, provenance = read_results(args.results)
    recorded = provenance.get("evidence") if isinstance(provenance.get("evidence"), dict) else {}
    folder = args.evidence or recorded.get("folder")
    if not folder:
        raise EvaluationError(
            f"{args.results} records no evidence folder (scored without evaluate --evidence DIR): give --evidence DIR"
        )
    evidence = load_evidence(folder)
    options = options_of(args)
    data, revision = provenance.get("data"), provenance.get("data_revision")
    if not options.is_default():
        resources = with_run_options(evidence, options).resources()  # the run's PM / CxC options, these sources
    elif isinstance(data, str) and Path(data).is_dir():
        resources = run_resources(evidence, data)  # the build the run read
    elif isinstance(data, str) and isinstance(revision, str):
        resources = run_resources(evidence, f"{data}@{revision}")  # the Hub repo at the revision the run read
    else:
        resources = None  # the package's ground truth
    table = verify(args.results, evidence, per_query=args.per_query, resources=resources, device=args.device)
    print(f"{args.results}: evidence {Path(folder)} ({evidence.bytes:,} bytes)")
    for check in table.checks:
        print(check.line())
    reencoded = []
    if args.reencode:
        reencoded = reencode_lines(args, evidence, provenance.get("model"), data, None)
    table.reencoded = reencoded
    return finish(table)


def from_hub(args: argparse.Namespace) -> int:
    from eccv_metric.hub.verify_hub import verify_from_hub

    if args.results or args.evidence or args.per_query:
        raise EvaluationError("--from-hub reads the published evidence: drop the results file, --evidence and "
                              "--per-query")  # fmt: skip
    if not args.dataset_repo:
        raise EvaluationError("--from-hub needs --dataset-repo: the benchmark dataset repo the results name")
    if not options_of(args).is_default():
        raise EvaluationError("--from-hub reads the benchmark's own ground truth at each entry's revision: drop the "
                              "ground-truth flags")  # fmt: skip
    found = verify_from_hub(args.from_hub, args.dataset_repo, device=args.device, log=print)
    print(f"{found.model} on {found.dataset}: evidence from {', '.join(found.sources) or 'no details commit'}")
    for check in found.table.checks:
        print(check.line())
    if args.reencode:
        revision = None if args.data else found.revision  # the benchmark's items at the entries' revision
        found.table.reencoded = [r for ev in found.evidence
                                 for r in reencode_lines(args, ev, found.spec, found.dataset, revision)]  # fmt: skip
    return finish(found.table)


def reencode_lines(
    args: argparse.Namespace, evidence: object, run_model: object, data: object, revision: object
) -> list:
    """``--reencode N``: the evidence's items encoded again by ``--model`` (default: the run's, a Hub model), each
    result printed."""
    from eccv_metric.evidence.reencode import reencode
    from eccv_metric.hub.submission import suggested_repo

    model = args.model or (run_model if isinstance(run_model, str) and suggested_repo(run_model) else None)
    if model is None:
        raise EvaluationError("--reencode needs --model: the run's model names no Hub repo (a local folder)")
    source = args.data or data
    if not source:
        raise EvaluationError("--reencode needs --data: where the run's items are (a build folder or its Hub repo)")
    done = reencode(evidence, model, source, args.reencode, seed=args.seed, device=args.device, images=args.images,  # type: ignore[arg-type]
                    revision=revision)  # type: ignore[arg-type]  # fmt: skip
    for item in done:
        print(item.line())
    return done


def finish(table: object) -> int:
    """The summary line; 0 when every number is recomputed equal (and every re-encoding within tolerance)."""
    for note in table.notes:  # type: ignore[attr-defined]
        print(f"note: {note}")
    line = table.summary()  # type: ignore[attr-defined]
    if table.reencoded:  # type: ignore[attr-defined]
        bad = sum(not r.ok for r in table.reencoded)  # type: ignore[attr-defined]
        line += f"; re-encoded: {len(table.reencoded) - bad} within tolerance, {bad} outside"  # type: ignore[attr-defined]
    print(line)
    return 0 if table.equal else 1  # type: ignore[attr-defined]
