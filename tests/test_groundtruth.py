"""Ground truth from the eccv_caption wheel, checked against the paper's counts and real COCO files."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from eccv_metric import EvaluationError
from eccv_metric import GroundTruth
from eccv_metric.groundtruth import load_id_lists
from eccv_metric.groundtruth import wheel_data_dir
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
