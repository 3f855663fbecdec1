"""What looking at a 5K run costs: its tables, a query's view, a query set's filter, the HTML report, the Space's
Browse tab's first paint.

Two runs of stand-in embeddings (``--dims``, noise around each image's vector) over the real 5K split (the
``eccv_caption`` wheel's ids; ``--source-dir``: the CxC CSVs and the COCO instances JSON, for CxC's ratings and
PM), and a synthetic build of their pixels and texts (``--folder``, kept between runs: 5,000 JPEGs of 640 x 480,
about 88 KB each as COCO's, made as ``benchmark_models_world.py`` makes them, under the real ids; COCO-like
captions). Prints, the machine first:

- each run's tables of eccv i2t and t2i (``explore.table``: the engine's top 10 of every query, the marks, the
  per-query values): seconds;
- a query's view on a loaded table (``query_view``) over ``--views`` random queries: median and max, beside the
  engine's ``top`` for that one query (what a view would cost without its table): their ratio;
- the query sets (``query_sets(A, B)``: COCO's false negatives, A / B better, the worst, a sample): ms;
- ``eccv-caption explore A --vs B --html`` with the build's pixels and texts (``-n 8``, both directions): seconds
  and MB;
- ``--space``: the Space's Browse tab (the app in-process, headless Chromium at 1366 x 900, the build as its
  dataset, run A uploaded as run files): Show clicked to the first card drawn, cold (its tables loaded) and warm
  (another query set).

Usage::

    python scripts/benchmark_explore.py --source-dir ../shared/data --space
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmark_models_world import captions  # noqa: E402
from benchmark_models_world import coco_like_jpegs  # noqa: E402
from benchmark_timing import machine  # noqa: E402

from eccv_metric import REGISTRY  # noqa: E402
from eccv_metric import GroundTruth  # noqa: E402
from eccv_metric.benchmarks.resource_options import ResourceOptions  # noqa: E402
from eccv_metric.cli.main import main as cli  # noqa: E402
from eccv_metric.explore import query_sets  # noqa: E402
from eccv_metric.explore import query_view  # noqa: E402
from eccv_metric.explore import read_run  # noqa: E402
from eccv_metric.explore import table_of  # noqa: E402


def write_build(folder: Path, gt: GroundTruth, processes: int) -> Path:
    """The images and captions configs over the real ids (kept: written once)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = folder / "data" / "captions" / "test-0.parquet"
    if done.is_file():
        return folder
    jpegs = coco_like_jpegs(len(gt.image_ids), processes)
    names = [f"COCO_val2014_{i:012d}.jpg" for i in gt.image_ids.tolist()]
    for config in ("images", "captions"):
        (folder / "data" / config).mkdir(parents=True, exist_ok=True)
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    pq.write_table(pa.table({
        "image_id": pa.array(gt.image_ids, pa.int64()), "file_name": names,
        "image": pa.array([{"bytes": b, "path": n} for b, n in zip(jpegs, names, strict=True)], image),
    }), folder / "data" / "images" / "test-0.parquet", row_group_size=100)  # fmt: skip
    pq.write_table(pa.table({
        "caption_id": pa.array(gt.caption_ids, pa.int64()),
        "image_id": pa.array(gt.image_ids[gt.caption_image], pa.int64()), "caption": captions(len(gt.caption_ids)),
    }), done)  # fmt: skip
    return folder


def write_runs(folder: Path, gt: GroundTruth, dims: int) -> list[Path]:
    """Two runs' embeddings (run B noisier), as ``--save-embeddings`` writes a group's files."""
    rng = np.random.default_rng(0)
    images = rng.standard_normal((len(gt.image_ids), dims), np.float32)
    out = []
    for name, noise in (("run_a", 3.6), ("run_b", 4.0)):  # R@1 about a half: sets of every kind hold queries
        run = folder / name
        run.mkdir(parents=True, exist_ok=True)
        noisy = images[gt.caption_image] + noise * rng.standard_normal((len(gt.caption_ids), dims), np.float32)
        np.save(run / "image_embeddings.npy", images)
        np.save(run / "caption_embeddings.npy", noisy)
        out.append(run)
    return out


def space_first_paint(build: Path, run: Path, sources: Path | None) -> tuple[float, float]:
    """(cold, warm) seconds from Show clicked to the first card drawn in the Browse tab."""
    import importlib.util

    from playwright.sync_api import sync_playwright

    from eccv_metric import EVALUATE_MODULE_DIR

    os.environ["ECCV_CAPTION_DATA"] = str(build)
    if sources is not None:
        os.environ["ECCV_CAPTION_SOURCE_DIR"] = str(sources / "cxc")
    spec = importlib.util.spec_from_file_location("space_app", EVALUATE_MODULE_DIR / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)  # type: ignore[union-attr]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    demo = app.build()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.LAUNCH)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.set_default_timeout(600_000)
            page.goto(f"http://127.0.0.1:{port}/")
            if sources is not None:
                page.get_by_text("optional files: ids, COCO instances, benchmark sources").click()
                instances = sources / "coco" / "instances_karpathy_test.json"
                page.locator("#instances input[type=file]").set_input_files(str(instances))
                page.locator("#instances").get_by_text("instances_karpathy_test").first.wait_for()
            page.get_by_role("tab", name="Browse").click()
            page.get_by_text("run files (optional)").click()
            files = [str(run / "image_embeddings.npy"), str(run / "caption_embeddings.npy")]
            page.locator("#run_a input[type=file]").set_input_files(files)
            page.locator("#run_a").get_by_text("caption_embeddings").first.wait_for()
            page.get_by_text("run files (optional)").click()
            times = []
            for query_set in (None, "worst"):
                if query_set:
                    field = page.locator("#query_set input")
                    field.click()
                    page.get_by_role("option", name=re.compile(query_set)).first.click()
                before = page.evaluate(
                    "() => (document.querySelector('#browse_status .eccv-ok, #browse_status .eccv-error') || {})"
                    ".innerText || ''"
                )
                start = time.perf_counter()
                page.locator("#show").click()
                page.wait_for_function(  # a new status line (the answer)
                    "(before) => { const s = document.querySelector('#browse_status .eccv-ok, #browse_status "
                    ".eccv-error'); return s && s.innerText !== before; }",
                    arg=before,
                )
                if page.locator("#browse_status .eccv-error").count():
                    raise SystemExit(page.locator("#browse_status").inner_text())
                try:
                    page.locator("#cards .eccv-card").first.wait_for(timeout=120_000)  # then its cards drawn
                except Exception:
                    page.screenshot(path=str(build.parent / "browse_failed.png"))
                    print(page.locator("#browse_status").inner_text(), page.locator("#cards").inner_html()[:500])
                    raise
                times.append(time.perf_counter() - start)
                page.screenshot(path=str(build.parent / f"browse_{len(times)}.png"))
            browser.close()
    finally:
        demo.close()
    return times[0], times[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-dir", type=Path, help="../shared/data: cxc/*.csv and coco/instances_karpathy_test.json")
    p.add_argument("--folder", type=Path, default=Path("/tmp/eccv_explore_bm"))
    p.add_argument("--dims", type=int, default=256)
    p.add_argument("--views", type=int, default=2000)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--space", action="store_true", help="also the Browse tab's first paint (gradio, Chromium)")
    p.add_argument("--only-space", action="store_true", help="the Browse tab's first paint alone")
    args = p.parse_args()
    print(machine())
    gt = GroundTruth.from_wheel()
    src = args.source_dir
    options = ResourceOptions(instances_json=src / "coco" / "instances_karpathy_test.json", cxc_source=src / "cxc") \
        if src else ResourceOptions()  # fmt: skip
    resources = options.resources()
    started = time.perf_counter()
    build = write_build(args.folder / "build", gt, args.processes)
    print(f"the synthetic build's pixels and texts: {time.perf_counter() - started:.1f} s (kept in {build})")
    run_a, run_b = (read_run(path) for path in write_runs(args.folder, gt, args.dims))
    if args.only_space:
        cold, warm = space_first_paint(build, args.folder / "run_a", src)
        print(f"the Browse tab's first paint (Show to the first card): cold {cold:.1f} s, warm {warm:.2f} s")
        return 0
    rng = np.random.default_rng(1)
    for direction in ("i2t", "t2i"):
        started = time.perf_counter()
        table = table_of(run_a, "eccv", direction, resources)
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        other = table_of(run_b, "eccv", direction, resources)
        print(f"eccv {direction}: tables {loaded:.2f} s (A) and {time.perf_counter() - started:.2f} s (B); "
              f"{len(table.queries):,} queries; notes: {table.notes or 'none'}")  # fmt: skip
        picks = rng.choice(table.query_ids, min(args.views, len(table.queries)), replace=False).tolist()
        views: list[float] = []
        tops: list[float] = []
        source = run_a.input_for(REGISTRY.get("eccv"))
        for query in picks:
            started = time.perf_counter()
            query_view(run_a, "eccv", direction, query, resources=resources)
            views.append(time.perf_counter() - started)
        for query in picks[:50]:
            dense = table.view.queries.positions(np.asarray([query]))
            started = time.perf_counter()
            source.top(table.view, 10, dense.astype(np.int64))  # type: ignore[attr-defined]
            tops.append(time.perf_counter() - started)
        view_ms, top_ms = 1000 * np.median(views), 1000 * np.median(tops)
        print(f"  a query's view: median {view_ms:.3f} ms, 99th percentile {1000 * np.quantile(views, 0.99):.2f} ms "
              f"over {len(views):,} "
              f"queries; the engine's top 10 of one query: median {top_ms:.2f} ms; "
              f"ratio {view_ms / top_ms:.3f}")  # fmt: skip
        started = time.perf_counter()
        sets = query_sets(table, other)
        print(f"  the query sets: {1000 * (time.perf_counter() - started):.2f} ms "
              f"({', '.join(f'{s.name} {s.count:,}' for s in sets)})")  # fmt: skip
    report = args.folder / "report.html"
    flags = ["--data", str(build), "-q"] + ([] if not src else ["--instances-json", str(src / "coco" /
             "instances_karpathy_test.json"), "--cxc-source", str(src / "cxc")])  # fmt: skip
    started = time.perf_counter()
    assert cli(["explore", str(args.folder / "run_a"), "--vs", str(args.folder / "run_b"), "--html", str(report),
                *flags]) == 0  # fmt: skip
    print(f"explore --vs --html (two runs, both directions, 8 queries a set): {time.perf_counter() - started:.1f} s, "
          f"{report.stat().st_size / 2**20:.1f} MB")  # fmt: skip
    if args.space:
        cold, warm = space_first_paint(build, args.folder / "run_a", src)
        print(f"the Browse tab's first paint (Show to the first card): cold {cold:.1f} s (the tables loaded), "
              f"warm {warm:.2f} s (another set)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
