"""ECCV Caption retrieval metrics (mAP@R, R-Precision, R@K), CxC R@K, COCO 1K/5K R@K and PMRP.

A thin ``evaluate`` layer over the ``eccv_metric`` library: every number comes
from ``eccv_metric.Metrics``. ``evaluate.load("<user>/<space>")`` downloads only
this file: install the library first, ``pip install eccv-caption-hf`` (each
``eccv_metric`` import line ends with ``# From: eccv-caption-hf``, the name
evaluate's missing-module error then gives; keep no other comment on them).
"""

import datasets
import evaluate

from eccv_metric.benchmarks.resource_options import ResourceOptions  # From: eccv-caption-hf
from eccv_metric.core.about import LICENSE  # From: eccv-caption-hf
from eccv_metric.core.about import OFFICIAL_CODE_URL  # From: eccv-caption-hf
from eccv_metric.core.about import PAPER_URL  # From: eccv-caption-hf
from eccv_metric.core.about import PYPI_URL  # From: eccv-caption-hf
from eccv_metric.core.defaults import KS  # From: eccv-caption-hf
from eccv_metric.core.defaults import N_RESAMPLES  # From: eccv-caption-hf
from eccv_metric.core.defaults import PM_INCLUDE_OWN  # From: eccv-caption-hf
from eccv_metric.core.defaults import PM_R_CAP  # From: eccv-caption-hf
from eccv_metric.core.defaults import PM_ZETA  # From: eccv-caption-hf
from eccv_metric.core.defaults import SEED  # From: eccv-caption-hf
from eccv_metric.core.options import require_bool  # From: eccv-caption-hf
from eccv_metric.hub.evaluate_glue import arrays_by_direction  # From: eccv-caption-hf
from eccv_metric.hub.evaluate_glue import batch_table  # From: eccv-caption-hf
from eccv_metric.hub.evaluate_glue import check_keywords  # From: eccv-caption-hf
from eccv_metric.hub.evaluate_glue import compute  # From: eccv-caption-hf
from eccv_metric.hub.evaluate_glue import module_benchmarks  # From: eccv-caption-hf

_CITATION = """\
@inproceedings{chun2022eccv_caption,
    title={ECCV Caption: Correcting False Negatives by Collecting Machine-and-Human-verified
           Image-Caption Associations for MS-COCO},
    author={Chun, Sanghyuk and Kim, Wonjae and Park, Song and Chang, Minsuk and Oh, Seong Joon},
    booktitle={European Conference on Computer Vision (ECCV)},
    year={2022}
}
@inproceedings{musgrave2020metric,
    title={A Metric Learning Reality Check},
    author={Musgrave, Kevin and Belongie, Serge and Lim, Ser-Nam},
    booktitle={European Conference on Computer Vision (ECCV)},
    year={2020}
}
@inproceedings{parekh2021crisscrossed,
    title={Crisscrossed Captions: Extended Intramodal and Intermodal Semantic Similarity Judgments for MS-COCO},
    author={Parekh, Zarana and Baldridge, Jason and Cer, Daniel and Waters, Austin and Yang, Yinfei},
    booktitle={EACL},
    year={2021}
}
@inproceedings{chun2021pcme,
    title={Probabilistic Embeddings for Cross-Modal Retrieval},
    author={Chun, Sanghyuk and Oh, Seong Joon and de Rezende, Rafael Sampaio and Kalantidis, Yannis and Larlus, Diane},
    booktitle={CVPR},
    year={2021}
}
@inproceedings{chen2023rethinking,
    title={Rethinking Benchmarks for Cross-modal Image-text Retrieval},
    author={Chen, Weijing and Yao, Linli and Jin, Qin},
    booktitle={SIGIR},
    year={2023},
    doi={10.1145/3539618.3591758}
}
"""

_DESCRIPTION = """\
Image-to-text (i2t) and text-to-image (t2i) retrieval metrics on the COCO Karpathy 5K test split
(5,000 images, 25,000 captions): ECCV Caption mAP@R, R-Precision and R@K (machine-and-human-verified
positives), CxC R@K, COCO 1K and 5K R@K, and PMRP (plausible-match R-Precision). Exact, and identical
to the official `eccv_caption` package where that package is correct.
"""

_KWARGS_ARGS = f"""
Args:
    predictions (`list` of `list` of `int`): for each query, the ranked gallery ids, best first
        (caption ids for an i2t query, image ids for a t2i query).
    references (`list` of `int`): the query ids (a COCO image id for i2t, a COCO caption id for t2i).
    directions (`list` of `str`): "i2t" or "t2i" for each query. Both directions can be scored in one call.
    scores (optional, keyword only): a similarity matrix (numpy float16/32/64 or torch tensor), scores[i, j]
        of image_ids[i] and caption_ids[j]. Given instead of ranked lists; never goes through Arrow.
    image_ids, caption_ids (optional): the ids of the score rows / columns (default: Karpathy order).
    image_embeddings, caption_embeddings (optional): embeddings instead (similarity = dot product, cosine
        with normalize=True); one modality is enough for the CxC intramodal metrics of that modality.
    caption_scores, image_scores (optional): square captions x captions / images x images matrices
        (over caption_ids / image_ids) for "cxc_t2t_*" / "cxc_i2i_*" and the STS / SIS correlations.
    cxc_source (optional): CxC ratings for the intramodal metrics: a built dataset folder or a folder with
        sts_test.csv / sis_test.csv / sits_test.csv (default: download the canonical files once).
    cxc_directed (`bool`): CxC intramodal pairs directed (first column = query). Default False (undirected).
    n_resamples, seed: the bootstrap of "cxc_sts_spearman", "cxc_sis_spearman", "cxc_sits_spearman"
        ({N_RESAMPLES}, {SEED}).
    benchmark (optional): a registered benchmark (or a list; "eccv_caption": the official five) whose default
        metrics are added to target_metrics, as everywhere (the CLI's --benchmarks, evaluate()'s benchmarks=).
        A config name (evaluate.load(path, "mscoco_fg")) is the module's own benchmark: scored when neither
        target_metrics nor benchmark is given; target_metrics beside it must be its collection's.
        MSCOCO-FG / Flickr30K-FG: metrics "<benchmark>_r<K>", "<benchmark>_recalls" (default),
        "<benchmark>_medr", "<benchmark>_meanr"; from ranked lists, scores (gallery images x captions) or both
        embeddings. fg_source: a folder with the benchmark's files (default: download the canonical files once).
    target_metrics (`list` of `str`): official names, e.g. "eccv_map_at_r", "eccv_rprecision", "eccv_r1",
        "coco_1k_recalls", "coco_5k_recalls", "cxc_recalls", "eccv_recalls", "pmrp", or "<set>_r<K>";
        "<set>_medr" / "<set>_meanr" (ranks); CxC intramodal "cxc_t2t_r<K>", "cxc_i2i_recalls"...;
        "cxc_sts_spearman", "cxc_sis_spearman", "cxc_sits_spearman" (each with its "_std").
        Default (None): only the benchmark's defaults (benchmark= or the config), else coco_1k_r1, coco_5k_r1,
        cxc_r1, eccv_r1, eccv_map_at_r for image-caption inputs (t2t / i2i-only inputs: their benchmarks' defaults).
    Ks (`list` of `int`): the K of every "*_recalls" metric. Default {KS}.
    nested (`bool`): return the official nested form {{metric: {{"i2t": x, "t2i": y}}}}. Default False.
    ground_truth (optional): a built ECCV Caption dataset folder or Hub dataset repo id (default: the
        ground truth of the `eccv_caption` package).
    instances_json (optional): a COCO-format instances JSON whose categories define PM positives (for "pmrp").
    extra_file_dir (optional): a folder with the released pm_image_to_caption.json / pm_caption_to_image.json
        ("pmrp" reads them instead of computing PM from categories).
    pm_zeta, pm_include_own, pm_r_cap: PM definition and PMRP cap (defaults {PM_ZETA}, {PM_INCLUDE_OWN},
        {PM_R_CAP}: the paper's).
"""
_KWARGS_DESCRIPTION = (
    _KWARGS_ARGS
    + """Returns:
    A flat dict of floats, "<metric>/<direction>", e.g. "eccv_map_at_r/i2t", for every requested metric and
    every direction given (i2t, t2i; t2t, i2i for CxC intramodal). Fractions in [0, 1]; MedR / MeanR are
    ranks; Spearman's rho is in [-1, 1].
Examples:
    Every caption query ranks its own image first (lists may be truncated: R@1 needs one item):

    >>> import evaluate
    >>> from eccv_metric import EVALUATE_MODULE_DIR, Metrics
    >>> gt = Metrics().gt
    >>> metric = evaluate.load(str(EVALUATE_MODULE_DIR))
    >>> t2i = [[int(gt.image_ids[i])] for i in gt.caption_image]
    >>> metric.compute(predictions=t2i, references=gt.caption_ids.tolist(),
    ...                directions=["t2i"] * len(t2i), target_metrics=["coco_5k_r1"])
    {'coco_5k_r1/t2i': 1.0}

    A score matrix (ties are broken by the order of the ids: here every score is equal, so
    every image ranks the first caption first, and every caption the first image):

    >>> import numpy as np
    >>> scores = np.zeros((5000, 25000), dtype=np.float16)
    >>> result = metric.compute(scores=scores, target_metrics=["coco_5k_r1"], nested=True)
    >>> result == {"coco_5k_r1": {"i2t": 1 / 5000, "t2i": 5 / 25000}}
    True

    Float ids are refused (evaluate's int64 features would silently truncate them):

    >>> metric.compute(predictions=[[1.5]], references=[391895], directions=["i2t"])
    Traceback (most recent call last):
    ...
    eccv_metric.EvaluationError: query 391895: ranked ids must be integers, got float64
"""
)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class EccvMapAtR(evaluate.Metric):
    """ECCV Caption / CxC / COCO / PMRP retrieval metrics over both directions."""

    def __init__(self, *args, ground_truth=None, instances_json=None, **kwargs):
        super().__init__(*args, **kwargs)
        # read the cache back as Arrow, not Python lists (MetricInfo refuses a format with list features)
        self._module_info.format = "arrow"
        # one record batch per add_batch call (evaluate's default splits every 1,000 rows): read back as one chunk,
        # the ranked ids are handed to the library without being copied into one array again
        self.writer_batch_size = 1 << 30
        self.ground_truth = ground_truth
        self.instances_json = instances_json

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("int64")),
                    "references": datasets.Value("int64"),
                    "directions": datasets.Value("string"),
                }
            ),
            homepage=PYPI_URL,
            license=LICENSE,
            codebase_urls=[PYPI_URL, OFFICIAL_CODE_URL],
            reference_urls=[OFFICIAL_CODE_URL, PAPER_URL],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add ranked lists: predictions (ranked ids), references (query ids), directions ('i2t'/'t2i')."""
        extra = set(kwargs) - {"directions"}
        if extra:
            raise ValueError(f"Bad inputs for evaluation module: {sorted(extra)}; inputs are {self._feature_names()}")
        table = batch_table(predictions, references, kwargs.get("directions"), self.features.arrow_schema)
        if self.writer is None:
            self.selected_feature_format = self.features
            self._init_writer()
        self.writer.write_table(table)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one ranked list: prediction (ranked ids), reference (query id), direction ('i2t'/'t2i')."""
        direction = kwargs.pop("direction", kwargs.pop("directions", None))
        self.add_batch(predictions=[prediction], references=[reference], directions=[direction], **kwargs)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score ranked lists (predictions, references, directions) or a score matrix (scores=...)."""
        check_keywords(kwargs, self._compute)  # an unknown keyword: one line naming it and the accepted ones
        if predictions is None and references is None and kwargs.get("directions") is None and self.writer is None:
            # the score-matrix path: evaluate needs a batch, an empty one will do
            predictions, references, kwargs["directions"] = [], [], []
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        directions,
        scores=None,
        image_ids=None,
        caption_ids=None,
        image_embeddings=None,
        caption_embeddings=None,
        normalize=False,
        caption_scores=None,
        image_scores=None,
        cxc_source=None,
        cxc_directed=False,
        n_resamples=N_RESAMPLES,
        seed=SEED,
        benchmark=None,
        fg_source=None,
        target_metrics=None,
        Ks=KS,  # noqa: N803
        nested=False,
        partial=False,
        ground_truth=None,
        instances_json=None,
        extra_file_dir=None,
        pm_zeta=PM_ZETA,
        pm_include_own=PM_INCLUDE_OWN,
        pm_r_cap=PM_R_CAP,
    ):
        benchmark = module_benchmarks(target_metrics, Ks, benchmark, self.config_name)  # the config: a default
        nested = require_bool(nested, "nested")
        resources = ResourceOptions(
            ground_truth=ground_truth if ground_truth is not None else self.ground_truth,
            instances_json=instances_json if instances_json is not None else self.instances_json,
            extra_file_dir=extra_file_dir,
            pm_zeta=pm_zeta,
            pm_include_own=pm_include_own,
            pm_r_cap=pm_r_cap,
            cxc_source=cxc_source,
            cxc_directed=cxc_directed,
            fg_source=fg_source,
        ).resources()
        parts = {
            "scores": scores,
            "caption_scores": caption_scores,
            "image_scores": image_scores,
            "image_embeddings": image_embeddings,
            "caption_embeddings": caption_embeddings,
            "image_ids": image_ids,
            "caption_ids": caption_ids,
            "normalize": normalize,
        }
        arrays = arrays_by_direction(predictions, references, directions)
        results = compute(arrays, parts, target_metrics, Ks, resources, benchmark, partial, n_resamples, seed)
        return results.means() if nested else results.flat()
