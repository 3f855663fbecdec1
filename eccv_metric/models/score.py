"""The last step of a model run: the embeddings as :class:`~eccv_metric.inputs.embeddings.Embeddings`, one per
collection and caption text (benchmarks sharing items share one image-caption product), ranked by the
model's similarity (cosine: L2-normalised rows; dot: the rows as they are).

Every benchmark of a group is scored in one engine run (:func:`eccv_metric.api.many.evaluate_benchmarks`: each
product computed once for all of them). When nothing was asked (the plan skips what cannot be scored), a
benchmark that cannot be scored (e.g. ratings a build lacks) is skipped alone with its reason.
``save_embeddings=`` writes ``<folder>/<group>/{image,caption}_{embeddings,ids}.npy`` (the vectors as
ranked) once everything is scored, replacing the folder whole (the plan refused a folder holding anything
else before any encoding).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import numpy as np

from eccv_metric.api.chance import for_model
from eccv_metric.api.chance import warn_chance
from eccv_metric.api.many import evaluate_benchmarks
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import replace_folder
from eccv_metric.core.files import temporary_folder
from eccv_metric.inputs.embeddings import Embeddings
from eccv_metric.measures.results import Results
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.plan import Plan


@dataclass
class Group:
    """One Embeddings input and the benchmarks scored on it."""

    embeddings: Embeddings
    benchmarks: list[str]
    ids: dict[str, np.ndarray]
    sets: dict[str, ItemSet] = field(default_factory=dict)  # kind -> the item set of its rows
    scored: dict[str, list[str]] = field(default_factory=dict)  # benchmark -> the metric names scored on it


def ranking_device(model_device: str) -> str | None:
    """Where a run's ranks are counted: on the model's CUDA device by torch (exact for the scores it computes:
    :mod:`eccv_metric.kernels.device`, the same per-query values as the numpy engine on integer embeddings),
    else (None) by the numpy engine, the reference."""
    return model_device if model_device.startswith("cuda") else None


def score(
    plan: Plan,
    encoded: dict[ItemSet, np.ndarray],
    similarity: str,
    save_embeddings: str | Path | None = None,
    device: str | None = None,
) -> tuple[Results, dict[str, Group]]:
    """Every requested metric of every planned benchmark (see the module docstring); skips go to ``plan``.
    ``device``: a torch device that ranks (:func:`ranking_device`), None: the numpy engine."""
    groups = make_groups(plan, encoded, similarity, device)
    per_query: dict = {}
    notes: list[str] = []
    request = plan.request
    for group in groups.values():
        wanted = {name: [r.name for r in request.metrics if r.benchmark.name == name] for name in group.benchmarks}
        with warnings.catch_warnings():  # warned below, in the model path's words (api.chance.for_model)
            warnings.simplefilter("ignore", ChanceLevelWarning)
            out, failed = evaluate_benchmarks(group.embeddings, wanted, resources=plan.resources,
                                              n_resamples=request.n_resamples, seed=request.seed,
                                              skip_failing=plan.skip_unavailable)  # fmt: skip
        plan.skipped.update(failed)
        group.scored = {name: metrics for name, metrics in wanted.items() if name not in failed}
        per_query.update({m: dict(out[m]) for m in out})
        notes += [for_model(note) for note in out.notes]
    if not per_query:
        raise EvaluationError("no benchmark could be scored: " + "; ".join(plan.skipped.values()))
    warn_chance(notes)
    if save_embeddings is not None:
        write_embeddings(save_embeddings, groups)
    return Results(per_query, notes), groups


def group_sets(plan: Plan) -> dict[str, tuple[list[str], dict[str, ItemSet]]]:
    """Each group's benchmarks and item sets (one per kind): one group per collection and caption text."""
    members: dict[str, tuple[list[str], dict[str, ItemSet]]] = {}
    for name, sets in plan.wanted.items():
        captions = next((s for s in sets if s.kind == "caption"), None)
        column = captions.source.text_column if captions else "caption"
        names, kinds = members.setdefault(sets[0].collection + ("" if column == "caption" else f"_{column}"), ([], {}))
        names.append(name)
        kinds.update({s.kind: s for s in sets})
    return members


def make_groups(
    plan: Plan, encoded: dict[ItemSet, np.ndarray], similarity: str, device: str | None = None
) -> dict[str, Group]:
    """One Embeddings per collection and caption text (benchmarks sharing items share its similarity matrix)."""
    out = {}
    for group, (names, kinds) in group_sets(plan).items():
        ids = {kind: plan.items[s].ids for kind, s in kinds.items()}
        image, caption = kinds.get("image"), kinds.get("caption")
        emb = Embeddings(
            encoded[image] if image else None,
            encoded[caption] if caption else None,
            ids.get("image"),
            ids.get("caption"),
            normalize=similarity == "cosine",
            device=device if device is not None else "numpy",
        )
        out[group] = Group(emb, names, ids, dict(kinds))
    return out


def write_embeddings(folder: str | Path, groups: dict[str, Group]) -> None:
    """``<folder>/<group>/{image,caption}_embeddings.npy`` (the vectors ranked) and ``{image,caption}_ids.npy``."""
    dest = Path(folder)
    tmp = temporary_folder(dest)
    for name, group in groups.items():
        (tmp / name).mkdir()
        for kind, values in group.embeddings.vectors.items():
            np.save(tmp / name / f"{kind}_embeddings.npy", values)
            np.save(tmp / name / f"{kind}_ids.npy", group.ids[kind])
    replace_folder(tmp, dest)
