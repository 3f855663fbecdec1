"""Query views as HTML: one card per query, its top items marked per benchmark; shared by the Space's Browse tab
and ``eccv-caption explore --html`` (they only put the cards on their page).

A card holds the query (its thumbnail or caption), then each run's top items (one run, or two side by side), each
with its rank, thumbnail or caption, score, and one mark per benchmark of the family (:mod:`eccv_metric.explore`):
``ECCV ✓`` a positive, ``COCO ✗`` not one, ``PM –`` the query is not one of that benchmark's queries; the pair's
CxC rating beside. An image without pixels shows why in its place. Everything a test (or a script) reads is in
``data-`` attributes: the query id, each item's id, rank and marks (JSON), each run's per-query values (JSON,
exact floats). Thumbnails are embedded (``data:image/jpeg;base64``): a card needs no server.
"""

from __future__ import annotations

import base64
import html
import json

from eccv_metric.analysis.report import shown
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import metric_label
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.explore.family import SHORT
from eccv_metric.explore.media import Media
from eccv_metric.explore.media import Thumb
from eccv_metric.explore.table import QueryTable
from eccv_metric.explore.view import QueryView
from eccv_metric.explore.view import view_of

# the cards' style: a scroller that stops at each query (scroll-snap), fitting a 1366 x 900 screen
CARDS_CSS = """
.eccv-cards { max-height: calc(100vh - 60px); overflow-y: auto; scroll-snap-type: y mandatory;
  overscroll-behavior: contain; border: 1px solid #ddd; border-radius: 6px; }
.eccv-card { scroll-snap-align: start; display: flex; gap: 12px; padding: 10px; border-bottom: 2px solid #ccc;
  min-height: 120px; font: 13px/1.3 system-ui, sans-serif; color: #222; background: #fff; }
.eccv-query { flex: 0 0 170px; }
.eccv-query img, .eccv-item img { display: block; border-radius: 3px; }
.eccv-query img { width: 160px; height: auto; }
.eccv-nopix { background: #f3f3f3; color: #666; font-size: 11px; padding: 6px; border: 1px dashed #bbb;
  border-radius: 3px; overflow-wrap: anywhere; }
.eccv-query .eccv-nopix { width: 148px; min-height: 60px; }
.eccv-item .eccv-nopix { width: 84px; height: 72px; overflow: hidden; }
.eccv-runs { flex: 1; display: flex; gap: 12px; min-width: 0; }
.eccv-run { flex: 1; min-width: 0; }
.eccv-run h4 { margin: 0 0 4px; font-size: 13px; }
.eccv-values { font-size: 11px; color: #444; margin: 0 0 4px; }
.eccv-values span { white-space: nowrap; margin-right: 8px; }
.eccv-items { list-style: none; margin: 0; padding: 0; }
.eccv-items.eccv-images { display: grid; grid-template-columns: repeat(5, minmax(0, 1fr)); gap: 6px 8px; }
.eccv-items.eccv-images li { display: flex; flex-direction: column; gap: 2px; min-width: 0; }
.eccv-items.eccv-images .eccv-marks { white-space: normal; line-height: 1.6; }
.eccv-items.eccv-images .eccv-score { margin-left: 6px; }
.eccv-items.eccv-captions li { display: flex; gap: 6px; align-items: baseline; padding: 2px 0;
  border-bottom: 1px solid #eee; }
.eccv-items.eccv-images img { width: 84px; height: auto; max-height: 84px; object-fit: cover; }
.eccv-text { flex: 1; min-width: 0; }
.eccv-rank { color: #777; font-variant-numeric: tabular-nums; min-width: 1.6em; }
.eccv-score { color: #777; font-size: 11px; font-variant-numeric: tabular-nums; }
.eccv-marks { white-space: nowrap; }
.eccv-m { display: inline-block; font-size: 10px; font-weight: 600; padding: 0 3px; margin-right: 2px;
  border-radius: 3px; }
.eccv-m.yes { background: #d8f3dc; color: #1b5e20; }
.eccv-m.no { background: #f1f1f1; color: #888; }
.eccv-m.none { background: #fff; color: #bbb; border: 1px dotted #ccc; }
.eccv-set { margin: 10px 0 4px; font: 600 14px system-ui, sans-serif; }
.eccv-empty { padding: 12px; color: #666; font: 13px system-ui, sans-serif; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def thumb_html(thumb: Thumb, label: str) -> str:
    """An embedded thumbnail, or in its place why the image has none."""
    if thumb.jpeg is None:
        why = thumb.why or label
        short = why.split(" (")[0]  # the reason in full on hover
        return f'<div class="eccv-nopix" role="img" aria-label="{_e(why)}" title="{_e(why)}">{_e(short)}</div>'
    data = base64.b64encode(thumb.jpeg).decode()
    return f'<img src="data:image/jpeg;base64,{data}" alt="{_e(label)}" loading="lazy">'


class Looks:
    """The pixels and texts a set of cards shows, fetched at once (:class:`~eccv_metric.explore.media.Media`)."""

    def __init__(self, media: Media, benchmark: str, resources: Resources, views: list[QueryView]):
        bench = REGISTRY.get(benchmark)
        images: list[int] = []
        captions: list[int] = []
        for view in views:
            (images if view.query_kind == "image" else captions).append(view.query_id)
            ids = [item.id for item in view.items if item.inside]
            (images if view.item_kind == "image" else captions).extend(ids)
        self.thumbs = media.thumbs(bench, resources, images) if images else {}
        self.texts = media.texts(bench, captions) if captions else {}

    def item(self, kind: str, ident: int, inside: bool = True) -> str:
        if not inside:
            said = f"{kind} {ident}: a distractor of the run, not an item of the benchmark"
            return f'<span class="eccv-nopix">{_e(said)}</span>'
        if kind == "image":
            return thumb_html(self.thumbs[ident], f"image {ident}")
        text = self.texts.get(ident)
        shown_text = text if text is not None else f"caption {ident} (no text: no dataset with captions given)"
        return f'<span class="eccv-text" title="caption {ident}">{_e(shown_text)}</span>'


def _marks(view: QueryView, marks: dict[str, bool], rating: float | None) -> str:
    out = []
    for name, title in view.marked.items():
        short = SHORT.get(name, title)
        if name not in view.queries_of:
            out.append(f'<b class="eccv-m none" title="not a query of {_e(title)}">{_e(short)} –</b>')
        elif marks[name]:
            out.append(f'<b class="eccv-m yes" title="a positive under {_e(title)}">{_e(short)} ✓</b>')
        else:
            out.append(f'<b class="eccv-m no" title="not a positive under {_e(title)}">{_e(short)} ✗</b>')
    if rating is not None:
        kind = (view.rating_kind or "").upper()
        out.append(f'<b class="eccv-m no" title="CxC {kind} rating (0-5)">{kind} {rating:g}</b>')
    return " ".join(out)


def _values(view: QueryView) -> str:
    cells = " ".join(
        f'<span title="{_e(metric_label(m))}">{_e(metric_label(m))}: {_e(shown(m, v))}</span>'
        for m, v in view.values.items()
    )
    exact = _e(json.dumps(view.values))
    return f'<div class="eccv-values" data-values="{exact}">{cells or "no per-query values"}</div>'


def run_html(view: QueryView, looks: Looks, label: str) -> str:
    """One run's column of a card: its name, the query's per-query values, its top items."""
    kind = "eccv-images" if view.item_kind == "image" else "eccv-captions"
    rows = []
    for item in view.items:
        marks = _e(json.dumps(item.marks))
        tie = " =" if item.tied else ""  # the tie rule placed it after an item of the same score
        score = "" if item.score is None else f'<span class="eccv-score">{item.score:.4g}{tie}</span>'
        rating = "" if item.rating is None else f' data-rating="{item.rating!r}"'
        head = f'<span class="eccv-rank">{item.rank}</span>'
        look = looks.item(view.item_kind, item.id, item.inside)
        tags = f'<span class="eccv-marks">{_marks(view, item.marks, item.rating)}</span>'
        body = f"<div>{head}{score}</div>{look}{tags}" if view.item_kind == "image" else f"{head}{look}{tags}{score}"
        about = f'data-rank="{item.rank}" data-id="{item.id}" data-inside="{int(item.inside)}" data-marks="{marks}"'
        rows.append(f'<li class="eccv-item" {about}{rating}>{body}</li>')
    title = label if view.run == label else f"{label}: {view.run}"
    more = ""
    if view.list_length < view.depth:
        more = f'<p class="eccv-empty">{_e(view.run)} ranked {view.list_length} item(s) for this query</p>'
    return (
        f'<div class="eccv-run" data-run="{_e(label)}"><h4>{_e(title)}</h4>{_values(view)}'
        f'<ol class="{kind} eccv-items">{"".join(rows)}</ol>{more}</div>'
    )


def card_html(a: QueryView, b: QueryView | None, looks: Looks) -> str:
    """One query's card: the query, then run A's items (and run B's beside them)."""
    if a.query_kind == "image":
        query = thumb_html(looks.thumbs[a.query_id], f"image {a.query_id}")
    else:
        query = looks.item("caption", a.query_id)
    positives = ", ".join(f"{SHORT.get(n, t)} {a.n_positives[n]}" for n, t in a.marked.items() if n in a.queries_of)
    head = (
        f'<div class="eccv-query">{query}<div>{_e(a.query_kind)} {a.query_id}</div>'
        f'<div class="eccv-values">positives: {_e(positives or "none")}</div></div>'
    )
    runs = run_html(a, looks, "A") + ("" if b is None else run_html(b, looks, "B"))
    return (
        f'<section class="eccv-card" data-query="{a.query_id}" data-benchmark="{_e(a.benchmark)}" '
        f'data-direction="{_e(a.direction)}">{head}<div class="eccv-runs">{runs}</div></section>'
    )


def cards_html(
    table_a: QueryTable, table_b: QueryTable | None, rows: list[int], media: Media, resources: Resources
) -> str:
    """The cards of rows of run A's table, run B's view of each query beside it (where B has it), in a scroller
    that stops at each query."""
    views = []
    for row in rows:
        a = view_of(table_a, row)
        b = None
        if table_b is not None:
            try:
                b = view_of(table_b, table_b.row(a.query_id))
            except EvaluationError:  # not one of B's queries (its ranked lists leave it out)
                b = None
        views.append((a, b))
    if not views:
        return '<div class="eccv-cards"><p class="eccv-empty">no query in this set</p></div>'
    looks = Looks(media, table_a.benchmark, resources, [v for pair in views for v in pair if v])
    return '<div class="eccv-cards" tabindex="0">' + "".join(card_html(a, b, looks) for a, b in views) + "</div>"
