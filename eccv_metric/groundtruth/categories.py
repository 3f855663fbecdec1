"""COCO categories of the test images (for PM / PMRP): from an instances JSON or a built dataset folder."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.folder import read_config
from eccv_metric.core.ids import IdIndex
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object


def categories_matrix(image_categories: Mapping[int, Iterable[int]], images: IdIndex) -> np.ndarray:
    """Bool matrix (images x (max category id + 1)); images absent from the mapping get no category."""
    ids = [int(i) for i in image_categories]
    pos = images.positions(np.asarray(ids, dtype=np.int64)) if ids else np.zeros(0, np.int32)
    rows, cols = [], []
    for p, cats in zip(pos.tolist(), image_categories.values(), strict=True):
        if p < 0:
            continue
        for c in cats:
            rows.append(p)
            cols.append(int(c))
    n_cat = max(cols, default=0) + 1
    if cols and min(cols) < 0:
        raise EvaluationError("COCO category ids must be non-negative")
    out = np.zeros((len(images), n_cat), dtype=bool)
    out[rows, cols] = True
    return out


def load_instance_categories(
    path: str | Path, image_ids: np.ndarray | None = None
) -> tuple[dict[int, set[int]], dict[int, str]]:
    """Category ids present in each image of a COCO-format instances JSON, and category names.

    Reads ``annotations[*].image_id`` / ``category_id``, ``images[*].id`` and
    ``categories``. A folder is read as a built dataset (its ``images``
    config's categories). With ``image_ids`` (the test split), every test
    image must be covered: annotated, or listed in ``images`` (COCO lists the
    images that have no annotation there); a partial file would silently
    shrink PMRP to the images it covers.
    """
    if Path(path).is_dir():
        coded = dataset_categories(path)
        if coded is None:
            raise EvaluationError(
                f"{path} is a folder without COCO categories: give a COCO instances JSON file or a folder built "
                "by `eccv-caption build` with the COCO instances"
            )
        per_image, names = coded
        listed: set[int] = set(per_image)
    else:
        per_image, names, listed = _read_instances(path)
    if image_ids is not None:
        covered = np.fromiter(set(per_image) | listed, np.int64)
        missing = np.asarray(image_ids)[~np.isin(image_ids, covered)]
        if len(missing):
            raise EvaluationError(
                f"{path}: the COCO instances do not cover the test split: {len(missing)} of the "
                f"{len(image_ids)} test images are neither annotated nor listed in 'images': {preview(missing)} "
                "(give the full instances_val2014.json)"
            )
    return per_image, names


def _read_instances(path: str | Path) -> tuple[dict[int, set[int]], dict[int, str], set[int]]:
    expected = "a COCO-format instances JSON (e.g. annotations/instances_val2014.json)"
    raw = require_object(read_json(path, expected), path, expected)
    per_image: dict[int, set[int]] = {}
    try:
        for k, ann in enumerate(raw["annotations"]):
            image, category = ann["image_id"], ann["category_id"]
            if type(image) is not int or type(category) is not int or category < 0:
                raise EvaluationError(
                    f"{path}: annotations[{k}]: image_id and category_id must be non-negative integers, "
                    f"got {image!r}, {category!r}"
                )
            per_image.setdefault(image, set()).add(category)
        listed = {img["id"] for img in raw.get("images", [])}
        names = {int(c["id"]): str(c["name"]) for c in raw.get("categories", [])}
    except (KeyError, TypeError, ValueError) as exc:
        raise EvaluationError(f"{path}: not {expected}: missing or malformed field {exc}") from None
    if any(type(i) is not int for i in listed):
        raise EvaluationError(f"{path}: images[*].id must be integers")
    return per_image, names, listed


def dataset_categories(
    source: str | Path, token: str | None = None
) -> tuple[dict[int, set[int]], dict[int, str]] | None:
    """Categories of a built dataset's ``images`` config (names coded 1..n); None when it has none."""
    table = read_config(source, "images", ["image_id", "categories"], token)
    if table is None:
        return None
    rows = table.to_pydict()
    vocab = sorted({n for c in rows["categories"] if c for n in c})
    if not vocab:
        return None
    code = {n: i + 1 for i, n in enumerate(vocab)}
    per_image = {int(i): {code[n] for n in c or ()} for i, c in zip(rows["image_id"], rows["categories"], strict=True)}
    return per_image, {i: n for n, i in code.items()}
