"""The Hub benchmark's tasks (eval.yaml) and a results file as eval results, checked without any network.

The Hub side (commits, pull requests, the leaderboard, failures) runs against the local fake Hub in
tests/integration/test_hub_results.py; here: which tasks exist, the values written (percent, by an
independent decimal reading), the model card kept as it was but for its model-index, and every refusal
of ``push-results`` before anything is sent (one line, in flag words).
"""

from __future__ import annotations

import json

import pytest
import yaml

from eccv_caption_dataset.builder import CONFIGS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.cli.main import main
from eccv_metric.hub.eval_results import read_submission
from eccv_metric.hub.eval_results import updated_card
from eccv_metric.hub.eval_tasks import TASKS
from eccv_metric.hub.eval_tasks import eval_yaml
from eccv_metric.hub.eval_tasks import registered
from eccv_metric.hub.eval_tasks import task_ids
from tests.unit.brute import percent

SHA = "0123456789abcdef0123456789abcdef01234567"
VALUES = {
    "eccv_map_at_r": {"i2t": 0.07, "t2i": 0.37270419338215225},  # 100 * 0.07 = 7.000000000000001 in floats
    "eccv_r1": {"i2t": 8e-05, "t2i": 0.26426426426426425},  # repr "8e-05": an exponent, shifted as well
    "coco_5k_r5": {"i2t": 0.8, "t2i": 0.6},  # registered, but no task: not published
    "cxc_sts_spearman": {"t2t": -0.125},
}
PROVENANCE = {
    "model": "hf:me/clip",
    "identity": {"spec": "hf:me/clip", "revision": "f" * 40},
    "data": "me/eccv-caption",
    "data_revision": SHA,
    "package": "eccv-caption-hf 0.2.0",
    "precision": "fp32",
    "similarity": "cosine",
}


def write(tmp_path, payload, name="res.json"):
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


def test_one_task_per_headline_number_and_direction():
    ids = [t.id for t in TASKS]
    assert len(ids) == len(set(ids))
    headline = {
        "eccv_map_at_r": ("i2t", "t2i"),
        "eccv_rprecision": ("i2t", "t2i"),
        "eccv_r1": ("i2t", "t2i"),
        "coco_5k_r1": ("i2t", "t2i"),
        "coco_1k_r1": ("i2t", "t2i"),
        "cxc_r1": ("i2t", "t2i"),
        "pmrp": ("i2t", "t2i"),
        "mscoco_fg_r1": ("i2t", "t2i"),
        "flickr30k_fg_r1": ("i2t", "t2i"),
        "cxc_sts_spearman": ("t2t",),
        "cxc_sis_spearman": ("i2i",),
        "cxc_sits_spearman": ("t2i",),
    }
    assert ids == [f"{m}_{d}" for m, dirs in headline.items() for d in dirs]
    assert all(t.config in CONFIGS for t in TASKS)
    assert {t.unit for t in TASKS if t.metric.endswith("spearman")} == {"Spearman's rho (-1 to 1)"}
    assert {t.unit for t in TASKS if not t.metric.endswith("spearman")} == {"percent (0-100)"}
    assert {t.config for t in TASKS if t.metric.startswith("mscoco_fg")} == {"mscoco_fg_captions"}
    assert REGISTRY.get("eccv").configs[0] == "positives"


def test_a_build_registers_only_what_it_holds():
    wheel_only = {t.id for t in registered(["positives", "eccv-i2t-qrels"], ["pm", "cxc_ratings"])}
    assert wheel_only == {f"{m}_{d}" for m in ("eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_r1",
                                               "coco_1k_r1", "cxc_r1") for d in ("i2t", "t2i")}  # fmt: skip
    full = registered(CONFIGS, [])
    assert len(full) == len(TASKS)
    half_fg = {t.id for t in registered(["positives", "mscoco_fg_captions"], [])}
    assert not any("fg" in i for i in half_fg) and "pmrp_t2i" in half_fg  # a config without its gallery: no FG
    text = eval_yaml(registered(["positives", "cxc_ratings"], ["pm"]))
    data = yaml.safe_load(text)
    assert set(data) == {"name", "description", "tasks"}  # evaluation_framework: only the Hub's list may go there
    assert all(set(t) == {"id", "config", "split"} and t["split"] == "test" for t in data["tasks"])
    assert task_ids(text)[0] == "eccv_map_at_r_i2t" and task_ids(text)[-1] == "cxc_sits_spearman_t2i"
    assert "percent (0-100)" in data["description"]


def test_values_are_the_results_in_percent_shifted_in_decimal(tmp_path):
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": PROVENANCE}))
    assert (sub.model_repo, sub.model_from_spec, sub.dataset_repo, sub.dataset_revision) == (
        "me/clip",
        True,
        "me/eccv-caption",
        SHA,
    )
    assert sub.left_out == ["coco_5k_r5/i2t", "coco_5k_r5/t2i"]
    from eccv_metric.hub.eval_results import eval_files

    files = eval_files(sub)
    assert list(files) == [
        ".eval_results/eccv-caption_eccv_map_at_r_i2t.yaml",
        ".eval_results/eccv-caption_eccv_map_at_r_t2i.yaml",
        ".eval_results/eccv-caption_eccv_r1_i2t.yaml",
        ".eval_results/eccv-caption_eccv_r1_t2i.yaml",
        ".eval_results/eccv-caption_cxc_sts_spearman_t2t.yaml",
    ]
    for path, text in files.items():
        (item,) = yaml.safe_load(text)
        metric, direction = path.removeprefix(".eval_results/eccv-caption_").removesuffix(".yaml").rsplit("_", 1)
        given = VALUES[metric][direction]
        want = given if metric.endswith("spearman") else percent(given)
        assert item["value"] == want and type(item["value"]) is float
        assert item["dataset"] == {"id": "me/eccv-caption", "task_id": f"{metric}_{direction}", "revision": SHA}
        assert item["source"] == {
            "url": "https://pypi.org/project/eccv-caption-hf/0.2.0/",
            "name": "eccv-caption-hf 0.2.0",
        }
        assert "model hf:me/clip" in item["notes"] and "fp32" in item["notes"]
    assert yaml.safe_load(files[".eval_results/eccv-caption_eccv_map_at_r_i2t.yaml"])[0]["value"] == 7.0


CARD = """---
license: mit
tags:
- clip
- image-text-retrieval
model-index:
- name: My CLIP
  results:
  - task:
      type: zero-shot-image-classification
    dataset:
      name: ImageNet
      type: imagenet-1k
    metrics:
    - type: accuracy
      value: 63.2
  - task:
      type: image-to-text
    dataset:
      name: ECCV Caption
      type: me/eccv-caption
      config: positives
      split: test
    metrics:
    - type: eccv_map_at_r
      value: 1.0
library_name: transformers
---

# My CLIP

A model card with text that must stay as it is.
"""


def test_model_index_replaces_its_results_and_keeps_the_rest_of_the_card(tmp_path):
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": PROVENANCE}))
    new = updated_card(CARD, sub)
    head, body = new.split("\n---\n", 1)
    assert body == CARD.split("\n---\n", 1)[1]  # the text, byte for byte
    before, after = yaml.safe_load(CARD.split("\n---\n")[0][4:]), yaml.safe_load(head[4:])
    # the same keys, the others in their order (huggingface_hub's card API writes model-index last)
    assert [k for k in after if k != "model-index"] == [k for k in before if k != "model-index"]
    assert {k: v for k, v in after.items() if k != "model-index"} == {
        k: v for k, v in before.items() if k != "model-index"
    }
    (model,) = after["model-index"]
    assert model["name"] == "My CLIP"
    found = {
        (r["task"]["type"], r["dataset"]["type"], m["type"]): m["value"] for r in model["results"] for m in r["metrics"]
    }
    assert found[("zero-shot-image-classification", "imagenet-1k", "accuracy")] == 63.2  # another dataset: kept
    assert found[("image-to-text", "me/eccv-caption", "eccv_map_at_r")] == 7.0  # the same result: replaced
    assert found[("text-to-image", "me/eccv-caption", "eccv_r1")] == percent(0.26426426426426425)
    assert found[("sentence-similarity", "me/eccv-caption", "cxc_sts_spearman")] == -0.125
    assert len(found) == 6
    bare = updated_card("# Just text\n", sub)
    assert bare.endswith("---\n# Just text\n") and "model-index" in bare
    assert updated_card(None, sub).startswith("---\nmodel-index:\n- name: clip\n")


@pytest.mark.parametrize(
    ("change", "args", "words"),
    [
        (lambda r: r.pop("provenance"), [], "holds no provenance (results scored from --scores"),
        (lambda r: r["provenance"].pop("model"), [], "its provenance names no model"),
        (lambda r: r["provenance"].pop("package"), [], "names no eccv-caption-hf version"),
        (lambda r: None, ["--model-repo", "clip"], "--model-repo 'clip' is not a Hub repo id"),
        (lambda r: None, ["--dataset-repo", "a/b/c"], "--dataset-repo 'a/b/c' is not a Hub repo id"),
        (lambda r: None, ["--dataset-repo", "me/other"], "was scored on the Hub dataset me/eccv-caption, not"),
        (lambda r: r.update(eccv_f1={"i2t": 0.5}), [], "'eccv_f1' is not a metric the benchmark registers"),
        (lambda r: r["eccv_r1"].update(t2t=0.5), [], "eccv_r1 has no direction 't2t' (it has i2t, t2i)"),
        (lambda r: r["eccv_r1"].update(i2t=53.2), [], "eccv_r1/i2t = 53.2 is not a fraction in [0, 1]"),
        (lambda r: r["eccv_r1"].update(i2t=float("nan")), [], "eccv_r1/i2t = nan is not a fraction"),
        (lambda r: r["provenance"].update(model="open_clip:ViT-B-32/openai"), [], "give --model-repo ORG/MODEL"),
        (lambda r: r["provenance"].update(data="/data/eccv", data_revision=None), [], "give --dataset-repo,"),
        (lambda r: [r.pop(m) for m in ("eccv_map_at_r", "eccv_r1", "cxc_sts_spearman")], [], "none of the"),
    ],
)
def test_bad_inputs_are_one_line_in_flag_words(tmp_path, capsys, change, args, words):
    results = json.loads(json.dumps({**VALUES, "provenance": PROVENANCE}))
    change(results)
    path = write(tmp_path, results)
    assert main(["push-results", str(path), *args, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and words in err, err


def test_a_local_build_needs_the_repo_it_was_pushed_to(tmp_path, capsys):
    local = {**PROVENANCE, "data": "/home/me/eccv_caption_hf", "data_revision": None, "model": "hf:/models/clip"}
    path = write(tmp_path, {**VALUES, "provenance": local})
    args = ["push-results", str(path), "--model-repo", "me/clip", "--dataset-repo", "me/eccv-caption", "--dry-run"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("not published (no task of the benchmark): coco_5k_r5/i2t, coco_5k_r5/t2i\n")
    assert "would open a pull request on model me/clip, one commit of 5 files:" in out
    assert "revision:" not in out  # a local build has no Hub revision
