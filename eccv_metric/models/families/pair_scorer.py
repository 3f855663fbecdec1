"""What the model path needs of a model that scores pairs: the :class:`PairScorer` protocol, and the scorer made
from a user's Python object with ``score_pairs``.

A pair scorer (an ITM head, a cross-encoder: BLIP's and BLIP-2's ITM, ViLT, BridgeTower, FLAVA) gives one score
per (image, caption) pair, higher meaning a better match. Images are prepared once per image (``prepare_image``
in the DataLoader's workers, as an :class:`~eccv_metric.models.families.encoder.Encoder` does) and turned into
what the pair head reads of them once per image (:meth:`PairScorer.image_states`: BLIP's vision encoder output,
ViLT's patch embeddings); a batch of pairs then names its images by index into those states
(:meth:`PairScorer.score_pairs`), so no tensor ever holds pixels (or image states) per pair beyond one batch of
pairs. ``first_stage``: the model's own encoders (BLIP's ITC head), an Encoder whose embeddings rank every
gallery before a rerank; None: a first stage must be given (another model) or every pair scored. Nothing here
imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import Protocol
from typing import runtime_checkable

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.encoder import wrap_object

SCORE_RULES = ("itm", "itm+itc")  # the final score of a reranked pair: the pair head's alone, or plus the first stage's


@runtime_checkable
class PairScorer(Protocol):
    """A loaded model that scores (image, caption) pairs (see the module docstring).

    ``identity``: what identifies its weights, configuration and preprocessing, as an Encoder's (None: nothing
    identifies it, nothing is cached). ``text_length``: what a caption is cut to (tokens or words, as the model's
    own code does), recorded in the provenance and the cache key. ``score_rules``: the final-score rules it
    supports (:data:`SCORE_RULES`; ``itm+itc`` needs ``first_stage``). ``notes``: where this adapter departs from
    the library it wraps to follow the model's original code (e.g. BLIP's ITM reads the ``[ENC]`` token, which the
    transformers port does not put first), recorded in the provenance.

    Optional, read with ``getattr``: ``tokenize(texts: list of str) -> tokens`` (a set's captions tokenised once,
    on the host) with ``score_tokens(states, image_index, tokens, text_index) -> scores``: the scores
    :meth:`score_pairs` gives for ``texts[i]`` = the caption at ``text_index[i]``, without tokenising a caption once
    per pair (a rerank pairs each caption with many queries). ``text_unit``: ``"words"`` or ``"tokens"``, what
    ``text_length`` counts (absent: tokens). ``first_stage_note``: where ``first_stage`` is None, why (BLIP-2's
    ITC ranks by a maximum over query vectors, which no single embedding gives), for the error that asks for
    another first stage. ``head``: what its score is (e.g. "itm_score[:, 1]: the match logit of the 2-way ITM head").
    ``references``: the values of ``reference=`` that change what it computes (BLIP's: ``original``, ``lavis``,
    ``transformers``; absent or empty: it follows one code, and ``reference=`` does nothing).

    ``tensor_preprocessing`` (as an Encoder's, for ``decode="gpu"``; None where images keep their own sizes).

    States: ``image_states`` gives one entry per image along the first dimension (the hf adapters: a torch tensor
    on the model's device, which the caller may move to the host, e.g. pinned: each batch's gathered rows are
    moved to the model's device; a user's object: the list of its PIL images); :func:`join_states` joins the
    states of several batches, so a gallery's states can be made batch by batch and indexed as one. The hf
    adapters' ``score_pairs`` / ``score_tokens`` return a float32 tensor on the model's device; every output
    goes through :mod:`eccv_metric.models.pairs.checks` where it is taken.
    """

    spec: str
    identity: dict | None
    device: str
    precision: str
    prepare_image: Callable[[Any], Any] | None
    image_preprocessing: dict | None
    text_length: int | None
    first_stage: Encoder | None
    score_rules: tuple[str, ...]
    notes: tuple[str, ...]

    def image_states(self, prepared: Any) -> Any:
        """A batch of prepared images (a stacked tensor when ``prepare_image`` gives tensors, else the list) ->
        what the pair head reads of each image, indexable along its first dimension by an integer array."""
        ...

    def score_pairs(self, states: Any, image_index: np.ndarray, texts: list[str]) -> Any:
        """Pair ``i`` = (``states[image_index[i]]``, ``texts[i]``) -> one score per pair (numpy or torch, length
        ``len(texts)``; a fresh array, never a buffer the model reuses)."""
        ...


class ObjectPairScorer:
    """A user's object with ``score_pairs(images: list of PIL images, texts: list of str) -> one score per pair``
    (and optionally ``encode_images`` / ``encode_texts``: its own first stage, cosine similarity). Its images are
    the PIL images themselves; nothing is cached unless ``identity`` is given."""

    def __init__(self, model: object, identity: dict | None = None):
        if not callable(getattr(model, "score_pairs", None)):
            raise EvaluationError(
                f"model: a {type(model).__name__} has no score_pairs(images, texts); a pair scorer needs "
                "score_pairs(list of PIL images, list of str) -> one score per pair"
            )
        self.model = model
        self.spec = f"python:{type(model).__module__}.{type(model).__qualname__}"
        self.identity = identity
        self.device = "cpu"
        self.precision = "fp32"
        self.prepare_image = None
        self.image_preprocessing = None
        self.text_length = None
        encodes = any(callable(getattr(model, m, None)) for m in ("encode_images", "encode_texts"))
        self.first_stage = wrap_object(model, identity) if encodes else None
        self.score_rules = ("itm", "itm+itc") if self.first_stage is not None else ("itm",)
        self.notes = ()
        self.head = f"{type(model).__name__}.score_pairs"
        self.first_stage_note = (
            None if self.first_stage is not None else f"a {type(model).__name__} has no encode_images / encode_texts"
        )
        self.tensor_preprocessing = None

    def image_states(self, prepared: Any) -> Any:
        return list(prepared)

    def score_pairs(self, states: Any, image_index: np.ndarray, texts: list[str]) -> Any:
        return self.model.score_pairs([states[int(i)] for i in image_index], texts)  # type: ignore[attr-defined]


def join_states(parts: list) -> Any:
    """The states of several image batches as one, in order: lists joined; torch tensors concatenated along the
    first dimension, zero-padded along the second where batches differ there (ViLT's images have their own
    numbers of tokens: its states mark padding with zeros, mask channel included); numpy arrays concatenated."""
    if not parts:
        raise ValueError("join_states: no states")
    if isinstance(parts[0], list):
        return [state for part in parts for state in part]
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    if len(parts) == 1:
        return parts[0]
    import torch

    width = max(p.shape[1] for p in parts) if parts[0].dim() > 1 else 0
    padded = [
        torch.nn.functional.pad(p, (0, 0) * (p.dim() - 2) + (0, width - p.shape[1])) if width and p.shape[1] < width
        else p
        for p in parts
    ]  # fmt: skip
    return torch.cat(padded)


def is_pair_scorer(model: object) -> bool:
    """Whether a loaded model (or a user's object) scores pairs rather than embedding items apart."""
    return isinstance(model, PairScorer) or callable(getattr(model, "score_pairs", None))
