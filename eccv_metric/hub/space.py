"""What the Space does with a request, without gradio: files in, the library's numbers out, or one error line.

:func:`score` takes what the Space's boxes hold (paths of uploads, the pasted
text, the picked benchmarks and metrics, the Ks text, ticks), turns them into
one input with :func:`eccv_metric.inputs.choose.input_from_parts` (in the
Space's words, :data:`SPACE_WORDS`), scores it with :func:`eccv_metric.evaluate`
and formats it with :mod:`eccv_metric.analysis.report`. Work is bounded:
every file has a size cap, the pasted text a length cap, Ks are at most
:data:`MAX_KS` ASCII integers, the JSON readers keep their own limits. Every
failure, expected or not, ends in one line (:class:`Scored` with ``ok=False``).

Benchmark sources (CxC CSVs, MSCOCO-FG / Flickr30K-FG files) come from the
"benchmark source files" upload, else the folder named by the environment
variable ``ECCV_CAPTION_SOURCE_DIR`` (searched like ``--source-dir``), else
the Space's dataset (``ECCV_CAPTION_DATA``: a built folder or Hub dataset repo, whose ground truth then replaces
the wheel's, as ``evaluate --model --data`` reads it), else their canonical files (downloaded once,
sha256-checked).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.analysis.report import directions_of
from eccv_metric.analysis.report import recall_curves
from eccv_metric.analysis.report import scale_of
from eccv_metric.analysis.report import shown
from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import DEFAULT_TARGETS
from eccv_metric.benchmarks.definitions import OFFICIAL_TARGETS
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import metric_label
from eccv_metric.benchmarks.request import benchmark_names
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import KS_TEXT
from eccv_metric.core.download import sha256_file
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.options import bool_from_text
from eccv_metric.formats.rankings import parse_rankings
from eccv_metric.formats.readers import IDS
from eccv_metric.formats.readers import MAIN
from eccv_metric.formats.readers import NPY
from eccv_metric.formats.readers import detect
from eccv_metric.formats.readers import formats_text
from eccv_metric.hub.space_words import DATA_ENV
from eccv_metric.hub.space_words import LABELS
from eccv_metric.hub.space_words import SOURCE_ENV
from eccv_metric.hub.space_words import SPACE_WORDS
from eccv_metric.hub.space_words import hide_paths
from eccv_metric.hub.space_words import in_box
from eccv_metric.hub.space_words import note_in_space_words
from eccv_metric.inputs.choose import input_from_parts
from eccv_metric.measures.kinds import SCALE_NOTE
from eccv_metric.measures.results import Results

MAX_FILE_BYTES = 600 * 2**20  # a float32 5K x 25K matrix is 500 MB; an official top-100 rankings JSON ~25 MB
MAX_PASTE_CHARS = 20 * 2**20
MAX_KS = 10
MAX_NAMES = 60
MAX_SOURCES = 10
SPACE_READERS = [r for r in MAIN if r.space is None]  # the formats of the upload box (formats.readers)

# A small real example (partial): two ECCV Caption image queries and two caption queries of the test split,
# each list holding the query's ECCV positives with one negative at rank 2.
EXAMPLE = json.dumps(
    {
        "i2t": {
            "184791": [566386, 770337, 567085, 571483, 572221, 572281, 464220, 750878, 495153],
            "66412": [49928, 770337, 52658, 58232, 60602, 61706, 608447, 216742, 389720],
        },
        "t2i": {"401481": [182784, 391895], "100919": [34180, 391895, 169802]},
    }
)
EXAMPLE_BENCHMARKS = ["eccv", "coco_5k"]
EXAMPLE_METRICS = ["eccv_map_at_r", "eccv_rprecision", "eccv_r1", "coco_5k_recalls"]


def metric_choices() -> list[str]:
    """Every metric a form offers: the official names, then each benchmark's (R@K as ``_recalls`` and ``_r1``)."""
    names = list(DEFAULT_TARGETS + OFFICIAL_TARGETS)
    for bench in REGISTRY:
        names += bench.default_metric_names()
        names += [n for n in bench.metric_names((1,)) if not n.endswith("_std")]
    return list(dict.fromkeys(names))


def labelled(names: Sequence[str], kind: str = "metric") -> list[tuple[str, str]]:
    """(what a user reads, the id the library takes) for a form's choices: ``("COCO 1K R@1 (coco_1k_r1)",
    "coco_1k_r1")``, ``("COCO 1K (coco_1k)", "coco_1k")`` for ``kind="benchmark"``: labels from the registry, the
    id kept in them (typing it finds the choice)."""
    label = metric_label if kind == "metric" else (lambda name: REGISTRY.get(name).title)
    return [(f"{label(name)} ({name})", name) for name in names]


COLUMNS = ("metric", "id", "i2t", "t2i", "unit")  # the table: the metric's label and id, its values, the unit


@dataclass
class Scored:
    """One answer of the Space: ``ok`` with the table, plot points and JSON, or one error ``message``."""

    ok: bool
    message: str
    columns: list[str] = field(default_factory=lambda: list(COLUMNS))
    rows: list[list[str]] = field(default_factory=list)
    curves: list[dict] = field(default_factory=list)  # {"K", "R@K (%)", "series"} points of R@K curves
    raw: str = "{}"
    means: dict = field(default_factory=dict)


def parse_ks(text: object) -> list[int]:
    """The Ks box's text as integers: ``"1 5 10"`` or ``"1,5,10"``, at most MAX_KS ASCII integers (``²`` and ``١``
    are refused); what a K may be is the library's rule (:class:`~eccv_metric.benchmarks.request.Request`)."""
    tokens = str(text or "").replace(",", " ").split()
    if not tokens:
        return list(KS)
    bad = next((t for t in tokens if not (t.isascii() and t.isdigit())), None)
    if bad is not None:
        raise EvaluationError(f"Ks: {bad!r:.20} is not a whole number written in 0-9; give e.g. '{KS_TEXT}'")
    if len(tokens) > MAX_KS:
        raise EvaluationError(f"Ks: {len(tokens)} values; give at most {MAX_KS}, e.g. '{KS_TEXT}'")
    return [int(t) for t in tokens]


def _names(values: object, what: str) -> list[str]:
    if values is None or values == "":
        return []
    items = [values] if isinstance(values, str) else list(values)  # type: ignore[call-overload]
    if len(items) > MAX_NAMES or any(not isinstance(v, str) or not v or len(v) > 80 for v in items):
        raise EvaluationError(f"{what}: at most {MAX_NAMES} names of at most 80 characters")
    return list(dict.fromkeys(items))


def upload_path(upload: object, label: str) -> Path | None:
    """An upload's path (gradio gives a str path, a dict with ``path``, or an object with ``.name``)."""
    if upload is None or upload == "" or upload == []:
        return None
    if isinstance(upload, dict):
        upload = upload.get("path") or upload.get("name")
    upload = getattr(upload, "name", upload)
    if not isinstance(upload, (str, os.PathLike)):
        raise EvaluationError(f"the '{LABELS[label]}' box: not a file")
    path = Path(upload)
    if not path.is_file():
        raise EvaluationError(f"the '{LABELS[label]}' box: the uploaded file is gone; upload it again")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise EvaluationError(
            f"the '{LABELS[label]}' box: {path.name} is {size / 2**20:,.0f} MB, more than the Space takes "
            f"({MAX_FILE_BYTES // 2**20} MB): use the CLI (eccv-caption evaluate) for it"
        )
    return path


_SOURCE_DIRS: dict[str, Path] = {}


def source_folder(uploads: object) -> Path | None:
    """The uploaded source files as one folder (by content: the same files give the same folder), or the
    folder of ``ECCV_CAPTION_SOURCE_DIR``, or None (the canonical files)."""
    items = [] if uploads is None or uploads == "" else [uploads] if isinstance(uploads, (str, dict)) else uploads
    paths = [p for p in (upload_path(u, "sources") for u in items) if p is not None]  # type: ignore[union-attr]
    if not paths:
        env = os.environ.get(SOURCE_ENV)
        return Path(env) if env else None
    if len(paths) > MAX_SOURCES or len({p.name for p in paths}) != len(paths):
        raise EvaluationError(f"the '{LABELS['sources']}' box: at most {MAX_SOURCES} files, each name once")
    digest = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0" + bytes.fromhex(sha256_file(path)))  # streamed, not read whole
    key = digest.hexdigest()
    known = _SOURCE_DIRS.get(key)
    if known is None or not all(link.exists() for link in known.iterdir()):  # gone: gradio's cache was cleared
        folder = Path(tempfile.mkdtemp(prefix="eccv-space-sources-"))
        for path in paths:
            (folder / path.name).symlink_to(path.resolve())
        _SOURCE_DIRS[key] = folder
    return _SOURCE_DIRS[key]


def resources_for(instances: Path | None, sources: Path | None) -> Resources:
    """Ground truth for this request (the library's one cache): the boxes' files; with the Space's dataset
    (:data:`~eccv_metric.hub.space_words.DATA_ENV`), its own ground truth and files for what the boxes leave out,
    as ``evaluate --model --data`` reads them."""
    options = ResourceOptions(instances_json=instances, cxc_source=sources, fg_source=sources)
    data = os.environ.get(DATA_ENV)
    if not data:
        return options.resources()
    from eccv_metric.models.data.source import default_resources

    try:
        source = data_source(data)
    except EvaluationError as exc:  # the Space's owner set it: named as its variable
        raise EvaluationError(f"the Space's settings: {in_words(exc, {'data': DATA_ENV + '='})}") from None
    return default_resources(source, options)


@functools.lru_cache(maxsize=2)
def data_source(data: str) -> object:
    """The Space's dataset (:data:`~eccv_metric.hub.space_words.DATA_ENV`), opened once (a Hub repo: its commit
    and configs fetched once)."""
    from eccv_metric.models.data.source import DataSource

    return DataSource(data)


def read_input(
    upload: object, pasted: object, image_embeddings: object, caption_embeddings: object, normalize: object,
    image_ids: object, caption_ids: object,
) -> tuple[object, str]:  # fmt: skip
    """The one input the boxes hold and how to name it in the status line."""
    main = upload_path(upload, "upload")
    text = pasted if isinstance(pasted, str) and pasted.strip() else None
    if main is not None and text is not None:
        raise EvaluationError(
            f"both an upload ('{LABELS['upload']}') and pasted rankings were given: clear one of them "
            "(the Space never picks one silently)"
        )
    parts: dict[str, object] = {"normalize": bool_from_text(normalize, SPACE_WORDS["normalize"])}
    what = ""
    if text is not None:
        if len(text) > MAX_PASTE_CHARS:
            raise EvaluationError(f"the pasted text is over {MAX_PASTE_CHARS // 2**20} MB: upload it as a file")
        parts["rankings"] = parse_rankings(text, "the pasted text")  # the rankings reader, on text
    elif main is not None:  # read as what its content is (formats.readers), else as its suffix says
        reader = detect(main)
        if reader is None:
            raise EvaluationError(f"the '{LABELS['upload']}' box: {main.name} is none of {formats_text(SPACE_READERS)}")
        if reader.space is not None:
            raise EvaluationError(f"the '{LABELS['upload']}' box: {main.name}: {reader.title}: "
                                  + reader.space.format(name=main.name))  # fmt: skip
        part = reader.parts[0]  # ranked lists, or the score matrix of a .npy
        parts[part] = in_box("upload", reader.read, main, part, None)
        if part == "scores":
            what = "the " + " x ".join(f"{n:,}" for n in parts["scores"].shape) + " score matrix"  # type: ignore[attr-defined]
    for kind, upload in {"image_embeddings": image_embeddings, "caption_embeddings": caption_embeddings,
                         "image_ids": image_ids, "caption_ids": caption_ids}.items():  # fmt: skip
        path = upload_path(upload, kind)
        if path is not None:
            parts[kind] = in_box(kind, (IDS if kind.endswith("_ids") else NPY).read, path, kind, None)
    source = input_from_parts(parts, SPACE_WORDS)
    if "rankings" in parts:
        lists: dict = source.raw  # type: ignore[union-attr]  # the lists as given: dicts or arrays per direction
        what = " and ".join(f"{len(v[0] if isinstance(v, tuple) else v):,} {d}" for d, v in lists.items())
        what += " ranked lists"
    elif not what:
        given = [k for k in ("image_embeddings", "caption_embeddings") if k in parts]
        what = " and ".join(f"{len(parts[k]):,} {k.split('_')[0]}" for k in given) + " embeddings"  # type: ignore[arg-type]
    return source, what


def score(
    upload: object = None,
    pasted: object = "",
    benchmarks: object = (),
    metrics: object = (),
    ks_text: object = KS_TEXT,
    partial: object = False,
    image_embeddings: object = None,
    caption_embeddings: object = None,
    normalize: object = False,
    image_ids: object = None,
    caption_ids: object = None,
    instances: object = None,
    sources: object = None,
) -> Scored:
    """Score what the boxes hold (see the module docstring); never raises."""
    try:
        started = time.perf_counter()
        partial = bool_from_text(partial, SPACE_WORDS["partial"])  # "False" from an API client is False
        ks = parse_ks(ks_text)
        bench_names = benchmark_names(_names(benchmarks, "benchmarks"))  # unknown names: one line naming the known
        names = _names(metrics, "metrics")
        source, what = read_input(
            upload, pasted, image_embeddings, caption_embeddings, normalize, image_ids, caption_ids
        )
        resources = resources_for(upload_path(instances, "instances"), source_folder(sources))
        results = evaluate(  # the one rule (benchmarks.request): the metrics beside the benchmarks' defaults
            source, names or None, ks, benchmarks=bench_names or None, resources=resources, partial=partial
        )  # a full upload is scored (and labelled) as full, whatever the tick says: results.partial
        return done(results, f"scored {what}", results.partial, time.perf_counter() - started)
    except (EvaluationError, ValueError, OSError, RecursionError) as exc:
        return Scored(False, "error: " + hide_paths(in_words(exc, SPACE_WORDS)))
    except MemoryError:
        return Scored(False, "error: out of memory: give a smaller input, or use the CLI on a bigger machine")
    except Exception as exc:  # a bug: still one line, never a traceback on the page
        said = hide_paths(in_words(exc, SPACE_WORDS))
        return Scored(False, f"error: internal error ({type(exc).__name__}: {said}); please report it")


def done(results: Results, status: str, is_partial: bool, seconds: float) -> Scored:
    """The table (formatted by analysis.report), the R@K curves and the JSON of the results."""
    means = results.means()
    directions = directions_of(means)
    rows = [
        [metric_label(name), name]
        + [shown(name, by_dir[d]) if d in by_dir else "" for d in directions]
        + [SCALE_NOTE[scale_of(name)]]
        for name, by_dir in means.items()
    ]
    curves = [point | {"series": series_label(point["series"])} for point in recall_curves(means)]
    if is_partial:
        status += " (partial: means over the queries given only, not comparable with full results)"
    notes = [note_in_space_words(str(n)) for n in getattr(results, "notes", []) or []]
    message = "; ".join([f"{status} in {seconds:.1f} s", *notes])
    columns = ["metric", "id", *directions, "unit"]
    return Scored(True, message, columns, rows, curves, json.dumps(means, indent=2), means)


def series_label(series: str) -> str:
    """An R@K curve's name (``coco_5k i2t``, analysis.report) with the benchmark's title: ``COCO 5K i2t``."""
    bench, direction = series.rsplit(" ", 1)
    return f"{REGISTRY.get(bench).title} {direction}" if bench in REGISTRY else series


def example_state() -> dict[str, object]:
    """What "Load the small example" puts in the boxes (everything else is cleared)."""
    return {
        "pasted": EXAMPLE,
        "benchmarks": EXAMPLE_BENCHMARKS,
        "metrics": EXAMPLE_METRICS,
        "ks": KS_TEXT,
        "partial": True,
    }


# what the example's own settings go back to when the user gives an input of their own (the boxes' defaults)
EXAMPLE_RESET = {"benchmarks": [], "metrics": [], "partial": False}


def after_own_input(example_on: object, pasted: object, uploaded: bool) -> dict[str, object]:
    """The boxes to change when the user gives an input of their own after "Load the small example".

    The example's benchmarks, metrics and partial tick are the example's: while they are as it set them
    (``example_on``: the user has not changed any of them since), an upload (``uploaded``) or pasted text that
    is not the example puts them back to their defaults (:data:`EXAMPLE_RESET`: the defaults for the input, no
    partial; ``example_on`` becomes False); settings the user changed are theirs and stay. An upload also
    clears the example's text (it would be a second input). Returns ``{box: new value}``, ``{}`` for none."""
    is_example = isinstance(pasted, str) and pasted.strip() == EXAMPLE
    change: dict[str, object] = {"pasted": ""} if uploaded and is_example else {}
    if example_on and (uploaded or not is_example):
        change |= {**EXAMPLE_RESET, "example_on": False}
    return change


def metrics_for(benchmarks: Sequence[str] | None) -> list[str]:
    """The metrics box after picking benchmarks: their default metrics (what the one rule adds for them)."""
    out: list[str] = []
    for name in benchmarks or ():
        if name in REGISTRY:
            out += REGISTRY.get(name).default_metric_names()
    return list(dict.fromkeys(out))
