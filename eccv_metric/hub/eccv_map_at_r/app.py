"""Gradio Space for the ECCV Caption family: any registered benchmark, from rankings, a TREC run, a score matrix
or embeddings; the library's numbers, formatted by kind, with R@K curves (the Score tab); what a run retrieved,
query by query, each item marked by every benchmark ranking the same gallery, two runs side by side (the Browse
tab).

A thin layer over ``eccv_metric.hub.space`` and ``eccv_metric.hub.browse`` (the handlers, without gradio) and so
over the library: parsing, checks, metrics and number formatting all come from ``eccv_metric``. Run it locally with
``python eccv_metric/hub/eccv_map_at_r/app.py`` and open http://127.0.0.1:7860 (benchmark sources: the
"benchmark source files" box, else the folder in ``ECCV_CAPTION_SOURCE_DIR``, else the canonical files,
downloaded once). evaluate.utils.launch_gradio_widget only works with gradio < 4 (huggingface/evaluate#602),
so this is a small app of its own, written for the gradio pinned in requirements.txt.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

_HERE = Path(__file__).resolve()
if _HERE.parents[2].name == "eccv_metric":  # run from a clone: its package first (a staged Space has it beside)
    sys.path.insert(0, str(_HERE.parents[3]))

from eccv_metric.benchmarks.definitions import REGISTRY  # noqa: E402
from eccv_metric.core.defaults import KS_TEXT  # noqa: E402
from eccv_metric.hub import browse as browse_module  # noqa: E402
from eccv_metric.hub import space  # noqa: E402
from eccv_metric.hub.browse import BROWSE_LABELS  # noqa: E402
from eccv_metric.hub.cards import CARDS_CSS  # noqa: E402
from eccv_metric.hub.space import LABELS  # noqa: E402
from eccv_metric.hub.space import MAX_FILE_BYTES  # noqa: E402
from eccv_metric.hub.space import MAX_KS  # noqa: E402
from eccv_metric.hub.space import MAX_PASTE_CHARS  # noqa: E402
from eccv_metric.hub.space_words import plot_points  # noqa: E402

EXAMPLE = space.EXAMPLE
STATUS_CSS = """
.eccv-error { border: 1px solid #d33; border-left: 6px solid #d33; background: #fdecec; color: #8a1010;
  padding: 0.6em 0.9em; border-radius: 6px; font-weight: 600; }
.eccv-ok { border-left: 6px solid #2a8a3a; background: #eef8ef; color: #14461c; padding: 0.6em 0.9em;
  border-radius: 6px; }
"""
# the table's columns (space.COLUMNS): the label, the id, one per direction (one to four), the unit
COLUMN_WIDTHS = ["30%", "150px", "84px", "84px", "84px"]
# an id breaks anywhere rather than leave the table: it has no space to break at
TABLE_CSS = "#results [role=gridcell][data-col='1'] span { overflow-wrap: anywhere; }"
# what `demo.launch(**LAUNCH)` needs beyond the defaults (tests launch the app the same way)
LAUNCH = {"max_file_size": MAX_FILE_BYTES, "css": TABLE_CSS + CARDS_CSS}
TABLE_LABEL = "results (fractions in percent; MedR / MeanR: ranks; Spearman: rho; id: the metric's name)"
TITLE = "# ECCV Caption retrieval metrics"
INTRO = (
    "Pick benchmarks (or metrics), then give **one** input: ranked lists as JSON "
    '`{"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": [image ids]}}` (also `t2t`, '
    "`i2i`), uploaded or pasted; a TREC run; a `.npy` score matrix (images x captions); or image / caption "
    "embeddings `.npy` (CxC t2t needs only captions, i2i only images). Rows follow each benchmark's canonical "
    "order (Karpathy order; FG: the annotation files' order) unless you add id files. Numbers: fractions in "
    "percent, MedR / MeanR as ranks, Spearman's rho as is (the unit column says which). CxC and FG benchmarks "
    "read their source files: upload them (CxC CSVs; `*_FG_ann.json` and `*_FG_img_filenames.npy`) or let the "
    "Space fetch them."
)
BROWSE_INTRO = (
    "Each query's top 10 in run A (the Score tab's input, run files or a published model) and run B beside it, every "
    "item marked by each benchmark ranking the same gallery: ✓ a positive, ✗ not, – not a query of it; CxC's rating "
    "beside."
)
PUBLISHED_INTRO = (
    "A model that published its results on this Space's benchmark with their evidence (`eccv-caption evaluate "
    "--evidence`, then `push-results`): its rankings as it scored them, the benchmark at the revision it names, its "
    "published per-query values (checked equal to its evidence's)."
)
# the cards' scroller ends at the window's bottom: the page stays put, the queries scroll (one stop each)
FIT_CARDS = """
const fit = () => {
  const box = element.querySelector('.eccv-cards');
  if (!box) return;
  const top = box.getBoundingClientRect().top + window.scrollY;
  box.style.maxHeight = Math.max(320, window.innerHeight - top - 12) + 'px';
};
watch('value', fit);
window.addEventListener('resize', fit);
fit();
"""


def status_html(ok: bool, message: str) -> str:
    """The status line: a green note, or a red one-line error box (role=alert)."""
    if not message:
        return ""
    kind = "eccv-ok" if ok else "eccv-error"
    role = "status" if ok else "alert"
    return f'<div class="{kind}" role="{role}">{html.escape(message)}</div>'


def score(*boxes):
    """The Score button: the handler's answer as (status, table, curves, JSON)."""
    import gradio as gr
    import pandas as pd

    answer = space.score(*boxes)
    table = pd.DataFrame(answer.rows, columns=answer.columns)
    points, order = plot_points(answer.curves)  # K as text: the x axis shows the Ks only, in numeric order
    curves = pd.DataFrame(points, columns=["K", "R@K (%)", "series"])
    return (
        status_html(answer.ok, answer.message),
        table,
        gr.LinePlot(value=curves, sort=order or None, visible=bool(answer.curves)),
        answer.raw,
    )


def build():
    import gradio as gr
    import pandas as pd

    with gr.Blocks(title="ECCV Caption retrieval metrics") as demo:
        gr.Markdown(TITLE)
        with gr.Tab("Score", id="score-tab"):
            gr.Markdown(INTRO)
            example_on = gr.State(False)  # the boxes hold the example's settings, as it set them
            with gr.Row(equal_height=False):
                with gr.Column(scale=1, min_width=420):  # the inputs
                    benchmarks = gr.Dropdown(
                        space.labelled(REGISTRY.names(), "benchmark"),
                        value=[],
                        multiselect=True,
                        label=LABELS["benchmarks"],
                        elem_id="benchmarks",
                    )
                    metrics = gr.Dropdown(
                        space.labelled(space.metric_choices()),
                        value=[],  # nothing picked: the defaults for the input, as the CLI without --metrics
                        multiselect=True,
                        allow_custom_value=True,
                        label=LABELS["metrics"],
                        elem_id="metrics",
                    )
                    with gr.Row():
                        upload = gr.File(label=LABELS["upload"], type="filepath", elem_id="upload", height=120)
                        pasted = gr.Textbox(
                            label=LABELS["pasted"], lines=4, max_lines=12, max_length=MAX_PASTE_CHARS, elem_id="pasted"
                        )
                    with gr.Accordion("embeddings (instead of rankings or a matrix)", open=False):
                        with gr.Row():
                            image_embeddings = gr.File(
                                label=LABELS["image_embeddings"], type="filepath", elem_id="image_emb"
                            )
                            caption_embeddings = gr.File(
                                label=LABELS["caption_embeddings"], type="filepath", elem_id="caption_emb"
                            )
                        normalize = gr.Checkbox(False, label=LABELS["normalize"])
                    with gr.Accordion("optional files: ids, COCO instances, benchmark sources", open=False):
                        with gr.Row():
                            image_ids = gr.File(label=LABELS["image_ids"], type="filepath", elem_id="image_ids")
                            caption_ids = gr.File(label=LABELS["caption_ids"], type="filepath", elem_id="caption_ids")
                        with gr.Row():
                            instances = gr.File(label=LABELS["instances"], type="filepath", elem_id="instances")
                            sources = gr.File(
                                label=LABELS["sources"], type="filepath", file_count="multiple", elem_id="sources"
                            )
                    with gr.Row():
                        ks = gr.Textbox(KS_TEXT, label=f"{LABELS['ks']} (at most {MAX_KS})", elem_id="ks")
                        partial = gr.Checkbox(False, label=LABELS["partial"], elem_id="partial")
                # the buttons and the results beside the inputs, at the top: both in view without scrolling (1366x900);
                # on a narrow screen the columns stack and the buttons follow the inputs
                with gr.Column(scale=1, min_width=420):
                    with gr.Row():
                        example = gr.Button("Load the small example", elem_id="example")
                        run = gr.Button("Score", variant="primary", elem_id="score")
                    status = gr.HTML(elem_id="status", css_template=STATUS_CSS, js_on_load=None)
                    table = gr.Dataframe(
                        headers=list(space.COLUMNS),
                        label=TABLE_LABEL,
                        elem_id="results",
                        interactive=False,
                        wrap=True,
                        column_widths=COLUMN_WIDTHS,
                        show_search="search",  # a metric found by its label or its id
                    )
                    curves = gr.LinePlot(
                        x="K", y="R@K (%)", color="series", y_lim=[0, 100], label="R@K curves", elem_id="curves",
                        visible=False,
                    )  # fmt: skip
                    raw = gr.Code(label="results JSON (fractions, the official keys)", language="json", elem_id="raw")
        with gr.Tab("Browse", id="browse-tab"):
            browse_boxes = browse_tab()

        inputs = [upload, pasted, benchmarks, metrics, ks, partial, image_embeddings, caption_embeddings]
        inputs += [normalize, image_ids, caption_ids, instances, sources]
        outputs = [status, table, curves, raw]
        # the user's pick fills in its defaults, in the browser (no round trip racing the user's next click)
        defaults = json.dumps({name: space.metrics_for([name]) for name in REGISTRY.names()})
        fill = f"(picked) => [[...new Set((picked || []).flatMap((b) => ({defaults})[b] || []))]]"  # [one output]
        benchmarks.input(None, benchmarks, metrics, js=fill, queue=False)

        def load_example():
            state = space.example_state()
            empty = pd.DataFrame([], columns=list(space.COLUMNS))
            cleared = [None, None, False, None, None, None, None]  # embeddings, normalize, ids, instances, sources
            values = [None, state["pasted"], state["benchmarks"], state["metrics"], state["ks"], state["partial"]]
            return values + cleared + ["", empty, gr.LinePlot(visible=False), "{}", True]

        example.click(load_example, None, inputs + outputs + [example_on])

        # the example's settings are the example's: your own input puts them back (space.after_own_input)
        boxes = {"benchmarks": benchmarks, "metrics": metrics, "partial": partial, "pasted": pasted}

        def own_input(uploaded):
            def changed(on, text):
                change = space.after_own_input(on, text, uploaded)
                return [change.get(name, gr.skip()) for name in boxes] + [change.get("example_on", gr.skip())]

            return changed

        for given in (upload, image_embeddings, caption_embeddings):
            given.upload(own_input(True), [example_on, pasted], [*boxes.values(), example_on], queue=False)
        pasted.input(own_input(False), [example_on, pasted], [*boxes.values(), example_on], queue=False)
        for setting in (benchmarks, metrics, partial, ks):  # changed by hand: the user's own, kept from now on
            setting.input(lambda: False, None, example_on, queue=False)
        run.click(score, inputs, outputs, api_name="score")
        score_boxes = [upload, pasted, image_embeddings, caption_embeddings, normalize, image_ids, caption_ids]
        show, browse_inputs, browse_outputs = browse_boxes
        show.click(browse, score_boxes + browse_inputs + [instances, sources], browse_outputs, api_name="browse")
    return demo


def browse_tab():
    """The Browse tab's boxes (its events are wired in :func:`build`, beside the Score tab's boxes)."""
    import gradio as gr

    gr.Markdown(BROWSE_INTRO)
    with gr.Accordion("run files (optional)", open=False):
        with gr.Row():
            run_a = gr.File(label=BROWSE_LABELS["run_a"], file_count="multiple", type="filepath", elem_id="run_a",
                            height=100)  # fmt: skip
            run_b = gr.File(label=BROWSE_LABELS["run_b"], file_count="multiple", type="filepath", elem_id="run_b",
                            height=100)  # fmt: skip
            normalize_runs = gr.Checkbox(False, label=BROWSE_LABELS["normalize_runs"], elem_id="normalize_runs")
    with gr.Accordion("published models (optional)", open=False):
        gr.Markdown(PUBLISHED_INTRO)
        with gr.Row():
            published_a = gr.Textbox(label=BROWSE_LABELS["published_a"], elem_id="published_a", max_lines=1)
            published_b = gr.Textbox(label=BROWSE_LABELS["published_b"], elem_id="published_b", max_lines=1)
    with gr.Row(equal_height=True):
        benchmark = gr.Dropdown(
            space.labelled(browse_module.browsable_benchmarks(), "benchmark"), value="eccv",
            label=BROWSE_LABELS["benchmark"], elem_id="browse_benchmark", min_width=180,
        )  # fmt: skip
        direction = gr.Dropdown(["i2t", "t2i"], value="i2t", label=BROWSE_LABELS["direction"], elem_id="direction",
                                min_width=90, scale=0)  # fmt: skip
        query_set = gr.Dropdown([], label=BROWSE_LABELS["set"], elem_id="query_set", min_width=300, scale=2)
        shown = gr.Number(10, label=BROWSE_LABELS["shown"], precision=0, minimum=1,
                          maximum=browse_module.MAX_SHOWN, elem_id="shown", min_width=80, scale=0)  # fmt: skip
        seed = gr.Number(0, label=BROWSE_LABELS["seed"], precision=0, minimum=0, elem_id="seed", min_width=80,
                         scale=0)  # fmt: skip
        query = gr.Textbox(label=BROWSE_LABELS["query"], elem_id="query", min_width=110, scale=0)
        show = gr.Button("Show", variant="primary", elem_id="show", min_width=80, scale=0)
    status = gr.HTML(elem_id="browse_status", css_template=STATUS_CSS, js_on_load=None)
    cards = gr.HTML(elem_id="cards", js_on_load=FIT_CARDS)

    def directions(name):
        picked = REGISTRY.get(name).directions if name in REGISTRY else ("i2t", "t2i")
        return gr.Dropdown(choices=list(picked), value=picked[0])

    benchmark.change(directions, benchmark, direction, queue=False)
    inputs = [run_a, run_b, normalize_runs, published_a, published_b, benchmark, direction, query_set, shown, seed]
    inputs += [query]
    return show, inputs, [status, cards, query_set]


def browse(*boxes):
    """The Show button: the handler's answer as (status, cards, the query sets to pick from)."""
    import gradio as gr

    score_boxes, rest = boxes[:7], boxes[7:]
    answer = browse_module.browse(tuple(score_boxes), *rest)
    sets = gr.Dropdown(choices=answer.sets, value=answer.chosen) if answer.ok else gr.skip()
    return status_html(answer.ok, answer.message), answer.html, sets


if __name__ == "__main__":
    build().launch(**LAUNCH)
