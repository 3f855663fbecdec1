"""What ``evaluate -o`` records beside the numbers: the run's date, the package, digests, who produced the lists.

The digests are recomputed here from their definition (sha256 of the JSON text with sorted keys and no spaces),
not with the package's function; the date is checked to be the run's (between the test's clock before and after).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC
from datetime import datetime

from eccv_metric.api.evaluate import default_resources
from eccv_metric.cli.main import main
from eccv_metric.core.provenance import build_digests


def sha256_of(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def run(tmp_path, capsys, *args: str) -> tuple[dict, dict, datetime, datetime]:
    before = datetime.now(UTC).replace(microsecond=0)
    out, pq = tmp_path / "res.json", tmp_path / "pq.json"
    assert main(["evaluate", *args, "-o", str(out), "--per-query", str(pq), "--quiet"]) == 0
    after = datetime.now(UTC)
    capsys.readouterr()
    return json.loads(out.read_text()), json.loads(pq.read_text()), before, after


def predictions(tmp_path, name: str = "ECCVCaption_eccv-i2t_predictions.json") -> str:
    """MTEB predictions of three ECCV Caption i2t queries (their true captions first)."""
    gt = default_resources().gt
    images = [int(i) for i in gt.image_ids[:3]]
    by_image = {i: [int(c) for c, im in zip(gt.caption_ids, gt.caption_image, strict=True) if gt.image_ids[im] == i]
                for i in images}  # fmt: skip
    lists = {f"image-{i}": {f"caption-{c}": 10.0 - k for k, c in enumerate(by_image[i])} for i in images}
    meta = {"mteb_model_meta": {"model_name": "org/clip", "revision": "abc"}}
    path = tmp_path / name
    path.write_text(json.dumps(meta | {"eccv-i2t": {"test": lists}}))
    return str(path)


def test_results_from_files_record_the_date_and_digests(tmp_path, capsys):
    written, per_query, before, after = run(tmp_path, capsys, "--run", predictions(tmp_path), "--partial",
                                            "--metrics", "eccv_r1", "eccv_r5")  # fmt: skip
    provenance = written.pop("provenance")
    date = datetime.strptime(provenance["date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= date <= after
    assert provenance["package"] == "eccv-caption-hf 0.2.0"
    assert provenance["partial"] is True  # push-results refuses a number of some queries only
    sealed = {k: v for k, v in provenance.items() if k != "digests"}  # every field: the model, the date...
    assert provenance["digests"] == {"results": sha256_of(written), "per_query": sha256_of(per_query),
                                     "provenance": sha256_of(sealed)}  # fmt: skip
    assert "/" not in json.dumps({k: v for k, v in provenance.items() if k != "date"}).replace("org/clip", "")


def test_mteb_predictions_name_their_producer_model_and_tasks(tmp_path, capsys):
    """MTEB's runs are publishable: the provenance says MTEB produced the lists, for which model and tasks."""
    written = run(tmp_path, capsys, "--run", predictions(tmp_path), "--partial", "--metrics", "eccv_r1")[0]
    provenance = written["provenance"]
    assert (provenance["producer"], provenance["model"]) == ("mteb", "mteb:org/clip")
    assert provenance["mteb"] == {"model_name": "org/clip", "revision": "abc",
                                  "tasks": {"ECCVCaption_eccv-i2t": ["eccv-i2t"]}}  # fmt: skip
    renamed = run(tmp_path, capsys, "--run", predictions(tmp_path, "p.json"), "--partial", "--metrics", "eccv_r1")[0]
    assert renamed["provenance"]["mteb"]["tasks"] == {"ECCVCaption_eccv-i2t": ["eccv-i2t"]}  # from the subsets


def test_the_json_on_stdout_is_the_numbers_alone(tmp_path, capsys):
    assert main(["evaluate", "--run", predictions(tmp_path), "--partial", "--metrics", "eccv_r1", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"eccv_r1"}


def test_a_local_builds_digests_are_those_the_run_made_still_current(tmp_path):
    data = tmp_path / "build" / "data" / "positives"
    data.mkdir(parents=True)
    for name in ("a.parquet", "b.parquet"):
        (data / name).write_bytes(b"PAR1")
    (tmp_path / "other.parquet").write_bytes(b"x")
    root = str(tmp_path / "build")
    real = {str((data / n).resolve()): [n, n.upper()] for n in ("a.parquet", "b.parquet")}
    known = {**real, str((tmp_path / "other.parquet").resolve()): ["o", "O"]}
    stamps = {str((data / "a.parquet").resolve()): "a.parquet", str((data / "b.parquet").resolve()): "changed"}
    got = build_digests(root, known, lambda name: stamps.get(name))
    assert got == {"data/positives/a.parquet": "A.PARQUET"}  # b changed since; a file outside data/ is not the build's
    assert build_digests(None, known, lambda name: None) is None  # a Hub repo: its commit names it
