"""``Metrics``: a drop-in, exact and fast replacement of ``eccv_caption.Metrics``."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric import intramodal
from eccv_metric.categories import load_instance_categories
from eccv_metric.correlation import Correlation
from eccv_metric.correlation import bootstrap_spearman
from eccv_metric.cxc import Ratings
from eccv_metric.cxc import load_ratings
from eccv_metric.embeddings import prepare
from eccv_metric.embeddings import similarities
from eccv_metric.engine import QueryScores
from eccv_metric.engine import Relevance
from eccv_metric.engine import Source
from eccv_metric.engine import evaluate
from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.groundtruth import load_id_lists
from eccv_metric.intramodal import MODALITIES
from eccv_metric.intramodal import Similarity
from eccv_metric.plausible import PlausibleMatch
from eccv_metric.plausible import PMOptions
from eccv_metric.ranking import from_arrays
from eccv_metric.ranking import from_dict
from eccv_metric.sources import ListSource
from eccv_metric.sources import ScoreSource
from eccv_metric.targets import DEFAULT_TARGETS
from eccv_metric.targets import Request
from eccv_metric.targets import parse_targets
from eccv_metric.topk import as_score_matrix

Rankings = Mapping[int, Sequence[int]]
Results = dict[str, dict[str, float]]
PerQuery = dict[str, dict[str, QueryScores]]


class Metrics:
    """ECCV Caption, CxC, COCO 1K/5K and PMRP retrieval metrics.

    Same constructor and ``compute_all_metrics`` as the official package, plus
    ``compute_all_metrics_from_scores`` (exact metrics straight from a score
    matrix) and per-query variants.

    Parameters
    ----------
    extra_file_dir: folder with the released ``pm_image_to_caption.json`` and
        ``pm_caption_to_image.json`` (official argument); PM lists then come
        from these files instead of being computed from categories.
    verbose: accepted for compatibility; there is nothing slow to report.
    instances_json: COCO-format instances JSON (e.g. ``instances_val2014.json``):
        its categories define the PM positives for ``pmrp``.
    ground_truth: a :class:`GroundTruth` (default: the ``eccv_caption`` wheel's data).
    pm_zeta, pm_include_own, pm_r_cap: PM definition and PMRP cap (see
        :class:`~eccv_metric.plausible.PMOptions`). ``pm_r_cap=None`` gives the
        uncapped R-Precision that the official code returns on full rankings.
    cxc_source: where the CxC ratings (STS / SIS / SITS) for ``cxc_t2t``,
        ``cxc_i2i`` and ``cxc_*_spearman`` come from: a built dataset folder, a
        folder holding the CSVs, or None: the ground truth's dataset folder if it
        has them, else the canonical CxC files (downloaded once, sha256-checked).
    cxc_directed: read CxC intramodal pairs as directed (first column = query)
        instead of undirected (see :mod:`eccv_metric.cxc`).
    """

    def __init__(
        self,
        extra_file_dir: str | Path | None = None,
        verbose: bool = False,
        *,
        instances_json: str | Path | None = None,
        ground_truth: GroundTruth | None = None,
        pm_zeta: int = 2,
        pm_include_own: bool = False,
        pm_r_cap: int | None = 50,
        cxc_source: str | Path | None = None,
        cxc_directed: bool = False,
    ):
        gt = ground_truth if ground_truth is not None else GroundTruth.from_wheel()
        if instances_json is not None:
            gt = gt.with_categories(*load_instance_categories(instances_json, gt.image_ids))
        if extra_file_dir is not None:
            folder = Path(extra_file_dir)
            gt = gt.with_positives(
                "pm",
                {
                    "i2t": load_id_lists(folder / "pm_image_to_caption.json"),
                    "t2i": load_id_lists(folder / "pm_caption_to_image.json"),
                },
            )
        self.gt = gt
        self.pm_options = PMOptions(pm_zeta, pm_include_own, pm_r_cap)
        self.verbose = verbose
        self.coco_ids = gt.caption_ids
        self._pm: PlausibleMatch | None = None
        if cxc_source is None and (Path(gt.source) / "data" / "cxc_ratings").is_dir():
            cxc_source = gt.source
        self.cxc_source = cxc_source
        self.cxc_directed = cxc_directed
        self._ratings: dict[str, Ratings] = {}
        self._i2t: Rankings | None = None
        self._t2i: Rankings | None = None

    # -- official-style API ---------------------------------------------------

    def set_i2t_retrieved_items(self, i2t_retrieved_items: Rankings) -> None:
        self._i2t = i2t_retrieved_items

    def set_t2i_retrieved_items(self, t2i_retrieved_items: Rankings) -> None:
        self._t2i = t2i_retrieved_items

    def compute_all_metrics(
        self,
        i2t_retrieved_items: Rankings | None = None,
        t2i_retrieved_items: Rankings | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803 (official name)
        verbose: bool | None = None,
        *,
        partial: bool = False,
    ) -> Results:
        """Metrics from ranked lists ``{query id: [gallery ids, best first]}``.

        Returns ``{metric: {'i2t': value, 't2i': value}}`` with the official keys.
        A direction passed as ``None`` is left out (both ``None``: the lists set
        with ``set_*_retrieved_items``). ``partial=True`` scores only the
        queries given (means over them, not comparable with full results);
        by default every query of a metric must have a list.
        """
        return means(self.per_query(i2t_retrieved_items, t2i_retrieved_items, target_metrics, Ks, partial=partial))

    def compute_all_metrics_from_scores(
        self,
        scores: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        **intramodal: object,
    ) -> Results:
        """Exact metrics from ``scores[i, j]`` = similarity of ``image_ids[i]`` and ``caption_ids[j]``.

        Ranking = stable descending sort of each row/column (ties: the item given
        first wins). The ids default to the test split in Karpathy order; extra
        ids are allowed and ranked as negatives (COCO 1K ranks within the fold only).
        Keyword-only: ``caption_scores`` / ``image_scores`` (square matrices over
        ``caption_ids`` / ``image_ids``) for ``cxc_t2t`` / ``cxc_i2i`` and the
        STS / SIS correlations; ``n_resamples`` and ``seed`` for the correlations.
        """
        return means(
            self.per_query_from_scores(scores, image_ids, caption_ids, target_metrics, Ks, directions, **intramodal)
        )

    def compute_all_metrics_from_embeddings(
        self,
        image_embeddings: object = None,
        caption_embeddings: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        normalize: bool = False,
        n_resamples: int = 1000,
        seed: int = 0,
    ) -> Results:
        """Exact metrics from embeddings: similarity = dot product (cosine with ``normalize=True``).

        Rows default to the test split in Karpathy order. Image-caption metrics:
        the score-matrix path's ranking of ``image_embeddings @ caption_embeddings.T``
        (one matrix product). ``cxc_t2t`` / ``cxc_i2i``: one block of queries at a
        time (no captions x captions matrix). ``cxc_*_spearman``: dot products of
        the rated pairs only; ``n_resamples`` bootstrap samples drawn with ``seed``.
        """
        return means(
            self.per_query_from_embeddings(
                image_embeddings,
                caption_embeddings,
                image_ids,
                caption_ids,
                target_metrics,
                Ks,
                directions,
                normalize,
                n_resamples,
                seed,
            )
        )

    def cxc_ratings(self, kind: str) -> Ratings:
        """The CxC ``sts``, ``sis`` or ``sits`` test ratings (from ``cxc_source``; loaded once)."""
        if kind not in self._ratings:
            self._ratings[kind] = load_ratings(kind, self.cxc_source)
        return self._ratings[kind]

    def cxc_correlation(
        self, kind: str, pair_scores: Callable[[np.ndarray, np.ndarray], object], n_resamples: int = 1000, seed: int = 0
    ) -> Correlation:
        """CxC bootstrap Spearman correlation for ``sts``, ``sis`` or ``sits`` from a caller's pair scorer.

        ``pair_scores(ids_1, ids_2)`` returns the model's similarity of each rated
        pair (ids of the CSV's first and second column: captions for STS, images
        for SIS, captions then images for SITS); no dense matrix is needed.
        """
        first, second = (self.gt.captions if m == "caption" else self.gt.images for m in MODALITIES[kind])
        rated = self.cxc_ratings(kind).within(first, second)
        return bootstrap_spearman(rated, np.asarray(pair_scores(rated.id_1, rated.id_2)), n_resamples, seed)

    # -- per-query API ----------------------------------------------------------

    def per_query_from_embeddings(
        self,
        image_embeddings: object = None,
        caption_embeddings: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        normalize: bool = False,
        n_resamples: int = 1000,
        seed: int = 0,
    ) -> PerQuery:
        request = parse_targets(target_metrics, Ks)
        images = None if image_embeddings is None else prepare(image_embeddings, "image embeddings", normalize)
        captions = None if caption_embeddings is None else prepare(caption_embeddings, "caption embeddings", normalize)
        out: PerQuery = {}
        if request.cross_modal:
            if images is None or captions is None:
                raise EvaluationError("image-caption metrics need both image and caption embeddings")
            out = self._from_matrix(similarities(images, captions), image_ids, caption_ids, request, directions)
        sims = intramodal.from_embeddings(self.gt, images, captions, image_ids, caption_ids)
        return out | self._intramodal(request, sims, n_resamples, seed)

    def _from_matrix(
        self, matrix: object, image_ids: object, caption_ids: object, request: Request, directions: Iterable[str]
    ) -> PerQuery:
        source = ScoreSource(
            matrix,
            self.gt.image_ids if image_ids is None else image_ids,
            self.gt.caption_ids if caption_ids is None else caption_ids,
            self.gt,
        )
        return self._evaluate({d: source for d in parse_directions(directions)}, request)

    def _intramodal(self, request: Request, sims: Mapping[str, Similarity], n_resamples: int, seed: int) -> PerQuery:
        if not request.tasks and not request.task_stats and not request.correlations:
            return {}
        return intramodal.intramodal_per_query(
            self.gt, request, self.cxc_ratings, sims.get, self.cxc_directed, n_resamples, seed
        )

    def per_query(
        self,
        i2t_retrieved_items: Rankings | None = None,
        t2i_retrieved_items: Rankings | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        *,
        partial: bool = False,
    ) -> PerQuery:
        """Per-query values (``QueryScores``) whose means ``compute_all_metrics`` reports."""
        if i2t_retrieved_items is None and t2i_retrieved_items is None:
            i2t_retrieved_items, t2i_retrieved_items = self._i2t, self._t2i
            if i2t_retrieved_items is None and t2i_retrieved_items is None:
                raise EvaluationError("no ranked lists: pass i2t_retrieved_items and/or t2i_retrieved_items")
        request = _list_request(target_metrics, Ks)
        sources: dict[str, Source] = {}
        for direction, rankings in (("i2t", i2t_retrieved_items), ("t2i", t2i_retrieved_items)):
            if rankings is not None:
                sources[direction] = ListSource(from_dict(rankings, direction, self.gt), self.gt)
        return self._evaluate(sources, request, partial)

    def per_query_from_arrays(
        self,
        i2t: tuple | None = None,
        t2i: tuple | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
    ) -> PerQuery:
        """Like :meth:`per_query`, with each direction as arrays instead of a dict.

        ``i2t`` / ``t2i``: ``(query_ids, ranked_ids)`` with a 2-D ``ranked_ids``
        (one row per query), or ``(query_ids, flat_ids, lengths)`` for lists of
        different lengths. No Python list is built: the fast path for large inputs.
        """
        request = _list_request(target_metrics, Ks)
        sources: dict[str, Source] = {}
        for direction, arrays in (("i2t", i2t), ("t2i", t2i)):
            if arrays is not None:
                if not isinstance(arrays, tuple) or len(arrays) not in (2, 3):
                    raise EvaluationError(f"{direction} must be (query_ids, ranked_ids[, lengths])")
                lists = from_arrays(arrays[0], arrays[1], direction, self.gt, *arrays[2:])
                sources[direction] = ListSource(lists, self.gt)
        if not sources:
            raise EvaluationError("no ranked lists: pass i2t and/or t2i")
        return self._evaluate(sources, request)

    def per_query_from_scores(
        self,
        scores: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = (1, 5, 10),  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        *,
        caption_scores: object = None,
        image_scores: object = None,
        n_resamples: int = 1000,
        seed: int = 0,
    ) -> PerQuery:
        request = parse_targets(target_metrics, Ks)
        out: PerQuery = {}
        matrix = None if scores is None else as_score_matrix(scores)
        if request.cross_modal:
            if matrix is None:
                raise EvaluationError("image-caption metrics need the image x caption scores")
            out = self._from_matrix(matrix, image_ids, caption_ids, request, directions)
        sims = intramodal.from_scores(
            self.gt,
            matrix,
            image_ids,
            caption_ids,
            None if caption_scores is None else as_score_matrix(caption_scores),
            None if image_scores is None else as_score_matrix(image_scores),
        )
        return out | self._intramodal(request, sims, n_resamples, seed)

    def relevance(self, benchmark: str, direction: str) -> Relevance:
        """Positives of ``coco``, ``cxc``, ``eccv`` or ``pm`` (PM needs categories) in one direction."""
        if direction not in ("i2t", "t2i"):
            raise EvaluationError(f"direction must be 'i2t' or 't2i', not {direction!r}")
        if benchmark == "pm":
            return self._pm_relevance(direction)
        if benchmark not in self.gt.positives:
            raise EvaluationError(f"unknown benchmark {benchmark!r}; known: {', '.join(self.gt.positives)}, pm")
        return self.gt.positives[benchmark][direction]

    # -- internals ----------------------------------------------------------------

    def _evaluate(self, sources: Mapping[str, Source], request: Request, partial: bool = False) -> PerQuery:
        if request.pmrp:
            self._pm_relevance("i2t")  # fail early, before any ranking work
        return evaluate(self.gt, request, sources, self._pm_relevance, self.pm_options.r_cap, partial)

    def _pm_relevance(self, direction: str) -> Relevance:
        if "pm" in self.gt.positives:
            return self.gt.positives["pm"][direction]
        if self._pm is None:
            self._pm = PlausibleMatch(self.gt, self.pm_options.zeta, self.pm_options.include_own)
        return self._pm.relevance(direction)


def parse_directions(directions: Iterable[str] | str) -> list[str]:
    """``"i2t"``, ``"t2i"`` or a list of them (each once)."""
    given = [directions] if isinstance(directions, str) else directions
    if isinstance(given, Mapping) or not isinstance(given, Iterable):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i', not {directions!r:.40}")
    given = list(given)
    if not given or any(d not in ("i2t", "t2i") for d in given) or len(set(given)) != len(given):
        raise EvaluationError(f"directions must be 'i2t' and/or 't2i' (each once), not {given!r:.60}")
    return given


def _list_request(target_metrics: Iterable[str], ks: Iterable[int]) -> Request:
    request = parse_targets(target_metrics, ks)
    if request.tasks or request.task_stats or request.correlations:
        raise EvaluationError(
            f"{', '.join(request.intramodal_names())}: the CxC intramodal tasks and correlations are scored from "
            "embeddings or score matrices, not from image-caption ranked lists"
        )
    return request


def means(per_query: PerQuery) -> Results:
    """Per-query values -> the reported numbers ``{metric: {direction: mean}}``."""
    return {name: {d: scores.value for d, scores in by_dir.items()} for name, by_dir in per_query.items()}
