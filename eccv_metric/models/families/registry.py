"""Model families as registry entries: what a spec prefix means, declared before anything loads.

A :class:`Family` is one library's way to a model: its ``prefix`` (``hf``, ``hf-itm``, ``st``, ``open_clip``), the
spec forms it accepts (each with what it means: the help text and the "unknown spec" error are made from them),
the extra that installs its library, what it loads (``kinds``: dual encoders, pair scorers or both), the modalities
it can encode and the similarity it ranks by (as MTEB's ``ModelMeta`` declares them), and ``load(name, spec,
options)`` -> an :class:`~eccv_metric.models.families.encoder.Encoder` or a
:class:`~eccv_metric.models.families.pair_scorer.PairScorer`. Each family is one module that calls :func:`register` when
imported (:mod:`eccv_metric.models.families.hf`, :mod:`~eccv_metric.models.families.st`,
:mod:`~eccv_metric.models.families.openclip`; :mod:`eccv_metric.models.families.spec` imports them); a new one
(an ONNX or a JAX family) is one more such module and its extra in ``pyproject.toml``, and works in Python and in
the CLI, whose help lists it.

A :class:`PairHead` is one transformers class whose model scores (image, caption) pairs (an ITM head: BLIP's,
ViLT's, ...): the ``hf:`` family loads a model whose config names it as a pair scorer through its ``load``
(:mod:`eccv_metric.models.families.heads.registry` registers the built-in ones with :func:`register_head`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.pair_scorer import PairScorer


@dataclass(frozen=True)
class LoadOptions:
    """How a family loads its model: the device (None: CUDA, then MPS, then CPU), the precision (fp32, or
    fp16 / bf16 autocast on a GPU) and the items per forward pass (for a library that batches itself)."""

    device: str | None = None
    precision: str = "fp32"
    batch_size: int = 64
    text_batch_size: int | None = None  # captions per forward pass (None: by the device, text_batches)
    digests: Any = None  # a FileDigests remembering the weight files' digests (None: each file hashed)
    workers: int | None = None  # image decoding processes (None: by the device; 0: none: no fork server)
    revision: str | None = None  # the Hub commit to load (None: the one its main ref names now)
    # a pair scorer's caption length, in the unit of the code it follows (PairScorer.text_length; None: that code's)
    text_length: int | None = None
    # where a pair scorer's model and its library's port differ, whose code it follows: "original" (the model's own
    # repository, the default) or "transformers" (the port); see models.families.heads.registry
    reference: str = "original"


@dataclass(frozen=True)
class Family:
    """One model family (see the module docstring). ``similarity``: ``cosine``, ``dot``, or ``declared`` (each
    model says: sentence-transformers' ``similarity_fn_name``)."""

    prefix: str
    forms: tuple[tuple[str, str], ...]  # (form, what it names), e.g. ("hf:<repo or folder>", "transformers ...")
    load: Callable[[str, str, LoadOptions], Encoder | PairScorer]
    extra: str | None = None  # the pip install line that brings the library (None: nothing to install)
    modalities: tuple[str, ...] = ("image", "caption")
    similarity: str = "cosine"
    # what a model's image preprocessing is, read before its weights load (its Encoder's image_preprocessing;
    # None: not known before loading): models that agree are loaded together to share a decode (models.encoding.shared)
    image_key: Callable[[str, LoadOptions], dict | None] | None = None
    # (name, the Hub commit a load read or None: the one a load would read now) -> the folder a model loads from
    # and its commit (None: not known): a rerun whose embeddings are all cached is scored without loading it
    # (models.cache.recall)
    folder: Callable[[str, str | None], tuple[Path, str | None] | None] | None = None
    # what unpickling its image preprocessing imports in a DataLoader worker: a fork server imports it once
    # (models.encoding.workers.start_early), before the first model of a run loads
    worker_modules: tuple[str, ...] = ()
    # what its models are: "encoder" (a dual encoder: images and captions embedded apart) and / or "pair scorer"
    # (one score per (image, caption) pair: models.families.pair_scorer)
    kinds: tuple[str, ...] = ("encoder",)


@dataclass(frozen=True)
class PairHead:
    """A transformers class whose model scores pairs (see the module docstring): ``architecture`` (the class name a
    config's ``architectures`` gives), its ``model_type`` (what ``hf-itm:`` maps a checkpoint of another class to),
    what its head gives (``head``: the score it reads, for the help and the docs) and ``load(name, spec, options, at,
    commit, forced)`` -> a :class:`~eccv_metric.models.families.pair_scorer.PairScorer` (``at``: the family's
    :class:`~eccv_metric.models.families.torchutil.Loading`, ``commit``: the Hub commit it loads; ``forced``: the
    config names another class, so the head's weights must be checked to be in the checkpoint)."""

    architecture: str
    model_type: str
    head: str
    load: Callable[..., PairScorer]


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family (its prefix must be new); returns it."""
    if family.prefix in FAMILIES and FAMILIES[family.prefix] is not family:
        raise ValueError(f"a model family with prefix {family.prefix!r} is registered already")
    FAMILIES[family.prefix] = family
    return family


PAIR_HEADS: dict[str, PairHead] = {}


def register_head(head: PairHead) -> PairHead:
    """Add a pair head (its class name must be new); returns it."""
    if head.architecture in PAIR_HEADS and PAIR_HEADS[head.architecture] is not head:
        raise ValueError(f"a pair head for {head.architecture} is registered already")
    PAIR_HEADS[head.architecture] = head
    return head


def forms_text() -> str:
    """Every family's spec forms, for help texts and errors: ``a, b or c``."""
    forms = [form for family in FAMILIES.values() for form, _ in family.forms]
    return ", ".join(forms[:-1]) + (" or " if len(forms) > 1 else "") + forms[-1] if forms else "(none registered)"


def parse_spec(spec: str) -> tuple[Family, str]:
    """(the family of ``prefix:rest``, rest), else one error naming every registered form."""
    prefix, sep, rest = str(spec).partition(":")
    if not sep or prefix not in FAMILIES or not rest.strip():
        raise EvaluationError(f"unknown model spec {str(spec)!r:.80}: use {forms_text()}")
    return FAMILIES[prefix], rest.strip()


def require(module: str, extra: str | None) -> Any:
    """Import a model library, or one error line naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = f": {extra}" if extra else ""
        raise EvaluationError(
            f"the model path needs {module.split('.')[0]} ({type(exc).__name__}: {str(exc)[:120]}){hint}"
        ) from None
