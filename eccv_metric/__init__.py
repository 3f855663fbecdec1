"""Exact, fast ECCV Caption / CxC / COCO / PMRP image-text retrieval metrics."""

from pathlib import Path

from eccv_metric.engine import QueryScores
from eccv_metric.errors import EvaluationError
from eccv_metric.groundtruth import GroundTruth
from eccv_metric.metrics import Metrics
from eccv_metric.plausible import PlausibleMatch
from eccv_metric.plausible import PMOptions

__all__ = [
    "EVALUATE_MODULE_DIR",
    "EvaluationError",
    "GroundTruth",
    "Metrics",
    "PMOptions",
    "PlausibleMatch",
    "QueryScores",
]
__version__ = "0.1.0"
# the evaluate module's folder (evaluate.load(str(EVALUATE_MODULE_DIR))); importing eccv_metric loads no pyarrow
EVALUATE_MODULE_DIR = Path(__file__).resolve().parent / "eccv_map_at_r"
