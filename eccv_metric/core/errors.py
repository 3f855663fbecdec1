"""The one exception type the metric engine raises for bad input, and how front ends word it.

Library messages name what to pass as a Python keyword followed by ``=``
(``instances_json=``, ``cxc_source=``, ``fg_source=``, ``image_ids=``); a
front end shows them in its own words with :func:`in_words` and a table
mapping keywords to its words (the CLI: flags; the Space: upload boxes; the
evaluate module: its keyword arguments), always on one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping


class EvaluationError(ValueError):
    """Input that cannot be scored exactly: the message names the query and what is wrong."""


EvaluationError.__module__ = "eccv_metric"  # how users import it, and how tracebacks name it


class HubReadError(EvaluationError):
    """The Hugging Face Hub could not be read (no network, a refused token, a server error): one line saying so and
    the next step. It is no verdict on what was being read: whoever keeps verdicts (the leaderboard's verification
    of a published run) keeps none of it, and a check it stops is "not checked", never "not recomputable"."""


_KEYWORD = re.compile(r"(?<![\w-])([A-Za-z_][A-Za-z0-9_]*)=(?:(True|False)\b)?")
MAX_MESSAGE = 2000  # a message longer than this is cut (an error line, not a dump)


def in_words(exc: BaseException | str, words: Mapping[str, str]) -> str:
    """The message of ``exc`` on one line, each ``keyword=`` it names replaced by ``words[keyword]``.

    A boolean switch written ``partial=True`` becomes the words of ``partial`` (a flag, a tick box); one
    written ``share_decode=False`` the words of ``share_decode=False`` where the table has them (a flag
    that turns a default off).
    Keywords the table does not know stay as they are. Line breaks become ``"; "``;
    an exception without a message is named by its type.
    """
    text = exc if isinstance(exc, str) else str(exc)
    if isinstance(exc, KeyError) and exc.args:  # str(KeyError('x')) is "'x'": say what it is
        text = f"missing key {exc.args[0]!r}"
    if not text.strip() and not isinstance(exc, str):
        text = type(exc).__name__
    text = _KEYWORD.sub(lambda m: _switch(m, words), text)
    line = "; ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 3] + "..."


def _switch(match: re.Match, words: Mapping[str, str]) -> str:
    name, value = match.group(1), match.group(2)
    if value == "False":
        return words.get(f"{name}=False", match.group(0))
    return words.get(name, match.group(0))


class ChanceLevelWarning(UserWarning):
    """Every metric of a direction is what random rankings give: rows in the wrong order, an untrained model..."""


ChanceLevelWarning.__module__ = "eccv_metric"


def preview(ids: Iterable[object], limit: int = 5) -> str:
    """Format a few ids for an error message: ``123, 456, 789 (and 12 more)``."""
    items = list(ids)
    shown = ", ".join(str(int(x)) if _is_int(x) else repr(x) for x in items[:limit])
    if len(items) > limit:
        shown += f" (and {len(items) - limit} more)"
    return shown


def _is_int(x: object) -> bool:
    if isinstance(x, bool) or type(x).__name__ == "bool_":  # True is shown as True, not as id 1
        return False
    try:
        return int(x) == x  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
