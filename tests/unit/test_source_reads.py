"""The models of one call read each item set once (the data source keeps what it read): a sweep of 25 models
reads its captions and image locations once, not 25 times."""

from __future__ import annotations

import pytest

from eccv_metric.models.data.source import DataSource


@pytest.fixture
def reads(monkeypatch):
    """Every set read from the files, by label."""
    seen: list[str] = []
    real = DataSource.read_now

    def recorded(self, item_set):  # noqa: ANN001, ANN202
        seen.append(item_set.label)
        return real(self, item_set)

    monkeypatch.setattr(DataSource, "read_now", recorded)
    return seen


def test_the_models_of_one_call_read_each_set_once(world, data, clip, tmp_path, reads):
    from eccv_metric.models.many import evaluate_models

    runs = evaluate_models([f"hf:{clip}", f"hf:{clip}"], data, benchmarks=["coco_5k"], resources=world.resources(),
                           workers=0, batch_size=8, cache=False, n_resamples=10)  # fmt: skip
    assert len(reads) == len(runs[0].provenance["items"]) == 2
