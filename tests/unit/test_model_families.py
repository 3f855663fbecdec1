"""Model families are registry entries: a toy family registered here alone (no other file touched) works in
Python and in the CLI, and shows in the help and the unknown-spec error; a family's model ranks by the
similarity it declares: a sentence-transformers model declaring dot products is ranked by dot products
(against a brute force over the model's own ``encode``), one declaring cosine by cosine.
"""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import evaluate
from eccv_metric.models import Encoder
from eccv_metric.models import Family
from eccv_metric.models import register
from eccv_metric.models.families.encoder import FunctionEncoder
from eccv_metric.models.families.registry import FAMILIES
from tests.unit.brute import aggregate
from tests.unit.brute import metric_values
from tests.unit.brute import ranking
from tests.unit.model_world import caption_text
from tests.unit.model_world import run_model


def toy_rows(texts: list[str], scale: float) -> np.ndarray:
    """A weight-free text model: letter counts, scaled (its rows are not normalised)."""
    return np.array([[scale * (t.count(c) + 1) for c in "aeiost"] for t in texts], dtype=np.float32)


def load_toy(name: str, spec: str, options: object) -> Encoder:
    return FunctionEncoder(spec, ("caption",), texts=lambda texts: toy_rows(texts, float(name)),
                           identity={"spec": spec, "weights": name}, similarity="dot")  # fmt: skip


TOY = Family("toy", (("toy:<scale>", "letter counts times <scale>: a test's own family"),), load_toy,
             modalities=("caption",), similarity="dot")  # fmt: skip


@pytest.fixture()
def toy():
    register(TOY)
    yield TOY
    FAMILIES.pop("toy")


def test_a_family_registered_in_a_test_module_alone_works_in_python_and_the_cli(toy, world, data, tmp_path, capsys,
                                                                                monkeypatch):  # fmt: skip
    import eccv_metric.models.plan
    from eccv_metric.cli.main import main

    out = run_model("toy:2", data, world, tmp_path, benchmarks=["coco_t2t"])
    texts = [caption_text(c) for c in world.caption_ids]
    direct = evaluate(Embeddings(None, toy_rows(texts, 2.0), caption_ids=world.caption_ids, normalize=False),
                      benchmarks=["coco_t2t"], resources=world.resources())  # fmt: skip
    assert out.results.means() == direct.means()
    assert out.provenance["similarity"] == "dot" and out.provenance["model"] == "toy:2"
    assert out.provenance["items"]["captions.caption"]["cache"]  # it has an identity: cached
    with pytest.raises(EvaluationError, match=r"^coco_5k: toy:2 encodes no images \(it has texts only\)$"):
        run_model("toy:2", data, world, tmp_path, benchmarks=["coco_5k"])
    with pytest.raises(EvaluationError, match=r"unknown model spec 'toys:2': use .*toy:<scale>"):
        run_model("toys:2", data, world, tmp_path, benchmarks=["coco_t2t"])
    # the CLI: its help lists the family, --model takes it
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "toy:<scale>" in capsys.readouterr().out
    monkeypatch.setattr(eccv_metric.models.plan, "default_resources", lambda source, options=None: world.resources())
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    assert main(["evaluate", "--model", "toy:2", "--data", str(data), "--benchmarks", "coco_t2t", "--json"]) == 0
    import json

    printed = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in printed.items() if k != "provenance"} == direct.means()
    assert main(["evaluate", "--model", "toys:2", "--data", str(data)]) == 2
    assert "toy:<scale>" in capsys.readouterr().err


def test_a_prefix_is_registered_once():
    with pytest.raises(ValueError, match="prefix 'hf' is registered already"):
        register(Family("hf", (("hf:<x>", "another"),), load_toy))


@pytest.mark.parametrize("similarity", ["dot", "cosine"])
def test_sentence_transformers_rank_by_the_similarity_they_declare(similarity, world, data, tmp_path):
    """coco_t2t (each caption against the other captions; positives: its image's other captions) by brute
    force over the model's own embeddings and the declared similarity."""
    from sentence_transformers import SentenceTransformer

    from tests.unit.model_world import tiny_st

    folder = tiny_st(tmp_path / "st", similarity=similarity)
    out = run_model(f"st:{folder}", data, world, tmp_path, benchmarks=["coco_t2t"], cache=False)
    assert out.provenance["similarity"] == similarity
    rows = SentenceTransformer(str(folder)).encode([caption_text(c) for c in world.caption_ids])
    assert np.ptp(np.linalg.norm(rows, axis=1)) > 0.01  # not normalised: dot and cosine differ
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    by_id = dict(zip(world.caption_ids, rows if similarity == "dot" else unit, strict=True))
    positives = {c: {d for d in world.caption_ids if d != c and world.caption_image[d] == world.caption_image[c]}
                 for c in world.caption_ids}  # fmt: skip
    rankings = {
        q: ranking(q, [g for g in world.caption_ids if g != q], lambda g, q=q: float(by_id[q] @ by_id[g]))
        for q in world.caption_ids
    }
    means = out.results.means()
    for k in (1, 5, 10):
        brute = aggregate("recall", metric_values("recall", k, rankings, positives, None))
        assert means[f"coco_t2t_r{k}"]["t2t"] == pytest.approx(brute, abs=1e-12)
    other = dict(zip(world.caption_ids, unit if similarity == "dot" else rows, strict=True))
    flipped = {q: ranking(q, [g for g in world.caption_ids if g != q], lambda g, q=q: float(other[q] @ other[g]))
               for q in world.caption_ids}  # fmt: skip
    assert flipped != rankings  # the other similarity ranks otherwise: the check tells them apart
