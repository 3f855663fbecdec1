"""The page ``eccv-caption explore --html`` writes: one self-contained HTML file (no script, no link, no font to
fetch: it opens offline), made of the library's views and the Space's cards (:mod:`eccv_metric.hub.cards`).

It holds the runs' headline numbers (each metric's aggregate over its queries, as ``evaluate -o`` writes it; the
exact value in ``data-value``), a bar chart per direction with each run's bootstrap interval
(:func:`eccv_metric.analysis.compare.intervals`; with two runs, :func:`~eccv_metric.analysis.compare.compare`'s
intervals and paired p-values), then each query set with its count and rule and its first queries as cards.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from datetime import timezone

from eccv_metric.analysis.report import scale_of
from eccv_metric.analysis.report import shown
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.benchmarks.names import metric_label
from eccv_metric.core.about import __version__
from eccv_metric.explore.table import QueryTable
from eccv_metric.hub.cards import CARDS_CSS

PAGE_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 0 auto; max-width: 1320px; padding: 12px 20px; }
html { scroll-snap-type: y proximity; }
h1 { font-size: 22px; margin: 4px 0; } h2 { font-size: 18px; margin: 18px 0 6px; }
.eccv-about { color: #555; margin: 0 0 8px; }
table.eccv-numbers { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 6px 0 12px; }
table.eccv-numbers th, table.eccv-numbers td { border-bottom: 1px solid #ddd; padding: 2px 10px; text-align: right; }
table.eccv-numbers th:first-child, table.eccv-numbers td:first-child { text-align: left; }
.eccv-chart { margin: 4px 0 14px; }
.eccv-page .eccv-cards { max-height: none; overflow: visible; scroll-snap-type: none; border: 0; }
.eccv-rule { color: #666; font-size: 12px; font-weight: 400; }
"""
COLORS = ("#3b6ea8", "#d9822b")  # run A, run B


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def numbers_table(tables: dict[str, Sequence[QueryTable]]) -> str:
    """The headline numbers: one row per metric, one column per direction and run (the exact value in
    ``data-value``)."""
    columns = [(d, t) for d, pair in tables.items() for t in pair]
    metrics = list(dict.fromkeys(m for _, t in columns for m in t.per_query))
    head = "".join(f"<th>{_e(d)} {_e(t.run)}</th>" for d, t in columns)
    rows = []
    for metric in metrics:
        cells = []
        for direction, table in columns:
            entry = table.per_query.get(metric)
            if entry is None:
                cells.append("<td>–</td>")
                continue
            value = entry.value
            cells.append(
                f'<td data-metric="{_e(metric)}" data-direction="{_e(direction)}" data-run="{_e(table.run)}" '
                f'data-value="{value!r}">{_e(shown(metric, value))}</td>'
            )
        unit = {"fraction": "%", "rank": "rank", "correlation": "rho"}[scale_of(metric)]
        rows.append(f'<tr><td title="{_e(metric)}">{_e(metric_label(metric))} ({_e(unit)})</td>{"".join(cells)}</tr>')
    return f'<table class="eccv-numbers"><tr><th>metric</th>{head}</tr>{"".join(rows)}</table>'


def bar_chart(rows: list[dict], runs: Sequence[str], direction: str, tests: dict[str, dict] | None = None) -> str:
    """An SVG bar chart of one direction: each fraction metric's mean per run with its interval as a whisker
    (``rows``: :func:`~eccv_metric.analysis.compare.intervals`' rows, a ``run`` key added); ``tests``: metric ->
    the paired test's row (its Holm-adjusted p-value is written under the bars)."""
    shown_rows = [r for r in rows if r["direction"] == direction and scale_of(r["metric"]) == "fraction"]
    metrics = list(dict.fromkeys(r["metric"] for r in shown_rows))
    if not metrics:
        return ""
    slot, bar, top, height = 26 * len(runs) + 24, 22, 20, 180
    width = 60 + slot * len(metrics)
    parts = [f'<svg class="eccv-chart" role="img" width="{width}" height="{top + height + 74}" '
             f'aria-label="{_e(direction)}: means with {_e(rows[0].get("confidence", 0.95))} intervals">']  # fmt: skip
    for tick in range(0, 101, 25):
        y = top + height - tick * height / 100
        parts.append(f'<line x1="40" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e3e3"/>')
        parts.append(f'<text x="34" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick}</text>')
    by_key = {(r["metric"], r["run"]): r for r in shown_rows}
    for k, metric in enumerate(metrics):
        x0 = 50 + k * slot
        for j, run in enumerate(runs):
            row = by_key.get((metric, run))
            if row is None:
                continue
            x = x0 + j * (bar + 4)
            y, low, high = (top + height - v * height for v in (row["mean"], row["low"], row["high"]))
            title = (
                f"{run} {metric} {direction}: {100 * row['mean']:.2f} [{100 * row['low']:.2f}, {100 * row['high']:.2f}]"
            )
            parts.append(
                f'<g data-metric="{_e(metric)}" data-run="{_e(run)}" data-mean="{row["mean"]!r}" '
                f'data-low="{row["low"]!r}" data-high="{row["high"]!r}"><title>{_e(title)}</title>'
                f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{top + height - y:.1f}" fill="{COLORS[j % 2]}"/>'
                f'<line x1="{x + bar / 2}" x2="{x + bar / 2}" y1="{high:.1f}" y2="{low:.1f}" stroke="#111"/>'
                f'<line x1="{x + 5}" x2="{x + bar - 5}" y1="{high:.1f}" y2="{high:.1f}" stroke="#111"/>'
                f'<line x1="{x + 5}" x2="{x + bar - 5}" y1="{low:.1f}" y2="{low:.1f}" stroke="#111"/></g>'
            )
        bench_title = REGISTRY.get(metric_bench(metric)).title
        label = metric_label(metric).replace(bench_title, "").strip(" :")
        parts.append(f'<text x="{x0}" y="{top + height + 14}" font-size="10">{_e(bench_title[:14])}</text>')
        parts.append(f'<text x="{x0}" y="{top + height + 26}" font-size="10">{_e(label[:14])}</text>')
        test = (tests or {}).get(metric)
        if test is not None:
            parts.append(f'<text x="{x0}" y="{top + height + 38}" font-size="10" data-p="{test["p_holm"]!r}">'
                         f"p={test['p_holm']:.3g}</text>")  # fmt: skip
    legend = "".join(
        f'<rect x="{50 + 120 * j}" y="{top + height + 50}" width="10" height="10" fill="{COLORS[j % 2]}"/>'
        f'<text x="{64 + 120 * j}" y="{top + height + 59}" font-size="11">{_e(run[:16])}</text>'
        for j, run in enumerate(runs)
    )
    return "".join(parts) + legend + "</svg>"


def metric_bench(metric: str) -> str:
    return metric_info(metric)[0].name


def page(
    title: str, about: list[str], numbers: str, charts: str, sections: list[str], notes: Sequence[str] = ()
) -> str:
    """The whole page: the title, what was run, the numbers, the charts, the query sets' sections."""
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = "".join(
        f'<p class="eccv-about">{_e(line)}</p>' for line in [*about, f"eccv-caption-hf {__version__}, {made}"]
    )
    noted = "".join(f'<p class="eccv-about">note: {_e(n)}</p>' for n in notes)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CARDS_CSS}{PAGE_CSS}</style></head>"
        f'<body class="eccv-page"><h1>{_e(title)}</h1>{lines}{noted}<h2>Numbers</h2>{numbers}{charts}'
        f"{''.join(sections)}</body></html>\n"
    )


def set_section(title: str, count: int, rule: str, cards: str, direction: str) -> str:
    """One query set: its title, how many queries it holds, its rule, its cards."""
    held = f"{count:,} {'query' if count == 1 else 'queries'}"
    return (
        f'<section data-set-direction="{_e(direction)}"><h3 class="eccv-set" data-count="{count}">{_e(direction)}: '
        f'{_e(title)}: {held} <span class="eccv-rule">({_e(rule)})</span></h3>{cards}</section>'
    )
