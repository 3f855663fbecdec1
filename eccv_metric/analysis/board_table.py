"""A leaderboard as a file: CSV or Markdown, one row per model, one column per number (empty where it has none)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import write_text_atomic

Row = tuple[str, dict[str, float | str]]
Column = tuple[str, str, int]  # key in a row, header, decimals
FORMATS = {".csv": "csv", ".md": "markdown", ".markdown": "markdown"}


def cell(value: float | str | None, digits: int = 2) -> str:
    if isinstance(value, str):  # a word (a row's trust mark)
        return value
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def to_csv(rows: Sequence[Row], columns: Sequence[Column]) -> str:
    """``model,<header>,...`` then one line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["model", *(label for _, label, _ in columns)])
    for name, values in rows:
        writer.writerow([name, *(cell(values.get(key), digits) for key, _, digits in columns)])
    return out.getvalue()


def to_markdown(rows: Sequence[Row], columns: Sequence[Column]) -> str:
    """A GitHub Markdown table (``|`` in a model name escaped)."""
    lines = ["| model | " + " | ".join(label for _, label, _ in columns) + " |"]
    lines.append("|---|" + "---:|" * len(columns))
    for name, values in rows:
        cells = " | ".join(cell(values.get(key), digits) for key, _, digits in columns)
        lines.append(f"| {name.replace('|', chr(92) + '|')} | {cells} |")
    return "\n".join(lines) + "\n"


def check_board_path(path: str) -> str:
    """The format a leaderboard file is written in, from its name (``.csv``, ``.md``); one line otherwise."""
    kind = FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        raise EvaluationError(f"--output {path}: name a .csv or .md file (the table's format follows the name)")
    return kind


def write_board(path: str, rows: Sequence[Row], columns: Sequence[Column]) -> None:
    text = (to_csv if check_board_path(path) == "csv" else to_markdown)(rows, columns)
    write_text_atomic(path, text)
