"""Checks of the options users pass: booleans are booleans, integers are integers (Python or numpy).

A string such as ``"False"`` is truthy in Python and would silently select the
other behaviour, so boolean options take ``True`` / ``False`` (or numpy
booleans) only; integer options take Python or numpy integers, never bools,
floats or strings. Front ends whose transport carries text (the Space's HTTP API)
read booleans with :func:`bool_from_text`: ``True`` / ``False`` or exactly the
words ``"true"`` / ``"false"`` (any case), nothing else.
"""

from __future__ import annotations

import numpy as np

from eccv_metric.core.errors import EvaluationError

TIES = ("stable", "trec_eval")


def check_ties(ties: object, name: str = "ties") -> str:
    """``stable`` (the given order among equal scores) or ``trec_eval`` (document id descending as strings)."""
    if ties not in TIES:
        raise EvaluationError(f"{name} must be 'stable' or 'trec_eval', not {ties!r:.40}")
    return ties  # type: ignore[return-value]


def require_bool(value: object, name: str) -> bool:
    """``value`` as a bool; anything but ``True`` / ``False`` (or a numpy bool) is refused naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise EvaluationError(f"{name} must be True or False, not {value!r:.40}")
    return bool(value)


BOOL_WORDS = {"true": True, "false": False}


def bool_from_text(value: object, name: str) -> bool:
    """``value`` as a bool for text transports: ``True`` / ``False`` (or numpy bools) or the strings ``"true"`` /
    ``"false"`` in any case; ``"False"`` is False, never truthy. Anything else (``"yes"``, ``"0"``, ``1``, ``None``)
    is refused naming ``name``."""
    if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
        return BOOL_WORDS[value.strip().lower()]
    if not isinstance(value, (bool, np.bool_)):
        raise EvaluationError(f"{name} must be true or false, not {value!r:.40}")
    return bool(value)


def require_int(value: object, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int in [minimum, maximum]; bools, floats and strings are refused naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise EvaluationError(f"{name} must be an integer, not {value!r:.40}")
    out = int(value)
    if (minimum is not None and out < minimum) or (maximum is not None and out > maximum):
        bounds = f"between {minimum:,} and {maximum:,}" if maximum is not None else f">= {minimum}"
        raise EvaluationError(f"{name} must be an integer {bounds}, not {out}")
    return out
