"""Ground truth from the eccv_caption wheel, checked against the paper's counts and real COCO files."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import GroundTruth
from eccv_metric.groundtruth.split import load_id_lists
from eccv_metric.groundtruth.split import wheel_data_dir
from tests.fixtures import SHARED


def test_split_ids_and_folds(gt):
    assert len(gt.image_ids) == 5000 and len(gt.caption_ids) == 25000
    assert np.array_equal(gt.caption_ids, np.load(wheel_data_dir() / "coco_test_ids.npy"))
    assert np.bincount(gt.caption_fold).tolist() == [5000] * 5
    assert np.bincount(gt.image_fold).tolist() == [1000] * 5
    # every image has its 5 captions in its own fold
    assert np.bincount(gt.caption_image).tolist() == [5] * 5000
    assert np.array_equal(gt.image_fold[gt.caption_image], gt.caption_fold)


def test_karpathy_order_matches_real_coco_captions(gt):
    raw = json.loads((SHARED / "coco" / "captions_karpathy_test.json").read_text())
    ann_ids = [a["id"] for a in raw["annotations"]]
    assert ann_ids == gt.caption_ids.tolist()
    image_of = {a["id"]: a["image_id"] for a in raw["annotations"]}
    assert [image_of[c] for c in gt.caption_ids.tolist()] == gt.image_ids[gt.caption_image].tolist()
    first_seen = list(dict.fromkeys(image_of[c] for c in ann_ids))
    assert first_seen == gt.image_ids.tolist()


def test_eccv_counts_are_the_papers(gt):
    i2t, t2i = gt.positives["eccv"]["i2t"], gt.positives["eccv"]["t2i"]
    assert (len(i2t.query), int(i2t.n_positives.sum())) == (1261, 22550)
    assert (len(t2i.query), int(t2i.n_positives.sum())) == (1332, 11279)
    assert int(i2t.n_positives.max()) == 48 and int(t2i.n_positives.max()) == 19


def test_cxc_and_coco_counts(gt):
    cxc = gt.positives["cxc"]
    assert (len(cxc["t2i"].query), int(cxc["t2i"].n_positives.sum())) == (24972, 35585)
    assert (len(cxc["i2t"].query), int(cxc["i2t"].n_positives.sum())) == (5000, 35585)
    coco = gt.positives["coco"]
    assert coco["i2t"].n_positives.tolist() == [5] * 5000
    assert coco["t2i"].n_positives.tolist() == [1] * 25000


def test_positives_outside_the_split_are_kept_and_counted(gt):
    """Two ECCV i2t lists name a caption id that is not a test caption; R counts it (as the official does)."""
    eccv = gt.positives["eccv"]["i2t"]
    outside = {int(gt.image_ids[q]): ids for q, ids in eccv.outside.items()}
    assert outside == {575916: (144675,), 421999: (467259,)}
    raw = load_id_lists(wheel_data_dir() / "eccv_image_to_caption.json")
    k = int(np.flatnonzero(eccv.query == gt.images.positions(np.array([575916]))[0])[0])
    assert eccv.n_positives[k] == len(set(raw[575916]))


@pytest.mark.parametrize("bench,prefix", [("coco", "original"), ("cxc", "cxc"), ("eccv", "eccv")])
def test_lists_round_trip_to_the_wheel_json(gt, bench, prefix):
    for direction, name in (("i2t", "image_to_caption"), ("t2i", "caption_to_image")):
        raw = load_id_lists(wheel_data_dir() / f"{prefix}_{name}.json")
        ours = gt.positives[bench][direction].to_id_lists(
            gt.query_index(direction).ids, gt.gallery_index(direction).ids
        )
        assert ours == {k: sorted(set(v)) for k, v in raw.items()}


def test_wheel_files_are_checked_by_sha256(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(wheel_data_dir(), data)
    raw = json.loads((data / "eccv_caption_to_image.json").read_text())
    raw.popitem()
    (data / "eccv_caption_to_image.json").write_text(json.dumps(raw))
    with pytest.raises(EvaluationError, match="sha256"):
        GroundTruth.from_wheel(data_dir=data)
    assert len(GroundTruth.from_wheel(data_dir=data, verify=False).positives["eccv"]["t2i"].query) == 1331


def test_caption_order_must_keep_images_within_a_fold(gt):
    lists = {
        b: {d: gt.positives[b][d].to_id_lists(gt.query_index(d).ids, gt.gallery_index(d).ids) for d in ("i2t", "t2i")}
        for b in ("coco",)
    }
    ids = gt.caption_ids.copy()
    ids[[4999, 5000]] = ids[[5000, 4999]]  # move one caption of the last fold-0 image into fold 1
    with pytest.raises(EvaluationError, match="fold"):
        GroundTruth.from_id_lists(ids, lists)
    same = GroundTruth.from_id_lists(gt.caption_ids, lists)
    assert np.array_equal(same.image_ids, gt.image_ids)


def same_ground_truth(a: GroundTruth, b: GroundTruth) -> bool:
    if not (np.array_equal(a.image_ids, b.image_ids) and np.array_equal(a.caption_ids, b.caption_ids)):
        return False
    if not np.array_equal(a.caption_image, b.caption_image) or set(a.positives) != set(b.positives):
        return False
    for bench, by_dir in a.positives.items():
        for direction, x in by_dir.items():
            y = b.positives[bench][direction]
            for name in ("query", "indptr", "indices"):
                if not np.array_equal(getattr(x, name), getattr(y, name)):
                    return False
            if x.outside != y.outside or x.n_gallery != y.n_gallery:
                return False
    return True


def test_wheel_ground_truth_is_cached_as_arrays(tmp_path, monkeypatch):
    """The parsed wheel is written once as arrays; reading them back gives the same ground truth, a damaged
    entry is rebuilt, an unwritable folder or ECCV_CAPTION_NO_GT_CACHE means no cache (never an error)."""
    parsed = GroundTruth._parse_wheel(wheel_data_dir())
    assert sum(len(p.outside) for p in parsed.positives["eccv"].values()) == 2  # outside ids survive the cache
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    first = GroundTruth.from_wheel()
    entries = list((tmp_path / "cache").rglob("*.npz"))
    assert len(entries) == 1 and not list((tmp_path / "cache").rglob("*.tmp"))
    second = GroundTruth.from_wheel()
    assert same_ground_truth(parsed, first) and same_ground_truth(parsed, second)
    entries[0].write_bytes(b"not an npz")
    assert same_ground_truth(parsed, GroundTruth.from_wheel())
    assert entries[0].read_bytes()[:2] == b"PK"  # rewritten
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "file"))  # cannot hold a folder
    assert same_ground_truth(parsed, GroundTruth.from_wheel())
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "off"))
    monkeypatch.setenv("ECCV_CAPTION_NO_GT_CACHE", "1")
    assert same_ground_truth(parsed, GroundTruth.from_wheel())
    assert not (tmp_path / "off").exists()


@pytest.mark.parametrize("max_count", [1, 5, 48, 200])
def test_positives_hits_equal_set_membership(max_count):
    """``Positives.hits`` (columns of positives by decreasing count, or the sorted lookup beyond 64 per query)
    against a set-membership loop written here: uneven counts, queries whose only positive is outside the
    gallery, padded items (-1), ranked lists with and without positives."""
    from eccv_metric.core.positives import Positives

    rng = np.random.default_rng(max_count)
    n_query, n_gallery, depth = 300, 400, 30
    counts = rng.integers(1, max_count + 1, n_query)
    q = np.repeat(np.arange(n_query), counts)
    g = np.concatenate([rng.choice(n_gallery, c, replace=False) for c in counts])
    outside_only = {int(x): (10**9 + int(x),) for x in rng.choice(n_query, 20, replace=False)}
    keep = ~np.isin(q, list(outside_only))
    rel = Positives.from_pairs(q[keep], g[keep], n_gallery, outside_only)
    assert len(rel.query) == n_query  # outside-only queries are stored, with no in-gallery positive
    items = np.stack([rng.choice(n_gallery, depth, replace=False) for _ in range(n_query)]).astype(np.int32)
    items[rng.random(items.shape) < 0.1] = -1
    positive = {(int(a), int(b)) for a, b in zip(*rel.pairs(), strict=True)}
    expected = np.array(
        [[(int(rel.query[k]), int(items[k, i])) in positive for i in range(depth)] for k in range(n_query)]
    )
    assert expected.any() and not expected.all()
    assert np.array_equal(rel.hits(items), expected)
    assert np.array_equal(rel.hits(items[:, :7]), expected[:, :7])
    assert rel.hits(items[:, :0]).shape == (n_query, 0)


@pytest.mark.parametrize("with_zero", [False, True])
def test_id_index_positions_refuse_out_of_range_ids(with_zero):
    """Negative ids, ids past the largest and uint64 ids past int64 are never mapped onto an id (the table's
    clip sends them to its first or sentinel slot), whether or not 0 is an id; equal to a dict lookup."""
    from eccv_metric.core.ids import IdIndex

    ids = np.array([7, 3, 12, 40] + ([0] if with_zero else []))
    index = IdIndex(ids, "image")
    where = {int(x): k for k, x in enumerate(ids)}
    probes = [0, 1, 3, 7, 12, 39, 40, 41, 42, 10**6, -1, -7, -(2**63), 2**63 - 1]
    for dtype in (np.int64, np.int32):
        arr = np.array([p for p in probes if np.iinfo(dtype).min <= p <= np.iinfo(dtype).max], dtype=dtype)
        assert index.positions(arr).tolist() == [where.get(int(p), -1) for p in arr]
    unsigned = np.array([0, 3, 40, 41, 2**63, 2**63 + 3, 2**64 - 1], dtype=np.uint64)
    assert index.positions(unsigned).tolist() == [where.get(int(p), -1) for p in unsigned]
    assert index.positions(np.array([[3, -1], [40, 41]])).tolist() == [[where[3], -1], [where[40], -1]]
