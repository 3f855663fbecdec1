"""A model run's skipped benchmarks in a few lines: one for every benchmark whose images have no pixels (which,
how many, the --images of each source), one per other reason; each benchmark's reason stays in provenance."""

from __future__ import annotations

import json

from eccv_metric.cli.model import skipped_lines

VAL = "COCO val2014 images: --images <val2014 folder or val2014.zip>, or a build with its images config"
UNLABELED = "COCO unlabeled2017 images: --images <unlabeled2017 folder or unlabeled2017.zip>"
FLICKR = "Flickr30K images: --images <flickr30k-images folder or zip>"


def test_pixel_skips_are_one_line_naming_each_source_once():
    coco = {b: f"{b}: 4,957 of 5,000 images have no pixels (4,957 val2014: {VAL})" for b in ("coco_1k", "eccv", "cxc")}
    skipped = coco | {
        "mscoco_fg": f"mscoco_fg: 31,201 of 31,244 images have no pixels (4,957 val2014: {VAL}; 26,244 unlabeled2017: "
        f"{UNLABELED})",
        "cxc_sts": "cxc_sts: needs the CxC ratings (--cxc-source or --source-dir)",
        "cxc_sis": "cxc_sis: needs the CxC ratings (--cxc-source or --source-dir)",
        "pm": "pm: 3 of 100 items have no caption text",
    }
    lines = skipped_lines(skipped)
    assert lines == [
        f"skipped 4 benchmarks whose images have no pixels (coco_1k, eccv, cxc and 1 more): {VAL}; {UNLABELED} "
        "(each benchmark and why: --json, or provenance.skipped in the -o file)",
        "skipped cxc_sts, cxc_sis: needs the CxC ratings (--cxc-source or --source-dir)",
        "skipped pm: 3 of 100 items have no caption text",
    ]
    flickr = {"flickr30k_fg_original_pool": f"flickr30k_fg_original_pool: 1,000 of 1,000 images have no pixels "
                                            f"(1,000 flickr30k: {FLICKR})"}  # fmt: skip
    assert skipped_lines(flickr) == [
        f"skipped 1 benchmark whose images have no pixels (flickr30k_fg_original_pool): {FLICKR} (each benchmark "
        "and why: --json, or provenance.skipped in the -o file)"
    ]
    assert skipped_lines({}) == []


def test_a_run_without_pixels_says_so_in_one_line(world, clip, tmp_path, capsys, monkeypatch):
    import eccv_metric.models.plan
    from eccv_metric.cli.main import main
    from tests.unit.model_world import write_data

    data = write_data(world, tmp_path / "data", skip_pixels=tuple(world.image_ids[:3]))
    monkeypatch.setattr(eccv_metric.models.plan, "default_resources", lambda source, options=None: world.resources())
    monkeypatch.setenv("ECCV_CAPTION_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "res.json"
    argv = ["evaluate", "--model", f"hf:{clip}", "--data", str(data), "--workers", "0", "--n-resamples", "20", "-o"]
    assert main([*argv, str(out)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("skipped")]
    skipped = json.loads(out.read_text())["provenance"]["skipped"]
    pixels = [name for name, why in skipped.items() if "images have no pixels" in why]
    assert len(pixels) > 3  # every image benchmark of the split, and the FG ones
    assert len(err) == 1 + len({why for why in skipped.values() if "no pixels" not in why}), err
    assert err[0].startswith(f"skipped {len(pixels)} benchmarks whose images have no pixels ({', '.join(pixels[:3])} ")
    assert "--images <val2014 folder or val2014.zip>" in err[0]
