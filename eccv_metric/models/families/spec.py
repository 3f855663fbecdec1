"""Models as data: a spec string (or any object with the right methods) -> an
:class:`~eccv_metric.models.families.encoder.Encoder` (a dual encoder) or a
:class:`~eccv_metric.models.families.pair_scorer.PairScorer` (one score per (image, caption) pair).

Specs name a registered family (:mod:`eccv_metric.models.families.registry`); the built-in ones register themselves
when imported here::

    hf:<repo id or local folder>       transformers AutoModel + AutoProcessor (CLIPModel, SiglipModel, any
                                       model with get_image_features / get_text_features); a model whose
                                       config names a pair head (BlipForImageTextRetrieval, ...) is a pair scorer
    hf-itm:<repo id or local folder>   the ITM head of a BLIP, BLIP-2, ViLT, BridgeTower or FLAVA checkpoint,
                                       whatever class its config names (models.families.heads.registry)
    st:<name or local folder>          sentence-transformers (text-only models, or its CLIP models)
    open_clip:<arch>/<pretrained>      open_clip.create_model_and_transforms(arch, pretrained=...)
    open_clip:hf-hub:<org>/<repo>      open_clip's Hub names

A Python object with ``encode_images(list of PIL images) -> array`` and / or ``encode_texts(list of str)
-> array`` is used as it is (an :class:`Encoder` too); one with ``score_pairs(list of PIL images, list of str)
-> one score per pair`` is a pair scorer (:class:`~eccv_metric.models.families.pair_scorer.ObjectPairScorer`; its
``encode_images`` / ``encode_texts``, if any, are its own first stage), a :class:`PairScorer` as it is. The
family modules import their libraries inside functions, so this module imports no torch.
"""

from __future__ import annotations

import json

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.families.encoder import KIND_METHODS
from eccv_metric.models.families.encoder import Encoder
from eccv_metric.models.families.encoder import wrap_object
from eccv_metric.models.families.heads.registry import FAMILY as HF_ITM
from eccv_metric.models.families.hf import FAMILY as HF
from eccv_metric.models.families.openclip import FAMILY as OPEN_CLIP
from eccv_metric.models.families.pair_scorer import ObjectPairScorer
from eccv_metric.models.families.pair_scorer import PairScorer
from eccv_metric.models.families.registry import FAMILIES
from eccv_metric.models.families.registry import PAIR_HEADS
from eccv_metric.models.families.registry import Family
from eccv_metric.models.families.registry import LoadOptions
from eccv_metric.models.families.registry import parse_spec
from eccv_metric.models.families.st import FAMILY as ST

BUILTIN = (HF, HF_ITM, ST, OPEN_CLIP)  # each registered by its own module when imported


def load_model(
    model: object, device: str | None = None, precision: str = "fp32", batch_size: int = 64,
    text_batch_size: int | None = None, digests: object = None, workers: int | None = None,
    revision: str | None = None, text_length: int | None = None, reference: str = "original",
) -> Encoder | PairScorer:  # fmt: skip
    """An encoder or a pair scorer from a spec string, an :class:`Encoder` or :class:`PairScorer`, or an object
    with ``encode_images`` / ``encode_texts`` or ``score_pairs`` (``revision``: the Hub commit an ``hf:`` spec
    loads; None: the one its main ref names now; ``text_length`` and ``reference``: a pair scorer's caption length
    and whose code it follows where its library's port differs, :class:`LoadOptions`)."""
    if isinstance(model, str):
        family, name = parse_spec(model)
        options = LoadOptions(
            device, precision, batch_size, text_batch_size, digests, workers, revision, text_length, reference
        )
        return family.load(name, model, options)
    if isinstance(model, (Encoder, PairScorer)):
        return model
    if callable(getattr(model, "score_pairs", None)):
        return ObjectPairScorer(model)
    if not any(callable(getattr(model, method, None)) for method in KIND_METHODS.values()):
        raise EvaluationError(
            f"model: a {type(model).__name__} has neither encode_images / encode_texts nor score_pairs; give a "
            f"spec ({', '.join(f'{p}:' for p in FAMILIES)}), an object with encode_images(list of PIL images) / "
            "encode_texts(list of str) (a dual encoder) or one with score_pairs(list of PIL images, list of str) "
            "(a pair scorer)"
        )
    return wrap_object(model)


def image_key(model: object, options: LoadOptions) -> str | None:
    """A spec's image preprocessing before it loads, as a comparable string (its family's ``image_key``); None
    for objects, families that cannot tell, and models without an image processor. It groups models to load
    together (:mod:`eccv_metric.models.many`); what shares a decode is decided once they are loaded
    (:func:`~eccv_metric.models.encoding.shared.share_key`), so a wrong guess costs memory, never a number."""
    if not isinstance(model, str):
        return None
    family, name = parse_spec(model)
    described = family.image_key(name, options) if family.image_key is not None else None
    return None if described is None else json.dumps(described, sort_keys=True, default=str)


def spec_help() -> str:
    """The CLI's help for ``--model``: every registered family's forms, with what it declares and loads."""
    words = {"image": "images", "caption": "texts"}

    def loads(family: Family) -> str:
        encodes = f"{' and '.join(words[m] for m in family.modalities)}, {family.similarity} similarity"
        if "encoder" not in family.kinds:
            return "pair scorers"
        return encodes + ("; or a pair scorer" if "pair scorer" in family.kinds else "")

    families = [
        f"{' or '.join(form for form, _ in family.forms)} ({'; '.join(what for _, what in family.forms)}: "
        f"{loads(family)})"
        for family in FAMILIES.values()
    ]
    return (
        f"a model spec: {'; '.join(families)}. Its images and captions are encoded and scored (a dual encoder), or "
        f"its (image, caption) pairs scored (a pair scorer; pair heads: {', '.join(PAIR_HEADS)})"
    )
