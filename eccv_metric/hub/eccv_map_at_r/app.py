"""Gradio Space for the eccv_map_at_r metric: upload or paste rankings (or upload a score matrix), get the metrics.

A thin layer over the library: parsing, checks and metrics all come from ``eccv_metric``.
evaluate.utils.launch_gradio_widget only works with gradio < 4 (huggingface/evaluate#602), so this
is a small app of its own, written for the gradio pinned in requirements.txt.
"""

import json
import os

from eccv_metric import Metrics
from eccv_metric.analysis.report import display_value
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import OFFICIAL_TARGETS
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import load_npy
from eccv_metric.core.jsonio import parse_json
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.rankings import RANKINGS_FORMAT
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.formats.rankings import rankings_from_json

MAX_FILE_BYTES = 512 * 2**20  # an official-format top-100 rankings JSON is ~25 MB; a float16 5K x 25K matrix 250 MB
MAX_PASTE_CHARS = 50 * 2**20
MAX_KS = 10
MAX_K = 25_000  # the largest gallery (captions); a larger K is the same as this one
# A small real example (partial): two ECCV Caption image queries and two caption queries of the test split,
# each list holding the query's ECCV positives with one negative at rank 2.
EXAMPLE = json.dumps(
    {
        "i2t": {
            "184791": [566386, 770337, 567085, 571483, 572221, 572281, 464220, 750878, 495153],
            "66412": [49928, 770337, 52658, 58232, 60602, 61706, 608447, 216742, 389720],
        },
        "t2i": {"401481": [182784, 391895], "100919": [34180, 391895, 169802]},
    }
)
HEADERS = ["metric", "i2t", "t2i"]
DIRS = ("i2t", "t2i")


def parse_ks(text: str) -> list[int]:
    """``"1 5 10"`` or ``"1,5,10"``: at most MAX_KS integers in [1, MAX_K]."""
    tokens = str(text or "").replace(",", " ").split()
    if not tokens:
        return [1, 5, 10]
    if len(tokens) > MAX_KS or not all(t.isdigit() for t in tokens):
        raise EvaluationError(f"Ks must be at most {MAX_KS} positive integers, e.g. '1 5 10', not {text!r:.40}")
    ks = [int(t) for t in tokens]
    if not all(1 <= k <= MAX_K for k in ks):
        raise EvaluationError(f"each K must be between 1 and {MAX_K:,}")
    return ks


def score(
    upload=None,
    pasted="",
    target_metrics=DEFAULT_TARGETS,
    ks_text="1 5 10",
    partial=False,
    image_ids_path=None,
    caption_ids_path=None,
    instances_path=None,
):
    """Score an uploaded rankings .json / scores .npy, or pasted rankings JSON.

    Returns (status line, table rows, results JSON text). Errors are one line, with nothing computed.
    """
    try:
        ks = parse_ks(ks_text)
        targets = list(target_metrics or [])
        if not targets:
            raise EvaluationError("choose at least one metric")
        metrics = _metrics(instances_path or None)
        if upload:
            if os.path.getsize(upload) > MAX_FILE_BYTES:
                raise EvaluationError(f"the file is larger than {MAX_FILE_BYTES // 2**20} MB")
            if str(upload).endswith(".npy"):
                scores = load_npy(upload, "a .npy float matrix (images x captions)")
                image_ids = load_ids(image_ids_path, "image ids") if image_ids_path else None
                caption_ids = load_ids(caption_ids_path, "caption ids") if caption_ids_path else None
                results = metrics.compute_all_metrics_from_scores(scores, image_ids, caption_ids, targets, ks)
                return _done(results, "scored the score matrix")
            rankings = load_rankings(upload)
        elif pasted and pasted.strip():
            if len(pasted) > MAX_PASTE_CHARS:
                raise EvaluationError(f"the pasted text is longer than {MAX_PASTE_CHARS // 2**20} MB: upload a file")
            rankings = rankings_from_json(parse_json(pasted, "pasted text", RANKINGS_FORMAT), "pasted text")
        else:
            raise EvaluationError("upload a rankings .json / scores .npy file, or paste rankings JSON")
        results = metrics.compute_all_metrics(rankings.get("i2t"), rankings.get("t2i"), targets, ks, partial=partial)
    except (EvaluationError, OSError) as exc:
        return f"error: {exc}", [], "{}"
    given = ", ".join(f"{len(v):,} {d} queries" for d, v in rankings.items())
    note = " (partial: means over the queries given only, not comparable with full results)" if partial else ""
    return _done(results, f"scored {given}{note}")


_METRICS = {}


def _metrics(instances):
    if instances not in _METRICS:
        _METRICS[instances] = Metrics(instances_json=instances)
    return _METRICS[instances]


def _done(results, status):
    rows = [
        [name] + [display_value(name, by_dir[d]) if d in by_dir else None for d in DIRS]
        for name, by_dir in results.items()
    ]
    return status, rows, json.dumps(results, indent=2)


def build():
    import gradio as gr

    with gr.Blocks(title="ECCV Caption retrieval metrics") as demo:
        gr.Markdown(
            "# ECCV Caption retrieval metrics\n"
            'Rankings as JSON: `{"i2t": {"<image id>": [caption ids, best first]}, "t2i": {"<caption id>": '
            "[image ids]}}` (COCO Karpathy 5K test ids), uploaded or pasted; or a `.npy` score matrix "
            "(images x captions, Karpathy order unless you add id files). Every query of a metric must "
            "have a list, unless you tick *score only the queries given*."
        )
        with gr.Row():
            upload = gr.File(label="rankings .json or scores .npy", type="filepath")
            pasted = gr.Textbox(label="or paste rankings JSON", lines=6, max_lines=12, elem_id="pasted")
        with gr.Accordion("optional files", open=False):
            with gr.Row():
                image_ids = gr.File(label="image ids of the matrix rows", type="filepath")
                caption_ids = gr.File(label="caption ids of the matrix columns", type="filepath")
                instances = gr.File(label="COCO instances JSON (pmrp)", type="filepath")
        targets = gr.CheckboxGroup(
            list(tuple(dict.fromkeys(DEFAULT_TARGETS + OFFICIAL_TARGETS))), value=list(DEFAULT_TARGETS), label="metrics"
        )
        with gr.Row():
            ks = gr.Textbox("1 5 10", label=f"Ks for *_recalls (at most {MAX_KS}, each <= {MAX_K:,})")
            partial = gr.Checkbox(False, label="score only the queries given (partial rankings)")
        with gr.Row():
            example = gr.Button("Load the small example", elem_id="example")
            run = gr.Button("Score", variant="primary", elem_id="score")
        status = gr.Markdown(elem_id="status")
        table = gr.Dataframe(
            headers=HEADERS, label="results (percent; MedR / MeanR: ranks)", elem_id="results", interactive=False
        )
        raw = gr.Code(label="results JSON (fractions)", language="json")
        example.click(lambda: (EXAMPLE, True), None, [pasted, partial])
        run.click(
            score,
            [upload, pasted, targets, ks, partial, image_ids, caption_ids, instances],
            [status, table, raw],
            api_name="score",
        )
    return demo


if __name__ == "__main__":
    build().launch()
