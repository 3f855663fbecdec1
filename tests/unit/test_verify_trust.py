"""The leaderboard's trust, piece by piece, without a Hub (issue 61, item 3): a number checked against its
per-query values alone, a recomputation compared with a task's second entry, the kept recomputations (a key
that does not match, a damaged file: not used), the entry a task shows once one is verified, and the marks."""

from __future__ import annotations

import json

from eccv_metric.evidence.check import DIFFERS
from eccv_metric.evidence.check import EQUAL
from eccv_metric.evidence.check import NOT_RECOMPUTABLE
from eccv_metric.evidence.check import Check
from eccv_metric.evidence.check import check_values
from eccv_metric.hub.published import Entry
from eccv_metric.hub.published import Published
from eccv_metric.hub.trust import NUMBER_ONLY
from eccv_metric.hub.trust import RECOMPUTED
from eccv_metric.hub.trust import VALUES_ONLY
from eccv_metric.hub.trust import Trust
from eccv_metric.hub.trust import share
from eccv_metric.hub.trust import trust_of
from eccv_metric.hub.verify_cache import Outcome
from eccv_metric.hub.verify_cache import load_outcome
from eccv_metric.hub.verify_cache import outcome_key
from eccv_metric.hub.verify_cache import store_outcome
from eccv_metric.hub.verify_hub import EVIDENCE
from eccv_metric.hub.verify_hub import NOT_ITS_OWN
from eccv_metric.hub.verify_hub import VALUES
from eccv_metric.hub.verify_hub import EntryCheck

VALUES_PQ = {
    "eccv_r1": {"i2t": {"query_ids": [1, 2, 3, 4], "values": [1.0, 0.0, 0.0, 1.0], "aggregate": "mean"}},
    "coco_5k_medr": {"t2i": {"query_ids": [1, 2, 3], "values": [1.0, 7.0, 2.0], "aggregate": "median"}},
}


def test_a_number_without_evidence_is_checked_against_its_per_query_values_alone():
    table = check_values({"eccv_r1": {"i2t": 50.0}, "coco_5k_medr": {"t2i": 2.0}}, VALUES_PQ, percent=True)
    assert [c.status for c in table.checks] == [NOT_RECOMPUTABLE, NOT_RECOMPUTABLE]  # never "equal": nothing scored
    assert table.checks[0].reason == "per-query values only (no evidence): the number is the mean of its 4"
    assert table.checks[1].reason == "per-query values only (no evidence): the number is the median of its 3"
    forged = check_values({"eccv_r1": {"i2t": 55.0}}, VALUES_PQ, percent=True).checks[0]
    assert forged.status == DIFFERS and forged.reason == "its 4 per-query values give 50.0 (-5); no evidence"
    missing = check_values({"eccv_r1": {"t2i": 50.0}}, VALUES_PQ).checks[0]
    assert missing.status == NOT_RECOMPUTABLE and "no per-query values of this number" in missing.reason


def test_a_recomputation_compared_with_a_second_entry():
    row = Check("eccv_r1", "i2t", EQUAL, 50.0, 50.0, queries=4, differing=0, label="eccv_r1_i2t", percent=True)
    assert row.against(50.0) == row
    assert row.against(60.0).status == DIFFERS and row.against(60.0).reason.startswith("recomputed 50.0 (-10)")
    bad_values = Check("eccv_r1", "i2t", DIFFERS, 50.0, 50.0, queries=4, differing=1)
    assert bad_values.against(50.0).status == DIFFERS  # its per-query values differ, whatever the number
    doubt = Check("eccv_r1", "i2t", NOT_RECOMPUTABLE, 50.0, why="a file is missing")
    assert doubt.against(1.0) == Check("eccv_r1", "i2t", NOT_RECOMPUTABLE, 1.0, why="a file is missing")


def test_a_kept_recomputation_is_used_only_for_its_own_key(tmp_path, monkeypatch):
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path))
    key = outcome_key("me/details", "a" * 40, "me/world", "b" * 40, None)
    rows = [Check("eccv_r1", "i2t", EQUAL, 50.0, 50.0, queries=4, differing=0, label="eccv_r1_i2t", percent=True)]
    assert load_outcome(key) is None
    kept = Outcome(rows, "d" * 64, ["a note"], "hf:me/clip", {"coco_5k/image_embeddings.npy": "e" * 64})
    store_outcome(key, kept)
    assert load_outcome(key) == kept
    assert load_outcome({**key, "revision": "c" * 40}) is None  # another revision of the benchmark: scored again
    assert load_outcome({**key, "package": "eccv-caption-hf 9.9"}) is None  # another engine
    (path,) = (tmp_path / "eccv_caption_verified").iterdir()
    held = json.loads(path.read_text())
    held["checks"][0]["recomputed"] = "50"
    path.write_text(json.dumps(held))
    assert load_outcome(key) is None  # a row that is not one: not used
    path.write_text("{")
    assert load_outcome(key) is None


def entry(task: str, value: float, file: str, details: tuple[str, str] | None = ("me/d", "a" * 40)) -> Entry:
    return Entry(task, value, file, details, "r" * 40, value * 100)


def test_a_task_shows_its_verified_entry_and_the_row_its_weakest_mark():
    ours, dup = entry("eccv_r1_i2t", 0.5, "a.yaml"), entry("eccv_r1_i2t", 0.6, "zz.yaml", None)
    other = entry("eccv_r1_t2i", 0.4, "b.yaml")
    published = Published("me/clip", entries=[ours, dup, other], details_of={("me/d", "a" * 40): "me/clip"})
    assert set(published.shown()) == {"eccv_r1_t2i"}  # the entries disagree, none verified: neither shown
    assert published.duplicates("me/clip") == [
        "note: me/clip has 2 entries for eccv_r1_i2t (a.yaml: 50, zz.yaml: 60): neither is shown until one is removed"
    ]
    arrays = (("coco_5k/image_embeddings.npy", "e" * 64),)
    row = lambda e, status, basis: EntryCheck(e, Check("eccv_r1", "i2t", status, e.value * 100), basis, "d" * 64,  # noqa: E731
                                              arrays)  # fmt: skip
    found = [row(ours, EQUAL, EVIDENCE), row(dup, NOT_RECOMPUTABLE, NOT_ITS_OWN), row(other, EQUAL, EVIDENCE)]
    trust = trust_of(published, found)
    assert published.shown()["eccv_r1_i2t"] is ours and published.details_commit() == ("me/d", "a" * 40)
    assert trust.mark == RECOMPUTED and trust.arrays == {"e" * 64: "coco_5k/image_embeddings.npy"}
    assert published.duplicates("me/clip")[0].endswith(
        "a.yaml is shown: its number is recomputed from its evidence, the other's is not"
    )
    mixed = trust_of(published, [found[0], row(other, NOT_RECOMPUTABLE, VALUES)])
    assert mixed.mark == VALUES_ONLY and mixed.notes("me/clip") == [
        "note: me/clip's numbers are not all alike (per-query only: eccv_r1_t2i; recomputed: eccv_r1_i2t): the row "
        "shows the weakest"
    ]


def test_evidence_shared_by_two_models_is_flagged_on_both():
    """Rows share evidence when they hold one score array in common (by the digest of its values), whatever else
    their evidence holds: the note names the arrays."""
    emb = {"e1": "coco_5k/image_embeddings.npy", "e2": "coco_5k/caption_embeddings.npy"}
    rows = {"me/clip": ("me/clip", Trust({"t": RECOMPUTED}, dict(emb))),
            "me/clip (PR #1)": ("me/clip", Trust({"t": RECOMPUTED}, dict(emb))),
            "spam/twin": ("spam/twin", Trust({"t": RECOMPUTED}, {"e1": "x/renamed.npy", "e3": "x/other.npy"})),
            "other/model": ("other/model", Trust({"t": NUMBER_ONLY}, {"e4": emb["e1"]}))}  # fmt: skip
    (note,) = share(rows)
    assert note.startswith("note: me/clip, me/clip (PR #1), spam/twin hold the same evidence arrays "
                           "(coco_5k/image_embeddings.npy): one run's numbers under several models")  # fmt: skip
    assert rows["spam/twin"][1].label == "recomputed, shared" and rows["other/model"][1].label == "number only"
    assert share({k: v for k, v in rows.items() if k != "spam/twin"}) == []  # a model and its pull request: one model


def test_a_published_value_is_compared_at_its_precision_never_an_error():
    """An entry's percent within half a unit of its last decimal (either rounding of a half), any exponent (1e-30
    raised decimal.InvalidOperation: one such entry stopped verify --from-hub and the whole leaderboard); a results
    file's fraction, written with every digit, only as the same float."""
    from eccv_metric.evidence.check import same

    assert same(0.17, 0.165) and same(0.16, 0.165) and same(5.7, 5.65) and not same(5.7, 5.64)
    assert not same(1e-30, 5.69) and not same(5.69, 1e-30) and same(1e-30, 1e-30)
    assert not same(0.1, 0.0546875, exact=True) and same(0.0546875, 0.0546875, exact=True)
    row = Check("eccv_r1", "i2t", EQUAL, 50.0, 50.0, queries=4, differing=0, label="eccv_r1_i2t", percent=True)
    assert row.against(1e-30).status == DIFFERS and "recomputed 50.0" in row.against(1e-30).reason
    assert check_values({"eccv_r1": {"i2t": 1e-30}}, VALUES_PQ, percent=True).checks[0].status == DIFFERS


def test_details_of_other_types_are_one_line_never_a_traceback():
    """A details commit's results.json config that names no metric, a Parquet that is none or of other types: one
    EvaluationError line (the leaderboard reads every model's details: a TypeError or ArrowInvalid stopped it)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytest

    from eccv_metric.core.errors import EvaluationError
    from eccv_metric.hub.details import parquet_bytes
    from eccv_metric.hub.details import per_query_from

    good = parquet_bytes([1, 2], [1.0, 0.0])
    cases = {
        "names no metric and direction": ({"c": "eccv_r1"}, {"c": good}),
        "Parquet cannot be read": ({"c": {"metric": "eccv_r1", "direction": "i2t"}}, {"c": b"no parquet"}),
    }
    sink = io.BytesIO()
    pq.write_table(pa.table({"query_id": ["a"], "value": ["b"]}), sink)
    cases[r"not query_id \(int64\), value \(double\)"] = ({"c": {"metric": "eccv_r1", "direction": "i2t"}},
                                                     {"c": sink.getvalue()})  # fmt: skip
    for words, (configs, parquet) in cases.items():
        with pytest.raises(EvaluationError, match=words):
            per_query_from({"configs": configs}, parquet, "the details x/y@0123")
    got = per_query_from({"configs": {"c": {"metric": "eccv_r1", "direction": "i2t"}}}, {"c": good}, "w")
    assert got == {"eccv_r1": {"i2t": {"query_ids": [1, 2], "values": [1.0, 0.0], "aggregate": "mean"}}}


class Answering:
    """A Hub client (the boundary verify_published reads through) whose details read ends in ``failure``."""

    token, endpoint = None, "http://127.0.0.1:9"

    def __init__(self, failure: Exception):
        self.failure = failure

    def dataset_info(self, *args, **kwargs):
        raise self.failure


def test_what_stops_one_details_commit_is_its_rows_never_the_boards():
    """Review of issue 61: an error of any other kind while one details commit was checked stopped the whole
    leaderboard. The Hub failing is "not checked" with the Hub's line; anything else (a bug, a full disk) is "not
    checked" too, named, never a verdict and never a crash; the commit's entries only."""
    from eccv_metric.hub.trust import NOT_CHECKED
    from eccv_metric.hub.trust import mark_of
    from eccv_metric.hub.verify_hub import FAILED
    from eccv_metric.hub.verify_hub import UNREAD
    from eccv_metric.hub.verify_hub import verify_published

    published = Published("me/clip", entries=[entry("eccv_r1_i2t", 0.5, "a.yaml"), entry("eccv_r1_t2i", 0.4, "b.yaml",
                          None)], details_of={("me/d", "a" * 40): "me/clip"})  # fmt: skip
    for failure, basis, words in (
        (OSError(28, "No space left on device"), FAILED,
         f"checking the details me/d@{'a' * 12} failed (OSError: [Errno 28] No space left on device)"),
        (ConnectionError("Connection refused"), UNREAD, "failed: could not reach the Hub at "),
    ):  # fmt: skip
        found = verify_published(Answering(failure), published, "me/world", "leaderboard", cache=True)
        ours, hand = sorted(found.entries, key=lambda c: c.entry.file)
        assert (ours.basis, mark_of(ours)) == (basis, NOT_CHECKED) and words in ours.check.why, ours.check.why
        assert mark_of(hand) == NUMBER_ONLY  # the entry with no details stands as it is
