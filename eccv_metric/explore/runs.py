"""A scored run to look at: the engine's input it was scored from (ranked lists, scores, embeddings, a two-stage
result), read from the files ``evaluate`` reads or writes, or given in Python.

A run is one or more **groups**, each one input of the engine (:mod:`eccv_metric.inputs`): what ``evaluate
--model ... --save-embeddings DIR`` writes is one group per collection (``DIR/coco_5k/``, ``DIR/mscoco_fg/``...),
each holding ``{image,caption}_embeddings.npy`` and ``{image,caption}_ids.npy``. :func:`read_run` takes:

- a file: a rankings JSON, a TREC run or MTEB's predictions (ranked lists), or a ``.npy`` score matrix (images x
  captions, in the benchmark's canonical order);
- a folder of files named as the CLI's flags name them (:data:`FILE_PARTS`): ``image_embeddings.npy`` /
  ``caption_embeddings.npy``, ``scores.npy``, ``caption_scores.npy`` / ``image_scores.npy``, ``image_ids`` /
  ``caption_ids`` (``.npy``, ``.json`` or text), ``rerank_<direction>.npz`` (a second stage over the scores or
  embeddings), or one rankings / TREC file; results (``-o``) and per-query files (``--per-query``) beside them are
  left alone;
- a folder of such folders (``--save-embeddings``'s): one group each, named by the folder;
- an evidence folder (``evaluate --evidence DIR``, or ``evidence/`` of a published run's details: it holds
  ``evidence.json``): one group per engine call it kept, each benchmark on the call that scored it, its files
  checked as :func:`~eccv_metric.evidence.load.load_evidence` checks them, its rows checked to be in the
  benchmark's item order, and the PM and CxC options it was scored with (:func:`scored_options`): the views and
  per-query values are those of the run (:func:`evidence_run`; a published run's is made by
  :func:`eccv_metric.hub.explore_hub.published_run`).

The parts are combined by the one rule of every front end (:func:`eccv_metric.inputs.choose.input_from_parts`),
so a run is scored exactly as ``evaluate`` scores the same files. A results or per-query file alone holds numbers
only, never which items a query retrieved: it is refused with what to give instead.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import CORRELATION
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.resource_options import ResourceOptions
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.evidence.layout import MANIFEST
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import load_evidence
from eccv_metric.evidence.truth import OPTIONS
from eccv_metric.formats.mteb import is_json_object
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import is_rankings_json
from eccv_metric.formats.readers import IDS
from eccv_metric.formats.readers import NPY
from eccv_metric.formats.readers import RERANKED
from eccv_metric.formats.readers import Reader
from eccv_metric.formats.readers import detect
from eccv_metric.formats.readers import formats_text
from eccv_metric.inputs.choose import input_from_parts

# a run folder's file names (the stem, any suffix for ids) and the input part each holds
FILE_PARTS = {
    "scores": "scores",
    "caption_scores": "caption_scores",
    "image_scores": "image_scores",
    "image_embeddings": "image_embeddings",
    "caption_embeddings": "caption_embeddings",
    "image_ids": "image_ids",
    "caption_ids": "caption_ids",
}
RERANK_PREFIX = "rerank_"  # rerank_i2t.npz: the i2t second stage
# the input parts as a run's files name them (the errors of the one rule, inputs.choose, and of the engine, put in
# these words by core.errors.in_words)
FILE_WORDS = {
    "rankings": "its ranked lists (a rankings JSON or TREC run)",
    "scores": "its scores.npy",
    "caption_scores": "its caption_scores.npy",
    "image_scores": "its image_scores.npy",
    "image_embeddings": "its image_embeddings.npy",
    "caption_embeddings": "its caption_embeddings.npy",
    "image_ids": "its image_ids file",
    "caption_ids": "its caption_ids file",
    "normalize": "normalize=",
    "rerank": "its rerank_<direction>.npz",
    "ties": "ties=",
}
NUMBERS_ONLY = (
    "{path} is {what}: numbers only, not which items each query retrieved; give the run itself (its rankings "
    "JSON or TREC run, its scores .npy, or the folder of its embeddings: evaluate --model ... --save-embeddings DIR)"
)


@dataclass
class Run:
    """A scored run (see the module docstring): ``groups`` maps a group's name to the engine's input;
    ``per_query``: the run's own per-query values (a published run's), checked equal to the engine's on its input
    before a table shows them; None: the engine's; ``benchmark_groups``: the group each benchmark was scored on,
    where the run says (an evidence manifest); ``evidence``: the evidence it was read from (its rows are checked to
    be in the benchmark's item order); ``scored_with``: the PM and CxC options it was scored with, where it says
    (``pm_zeta``...: :func:`scored_options`); ``resources``: the ground truth it was scored on, where it brings its
    own (a published run's: the benchmark at its entries' revision; :func:`own_resources`)."""

    def __post_init__(self) -> None:
        self.about = self.about or self.name

    name: str
    groups: dict[str, object]
    per_query: Mapping | None = None
    about: str = ""  # where it comes from, in words (default: its name)
    benchmark_groups: dict[str, str] = field(default_factory=dict)  # benchmark -> the group that scored it
    evidence: Evidence | None = None
    scored_with: dict[str, object] = field(default_factory=dict)
    resources: object | None = None  # a Resources
    tables: dict[tuple, object] = field(default_factory=dict, repr=False)  # explore.table's, loaded once

    def group_for(self, bench: Benchmark) -> str:
        """The group a benchmark is scored on: the one that scored it (evidence), the only one, or the one named
        as its collection (with its caption texts: ``mscoco_fg_original_caption``), as ``--save-embeddings`` names
        them; an evidence's group that ranked a benchmark of the same items (not CxC SITS's rated pairs)."""
        if bench.name in self.benchmark_groups:
            return self.benchmark_groups[bench.name]
        if self.evidence is not None:
            same = [g for b, g in self.benchmark_groups.items() if _items_of(b) == _items_of(bench.name)]
            if same:
                return same[0]
            scored = ", ".join(sorted(self.benchmark_groups)) or "nothing"
            raise EvaluationError(f"{self.name}: its evidence scored {scored}, not {bench.name}'s items "
                                  f"(collection {bench.collection})")  # fmt: skip
        if len(self.groups) == 1:
            return next(iter(self.groups))
        names = [f"{bench.collection}_{bench.texts}" if bench.texts else bench.collection, bench.collection]
        found = next((name for name in names if name in self.groups), None)
        if found is None:
            raise EvaluationError(
                f"{self.name}: no group for {bench.name} (collection {bench.collection}); it holds "
                f"{', '.join(sorted(self.groups))}"
            )
        return found

    def input_for(self, bench: Benchmark) -> object:
        """The engine's input a benchmark is scored on (:meth:`group_for`)."""
        return self.groups[self.group_for(bench)]

    def order_problem(self, bench: Benchmark, resources: object) -> str | None:
        """Why the evidence rows a benchmark is scored on are not the benchmark's items in its order (None: they
        are, or the run is no evidence)."""
        if self.evidence is None:
            return None
        group = self.group_for(bench)
        part = next(p for p in self.evidence.inputs if p.name == group)
        return part.order_problem(resources)


def _items_of(benchmark: str) -> tuple[str, str | None] | None:
    """The items a benchmark ranks (collection, caption texts); None: it ranks none (a correlation of rated pairs)."""
    bench = REGISTRY.get(benchmark)
    return None if CORRELATION in bench.kinds else (bench.collection, bench.texts)


def evidence_run(
    evidence: Evidence, name: str = "run", per_query: Mapping | None = None, resources: object | None = None,
    about: str = "",
) -> Run:  # fmt: skip
    """A run of an evidence folder (see the module docstring): one group per engine call it kept, named as the
    manifest names it; ``per_query``: the run's published per-query values; ``resources``: the ground truth it was
    scored on (a published run's)."""
    groups = {part.name: part.source() for part in evidence.inputs}
    if not groups:
        raise EvaluationError(f"{evidence.folder}/{MANIFEST} lists no input: nothing was kept to look at")
    scored = {bench: part.name for part in evidence.inputs for bench in part.benchmarks}
    options = {k: evidence.resources[k] for k in OPTIONS if k in evidence.resources}
    return Run(name, groups, per_query, about or str(evidence.folder), scored, evidence, options, resources)


def scored_options(runs: Sequence[Run], options: ResourceOptions) -> ResourceOptions:
    """``options`` (a front end's ground-truth keywords) with the PM and CxC options the runs were scored with,
    where they say (their evidence): an option left at its default takes the runs' value; one given otherwise, or
    runs scored with different values, is one line (their per-query values and PM marks would not be the runs')."""
    defaults = ResourceOptions()
    out = {}
    for key in OPTIONS:
        said = {run.name: run.scored_with[key] for run in runs if key in run.scored_with}
        if len(set(map(repr, said.values()))) > 1:
            listed = ", ".join(f"{name} with {value!r}" for name, value in said.items())
            raise EvaluationError(f"the runs were scored with different {key}= ({listed}): look at them one at a time")
        if not said:
            continue
        value = next(iter(said.values()))
        given = getattr(options, key)
        if given != getattr(defaults, key) and given != value:
            run = next(iter(said))
            raise EvaluationError(f"{key}= {given!r}, but {run} was scored with {value!r} (its {MANIFEST}): drop it")
        out[key] = value
    return replace(options, **out)  # type: ignore[arg-type]


def own_resources(runs: Sequence[Run]) -> object | None:
    """The ground truth the runs bring (a published run's: the benchmark at its revision), shared by every run shown
    beside it; None: none brings one. Runs bringing different ones (another revision, other PM options) are one
    line."""
    owned = [run for run in runs if run.resources is not None]
    if not owned:
        return None
    if any(run.resources is not owned[0].resources for run in owned[1:]):
        raise EvaluationError(
            f"{owned[0].name} and {owned[1].name} were scored on different ground truths (another revision of the "
            "benchmark, or other PM options): look at them one at a time"
        )
    scored_options(runs, ResourceOptions())  # the runs beside it scored with its options
    return owned[0].resources


_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # an input's run, as long as the input lives


def run_of(source: object, name: str = "run") -> Run:
    """A run of one input made in Python (:class:`~eccv_metric.inputs.given.Rankings`,
    :class:`~eccv_metric.inputs.matrix.ScoreMatrix`, :class:`~eccv_metric.inputs.embeddings.Embeddings`,
    :class:`~eccv_metric.inputs.twostage.TwoStage`), the same one for the same input (its tables kept), or a
    :class:`Run` as it is."""
    if isinstance(source, Run):
        return source
    if not hasattr(source, "top"):
        raise EvaluationError(f"{name}: not a run (an input of eccv_metric: Rankings, ScoreMatrix, Embeddings...)")
    if source not in _RUNS:
        _RUNS[source] = Run(name, {"run": source})
    return _RUNS[source]


def read_run(path: str | Path, normalize: bool = False, name: str | None = None) -> Run:
    """A run from a file or a folder (see the module docstring); ``normalize``: embeddings ranked by cosine."""
    path = Path(path)
    shown = name or path.name
    if path.is_dir():
        inner = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        if (path / MANIFEST).is_file():  # evaluate --evidence DIR
            return evidence_run(load_evidence(path), shown, about=str(path))
        if inner and not _run_files(path):  # --save-embeddings: one folder per group
            groups = {p.name: _read_group(_run_files(p), normalize, p) for p in inner if _run_files(p)}
            return Run(shown, groups, about=str(path))
        return Run(shown, {"run": _read_group(_run_files(path), normalize, path)}, about=str(path))
    if not path.is_file():
        raise EvaluationError(f"{path}: no such file or folder")
    return Run(shown, {"run": _read_group([path], normalize, path)}, about=str(path))


def read_run_files(paths: Sequence[str | Path], normalize: bool = False, name: str = "run", about: str = "") -> Run:
    """A run from files given one by one (an upload of several files), named as in a run folder."""
    return Run(name, {"run": _read_group([Path(p) for p in paths], normalize, Path(name))}, about=about)


def _run_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def _read_group(files: list[Path], normalize: bool, where: Path) -> object:
    """One input from a group's files (named as :data:`FILE_PARTS`; a ranked-lists file by its content)."""
    parts: dict[str, object] = {"normalize": normalize}
    reranks: dict[str, object] = {}
    ranked: list[tuple[Path, Reader]] = []
    for path in files:
        part = FILE_PARTS.get(path.stem.lower())
        if part is not None and (part.endswith("_ids") or path.suffix.lower() == ".npy"):
            reader = IDS if part.endswith("_ids") else NPY
            parts[part] = reader.read(path, part, None)
            continue
        if path.stem.lower().startswith(RERANK_PREFIX) and RERANKED.recognises(path):
            direction = path.stem.lower().removeprefix(RERANK_PREFIX)
            if direction not in DIRECTION_KINDS:
                raise EvaluationError(f"{path}: a second stage is named rerank_<i2t|t2i|t2t|i2i>.npz")
            reranks[direction] = RERANKED.read(path, "rerank", None)
            continue
        numbers = _numbers_file(path)
        if numbers is not None:
            if len(files) == 1:
                raise EvaluationError(NUMBERS_ONLY.format(path=path, what=numbers))
            continue  # a results or per-query file beside the run's own files
        reader = detect(path)
        if reader is None or reader is NPY or reader is RERANKED:
            if len(files) == 1 and reader is NPY:  # one .npy alone: the image x caption score matrix
                parts["scores"] = NPY.read(path, "scores", None)
                continue
            raise EvaluationError(_unknown(path, reader))
        ranked.append((path, reader))
    if len(ranked) > 1:
        names = ", ".join(p.name for p, _ in ranked)
        raise EvaluationError(f"{where}: {len(ranked)} ranked-lists files ({names}): one")
    if ranked:
        path, reader = ranked[0]
        parts["rankings"] = reader.read(path, "rankings", None)  # read as what its content is
    if reranks:
        parts["rerank"] = reranks
    if len(parts) == 1:
        raise EvaluationError(
            f"{where}: no run in it: give a rankings JSON or TREC run, scores.npy, or image_embeddings.npy / "
            "caption_embeddings.npy (what evaluate --model ... --save-embeddings writes)"
        )
    return input_from_parts(parts, FILE_WORDS)


def _numbers_file(path: Path) -> str | None:
    """What a results (``-o``) or per-query (``--per-query``) file is, in words; None for any other file."""
    if path.suffix.lower() != ".json" or not is_json_object(path):
        return None
    if is_rankings_json(path) or is_mteb_predictions(path):
        return None  # told by their first bytes: ranked lists are never read twice
    try:
        raw = read_json(path, "JSON")
    except (EvaluationError, OSError):
        return None
    if not isinstance(raw, dict) or not raw or set(raw) <= set(DIRECTION_KINDS):
        return None
    first = next((v for k, v in raw.items() if k != "provenance"), None)
    if not isinstance(first, dict) or not first:
        return "a results file (evaluate -o)" if "provenance" in raw else None
    value = next(iter(first.values()))
    if isinstance(value, dict) and "values" in value:
        return "a per-query file (evaluate --per-query)"
    if type(value) in (int, float):
        return "a results file (evaluate -o)"
    return None


def _unknown(path: Path, reader: Reader | None) -> str:
    names = ", ".join(f"{n}.npy" for n in FILE_PARTS if not n.endswith("_ids"))
    if reader is not None:
        return (
            f"{path}: {reader.title} named {path.name}: a run's files are named {names}, image_ids / caption_ids, "
            "rerank_<direction>.npz"
        )
    return f"{path}: none of {formats_text()}, nor a run's file ({names})"
