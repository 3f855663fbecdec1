"""A Griffe extension for the API reference: the package's docstrings are reST-flavoured prose (``x`` literals,
:class:`Name` / :func:`name` roles); mkdocstrings renders Markdown, where a role would show as ``:class:`` text.

Each role becomes a code span (``:class:`~eccv_metric.X``` -> `X`, ``:func:`f``` -> `f()`), so the reference reads
as the source does. Double backticks need nothing: Markdown reads ````x```` as the code span `x`.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|data|mod|obj|exc|const):`~?([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role written as a Markdown code span."""

    def span(match: re.Match[str]) -> str:
        kind, target = match.groups()
        target = target.split("<")[-1].rstrip(">").strip()  # :class:`title <target>`
        name = target.rsplit(".", 1)[-1] if match.group(0).count("~") else target
        return f"`{name}()`" if kind in ("func", "meth") and not name.endswith(")") else f"`{name}`"

    return ROLE.sub(span, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring once the object tree is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
