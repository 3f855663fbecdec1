"""``eccv-caption evaluate --model SPEC --data FOLDER_OR_REPO``: the flags of the model path and its run.

The rest of ``evaluate``'s flags keep their meaning (``--metrics``, ``--benchmarks``, ``--ks``,
``--output``, ``--per-query``, ``--json``, the ground-truth sources); the input flags (``--scores``,
``--image-embeddings``, ...) are another input and cannot be combined with ``--model``. The results JSON
(``--output``) carries ``provenance``: model spec and weights digest, data and its revision, package
version, device, precision, batch size, time; ``leaderboard`` and ``compare`` skip that key.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from eccv_metric.analysis.report import format_table
from eccv_metric.benchmarks.media import PIXEL_ORIGINS
from eccv_metric.benchmarks.request import Request
from eccv_metric.cli.common import CLI_WORDS
from eccv_metric.cli.common import positive_int
from eccv_metric.cli.common import say
from eccv_metric.cli.resource_flags import options_of
from eccv_metric.core.about import install_extra
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.files import check_output_path
from eccv_metric.core.files import write_json_atomic
from eccv_metric.core.provenance import with_digests
from eccv_metric.evidence.layout import check_evidence_folder
from eccv_metric.evidence.runs import save_evidence

MODEL_WORDS = {
    **CLI_WORDS,
    "model": "--model",
    "data": "--data",
    "images": "--images",
    "device": "--device",
    "precision": "--precision",
    "batch_size": "--batch-size",
    "text_batch_size": "--text-batch-size",
    "workers": "--workers",
    "decode": "--decode",
    "share_decode=False": "--decode-per-model",
    "save_embeddings": "--save-embeddings",
    "cache_dir": "--cache-dir",
    "cache=False": "--no-cache",
    "protocol": "--protocol",
    "rerank_k": "--rerank-k",
    "score_rule": "--score-rule",
    "coco_1k": "--coco-1k",
    "first_stage": "--first-stage",
    "max_pairs": "--max-pairs",
    "pair_batch_size": "--pair-batch-size",
    "text_length": "--text-length",
    "reference": "--reference",
    "shard": "--shard",
    "evidence": "--evidence",
}
INPUT_FLAGS = ("rankings", "run", "scores", "demo", "image_embeddings", "caption_embeddings", "caption_scores",
               "image_scores", "image_ids", "caption_ids")  # fmt: skip


def add_model_args(p: argparse.ArgumentParser) -> None:
    from eccv_metric.models.families.spec import spec_help

    g = p.add_argument_group(f"from a model ({install_extra('models')})")
    g.add_argument(
        "--model",
        action="append",
        help=spec_help() + "; several --model: each its own numbers, run in turn, images decoded once for the "
        "models that prepare them alike (loaded together); -o / --per-query / --save-embeddings then name "
        "folders (one file or subfolder per model)",
    )
    g.add_argument("--data", help="--model: a folder built by `eccv-caption build` or its Hub dataset repo")
    g.add_argument(
        "--images",
        nargs="+",
        help="--model: folders or zips with the pixels the build lacks (COCO val2014, unlabeled2017, Flickr30K)",
    )
    g.add_argument("--device", help="--model: cuda, mps or cpu (default: CUDA, then MPS, then CPU)")
    g.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32", help="autocast on a GPU")
    g.add_argument("--batch-size", type=positive_int, default=64, help="--model: images per forward pass (64)")
    g.add_argument(
        "--text-batch-size",
        type=positive_int,
        help="--model: captions per forward pass, cut in length order (default: 1024 on a GPU, 256 on a CPU)",
    )
    g.add_argument(
        "--workers",
        type=int,
        help="--model: image decoding processes (default: on a GPU cores - 1, on a CPU cores up to 8)",
    )
    g.add_argument(
        "--decode",
        choices=["pil", "gpu"],
        default="pil",
        help="--model: decode images with PIL in the workers (default) or with nvJPEG on the GPU (needs torchvision)",
    )
    g.add_argument(
        "--decode-per-model",
        action="store_true",
        help="several --model: one model in memory at a time, each decoding its own images",
    )
    g.add_argument("--save-embeddings", help="--model: keep the embeddings here (re-score with --image-embeddings)")
    g.add_argument("--no-cache", action="store_true", help="--model: neither read nor write the embedding cache")
    g.add_argument("--cache-dir", help="--model: the embedding cache (default: <HF_HOME>/eccv_caption/embeddings)")
    g.add_argument(
        "--shard",
        metavar="I/N",
        help="--model: i/N (1-based): this job computes its share of the batches and pair blocks into the cache and "
        "stops; a later run without --shard scores (a SLURM array: --shard $((SLURM_ARRAY_TASK_ID+1))/N). Under "
        "torchrun the ranks share the work by themselves",
    )
    add_pair_args(p)


def add_pair_args(p: argparse.ArgumentParser) -> None:
    from eccv_metric.models.pairs.options import MAX_PAIRS
    from eccv_metric.models.pairs.options import PAIR_BATCH_SIZE
    from eccv_metric.models.pairs.options import RERANK_K

    g = p.add_argument_group(
        "a --model that scores pairs (ITM heads, cross-encoders: BLIP, BLIP-2, ViLT, BridgeTower, FLAVA)"
    )
    g.add_argument(
        "--protocol",
        choices=["rerank", "exhaustive"],
        help="rerank: each query's --rerank-k best items by a first stage (the model's own, e.g. BLIP's ITC, or "
        "--first-stage) are scored by the pair head, the rest keep the first stage's order (default with a first "
        "stage); exhaustive: every image-caption pair (default without one; 125M pairs for the 5K split)",
    )
    g.add_argument(
        "--rerank-k",
        type=int,
        metavar="K",
        help=f"rerank: candidates per query ({RERANK_K}, as LAVIS for BLIP-2 and ALBEF; BLIP on COCO used 256); a "
        "warning names each metric that reads deeper",
    )
    g.add_argument(
        "--score-rule",
        choices=["itm+itc", "itm"],
        help="the final score of a pair: the pair head's logit plus the first stage's similarity (itm+itc: LAVIS, "
        "BLIP; the default when the model's own first stage has it) or the logit alone (itm: the original ALBEF, "
        "X-VLM)",
    )
    g.add_argument(
        "--coco-1k",
        choices=["restrict", "within"],
        help="rerank: COCO 1K reads the 5K two-stage ranking restricted to each fold (restrict, the default, as the "
        "official package restricts ranked lists) or reranks each query's top k within its fold (within)",
    )
    g.add_argument(
        "--first-stage", metavar="SPEC", help="rerank: a dual encoder spec whose ranking is reranked (any --model spec)"
    )
    g.add_argument(
        "--max-pairs",
        type=positive_int,
        metavar="N",
        help=f"pairs a run scores unless raised ({MAX_PAIRS:,}: a k={RERANK_K} rerank of every benchmark, about "
        "12.3M; an exhaustive 5K run is 125M); above it the run stops after its first blocks with the time it "
        "would take",
    )
    g.add_argument(
        "--pair-batch-size",
        type=positive_int,
        metavar="N",
        help=f"pairs per forward pass of the pair head ({PAIR_BATCH_SIZE})",
    )
    g.add_argument(
        "--text-length",
        type=positive_int,
        metavar="N",
        help="a caption's length in the unit of the code the pair head follows (default: that code's: BLIP's own "
        "30 words, LAVIS's and BLIP-2's 50; then 35 tokens)",
    )
    g.add_argument(
        "--reference",
        choices=["original", "lavis", "transformers"],
        help="where a model's codes differ, follow its own (original, the default: e.g. BLIP's ITM reads its [ENC] "
        "token, captions cut at BLIP's 30 words), LAVIS's (BLIP: LAVIS's 50 words; BLIP-2's own code is LAVIS's) "
        "or the transformers port",
    )


def run_model(args: argparse.Namespace) -> int:
    """``evaluate --model``: the flags mapped onto a Request and evaluate_model's keywords; the table, the
    results with their provenance, every message in the CLI's words."""
    if not args.model:
        raise EvaluationError("--data is where --model's items come from: give --model SPEC too")
    given = [f"--{name.replace('_', '-')}" for name in INPUT_FLAGS if getattr(args, name, None)]
    if given:
        raise EvaluationError(f"--model is an input of its own: drop {', '.join(given)}")
    if not args.data:
        raise EvaluationError("--model needs --data: a folder built by `eccv-caption build` or its Hub dataset repo")
    if args.shard:
        outputs = [flag for flag, value in (("-o", args.output), ("--per-query", args.per_query), ("--json", args.json),
                                            ("--save-embeddings", args.save_embeddings)) if value]  # fmt: skip
        if outputs:
            raise EvaluationError(
                f"--shard {args.shard} computes this job's share into the cache and prints no numbers: drop "
                f"{', '.join(outputs)} (the run without --shard, once every job is done, scores and writes them)"
            )
    models = list(args.model)
    for path in (args.output, args.per_query):
        if len(models) == 1 or path is None:
            check_output_path(path)
        elif Path(path).exists() and not Path(path).is_dir():
            raise EvaluationError(f"output {path}: with several --model it is a folder (one file per model)")
    evidence = evidence_folders(args.evidence, models)
    from eccv_metric.models.many import evaluate_models_request
    from eccv_metric.models.many import model_slug
    from eccv_metric.models.plan import EVERY
    from eccv_metric.models.run import evaluate_model_request

    try:
        request = Request.parse(args.metrics, args.ks, benchmarks=args.benchmarks, n_resamples=args.n_resamples,
                                seed=args.seed, made_for=EVERY)  # fmt: skip
        with warnings.catch_warnings():  # the notes are printed below, in the CLI's words
            warnings.simplefilter("ignore", ChanceLevelWarning)
            warnings.showwarning = _warning_line
            options = dict(
                skip_unavailable=not (args.metrics or args.benchmarks),
                images=args.images,
                resource_options=options_of(args),
                device=args.device,
                precision=args.precision,
                batch_size=args.batch_size,
                text_batch_size=args.text_batch_size,
                workers=args.workers,
                decode=args.decode,
                cache=not args.no_cache,
                cache_dir=args.cache_dir,
                save_embeddings=args.save_embeddings,
                shard=args.shard,
                protocol=args.protocol,
                rerank_k=args.rerank_k,
                score_rule=args.score_rule,
                coco_1k=args.coco_1k,
                first_stage=args.first_stage,
                max_pairs=args.max_pairs,
                pair_batch_size=args.pair_batch_size,
                text_length=args.text_length,
                reference=args.reference,
            )
            runs = (
                [evaluate_model_request(models[0], args.data, request, **options)]  # type: ignore[arg-type]
                if len(models) == 1
                else evaluate_models_request(
                    models, args.data, request, share_decode=not args.decode_per_model, **options
                )  # type: ignore[arg-type]
            )
    except EvaluationError as exc:
        raise EvaluationError(in_words(exc, MODEL_WORDS)) from None
    several = len(runs) > 1
    if not all(out.scored for out in runs):  # a --shard job, or a torchrun rank other than 0
        if args.shard and not args.quiet:
            cache = runs[0].provenance.get("cache")
            print(f"shard {args.shard}: its share is in the cache {cache}; when every shard is done, run the same "
                  "command without --shard to score (it computes whatever is missing)", file=sys.stderr)  # fmt: skip
        return 0
    shown = []
    for k, out in enumerate(runs):
        means = out.results.means()
        skipped = {name: in_words(why, MODEL_WORDS) for name, why in out.skipped.items()}
        per_query = out.results.per_query_json() if args.per_query else None
        digest = save_evidence(out, evidence[k]) if evidence else None
        provenance = {**out.provenance, "skipped": skipped}
        written = {**means, "provenance": with_digests(provenance, means, per_query, digest)}
        shown.append(written)
        if not args.json and not args.quiet:
            print((f"model: {models[k]}\n" if several else "") + format_table(means))
        lines = skipped_lines(skipped)
        if not out.provenance.get("model_loaded", True) and not args.quiet:
            lines.append(f"note: {models[k]}: every embedding was read from the cache, so the model was not loaded "
                         "(--no-cache loads it and encodes afresh)")  # fmt: skip
        for line in lines + [f"warning: {in_words(note, CLI_WORDS)}" for note in out.results.notes]:
            print(line, file=sys.stderr)
        for path, payload in ((args.output, written), (args.per_query, per_query)):
            if path:
                target = Path(path) / f"{model_slug(k, models[k])}.json" if several else path
                write_json_atomic(target, payload)
    if args.json:
        print(json.dumps(shown if several else shown[0], indent=1))
    for path in (args.output, args.per_query, args.save_embeddings, args.evidence):
        if path:
            say(args, f"wrote {path}")
    return 0


def evidence_folders(given: str | None, models: list[str]) -> list[Path]:
    """``--evidence DIR``: the folder of each model's evidence (``DIR``; several --model: ``DIR/<k>-<spec>``),
    each checked before any model runs."""
    if not given:
        return []
    from eccv_metric.models.many import model_slug

    folders = [Path(given)] if len(models) == 1 else [Path(given) / model_slug(k, m) for k, m in enumerate(models)]
    for folder in folders:
        check_evidence_folder(folder)
    return folders


NO_PIXELS = "images have no pixels"  # how the model path words a benchmark skipped for its images' pixels
DETAIL = "each benchmark and why: --json, or provenance.skipped in the -o file"


def skipped_lines(skipped: dict[str, str]) -> list[str]:
    """What a run skipped, in a few lines (``skipped``: {benchmark: why}, in the CLI's words): one for every
    benchmark whose images have no pixels (how many, which, and the --images that adds each source of images),
    one per other reason (the benchmarks it holds back). Each benchmark's own reason stays in the results'
    provenance (``--json``, ``-o``)."""
    pixels: list[str] = []
    others: dict[str, list[str]] = {}
    for name, why in skipped.items():
        why = why.removeprefix(name + ": ")
        if NO_PIXELS in why:
            pixels.append(name)
        else:
            others.setdefault(why, []).append(name)
    lines = []
    if pixels:
        reasons = [skipped[name] for name in pixels]
        fixes = [
            fix for fix in (in_words(t, MODEL_WORDS) for t in PIXEL_ORIGINS.values()) if any(fix in r for r in reasons)
        ]
        how = "; ".join(fixes) if fixes else reasons[0].removeprefix(pixels[0] + ": ")
        lines.append(f"skipped {len(pixels)} benchmark{'s' * (len(pixels) > 1)} whose {NO_PIXELS} "
                     f"({names_shown(pixels)}): {how} ({DETAIL})")  # fmt: skip
    for why, names in others.items():
        lines.append(f"skipped {names_shown(names)}: {why}")
    return lines


def names_shown(names: list[str], limit: int = 3) -> str:
    """``coco_1k, coco_5k, cxc and 15 more``."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _warning_line(message: Warning | str, *_: object, **__: object) -> None:
    """A warning during the run (a cache entry re-encoded, a library's notice): one ``warning:`` line, CLI words."""
    print(f"warning: {in_words(str(message), MODEL_WORDS)}", file=sys.stderr)
