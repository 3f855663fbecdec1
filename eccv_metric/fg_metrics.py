"""``FineGrainedMetrics``: R@K, MedR and MeanR of MSCOCO-FG / Flickr30K-FG, with the ``Metrics`` API shape.

Metric names: ``<bench>_r<K>``, ``<bench>_recalls`` (R@K for every K in ``Ks``), ``<bench>_medr``,
``<bench>_meanr`` with ``<bench>`` = ``mscoco_fg`` or ``flickr30k_fg``; results
``{"mscoco_fg_r1": {"i2t": v, "t2i": v}}``. Every number comes from the task engine
(:mod:`eccv_metric.tasks`) on the benchmark's definition (:mod:`eccv_metric.fg`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from eccv_metric.embeddings import prepare
from eccv_metric.engine import QueryScores
from eccv_metric.errors import EvaluationError
from eccv_metric.fg import BENCHMARKS
from eccv_metric.fg import FineGrained
from eccv_metric.fg import load_fg
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.intramodal import rows_of
from eccv_metric.targets import _parse_ks
from eccv_metric.tasks import EmbeddingScorer
from eccv_metric.tasks import MatrixScorer
from eccv_metric.tasks import Scorer
from eccv_metric.tasks import evaluate_lists
from eccv_metric.tasks import evaluate_task
from eccv_metric.tasks import gallery_columns
from eccv_metric.topk import as_score_matrix

Results = dict[str, dict[str, float]]
PerQuery = dict[str, dict[str, QueryScores]]


def parse_fg_targets(bench: str, target_metrics: Iterable[str] | str, ks: Iterable[int]) -> tuple[tuple, tuple]:
    """(Ks, rank statistics) requested by ``target_metrics`` for benchmark ``bench``."""
    names = [target_metrics] if isinstance(target_metrics, str) else list(target_metrics)
    pattern = re.compile(rf"^{bench}_(?:r([1-9][0-9]*)|(recalls)|(medr|meanr))$")
    wanted_ks: set[int] = set()
    stats: list[str] = []
    for name in names:
        match = pattern.match(name) if isinstance(name, str) else None
        if not match:
            raise EvaluationError(
                f"unknown target metric {name!r} for {bench}; valid: {bench}_r<K>, {bench}_recalls, "
                f"{bench}_medr, {bench}_meanr"
            )
        if match.group(1):
            wanted_ks.add(int(match.group(1)))
        elif match.group(2):
            given = _parse_ks(ks)
            if not given:
                raise EvaluationError(f"{name} needs at least one K: Ks is empty")
            wanted_ks.update(given)
        elif match.group(3) not in stats:
            stats.append(match.group(3))
    if not names:
        raise EvaluationError("target_metrics is empty")
    return tuple(sorted(wanted_ks)), tuple(sorted(stats, key=lambda s: s != "medr"))


class FineGrainedMetrics:
    """MSCOCO-FG or Flickr30K-FG (Chen et al., ACM MM 2023).

    Parameters
    ----------
    benchmark: ``"mscoco_fg"`` or ``"flickr30k_fg"``.
    source: a folder holding the benchmark's annotation JSON and file-name .npy (searched
        recursively); None: the canonical files, downloaded once and sha256-checked.
    ground_truth: the COCO test split, for MSCOCO-FG's caption ids (default: the ``eccv_caption`` wheel).
    """

    def __init__(
        self, benchmark: str = "mscoco_fg", source: str | Path | None = None, ground_truth: GroundTruth | None = None
    ):
        if benchmark not in BENCHMARKS:
            raise EvaluationError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
        self.benchmark = benchmark
        self.fg: FineGrained = load_fg(benchmark, source, ground_truth if benchmark == "mscoco_fg" else None)
        self.default_targets = (f"{benchmark}_recalls",)

    def compute_all_metrics(
        self,
        i2t_retrieved_items: Mapping[int, Sequence[int]] | None = None,
        t2i_retrieved_items: Mapping[int, Sequence[int]] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
    ) -> Results:
        """From ranked lists: i2t ``{image id: [caption ids]}``, t2i ``{caption id: [image ids]}``."""
        return _means(self.per_query(i2t_retrieved_items, t2i_retrieved_items, target_metrics, Ks))

    def per_query(
        self,
        i2t_retrieved_items: Mapping[int, Sequence[int]] | None = None,
        t2i_retrieved_items: Mapping[int, Sequence[int]] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
    ) -> PerQuery:
        """Per-query values whose means :meth:`compute_all_metrics` reports."""
        ks, stats = parse_fg_targets(
            self.benchmark, self.default_targets if target_metrics is None else target_metrics, Ks
        )
        out: PerQuery = {}
        for direction, lists in (("i2t", i2t_retrieved_items), ("t2i", t2i_retrieved_items)):
            if lists is not None:
                _merge(out, evaluate_lists(self.fg.task(direction), lists, ks, stats))
        if not out:
            raise EvaluationError("no ranked lists: pass i2t_retrieved_items and/or t2i_retrieved_items")
        return out

    def compute_all_metrics_from_scores(
        self,
        scores: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
    ) -> Results:
        """From ``scores[i, j]`` = similarity of ``image_ids[i]`` (gallery) and ``caption_ids[j]``."""
        return _means(self.per_query_from_scores(scores, image_ids, caption_ids, target_metrics, Ks, directions))

    def per_query_from_scores(
        self,
        scores: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
    ) -> PerQuery:
        matrix = as_score_matrix(scores)
        scorers = {"i2t": MatrixScorer(matrix), "t2i": MatrixScorer(matrix, along_columns=True)}
        return self._evaluate(scorers, matrix.shape, image_ids, caption_ids, target_metrics, Ks, directions)

    def compute_all_metrics_from_embeddings(
        self,
        image_embeddings: object,
        caption_embeddings: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        normalize: bool = False,
    ) -> Results:
        """From embeddings (dot product; cosine with ``normalize``), one block of queries at a time."""
        return _means(
            self.per_query_from_embeddings(
                image_embeddings, caption_embeddings, image_ids, caption_ids, target_metrics, Ks, directions, normalize
            )
        )

    def per_query_from_embeddings(
        self,
        image_embeddings: object,
        caption_embeddings: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        normalize: bool = False,
    ) -> PerQuery:
        images = prepare(image_embeddings, "image embeddings", normalize)
        captions = prepare(caption_embeddings, "caption embeddings", normalize)
        scorers = {"i2t": EmbeddingScorer(images, captions), "t2i": EmbeddingScorer(captions, images)}
        shape = (len(images), len(captions))
        return self._evaluate(scorers, shape, image_ids, caption_ids, target_metrics, Ks, directions)

    def _evaluate(
        self,
        scorers: dict[str, Scorer],
        shape: tuple[int, int],
        image_ids: object,
        caption_ids: object,
        target_metrics: Iterable[str] | None,
        ks: Iterable[int],
        directions: Iterable[str],
    ) -> PerQuery:
        from eccv_metric.metrics import parse_directions

        wanted_ks, stats = parse_fg_targets(
            self.benchmark, self.default_targets if target_metrics is None else target_metrics, ks
        )
        fg = self.fg
        image_cols = gallery_columns(fg.images.ids if image_ids is None else image_ids, fg.images, fg.captions, "image")
        caption_cols = gallery_columns(
            fg.captions.ids if caption_ids is None else caption_ids, fg.captions, fg.images, "caption"
        )
        if (len(image_cols), len(caption_cols)) != shape:
            raise EvaluationError(
                f"{shape[0]} image rows x {shape[1]} caption rows but {len(image_cols)} image ids and "
                f"{len(caption_cols)} caption ids: one id per row"
            )
        out: PerQuery = {}
        for direction in parse_directions(directions):
            queries, gallery = (image_cols, caption_cols) if direction == "i2t" else (caption_cols, image_cols)
            task = fg.task(direction)
            rows = rows_of(queries, len(task.queries))
            _merge(out, evaluate_task(task, scorers[direction], rows, gallery, wanted_ks, stats))
        return out


def _merge(out: PerQuery, scores: dict[str, QueryScores]) -> None:
    for name, per_query in scores.items():
        out.setdefault(name, {})[per_query.direction] = per_query


def _means(per_query: PerQuery) -> Results:
    return {name: {d: s.value for d, s in by_dir.items()} for name, by_dir in per_query.items()}
