"""Gradio Space for the eccv_map_at_r metric: upload rankings or a score matrix, get the metrics.

evaluate.utils.launch_gradio_widget only works with gradio < 4 (huggingface/evaluate#602), so this
is a small app of its own, written for the gradio pinned in requirements.txt (5.x).
"""

import json

import numpy as np

from eccv_metric.cli import format_table
from eccv_metric.cli import load_ids
from eccv_metric.cli import load_rankings
from eccv_metric.errors import EvaluationError
from eccv_metric.hf_evaluate import metrics_for
from eccv_metric.targets import ALL_TARGETS

CHOICES = list(ALL_TARGETS)
DEFAULT = ["eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_1k_recalls", "coco_5k_recalls", "cxc_recalls"]


def score(path, target_metrics, ks_text, image_ids_path=None, caption_ids_path=None, instances_path=None):
    """Score an uploaded rankings .json or scores .npy; returns (table text, results JSON text)."""
    if not path:
        return "Upload a rankings .json or a scores .npy file.", "{}"
    try:
        ks = [int(k) for k in str(ks_text).replace(",", " ").split()] or [1, 5, 10]
        metrics = metrics_for(instances_json=instances_path or None)
        if str(path).endswith(".npy"):
            scores = np.load(path, mmap_mode="r", allow_pickle=False)
            image_ids = load_ids(image_ids_path) if image_ids_path else None
            caption_ids = load_ids(caption_ids_path) if caption_ids_path else None
            results = metrics.compute_all_metrics_from_scores(scores, image_ids, caption_ids, target_metrics, ks)
        else:
            rankings = load_rankings(path)
            results = metrics.compute_all_metrics(rankings.get("i2t"), rankings.get("t2i"), target_metrics, ks)
    except (EvaluationError, ValueError, OSError) as exc:
        return f"error: {exc}", "{}"
    return format_table(results), json.dumps(results, indent=2)


def build():
    import gradio as gr

    with gr.Blocks(title="ECCV Caption retrieval metrics") as demo:
        gr.Markdown(
            "# ECCV Caption retrieval metrics\n"
            'Upload `{"i2t": {image id: [caption ids]}, "t2i": {caption id: [image ids]}}` as JSON, '
            "or a `.npy` score matrix (images x captions, Karpathy order unless you add id files)."
        )
        with gr.Row():
            file = gr.File(label="rankings .json or scores .npy", type="filepath")
            image_ids = gr.File(label="image ids (optional)", type="filepath")
            caption_ids = gr.File(label="caption ids (optional)", type="filepath")
        instances = gr.File(label="COCO instances JSON (for pmrp, optional)", type="filepath")
        targets = gr.CheckboxGroup(CHOICES, value=DEFAULT, label="metrics")
        ks = gr.Textbox("1 5 10", label="Ks")
        table = gr.Textbox(label="results (percent)", lines=16)
        raw = gr.Code(label="results JSON", language="json")
        gr.Button("Score").click(score, [file, targets, ks, image_ids, caption_ids, instances], [table, raw])
    return demo


if __name__ == "__main__":
    build().launch()
