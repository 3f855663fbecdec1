"""The evidence came from the model: a few of its items encoded again (``verify --reencode N --model SPEC``).

Recomputing a number from its evidence (:mod:`eccv_metric.evidence.check`) proves the number is what the evidence
gives; it cannot tell whose embeddings they are. With the model at hand, ``N`` items of each item set the evidence
holds (chosen by ``seed``, the same for everyone) are encoded again and compared with their rows; for a pair scorer,
``N`` of its reranked pairs (or of an exhaustive run's) are scored again and compared with their final scores. A
model's bits vary with the device, the batch and the library version, so each is compared within a tolerance of
the run's precision (:data:`TOLERANCE`): an embedding by its relative L2 error ``|new - kept| / |kept|``, a pair
score by ``|new - kept| / max(1, |kept|)``. Another model (the same architecture with other weights) is orders of
magnitude outside it.

The items are read from the data the run read (a built folder, or the benchmark's Hub repo at its revision) by the
model path's own reader; nothing is cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eccv_metric.benchmarks.media import ItemSource
from eccv_metric.core.errors import EvaluationError
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import EvidenceInput

# the largest relative error of a re-encoded item (or pair score) per precision: float32 differs by summation
# order on another device or batch (~1e-6), float16 / bfloat16 by their rounding (eps 9.8e-4 / 7.8e-3) through the
# model's layers
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}


@dataclass(frozen=True)
class Reencoded:
    """One item set (or a pair scorer's pairs) encoded again: how many, the worst error, the tolerance."""

    what: str
    n: int
    worst: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.worst <= self.tolerance)

    def line(self) -> str:
        verdict = "within" if self.ok else "OUTSIDE"
        return (f"reencode {self.what}: {self.n} again, largest error {self.worst:.3g}, {verdict} the tolerance "
                f"{self.tolerance:g}")  # fmt: skip


def pick(n_rows: int, n: int, seed: int) -> np.ndarray:
    """``min(n, n_rows)`` rows chosen by ``seed``, ascending."""
    return np.sort(np.random.default_rng(seed).choice(n_rows, min(n, n_rows), replace=False))


def item_set(about: dict, ids: np.ndarray) -> object:
    """The :class:`~eccv_metric.models.data.items.ItemSet` of a manifest's ``sets`` entry (its rows: ``ids``)."""
    from eccv_metric.models.data.items import ItemSet

    source = ItemSource(**about["source"])
    only = frozenset(np.asarray(ids).tolist()) if about.get("restricted") else None
    return ItemSet(about["collection"], about["kind"], source, about.get("restriction"), only)


def reencode(
    evidence: Evidence,
    model: object,
    data: str | Path,
    n: int,
    *,
    seed: int = 0,
    device: str | None = None,
    images: object = None,
    token: str | None = None,
    revision: str | None = None,
    batch_size: int = 64,
) -> list[Reencoded]:
    """Encode ``n`` items of each item set of ``evidence`` again with ``model`` (and score ``n`` pairs of a pair
    scorer's), from ``data`` (``revision``: a Hub repo's commit); one :class:`Reencoded` each (see the module
    docstring)."""
    from eccv_metric.models.data.source import DataSource
    from eccv_metric.models.families.pair_scorer import is_pair_scorer
    from eccv_metric.models.families.spec import load_model

    if n < 1:
        raise EvaluationError(f"reencode= must be a positive number of items, not {n!r:.20}")
    precision = str(evidence.run.get("precision") or "fp32")
    tolerance = TOLERANCE.get(precision, TOLERANCE["fp32"])
    loaded = load_model(model, device, precision, batch_size, None, None, 0)
    source = DataSource(data, images, token)
    if revision is not None and source.root is None:
        source.revision = revision  # the benchmark at the entry's pinned revision
    scorer = loaded if is_pair_scorer(loaded) else None
    encoder = scorer.first_stage if scorer is not None else loaded  # type: ignore[union-attr]
    out: list[Reencoded] = []
    seen: set[tuple] = set()
    for part in evidence.inputs:
        rows = part.entry.get("first", part.entry) if part.kind == "twostage" else part.entry
        if rows.get("kind") == "embeddings" and part.entry.get("sets"):
            if encoder is None or (scorer is not None and evidence.run.get("first_stage", {}).get("own") is False):
                continue  # a first stage of another model: give that model to check its embeddings
            out += embeddings(part, encoder, source, n, seed, tolerance, seen, batch_size)
        if scorer is not None and part.kind in ("twostage", "scores") and part.entry.get("sets"):
            out.append(pairs(part, scorer, source, n, seed, tolerance, evidence, batch_size))
    if not out:
        raise EvaluationError("reencode= finds nothing to encode again: the evidence holds no model run's items")
    return out


def embeddings(
    part: EvidenceInput, encoder: object, source: object, n: int, seed: int, tolerance: float, seen: set,
    batch_size: int,
) -> list[Reencoded]:  # fmt: skip
    """Each item set of an embeddings input (or a two-stage input's first stage) encoded again, ``n`` items."""
    from eccv_metric.models.cache.store import EmbeddingStore

    arrays = part.arrays()
    rows = arrays.get("first", arrays)
    out = []
    for kind, about in (part.entry.get("sets") or {}).items():
        kept = rows.get(f"{kind}_embeddings")  # type: ignore[union-attr]
        ids = rows.get(f"{kind}_ids")  # type: ignore[union-attr]
        key = (about["collection"], kind, about["source"].get("text_column"))
        if kept is None or ids is None or key in seen:
            continue
        seen.add(key)
        chosen = item_set(about, ids)
        items = source.read(chosen)  # type: ignore[attr-defined]
        at = pick(len(ids), n, seed)
        where = positions(items.ids, np.asarray(ids)[at], chosen.label)  # type: ignore[attr-defined]
        subset = items.rows(where.tolist())
        store = EmbeddingStore(encoder, None, batch_size, 0, batch_size)  # type: ignore[arg-type]
        new = store.embed([chosen], {chosen: subset})[0][chosen]
        old = np.asarray(kept)[at].astype(np.float64)
        error = np.linalg.norm(new.astype(np.float64) - old, axis=1) / np.maximum(np.linalg.norm(old, axis=1), 1e-30)
        label = f"{about['collection']} {'images' if kind == 'image' else 'captions'}"
        out.append(Reencoded(label, len(at), float(error.max(initial=0.0)), tolerance))
    return out


def positions(have: np.ndarray, wanted: np.ndarray, label: str) -> np.ndarray:
    """Where each wanted id is among the items read (an id the data lacks is one error naming ``label``)."""
    order = np.argsort(have, kind="stable")
    at = np.searchsorted(have[order], wanted).clip(0, max(len(have) - 1, 0))
    found = have[order][at] == wanted if len(have) else np.zeros(len(wanted), bool)
    if not found.all():
        raise EvaluationError(
            f"reencode: the data has no item {int(wanted[~found][0])} of {label} (the evidence's rows are another "
            "build's items: give the data the run read)"
        )
    return order[at]


def pairs(
    part: EvidenceInput, scorer: object, source: object, n: int, seed: int, tolerance: float, evidence: Evidence,
    batch_size: int,
) -> Reencoded:  # fmt: skip
    """``n`` pairs of a pair scorer's evidence scored again: their final scores (``itm+itc``: plus the first
    stage's similarity, from the evidence's own embeddings) against the evidence's."""
    from eccv_metric.models.pairs.pairset import PairSet
    from eccv_metric.models.pairs.stage import PairStage
    from eccv_metric.models.pairs.stage import Side

    arrays = part.arrays()
    sets = part.entry.get("sets") or {}
    image_ids, caption_ids, kept = chosen_pairs(part, arrays, n, seed)
    found = {k: source.read(item_set(sets[k], np.asarray(part.row_ids()[k]))) for k in ("image", "caption")}  # type: ignore[attr-defined]
    images, captions = found["image"], found["caption"]
    image_rows = positions(images.ids, image_ids, images.item_set.label)
    caption_rows = positions(captions.ids, caption_ids, captions.item_set.label)
    pair_set = PairSet.of(image_rows, caption_rows, images.ids, captions.ids)
    stage = PairStage(scorer, batch_size, 64, 0)  # type: ignore[arg-type]
    side = Side(part.name, pair_set, images, captions, None)
    raw = np.concatenate([scores for _, scores in stage.run(side, list(range(pair_set.n_blocks)), lambda *_: None)])
    new = raw[pair_set.positions(image_rows, caption_rows)].astype(np.float32)
    if (evidence.run.get("protocol") or {}).get("score_rule") == "itm+itc" and part.kind == "twostage":
        new = new + similarity(arrays["first"], part.entry["first"], image_ids, caption_ids)  # type: ignore[arg-type]
    new = new.astype(np.float64)
    error = np.abs(new - kept) / np.maximum(1.0, np.abs(kept))
    return Reencoded(f"{part.name} pair scores", len(kept), float(error.max(initial=0.0)), tolerance)


def chosen_pairs(part: EvidenceInput, arrays: dict, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image ids, caption ids, kept final scores) of ``n`` pairs of a pair scorer's evidence, chosen by ``seed``:
    every (query, candidate) of a rerank's directions, or every cell of an exhaustive run's matrix."""
    if part.kind == "scores":
        matrix = np.asarray(arrays["scores"])
        cells = pick(matrix.size, n, seed)
        rows, cols = np.divmod(cells, matrix.shape[1])
        return np.asarray(arrays["image_ids"])[rows], np.asarray(arrays["caption_ids"])[cols], matrix.ravel()[cells]
    parts_i, parts_c, parts_s = [], [], []
    for direction, v in arrays.items():
        if direction not in ("i2t", "t2i"):
            continue
        queries = np.broadcast_to(np.asarray(v["query_ids"])[:, None], v["candidate_ids"].shape).ravel()
        candidates = np.asarray(v["candidate_ids"]).ravel()
        parts_i.append(queries if direction == "i2t" else candidates)
        parts_c.append(candidates if direction == "i2t" else queries)
        parts_s.append(np.asarray(v["scores"], np.float64).ravel())
    image_ids, caption_ids, scores = (np.concatenate(p) for p in (parts_i, parts_c, parts_s))
    at = pick(len(scores), n, seed)
    return image_ids[at].astype(np.int64), caption_ids[at].astype(np.int64), scores[at]


def similarity(first: dict, entry: dict, image_ids: np.ndarray, caption_ids: np.ndarray) -> np.ndarray:
    """The first stage's similarity of each (image, caption) pair (float32, as the run added it), from the
    evidence's embeddings."""
    from eccv_metric.kernels.scorers import unit_rows

    vectors = {}
    for kind, ids in (("image", image_ids), ("caption", caption_ids)):
        emb = np.asarray(first[f"{kind}_embeddings"])
        have = np.asarray(first[f"{kind}_ids"])
        rows = emb[positions(have, ids, f"the first stage's {kind}s")]
        vectors[kind] = unit_rows(rows, kind) if entry.get("similarity") == "cosine" else rows
    return np.einsum("ij,ij->i", vectors["image"], vectors["caption"]).astype(np.float32)
