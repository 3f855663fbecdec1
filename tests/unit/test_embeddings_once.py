"""Embeddings: the image-caption similarity matrix is multiplied once, though both directions ask for it at once;
the lock that guards it is the object's own (a pickled or copied Embeddings gets a new one)."""

from __future__ import annotations

import threading
import time

import numpy as np

from eccv_metric import Embeddings
from eccv_metric import evaluate
from eccv_metric.inputs import embeddings
from tests.unit.test_matrix import Setup
from tests.unit.world import make_world


def test_both_directions_share_one_product(tmp_path, monkeypatch):
    world = make_world(tmp_path)
    setup = Setup(world, "coco_5k", "embeddings")
    source = setup.make_input(tmp_path)
    assert isinstance(source, Embeddings)
    want = evaluate(setup.make_input(tmp_path), ["coco_5k_recalls", "eccv_map_at_r"], resources=world.resources())
    built = []
    slow = embeddings.distinct_rows

    def counted(arr: np.ndarray):  # slow enough that the two directions' threads would both start a product
        built.append(threading.current_thread().name)
        time.sleep(0.2)
        return slow(arr)

    monkeypatch.setattr(embeddings, "distinct_rows", counted)
    got = evaluate(source, ["coco_5k_recalls", "eccv_map_at_r"], resources=world.resources())
    assert len(built) == 2  # images and captions once: one product for i2t and t2i
    assert len(set(built)) == 1
    for metric in want:
        for direction, scores in want[metric].items():
            np.testing.assert_array_equal(got[metric][direction].values, scores.values)


def test_embeddings_pickle_and_copy():
    import copy
    import pickle

    emb = Embeddings(np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32))
    for twin in (pickle.loads(pickle.dumps(emb)), copy.deepcopy(emb)):
        assert np.array_equal(twin.vectors["image"], emb.vectors["image"]) and twin._building is not emb._building
