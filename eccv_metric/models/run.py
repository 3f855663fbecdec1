"""From a model and a data source to every number: :func:`evaluate_model`.

    from eccv_metric.models import evaluate_model

    out = evaluate_model("hf:openai/clip-vit-base-patch32", data="eccv_caption")   # a built folder or Hub repo
    out.results.means()     # every default metric of every benchmark whose items are available
    out.provenance          # model spec, weights digest, data revision, package version, device, ...
    out.skipped             # {benchmark: why}

Each item set (:mod:`eccv_metric.models.items`) is encoded once, however many benchmarks share it, and
scored through :func:`eccv_metric.evaluate` on :class:`~eccv_metric.inputs.embeddings.Embeddings`
(cosine similarity: embeddings are L2-normalised, as CLIP, SigLIP and sentence-transformers compare
them). Before anything is encoded, every requested benchmark's items are checked: a missing config,
pixels or texts, or a model without the tower a benchmark needs is one error (or, with no benchmark
asked, a skip with its reason).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np

import eccv_metric
from eccv_metric.api.evaluate import evaluate
from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.names import MetricRequest
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.request import Request
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.benchmarks.resources import cached_resources
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import replace_folder
from eccv_metric.core.files import temporary_folder
from eccv_metric.groundtruth.plausible import PMOptions
from eccv_metric.groundtruth.split import GroundTruth
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.measures.results import Results
from eccv_metric.models.cache import EmbeddingCache
from eccv_metric.models.cache import cache_root
from eccv_metric.models.digests import FileDigests
from eccv_metric.models.encode import default_workers
from eccv_metric.models.encode import encode_items
from eccv_metric.models.items import ItemSet
from eccv_metric.models.items import item_sets
from eccv_metric.models.items import ranked_ids
from eccv_metric.models.pixels import DataSource
from eccv_metric.models.pixels import Items
from eccv_metric.models.pixels import decoder
from eccv_metric.models.pixels import missing_message
from eccv_metric.models.spec import Encoder
from eccv_metric.models.spec import load_model

KIND_WORDS = {"image": "images", "caption": "texts"}
EMBEDDING_FILES = {f"{kind}_{what}.npy" for kind in ("image", "caption") for what in ("embeddings", "ids")}


@dataclass
class ModelResults:
    """What :func:`evaluate_model` returns: the numbers, where they come from, what was skipped and why."""

    results: Results
    provenance: dict
    skipped: dict[str, str] = field(default_factory=dict)
    embeddings: dict[str, Embeddings] = field(default_factory=dict)


def default_resources(
    source: DataSource,
    cxc_source: object = None,
    fg_source: object = None,
    *,
    ground_truth: str | None = None,
    instances_json: str | None = None,
    pm: PMOptions | None = None,
    cxc_directed: bool = False,
) -> Resources:
    """The data's own ground truth (positives), CxC ratings and FG files where it has them, unless given;
    through the one cache (:func:`~eccv_metric.benchmarks.resources.cached_resources`)."""
    if ground_truth is None and source.has("positives"):
        ground_truth = str(source.data)
    if cxc_source is None and source.has("cxc_ratings"):
        cxc_source = source.data
    if fg_source is None and any(source.has(f"{b}_captions") for b in ("mscoco_fg", "flickr30k_fg")):
        fg_source = source.data
    options = {"instances_json": instances_json, "pm": pm, "cxc_directed": cxc_directed}
    if source.token is not None and ground_truth == str(source.data):  # a private Hub repo: read with its token
        gt = GroundTruth.from_dataset(source.data, source.token)
        return Resources(gt, cxc_source=cxc_source, fg_source=fg_source, **options)  # type: ignore[arg-type]
    return cached_resources(ground_truth, cxc_source=cxc_source, fg_source=fg_source, **options)  # type: ignore[arg-type]


def _requests(metrics: object, ks: object, benchmarks: object) -> tuple[list[MetricRequest], bool]:
    """(the metrics asked for, whether they are the default: every benchmark's defaults, skipped if unavailable)."""
    if metrics is None and benchmarks is None:
        return list(Request.parse(None, ks, benchmarks=REGISTRY.names()).metrics), True
    return list(Request.parse(metrics, ks, benchmarks=benchmarks).metrics), False  # type: ignore[arg-type]


def _no_config(bench: Benchmark, item_set: ItemSet, source: DataSource) -> str:
    return (
        f"{bench.name}: the data= folder {source.data} has no {item_set.source.config} config "
        "(`eccv-caption build` writes it)"
    )


def _unavailable(
    bench: Benchmark, sets: list[ItemSet], encoder: Encoder, source: DataSource, res: Resources
) -> str | None:
    lacking = [s.kind for s in sets if s.kind not in encoder.kinds]
    if lacking:
        return (
            f"{bench.name}: {encoder.spec} encodes no {' or '.join(KIND_WORDS[k] for k in lacking)} "
            f"(it has {' and '.join(KIND_WORDS[k] for k in encoder.kinds)} only)"
        )
    for s in sets:
        if not source.has(s.source.config):
            return _no_config(bench, s, source)
    if "CxC ratings" in bench.needs and res.cxc_source is None:
        return f"{bench.name}: needs the CxC ratings: a data= build with cxc_ratings, or cxc_source="
    return None


def evaluate_model(
    model: object,
    data: str | Path,
    metrics: Iterable[str] | str | None = None,
    ks: Iterable[int] | int = (1, 5, 10),
    *,
    benchmarks: Iterable[str] | str | None = None,
    images: Iterable[str | Path] | str | Path | None = None,
    resources: Resources | None = None,
    device: str | None = None,
    precision: str = "fp32",
    batch_size: int = 64,
    workers: int | None = None,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    save_embeddings: str | Path | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    token: str | None = None,
) -> ModelResults:
    """Encode what the benchmarks need with ``model`` (a spec or an object) and score it (module docstring).

    ``data``: a folder built by ``eccv-caption build`` or its Hub repo; ``images``: folders / zips with the
    pixels a build does not embed (COCO val2014, unlabeled2017, Flickr30K). ``metrics`` / ``benchmarks`` as
    in :func:`eccv_metric.evaluate`; neither: every benchmark whose items are available. ``cache``: reuse
    and keep embeddings under ``cache_dir`` (default: the Hugging Face cache). ``save_embeddings``: a folder
    receiving ``<set>/{image,caption}_embeddings.npy`` and ids (re-score them with ``Embeddings``).
    """
    started = time.perf_counter()
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise EvaluationError(f"batch_size= must be a positive integer, not {batch_size!r:.20}")
    workers = default_workers() if workers is None else workers
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise EvaluationError(f"workers= must be an integer >= 0, not {workers!r:.20}")
    memo = (cache_dir if cache_dir is not None else cache_root()) if cache else None
    source = DataSource(data, images, token, FileDigests(memo))
    requests, defaulted = _requests(metrics, ks, benchmarks)
    if save_embeddings is not None:
        check_embeddings_folder(save_embeddings)
    if not defaulted:  # a config the data lacks is known before the model loads
        for bench in [REGISTRY.get(n) for n in dict.fromkeys(r.benchmark.name for r in requests)]:
            absent = next((s for s in item_sets(bench) if not source.has(s.source.config)), None)
            if absent is not None:
                raise EvaluationError(_no_config(bench, absent, source))
    encoder = load_model(model, device, precision)
    res = resources if resources is not None else default_resources(source)
    wanted: dict[str, list[ItemSet]] = {}
    skipped: dict[str, str] = {}
    for bench in [REGISTRY.get(n) for n in dict.fromkeys(r.benchmark.name for r in requests)]:
        try:
            sets = item_sets(bench, res)
            why = _unavailable(bench, sets, encoder, source, res)
        except EvaluationError as exc:  # the resources of a restricted view (FG files) cannot be read
            sets, why = [], f"{bench.name}: {exc}"
        if why is not None and not defaulted:
            raise EvaluationError(why)
        if why is not None:
            skipped[bench.name] = why
        else:
            wanted[bench.name] = sets
    distinct = list(dict.fromkeys(s for sets in wanted.values() for s in sets))
    read = _read(source, distinct, wanted, res)
    for name, sets in list(wanted.items()):  # pixels and texts present, before any encoding
        why = next((m for m in (missing_message(name, read[s]) for s in sets) if m), None)
        if why is not None and not defaulted:
            raise EvaluationError(why)
        if why is not None:
            skipped[name] = why
            del wanted[name]
    if not wanted:
        raise EvaluationError("no benchmark can be scored: " + "; ".join(skipped.values()))
    whole = {s for sets in wanted.values() for s in sets if s.restriction is None}
    wanted = {name: [s.whole if s.whole in whole else s for s in sets] for name, sets in wanted.items()}
    # captions first: a text side that fails (a tokenizer, a text tower) fails before the images are encoded
    needed = sorted(dict.fromkeys(s for sets in wanted.values() for s in sets), key=lambda s: s.kind != "caption")
    encoded: dict[ItemSet, np.ndarray] = {}
    report: dict[str, dict] = {}
    seen: dict[tuple, tuple[ItemSet, int]] = {}  # an item (Items.keys) -> the set and row that encoded it
    for s in needed:  # each item once, even when several item sets hold it (the 5K images in MSCOCO-FG's gallery)
        keys = read[s].keys()
        fresh = [row for row, key in enumerate(keys) if key not in seen]
        whole = (
            EmbeddingCache(_key(encoder, read[s], precision), cache_dir, len(keys))
            if cache and encoder.identity
            else None
        )
        if whole is not None and whole.is_finished():
            fresh = list(range(len(keys)))  # the whole set is cached (an earlier run): read it, encode nothing
        items = read[s] if len(fresh) == len(keys) else read[s].subset(fresh)
        store = (
            whole
            if whole is None or items is read[s]
            else EmbeddingCache(_key(encoder, items, precision), cache_dir, len(items.ids))
        )
        values, meta = (
            encode_items(encoder, items, batch_size, workers, store)
            if fresh
            else (None, {"encoded": 0, "resumed": 0, "cached": False})
        )
        encoded[s] = _assemble(keys, fresh, values, seen, encoded)
        for row, key in enumerate(keys):
            seen.setdefault(key, (s, row))
        meta = {**meta, "items": len(keys), "dimensions": int(encoded[s].shape[1]), "shared": len(keys) - len(fresh)}
        report[s.label] = {**meta, "digest": read[s].digest, "cache": str(store.dir) if store else None}
    groups = _groups(wanted, read, encoded)
    per_query: dict = {}
    notes: list[str] = []
    by_bench = {name: [r.name for r in requests if r.benchmark.name == name] for name in wanted}
    for emb, names, _ in groups.values():
        for name in names:
            try:
                out = evaluate(emb, by_bench[name], ks, resources=res, n_resamples=n_resamples, seed=seed)
            except EvaluationError as exc:
                if not defaulted:
                    raise
                skipped[name] = f"{name}: {exc}"
                continue
            per_query.update({m: dict(out[m]) for m in out})
            notes += out.notes
    if not per_query:
        raise EvaluationError("no benchmark could be scored: " + "; ".join(skipped.values()))
    if save_embeddings is not None:
        write_embeddings(save_embeddings, groups)
    provenance = {
        "model": encoder.spec,
        "identity": encoder.identity,
        "data": source.data,
        "data_revision": source.revision,
        "items": report,
        "package": f"eccv-caption-hf {eccv_metric.__version__}",
        "device": encoder.device,
        "precision": encoder.precision,
        "batch_size": batch_size,
        "workers": workers,
        "similarity": "cosine",
        "seconds": round(time.perf_counter() - started, 3),
        "skipped": skipped,
    }
    return ModelResults(Results(per_query, notes), provenance, skipped, {g: e for g, (e, _, _) in groups.items()})


def _assemble(
    keys: list[tuple],
    fresh: list[int],
    values: np.ndarray | None,
    seen: dict[tuple, tuple[ItemSet, int]],
    encoded: dict[ItemSet, np.ndarray],
) -> np.ndarray:
    """An item set's embeddings in its order: the rows encoded now (``fresh``) and, for the others, the rows of
    the item set that encoded the same item first."""
    if values is not None and len(fresh) == len(keys):
        return values
    dims = {encoded[s].shape[1] for s, _ in (seen[k] for k in keys if k in seen)}
    if values is not None:
        dims.add(values.shape[1])
    if len(dims) != 1:
        raise EvaluationError(f"item sets came back with different dimensions {sorted(dims)}")
    dtype = values.dtype if values is not None else next(iter(encoded.values())).dtype
    out = np.empty((len(keys), dims.pop()), dtype=dtype)
    if values is not None:
        out[fresh] = values
    by_set: dict[ItemSet, tuple[list[int], list[int]]] = {}  # the set that encoded them -> (rows here, rows there)
    for row, key in enumerate(keys):
        if key in seen:
            first, at = seen[key]
            here, there = by_set.setdefault(first, ([], []))
            here.append(row)
            there.append(at)
    for first, (here, there) in by_set.items():
        out[here] = encoded[first][there]
    return out


def _read(
    source: DataSource, distinct: list[ItemSet], wanted: dict[str, list[ItemSet]], res: Resources
) -> dict[ItemSet, Items]:
    """Each item set's items; a restricted set: the items of its whole set that its benchmark's views rank."""
    whole: dict[ItemSet, Items] = {}
    read: dict[ItemSet, Items] = {}
    for s in distinct:
        if s.whole not in whole:
            whole[s.whole] = source.read(s.whole)
        items = whole[s.whole]
        if s.restriction is not None:
            bench = REGISTRY.get(next(n for n, sets in wanted.items() if s in sets))
            ranked = ranked_ids(bench, s.kind, res)
            rows = np.flatnonzero(np.isin(items.ids, ranked)).tolist()
            items = items.subset(rows)
            items.item_set = s
        read[s] = items
    return read


def check_embeddings_folder(folder: str | Path) -> None:
    """``save_embeddings=``: a new folder, or one this function wrote before (replaced whole); else an error."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise EvaluationError(f"save_embeddings= {path} is a file: give a folder (it receives <set>/*_embeddings.npy)")
    if path.is_dir():
        foreign = [
            p.name
            for p in sorted(path.iterdir())
            if not (p.is_dir() and {f.name for f in p.iterdir()} <= EMBEDDING_FILES)
        ]
        if foreign:
            raise EvaluationError(
                f"save_embeddings= {path} holds {foreign[0]}, which no earlier save_embeddings= wrote: give a new "
                "folder (an earlier one is replaced whole)"
            )
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise EvaluationError(f"save_embeddings= {path}: cannot create it under {parent}")


def _key(encoder: Encoder, items: Items, precision: str) -> dict:
    return {
        "model": encoder.identity,
        "items": items.item_set.label,
        "digest": items.digest,
        "decoder": decoder() if items.texts is None else None,
        "device": encoder.device.split(":")[0],
        "precision": precision,
        "package": eccv_metric.__version__,
    }


def _groups(
    wanted: dict[str, list[ItemSet]], read: dict[ItemSet, Items], encoded: dict[ItemSet, np.ndarray]
) -> dict[str, tuple[Embeddings, list[str], dict[str, np.ndarray]]]:
    """One Embeddings per collection and caption text (benchmarks sharing items share its similarity matrix)."""
    members: dict[str, dict] = {}
    for name, sets in wanted.items():
        captions = next((s for s in sets if s.kind == "caption"), None)
        column = captions.source.text_column if captions else "caption"
        group = sets[0].collection + ("" if column == "caption" else f"_{column}")
        entry = members.setdefault(group, {"names": [], "sets": {}})
        entry["names"].append(name)
        for s in sets:
            entry["sets"][s.kind] = s
    out = {}
    for group, entry in members.items():
        parts: dict[str, object] = {}
        for kind, s in entry["sets"].items():
            parts[f"{kind}s"] = encoded[s]
            parts[f"{kind}_ids"] = read[s].ids
        emb = Embeddings(
            parts.get("images"), parts.get("captions"), parts.get("image_ids"), parts.get("caption_ids"), normalize=True
        )
        ids = {kind: read[s].ids for kind, s in entry["sets"].items()}
        out[group] = (emb, entry["names"], ids)
    return out


def write_embeddings(
    folder: str | Path, groups: dict[str, tuple[Embeddings, list[str], dict[str, np.ndarray]]]
) -> None:
    """``<folder>/<group>/{image,caption}_embeddings.npy`` (L2-normalised) and ``{image,caption}_ids.npy``."""
    dest = Path(folder)
    tmp = temporary_folder(dest)
    for group, (emb, _, ids) in groups.items():
        (tmp / group).mkdir()
        for kind, values in emb.vectors.items():
            np.save(tmp / group / f"{kind}_embeddings.npy", values)
            np.save(tmp / group / f"{kind}_ids.npy", ids[kind])
    replace_folder(tmp, dest)
