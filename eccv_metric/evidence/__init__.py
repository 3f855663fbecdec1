"""Layer 6.5 (between hub and analysis): every published number recomputable by anyone. What a run scored, kept as
files (:mod:`.layout`: the evidence folder, ``evaluate --evidence DIR``), read back and checked (:mod:`.load`), scored
again and compared with the published numbers (:mod:`.check`: :func:`eccv_metric.verify`) on the ground truth the run
was scored on (:mod:`.truth`), and the evidence shown to
come from a model (:mod:`.reencode`: a few items encoded again). No Hub here: :mod:`eccv_metric.hub.verify_hub` reads
a published entry's evidence and ground truth at their pinned commits."""

from eccv_metric.evidence.check import Check
from eccv_metric.evidence.check import Verification
from eccv_metric.evidence.check import verify
from eccv_metric.evidence.layout import write_evidence
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import EvidenceError
from eccv_metric.evidence.load import load_evidence
from eccv_metric.evidence.runs import save_evidence

__all__ = [
    "Check",
    "Evidence",
    "EvidenceError",
    "Verification",
    "load_evidence",
    "save_evidence",
    "verify",
    "write_evidence",
]
