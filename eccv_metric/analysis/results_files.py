"""Results files of ``evaluate -o`` read for ``leaderboard`` / ``correlate --with``: one row each, named by its model.

A path may be a results file or the folder ``evaluate --model A --model B -o DIR`` writes (each model's results
file in it). A row is named by the model spec its provenance records (``hf:openai/clip-vit-base-patch32``), by
the file's name without ``.json`` where there is none (results scored from files); a name the paper's table has
gets `` (yours)`` (never merged with the paper's row); two files of one model are told apart by their file names;
two rows that would still share a name are an error naming both files. A file whose numbers or provenance no longer
match the digests its run recorded (:func:`~eccv_metric.core.provenance.broken_seal`) is refused; a row named by a
model its provenance records without sealing it (a file of an earlier eccv-caption-hf) gets a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.provenance import broken_seal
from eccv_metric.formats.mteb import is_mteb_predictions
from eccv_metric.formats.mteb import is_rankings_json

RESULTS_FORMAT = 'the results JSON of `eccv-caption evaluate -o` {metric: {"i2t": value, "t2i": value}} (fractions)'
YOURS = " (yours)"


def read_results(path: str) -> dict[str, dict[str, float]]:
    """A results file of ``evaluate -o``: fractions per metric and direction (errors name the file)."""
    if is_rankings_json(path) or is_mteb_predictions(path):
        rankings = is_rankings_json(path)
        what = "a rankings file (evaluate --rankings)" if rankings else "MTEB predictions (evaluate --run)"
        raise EvaluationError(f"{path} is {what}, not results: give the results file of `eccv-caption evaluate -o`")
    raw = require_object(read_json(path, RESULTS_FORMAT), path, RESULTS_FORMAT)
    provenance = raw.get("provenance")
    broken = broken_seal(provenance, {k: v for k, v in raw.items() if k != "provenance"}) \
        if isinstance(provenance, dict) and "digests" in provenance else None  # fmt: skip
    if broken in ("numbers", "provenance"):
        raise EvaluationError(
            f"--with: {path} was changed after the run: its {broken} no longer match the digests the run recorded; "
            "give the file evaluate wrote (or run evaluate again)"
        )
    out: dict[str, dict[str, float]] = {}
    for metric, by_dir in raw.items():
        if metric == "provenance":  # where the numbers come from, not a metric
            continue
        by_dir = require_object(by_dir, path, f"{metric} to map directions to values")
        if any(isinstance(v, dict) for v in by_dir.values()):
            raise EvaluationError(f"{path} is a per-query file (evaluate --per-query): give the results file (-o)")
        for direction, value in by_dir.items():
            if type(value) not in (int, float):
                raise EvaluationError(f"{path}: {metric}/{direction} must be a number, not {value!r:.30}")
            try:
                kind = metric_info(metric)[1]
            except EvaluationError:
                continue  # a metric the leaderboard does not show
            if kind.scale == "fraction" and not 0 <= value <= 1:
                raise EvaluationError(
                    f"{path}: {metric}/{direction} = {value} is not a fraction in [0, 1] (results are fractions, "
                    "as evaluate -o writes them, not percent)"
                )
        out[metric] = dict(by_dir)
    return out


def expand(paths: Sequence[str | Path]) -> list[Path]:
    """Each path as it is, a folder as its ``*.json`` files (one per model of ``evaluate --model A --model B``)."""
    out = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(p for p in path.glob("*.json") if p.is_file())
            if not files:
                raise EvaluationError(f"--with: {path} is a folder without results files (*.json)")
            out += files
        else:
            out.append(path)
    return out


def _recorded(path: Path) -> tuple[str | None, bool]:
    """(the model spec a results file's provenance records, whether its digests seal that provenance)."""
    try:
        raw = read_json(path, RESULTS_FORMAT)
    except (EvaluationError, OSError):
        return None, False
    provenance = raw.get("provenance") if isinstance(raw, dict) else None
    spec = provenance.get("model") if isinstance(provenance, dict) else None
    if not (isinstance(spec, str) and spec.strip()):
        return None, False
    digests = provenance.get("digests")  # type: ignore[union-attr]
    return spec.strip(), isinstance(digests, dict) and "provenance" in digests


def user_names(paths: Sequence[str | Path], paper_models: Sequence[str]) -> tuple[dict[str, Path], list[str]]:
    """One unique leaderboard name per results file (see the module docstring) and the notes to print."""
    files = expand(paths)
    recorded = {path: _recorded(path) for path in files}
    specs = {path: spec for path, (spec, _) in recorded.items()}
    counts: dict[str, int] = {}
    for spec in specs.values():
        if spec is not None:
            counts[spec.casefold()] = counts.get(spec.casefold(), 0) + 1
    taken = {m.casefold() for m in paper_models}
    names: dict[str, Path] = {}
    notes: list[str] = []
    for path in files:
        spec = specs[path]
        name = path.stem if spec is None else spec if counts[spec.casefold()] == 1 else f"{spec} ({path.stem})"
        if spec is not None and not recorded[path][1]:
            notes.append(f"note: {path} is named by the model its provenance records ({spec}), which no digest "
                         "seals (a file of an earlier eccv-caption-hf: evaluate again for a sealed one)")  # fmt: skip
        if name.casefold() in taken:
            notes.append(f"note: {path} is shown as '{name}{YOURS}': '{name}' is one of the paper's models")
            name += YOURS
        clash = next((other for n, other in names.items() if n.casefold() == name.casefold()), None)
        if clash is not None:
            raise EvaluationError(
                f"--with: {clash} and {path} would both be the model '{name}' on the leaderboard: give each "
                "results file its own name (a file without a model in its provenance is named by its file name)"
            )
        names[name] = path
    return names, notes
