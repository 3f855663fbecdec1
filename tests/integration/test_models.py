"""``eccv-caption evaluate --model hf:<tiny local CLIP> --data <build>`` on a real build whose 5,000 images have
pixels (synthetic 8x8 PNGs, distinct per image, as the MTEB tests make them; captions, positives, COCO
categories and CxC ratings are the real ones): every default metric of every available benchmark, the
FG benchmarks skipped with their reason (their 26,244 unlabeled2017 distractors have no pixels here),
the results JSON with its provenance read by ``leaderboard``, and the numbers equal to scoring the saved
embeddings through the existing ``--image-embeddings`` path.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from eccv_metric import Embeddings
from eccv_metric import GroundTruth
from eccv_metric import Resources
from eccv_metric import evaluate
from eccv_metric.cli.main import main
from eccv_metric.hub.eval_results import eval_files
from eccv_metric.hub.submission import read_submission
from tests.unit.brute import percent
from tests.unit.model_world import tiny_clip


@pytest.fixture(scope="module")
def image_build(pixel_build):
    """The session's build whose images all have pixels (tests/integration/conftest.py)."""
    return pixel_build


def test_evaluate_model_cli_on_a_built_folder(image_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    clip = tiny_clip(tmp_path / "clip")
    res, emb = tmp_path / "res.json", tmp_path / "emb"
    args = ["evaluate", "--model", f"hf:{clip}", "--data", str(image_build), "--batch-size", "256", "--workers", "1"]
    # the official defaults and PMRP (the full default run, every benchmark, is the README's example: ~1-2 min)
    run = [*args, "--benchmarks", "eccv_caption", "pm", "cxc_sits", "--n-resamples", "20", "--quiet"]
    pq = tmp_path / "per_query.json"
    assert main([*run, "-o", str(res), "--per-query", str(pq), "--save-embeddings", str(emb)]) == 0
    written = json.loads(res.read_text())
    provenance = written.pop("provenance")
    assert provenance["model"] == f"hf:{clip}" and provenance["identity"]["weights"]
    assert {"data", "data_revision", "package", "device", "precision", "batch_size", "seconds"} <= set(provenance)
    assert provenance["date"].endswith("Z") and set(provenance["digests"]) == {"results", "per_query", "provenance"}
    import hashlib  # the local build's files the run read, by their sha256: what push-results matches on the Hub

    assert provenance["data_files"] and all(
        hashlib.sha256((image_build / path).read_bytes()).hexdigest() == digest
        for path, digest in provenance["data_files"].items()
    )
    assert set(provenance["data_files"]) <= {
        p.relative_to(image_build).as_posix() for p in image_build.glob("data/*/*")
    }
    assert set(written) == {"coco_1k_r1", "coco_5k_r1", "cxc_r1", "eccv_r1", "eccv_map_at_r", "pmrp",
                            "cxc_sits_spearman", "cxc_sits_spearman_std"}  # fmt: skip
    # the saved embeddings through the existing path give the same numbers
    resources = Resources(GroundTruth.from_dataset(image_build), cxc_source=image_build)
    saved = [np.load(emb / "coco_5k" / f"{n}.npy") for n in ("image_embeddings", "caption_embeddings")]
    again = evaluate(Embeddings(*saved), list(written), resources=resources, n_resamples=20).means()
    assert again == written
    # leaderboard reads the results file, provenance and all
    capsys.readouterr()
    assert main(["leaderboard", "--with", str(res)]) == 0
    assert f"hf:{clip} ranks (of 26)" in capsys.readouterr().out  # the row is named by its model
    # push-results publishes it (a local build: the repo it was pushed to is given, its files checked against the
    # build's when sent: tests/integration/test_hub_results.py); the files it writes
    sub = read_submission(res, "me/tiny-clip", "me/eccv-caption", pq)
    assert sub.local_build == provenance["data_files"] and sub.per_query == json.loads(pq.read_text())
    files = {path: yaml.safe_load(text) for path, text in eval_files(sub, None).items()}
    tasks = {t["id"] for t in yaml.safe_load((image_build / "eval.yaml").read_text())["tasks"]}
    published = {f"{m}_{d}" for m in written for d in written[m] if f"{m}_{d}" in tasks}
    assert len(files) == len(published) == 13  # the official five and PMRP both ways, CxC SITS rho (std: no task)
    for path, (entry,) in files.items():
        task = entry["dataset"]["task_id"]
        metric, direction = task.rsplit("_", 1)
        value = written[metric][direction]
        assert path == f".eval_results/me--eccv-caption--{task}.yaml" and task in published
        assert entry["value"] == (value if metric.endswith("spearman") else percent(value))  # percent
        assert entry["dataset"] == {"id": "me/eccv-caption", "task_id": task}  # a local build: no revision
    # compare reads the per-query file (PMRP's queries from the build's categories, as the model run read them)
    assert main(["compare", str(pq), str(pq), "--n-resamples", "50", "--ground-truth", str(image_build)]) == 0
    assert "eccv_map_at_r" in capsys.readouterr().out
    # a second run encodes nothing
    assert main([*args, "--benchmarks", "coco_5k", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert all(item["cached"] for item in second["provenance"]["items"].values())
    assert second["coco_5k_r1"] == written["coco_5k_r1"]
    # a benchmark whose items the build lacks: one line naming it, the config and the flag
    assert main([*args, "--benchmarks", "mscoco_fg"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    why = f"the --data folder {image_build} has no mscoco_fg_gallery config (`eccv-caption build` writes it)"
    assert err == f"error: mscoco_fg: {why}"
