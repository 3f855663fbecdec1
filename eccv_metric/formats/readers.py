"""The one table of input readers: what files the front ends read, how each is told apart, what it yields.

Each :class:`Reader` states the suffixes it takes, how it recognises its content (:meth:`Reader.recognises`:
the file's first bytes, so a file named for another format is still read as what it is), the input parts it
yields (:data:`eccv_metric.inputs.choose.PARTS`) and whether the Space reads it (``space``: None, or why not).
:func:`detect` picks a file's reader: by content first, then by suffix. The CLI reads each input flag's file
through it (a file given to the wrong flag is named, with the flag that takes it), the Space reads its upload
boxes through it; the evaluate module takes Python objects, not files.

=================  ===========================  ===========================================  ===================
reader             suffixes                     recognised by                                parts
=================  ===========================  ===========================================  ===================
rankings           .json                        a JSON object whose first key is a direction  rankings
mteb_predictions   .json                        a JSON object whose first key is              rankings (knows its
                                                ``mteb_model_meta``                           subsets)
trec_run           .trec .run .txt .tsv         a first line of six fields, not ``{``         rankings
npy                .npy                         the .npy magic bytes                          scores, caption /
                                                                                              image scores,
                                                                                              embeddings
ids                .npy .json .txt (any)        (named by its flag or box)                    image / caption ids
reranked           .npz                         a zip holding query_ids, candidate_ids,       rerank (one
                                                scores                                        direction's second
                                                                                              stage)
=================  ===========================  ===========================================  ===================

The Space reads every reader but ``mteb_predictions`` and ``reranked`` (see their ``space`` lines); of the
``npy`` parts it has boxes for ``scores`` and the embeddings (``caption_scores`` / ``image_scores``: the CLI's
flags only).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eccv_metric.core.files import load_npy
from eccv_metric.formats.ids import load_ids
from eccv_metric.formats.mteb import is_json_object
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import is_rankings_json
from eccv_metric.formats.mteb import read_predictions
from eccv_metric.formats.rankings import load_rankings
from eccv_metric.formats.reranked import is_reranked
from eccv_metric.formats.reranked import load_reranked
from eccv_metric.formats.trec import read_run_rankings

NPY_MAGIC = b"\x93NUMPY"
# what each array part is, for the errors of a .npy that is not one
EXPECTED = {
    "scores": "a .npy float matrix, scores[i, j] = similarity(image i, caption j)",
    "caption_scores": "a .npy float matrix (captions x captions)",
    "image_scores": "a .npy float matrix (images x images)",
    "image_embeddings": "a .npy float array (images x dimensions)",
    "caption_embeddings": "a .npy float array (captions x dimensions)",
}


def _head(path: str | Path, size: int = 4096) -> bytes:
    try:
        with open(path, "rb") as fin:
            return fin.read(size)
    except OSError:
        return b""


def is_npy(path: str | Path) -> bool:
    """Whether a file starts with the .npy magic bytes."""
    return _head(path, len(NPY_MAGIC)) == NPY_MAGIC


def is_trec_run(path: str | Path) -> bool:
    """Whether a file looks like a TREC run: text (neither a JSON object nor a .npy) whose first line holds the
    six fields ``<query> Q0 <doc> <rank> <score> <tag>``."""
    head = _head(path).removeprefix(b"\xef\xbb\xbf")
    if head.startswith(NPY_MAGIC) or is_json_object(path):
        return False
    first = next((line for line in head.splitlines() if line.strip()), b"")
    return len(first.split()) == 6


@dataclass(frozen=True)
class Reader:
    """One input format (see the module docstring): ``read(path, part, ties)`` gives the part's value."""

    name: str
    title: str
    suffixes: tuple[str, ...]
    recognises: Callable[[str | Path], bool]
    parts: tuple[str, ...]
    read: Callable[[str | Path, str, str | None], object]
    reads_json: bool = False  # reads a JSON object (a file starting with "{" that no test recognises goes to it)
    space: str | None = None  # None: the Space reads it; else why not ({name}: the file's name)


RANKINGS = Reader(
    "rankings",
    "a rankings JSON",
    (".json",),
    is_rankings_json,
    ("rankings",),
    lambda path, part, ties: load_rankings(path),
    reads_json=True,
)
MTEB_PREDICTIONS = Reader(
    "mteb_predictions",
    "MTEB predictions",
    (".json",),
    is_mteb_predictions,
    ("rankings",),
    lambda path, part, ties: read_predictions(path),
    reads_json=True,
    space="the Space does not read them (a JSON object of scores per query, not bounded as a rankings JSON is): "
    "use the CLI, eccv-caption evaluate --run {name}",
)
TREC_RUN = Reader(
    "trec_run",
    "a TREC run",
    (".trec", ".run", ".txt", ".tsv"),
    is_trec_run,
    ("rankings",),
    lambda path, part, ties: read_run_rankings(path, ties or "stable"),
)
NPY = Reader(
    "npy",
    "a .npy array",
    (".npy",),
    is_npy,
    tuple(EXPECTED),
    lambda path, part, ties: load_npy(path, EXPECTED[part]),
)
IDS = Reader(
    "ids",
    "an ids file",
    (".npy", ".json", ".txt"),
    lambda path: False,  # any file: its flag or box says it holds ids
    ("image_ids", "caption_ids"),
    lambda path, part, ties: load_ids(path, part.replace("_", " ")),
)
RERANKED = Reader(
    "reranked",
    "a two-stage result (.npz)",
    (".npz",),
    is_reranked,
    ("rerank",),
    lambda path, part, ties: load_reranked(path),
    space="the Space does not score two-stage results: use the CLI, eccv-caption evaluate --scores FIRST.npy "
    "--rerank i2t={name}, or Python (eccv_metric.TwoStage)",
)
READERS = (RANKINGS, MTEB_PREDICTIONS, TREC_RUN, NPY, IDS, RERANKED)
MAIN = (RANKINGS, MTEB_PREDICTIONS, TREC_RUN, NPY)  # the readers of one main input (ranked lists or scores)


def recognise(path: str | Path) -> Reader | None:
    """The reader whose content test a file passes (whatever its name), or None."""
    return next((r for r in READERS if r.recognises(path)), None)


def detect(path: str | Path, among: Sequence[Reader] = MAIN) -> Reader | None:
    """A file's reader: by content (:func:`recognise`), else the first of ``among`` that takes its suffix (a
    JSON reader first for a file starting with ``{``); None when neither tells."""
    found = recognise(path)
    if found is not None:
        return found
    suffix = Path(path).suffix.lower()  # an upload named .NPY or .Json is what its letters say
    named = [r for r in among if suffix in r.suffixes]
    json = is_json_object(path)
    return next((r for r in named if r.reads_json == json), None) or next(iter(named), None)


def formats_text(readers: Sequence[Reader] = MAIN) -> str:
    """The readers as a user reads them: ``.json (a rankings JSON), .trec / .run ... (a TREC run), ...``."""
    return ", ".join(f"{' / '.join(r.suffixes)} ({r.title})" for r in readers)
