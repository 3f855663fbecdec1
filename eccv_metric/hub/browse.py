"""What the Space's Browse tab does with a request, without gradio: runs in, query cards out, or one error line.

Run A is the input the Score tab holds (its upload, pasted rankings or embeddings: read as :func:`~eccv_metric.hub.
space.score` reads them, with the same ground truth), or the run files uploaded in the Browse tab, or a published
model's run; run B, beside it, the second run's files (named as a run folder: :mod:`eccv_metric.explore.runs`) or
a published model's run. A published model (``ORG/MODEL``) is read on the Space's benchmark dataset repo
(``ECCV_CAPTION_DATA``) by the loader ``explore --from-hub`` uses (:func:`~eccv_metric.hub.explore_hub.published_run`:
its evidence at its details commit, the benchmark's ground truth at its entries' revision, its published per-query
values), once per Space process. :func:`browse` loads each
run's table on the benchmark direction (once per run: :mod:`eccv_metric.explore.table`), makes the query sets
(:mod:`eccv_metric.explore.sets`) and draws the chosen set's first queries as cards (:mod:`eccv_metric.hub.cards`),
or the one query asked for. Pixels and texts come from the Space's dataset (``ECCV_CAPTION_DATA``: a built folder
or Hub repo) and image folders (``ECCV_CAPTION_IMAGES``); without them each card says so in place of a picture.
Every failure ends in one line (:class:`Browsed` with ``ok=False``), never a wrong mark.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import CORRELATION
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import in_words
from eccv_metric.core.options import bool_from_text
from eccv_metric.explore.media import Media
from eccv_metric.explore.runs import FILE_WORDS
from eccv_metric.explore.runs import Run
from eccv_metric.explore.runs import own_resources
from eccv_metric.explore.runs import read_run_files
from eccv_metric.explore.sets import QuerySet
from eccv_metric.explore.sets import query_sets
from eccv_metric.explore.table import QueryTable
from eccv_metric.explore.view import table_of
from eccv_metric.hub import space
from eccv_metric.hub.cards import cards_html
from eccv_metric.hub.repos import is_repo_id
from eccv_metric.hub.space_words import DATA_ENV
from eccv_metric.hub.space_words import IMAGES_ENV
from eccv_metric.hub.space_words import SPACE_WORDS
from eccv_metric.hub.space_words import hide_paths

MAX_SHOWN = 50  # cards drawn at once
MAX_RUNS = 4  # runs kept loaded (a 5K embeddings run holds its 0.5 GB similarity matrix)
MAX_FILES = 8


def browsable_benchmarks() -> list[str]:
    """The benchmarks whose items can be looked at (every one that ranks items, one relation a direction)."""
    return [
        b.name for b in REGISTRY if CORRELATION not in b.kinds and all(isinstance(t.relation, str) for t in b.tasks)
    ]


BROWSE_LABELS = {
    "run_a": "run A files (empty: the Score tab's input)",
    "run_b": "run B files, shown beside A (optional)",
    "normalize_runs": "runs' embeddings: cosine similarity",
    "published_a": "run A: a published model (ORG/MODEL)",
    "published_b": "run B: a published model (ORG/MODEL)",
    "benchmark": "benchmark",
    "direction": "direction",
    "set": "query set",
    "shown": "queries",
    "seed": "seed",
    "query": "or a query id",
}


# the library's keywords in the Browse tab's words (core.errors.in_words)
BROWSE_WORDS = {
    **SPACE_WORDS,
    "published_a": f"the '{BROWSE_LABELS['published_a']}' box",
    "published_b": f"the '{BROWSE_LABELS['published_b']}' box",
    "dataset_repo": f"the Space's {DATA_ENV} setting",
}
PUBLISHED_NOTE = (
    "a published model is scored on the benchmark's own ground truth at its revision: the 'COCO instances' and "
    "'benchmark source files' boxes are not read"
)


@dataclass
class Browsed:
    """One answer of the Browse tab: ``ok`` with the cards' HTML and the sets (label, name) to pick from, or
    one error ``message``."""

    ok: bool
    message: str
    html: str = ""
    sets: list[tuple[str, str]] = field(default_factory=list)
    chosen: str | None = None


_RUNS: OrderedDict[tuple, Run] = OrderedDict()
_MEDIA: dict[tuple, Media] = {}


def space_media() -> Media:
    """The Space's pixels and texts: its dataset and image folders (environment), read once."""
    key = (os.environ.get(DATA_ENV) or None, os.environ.get(IMAGES_ENV) or None)
    if key not in _MEDIA:
        folders = [p for p in (key[1] or "").split(os.pathsep) if p]
        try:
            _MEDIA[key] = Media(key[0], folders)
        except EvaluationError as exc:
            said = in_words(exc, {"data": DATA_ENV + "=", "images": IMAGES_ENV + "="})
            raise EvaluationError(f"the Space's settings: {said}") from None
    return _MEDIA[key]


def _stamp(value: object) -> object:
    """A box's value as a key: an uploaded file by its path, size and time; anything else by its digest."""
    if isinstance(value, (list, tuple)):
        return tuple(_stamp(v) for v in value)
    if isinstance(value, dict):
        value = value.get("path") or value.get("name")
    if isinstance(value, (str, os.PathLike)) and str(value) and len(str(value)) < 4096 and Path(value).is_file():
        stat = Path(value).stat()
        return (str(value), stat.st_size, stat.st_mtime_ns)
    return hashlib.sha256(repr(value).encode()).hexdigest()


def _kept(key: tuple, load: object) -> Run:
    if key not in _RUNS:
        _RUNS[key] = load()  # type: ignore[operator]
        while len(_RUNS) > MAX_RUNS:
            _RUNS.popitem(last=False)
    _RUNS.move_to_end(key)
    return _RUNS[key]


def score_tab_run(boxes: tuple) -> Run:
    """Run A from the Score tab's boxes (upload, pasted, embeddings, normalize, ids), read as it scores them."""
    if all(box in (None, "", [], False) or (isinstance(box, str) and not box.strip()) for box in boxes):
        raise EvaluationError(
            f"no run to look at: give an input in the Score tab (or run files in the '{BROWSE_LABELS['run_a']}' box)"
        )

    def load() -> Run:
        source, what = space.read_input(*boxes)
        return Run("A", {"run": source}, about=f"the Score tab's input ({what})")

    return _kept(("score", _stamp(list(boxes))), load)


def files_run(files: object, normalize: bool, label: str) -> Run | None:
    """A run from uploaded files (None: none given)."""
    items = [] if files in (None, "", []) else [files] if isinstance(files, (str, dict)) else list(files)  # type: ignore[call-overload]
    paths = [p for p in (space.upload_path(f, "upload") for f in items) if p is not None]
    if not paths:
        return None
    if len(paths) > MAX_FILES:
        raise EvaluationError(f"the '{BROWSE_LABELS[label]}' box: at most {MAX_FILES} files")
    name = " + ".join(p.name for p in paths)

    def load() -> Run:
        try:
            return read_run_files(paths, normalize, "A" if label == "run_a" else "B", about=name)
        except EvaluationError as exc:
            raise EvaluationError(f"the '{BROWSE_LABELS[label]}' box: {exc}") from None

    return _kept((label, _stamp(paths), normalize), load)


def published(model: object, label: str) -> Run | None:
    """A published model's run (None: none given), read on the Space's benchmark dataset repo, kept as runs are."""
    text = str(model or "").strip()
    if not text:
        return None
    dataset = os.environ.get(DATA_ENV) or ""
    if not is_repo_id(dataset) or Path(dataset).exists():
        held = "names a folder" if dataset else "is not set"
        raise EvaluationError(
            f"the '{BROWSE_LABELS[label]}' box: this Space's {DATA_ENV} setting {held}, not the benchmark's Hub "
            "dataset repo, so no published model can be read here (eccv-caption explore --from-hub MODEL "
            "--dataset-repo DATASET reads one)"
        )

    def load() -> Run:
        from eccv_metric.hub.explore_hub import published_run

        what = f"the '{BROWSE_LABELS[label]}' box ({text:.100})"
        return published_run(text, dataset, what=what, again="press Show again", keyword=label, log=lambda _: None)

    return _kept(("published", text, dataset), load)


def _int(value: object, what: str, low: int, high: int) -> int:
    try:
        number = int(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise EvaluationError(f"the '{BROWSE_LABELS[what]}' box: a whole number, not {value!r:.30}") from None
    if not low <= number <= high or number != float(value):  # type: ignore[arg-type]
        raise EvaluationError(f"the '{BROWSE_LABELS[what]}' box: a whole number in {low}..{high}, not {value}")
    return number


def browse(
    score_boxes: tuple,
    run_a_files: object = None,
    run_b_files: object = None,
    normalize_runs: object = False,
    published_a: object = "",
    published_b: object = "",
    benchmark: object = "eccv",
    direction: object = "i2t",
    set_name: object = None,
    shown: object = 10,
    seed: object = 0,
    query: object = "",
    instances: object = None,
    sources: object = None,
) -> Browsed:
    """Cards of the chosen query set (or of one query) of run A, and run B beside it (see the module docstring);
    never raises. ``score_boxes``: the Score tab's (upload, pasted, image embeddings, caption embeddings,
    normalize, image ids, caption ids)."""
    try:
        started = time.perf_counter()
        norm = bool_from_text(normalize_runs, BROWSE_LABELS["normalize_runs"])
        count = _int(shown, "shown", 1, MAX_SHOWN)
        seed_value = _int(seed, "seed", 0, 2**31 - 1)
        if not isinstance(benchmark, str) or not isinstance(direction, str):
            raise EvaluationError("pick a benchmark and a direction")
        files_a, hub_a = files_run(run_a_files, norm, "run_a"), published(published_a, "published_a")
        files_b, hub_b = files_run(run_b_files, norm, "run_b"), published(published_b, "published_b")
        for files, hub, run in ((files_a, hub_a, "A"), (files_b, hub_b, "B")):
            if files is not None and hub is not None:
                raise EvaluationError(f"give run {run} as files or as a published model, not both")
        run_a = files_a or hub_a or score_tab_run(score_boxes)
        run_b = files_b or hub_b
        resources, said = own_resources([run for run in (run_a, run_b) if run is not None]), []
        if resources is None:
            resources = space.resources_for(space.upload_path(instances, "instances"), space.source_folder(sources))
        elif any(box not in (None, "", []) for box in (instances, sources)):
            said = [PUBLISHED_NOTE]  # a published run brings its benchmark's ground truth, at its revision
        box_a = "run_a" if files_a else "published_a" if hub_a else None  # None: the Score tab's boxes
        box_b = "run_b" if files_b else "published_b"
        table_a = load(run_a, benchmark, direction, resources, FILE_WORDS if box_a else SPACE_WORDS, box_a)
        table_b = None if run_b is None else load(run_b, benchmark, direction, resources, FILE_WORDS, box_b)
        sets = query_sets(table_a, table_b, n=count, seed=seed_value)
        labels = [(f"{s.title} ({s.count:,})", s.name) for s in sets]
        asked = next((s for s in sets if s.name == set_name), None)
        # the set asked for, even empty (a QuerySet's len is its count: `asked or` gave an empty pick another
        # set's cards); by default the first set holding queries
        picked = asked if asked is not None else next((s for s in sets if s.count), sets[0])
        text = str(query or "").strip()
        if text:
            rows, what = [table_a.row(_query_id(text))], f"query {text}"
        else:
            rows, what = picked.rows[:count].tolist(), _set_words(picked, count)
        body = cards_html(table_a, table_b, rows, space_media(), resources)
        notes = [*table_a.notes, *([] if table_b is None else [f"B: {n}" for n in table_b.notes])]
        notes += said
        runs = f"A: {run_a.about}" + ("" if run_b is None else f"; B: {run_b.about}")
        message = f"{runs}; {benchmark} {direction}: {what} in {time.perf_counter() - started:.1f} s"
        return Browsed(True, "; ".join([message, *notes]), body, labels, picked.name)
    except (EvaluationError, ValueError, OSError, RecursionError) as exc:
        return Browsed(False, "error: " + hide_paths(in_words(exc, BROWSE_WORDS)))
    except MemoryError:
        return Browsed(False, "error: out of memory: give a smaller run, or use the CLI (eccv-caption explore)")
    except Exception as exc:  # a bug: still one line, never a traceback on the page
        said = hide_paths(in_words(exc, SPACE_WORDS))
        return Browsed(False, f"error: internal error ({type(exc).__name__}: {said}); please report it")


def load(run: Run, benchmark: str, direction: str, resources: object, words: dict, box: str | None) -> QueryTable:
    """A run's table; an error in the words of where the run came from (the Score tab's boxes, or its files)."""
    try:
        return table_of(run, benchmark, direction, resources)  # type: ignore[arg-type]
    except EvaluationError as exc:
        where = f"the '{BROWSE_LABELS[box]}' box: " if box else ""
        raise EvaluationError(where + in_words(exc, words)) from None


def _query_id(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 19:
        raise EvaluationError(f"the '{BROWSE_LABELS['query']}' box: a query id is a whole number, not {text!r:.30}")
    return int(text)


def _set_words(picked: QuerySet, count: int) -> str:
    first = min(count, picked.count)
    held = f"{picked.count:,} {'query' if picked.count == 1 else 'queries'}"
    return f"'{picked.title}': {held}" + (f", the first {first:,} shown" if picked.count else "")
