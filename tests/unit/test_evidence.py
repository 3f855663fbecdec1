"""The evidence a run keeps and ``verify`` over it, with no Hub and no model: every input kind written and scored
again to the same per-query values; each way evidence can be wrong (a file missing, of another dtype, shape or item
order, changed since the run, one embedding row changed) named in one line and never recomputed equal; the CLI's
``evaluate --evidence`` then ``verify`` on the synthetic world (integer embeddings: exact, tie-heavy)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import eccv_metric
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import Reranked
from eccv_metric import ScoreMatrix
from eccv_metric import TwoStage
from eccv_metric import evaluate_benchmarks
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.request import Request
from eccv_metric.cli.main import main
from eccv_metric.evidence import load_evidence
from eccv_metric.evidence import write_evidence
from eccv_metric.evidence.check import DIFFERS
from eccv_metric.evidence.check import EQUAL
from eccv_metric.evidence.check import NOT_RECOMPUTABLE
from eccv_metric.evidence.layout import model_record
from eccv_metric.evidence.layout import sha256_file
from eccv_metric.inputs.pairs import RatedPairs
from eccv_metric.models.data.items import item_sets
from eccv_metric.models.options import Scored
from tests.unit.world import vectors


def scored(res, name, source, benchmarks, sets=None):
    """An input scored as a run scores it (each benchmark's default metrics), and its record."""
    wanted = {b: Request.parse(benchmarks=[b]).names for b in benchmarks}
    out, skipped = evaluate_benchmarks(source, wanted, resources=res, n_resamples=20)
    assert not skipped
    return out, Scored(name, source, wanted, sets or {})


@pytest.fixture(scope="module")
def inputs(world):
    """Every kind of input over the world: embeddings (cosine, ids given), a score matrix, a two-stage input, CxC
    SITS's rated pairs, ranked lists."""
    img, cap = vectors(world)
    emb = Embeddings(img, cap, world.image_ids, world.caption_ids, normalize=True)
    matrix = img @ cap.T
    top = np.argsort(-matrix, axis=1, kind="stable")[:, :3]
    rng = np.random.default_rng(3)
    finals = rng.integers(0, 4, top.shape).astype(np.float32)
    i2t = Reranked(world.image_ids, np.asarray(world.caption_ids)[top], finals)
    sits = world.ratings["sits"]
    rated = RatedPairs([c for c, _, _ in sits], [i for _, i, _ in sits], rng.normal(size=len(sits)))
    lists = {q: np.asarray(world.caption_ids)[np.argsort(-row, kind="stable")].tolist()
             for q, row in zip(world.image_ids, matrix, strict=True)}  # fmt: skip
    return {
        "coco.embeddings": (emb, ["coco_5k", "eccv", "cxc_t2t"]),
        "coco.scores": (ScoreMatrix(matrix), ["coco_5k", "coco_1k"]),
        "coco.rerank": (TwoStage(Embeddings(img, cap), i2t=i2t), ["coco_5k"]),
        "coco.rated": (rated, ["cxc_sits"]),
        "coco.lists": (Rankings(i2t=lists), ["coco_5k"]),
    }


def test_every_kind_is_scored_again_to_the_same_per_query_values(res, inputs, tmp_path):
    kinds = []
    for name, (source, benchmarks) in inputs.items():
        out, record = scored(res, name, source, benchmarks)
        manifest, digest = write_evidence(tmp_path / name, [record], n_resamples=20, seed=0)
        evidence = load_evidence(tmp_path / name)
        assert evidence.digest == digest
        kinds.append(evidence.inputs[0].kind)
        table = eccv_metric.verify(out.means(), evidence, per_query=out.per_query_json(), resources=res)
        assert [c.status for c in table.checks] == [EQUAL] * len(table.checks) and table.equal, (name, table.checks)
        assert all(c.differing == 0 for c in table.checks)
    assert kinds == ["embeddings", "scores", "twostage", "pairs", "lists"]
    files = json.loads((tmp_path / "coco.rerank" / "evidence.json").read_text())["files"]
    assert files["coco/rerank_i2t.npz"]["arrays"]["scores"]["dtype"] == "float32"  # float32 finals, held exactly
    assert files["coco/image_embeddings.npy"]["dtype"] == "float32"


def test_a_metric_is_kept_once(res, inputs, tmp_path):
    records = [scored(res, name, *inputs[name])[1] for name in ("coco.embeddings", "coco.scores")]
    with pytest.raises(EvaluationError, match="coco_5k is scored by two inputs, coco.embeddings and coco.scores"):
        write_evidence(tmp_path / "ev", records, n_resamples=20, seed=0)
    assert not (tmp_path / "ev").exists()


@pytest.fixture()
def kept(world, res, inputs, tmp_path):
    """An embeddings run's results and evidence (its item sets recorded, as a model run records them)."""
    source, benchmarks = inputs["coco.embeddings"]
    sets = {s.kind: s for s in item_sets(REGISTRY.get("coco_5k"))}
    out, record = scored(res, "coco", source, benchmarks, sets)
    write_evidence(tmp_path / "ev", [record], n_resamples=20, seed=0)
    return out, tmp_path / "ev"


def rewrite(folder, name, values, manifest_too=False):
    """``name`` of the evidence folder rewritten with ``values``; ``manifest_too``: its record updated as a forger
    would (dtype, shape, sha256, size)."""
    np.save(folder / name, values)
    if manifest_too:
        path = folder / "evidence.json"
        manifest = json.loads(path.read_text())
        record = manifest["files"][name]
        record.update(dtype=str(values.dtype), shape=list(values.shape), sha256=sha256_file(folder / name),
                      bytes=(folder / name).stat().st_size)  # fmt: skip
        path.write_text(json.dumps(manifest))


def verdicts(out, folder, res):
    table = eccv_metric.verify(out.means(), folder, per_query=out.per_query_json(), resources=res)
    assert not table.equal
    return {c.status for c in table.checks}, {c.why for c in table.checks}, table


def test_bad_evidence_is_named_in_one_line_never_equal(kept, res, tmp_path):
    out, ev = kept
    img = np.load(ev / "coco/image_embeddings.npy")
    ids = np.load(ev / "coco/image_ids.npy")
    cases = {
        "missing": (lambda f: (f / "coco/caption_embeddings.npy").unlink(), "coco/caption_embeddings.npy is missing"),
        "dtype": (
            lambda f: rewrite(f, "coco/image_embeddings.npy", img.astype(np.float64)),
            "holds float64, evidence.json records float32 (dtype)",
        ),  # fmt: skip
        "shape": (
            lambda f: rewrite(f, "coco/image_embeddings.npy", img[1:]),
            "has shape (19, 4), evidence.json records (20, 4) (shape)",
        ),  # fmt: skip
        "rows and ids": (
            lambda f: rewrite(f, "coco/image_embeddings.npy", img[1:], True),
            "19 image embeddings but 20 image ids (shape)",
        ),  # fmt: skip
        "changed": (
            lambda f: rewrite(f, "coco/image_embeddings.npy", np.where(np.arange(20)[:, None] == 3, -img, img)),
            "is not the file the run wrote: its sha256 differs",
        ),  # fmt: skip
        "order": (
            lambda f: (
                rewrite(f, "coco/image_embeddings.npy", img[::-1].copy(), True),
                rewrite(f, "coco/image_ids.npy", ids[::-1].copy(), True),
            ),
            "coco's image_ids are not in the benchmark's item order (row 1",
        ),  # fmt: skip
    }
    for case, (damage, words) in cases.items():
        folder = tmp_path / case
        shutil.copytree(ev, folder)
        damage(folder)
        statuses, whys, table = verdicts(out, folder, res)
        assert statuses == {NOT_RECOMPUTABLE}, (case, table.checks)
        assert len(whys) == 1 and words in whys.pop(), (case, table.checks[0].line())
        assert "\n" not in table.checks[0].line()


def test_one_row_changed_and_its_manifest_forged_differs_by_how_much(kept, res, tmp_path):
    out, ev = kept
    folder = tmp_path / "forged"
    shutil.copytree(ev, folder)
    img = np.load(folder / "coco/image_embeddings.npy")
    img[3] = -img[3]
    rewrite(folder, "coco/image_embeddings.npy", img, manifest_too=True)
    statuses, _, table = verdicts(out, folder, res)
    assert DIFFERS in statuses and EQUAL in statuses  # t2i numbers move; the row's own i2t query too
    moved = [c for c in table.checks if c.status == DIFFERS]
    assert all(c.differing for c in moved) and "per-query values differ" in moved[0].line()
    forged = {m: dict(by) for m, by in out.means().items()}
    forged["coco_5k_r1"]["i2t"] += 0.05
    table = eccv_metric.verify(forged, ev, resources=res)
    row = next(c for c in table.checks if c.name == "coco_5k_r1/i2t")
    assert row.status == DIFFERS and f"({-0.05:+.6g})" in row.line(), row.line()
    assert [c.status for c in table.checks].count(DIFFERS) == 1


def test_the_evidence_of_another_run_and_a_foreign_folder(kept, res, tmp_path):
    out, ev = kept
    results = tmp_path / "r.json"
    results.write_text(json.dumps({**out.means(), "provenance": {"digests": {"evidence": "0" * 64}}}))
    table = eccv_metric.verify(results, ev, resources=res)
    assert {c.why for c in table.checks} == {
        "the evidence is not the run's: its evidence.json is not the one the results' digest records"
    }
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(EvaluationError, match="holds files no --evidence wrote"):
        write_evidence(tmp_path / "mine", [], n_resamples=20, seed=0)
    with pytest.raises(EvaluationError, match="evidence.json is missing"):
        load_evidence(tmp_path / "mine")


def test_evaluate_keeps_its_evidence_and_verify_recomputes_it(world, tmp_path, capsys):
    """``evaluate --image-embeddings ... --evidence DIR`` then ``verify results.json``: every number equal (exit 0);
    the results file records its evidence (folder and digest); a forged number differs (exit 1)."""
    from tests.unit.bench_world import write_ground_truth

    data = write_ground_truth(world, tmp_path / "data")
    img, cap = vectors(world)
    np.save(tmp_path / "img.npy", img)
    np.save(tmp_path / "cap.npy", cap)
    res, pq, ev = (str(tmp_path / n) for n in ("r.json", "pq.json", "ev"))
    args = ["--image-embeddings", str(tmp_path / "img.npy"), "--caption-embeddings", str(tmp_path / "cap.npy"),
            "--normalize", "--ground-truth", str(data), "--benchmarks", "coco_5k", "eccv"]  # fmt: skip
    assert main(["evaluate", *args, "-o", res, "--per-query", pq, "--evidence", ev, "-q"]) == 0
    provenance = json.loads(open(res).read())["provenance"]
    assert provenance["evidence"]["folder"] == ev and provenance["digests"]["evidence"] == load_evidence(ev).digest
    capsys.readouterr()
    assert main(["verify", res, "--per-query", pq, "--ground-truth", str(data)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(f"{res}: evidence {ev} (") and printed[-1] == "12 numbers: 12 equal"
    assert all(" equal (" in line for line in printed[1:-1]), printed
    forged = json.loads(open(res).read())
    forged["eccv_r1"]["t2i"] = 0.5
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    assert main(["verify", str(tmp_path / "forged.json"), "--ground-truth", str(data)]) == 1
    printed = capsys.readouterr().out
    assert "eccv_r1/t2i" in printed and "differs: recomputed" in printed and printed.endswith("11 equal, 1 differs\n")


def test_an_edited_results_file_and_the_runs_pm_options(world, tmp_path, capsys):
    """A results file edited after its run: a number rounded up by hand (0.1 for 0.0546875: equal to its one
    decimal, it was taken as equal) differs; a provenance re-labelled (another model) is not recomputable, never
    equal. ``verify --ground-truth`` applies the PM options the run recorded (--pm-zeta 1 --pm-r-cap none: they
    were dropped, an honest run's pmrp differed)."""
    from tests.unit.bench_world import write_ground_truth

    data = write_ground_truth(world, tmp_path / "data")
    img, cap = vectors(world)
    np.save(tmp_path / "img.npy", img)
    np.save(tmp_path / "cap.npy", cap)
    res, ev = str(tmp_path / "r.json"), str(tmp_path / "ev")
    args = ["--image-embeddings", str(tmp_path / "img.npy"), "--caption-embeddings", str(tmp_path / "cap.npy"),
            "--normalize", "--ground-truth", str(data), "--metrics", "eccv_map_at_r", "pmrp", "--pm-zeta", "1",
            "--pm-r-cap", "none"]  # fmt: skip
    assert main(["evaluate", *args, "-o", res, "--evidence", ev, "-q"]) == 0
    capsys.readouterr()
    assert main(["verify", res, "--ground-truth", str(data)]) == 0
    assert capsys.readouterr().out.endswith("4 numbers: 4 equal\n")
    kept = json.loads(open(res).read())
    assert kept["eccv_map_at_r"]["i2t"] == 0.0546875
    rounded = {**kept, "eccv_map_at_r": {**kept["eccv_map_at_r"], "i2t": 0.1}}
    (tmp_path / "rounded.json").write_text(json.dumps(rounded))
    assert main(["verify", str(tmp_path / "rounded.json"), "--ground-truth", str(data)]) == 1
    printed = capsys.readouterr().out
    assert "eccv_map_at_r/i2t" in printed and "differs: recomputed 0.0546875" in printed, printed
    assert "note: the results' numbers were edited after the run" in printed
    relabelled = {**kept, "provenance": {**kept["provenance"], "model": "hf:someone/else"}}
    (tmp_path / "relabelled.json").write_text(json.dumps(relabelled))
    assert main(["verify", str(tmp_path / "relabelled.json"), "--ground-truth", str(data)]) == 1
    printed = capsys.readouterr().out
    assert printed.endswith("4 numbers: 4 not recomputable\n") and "provenance was edited after the run" in printed


def test_a_partial_runs_evidence_never_vouches_for_a_published_number(world, res, tmp_path):
    """Ranked lists of 2 of the 20 image queries scored with partial=True (a TREC run of a few queries) recompute
    to themselves; as a published entry (whole=True: verify --from-hub, the leaderboard) they are not recomputable:
    the Hub's number is one of every query (push-results refuses a --partial results file; its evidence was
    'equal', its row 'recomputed')."""
    from eccv_metric.api.many import evaluate_benchmarks as score

    img, cap = vectors(world)
    lists = {q: np.asarray(world.caption_ids)[np.argsort(-row, kind="stable")].tolist()
             for q, row in zip(world.image_ids[:2], img[:2] @ cap.T, strict=True)}  # fmt: skip
    wanted = {"coco_5k": Request.parse(benchmarks=["coco_5k"]).names}
    out, _ = score(Rankings(i2t=lists), wanted, resources=res, partial=True, directions=["i2t"])
    write_evidence(tmp_path / "ev", [Scored("coco", Rankings(i2t=lists), wanted)], n_resamples=20, seed=0, partial=True)
    assert eccv_metric.verify(out.means(), tmp_path / "ev", resources=res).equal
    table = eccv_metric.verify(out.means(), tmp_path / "ev", resources=res, whole=True)
    assert {c.status for c in table.checks} == {NOT_RECOMPUTABLE}
    assert "scored only the queries its lists give (partial)" in table.checks[0].why


def test_a_manifest_of_other_types_is_one_line_never_a_traceback(kept, res, tmp_path):
    """A manifest whose fields are of other types (anyone's details repo, read by every leaderboard): one
    EvidenceError line naming the field; they ended in AttributeError / TypeError / ValueError tracebacks."""
    from eccv_metric.evidence import EvidenceError

    out, ev = kept
    base = json.loads((ev / "evidence.json").read_text())
    damages = {
        "benchmarks": lambda m: m["inputs"][0].update(benchmarks=["coco_5k"]),
        "arrays": lambda m: m["inputs"][0]["arrays"].update(image_embeddings=["x"]),
        "n_resamples": lambda m: m["scoring"].update(n_resamples="x"),
        "seed": lambda m: m["scoring"].update(seed=None),
        "resources": lambda m: m.update(resources="x"),
        "given": lambda m: m["resources"].update(given="abc"),
        "model": lambda m: m["run"].update(model=["hf:me/clip"]),
    }
    for field_name, damage in damages.items():
        folder = tmp_path / field_name
        shutil.copytree(ev, folder)
        manifest = json.loads(json.dumps(base))
        damage(manifest)
        (folder / "evidence.json").write_text(json.dumps(manifest))
        with pytest.raises(EvidenceError, match=f"evidence.json is not one this package writes: .*{field_name}"):
            eccv_metric.verify(out.means(), folder, resources=res)


def test_the_evidence_names_its_model_and_is_no_other_models(world, res, inputs, tmp_path):
    """Review of issue 61: a results file relabelled to another model (its seal computed again, as anyone can) was
    recomputed equal from the evidence of the model it no longer names: the manifest named no model, so nothing
    tied the two. It records the run's model spec (local paths removed, as published) and revision, and verify
    recomputes only for the model the results name; evidence recording none behind results naming one (written
    before it did) is not recomputable, and so is another revision."""
    source, benchmarks = inputs["coco.embeddings"]
    out, record = scored(res, "coco", source, benchmarks)
    provenance = {"model": "hf:/home/me/clip", "identity": {"revision": "a" * 40}}
    run = model_record(provenance)
    assert run == {"model": "hf:(local path)", "model_revision": "a" * 40}  # published as it is: no local path
    write_evidence(tmp_path / "ev", [record], n_resamples=20, seed=0, run=run)
    write_evidence(tmp_path / "old", [record], n_resamples=20, seed=0)  # an earlier package's: no model recorded

    def why(folder, named):
        table = eccv_metric.verify(out.means(), folder, resources=res, model=named)
        return {c.why for c in table.checks} if not table.equal else set()

    assert why(tmp_path / "ev", provenance) == set()
    assert why(tmp_path / "ev", {**provenance, "model": "hf:(local path)"}) == set()  # a published provenance
    assert why(tmp_path / "ev", {**provenance, "model": "hf:spam/twin"}) == {
        "the evidence is another run's: its model hf:(local path) (the results name hf:spam/twin)"}  # fmt: skip
    assert why(tmp_path / "ev", {**provenance, "identity": {"revision": "b" * 40}}) == {
        f"the evidence is another run's: its model_revision {'a' * 40} (the results name {'b' * 40})"}  # fmt: skip
    (old,) = why(tmp_path / "old", provenance)
    assert old.startswith("the evidence records no model (written by an earlier eccv-caption-hf): nothing shows")
    assert why(tmp_path / "old", {"input": "embeddings"}) == set()  # a run on files names no model, nor does it


def test_shared_arrays_are_told_whatever_holds_them(world, res, inputs, tmp_path):
    """The digests of the arrays that carry scores (never the ids files) are those of their values: a copy under
    another manifest, or in other bytes (another array order in the file), gives the same ones; one value changed
    gives another; a file that cannot be read gives none."""
    source, benchmarks = inputs["coco.rerank"]
    _, record = scored(res, "coco.rerank", source, benchmarks)
    write_evidence(tmp_path / "ev", [record], n_resamples=20, seed=0)
    digests = load_evidence(tmp_path / "ev").score_digests()
    assert sorted(digests) == ["coco/caption_embeddings.npy", "coco/image_embeddings.npy", "coco/rerank_i2t.npz"]
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "ev", copy)
    img = np.load(copy / "coco/image_embeddings.npy")
    rewrite(copy, "coco/image_embeddings.npy", np.asfortranarray(img), manifest_too=True)  # other bytes, same values
    manifest = json.loads((copy / "evidence.json").read_text())
    (copy / "evidence.json").write_text(json.dumps({**manifest, "comment": "mine"}))
    assert sha256_file(copy / "coco/image_embeddings.npy") != sha256_file(tmp_path / "ev/coco/image_embeddings.npy")
    assert load_evidence(copy).score_digests() == digests
    img[0, 0] += 1
    rewrite(copy, "coco/image_embeddings.npy", img, manifest_too=True)
    changed = load_evidence(copy).score_digests()
    assert changed["coco/image_embeddings.npy"] != digests["coco/image_embeddings.npy"]
    assert changed["coco/rerank_i2t.npz"] == digests["coco/rerank_i2t.npz"]
    (copy / "coco/rerank_i2t.npz").unlink()  # nothing scored from a file that is not there: no digest of it
    assert set(load_evidence(copy).score_digests()) == {"coco/caption_embeddings.npy", "coco/image_embeddings.npy"}


def test_a_forgers_file_bytes_are_one_line_never_a_traceback(kept, res, inputs, tmp_path):
    """Review of issue 61: a zip archive where an .npy is (np.load gives an archive: AttributeError) and an .npz
    whose deflated member is corrupt (zlib.error) went past the reader's errors: a traceback for verify, and a
    details commit holding one stopped every leaderboard. Each is one line, never recomputed."""
    import io
    import zipfile

    out, ev = kept
    folder = tmp_path / "zip"
    shutil.copytree(ev, folder)
    np.savez(folder / "coco/image_embeddings.npy.npz", a=np.zeros(3))
    (folder / "coco/image_embeddings.npy.npz").rename(folder / "coco/image_embeddings.npy")
    statuses, whys, _ = verdicts(out, folder, res)
    said = "coco/image_embeddings.npy is not a numpy file (ValueError: a zip archive under this name)"
    assert statuses == {NOT_RECOMPUTABLE} and whys == {f"{folder}/{said}"}
    source, benchmarks = inputs["coco.rerank"]
    rerank, record = scored(res, "coco.rerank", source, benchmarks)
    write_evidence(tmp_path / "rr", [record], n_resamples=20, seed=0)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("query_ids", "candidate_ids", "scores"):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.arange(4000, dtype=np.int32))
            archive.writestr(f"{name}.npy", member.getvalue())
    damaged = bytearray(buffer.getvalue())
    damaged[200:230] = bytes(b ^ 0xFF for b in damaged[200:230])
    (tmp_path / "rr/coco/rerank_i2t.npz").write_bytes(bytes(damaged))
    statuses, whys, _ = verdicts(rerank, tmp_path / "rr", res)
    (why,) = whys
    assert statuses == {NOT_RECOMPUTABLE} and why.startswith(
        f"{tmp_path}/rr/coco/rerank_i2t.npz is not a numpy file ("
    ), why


def test_the_hub_out_of_reach_is_raised_never_a_row(world, res, inputs, tmp_path, monkeypatch):
    """Review of issue 61: CxC's ratings read from a Hub repo out of reach while the evidence was scored again gave a
    "not recomputable" row (verify caught the EvaluationError), which the leaderboard kept as a verdict on the
    evidence. It is raised (HubReadError): no verdict; the leaderboard marks the row "not checked"."""
    import huggingface_hub.constants as constants

    from eccv_metric.benchmarks.resources import Resources
    from eccv_metric.core.errors import HubReadError

    source, benchmarks = inputs["coco.rated"]
    out, record = scored(res, "coco.rated", source, benchmarks)
    write_evidence(tmp_path / "ev", [record], n_resamples=20, seed=0)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # huggingface_hub's own switch: no request leaves
    with pytest.raises(HubReadError, match="me/world: no such file or folder, and cannot read the Hub dataset repo"):
        eccv_metric.verify(out.means(), tmp_path / "ev", resources=Resources(res.gt, cxc_source="me/world"))
