"""An evidence folder read back, every file checked before the engine sees it: :func:`load_evidence`.

The one reader of the layout :mod:`eccv_metric.evidence.layout` writes (``verify``, the explorer of a published
run, your own code)::

    from eccv_metric.evidence import load_evidence

    evidence = load_evidence("evidence/")          # evidence.json read and checked (its format and version)
    part = evidence.input_of("eccv_map_at_r")      # the engine call that scored a metric
    arrays = part.arrays()                         # {"image_embeddings": ndarray (memory-mapped), ...}
    source = part.source()                         # the engine's input (Embeddings, TwoStage, ...), as scored
    evidence.score_digests()                       # {file: digest of its arrays' values}: what a copy shares
    model_problem(evidence, provenance)            # None when it is the run of the model a provenance names

Every problem is one line naming the file and what is wrong, in this order: a file the manifest lists that is
missing, a file that is no numpy file of its kind (whatever its bytes), an array of another dtype or shape than the
manifest records, a file whose sha256 is not the manifest's (changed since the run), embeddings and ids of
different lengths, and (:meth:`EvidenceInput.order_problem`, against the ground truth) rows that are not in the
benchmark's item order.
"""

from __future__ import annotations

import contextlib
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.provenance import json_digest
from eccv_metric.evidence.layout import FORMAT
from eccv_metric.evidence.layout import KINDS
from eccv_metric.evidence.layout import MANIFEST
from eccv_metric.evidence.layout import RERANKED
from eccv_metric.evidence.layout import VERSION
from eccv_metric.evidence.layout import arrays_digest
from eccv_metric.evidence.layout import model_record
from eccv_metric.evidence.layout import sha256_file
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.pairs import RatedPairs
from eccv_metric.inputs.reranked import Reranked
from eccv_metric.inputs.twostage import TwoStage


class EvidenceError(EvaluationError):
    """Evidence that cannot be scored again as it is: one line naming the file and what is wrong."""


@dataclass
class EvidenceInput:
    """One engine call of the run: its manifest entry (``name``, ``kind``, ``benchmarks``, ``sets``) and the
    folder holding its files."""

    entry: dict
    folder: Path
    files: dict
    where: str = ""  # how the folder is named in errors (``evidence/`` of a details commit)
    _arrays: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return str(self.entry.get("name"))

    @property
    def kind(self) -> str:
        return str(self.entry.get("kind"))

    @property
    def benchmarks(self) -> dict[str, list[str]]:
        return self.entry.get("benchmarks") or {}

    def metrics(self) -> list[str]:
        return [m for names in self.benchmarks.values() for m in names]

    def path(self, rel: str) -> str:
        return f"{self.where}{rel}"

    def read(self, rel: str) -> np.ndarray | dict[str, np.ndarray]:
        """One file's array(s), checked against the manifest (see the module docstring); read once."""
        if rel in self._arrays:
            return self._arrays[rel]
        record = self.files.get(rel)
        if not isinstance(record, dict):
            raise EvidenceError(f"{self.path(MANIFEST)} lists no file {rel} (input {self.name})")
        path = self.folder / rel
        if not path.is_file():
            raise EvidenceError(f"{self.path(rel)} is missing (input {self.name} reads it)")
        try:
            loaded = np.load(path, mmap_mode="r" if rel.endswith(".npy") else None, allow_pickle=False)
            if rel.endswith(".npy") != isinstance(loaded, np.ndarray):  # an archive where an array is, or the reverse
                with contextlib.suppress(AttributeError):
                    loaded.close()
                raise ValueError(f"a {'zip archive' if rel.endswith('.npy') else 'single array'} under this name")
            if rel.endswith(".npy"):
                values: np.ndarray | dict = loaded
                expected, got = {"": record}, {"": values}
            else:
                with loaded as archive:
                    values = {k: archive[k] for k in archive.files}
                expected, got = record.get("arrays") or {}, values
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:  # a forger's bytes, any of them
            said = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}" if str(exc) else type(exc).__name__
            raise EvidenceError(f"{self.path(rel)} is not a numpy file ({said})") from None
        if set(got) != set(expected):
            raise EvidenceError(f"{self.path(rel)} holds arrays {sorted(got)}, {MANIFEST} lists {sorted(expected)}")
        for key, arr in got.items():
            want = expected[key]
            named = self.path(rel) + (f" ({key})" if key else "")
            if str(arr.dtype) != want.get("dtype"):
                raise EvidenceError(f"{named} holds {arr.dtype}, {MANIFEST} records {want.get('dtype')} (dtype)")
            if list(arr.shape) != list(want.get("shape", [])):
                raise EvidenceError(
                    f"{named} has shape {tuple(arr.shape)}, {MANIFEST} records {tuple(want.get('shape', []))} (shape)"
                )
        if path.stat().st_size != record.get("bytes") or sha256_file(path) != record.get("sha256"):
            raise EvidenceError(
                f"{self.path(rel)} is not the file the run wrote: its sha256 differs from the one {MANIFEST} records"
            )
        self._arrays[rel] = values
        return values

    def arrays(self) -> dict[str, object]:
        """Every array of the input by its role (``image_embeddings``, ``i2t``: an ``.npz``'s arrays), checked; a
        two-stage input's first stage under ``first``."""
        out: dict[str, object] = {role: self.read(rel) for role, rel in (self.entry.get("arrays") or {}).items()}
        if self.kind == "twostage":
            out["first"] = EvidenceInput(self.entry.get("first") or {}, self.folder, self.files, self.where).arrays()
        return out

    def source(self, device: str | None = None) -> object:
        """The engine's input, as the run scored it (``device``: where embeddings are ranked; None: numpy)."""
        return build(self.entry, self.arrays(), self.path(""), device)

    def row_ids(self) -> dict[str, np.ndarray]:
        """``{kind: ids}`` of the rows of the input's embeddings or scores (its first stage's, two-stage)."""
        arrays = self.arrays()
        rows = arrays.get("first", arrays)
        return {k: np.asarray(rows[f"{k}_ids"]) for k in ("image", "caption") if f"{k}_ids" in rows}  # type: ignore[operator,index]

    def order_problem(self, resources: object) -> str | None:
        """Why the rows are not in the benchmark's item order (ids the collection lacks, another order, a set that
        is not whole), as the ground truth ``resources`` lists its items; None: they are."""
        sets = self.entry.get("sets") or {}
        for kind, ids in self.row_ids().items():
            about = sets.get(kind)
            if not isinstance(about, dict):
                continue
            index = resources.collection(about.get("collection")).index(kind)  # type: ignore[attr-defined]
            at = index.positions(ids)
            named = f"{self.path('')}{self.name}'s {kind}_ids"
            if (at < 0).any():
                bad = ids[at < 0][:3].tolist()
                return f"{named} hold ids the benchmark has no {kind} of ({bad}): another benchmark's items"
            if len(at) > 1 and not (np.diff(at) > 0).all():
                row = int(np.flatnonzero(np.diff(at) <= 0)[0]) + 1
                return f"{named} are not in the benchmark's item order (row {row}: id {int(ids[row])}) (item order)"
            if not about.get("restricted") and len(at) != len(index):
                return f"{named} hold {len(at)} of the benchmark's {len(index)} {kind}s (shape)"
        return None


def build(entry: dict, arrays: dict, where: str, device: str | None = None) -> object:
    """An input from its manifest entry and checked arrays."""
    kind = entry.get("kind")
    try:
        if kind == "embeddings":
            for k in ("image", "caption"):
                emb, ids = arrays.get(f"{k}_embeddings"), arrays.get(f"{k}_ids")
                if emb is not None and ids is not None and len(emb) != len(ids):
                    raise EvidenceError(f"{where}{entry.get('name')}: {len(emb)} {k} embeddings but {len(ids)} {k} "
                                        "ids (shape)")  # fmt: skip
            return Embeddings(
                *(np.asarray(arrays[k]) if k in arrays else None for k in ("image_embeddings", "caption_embeddings")),
                *(arrays.get(k) for k in ("image_ids", "caption_ids")),
                normalize=entry.get("similarity") == "cosine",
                ties=entry.get("ties", "stable"),
                device=device or "numpy",
            )
        if kind == "scores":
            return ScoreMatrix(np.asarray(arrays["scores"]) if "scores" in arrays else None, arrays.get("image_ids"),
                               arrays.get("caption_ids"), caption_scores=arrays.get("caption_scores"),
                               image_scores=arrays.get("image_scores"), ties=entry.get("ties", "stable"))  # fmt: skip
        if kind == "twostage":
            first = build(entry.get("first") or {}, arrays["first"], where, device)
            stages = {d: Reranked(*(v[f] for f in RERANKED), what=f"{where}rerank_{d}", in_file=True)
                      for d, v in arrays.items() if d != "first"}  # fmt: skip
            return TwoStage(first, **stages)  # type: ignore[arg-type]
        if kind == "pairs":
            pairs = arrays["pairs"]
            return RatedPairs(pairs["ids_1"], pairs["ids_2"], pairs["scores"], what=entry.get("what", "pairs"))
        if kind == "lists":
            out = {}
            for direction, v in arrays.items():
                keys = ("query_ids", "ranked_ids") if "ranked_ids" in v else ("query_ids", "flat_ids", "lengths")
                out[direction] = tuple(np.asarray(v[key]) for key in keys)
            return Rankings(**out)
    except KeyError as exc:
        raise EvidenceError(f"{where}{entry.get('name')}: no {exc.args[0]} array in its files") from None
    raise EvidenceError(f"{where}{MANIFEST}: input {entry.get('name')} is of kind {kind!r}, not one of {KINDS}")


@dataclass
class Evidence:
    """An evidence folder: its manifest, the manifest's digest (the run's ``digests.evidence``) and its inputs."""

    folder: Path
    manifest: dict
    digest: str
    inputs: list[EvidenceInput]

    def input_of(self, metric: str) -> EvidenceInput | None:
        """The engine call that scored ``metric``, or its benchmark (``cxc_sits_spearman_std`` beside
        ``cxc_sits_spearman``); None: none did."""
        found = next((part for part in self.inputs if metric in part.metrics()), None)
        if found is not None:
            return found
        try:
            bench = metric_info(metric)[0].name
        except EvaluationError:
            return None
        return next((part for part in self.inputs if bench in part.benchmarks), None)

    @property
    def scoring(self) -> dict:
        return self.manifest.get("scoring") or {}

    @property
    def resources(self) -> dict:
        return self.manifest.get("resources") or {}

    @property
    def run(self) -> dict:
        return self.manifest.get("run") or {}

    @property
    def bytes(self) -> int:
        return sum(int(f.get("bytes", 0)) for f in self.manifest.get("files", {}).values())

    def score_digests(self) -> dict[str, str]:
        """``{file: digest of its arrays}`` of every file holding what the run scored (embeddings, score matrices,
        reranked candidates and their scores, rated pairs, ranked lists; not the files of row ids), each file's
        arrays read (and checked) and digested by their dtype, shape and values
        (:func:`~eccv_metric.evidence.layout.arrays_digest`): two folders holding the same arrays give the same
        digests, whatever their manifests or the bytes of their files' headers say. A file that cannot be read as
        the manifest records it is left out: nothing was scored from it."""
        out: dict[str, str] = {}
        for part in self.inputs:
            entries = [part.entry, part.entry.get("first") or {}] if part.kind == "twostage" else [part.entry]
            for entry in entries:
                for role, rel in (entry.get("arrays") or {}).items():
                    if role.endswith("_ids") or rel in out:
                        continue
                    with contextlib.suppress(EvidenceError):
                        out[rel] = arrays_digest(part.read(rel))
        return out


def model_problem(ev: Evidence, provenance: Mapping) -> str | None:
    """Why ``ev`` is not the run of the model ``provenance`` names (its spec and revision, as the manifest's ``run``
    records them: :func:`~eccv_metric.evidence.layout.model_record`): evidence of another model, or evidence that
    records no model (written by an earlier eccv-caption-hf) behind results that name one; None when it is."""
    named = model_record(provenance)
    if "model" not in ev.run:
        if named["model"] is None:
            return None  # a run on files that names no model, and evidence that names none
        return (f"the evidence records no model (written by an earlier eccv-caption-hf): nothing shows it is the "
                f"run of {named['model']}; evaluate again with --evidence (cached embeddings make it a "
                "re-score)")  # fmt: skip
    held = {k: ev.run.get(k) for k in named}
    if held != named:
        said = ", ".join(f"{k} {held[k]} (the results name {named[k]})" for k in named if held[k] != named[k])
        return f"the evidence is another run's: its {said}"
    return None


def load_evidence(folder: str | Path, where: str | None = None) -> Evidence:
    """The evidence folder ``folder`` (see the module docstring); ``where``: how errors name it (default: its
    path). A folder without a readable manifest of this format is one :class:`EvidenceError` line; its files are
    checked when read."""
    root = Path(folder)
    named = f"{root}/" if where is None else where
    path = root / MANIFEST
    if not path.is_file():
        raise EvidenceError(f"{named}{MANIFEST} is missing: no evidence (write it with evaluate --evidence DIR)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EvidenceError(f"{named}{MANIFEST} is not an evidence manifest (format {FORMAT})")
    if manifest.get("version") != VERSION:
        raise EvidenceError(
            f"{named}{MANIFEST} is of version {manifest.get('version')!r}; this package reads version {VERSION} "
            "(upgrade eccv-caption-hf)"
        )
    problem = manifest_problem(manifest)
    if problem is not None:
        raise EvidenceError(f"{named}{MANIFEST} is not one this package writes: {problem}")
    files = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    entries = manifest.get("inputs") if isinstance(manifest.get("inputs"), list) else []
    inputs = [EvidenceInput(e, root, files, named) for e in entries if isinstance(e, dict)]
    return Evidence(root, manifest, json_digest(manifest), inputs)


def _is(value: object, kind: type) -> bool:
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def manifest_problem(manifest: dict) -> str | None:
    """Which field of a manifest is of another type than the layout's (a mapping, a list of names, a number...),
    so that nothing past it reads a value it cannot use; None: every field read is of its type."""
    sections = {k: manifest.get(k, {}) for k in ("scoring", "resources", "run", "files")}
    for name, value in sections.items():
        if not isinstance(value, dict):
            return f"{name} is not a mapping"
    if not isinstance(manifest.get("inputs", []), list):
        return "inputs is not a list"
    wanted = {"n_resamples": int, "seed": int, "partial": bool}
    for key, kind in wanted.items():
        if key in sections["scoring"] and not _is(sections["scoring"][key], kind):
            return f"scoring.{key} is not {'true or false' if kind is bool else 'a whole number'}"
    for key in ("given", "from_data"):
        if key in sections["resources"] and not _strings(sections["resources"][key]):
            return f"resources.{key} is not a list of names"
    for key in ("model", "model_revision"):
        if sections["run"].get(key) is not None and not isinstance(sections["run"][key], str):
            return f"run.{key} is not a name"
    if not all(isinstance(r, dict) for r in sections["files"].values()):
        return "a record of files is not a mapping"
    for k, entry in enumerate(manifest.get("inputs", [])):
        for part in (entry, entry.get("first") if isinstance(entry, dict) and "first" in entry else {}):
            if not isinstance(part, dict):
                return f"inputs[{k}] is not a mapping"
            arrays, benchmarks = part.get("arrays", {}), entry.get("benchmarks", {})
            if not isinstance(arrays, dict) or not all(isinstance(v, str) for v in arrays.values()):
                return f"inputs[{k}].arrays is not a mapping of file names"
            if not isinstance(benchmarks, dict) or not all(_strings(v) for v in benchmarks.values()):
                return f"inputs[{k}].benchmarks is not a mapping of metric names"
            if not isinstance(entry.get("sets", {}), dict) or not all(
                isinstance(v, dict) for v in entry.get("sets", {}).values()
            ):
                return f"inputs[{k}].sets is not a mapping"
    return None
