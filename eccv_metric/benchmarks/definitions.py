"""Every benchmark of the package, as data (see :mod:`eccv_metric.benchmarks.registry`).

Collections: ``coco_5k`` (the COCO Karpathy 5K test split: 5,000 images,
25,000 captions, 5 folds), ``mscoco_fg`` and ``flickr30k_fg`` (refined
captions and enlarged galleries), registered in :mod:`eccv_metric.benchmarks.collections`.
Relations and restrictions are named here and registered in :mod:`eccv_metric.benchmarks.relations`;
the registry checks every name when it is built.
"""

from __future__ import annotations

from eccv_metric.benchmarks.collections import COLLECTIONS
from eccv_metric.benchmarks.registry import RETRIEVAL
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.registry import Registry
from eccv_metric.benchmarks.registry import Task
from eccv_metric.benchmarks.relations import RELATIONS
from eccv_metric.benchmarks.relations import RESTRICTIONS
from eccv_metric.core.defaults import PM_R_CAP

COCO_LICENSE = "CC BY 4.0 (COCO annotations)"
ECCV = "Chun, Kim, Park, Chang, Oh. ECCV Caption. ECCV 2022, arXiv:2204.03359"
CXC = "Parekh, Baldridge, Cer, Waters, Yang. Crisscrossed Captions. EACL 2021, arXiv:2004.15020"
PCME = "Chun, Oh, de Rezende, Kalantidis, Larlus. Probabilistic Embeddings for Cross-Modal Retrieval. CVPR 2021"
FG = (
    "Chen, Yao, Jin. Rethinking Benchmarks for Cross-modal Image-text Retrieval. SIGIR '23, "
    "doi:10.1145/3539618.3591758, arXiv:2304.10824"
)
KARPATHY = "Karpathy, Fei-Fei. Deep Visual-Semantic Alignments for Generating Image Descriptions. CVPR 2015"
BOTH = ("i2t", "t2i")
POSITIVES = ("positives",)


def _cross(relation: str, restriction: str | None = None) -> tuple[Task, ...]:
    return tuple(Task(d, relation, restriction) for d in BOTH)


def _pm(name: str, relation: str, metric: str, title: str, paper: str, official: str = "") -> Benchmark:
    return Benchmark(
        name,
        "coco_5k",
        _cross(relation),
        title,
        "R-Precision with Plausible Match positives: images whose COCO category sets differ in at most zeta "
        f"categories (a caption query uses its image's set), R capped (min(R, {PM_R_CAP}) by default). The query's own "
        "image and captions left out and images without instance annotations taking no part are the official "
        "code's choices, not stated in the papers.",
        f"{ECCV}, section 4.1; {PCME}",
        ("capped_rprecision", *RETRIEVAL),
        ("capped_rprecision",),
        {"capped_rprecision": metric},
        POSITIVES,
        COCO_LICENSE,
        "COCO categories (a COCO instances JSON or a built dataset: instances_json=; or the released PM files: "
        "extra_file_dir=)",
        paper=paper,
        official=official,
    )


BENCHMARKS = [
    Benchmark(
        "coco_1k",
        "coco_5k",
        _cross("coco", "coco_1k_folds"),
        "COCO 1K",
        "The 5K split in five folds of 1,000 images / 5,000 captions (fold f = captions [5000f, 5000f+5000) in "
        "Karpathy order and their images); each query is ranked against its fold only; the mean is over all "
        "queries of all folds. Positives: the original COCO pairs.",
        KARPATHY,
        configs=("positives", "captions", "images"),
        license=COCO_LICENSE,
    ),
    Benchmark(
        "coco_5k",
        "coco_5k",
        _cross("coco"),
        "COCO 5K",
        "Every query ranked against the whole 5K split with the original COCO positives.",
        KARPATHY,
        configs=("positives", "coco_5k-i2t-qrels", "coco_5k-t2i-qrels"),
        license=COCO_LICENSE,
    ),
    Benchmark(
        "cxc",
        "coco_5k",
        _cross("cxc"),
        "CxC",
        "Crisscrossed Captions positives as the official code reads them: caption-image pairs with SITS "
        "agg_score >= 3 (5,000 image queries, 24,972 caption queries; 29 original COCO pairs rated below 3 "
        "are not positives).",
        f"{CXC}, section 3 (SITS >= 3 is positive), section 4 (the task); the eccv_caption package",
        configs=("positives", "cxc-i2t-qrels", "cxc-t2i-qrels"),
        license="free use, acknowledging Google (CxC)",
        paper='section 4: "We extend the existing associations with positive CxC pairs"',
        official="SITS >= 3 pairs only (the eccv_caption package; what `cxc` gives)",
    ),
    Benchmark(
        "cxc_extended",
        "coco_5k",
        _cross("coco+cxc"),
        "CxC (COCO pairs extended)",
        "The CxC paper's reading: the original COCO pairs extended with the positive CxC pairs (SITS >= 3).",
        f"{CXC}, section 3 (SITS >= 3 is positive), section 4 (the task)",
        configs=("positives",),
        license="free use, acknowledging Google (CxC); CC BY 4.0 (COCO)",
        paper='section 4: "We extend the existing associations with positive CxC pairs"',
        official="not offered (the official code uses SITS >= 3 pairs alone: `cxc`)",
    ),
    _pm(
        "pm",
        "pm",
        "pmrp",
        "PMRP",
        paper='ECCV Caption section 4.1: "we only report PMRP when zeta = 0", R capped at 50',
        official="zeta = 2 (its merge.py builds the released pm_*.json with 2): what `pmrp` gives, with "
        "Metrics(pm_zeta=...) to change it",
    ),
    _pm(
        "pm_zeta0",
        "pm_zeta0",
        "pmrp_zeta0",
        "PMRP, zeta = 0",
        'ECCV Caption section 4.1: "we only report PMRP when zeta = 0"',
    ),
    _pm("pm_zeta1", "pm_zeta1", "pmrp_zeta1", "PMRP, zeta = 1", "PCME: one of the three zetas it averages"),
    _pm(
        "pm_zeta2", "pm_zeta2", "pmrp_zeta2", "PMRP, zeta = 2", "the zeta of the ECCV Caption code's released PM files"
    ),
    Benchmark(
        "pm_pcme",
        "coco_5k",
        tuple(Task(d, ("pm_zeta0", "pm_zeta1", "pm_zeta2")) for d in BOTH),
        "PMRP, PCME's average over zeta",
        "Per query, the mean of its PMRP at zeta = 0, 1 and 2, over the queries that have a plausible match at "
        f"every zeta. Averaging over zeta is PCME's proposal; the R cap (min(R, {PM_R_CAP})) and the exclusions "
        "(the own image and captions left out, unannotated images taking no part) are ECCV Caption's official "
        "code's, not PCME's (PCME counted the own image, so every annotated query had a zeta-0 match).",
        f"{PCME}, section 5; the R cap and exclusions: the eccv_caption package",
        ("capped_rprecision",),
        ("capped_rprecision",),
        {"capped_rprecision": "pmrp_pcme"},
        POSITIVES,
        COCO_LICENSE,
        "COCO categories (a COCO instances JSON or a built dataset: instances_json=)",
        paper="PCME section 5: the average of R-Precision over zeta in {0, 1, 2}",
    ),
    Benchmark(
        "eccv",
        "coco_5k",
        _cross("eccv"),
        "ECCV Caption",
        "Machine-and-human-verified positives: 1,261 image queries (22,550 positive captions) and 1,332 "
        "caption queries (11,279 positive images).",
        f"{ECCV}, sections 3-4",
        ("map_at_r", "rprecision", "recall", "medr", "meanr"),
        ("map_at_r", "rprecision", "r1"),
        configs=("positives", "eccv-i2t-qrels", "eccv-t2i-qrels"),
        license="MIT (the eccv_caption package)",
    ),
    Benchmark(
        "cxc_t2t",
        "coco_5k",
        (Task("t2t", "co_captions+sts", exclude_self=True),),
        "CxC text-to-text",
        "Positives of caption q: the other captions of q's image (MS-COCO's co-captions) plus the captions "
        "c != q rated STS agg_score >= 3 with q (pairs undirected); queries: all 25,000 captions; the query "
        "itself is left out of its gallery. Co-captions included and the query left out are inferred from the "
        "paper's tables, not stated in its text.",
        f"{CXC}, section 3 (STS >= 3 is positive), section 4 (the task)",
        configs=("positives",),
        license="free use, acknowledging Google (CxC); CC BY 4.0 (COCO)",
        needs="CxC ratings (cxc_source=)",
        paper='section 4: "We extend the existing associations with positive CxC pairs, and also add new '
        'caption-to-caption and image-to-image retrieval tasks using positive STS and SIS pairs"',
    ),
    Benchmark(
        "coco_t2t",
        "coco_5k",
        (Task("t2t", "co_captions", exclude_self=True),),
        "MS-COCO text-to-text",
        "MS-COCO's own caption-to-caption relation: the positives of caption q are the other 4 captions of its "
        "image (the CxC paper's 'MS-COCO Text->Text' baseline rows); the query itself is left out.",
        f"{CXC}, appendix (Table 3)",
        configs=("positives", "captions"),
        license=COCO_LICENSE,
    ),
    Benchmark(
        "cxc_i2i",
        "coco_5k",
        (Task("i2i", "sis", exclude_self=True),),
        "CxC image-to-image",
        "Positives of image q: the images rated SIS agg_score >= 2.5 with q (pairs undirected); queries: the "
        "4,791 images that have one; the query itself is left out of its gallery (inferred from the paper's "
        "tables, not stated in its text).",
        f"{CXC}, section 3 (SIS >= 2.5 is positive), section 4 (the task)",
        configs=("positives",),
        license="free use, acknowledging Google (CxC)",
        needs="CxC ratings (cxc_source=)",
    ),
]
for _kind, _direction, _title in (("sts", "t2t", "STS"), ("sis", "i2i", "SIS"), ("sits", "t2i", "SITS")):
    BENCHMARKS.append(
        Benchmark(
            f"cxc_{_kind}",
            "coco_5k",
            (Task(_direction, _kind),),
            f"CxC {_title} correlation",
            f"Spearman's rho between the model's similarities and the CxC {_title} ratings (agg_score): 1,000 "
            "bootstrap samples, each half of the queries (first-column items) with one rated pair each; mean "
            "and std over the samples.",
            f"{CXC}, section 5",
            ("spearman", "spearman_std"),
            ("spearman",),
            {"spearman": f"cxc_{_kind}_spearman", "spearman_std": f"cxc_{_kind}_spearman_std"},
            ("cxc_ratings",),
            "free use, acknowledging Google (CxC)",
            "CxC ratings (cxc_source=)",
        )
    )
for _bench, _title, _pool in (("mscoco_fg", "MSCOCO-FG", "5,000"), ("flickr30k_fg", "Flickr30K-FG", "1,000")):
    BENCHMARKS += [
        Benchmark(
            _bench,
            _bench,
            _cross("fg"),
            _title,
            "Refined (fine-grained) captions against the enlarged image pool: t2i = every refined caption "
            "against the whole gallery (positive: its image); i2t = every annotated image against all refined "
            "captions (positives: its 5).",
            FG,
            configs=(f"{_bench}_captions", f"{_bench}_gallery"),
            license="no license file in the authors' repository",
            needs=f"{_title} files (fg_source=)",
        ),
        Benchmark(
            f"{_bench}_original_pool",
            _bench,
            (Task("t2i", "fg", "original_pool"),),
            f"{_title}, original image pool",
            f"The paper's Fig. 7 protocol: refined captions against the original {_pool} test images only "
            "(text-to-image; the enlarged pool's extra images take no part).",
            f"{FG}, Fig. 7",
            configs=(f"{_bench}_captions", f"{_bench}_gallery"),
            license="no license file in the authors' repository",
            needs=f"{_title} files (fg_source=)",
        ),
    ]
BENCHMARKS.append(
    Benchmark(
        "mscoco_fg_original_texts",
        "mscoco_fg",
        _cross("fg"),
        "MSCOCO-FG, original texts",
        "The paper's Table 4 protocol: the original COCO captions (same caption ids) against the enlarged "
        "31,244-image pool; encode the `original_caption` column of the mscoco_fg_captions config.",
        f"{FG}, Table 4",
        configs=("mscoco_fg_captions", "mscoco_fg_gallery"),
        license="no license file in the authors' repository; COCO captions CC BY 4.0",
        needs="MSCOCO-FG files (fg_source=)",
        texts="original_caption",
    )
)

REGISTRY = Registry(BENCHMARKS, COLLECTIONS, RELATIONS, RESTRICTIONS)
# the official package's default target_metrics
DEFAULT_TARGETS = ("coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r")
# the official names, the defaults first (what a form offers for the 5K split)
OFFICIAL_TARGETS = (
    "coco_1k_recalls",
    "coco_5k_recalls",
    "cxc_recalls",
    "eccv_recalls",
    "eccv_map_at_r",
    "eccv_rprecision",
    "pmrp",
)
