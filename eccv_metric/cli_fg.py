"""``eccv-caption evaluate --benchmark mscoco_fg|flickr30k_fg``: a thin layer over ``FineGrainedMetrics``."""

from __future__ import annotations

import argparse

from eccv_metric.errors import EvaluationError
from eccv_metric.fg_metrics import FineGrainedMetrics
from eccv_metric.files import load_npy
from eccv_metric.files import load_rankings


def fine_grained(args: argparse.Namespace, image_ids: object, caption_ids: object) -> dict:
    """Per-query values of ``evaluate --benchmark mscoco_fg|flickr30k_fg`` (rankings, scores or embeddings)."""
    if args.run or args.demo or args.caption_scores or args.image_scores:
        raise EvaluationError(f"{args.benchmark}: give --rankings, --scores or both --*-embeddings")
    fg = FineGrainedMetrics(args.benchmark, args.source_dir)
    if args.rankings:
        rankings = load_rankings(args.rankings)
        return fg.per_query(rankings.get("i2t"), rankings.get("t2i"), args.metrics, args.ks)
    if args.scores:
        scores = load_npy(args.scores, "a .npy float matrix (gallery images x captions)")
        return fg.per_query_from_scores(scores, image_ids, caption_ids, args.metrics, args.ks)
    if not (args.image_embeddings and args.caption_embeddings):
        raise EvaluationError(f"{args.benchmark} needs both --image-embeddings and --caption-embeddings")
    return fg.per_query_from_embeddings(
        load_npy(args.image_embeddings, "a .npy float array (images x dimensions)"),
        load_npy(args.caption_embeddings, "a .npy float array (captions x dimensions)"),
        image_ids,
        caption_ids,
        args.metrics,
        args.ks,
        normalize=args.normalize,
    )
