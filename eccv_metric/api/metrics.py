"""``Metrics``: a drop-in, exact and fast replacement of ``eccv_caption.Metrics``, the package's one compatibility
shim over ``evaluate``: every method maps its arguments onto an input and one private path
(:meth:`Metrics._evaluate`); each ``compute_all_metrics*`` is the means of its ``per_query*`` twin."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import PM_INCLUDE_OWN
from eccv_metric.core.defaults import PM_R_CAP
from eccv_metric.core.defaults import PM_ZETA
from eccv_metric.core.defaults import SEED
from eccv_metric.core.errors import EvaluationError
from eccv_metric.groundtruth.cxc import RATING_ITEMS
from eccv_metric.groundtruth.cxc import Ratings
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.pairs import PairScores
from eccv_metric.inputs.scored import ScoredInput
from eccv_metric.measures.correlation import Correlation
from eccv_metric.measures.results import PerQuery
from eccv_metric.measures.results import means

RankingsDict = Mapping[int, Sequence[int]]


def _directions(directions: Iterable[str] | str) -> Iterable[str] | str:
    """The official-style methods take directions explicitly (None is refused, not read as "both")."""
    if directions is None:
        raise EvaluationError("directions must be 'i2t' and/or 't2i' (each once), not None")
    return directions


def _names(target_metrics: Iterable[str] | str) -> Iterable[str] | str:
    """The official API takes names only: None is refused (``evaluate`` reads None as "the defaults")."""
    if target_metrics is None:
        raise EvaluationError("target_metrics must be a metric name or a list of names, not NoneType")
    return target_metrics


ResultsDict = dict[str, dict[str, float]]


def _means_of(per_query: Callable[..., PerQuery], doc: str) -> Callable[..., ResultsDict]:
    """A ``compute_all_metrics*`` method: the means of its ``per_query*`` twin (same arguments, same signature)."""

    @functools.wraps(per_query)
    def compute(self: Metrics, *args: object, **kwargs: object) -> ResultsDict:
        return means(per_query(self, *args, **kwargs))

    compute.__name__ = compute.__qualname__ = per_query.__name__.replace("per_query", "compute_all_metrics")
    compute.__doc__ = doc
    compute.__annotations__ = {**per_query.__annotations__, "return": "ResultsDict"}
    compute.__signature__ = inspect.signature(per_query).replace(return_annotation="ResultsDict")  # type: ignore[attr-defined]
    return compute


class Metrics:
    """ECCV Caption, CxC, COCO 1K/5K and PMRP retrieval metrics, and every other registered benchmark of the split.

    Same constructor and ``compute_all_metrics`` as the official package, plus
    ``compute_all_metrics_from_scores`` / ``_from_embeddings`` (exact metrics
    from a score matrix or embeddings) and per-query variants. Every method is
    a thin layer over :func:`eccv_metric.evaluate`; every registered benchmark is
    reached by its metric names, the fine-grained ones too (``Metrics(fg_source=...)``
    and ``target_metrics=["mscoco_fg_recalls"]``).

    Parameters
    ----------
    extra_file_dir: folder with the released ``pm_image_to_caption.json`` and
        ``pm_caption_to_image.json`` (official argument); PM lists then come
        from these files instead of being computed from categories.
    verbose: accepted for compatibility; long steps show progress bars.
    instances_json: COCO-format instances JSON (e.g. ``instances_val2014.json``):
        its categories define the PM positives for ``pmrp``.
    ground_truth: a :class:`GroundTruth` (default: the ``eccv_caption`` wheel's data).
    pm_zeta, pm_include_own, pm_r_cap: PM definition and PMRP cap of ``pmrp`` (see
        :class:`~eccv_metric.groundtruth.plausible.PMOptions`). ``pm_r_cap=None`` gives the
        uncapped R-Precision that the official code returns on full rankings.
    cxc_source: where the CxC ratings (STS / SIS / SITS) come from: a built dataset
        folder or Hub repo, a folder holding the CSVs, or None: the ground truth's dataset
        folder if it has them, else the canonical CxC files (downloaded once, sha256-checked).
    cxc_directed: read CxC intramodal pairs as directed (first column = query).
    fg_source: where MSCOCO-FG / Flickr30K-FG files come from (a folder holding them, a built dataset or its
        Hub repo; None: the canonical files, downloaded once and sha256-checked).
    """

    def __init__(
        self,
        extra_file_dir: str | Path | None = None,
        verbose: bool = False,
        *,
        instances_json: str | Path | None = None,
        ground_truth: GroundTruth | None = None,
        pm_zeta: int = PM_ZETA,
        pm_include_own: bool = PM_INCLUDE_OWN,
        pm_r_cap: int | None = PM_R_CAP,
        cxc_source: str | Path | None = None,
        cxc_directed: bool = False,
        fg_source: str | Path | None = None,
    ):
        self.resources = ResourceOptions(
            ground_truth,  # a given split: its own Resources; else the one cache
            instances_json,
            extra_file_dir,
            pm_zeta,
            pm_include_own,
            pm_r_cap,
            cxc_source,
            cxc_directed,
            fg_source,
        ).resources()
        self.gt = self.resources.gt
        self.pm_options = self.resources.pm
        self.verbose = verbose
        self.coco_ids = self.gt.caption_ids
        self._i2t: RankingsDict | None = None
        self._t2i: RankingsDict | None = None

    @property
    def cxc_source(self) -> str | Path | None:
        return self.resources.cxc_source

    # -- the one path -----------------------------------------------------------------------------------------

    def _targets(self, target_metrics: Iterable[str] | str | None, ks: Iterable[int]) -> Iterable[str] | str:
        """The metric names asked for; the official API takes names only (None is refused, not "the defaults")."""
        return _names(target_metrics)

    def _evaluate(
        self,
        source: Rankings | ScoredInput,
        target_metrics: Iterable[str] | str | None,
        ks: Iterable[int],
        directions: Iterable[str] | str | None = None,
        partial: bool = False,
        n_resamples: int = N_RESAMPLES,
        seed: int = SEED,
    ) -> PerQuery:
        names = self._targets(target_metrics, ks)
        return dict(
            evaluate(
                source,
                names,
                ks,
                resources=self.resources,
                directions=directions,
                partial=partial,
                n_resamples=n_resamples,
                seed=seed,
            )
        )

    # -- official-style API ---------------------------------------------------

    def set_i2t_retrieved_items(self, i2t_retrieved_items: RankingsDict) -> None:
        self._i2t = i2t_retrieved_items

    def set_t2i_retrieved_items(self, t2i_retrieved_items: RankingsDict) -> None:
        self._t2i = t2i_retrieved_items

    def per_query(
        self,
        i2t_retrieved_items: RankingsDict | None = None,
        t2i_retrieved_items: RankingsDict | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = KS,  # noqa: N803 (official name)
        verbose: bool | None = None,
        *,
        partial: bool = False,
    ) -> PerQuery:
        """Per-query values (``QueryScores``) whose means :meth:`compute_all_metrics` reports."""
        if i2t_retrieved_items is None and t2i_retrieved_items is None:
            i2t_retrieved_items, t2i_retrieved_items = self._i2t, self._t2i
            if i2t_retrieved_items is None and t2i_retrieved_items is None:
                raise EvaluationError("no ranked lists: pass i2t_retrieved_items and/or t2i_retrieved_items")
        source = Rankings(i2t=i2t_retrieved_items, t2i=t2i_retrieved_items)
        return self._evaluate(source, target_metrics, Ks, partial=partial)

    compute_all_metrics = _means_of(
        per_query,
        """Metrics from ranked lists ``{query id: [gallery ids, best first]}``.

        Returns ``{metric: {'i2t': value, 't2i': value}}`` with the official keys.
        A direction passed as ``None`` is left out (both ``None``: the lists set
        with ``set_*_retrieved_items``). ``partial=True`` scores only the
        queries given (means over them, not comparable with full results);
        by default every query of a metric must have a list. ``verbose``: accepted
        for compatibility (long steps show progress bars).
        """,
    )

    def per_query_from_arrays(
        self,
        i2t: tuple | None = None,
        t2i: tuple | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = KS,  # noqa: N803
        *,
        partial: bool = False,
    ) -> PerQuery:
        """Like :meth:`per_query`, with each direction as arrays instead of a dict.

        ``i2t`` / ``t2i``: ``(query_ids, ranked_ids)`` with a 2-D ``ranked_ids``
        (one row per query), or ``(query_ids, flat_ids, lengths)`` for lists of
        different lengths. No Python list is built: the fast path for large inputs.
        """
        if i2t is None and t2i is None:
            raise EvaluationError("no ranked lists: pass i2t and/or t2i")
        return self._evaluate(Rankings(i2t=i2t, t2i=t2i), target_metrics, Ks, partial=partial)

    def per_query_from_scores(
        self,
        scores: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = KS,  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        *,
        caption_scores: object = None,
        image_scores: object = None,
        n_resamples: int = N_RESAMPLES,
        seed: int = SEED,
    ) -> PerQuery:
        """Per-query values whose means :meth:`compute_all_metrics_from_scores` reports."""
        source = ScoreMatrix(scores, image_ids, caption_ids, caption_scores=caption_scores, image_scores=image_scores)
        return self._evaluate(source, target_metrics, Ks, _directions(directions), n_resamples=n_resamples, seed=seed)

    compute_all_metrics_from_scores = _means_of(
        per_query_from_scores,
        """Exact metrics from ``scores[i, j]`` = similarity of ``image_ids[i]`` and ``caption_ids[j]``.

        Ranking = stable descending sort of each row/column (ties: the item given
        first wins). The ids default to the benchmark's items in canonical order (the
        test split in Karpathy order); extra ids are allowed and ranked as negatives
        (COCO 1K ranks within the fold only). ``caption_scores`` / ``image_scores``:
        square matrices over ``caption_ids`` / ``image_ids`` for the intramodal
        benchmarks and the STS / SIS correlations; ``n_resamples`` and ``seed`` for
        the correlations.
        """,
    )

    def per_query_from_embeddings(
        self,
        image_embeddings: object = None,
        caption_embeddings: object = None,
        image_ids: Iterable[int] | None = None,
        caption_ids: Iterable[int] | None = None,
        target_metrics: Iterable[str] = DEFAULT_TARGETS,
        Ks: Iterable[int] = KS,  # noqa: N803
        directions: Iterable[str] = ("i2t", "t2i"),
        normalize: bool = False,
        n_resamples: int = N_RESAMPLES,
        seed: int = SEED,
    ) -> PerQuery:
        """Per-query values whose means :meth:`compute_all_metrics_from_embeddings` reports."""
        source = Embeddings(image_embeddings, caption_embeddings, image_ids, caption_ids, normalize)
        return self._evaluate(source, target_metrics, Ks, _directions(directions), n_resamples=n_resamples, seed=seed)

    compute_all_metrics_from_embeddings = _means_of(
        per_query_from_embeddings,
        """Exact metrics from embeddings: similarity = dot product (cosine with ``normalize=True``).

        Rows default to the benchmark's items in canonical order (the test split in
        Karpathy order). The image-caption similarities are one matrix product when
        they fit 1 GB, else one block of queries at a time; intramodal benchmarks
        (``cxc_t2t``, ``coco_t2t``, ``cxc_i2i``) likewise; correlations: dot products
        of the rated pairs only.
        """,
    )

    # -- CxC ratings ----------------------------------------------------------

    def cxc_ratings(self, kind: str) -> Ratings:
        """The CxC ``sts``, ``sis`` or ``sits`` test ratings (from ``cxc_source``; loaded once)."""
        return self.resources.ratings(kind)

    def cxc_correlation(
        self,
        kind: str,
        pair_scores: Callable[[np.ndarray, np.ndarray], object],
        n_resamples: int = N_RESAMPLES,
        seed: int = SEED,
    ) -> Correlation:
        """CxC bootstrap Spearman correlation for ``sts``, ``sis`` or ``sits`` from a caller's pair scorer.

        ``pair_scores(ids_1, ids_2)`` returns the model's similarity of each rated
        pair (ids of the CSV's first and second column: captions for STS, images
        for SIS, captions then images for SITS); no dense matrix is needed. The
        engine scores it like every correlation (the ``cxc_<kind>_spearman`` benchmark).
        """
        kind = str(kind).lower()
        if kind not in RATING_ITEMS:
            raise EvaluationError(f"kind must be one of {', '.join(RATING_ITEMS)} (CxC ratings), not {kind!r:.20}")
        name = f"cxc_{kind}_spearman"
        by_direction = self._evaluate(PairScores(pair_scores), name, (), n_resamples=n_resamples, seed=seed)[name]
        return Correlation(kind, next(iter(by_direction.values())).values)

    def relevance(self, relation: str, direction: str) -> object:
        """Positives of ``coco``, ``cxc``, ``eccv``, ``pm`` (PM needs categories) in ``i2t`` or ``t2i``."""
        if direction not in ("i2t", "t2i"):
            raise EvaluationError(f"direction must be 'i2t' or 't2i', not {direction!r}")
        if relation not in ("coco", "cxc", "eccv", "pm"):
            raise EvaluationError(f"unknown benchmark {relation!r}; known: coco, cxc, eccv, pm")
        return self.resources.relation(REGISTRY.get("coco_5k"), relation, direction)
