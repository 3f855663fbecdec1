"""Every registered benchmark x every metric x every input kind against the brute force (or refused, with why).

Input kinds: ranked lists as dicts, as 2-D arrays and as a TREC run; a score matrix (with the square intramodal
matrices); embeddings (one product), embeddings scored in aligned blocks of three query rows (``blocks``: every
request of a direction shares one pass), and embeddings ranked by torch (``torch``: on the CPU, and on a GPU where
the machine has one). Rows are given in a shuffled order, and the score inputs carry extra distractor ids.
Scores are integer-valued dot products (exact, tie-heavy), so the brute force's full stable sort and the
engine must agree to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from eccv_metric import REGISTRY
from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.formats.trec import read_run
from eccv_metric.formats.trec import run_lines
from eccv_metric.formats.trec import write_lines
from eccv_metric.measures.correlation import bootstrap_spearman
from tests.unit import brute
from tests.unit.world import int_embeddings

KS = (1, 2, 5, 25)
EMBEDDED = ("embeddings", "blocks", "torch")
INPUTS = ("dicts", "arrays", "trec", "scores", *EMBEDDED)
COLLECTIONS = ("coco_5k", "mscoco_fg", "flickr30k_fg")
EXTRA_IMAGES = [7000 + k for k in range(5)]
EXTRA_CAPTIONS = [9000 + k for k in range(7)]


def torch_device() -> str:
    """Where the torch input ranks: the GPU when the machine has one, else the CPU (torch is in the dev extra)."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def items(world, collection: str) -> tuple[list[int], list[int]]:
    """(images, captions) of a collection, canonical order."""
    if collection == "coco_5k":
        return list(world.image_ids), list(world.caption_ids)
    return list(world.fg[collection]["gallery"]), list(world.fg[collection]["captions"])


class Setup:
    """One input over one collection, and everything the brute force needs to rank as the input does."""

    def __init__(self, world, collection: str, kind: str, seed: int = 3, values: str = "int"):
        rng = np.random.default_rng(seed)
        images, captions = items(world, collection)
        extras = kind in ("scores", *EMBEDDED)
        self.images = [images[k] for k in rng.permutation(len(images))] + (EXTRA_IMAGES if extras else [])
        self.captions = [captions[k] for k in rng.permutation(len(captions))] + (EXTRA_CAPTIONS if extras else [])
        self.vec = int_embeddings(rng, self.images) | {
            ("c", c): v for c, v in int_embeddings(rng, self.captions).items()
        }
        if values == "float":  # continuous scores: the brute force reads the very float32 matrices the input gets
            self.vec = {key: rng.standard_normal(len(v)).astype(np.float32) for key, v in self.vec.items()}
        self.kind = kind
        self.extras = extras
        img = np.stack([self.vector("image", i) for i in self.images])
        cap = np.stack([self.vector("caption", c) for c in self.captions])
        self.matrices = {
            ("image", "caption"): img @ cap.T,
            ("caption", "caption"): cap @ cap.T,
            ("image", "image"): img @ img.T,
        }
        self.row = {("image", i): k for k, i in enumerate(self.images)}
        self.row |= {("caption", c): k for k, c in enumerate(self.captions)}

    def vector(self, kind: str, ident: int) -> np.ndarray:
        return self.vec[ident] if kind == "image" else self.vec[("c", ident)]

    def score(self, qkind: str, q: int, gkind: str, g: int) -> float:
        if (qkind, gkind) == ("caption", "image"):
            return float(self.matrices[("image", "caption")][self.row[gkind, g], self.row[qkind, q]])
        return float(self.matrices[(qkind, gkind)][self.row[qkind, q], self.row[gkind, g]])

    def order(self, kind: str) -> list[int]:
        return self.images if kind == "image" else self.captions

    def full_lists(self, direction: str) -> dict[int, list[int]]:
        """Full rankings of every item of the query kind (t2t / i2i lists hold the query itself)."""
        qk, gk = brute.KIND[direction]
        return {q: brute.ranking(q, self.order(gk), lambda g, q=q: self.score(qk, q, gk, g)) for q in self.order(qk)}

    def make_input(self, tmp_path):
        if self.kind in EMBEDDED:
            img = np.stack([self.vector("image", i) for i in self.images])
            cap = np.stack([self.vector("caption", c) for c in self.captions])
            device = torch_device() if self.kind == "torch" else None
            return Embeddings(img, cap, self.images, self.captions, device=device)
        if self.kind == "scores":
            m = self.matrices
            return ScoreMatrix(
                m["image", "caption"],
                self.images,
                self.captions,
                caption_scores=m["caption", "caption"],
                image_scores=m["image", "image"],
            )
        lists = {d: self.full_lists(d) for d in brute.KIND}
        if self.kind == "dicts":
            return Rankings(**lists)
        if self.kind == "arrays":
            return Rankings(**{d: (np.array(list(v)), np.array(list(v.values()))) for d, v in lists.items()})
        path = tmp_path / "run.trec"
        write_lines(path, (line for d, v in lists.items() for line in run_lines(v, d)))
        return Rankings(**read_run(path))


def expected(world, setup: Setup, bench, direction: str, kind: str, k: int | None) -> dict[int, float]:
    """Brute-force per-query values of one metric in one direction."""
    task = bench.task(direction)
    qk, gk = brute.KIND[direction]
    relations = task.relation if isinstance(task.relation, tuple) else (task.relation,)
    parts = []
    for relation in relations:
        if relation == "fg":
            pos = brute.fg_positives(world, bench.collection, direction)
        else:
            pos = brute.positives(world, relation, direction)
        rankings = {}
        for q in pos:
            gallery = [g for g in setup.order(gk) if not (task.exclude_self and g == q)]
            if task.restriction == "coco_1k_folds":
                gallery = [g for g in gallery if g not in EXTRA_IMAGES + EXTRA_CAPTIONS]
                gallery = [g for g in gallery if world.fold(gk, g) == world.fold(qk, q)]
            elif task.restriction == "original_pool":
                gallery = [g for g in gallery if g in world.fg[bench.collection]["annotated"]]
            rankings[q] = brute.ranking(q, gallery, lambda g, q=q: setup.score(qk, q, gk, g))
        parts.append(brute.metric_values(kind, k, rankings, pos, 50))
    if len(parts) == 1:
        return parts[0]
    common = set.intersection(*(set(p) for p in parts))
    return {q: sum(p[q] for p in parts) / len(parts) for q in common}


def requested(collection: str) -> list[tuple]:
    """(benchmark, metric name, kind, K) of every metric of the collection's benchmarks."""
    out = []
    for bench in REGISTRY:
        if bench.collection != collection:
            continue
        for kind in bench.kinds:
            if kind == "recall":
                out += [(bench, bench.metric_name(kind, k), kind, k) for k in KS]
            elif kind != "spearman_std":
                out.append((bench, bench.metric_name(kind), kind, None))
    return out


@pytest.mark.parametrize("collection", COLLECTIONS)
@pytest.mark.parametrize("kind,values", [(k, "int") for k in INPUTS] + [("scores", "float"), ("dicts", "float")])
def test_every_benchmark_metric_and_input_equals_the_brute_force(
    world, tmp_path, monkeypatch, collection, kind, values
):
    setup = Setup(world, collection, kind, values=values)
    if kind in ("blocks", "torch"):  # no one product: blocks of three query rows (torch: its device's own blocks)
        monkeypatch.setattr("eccv_metric.inputs.embeddings.MATRIX_BUDGET", 0)
        monkeypatch.setattr("eccv_metric.kernels.scorers.CHUNK_ELEMENTS", 3 * (len(setup.captions) + 1))
    source = setup.make_input(tmp_path)
    metrics = [r for r in requested(collection) if r[2] != "spearman"]
    results = evaluate(source, [r[1] for r in metrics], KS, resources=world.resources())
    checked = 0
    for bench, name, metric_kind, k in metrics:
        for direction in bench.directions:
            got = results[name][direction]
            want = expected(world, setup, bench, direction, metric_kind, k)
            assert sorted(got.query_ids.tolist()) == sorted(want), (name, direction)
            got_values = dict(zip(got.query_ids.tolist(), got.values.tolist(), strict=True))
            assert got_values == pytest.approx(want, abs=1e-12), (name, direction)
            agg = brute.aggregate(metric_kind, want)
            assert got.value == pytest.approx(agg, abs=1e-12), (name, direction)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("kind", INPUTS)
def test_correlations_equal_the_bootstrap_of_brute_similarities_or_are_refused(world, tmp_path, kind):
    setup = Setup(world, "coco_5k", kind)
    source = setup.make_input(tmp_path)
    names = [r[1] for r in requested("coco_5k") if r[2] == "spearman"]
    assert sorted(names) == ["cxc_sis_spearman", "cxc_sits_spearman", "cxc_sts_spearman"]
    if kind in ("dicts", "arrays", "trec"):
        for name in names:
            with pytest.raises(EvaluationError, match=f"{name}.*ranked lists do not hold"):
                evaluate(source, [name], resources=world.resources())
        return
    results = evaluate(source, names, resources=world.resources(), n_resamples=50, seed=4)
    for name in names:
        bench = REGISTRY.get(name.removesuffix("_spearman"))
        rating_kind = bench.task(bench.directions[0]).relation
        kinds = {"sts": ("caption", "caption"), "sis": ("image", "image"), "sits": ("caption", "image")}[rating_kind]
        rows = [
            r
            for r in world.ratings[rating_kind]
            if all(_in_split(world, kd, x) for kd, x in zip(kinds, r[:2], strict=True))
        ]

        class Rated:
            id_1 = np.array([r[0] for r in rows])
            id_2 = np.array([r[1] for r in rows])
            score = np.array([round(r[2], 2) for r in rows])

        Rated.kind = rating_kind
        sims = np.array([setup.score(kinds[0], a, kinds[1], b) for a, b, _ in rows])
        want = bootstrap_spearman(Rated, sims, 50, 4)
        direction = bench.directions[0]
        assert results[name][direction].values.tolist() == want.samples.tolist()
        assert results[name + "_std"][direction].value == pytest.approx(want.std)


def _in_split(world, kind: str, ident: int) -> bool:
    return ident in (world.image_ids if kind == "image" else world.caption_ids)
