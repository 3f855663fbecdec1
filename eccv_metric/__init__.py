"""Exact, fast image-text retrieval metrics for the ECCV Caption family: one engine, benchmarks as data.

``evaluate(input, metrics, ks)`` scores an input (:class:`Rankings`, :class:`ScoreMatrix`,
:class:`Embeddings`, :class:`TwoStage`) on any registered benchmark (``REGISTRY``: COCO 1K/5K, CxC, ECCV Caption,
PMRP, CxC t2t/i2i and correlations, MSCOCO-FG, Flickr30K-FG and their paper variants);
:class:`Metrics` is the official ``eccv_caption`` API, drop-in; ``verify(results, evidence)`` recomputes published
numbers from the evidence a run kept.
"""

from pathlib import Path

from eccv_metric.api.evaluate import evaluate
from eccv_metric.api.fine_grained import FineGrainedMetrics
from eccv_metric.api.many import evaluate_benchmarks
from eccv_metric.api.many import evaluate_many
from eccv_metric.api.metrics import Metrics
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.about import __version__ as __version__
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.evidence.check import verify
from eccv_metric.groundtruth.plausible import PlausibleMatch
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.reranked import Reranked
from eccv_metric.inputs.twostage import TwoStage
from eccv_metric.measures.results import QueryScores
from eccv_metric.measures.results import Results
from eccv_metric.measures.results import means

__all__ = [
    "EVALUATE_MODULE_DIR",
    "REGISTRY",
    "ChanceLevelWarning",
    "Embeddings",
    "EvaluationError",
    "FineGrainedMetrics",
    "GroundTruth",
    "Metrics",
    "PMOptions",
    "PlausibleMatch",
    "QueryScores",
    "Rankings",
    "Reranked",
    "ResourceOptions",
    "Resources",
    "Results",
    "ScoreMatrix",
    "TwoStage",
    "evaluate",
    "evaluate_benchmarks",
    "evaluate_many",
    "means",
    "verify",
]
# the evaluate module's folder (evaluate.load(str(EVALUATE_MODULE_DIR))); importing eccv_metric loads no pyarrow
EVALUATE_MODULE_DIR = Path(__file__).resolve().parent / "hub" / "eccv_map_at_r"
