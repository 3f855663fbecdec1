"""Adding a collection and benchmarks on it is adding registry entries: a toy collection over the synthetic
world's items, a relation and a restriction on it, two benchmarks; scored through every input kind (ranked
lists, a TREC run read as flat arrays, a score matrix, embeddings) and held against brute force written here
(full stable sorts over each query's whole gallery)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from eccv_metric import Embeddings
from eccv_metric import EvaluationError
from eccv_metric import Rankings
from eccv_metric import Resources
from eccv_metric import ScoreMatrix
from eccv_metric import evaluate
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.media import caption_source
from eccv_metric.benchmarks.media import image_source
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.registry import CollectionEntry
from eccv_metric.benchmarks.registry import Relation
from eccv_metric.benchmarks.registry import Restriction
from eccv_metric.benchmarks.registry import Task
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.positives import Positives
from eccv_metric.formats.trec import read_run_arrays
from eccv_metric.formats.trec import run_lines
from eccv_metric.formats.trec import write_lines
from tests.unit import brute
from tests.unit.world import int_embeddings

N_TOY = 8  # images of the toy collection: the world's first 8, in reverse order (canonical order != the world's)
KINDS_OF = {"i2t": ("image", "caption"), "t2i": ("caption", "image")}
KS = (1, 2, 5)
KINDS = ("recall", "map_at_r", "rprecision", "medr", "meanr")


@dataclass(frozen=True)
class Toy:
    """The toy collection's items (what a loader returns: a name and one id index per modality)."""

    name: str
    images: IdIndex
    captions: IdIndex

    def index(self, kind: str) -> IdIndex:
        return self.images if kind == "image" else self.captions


@pytest.fixture(scope="module")
def toy(world):
    """Items, positives (a caption's image and the image after it; i2t the converse) and groups (halves)."""
    images = world.image_ids[:N_TOY][::-1]
    captions = [c for img in images for c in world.caption_ids if world.caption_image[c] == img]
    t2i = {c: {world.caption_image[c], images[(images.index(world.caption_image[c]) + 1) % N_TOY]} for c in captions}
    i2t = {i: {c for c, pos in t2i.items() if i in pos} for i in images}
    group = {i: int(k >= N_TOY // 2) for k, i in enumerate(images)} | {c: -1 for c in captions}
    for c in captions:
        group[c] = group[world.caption_image[c]]
    return {"images": images, "captions": captions, "pos": {"i2t": i2t, "t2i": t2i}, "group": group}


def _entries(toy: dict) -> tuple[CollectionEntry, Relation, Restriction, list[Benchmark]]:
    items = Toy(
        "toy", IdIndex(np.asarray(toy["images"]), "toy image"), IdIndex(np.asarray(toy["captions"]), "toy caption")
    )

    def positives(_loaded: object, collection: Toy, direction: str) -> Positives:
        query_kind, item_kind = KINDS_OF[direction]
        queries, gallery = collection.index(query_kind), collection.index(item_kind)
        pairs = [(q, g) for q, pos in toy["pos"][direction].items() for g in pos]
        q = queries.positions(np.asarray([p[0] for p in pairs]))
        return Positives.from_pairs(q, gallery.positions(np.asarray([p[1] for p in pairs])), len(gallery.ids))

    def halves(_loaded: object, collection: Toy, view: object) -> tuple[np.ndarray, np.ndarray]:
        kinds = KINDS_OF[view.direction]  # type: ignore[attr-defined]
        return tuple(  # type: ignore[return-value]
            np.asarray([toy["group"][i] for i in collection.index(kind).ids.tolist()], np.int64) for kind in kinds
        )

    entry = CollectionEntry(
        "toy",
        "A toy collection",
        lambda _entry, _loaded: items,
        "8 images and their 40 captions of the synthetic world",
        "the world's ids",
        "the world's first 8 images in reverse order, each image's captions in world order",
        "nowhere: synthetic",
        item_sources={"image": image_source("toy_images"), "caption": caption_source("toy_captions")},
    )
    relation = Relation("toy_pairs", ("toy",), positives, "a caption's image and the image after it")
    restriction = Restriction("toy_halves", "toy half", halves)
    benchmarks = [
        Benchmark("toy", "toy", tuple(Task(d, "toy_pairs") for d in KINDS_OF), "Toy", "toy pairs", "none"),
        Benchmark(
            "toy_half", "toy", tuple(Task(d, "toy_pairs", "toy_halves") for d in KINDS_OF), "Toy, halves", "", "none"
        ),
    ]
    return entry, relation, restriction, benchmarks


@pytest.fixture
def registered(toy):
    entry, relation, restriction, benchmarks = _entries(toy)
    with REGISTRY.scoped():
        REGISTRY.add_collection(entry)
        REGISTRY.add_relation(relation)
        REGISTRY.add_restriction(restriction)
        for bench in benchmarks:
            REGISTRY.add(bench)
        yield benchmarks
    assert "toy" not in REGISTRY  # scoped: gone after the test


def _brute(toy: dict, vectors: dict[int, np.ndarray], halves: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    name = "toy_half" if halves else "toy"
    for direction, (qk, gk) in KINDS_OF.items():
        queries = toy["images"] if qk == "image" else toy["captions"]
        gallery = toy["images"] if gk == "image" else toy["captions"]
        pos = {q: p for q, p in toy["pos"][direction].items() if p}
        rankings = {}
        for q in queries:
            if q in pos:
                mine = [g for g in gallery if not halves or toy["group"][g] == toy["group"][q]]
                rankings[q] = brute.ranking(q, mine, lambda g, q=q: float(vectors[q] @ vectors[g]))
        for kind in KINDS:
            for k in KS if kind == "recall" else (None,):
                metric = f"{name}_r{k}" if kind == "recall" else f"{name}_{kind}"
                values = brute.metric_values(kind, k, rankings, pos, None)
                out.setdefault(metric, {})[direction] = brute.aggregate(kind, values)
    return out


def _full_rankings(toy: dict, vectors: dict[int, np.ndarray]) -> dict[str, dict[int, list[int]]]:
    out = {}
    for direction, (qk, gk) in KINDS_OF.items():
        queries = toy["images"] if qk == "image" else toy["captions"]
        gallery = toy["images"] if gk == "image" else toy["captions"]
        out[direction] = {q: brute.ranking(q, gallery, lambda g, q=q: float(vectors[q] @ vectors[g])) for q in queries}
    return out


TARGETS = [f"{b}_{m}" for b in ("toy", "toy_half") for m in ("recalls", "map_at_r", "rprecision", "medr", "meanr")]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_registered_toy_collection_scores_through_every_input_kind(world, toy, registered, tmp_path, seed):
    rng = np.random.default_rng(seed)
    vectors = int_embeddings(rng, toy["images"] + toy["captions"])  # integer values: many ties
    expected = _brute(toy, vectors, False) | _brute(toy, vectors, True)
    resources = Resources(world.gt)
    images = np.stack([vectors[i] for i in toy["images"]])
    captions = np.stack([vectors[c] for c in toy["captions"]])
    ranked = _full_rankings(toy, vectors)
    path = tmp_path / "run.trec"
    write_lines(path, [line for d, lists in ranked.items() for line in run_lines(lists, d)])
    sources = {
        "ranked lists": Rankings(**ranked),
        "TREC run (flat arrays)": Rankings(**read_run_arrays(path)),
        "score matrix": ScoreMatrix(images @ captions.T),  # rows and columns in the collection's canonical order
        "embeddings": Embeddings(images, captions),
    }
    for label, source in sources.items():
        got = evaluate(source, TARGETS, KS, resources=resources).means()
        flat = {(m, d): v for m, by in got.items() for d, v in by.items()}
        assert flat == pytest.approx({(m, d): v for m, by in expected.items() for d, v in by.items()}, abs=1e-12), label
    by_benchmark = evaluate(Embeddings(images, captions), ks=KS, benchmarks=["toy"], resources=resources).means()
    assert by_benchmark.keys() == {f"toy_r{k}" for k in KS}
    assert all(by_benchmark[f"toy_r{k}"] == pytest.approx(expected[f"toy_r{k}"], abs=1e-12) for k in KS)


def test_the_registry_checks_every_name_a_benchmark_uses(registered):
    bad = [
        Benchmark("x1", "no_such_collection", (Task("t2i", "toy_pairs"),), "", "", ""),
        Benchmark("x2", "toy", (Task("t2i", "no_such_relation"),), "", "", ""),
        Benchmark("x3", "coco_5k", (Task("t2i", "toy_pairs"),), "", "", ""),  # a relation of another collection
        Benchmark("x4", "toy", (Task("t2i", "toy_pairs", "no_such_restriction"),), "", "", ""),
        Benchmark("toy", "toy", (Task("t2i", "toy_pairs"),), "", "", ""),  # defined twice
    ]
    for bench in bad:
        with pytest.raises(ValueError):
            REGISTRY.add(bench)
    with pytest.raises(EvaluationError, match="unknown collection 'nope'"):
        REGISTRY.collection("nope")


def test_the_model_path_reads_a_collections_items_from_its_entry(registered):
    """Where a toy benchmark's pixels and texts come from is its collection entry's data: the model path's item
    sets follow it (no table of the model path's own to edit)."""
    from eccv_metric.models.data.items import item_sets

    sets = item_sets(REGISTRY.get("toy"))
    assert [(s.collection, s.kind, s.source.config) for s in sets] == [
        ("toy", "image", "toy_images"),
        ("toy", "caption", "toy_captions"),
    ]
    assert sets[0].source.pixel_column == "image" and sets[1].source.text_column == "caption"
