"""From a model to every number: encode a benchmark's images and captions with a model, then score them.

Layered above the engine: :func:`~eccv_metric.models.run.evaluate_model` (or ``eccv-caption evaluate
--model SPEC --data FOLDER_OR_REPO``) plans what each requested benchmark needs
(:mod:`eccv_metric.models.plan`, :mod:`~eccv_metric.models.data.items`), encodes each item once
(:mod:`eccv_metric.models.cache.store`, cached on disk; :mod:`~eccv_metric.models.encoding.encode`) and scores them with
:func:`eccv_metric.evaluate` on :class:`~eccv_metric.inputs.embeddings.Embeddings`
(:mod:`eccv_metric.models.score`). Models come from a
spec string naming a registered family (:mod:`eccv_metric.models.families.registry`: ``hf:``, ``hf-itm:``,
``open_clip:``, ``st:``; :func:`~eccv_metric.models.families.registry.register` adds one) or any Python object with
``encode_images`` / ``encode_texts`` (a dual encoder) or ``score_pairs`` (a pair scorer, scored by a first stage
and a rerank, or on every pair: :mod:`eccv_metric.models.pairs`). torch and the model libraries are imported
only here, on use (``pip install "eccv-caption-hf[models]"``); ``import eccv_metric`` never imports them.
"""

from eccv_metric.models.cache.folder import CacheWarning
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.pair_scorer import ObjectPairScorer
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import register
from eccv_metric.models.families.spec import load_model
from eccv_metric.models.many import evaluate_models
from eccv_metric.models.options import NotUsedWarning
from eccv_metric.models.pairs.options import RerankWarning
from eccv_metric.models.run import ModelResults
from eccv_metric.models.run import evaluate_model
from eccv_metric.models.run import evaluate_model_request

__all__ = [
    "CacheWarning",
    "Encoder",
    "Family",
    "ModelResults",
    "NotUsedWarning",
    "ObjectPairScorer",
    "PairScorer",
    "RerankWarning",
    "evaluate_model",
    "evaluate_model_request",
    "evaluate_models",
    "load_model",
    "register",
]
