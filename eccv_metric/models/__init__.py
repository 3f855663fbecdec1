"""From a model to every number: encode a benchmark's images and captions with a model, then score them.

Layered above the engine: :func:`~eccv_metric.models.run.evaluate_model` (or ``eccv-caption evaluate
--model SPEC --data FOLDER_OR_REPO``) reads the items each requested benchmark needs
(:mod:`eccv_metric.models.items`), encodes each once (:mod:`eccv_metric.models.encode`, cached on disk by
:mod:`eccv_metric.models.cache`) and scores them with :func:`eccv_metric.evaluate` on
:class:`~eccv_metric.inputs.embeddings.Embeddings`. Models come from a spec string
(:mod:`eccv_metric.models.spec`: ``open_clip:``, ``hf:``, ``st:``) or any Python object with
``encode_images`` / ``encode_texts``. torch and the model libraries are imported only here, on use
(``pip install "eccv-caption-hf[models]"``); ``import eccv_metric`` never imports them.
"""

from eccv_metric.models.run import ModelResults
from eccv_metric.models.run import evaluate_model
from eccv_metric.models.spec import Encoder
from eccv_metric.models.spec import load_model

__all__ = ["Encoder", "ModelResults", "evaluate_model", "load_model"]
