"""``verify --from-hub``: two tiny models (a dual encoder, tests/unit/model_world.py's CLIP, and a pair scorer,
tests/unit/pair_world.py's BLIP reranking its own ITC) run on the synthetic world's benchmark, pushed to the fake Hub
with their evidence (large files through the LFS batch API, as huggingface_hub sends them), every entry recomputed
equal; then each way a published number can be wrong, caught and named in one line, never equal: a forged value,
an embedding row changed (its manifest left, or forged too), evidence of another dtype, shape or item order, a file
missing, a ground truth at another revision, no network; ``--reencode 50`` passes for the model that made the
evidence and fails for the same architecture with another seed; the verify page's Hub lines run as written. The
runs and their push: tests/integration/published_world.py (shared with test_explore_hub.py). In-process
(``main([...])``, the fake Hub in a thread; tests/integration/hub_client.py points huggingface_hub at it)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from huggingface_hub import CommitOperationAdd
from huggingface_hub import HfApi

from eccv_metric.cli.main import main
from tests.docs_blocks import DOCS
from tests.docs_blocks import bash_lines
from tests.docs_blocks import cli_calls
from tests.integration.fake_hub_store import FAKE_COMMIT
from tests.integration.hub_client import offline
from tests.integration.published_world import as_another
from tests.integration.published_world import board_rows
from tests.integration.published_world import forge_manifest
from tests.integration.published_world import forger
from tests.integration.published_world import npy
from tests.integration.published_world import npy_bytes
from tests.integration.published_world import pushed_hub
from tests.integration.published_world import republish
from tests.integration.published_world import resealed
from tests.integration.published_world import tree_of
from tests.unit.model_world import tiny_clip

EMB = "evidence/coco_5k/image_embeddings.npy"


@pytest.fixture(scope="module")
def runs(published_runs):
    """The world's benchmark folder, the two models, and each model's run: results, per-query values, evidence."""
    return published_runs


@pytest.fixture()
def hub(runs, tmp_path, monkeypatch, capsys):
    """The fake Hub holding the benchmark me/world and the model repos me/clip, me/blip; each model's results
    pushed (--direct) with their evidence; this process's huggingface_hub pointed at it."""
    with pushed_hub(runs, tmp_path, monkeypatch) as fake:
        capsys.readouterr()
        yield fake


def verify(hub, capsys, *args: str, model: str = "me/clip") -> tuple[int, list[str], str]:
    """``verify --from-hub``: exit status, stdout lines, stderr."""
    code = main(["verify", "--from-hub", model, "--dataset-repo", "me/world", "-q", *args])
    printed = capsys.readouterr()
    return code, printed.out.splitlines(), printed.err


def test_both_models_are_recomputed_equal_from_their_published_evidence(hub, runs, capsys):
    for model in ("me/clip", "me/blip"):
        code, lines, err = verify(hub, capsys, model=model)
        assert code == 0, (lines, err)
        assert lines[0].startswith(f"{model} on me/world: evidence from {model.replace('me/', 'me/details_me__')}@")
        assert len(lines) == 14 and lines[-1] == "12 numbers: 12 equal"
        assert all(" equal (" in line for line in lines[1:-1]), lines
    tree = tree_of(hub, "me/details_me__blip")
    manifest = json.loads(tree["evidence/evidence.json"])
    assert [(e["name"], e["kind"]) for e in manifest["inputs"]] == [("coco_5k.rerank", "twostage")]
    assert {f"evidence/{p}" for p in manifest["files"]} <= set(tree)
    uploads = [path for method, path, _ in hub.log if method == "POST" and path.endswith(".git/info/lfs/objects/batch")]
    assert "/datasets/me/details_me__clip.git/info/lfs/objects/batch" in uploads  # the evidence went through LFS
    card = tree_of(hub, "me/details_me__clip")["README.md"].decode()
    assert "`eccv-caption verify --from-hub me/clip --dataset-repo me/world`" in card
    res, pq, _ = runs["clip"]  # the dry run lists the evidence as the details commit sends it
    push = ["push-results", res, "--per-query", pq, "--dataset-repo", "me/world", "--model-repo", "me/clip",
            "--direct", "--details-repo", "me/fresh"]  # fmt: skip
    assert main([*push, "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert main(push) == 0
    sent = [c for c in hub.store.commits if c["repo"] == "me/fresh"][-1]["files"]
    listing = said.split(
        "would create and commit to dataset me/fresh, one commit of the per-query values behind the "
        "numbers and the evidence (5,312 bytes): 19 added\n"
    )[1].split("\n---")[0]
    assert sorted(line.split()[1] for line in listing.splitlines()) == sorted(sent)
    assert "evidence/evidence.json" in sent and "  add evidence/coco_5k/image_embeddings.npy (768 bytes)" in listing


def test_a_forged_or_damaged_entry_is_named_never_equal(hub, runs, capsys, monkeypatch):
    pristine, published = dict(tree_of(hub, "me/details_me__clip")), dict(tree_of(hub, "me/clip"))
    emb = npy(pristine[EMB])

    def caught(words: str, details: dict, entries: dict | None = None, status: str = "not recomputable") -> None:
        republish(hub, details, entries or published)
        done, lines, err = verify(hub, capsys)
        assert done == 1, (lines, err)
        assert lines[-1] != "12 numbers: 12 equal" and any(status in line and words in line for line in lines), lines

    entry = ".eval_results/me--world--eccv_r1_t2i.yaml"
    item = yaml.safe_load(published[entry])
    item[0]["value"] += 5.0
    caught("recomputed 8.333333333333332 (-5)", pristine, {**published, entry: yaml.safe_dump(item).encode()},
           status="differs")  # fmt: skip
    changed = emb.copy()
    changed[3] = -changed[3]
    caught("evidence/coco_5k/image_embeddings.npy is not the file the run wrote", {**pristine, EMB: npy_bytes(changed)})
    forged = {**pristine, EMB: npy_bytes(changed)}
    forge_manifest(forged, EMB)
    caught("per-query values differ", forged, status="differs")
    caught("holds float64, evidence.json records float32 (dtype)", {**pristine, EMB: npy_bytes(emb.astype(np.float64))})
    caught("has shape (19, 8), evidence.json records (20, 8) (shape)", {**pristine, EMB: npy_bytes(emb[1:])})
    ids = "evidence/coco_5k/image_ids.npy"
    reordered = {**pristine, EMB: npy_bytes(emb[::-1].copy()), ids: npy_bytes(npy(pristine[ids])[::-1].copy())}
    forge_manifest(reordered, EMB)
    forge_manifest(reordered, ids)
    caught("image_ids are not in the benchmark's item order", reordered)
    missing = {p: d for p, d in pristine.items() if p != "evidence/coco_5k/caption_embeddings.npy"}
    caught("evidence/coco_5k/caption_embeddings.npy is missing", missing)
    moved = {p: d.replace(FAKE_COMMIT.encode(), b"f" * 40) for p, d in published.items()}
    caught(f"names me/world at revision {'f' * 40}, its evidence was scored at {FAKE_COMMIT}", pristine, moved)
    offline(monkeypatch)
    done, lines, err = verify(hub, capsys)
    assert done == 2 and lines == [] and err.count("\n") == 1, err
    assert err.startswith("error: verify --from-hub me/clip failed: could not reach the Hub at http://127.0.0.1:")
    assert err.rstrip().endswith("(and HF_ENDPOINT, HF_HUB_OFFLINE), then run verify again")


def test_the_verify_pages_hub_lines_run_on_the_fake_hub(hub, runs, capsys):
    """docs/guides/verify.md's ``--from-hub`` lines as written, its repos named as here: every number equal, the
    model that made the evidence within the tolerance (--reencode 50)."""
    names = {"hf:you/your-clip": f"hf:{runs['models']['clip']}", "you/your-clip": "me/clip",
             "you/eccv-caption": "me/world"}  # fmt: skip
    lines = [line for line in bash_lines((DOCS / "guides" / "verify.md").read_text()) if "--from-hub" in line]
    assert len(lines) == 2
    for line in lines:
        for name, here in names.items():
            line = line.replace(name, here)
        (argv,) = cli_calls(line)
        assert main(argv) == 0, capsys.readouterr()
        printed = capsys.readouterr().out.splitlines()
        assert printed[-1].startswith("12 numbers: 12 equal"), printed
    assert "reencode coco_5k images: 20 again, largest error" in "\n".join(printed)
    assert printed[-1] == "12 numbers: 12 equal; re-encoded: 2 within tolerance, 0 outside"


def test_reencode_tells_the_model_that_made_the_evidence_from_another_seed(hub, runs, capsys, tmp_path):
    other = tiny_clip(tmp_path / "clip_seed1", seed=1)
    code, lines, _ = verify(hub, capsys, "--reencode", "50", "--model", f"hf:{other}")
    assert code == 1 and lines[-1] == "12 numbers: 12 equal; re-encoded: 0 within tolerance, 2 outside", lines
    assert all("OUTSIDE the tolerance 0.0001" in line for line in lines if line.startswith("reencode"))
    blip = runs["models"]["blip"]
    code, lines, err = verify(hub, capsys, "--reencode", "50", "--model", f"hf:{blip}", model="me/blip")
    assert code == 0 and "reencode coco_5k.rerank pair scores: 50 again" in "\n".join(lines), (lines, err)


def by_hand(path: str, data: bytes, repo: str = "me/clip") -> None:
    """A commit of one file to a model repo, made by hand (its owner's token)."""
    HfApi(token="hf_me").create_commit(repo, [CommitOperationAdd(path, data)], commit_message="by hand")


def plus(data: bytes, points: float) -> bytes:
    """An .eval_results file with every value raised by ``points``."""
    return yaml.safe_dump([{**item, "value": item["value"] + points} for item in yaml.safe_load(data)]).encode()


def test_the_leaderboard_marks_what_it_trusts(hub, runs, capsys, monkeypatch, tmp_path):
    """Issue 61, item 3: every Hub row marked by what its numbers rest on, from the library's verify of its entries.
    me/clip has a hand-added duplicate (60, no source): its recomputed entry is the one shown and ranked, both files
    named; spam/twin republishes me/clip's evidence as its own (its results.json sealed again), and spam/copy2 too
    under a manifest of its own (a key added, the model it names changed, every digest and seal computed again):
    all three recomputed, all flagged as sharing the same arrays; spam/copy points at me/clip's details at +5,
    spam/relabel at a copy whose provenance names hf:me/clip: number only; spam/broken's copy has one embedding row
    changed: not recomputable; me/blip with one value forged: differs; both left out of the significance lines,
    which read the entries the rows show, each pair compared on the benchmark's own ground truth at its revision
    (the package's 5K split knows none of the world's ids). --verified-only keeps the recomputed rows; a second run
    scores nothing again (each details commit's recomputation kept), yet a value changed since is caught."""
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    clip, details = dict(tree_of(hub, "me/clip")), dict(tree_of(hub, "me/details_me__clip"))
    dup = [{"dataset": {"id": "me/world", "task_id": "eccv_map_at_r_i2t"}, "value": 60.0}]
    by_hand(".eval_results/zz-dup.yaml", yaml.safe_dump(dup).encode())
    summary = json.loads(details["results.json"])
    twin = resealed({**summary, "model_repo": "spam/twin"})
    forger(hub, "spam/twin", clip, {**details, "results.json": json.dumps(twin).encode()})
    forger(hub, "spam/copy2", clip, as_another(details, "spam/copy2", {"comment": "mine"}))
    relabelled = {
        **summary,
        "model_repo": "spam/relabel",
        "provenance": {**summary["provenance"], "model": "hf:me/clip"},
    }
    forger(hub, "spam/relabel", clip, {**details, "results.json": json.dumps(relabelled).encode()})
    changed = npy(details[EMB]).copy()
    changed[3] = -changed[3]
    broken = resealed({**summary, "model_repo": "spam/broken"})
    forger(hub, "spam/broken", clip, {**details, EMB: npy_bytes(changed), "results.json": json.dumps(broken).encode()})
    forger(hub, "spam/copy", {p: plus(d, 5) if p.startswith(".eval_results/") else d for p, d in clip.items()})
    entry = ".eval_results/me--world--eccv_r1_t2i.yaml"
    by_hand(entry, plus(tree_of(hub, "me/blip")[entry], 1), "me/blip")
    board = ["leaderboard", "--from-hub", "me/world", "--significance", "--n-resamples", "20"]
    assert main(board) == 0
    printed = capsys.readouterr().out
    rows = board_rows(printed)
    assert rows == {"me/clip": "recomputed, shared", "spam/twin": "recomputed, shared", "spam/copy": "number only",
                    "spam/relabel": "number only", "spam/broken": "not recomputable", "me/blip": "differs",
                    "spam/copy2": "recomputed, shared"}, printed  # fmt: skip
    for said in (
        "verified me/clip: 12 recomputed, 1 number only (8,193 bytes of evidence read)",
        "note: me/clip has 2 entries for eccv_map_at_r_i2t (.eval_results/me--world--eccv_map_at_r_i2t.yaml: ",
        ".eval_results/zz-dup.yaml: 60): .eval_results/me--world--eccv_map_at_r_i2t.yaml is shown: its number is "
        "recomputed from its evidence, the other's is not",
        "hold the same evidence arrays (coco_5k/caption_embeddings.npy, coco_5k/image_embeddings.npy): one run's "
        "numbers under several models",
        "note: spam/copy: 12 entries point at the details of me/clip (me/details_me__clip@",
        "note: spam/relabel: 12 entries point at the details of me/clip (spam/relabel_details@",  # its provenance's
        "note: me/blip: eccv_r1_t2i differs: recomputed ",
        "note: spam/broken: 12 numbers not recomputable: spam/broken_details@",  # a row changed: never a mark
        "evidence/coco_5k/image_embeddings.npy is not the file the run wrote",
        "  me/blip: not compared (marked differs: its evidence does not vouch for its per-query values)",
        "trust: recomputed = every number scored again from its published evidence, equal",
    ):
        assert said in printed, (said, printed)
    (pair,) = [line for line in printed.splitlines() if " vs " in line and "me/clip" in line]
    assert "i2t +0.00 [0.00, 0.00] p=1.0000" in pair and "are not queries of this metric" not in printed, printed
    assert main([*board[:3], "--verified-only"]) == 0
    again = capsys.readouterr().out
    assert set(board_rows(again)) == {"me/clip", "spam/twin", "spam/copy2"}, again
    assert "verified me/clip: 12 recomputed, 1 number only (no evidence read, 1 kept from an earlier run)" in again
    assert "left out (--verified-only: not recomputed from their evidence): " in again
    r1 = ".eval_results/me--world--eccv_r1_i2t.yaml"
    by_hand(r1, plus(clip[r1], 1))
    assert main([*board[:3], "--no-verify"]) == 0
    unchecked = board_rows(capsys.readouterr().out)
    assert unchecked["me/clip"] == "not checked" and unchecked["spam/copy"] == "number only", unchecked
    assert main(board[:3]) == 0
    later = capsys.readouterr().out
    assert board_rows(later)["me/clip"] == "differs, shared" and "1 kept from an earlier run" in later, later
