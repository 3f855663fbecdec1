"""What every transformers pair head shares: loading one (its class, processor and weights checked, its identity),
the caption rule it follows (:class:`TextRule`), and the :class:`HFPairScorer` its adapter fills in.

An adapter (:mod:`~eccv_metric.models.families.heads.hf_blip`, ...) gives :meth:`HFPairScorer.image_states` (what the
pair head reads of an image, once per image) and :meth:`HFPairScorer.score_tokens` (the head on a batch of pairs,
image states gathered by index); tokenising, ``score_pairs`` and the checks live here. Models load as the
``hf:`` dual encoders do (:mod:`eccv_metric.models.families.hf`: the Hub commit, local-only when the Hub cannot be
reached, the image processor's PIL backend, the weights identified by their files), with the class the config
names (or, ``hf-itm:``, the pair head of its model type: every weight the head reads must then be in the
checkpoint).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.encoding.decode import hf_tensor_preprocessing
from eccv_metric.models.encoding.decode import pil_image_processor
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.heads.text import Tokens
from eccv_metric.models.families.heads.text import pre_caption
from eccv_metric.models.families.heads.text import tokenize_set
from eccv_metric.models.families.hf import Prepare
from eccv_metric.models.families.hf import as_tensor
from eccv_metric.models.families.hf import image_description
from eccv_metric.models.families.hf import weights_folder
from eccv_metric.models.families.identity import saved_digest
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import require
from eccv_metric.models.families.torchutil import EXTRA
from eccv_metric.models.families.torchutil import Loading
from eccv_metric.models.families.torchutil import pinned
from eccv_metric.models.families.torchutil import to_device

REFERENCES = ("original", "lavis", "transformers")  # whose code an adapter follows where the two differ


@dataclass(frozen=True)
class TextRule:
    """How a caption becomes a pair head's tokens: BLIP's
    :func:`~eccv_metric.models.families.heads.text.pre_caption` cut at ``words`` (None: the caption as it is), the
    tokenizer's cut at ``tokens`` (with its special tokens), and ``first_token``: the id that replaces the first
    token (BLIP's ``[ENC]``; None: the tokenizer's own)."""

    words: int | None
    tokens: int | None
    first_token: int | None = None
    first_token_name: str | None = None

    @property
    def unit(self) -> str:
        return "words" if self.words is not None else "tokens"

    @property
    def length(self) -> int | None:
        return self.words if self.words is not None else self.tokens

    def texts(self, texts: list[str]) -> list[str]:
        return [pre_caption(t, self.words) for t in texts] if self.words is not None else list(texts)

    def describe(self) -> dict:
        return {"pre_caption_words": self.words, "max_tokens": self.tokens, "first_token": self.first_token_name}


@dataclass
class Parts:
    """A loaded pair head: the model (eval, on its device), its processor's tokenizer and PIL image processor,
    where it loaded from, and the options."""

    name: str
    spec: str
    options: LoadOptions
    at: Loading
    library: str
    model: Any
    processor: Any
    tokenizer: Any
    image_processor: Any
    revision: str | None
    weights: Any  # the folder whose weight files identify the weights (None: the tensors are hashed)


def load_parts(
    name: str, spec: str, options: LoadOptions, at: Loading, commit: str | None, architecture: str,
    reads: tuple[str, ...], forced: bool,
) -> Parts:  # fmt: skip
    """The model of class ``architecture`` and its processor, or one error line. ``reads``: the weight name
    prefixes the adapter uses; a missing or mismatched weight among them is refused (its values would be random),
    others (a FLAVA checkpoint's MLM head) are not read and do not matter."""
    transformers = require("transformers", EXTRA)
    if options.reference not in REFERENCES:
        raise EvaluationError(f"reference= must be one of {', '.join(REFERENCES)}, not {options.reference!r:.30}")
    pin = {"revision": commit} if commit else {}
    with at.errors():
        model, loading = getattr(transformers, architecture).from_pretrained(
            name, local_files_only=at.local_only, output_loading_info=True, **pin
        )
        processor = transformers.AutoProcessor.from_pretrained(name, local_files_only=at.local_only, **pin)
    absent = [
        str(k[0] if isinstance(k, tuple) else k)
        for k in [*loading.get("missing_keys", []), *loading.get("mismatched_keys", [])]
    ]
    absent = sorted(k for k in absent if k.startswith(reads))
    if absent:
        why = "its config names another class" if forced else "the checkpoint lacks them"
        raise EvaluationError(
            f"{spec}: {len(absent)} weights {architecture} scores with are not in the checkpoint "
            f"({', '.join(absent[:3])}{', ...' if len(absent) > 3 else ''}; {why}): they would be random"
        )
    model = model.to(at.device).eval()
    revision = commit or getattr(model.config, "_commit_hash", None)
    image_processor = pil_image_processor(name, getattr(processor, "image_processor", None), at.local_only, commit)
    tokenizer = getattr(processor, "tokenizer", None)
    if image_processor is None or tokenizer is None:
        raise EvaluationError(f"{spec}: its processor has no {'image processor' if tokenizer else 'tokenizer'}")
    return Parts(
        name, spec, options, at, f"transformers {transformers.__version__}", model, processor, tokenizer,
        image_processor, revision, weights_folder(name, revision, False),
    )  # fmt: skip


def token_limit(parts: Parts, default: int | None, given: int | None = None) -> int | None:
    """The tokens a caption keeps: ``given`` (``text_length=`` in tokens; refused above what the text model can
    read), else ``default`` (the model's own evaluation code's), capped by what the text model can read and the
    tokenizer's ``model_max_length``. What the text model reads: its ``max_position_embeddings`` less the first
    position id its own rule gives (:func:`first_position`: RoBERTa-style models, BridgeTower's, start at
    ``padding_idx + 1``)."""
    config = parts.model.config
    texts = [getattr(config, part, None) for part in ("qformer_config", "text_config")]  # BLIP-2's text: its Q-Former
    positions = None
    for text in [t for t in texts if t is not None][:1] or [config]:  # one config (ViLT's: the model's)
        positions = getattr(text, "max_position_embeddings", None)
    readable = positions - first_position(parts.model) if isinstance(positions, int) and positions > 0 else None
    if given is not None:
        if readable is not None and given > readable:
            raise EvaluationError(
                f"{parts.spec}: text_length= {given} is above the {readable} tokens its text model reads "
                f"({positions} positions{', from padding_idx + 1' if readable < positions else ''}): give at most "
                f"{readable}"
            )
        return given
    limits = [default, getattr(parts.tokenizer, "model_max_length", None), readable]
    known = [int(x) for x in limits if isinstance(x, (int, float)) and 0 < x < 1_000_000]
    return min(known) if known else None


def first_position(model: Any) -> int:
    """The first position id the model's text embeddings give a caption's first token: ``padding_idx + 1`` where
    they make position ids from the input ids as RoBERTa does (``create_position_ids_from_input_ids``: padding
    keeps ``padding_idx``, the tokens count from ``padding_idx + 1``), else 0."""
    for module in model.modules():
        padding = getattr(module, "padding_idx", None)
        if callable(getattr(module, "create_position_ids_from_input_ids", None)) and isinstance(padding, int):
            return padding + 1
    return 0


class HFPairScorer:
    """A transformers pair head as a :class:`~eccv_metric.models.families.pair_scorer.PairScorer` (see the module
    docstring); the adapter sets ``text`` (its :class:`TextRule`), ``head``, ``notes`` and ``first_stage`` and
    gives :meth:`image_states` and :meth:`score_tokens`."""

    score_rules: tuple[str, ...]
    text: TextRule
    references: tuple[str, ...] = ()  # the reference= values it tells apart (PairScorer); BLIP's and BLIP-2's: all
    code: str | None = None  # whose evaluation code its inputs follow, in words (BLIP's, LAVIS's, the port's)

    def __init__(
        self, parts: Parts, text: TextRule, head: str, notes: tuple[str, ...], prepare_image: Any = None,
        first_stage: Encoder | None = None, first_stage_note: str | None = None,
    ):  # fmt: skip
        self.parts = parts
        self.model = parts.model
        self.spec = parts.spec
        self.device = parts.at.device
        self.precision = parts.at.precision
        self.text = text
        self.text_length = text.length
        self.text_unit = text.unit
        self.head = head
        self.notes = notes
        self.prepare_image = prepare_image if prepare_image is not None else Prepare(parts.image_processor)
        self.image_preprocessing = image_description(parts.image_processor)
        # decode="gpu": the image processor's torchvision backend on the device (images of one size only: None
        # where they keep their own sizes, ViLT's)
        self.tensor_preprocessing = None if prepare_image is not None else self.gpu_preprocessing
        self.first_stage = first_stage
        self.first_stage_note = first_stage_note
        self.score_rules = ("itm", "itm+itc") if first_stage is not None else ("itm",)
        self.identity = self.describe(parts)

    def describe(self, parts: Parts) -> dict:
        """What identifies this scorer: the model's identity (weights, configs, processor, class: as an ``hf:``
        encoder's), the head (``itm``; a first stage's: ``itc``) and its score, and the caption rule."""
        preprocessing = {
            **self.image_preprocessing,
            "tokenizer": type(parts.tokenizer).__name__,
            "processor": saved_digest(parts.processor),
            "text": self.text.describe(),
        }
        preprocessing = json.loads(json.dumps(preprocessing, default=str, sort_keys=True))
        at = parts.at
        identity = at.identity(parts.model, parts.library, preprocessing, None, parts.weights, False, parts.revision)
        return {**identity, "head": "itm", "score": self.head}

    def gpu_preprocessing(self) -> Any:
        parts = self.parts
        return hf_tensor_preprocessing(parts.name, self.device, parts.at.local_only, parts.revision)

    def tokenize(self, texts: list[str]) -> Tokens:
        """A set's captions, tokenised once (on the host)."""
        return tokenize_set(self.parts.tokenizer, self.text.texts(texts), self.text.tokens, self.text.first_token)

    def score_pairs(self, states: Any, image_index: np.ndarray, texts: list[str]) -> Any:
        return self.score_tokens(states, image_index, self.tokenize(texts), np.arange(len(texts)))

    def score_tokens(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        """The head's score of each pair (``states[image_index[i]]``, caption ``text_index[i]`` of ``tokens``), a
        float32 tensor on the model's device. ``states`` may live on another device than the model (the host,
        pinned: a gallery's states need not fit beside the model); each batch's rows are moved."""
        import torch

        image_index, text_index = np.asarray(image_index, dtype=np.int64), np.asarray(text_index, dtype=np.int64)
        if image_index.shape != text_index.shape or image_index.ndim != 1:
            raise ValueError(f"{self.spec}: {image_index.shape} image indices for {text_index.shape} text indices")
        if not len(image_index):
            return torch.empty(0, dtype=torch.float32, device=self.device)
        return self.head_scores(states, image_index, tokens, text_index)

    def head_scores(self, states: Any, image_index: np.ndarray, tokens: Tokens, text_index: np.ndarray) -> Any:
        raise NotImplementedError

    def image_states(self, prepared: Any) -> Any:
        raise NotImplementedError

    def gather(self, states: Any, image_index: np.ndarray, part: int | None = None) -> Any:
        """``states[image_index]`` (``part``: of ``states[:, part]``) on the model's device: one batch of pairs'
        image states, gathered where the states are, then moved."""
        import torch

        rows = torch.from_numpy(np.asarray(image_index, dtype=np.int64)).to(states.device)
        source = states if part is None else states[:, part]
        return source.index_select(0, rows).to(self.device, non_blocking=True)

    def pixels(self, prepared: Any) -> Any:
        """A batch of prepared images (stacked) on the model's device."""
        return prepared.to(self.device, non_blocking=True)


def cls_encoder(
    scorer: HFPairScorer, towers: tuple[Any, Any, Any, Any], texts: Callable[[list[str]], list[str]],
    tokens: int | None, identity: dict,
) -> FunctionEncoder:  # fmt: skip
    """A model's contrastive (ITC) head as an encoder, its first stage: ``towers`` = (vision model, vision
    projection, text model, text projection); each side's ``[CLS]`` state through its projection, L2-normalised
    (cosine similarity). The scorer's images and preprocessing; ``texts`` rewrites captions before the tokenizer
    (cut at ``tokens``); ``identity`` is the encoder's own (its cache key)."""
    import torch

    parts, device = scorer.parts, scorer.device
    vision, vision_proj, text_model, text_proj = towers
    normalize = torch.nn.functional.normalize

    def images(pixels: Any) -> Any:
        with parts.at.autocast():
            hidden = vision(pixel_values=to_device(pixels, device)).last_hidden_state
            return normalize(vision_proj(hidden[:, 0, :]), dim=-1).float()

    def tokenize(batch: list[str]) -> dict:
        cut = {"truncation": True, "max_length": tokens} if tokens else {}
        out = parts.tokenizer(texts(batch), padding=True, return_tensors="np", **cut)
        return {k: pinned(as_tensor(out[k]), device) for k in ("input_ids", "attention_mask")}

    def encode_tokens(batch: dict) -> Any:
        with parts.at.autocast():
            hidden = text_model(**{k: to_device(v, device) for k, v in batch.items()}).last_hidden_state
            return normalize(text_proj(hidden[:, 0, :]), dim=-1).float()

    return FunctionEncoder(
        identity["spec"], ("image", "caption"), lambda batch: encode_tokens(tokenize(batch)), images,
        scorer.prepare_image, identity, "cosine", device, scorer.precision, sort_texts=True, tokenize=tokenize,
        encode_tokens=encode_tokens,
        tensor_preprocessing=scorer.gpu_preprocessing,
        image_preprocessing=scorer.image_preprocessing,
    )  # fmt: skip
