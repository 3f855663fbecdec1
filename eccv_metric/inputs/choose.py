"""The one rule for what a front end was given: exactly one kind of input, named in the front end's words.

The CLI (flags), the evaluate module (keyword arguments) and the Space (upload
boxes) each collect the same parts and call :func:`input_from_parts` with a
``words`` table naming each part their way, so every front end accepts the
same combinations and refuses the others with the same reasons.
"""

from __future__ import annotations

from collections.abc import Mapping

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.options import require_bool
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.twostage import TwoStage

PARTS = (
    "rankings",
    "scores",
    "caption_scores",
    "image_scores",
    "image_embeddings",
    "caption_embeddings",
    "image_ids",
    "caption_ids",
    "normalize",
)
OPTIONS = ("ties",)  # how the parts are read, not parts: the tie rule of scores and embeddings
SECOND = ("rerank",)  # a second stage over the scores or embeddings: {direction: Reranked} (inputs.twostage)
PYTHON_WORDS = {name: name for name in PARTS + OPTIONS + SECOND}


def input_from_parts(
    parts: Mapping[str, object], words: Mapping[str, str] = PYTHON_WORDS
) -> Rankings | ScoreMatrix | Embeddings | TwoStage:
    """Rankings (``rankings``: ``{direction: lists}`` or :class:`Rankings`), a score matrix (``scores`` and / or
    the square ``caption_scores`` / ``image_scores``) or embeddings; ids, ``normalize`` and ``ties`` (the tie rule
    of scores: ``stable`` or ``trec_eval``) where they apply. ``rerank`` (``{direction: Reranked}``, or a
    mapping / tuple of its arrays): a second stage over the scores or embeddings, which are then its first stage
    (:class:`TwoStage`)."""
    unknown = set(parts) - set(PARTS) - set(OPTIONS) - set(SECOND)
    if unknown:
        raise ValueError(f"unknown input parts {sorted(unknown)}")
    rerank = parts.get("rerank")
    first = one_input({k: v for k, v in parts.items() if k != "rerank"}, words, bool(rerank))
    if not rerank:
        return first
    said = words.get("rerank", "rerank")
    if isinstance(first, Rankings):
        raise EvaluationError(
            f"{said} reranks a first stage of scores: give it with {words['scores']} or {words['image_embeddings']} / "
            f"{words['caption_embeddings']}, not ranked lists ({words['rankings']})"
        )
    if not isinstance(rerank, Mapping):
        raise EvaluationError(f"{said} must map directions (i2t, t2i, t2t, i2i) to reranked candidates")
    return TwoStage(first, **{str(d): v for d, v in rerank.items()})


def one_input(
    parts: Mapping[str, object], words: Mapping[str, str], second: bool = False
) -> Rankings | ScoreMatrix | Embeddings:
    """The one input of the parts but ``rerank`` (see :func:`input_from_parts`); ``second``: a second stage was
    given, these parts are its first stage."""
    if parts.get("normalize") is not None:
        require_bool(parts["normalize"], words["normalize"].strip("-=").replace("-", "_"))
    ties = parts.get("ties")
    given = {name for name, value in parts.items() if value is not None and value is not False and name in PARTS}
    kinds = {
        "rankings": given & {"rankings"},
        "scores": given & {"scores", "caption_scores", "image_scores"},
        "embeddings": given & {"image_embeddings", "caption_embeddings"},
    }
    present = [k for k, names in kinds.items() if names]
    if not present and second:
        raise EvaluationError(
            f"{words.get('rerank', 'rerank')} needs a first stage, a score for every query and gallery item: give "
            f"{words['scores']} or {words['image_embeddings']} / {words['caption_embeddings']}"
        )
    if not present:
        raise EvaluationError(
            f"nothing to score: give {words['rankings']}, {words['scores']} or "
            f"{words['image_embeddings']} / {words['caption_embeddings']}"
        )
    if len(present) != 1:
        raise EvaluationError(
            "give one input: "
            + ", ".join(
                [
                    words["rankings"],
                    f"{words['scores']} (and/or {words['caption_scores']} / {words['image_scores']})",
                    f"{words['image_embeddings']} / {words['caption_embeddings']}",
                ]
            )
            + (
                f"; got {' and '.join(' + '.join(words[n] for n in sorted(kinds[k])) for k in present)}"
                if present
                else ""
            )
        )
    if parts.get("normalize") and present != ["embeddings"]:
        raise EvaluationError(f"{words['normalize']} applies to embeddings only (cosine similarity)")
    if ties is not None and present == ["rankings"]:
        raise EvaluationError(
            f"{words.get('ties', 'ties')} is the tie rule of scores and embeddings: ranked lists are already in order"
        )
    ids = {"image_ids": parts.get("image_ids"), "caption_ids": parts.get("caption_ids")}
    if present == ["rankings"]:
        named = [words[k] for k, v in ids.items() if v is not None]
        if named:
            raise EvaluationError(f"{' / '.join(named)} name the rows of scores or embeddings, not of ranked lists")
        rankings = parts["rankings"]
        if isinstance(rankings, Rankings):  # read as Rankings already (MTEB predictions know their subsets)
            return rankings
        if not isinstance(rankings, Mapping):
            raise EvaluationError(f"{words['rankings']} must map directions (i2t, t2i, t2t, i2i) to ranked lists")
        return Rankings(**{str(d): v for d, v in rankings.items()})
    if present == ["embeddings"]:
        return Embeddings(
            parts.get("image_embeddings"),
            parts.get("caption_embeddings"),
            ids["image_ids"],
            ids["caption_ids"],
            parts.get("normalize", False),  # type: ignore[arg-type]
            "stable" if ties is None else ties,  # type: ignore[arg-type]
        )
    return ScoreMatrix(
        parts.get("scores"),
        ids["image_ids"],
        ids["caption_ids"],
        caption_scores=parts.get("caption_scores"),
        image_scores=parts.get("image_scores"),
        ties="stable" if ties is None else ties,  # type: ignore[arg-type]
    )
