"""The real downloading code against a local HTTP server (Range requests, flaky answers, digests)."""

from __future__ import annotations

import threading
import zipfile
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from eccv_caption_dataset.hub_folder import build
from eccv_caption_dataset.sources import SourceError
from eccv_caption_dataset.sources import Urls
from eccv_caption_dataset.sources import download
from eccv_caption_dataset.sources import resolve
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.groundtruth.split import WHEEL_FILES
from eccv_metric.groundtruth.split import wheel_data_dir
from tests.fixtures import SHARED


class Files(BaseHTTPRequestHandler):
    """Serves ``root``; honours Range; fails the first ``fail_first`` requests of a path with a 500."""

    root: Path = Path(".")
    seen: list = []
    fail_first: dict = {}

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        Files.seen.append((self.path, self.headers.get("Range")))
        if Files.fail_first.get(self.path, 0) > 0:
            Files.fail_first[self.path] -= 1
            self.send_error(500)
            return
        path = Files.root / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])


@pytest.fixture()
def server(tmp_path):
    Files.root, Files.seen, Files.fail_first = tmp_path / "www", [], {}
    Files.root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


def test_download_checks_sha256_resumes_and_retries(server, tmp_path):
    name = "eccv_caption_to_image.json"
    data = (wheel_data_dir() / name).read_bytes()
    (Files.root / name).write_bytes(data)
    dest = tmp_path / "cache" / name
    assert download(server + name, dest, sha256=WHEEL_FILES[name]).read_bytes() == data

    bad = tmp_path / "cache" / "bad.json"
    with pytest.raises(SourceError, match="sha256 mismatch"):
        download(server + name, bad, sha256="0" * 64)
    assert not bad.exists() and not bad.with_name("bad.json.part").exists()

    resumed = tmp_path / "cache" / "resumed.json"
    resumed.with_name("resumed.json.part").write_bytes(data[:1000])
    Files.seen.clear()
    assert download(server + name, resumed, sha256=WHEEL_FILES[name]).read_bytes() == data
    assert Files.seen == [("/" + name, "bytes=1000-")]

    Files.fail_first["/" + name] = 2
    flaky = tmp_path / "cache" / "flaky.json"
    assert download(server + name, flaky, retries=3).read_bytes() == data
    Files.fail_first["/" + name] = 3
    with pytest.raises(SourceError, match="after 3 attempts"):
        download(server + name, tmp_path / "cache" / "never.json", retries=3)


def test_build_from_downloaded_sources_equals_the_local_build(server, tmp_path):
    """COCO annotations zip, CxC CSVs and per-image URLs, all fetched over HTTP."""
    with zipfile.ZipFile(Files.root / "annotations_trainval2014.zip", "w") as archive:
        archive.write(SHARED / "coco" / "captions_karpathy_test.json", "annotations/captions_val2014.json")
        archive.write(SHARED / "coco" / "instances_karpathy_test.json", "annotations/instances_val2014.json")
    (Files.root / "cxc").mkdir()
    for csv in ("sits_test.csv", "sts_test.csv", "sis_test.csv"):
        (Files.root / "cxc" / csv).write_bytes((SHARED / "cxc" / csv).read_bytes())
    for rel in (f.path for entry in REGISTRY.collections() for f in entry.files):
        (Files.root / "fg" / rel).parent.mkdir(parents=True, exist_ok=True)
        (Files.root / "fg" / rel).write_bytes((SHARED / "mscoco_fg" / rel.rsplit("/", 1)[1]).read_bytes())
    (Files.root / "val2014").mkdir()
    images = sorted((SHARED / "coco" / "val2014").glob("*.jpg"))[:3]
    for img in images:
        (Files.root / "val2014" / img.name).write_bytes(img.read_bytes())
    urls = Urls(
        cxc_raw=server + "cxc/",
        coco_annotations_zip=server + "annotations_trainval2014.zip",
        coco_images=server + "val2014/",
        fg_raw=server + "fg/",
    )
    wanted = [int(p.stem.rsplit("_", 1)[1]) for p in images] + [391895]  # the last one is not served
    report = build(
        tmp_path / "out",
        download=True,
        urls=urls,
        cache_dir=tmp_path / "cache",
        embed_image_ids=wanted,
        configs=["images", "captions", "cxc_ratings", "mscoco_fg_captions"],
        log=lambda _: None,
    )
    built = {"images": 5000, "captions": 25000, "cxc_ratings": 135597, "mscoco_fg_captions": 25000}
    assert report["built"] == built
    assert report["images_missing"] == [391895]
    table = pq.read_table(tmp_path / "out" / "data" / "images").to_pydict()
    embedded = {i: im["bytes"] for i, im in zip(table["image_id"], table["image"], strict=True) if im}
    assert embedded == {int(p.stem.rsplit("_", 1)[1]): p.read_bytes() for p in images}
    local = resolve(SHARED)
    assert local.digests["sits_test.csv"] == report["sources"]["sits_test.csv"]


def test_images_from_a_val2014_zip(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    jpg = sorted((SHARED / "coco" / "val2014").glob("*.jpg"))[0]
    with zipfile.ZipFile(src / "val2014.zip", "w") as archive:
        archive.write(jpg, f"val2014/{jpg.name}")
    sources = resolve(src)
    assert sources.image_zip == src / "val2014.zip" and sources.image_dir is None
    assert sources.image_bytes(jpg.name) == jpg.read_bytes()
    assert sources.image_bytes("COCO_val2014_000000000001.jpg") is None
