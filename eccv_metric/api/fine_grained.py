"""``FineGrainedMetrics``: MSCOCO-FG / Flickr30K-FG with the ``Metrics`` API shape (a thin shim over ``evaluate``).

Metric names: ``<bench>_r<K>``, ``<bench>_recalls`` (R@K for every K in ``Ks``),
``<bench>_map_at_r``, ``<bench>_rprecision``, ``<bench>_medr``, ``<bench>_meanr``,
with ``<bench>`` = ``mscoco_fg``, ``flickr30k_fg`` or their paper variants
(``_original_pool``: the original test images only, Fig. 7; ``mscoco_fg_original_texts``:
the original COCO captions on the enlarged pool, Table 4); results
``{"mscoco_fg_r1": {"i2t": v, "t2i": v}}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.groundtruth.fg import BENCHMARKS
from eccv_metric.groundtruth.fg import FineGrained
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.measures.results import QueryScores
from eccv_metric.measures.results import means

ResultsDict = dict[str, dict[str, float]]
PerQuery = dict[str, dict[str, QueryScores]]
RankingsDict = Mapping[int, Sequence[int]]


class FineGrainedMetrics:
    """MSCOCO-FG or Flickr30K-FG (Chen, Yao and Jin, SIGIR '23).

    Parameters
    ----------
    benchmark: ``"mscoco_fg"`` or ``"flickr30k_fg"``.
    source: a folder holding the benchmark's annotation JSON and file-name .npy (searched
        recursively), a built dataset folder or its Hub repo; None: the canonical files,
        downloaded once and sha256-checked.
    ground_truth: the COCO test split, for MSCOCO-FG's caption ids (default: the ``eccv_caption`` wheel).
    """

    def __init__(
        self, benchmark: str = "mscoco_fg", source: str | Path | None = None, ground_truth: GroundTruth | None = None
    ):
        if benchmark not in BENCHMARKS:
            raise EvaluationError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")
        self.benchmark = benchmark
        self.resources = Resources(ground_truth, fg_source=source)
        self.fg: FineGrained = self.resources.collection(benchmark)  # type: ignore[assignment]
        self.default_targets = (f"{benchmark}_recalls",)

    def _targets(self, target_metrics: Iterable[str] | str | None, ks: Iterable[int]) -> list[str]:
        names = list(self.default_targets) if target_metrics is None else target_metrics
        requests = parse_targets(names, ks)
        family = [b.name for b in REGISTRY if b.collection == self.benchmark]
        wrong = [r.name for r in requests if r.benchmark.collection != self.benchmark]
        if wrong:
            raise EvaluationError(
                f"unknown target metric {wrong[0]!r} for {self.benchmark}; valid: <benchmark>_r<K>, "
                f"<benchmark>_recalls, _map_at_r, _rprecision, _medr, _meanr with benchmarks {', '.join(family)}"
            )
        return [r.name for r in requests]

    def compute_all_metrics(
        self,
        i2t_retrieved_items: RankingsDict | None = None,
        t2i_retrieved_items: RankingsDict | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        *,
        partial: bool = False,
    ) -> ResultsDict:
        """From ranked lists: i2t ``{image id: [caption ids]}``, t2i ``{caption id: [image ids]}``."""
        return means(self.per_query(i2t_retrieved_items, t2i_retrieved_items, target_metrics, Ks, partial=partial))

    def per_query(
        self,
        i2t_retrieved_items: RankingsDict | None = None,
        t2i_retrieved_items: RankingsDict | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        *,
        partial: bool = False,
    ) -> PerQuery:
        """Per-query values whose means :meth:`compute_all_metrics` reports."""
        names = self._targets(target_metrics, Ks)
        if i2t_retrieved_items is None and t2i_retrieved_items is None:
            raise EvaluationError("no ranked lists: pass i2t_retrieved_items and/or t2i_retrieved_items")
        source = Rankings(i2t=i2t_retrieved_items, t2i=t2i_retrieved_items)
        return dict(evaluate(source, names, Ks, resources=self.resources, partial=partial))

    def compute_all_metrics_from_scores(
        self,
        scores: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
    ) -> ResultsDict:
        """From ``scores[i, j]`` = similarity of ``image_ids[i]`` (gallery) and ``caption_ids[j]``."""
        return means(self.per_query_from_scores(scores, image_ids, caption_ids, target_metrics, Ks, directions))

    def per_query_from_scores(
        self,
        scores: object,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] | None = None,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
    ) -> PerQuery:
        """Per-query values whose means :meth:`compute_all_metrics_from_scores` reports."""
        names = self._targets(target_metrics, Ks)
        source = ScoreMatrix(scores, image_ids, caption_ids)
        return dict(evaluate(source, names, Ks, resources=self.resources, directions=directions))

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
    ) -> ResultsDict:
        """From embeddings (dot product; cosine with ``normalize``), one block of queries at a time."""
        return means(
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
        """Per-query values whose means :meth:`compute_all_metrics_from_embeddings` reports."""
        names = self._targets(target_metrics, Ks)
        source = Embeddings(image_embeddings, caption_embeddings, image_ids, caption_ids, normalize)
        return dict(evaluate(source, names, Ks, resources=self.resources, directions=directions))
