"""The one exception type the metric engine raises for bad input."""

from __future__ import annotations

from collections.abc import Iterable


class EvaluationError(ValueError):
    """Input that cannot be scored exactly: the message names the query and what is wrong."""


EvaluationError.__module__ = "eccv_metric"  # how users import it, and how tracebacks name it


class ChanceLevelWarning(UserWarning):
    """Every R@K of a direction is what random rankings give: likely rows in the wrong order or mixed-up ids."""


ChanceLevelWarning.__module__ = "eccv_metric"


def preview(ids: Iterable[object], limit: int = 5) -> str:
    """Format a few ids for an error message: ``123, 456, 789 (and 12 more)``."""
    items = list(ids)
    shown = ", ".join(str(int(x)) if _is_int(x) else repr(x) for x in items[:limit])
    if len(items) > limit:
        shown += f" (and {len(items) - limit} more)"
    return shown


def _is_int(x: object) -> bool:
    try:
        return int(x) == x  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
