"""What a run scored, kept so that anyone can score it again: the evidence folder (``evaluate --evidence DIR``).

The engine is exact and deterministic: given the inputs it scored and the benchmark's ground truth, every number
and every per-query value comes out again, bit for bit. The evidence is those inputs, as files, in one folder
(``DIR/`` locally, ``evidence/`` of a details repo on the Hub):

- ``evidence.json``: the manifest (:data:`FORMAT`, version :data:`VERSION`): how the run scored
  (``scoring``: ``n_resamples``, ``seed``, ``partial``; ``resources``: the PM options and which ground-truth
  sources the run was given rather than the benchmark's own), which model ran and how (``run``: ``model``, its
  spec without local paths, and ``model_revision``, the Hub commit it was loaded at, both null for a run on files
  that names no model: :func:`model_record`; ``precision``, ``similarity``, ``ranking``), one entry per engine
  call (``inputs``: its ``name``, ``kind``, the files of its arrays, ``benchmarks``: ``{benchmark: [metric
  names]}`` it scored, and for re-encoding the item ``sets`` of its rows) and every file's sha256, size and
  arrays' dtype and shape (``files``);
- ``<group>/*.npy`` / ``*.npz``: the arrays, one folder per item group (``coco``, ``mscoco_fg``, ...), each file
  once (inputs sharing a first stage share its files); never pickles. The kinds and their arrays:

  ========== ======================================================================================================
  kind       arrays
  ========== ======================================================================================================
  embeddings ``image_embeddings.npy`` / ``caption_embeddings.npy`` (float32 as the model gave them, before
             normalising: ``similarity`` cosine or dot), ``image_ids.npy`` / ``caption_ids.npy`` (int64, rows in
             the benchmark's item order; absent: the collection's canonical order)
  scores     ``scores.npy`` (images x captions), ``caption_scores.npy`` / ``image_scores.npy``, ids as above
  twostage   the first stage (an ``embeddings`` or ``scores`` entry, ``first``) and per direction
             ``rerank_<direction>.npz``: ``query_ids`` (nq), ``candidate_ids`` (nq x k), ``scores`` (nq x k, final)
  pairs      ``pairs.npz``: ``ids_1``, ``ids_2``, ``scores`` (CxC SITS's rated pairs, scored by a pair scorer)
  lists      ``lists_<direction>.npz``: ``query_ids`` and ``ranked_ids`` (nq x depth) or ``flat_ids`` and
             ``lengths`` (ranked lists as given, best first: MTEB's, a TREC run's)
  ========== ======================================================================================================

The sha256 of the manifest's canonical JSON is the run's ``digests.evidence`` (:mod:`eccv_metric.core.provenance`):
the manifest names every file's sha256 and the model, so the digest pins every array and whose run they are (results
naming another model than their evidence are not recomputed: :func:`eccv_metric.evidence.check.verify`). The
folder is written whole or not at all (a temporary folder renamed into place); a folder an earlier ``--evidence``
wrote is replaced, any other refused.
Reading it back, checked: :mod:`eccv_metric.evidence.load`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import zipfile
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import current_umask
from eccv_metric.core.files import replace_folder
from eccv_metric.core.files import temporary_folder
from eccv_metric.core.files import write_json_atomic
from eccv_metric.core.provenance import json_digest
from eccv_metric.core.provenance import scrub
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.inputs.given import Rankings
from eccv_metric.inputs.matrix import ScoreMatrix
from eccv_metric.inputs.pairs import RatedPairs
from eccv_metric.inputs.twostage import TwoStage

FORMAT = "eccv-caption-evidence"
VERSION = 1
MANIFEST = "evidence.json"
KINDS = ("embeddings", "scores", "twostage", "pairs", "lists")
RERANKED = ("query_ids", "candidate_ids", "scores")


def folder_name(name: str) -> str:
    """An input's folder: its item group (``coco.rerank`` -> ``coco``)."""
    return name.split(".")[0] or "input"


def check_evidence_folder(folder: str | Path, keyword: str = "evidence") -> None:
    """``folder`` may receive evidence: new, empty, or written by an earlier ``--evidence`` (replaced whole)."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise EvaluationError(f"{keyword}= {path} is a file: give a folder (it receives {MANIFEST} and the arrays)")
    if path.is_dir() and any(path.iterdir()) and not (path / MANIFEST).is_file():
        raise EvaluationError(
            f"{keyword}= {path} holds files no --evidence wrote (no {MANIFEST}): give a new folder (an earlier "
            "evidence folder is replaced whole)"
        )


class Writer:
    """Arrays written once each into a folder, with the manifest's record of every file."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, dict] = {}
        self.by_digest: dict[str, str] = {}

    def npy(self, folder: str, name: str, values: np.ndarray) -> str:
        return self._write(f"{folder}/{name}.npy", {"": np.ascontiguousarray(values)})

    def npz(self, folder: str, name: str, arrays: Mapping[str, np.ndarray]) -> str:
        return self._write(f"{folder}/{name}.npz", {k: np.ascontiguousarray(v) for k, v in arrays.items()})

    def _write(self, path: str, arrays: dict[str, np.ndarray]) -> str:
        target = self.root / path
        stem, suffix = target.stem, target.suffix
        n = 1
        while path in self.files:  # another input's file of the same name in the folder: a number added
            n += 1
            path = f"{target.parent.relative_to(self.root).as_posix()}/{stem}_{n}{suffix}"
            target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as fout:
            if suffix == ".npy":
                np.save(fout, arrays[""], allow_pickle=False)
            else:
                save_npz(fout, arrays)
        digest = sha256_file(target)
        if digest in self.by_digest:  # the same bytes already written (a first stage two inputs share)
            target.unlink()
            return self.by_digest[digest]
        described = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in arrays.items()}
        record = {"sha256": digest, "bytes": target.stat().st_size}
        record |= described[""] if suffix == ".npy" else {"arrays": described}
        self.files[path] = record
        self.by_digest[digest] = path
        return path


def save_npz(fout: object, arrays: Mapping[str, np.ndarray]) -> None:
    """``np.savez``'s format (an uncompressed zip of ``<name>.npy`` members, read by ``np.load``) with a fixed
    timestamp in each member: the same arrays are the same bytes, so the same sha256, whenever they are written."""
    with zipfile.ZipFile(fout, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:  # type: ignore[arg-type]
        for name, values in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(member, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(values), allow_pickle=False)


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file's bytes (read in 4 MB pieces)."""
    h = hashlib.sha256()
    with open(path, "rb") as fin:
        for piece in iter(lambda: fin.read(1 << 22), b""):
            h.update(piece)
    return h.hexdigest()


def arrays_digest(values: np.ndarray | Mapping[str, np.ndarray]) -> str:
    """The sha256 of one file's arrays (an ``.npy``'s, or an ``.npz``'s by name): each one's name, dtype, shape and
    values in C order, so that the same arrays give the same digest whichever bytes hold them."""
    arrays = {"": values} if isinstance(values, np.ndarray) else values
    h = hashlib.sha256()
    for name in sorted(arrays):
        array = np.asarray(arrays[name])
        h.update(f"{name}|{array.dtype.str}|{list(array.shape)}\n".encode())
        for block in np.array_split(array.reshape(-1), max(1, array.nbytes >> 24)):  # 16 MB pieces, never a copy
            h.update(np.ascontiguousarray(block).data)
    return h.hexdigest()


def describe(writer: Writer, name: str, source: object) -> dict:
    """The manifest entry of one input (its arrays written): kind, files and what the engine needs to read them."""
    folder = folder_name(name)
    if isinstance(source, TwoStage):
        first = describe(writer, name, source.first)
        reranked = {
            d: writer.npz(folder, f"rerank_{d}", {k: narrow(v) for k, v in zip(RERANKED, (r.query_ids, r.candidate_ids,
                                                                                      r.scores), strict=True)})
            for d, r in source.reranked.items()
        }  # fmt: skip
        return {"kind": "twostage", "first": first, "arrays": reranked, "ties": source.ties}
    if isinstance(source, Embeddings):
        arrays = {f"{k}_embeddings": writer.npy(folder, f"{k}_embeddings", v) for k, v in source.given.items()}
        arrays |= ids_files(writer, folder, source)
        similarity = "cosine" if source.normalize else "dot"
        return {"kind": "embeddings", "arrays": arrays, "similarity": similarity, "ties": source.ties}
    if isinstance(source, ScoreMatrix):
        arrays = {"scores": writer.npy(folder, "scores", source.scores)} if source.scores is not None else {}
        arrays |= {f"{k}_scores": writer.npy(folder, f"{k}_scores", v) for k, v in source.square.items()}
        return {"kind": "scores", "arrays": arrays | ids_files(writer, folder, source), "ties": source.ties}
    if isinstance(source, RatedPairs):
        arrays = {"ids_1": source.ids_1, "ids_2": source.ids_2, "scores": source.scores}
        pairs = writer.npz(folder, "pairs", {k: narrow(v) for k, v in arrays.items()})
        return {"kind": "pairs", "arrays": {"pairs": pairs}, "what": source.what}
    if isinstance(source, Rankings):
        lists = {d: {k: narrow(v) for k, v in list_arrays(d, raw).items()} for d, raw in source.raw.items()}
        return {"kind": "lists", "arrays": {d: writer.npz(folder, f"lists_{d}", v) for d, v in lists.items()}}
    raise EvaluationError(f"{name}: the evidence keeps embeddings, score matrices, two-stage inputs, rated pairs and "
                          f"ranked lists, not {type(source).__name__}")  # fmt: skip


def narrow(values: np.ndarray) -> np.ndarray:
    """An array of ids or scores in the smallest dtype that holds it exactly (int64 ids that fit in int32, float64
    scores that are float32 values): the inputs read them back to the same values (ids and a second stage's scores
    are widened when read)."""
    values = np.asarray(values)
    small = {"i": np.int32, "f": np.float32}.get(values.dtype.kind)
    if small is None or values.dtype.itemsize <= np.dtype(small).itemsize:
        return values
    if values.dtype.kind == "i" and values.size and (values.min() < -(2**31) or values.max() >= 2**31):
        return values
    cast = values.astype(small)
    return cast if np.array_equal(cast.astype(values.dtype), values) else values


def ids_files(writer: Writer, folder: str, source: object) -> dict[str, str]:
    """The ``<kind>_ids.npy`` of a scored input's rows (the kinds whose ids were given)."""
    out = {}
    for kind, ids in source.row_ids.items():  # type: ignore[attr-defined]
        if ids is not None:
            out[f"{kind}_ids"] = writer.npy(folder, f"{kind}_ids", np.asarray(ids, dtype=np.int64))
    return out


def list_arrays(direction: str, raw: object) -> dict[str, np.ndarray]:
    """A direction's ranked lists as arrays: ``{query id: [ids]}`` -> ``query_ids``, ``flat_ids``, ``lengths``;
    arrays as given (``(query_ids, ranked_ids[, lengths])``) kept."""
    if isinstance(raw, Mapping):
        queries = list(raw)
        lists = [np.asarray(raw[q], dtype=np.int64).ravel() for q in queries]
        flat = np.concatenate(lists) if lists else np.zeros(0, np.int64)
        lengths = np.asarray([len(x) for x in lists], dtype=np.int64)
        return {"query_ids": np.asarray(queries, dtype=np.int64), "flat_ids": flat, "lengths": lengths}
    if isinstance(raw, tuple) and len(raw) == 2:
        return {"query_ids": np.asarray(raw[0]), "ranked_ids": np.asarray(raw[1])}
    if isinstance(raw, tuple) and len(raw) == 3:
        return {"query_ids": np.asarray(raw[0]), "flat_ids": np.asarray(raw[1]), "lengths": np.asarray(raw[2])}
    raise EvaluationError(f"{direction}: ranked lists the evidence cannot keep ({type(raw).__name__})")


def set_record(item_set: object) -> dict:
    """An item set (:class:`~eccv_metric.models.data.items.ItemSet`) as the manifest keeps it: collection, source
    config and columns, restriction (``restricted``: its rows are a subset, the ids file names them)."""
    return {
        "collection": item_set.collection,  # type: ignore[attr-defined]
        "kind": item_set.kind,  # type: ignore[attr-defined]
        "source": dataclasses.asdict(item_set.source),  # type: ignore[attr-defined]
        "restriction": item_set.restriction,  # type: ignore[attr-defined]
        "restricted": item_set.only is not None,  # type: ignore[attr-defined]
    }


def model_record(provenance: Mapping[str, object]) -> dict:
    """The model a run's provenance names, as the manifest's ``run`` records it: ``model`` (its spec, local paths
    replaced by ``(local path)``: the manifest is published as it is) and ``model_revision`` (the Hub commit it was
    loaded at, MTEB's revision for its predictions; None: a local folder, or not recorded). A published provenance
    (local paths removed) gives the same record as the run's."""
    spec = provenance.get("model")
    identity = provenance.get("identity") if isinstance(provenance.get("identity"), dict) else {}
    mteb = provenance.get("mteb") if isinstance(provenance.get("mteb"), dict) else {}
    revision = identity.get("revision") or mteb.get("revision")  # type: ignore[union-attr]
    return {"model": scrub(spec) if isinstance(spec, str) else None,
            "model_revision": revision if isinstance(revision, str) else None}  # fmt: skip


def write_evidence(
    folder: str | Path,
    inputs: Iterable[object],
    *,
    n_resamples: int,
    seed: int,
    partial: bool = False,
    resources: Mapping[str, object] | None = None,
    run: Mapping[str, object] | None = None,
) -> tuple[dict, str]:
    """Write the evidence folder (see the module docstring); returns (manifest, its digest).

    ``inputs``: what the engine scored, each with ``name``, ``source``, ``benchmarks`` and ``sets`` (a
    :class:`~eccv_metric.models.options.Scored`); ``resources``: the PM options and the sources given
    (:meth:`~eccv_metric.benchmarks.resource_options.ResourceOptions.record`); ``run``: the model
    (:func:`model_record`), precision, similarity, ranking."""
    check_evidence_folder(folder)
    dest = Path(folder)
    tmp = temporary_folder(dest)
    try:
        writer = Writer(tmp)
        entries, owner = [], {}
        for scored in inputs:
            name = scored.name  # type: ignore[attr-defined]
            for bench in scored.benchmarks:  # type: ignore[attr-defined]
                if bench in owner:  # a number is recomputed from the one input that scored its benchmark
                    raise EvaluationError(f"{bench} is scored by two inputs, {owner[bench]} and {name}: keep one")
                owner[bench] = name
            entry = {"name": name, **describe(writer, name, scored.source)}  # type: ignore[attr-defined]
            entry["benchmarks"] = {b: list(m) for b, m in scored.benchmarks.items()}  # type: ignore[attr-defined]
            sets = getattr(scored, "sets", None) or {}
            if sets:
                entry["sets"] = {kind: set_record(s) for kind, s in sets.items()}
            entries.append(entry)
        if not entries:
            raise EvaluationError("no evidence to write: the run scored nothing")
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "scoring": {"n_resamples": n_resamples, "seed": seed, "partial": partial},
            "resources": dict(resources or {}),
            "run": dict(run or {}),
            "inputs": entries,
            "files": dict(sorted(writer.files.items())),
        }
        write_json_atomic(tmp / MANIFEST, manifest)
        mask = current_umask()
        for path in tmp.rglob("*"):  # the user's umask, as every file the package writes
            os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~mask)
        replace_folder(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest, json_digest(manifest)


def evidence_bytes(manifest: Mapping) -> int:
    """The size of an evidence folder's arrays (the manifest's record of each file)."""
    return sum(int(f.get("bytes", 0)) for f in manifest.get("files", {}).values())
