"""The Hub benchmark's tasks (eval.yaml) and a results file as eval results, checked without any network.

The Hub side (commits, pull requests, details, the leaderboard, failures) runs against the local fake Hub in
tests/integration/test_hub_results.py and test_hub_board.py; here: which tasks exist, the values written
(percent, by an independent decimal reading), the file names, the entries' checks, the model card kept as it was
but for its model-index, and every refusal of ``push-results`` before anything is sent (one line, in flag words).
"""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from eccv_caption_dataset.builder import CONFIGS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.cli.main import main
from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.eval_results import entry_problems
from eccv_metric.hub.eval_results import eval_files
from eccv_metric.hub.eval_results import file_name
from eccv_metric.hub.eval_results import updated_card
from eccv_metric.hub.eval_tasks import BY_ID
from eccv_metric.hub.eval_tasks import EVALUATION_FRAMEWORKS
from eccv_metric.hub.eval_tasks import TASKS
from eccv_metric.hub.eval_tasks import eval_yaml
from eccv_metric.hub.eval_tasks import registered
from eccv_metric.hub.eval_tasks import task_ids
from eccv_metric.hub.eval_tasks import value_problem
from eccv_metric.hub.submission import read_submission
from tests.unit.brute import percent

SHA = "0123456789abcdef0123456789abcdef01234567"
URL = "https://huggingface.co/datasets/me/details_me__clip/tree/" + "a" * 40
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
    "date": "2026-08-25T10:30:00Z",
}


def canonical_sha256(payload: object) -> str:
    """The digest a results file records, recomputed here from its definition (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sealed(payload: dict, per_query: dict | None = None) -> dict:
    """A results payload with the digests evaluate records (its numbers, its per-query values, every other field of
    its provenance), recomputed here from their definition."""
    numbers = {k: v for k, v in payload.items() if k != "provenance"}
    provenance = {k: v for k, v in payload["provenance"].items() if k != "digests"}
    digests = {"results": canonical_sha256(numbers), "provenance": canonical_sha256(provenance)}
    if per_query is not None:
        digests["per_query"] = canonical_sha256(per_query)
    return {**numbers, "provenance": {**provenance, "digests": digests}}


def write(tmp_path, payload, name="res.json"):
    """The payload as a file; a results payload whose provenance has no digests sealed as evaluate seals it."""
    provenance = payload.get("provenance")
    if isinstance(provenance, dict) and "digests" not in provenance:
        payload = sealed(payload)
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


def test_a_build_registers_only_what_it_holds_with_a_framework_of_the_hubs_list():
    wheel_only = {t.id for t in registered(["positives", "eccv-i2t-qrels"], ["pm", "cxc_ratings"])}
    assert wheel_only == {f"{m}_{d}" for m in ("eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_r1",
                                               "coco_1k_r1", "cxc_r1") for d in ("i2t", "t2i")}  # fmt: skip
    full = registered(CONFIGS, [])
    assert len(full) == len(TASKS)
    half_fg = {t.id for t in registered(["positives", "mscoco_fg_captions"], [])}
    assert not any("fg" in i for i in half_fg) and "pmrp_t2i" in half_fg  # a config without its gallery: no FG
    text = eval_yaml(registered(["positives", "cxc_ratings"], ["pm"]))
    data = yaml.safe_load(text)
    # the spec's fields: name, description, evaluation_framework (one of huggingface.js eval.ts's list), tasks
    assert list(data) == ["name", "description", "evaluation_framework", "tasks"]
    assert data["evaluation_framework"] == "mteb" and len(EVALUATION_FRAMEWORKS) == 30
    assert all(set(t) == {"id", "config", "split"} and t["split"] == "test" for t in data["tasks"])
    assert task_ids(text)[0] == "eccv_map_at_r_i2t" and task_ids(text)[-1] == "cxc_sits_spearman_t2i"
    assert "percent (0-100)" in data["description"]
    with pytest.raises(ValueError, match="'eccv-caption' is not on the Hub's list"):
        eval_yaml(full, framework="eccv-caption")  # refused before anything is written, never sent


def test_values_are_the_results_in_percent_shifted_in_decimal(tmp_path):
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": PROVENANCE}))
    assert (sub.model_repo, sub.model_from_spec, sub.dataset_repo, sub.dataset_revision) == (
        "me/clip",
        True,
        "me/eccv-caption",
        SHA,
    )
    assert sub.left_out == ["coco_5k_r5/i2t", "coco_5k_r5/t2i"]
    files = eval_files(sub, URL)
    assert list(files) == [
        ".eval_results/me--eccv-caption--eccv_map_at_r_i2t.yaml",
        ".eval_results/me--eccv-caption--eccv_map_at_r_t2i.yaml",
        ".eval_results/me--eccv-caption--eccv_r1_i2t.yaml",
        ".eval_results/me--eccv-caption--eccv_r1_t2i.yaml",
        ".eval_results/me--eccv-caption--cxc_sts_spearman_t2t.yaml",
    ]
    for path, text in files.items():
        (item,) = yaml.safe_load(text)
        metric, direction = path.removeprefix(".eval_results/me--eccv-caption--").removesuffix(".yaml").rsplit("_", 1)
        given = VALUES[metric][direction]
        want = given if metric.endswith("spearman") else percent(given)
        assert item["value"] == want and type(item["value"]) is float
        assert item["dataset"] == {"id": "me/eccv-caption", "task_id": f"{metric}_{direction}", "revision": SHA}
        assert item["date"] == "2026-08-25T10:30:00Z" and "date: '2026-08-25T10:30:00Z'" in text  # a string
        assert item["source"] == {"url": URL, "name": "Per-query details (eccv-caption-hf 0.2.0)"}
        assert item["notes"] == "fp32, cosine similarity, model revision ffffffffffff"
    assert yaml.safe_load(files[".eval_results/me--eccv-caption--eccv_map_at_r_i2t.yaml"])[0]["value"] == 7.0
    without = yaml.safe_load(eval_files(sub, None)[".eval_results/me--eccv-caption--eccv_r1_i2t.yaml"])[0]
    assert without["source"]["url"] == "https://github.com/naver-ai/eccv-caption"  # --no-details: a page that exists


def test_two_benchmarks_never_share_a_file():
    """Issue 53: the files were named from the dataset's name alone, so me/ and other/eccv-caption collided."""
    task = BY_ID["eccv_map_at_r_i2t"]
    names = {file_name(repo, task) for repo in ("me/eccv-caption", "other/eccv-caption", "me/eccv-caption-v2")}
    assert len(names) == 3
    assert file_name("me/eccv-caption", task) == ".eval_results/me--eccv-caption--eccv_map_at_r_i2t.yaml"
    # a repo id holds no "--": owner, name and task read back one way only
    assert file_name("a-b/c", task) != file_name("a/b-c", task)


def test_notes_are_short_and_never_carry_a_local_path(tmp_path):
    local = {**PROVENANCE, "model": "hf:/tmp/models/clip", "data": "/home/me/build", "data_revision": None}
    local |= {"identity": {"spec": "hf:/tmp/models/clip", "revision": "/tmp/x"}, "similarity": "cos /etc/passwd"}
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": local}), "me/clip", "me/eccv-caption")
    for text in eval_files(sub, URL).values():
        (item,) = yaml.safe_load(text)
        assert "/tmp" not in text and "/home" not in text and "/etc" not in text
        assert item["notes"] == "fp32" and len(item["notes"]) <= 80
    assert sub.public_spec == "hf:(a local model folder)"
    assert "no dataset.revision" in " ".join(sub.notes)  # a local build whose files its provenance does not record


@pytest.mark.parametrize(
    ("protocol", "words"),
    [
        (
            {"name": "rerank", "rerank_k": 128, "score_rule": "itm+itc", "coco_1k": "restrict"},
            "rerank top 128 by itm+itc",
        ),
        (
            {"name": "rerank", "rerank_k": 16, "score_rule": "itm", "coco_1k": "within"},
            "rerank top 16 by itm, COCO 1K reranked within each fold",
        ),
        ({"name": "exhaustive", "rerank_k": None, "score_rule": "itm", "coco_1k": None}, "every pair by itm"),
        ({"name": "rerank", "rerank_k": "128; rm -rf /", "score_rule": "itm"}, ""),  # not a value of ours: left out
    ],
)
def test_a_pair_scorers_notes_say_its_protocol(tmp_path, protocol, words):
    """Two runs of one pair scorer, reranked or every pair, published the same notes; the protocol says which."""
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": {**PROVENANCE, "protocol": protocol}}))
    (item,) = yaml.safe_load(eval_files(sub, URL)[".eval_results/me--eccv-caption--eccv_r1_i2t.yaml"])
    assert item["notes"] == ", ".join(filter(None, ["fp32, cosine similarity, model revision ffffffffffff", words]))


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda e: e["source"].update(url=None), "[0].source.url: expected a URL string, received null"),
        (lambda e: e["dataset"].pop("task_id"), "[0].dataset.task_id: expected string, received null"),
        (lambda e: e.update(value=float("nan")), "[0].value: expected a finite number"),
        (lambda e: e.update(value="32.5"), "[0].value: expected a finite number, received str"),
        (lambda e: e.update(date=20260825), "[0].date: expected an ISO-8601 date string"),
        (lambda e: e["dataset"].update(id="eccv-caption"), "[0].dataset.id: a Hub dataset id"),
        (lambda e: e.update(notes=["a"]), "[0].notes: expected string, received list"),
    ],
)
def test_an_entry_the_spec_refuses_is_named(tmp_path, change, where):
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": PROVENANCE}))
    (item,) = yaml.safe_load(next(iter(eval_files(sub, URL).values())))
    assert entry_problems(item) == []
    change(item)
    assert any(p.startswith(where) for p in entry_problems(item)), entry_problems(item)


def test_a_value_read_back_out_of_its_range_is_named():
    pct, rho = BY_ID["eccv_map_at_r_i2t"], BY_ID["cxc_sts_spearman_t2t"]
    assert value_problem(pct, 32.5) is None and value_problem(rho, -0.5) is None
    assert value_problem(pct, 250.0) == "250 is outside [0, 100] (percent (0-100))"
    assert value_problem(pct, float("nan")) == "nan is not a finite number"
    assert value_problem(rho, 1.5) == "1.5 is outside [-1, 1] (Spearman's rho (-1 to 1))"
    assert value_problem(pct, "32") == "'32' is not a number"
    assert value_problem(pct, True) == "True is not a number"


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
    new = updated_card(CARD, sub, URL)
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
    bare = updated_card("# Just text\n", sub, URL)
    assert bare.endswith("---\n# Just text\n") and "model-index" in bare
    assert updated_card(None, sub, URL).startswith("---\nmodel-index:\n- name: clip\n")


@pytest.mark.parametrize(
    "card",
    [
        "---\nlicense: mit\ntags: [clip\n---\n# x\n",  # a flow sequence never closed: yaml.parser.ParserError
        "---\nlicense: mit\n  bad: indent\n---\n# x\n",  # yaml.scanner.ScannerError
        "---\nmodel-index: 3\n---\n# x\n",  # a model-index of another shape
    ],
)
def test_a_card_whose_yaml_cannot_be_read_is_one_line(tmp_path, card):
    """Issue 53: broken YAML front matter ended in a yaml.parser.ParserError traceback (only ValueError was caught)."""
    sub = read_submission(write(tmp_path, {**VALUES, "provenance": PROVENANCE}))
    with pytest.raises(EvaluationError) as err:
        updated_card(card, sub, URL)
    line = str(err.value)
    assert "\n" not in line and line.startswith("the model card README.md of me/clip has YAML metadata")
    assert line.endswith("fix the YAML between its '---' lines, or drop model_index= to publish the eval results alone")


def test_digests_tell_an_edited_file_and_another_runs_per_query_values(tmp_path):
    per_query = {"eccv_map_at_r": {"i2t": {"query_ids": [1, 2], "values": [0.04, 0.1], "aggregate": "mean"}}}
    means = {"eccv_map_at_r": {"i2t": 0.07}}
    payload = sealed({**means, "provenance": PROVENANCE}, per_query)
    res = write(tmp_path, payload)
    pq = write(tmp_path, per_query, "pq.json")
    sub = read_submission(res, per_query=pq)
    assert sub.per_query == per_query
    edited = write(tmp_path, {**payload, "eccv_map_at_r": {"i2t": 0.08}}, "e.json")
    with pytest.raises(EvaluationError, match="was changed after the run: its numbers no longer match"):
        read_submission(edited)
    other = write(tmp_path, {"eccv_map_at_r": {"i2t": {"query_ids": [1, 2], "values": [0.04, 0.1]}}}, "o.json")
    with pytest.raises(
        EvaluationError, match=r"holds the per-query values of another run than .* \(its digest differs"
    ):
        read_submission(res, per_query=other)
    # a run that wrote no per-query file (no digest of them): the per-query values given must give its numbers
    plain = write(tmp_path, {**means, "provenance": PROVENANCE}, "plain.json")
    assert read_submission(plain, per_query=other).per_query is not None
    shifted = write(tmp_path, {"eccv_map_at_r": {"i2t": {"query_ids": [1, 2], "values": [0.05, 0.1]}}}, "s.json")
    with pytest.raises(EvaluationError, match="eccv_map_at_r/i2t values give 0.07500000000000001, the results 0.07"):
        read_submission(plain, per_query=shifted)
    missing = write(tmp_path, {"eccv_r1": {"i2t": {"query_ids": [1], "values": [1.0]}}}, "m.json")
    with pytest.raises(EvaluationError, match="has no per-query values of eccv_map_at_r/i2t, a published number"):
        read_submission(plain, per_query=missing)


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.update(model="hf:me/clip2"),  # results of me/clip re-labelled as another model's
        lambda p: p.update(date="2027-01-01T00:00:00Z"),
        lambda p: p["identity"].update(revision="e" * 40),
        lambda p: p.update(data_revision="f" * 40),
        lambda p: p.update(protocol={"name": "rerank", "rerank_k": 128, "score_rule": "itm"}),
        lambda p: p.update(precision="fp16"),
    ],
)
def test_a_relabelled_provenance_is_caught(tmp_path, change):
    """Issue 61: the provenance's model and date were outside the digest, so an edited file was published as the
    run of another model or day. Every field of the provenance is sealed now."""
    payload = json.loads(json.dumps(sealed({**VALUES, "provenance": PROVENANCE})))
    assert read_submission(write(tmp_path, payload, "sealed.json")).model_repo == "me/clip"
    change(payload["provenance"])
    with pytest.raises(EvaluationError) as err:
        read_submission(write(tmp_path, payload))
    assert str(err.value).endswith(
        "res.json was changed after the run: its provenance (the model, its revision, the data, the date...) no "
        "longer match the digest the run recorded; publish the file evaluate wrote (or run evaluate again)"
    )


def test_a_file_whose_digests_seal_no_provenance_is_run_again(tmp_path):
    """A results file of an earlier version (digests of its numbers only) or with its digests removed: nothing
    vouches for the model it names, so it is refused with the step that makes a sealed one."""
    numbers = {k: v for k, v in VALUES.items()}
    old = {**numbers, "provenance": {**PROVENANCE, "digests": {"results": canonical_sha256(numbers)}}}
    for payload in (old, {**numbers, "provenance": {**PROVENANCE, "digests": {}}}):
        with pytest.raises(EvaluationError, match="records no digest of its provenance") as err:
            read_submission(write(tmp_path, payload))
        assert str(err.value).endswith("run the same evaluate command again (cached embeddings and pair scores "
                                       "make it a re-score) and publish the file it writes")  # fmt: skip


def test_results_of_another_model_are_refused_unless_said(tmp_path, capsys):
    """Issue 61: results whose provenance names hf:me/clip were published on me/clip2 with no word. Refused in one
    line naming both; --other-model publishes them, the entries' notes naming the model that was run."""
    path = write(tmp_path, {**VALUES, "provenance": PROVENANCE})
    assert main(["push-results", str(path), "--model-repo", "me/clip2", "--no-details", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"error: {path} holds the results of hf:me/clip (the model repo me/clip), not of --model-repo me/clip2: "
        "publish them to me/clip (drop --model-repo), or give --other-model to publish them on me/clip2, the "
        "entries' notes naming the model that was run\n"
    )
    assert read_submission(path, "Me/Clip").model_repo == "Me/Clip"  # the Hub's ids are case-insensitive
    sub = read_submission(path, "me/clip2", other_model=True)
    notes = {yaml.safe_load(text)[0]["notes"] for text in eval_files(sub, URL).values()}
    assert notes == {"fp32, cosine similarity, model revision ffffffffffff, results of hf:me/clip, published on "
                     "me/clip2"}  # fmt: skip
    assert not read_submission(path, "me/clip", other_model=True).other_model  # its own repo: nothing to say


@pytest.mark.parametrize(
    ("change", "args", "words"),
    [
        (lambda r: r.pop("provenance"), [], "holds no provenance (results scored from --scores"),
        (lambda r: r["provenance"].pop("model"), [], "its provenance names no model (results scored from --scores"),
        (lambda r: r["provenance"].pop("package"), [], "names no eccv-caption-hf version"),
        (lambda r: r["provenance"].update(partial=True), [], "was scored with --partial (only the queries its input"),
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
        (lambda r: None, [], "give --per-query (the file of `evaluate --per-query` in the same run), or --no-details"),
        (lambda r: None, ["--no-details", "--details-repo", "me/d"], "--details-repo names where the per-query"),
    ],
)
def test_bad_inputs_are_one_line_in_flag_words(tmp_path, capsys, change, args, words):
    results = json.loads(json.dumps({**VALUES, "provenance": PROVENANCE}))
    change(results)
    path = write(tmp_path, results)
    if "--no-details" not in args and "give --per-query" not in words:
        args = [*args, "--no-details"]
    assert main(["push-results", str(path), *args, "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ") and words in err, err


def test_a_local_build_needs_the_repo_it_was_pushed_to(tmp_path):
    local = {**PROVENANCE, "data": "/home/me/eccv_caption_hf", "data_revision": None, "model": "hf:/models/clip"}
    path = write(tmp_path, {**VALUES, "provenance": local})
    with pytest.raises(
        EvaluationError, match="scored on the local folder '/home/me/eccv_caption_hf': give dataset_repo="
    ):
        read_submission(path, "me/clip")
    sub = read_submission(path, "me/clip", "me/eccv-caption")
    assert sub.left_out == ["coco_5k_r5/i2t", "coco_5k_r5/t2i"]  # registered metrics, but no task: not published
    files = eval_files(sub, URL)
    assert len(files) == 5 and not any("revision:" in text for text in files.values())
    assert not any("/home/me" in text or "/models/clip" in text for text in files.values())
    assert "no dataset.revision: " in " ".join(sub.notes)  # a local build whose digests the results do not record
