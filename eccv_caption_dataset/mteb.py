"""MTEB (2.x) task definitions of the ECCV Caption benchmarks: ``pip install "eccv-caption-hf[mteb]"``.

::

    import mteb
    from eccv_caption_dataset.mteb import tasks

    model = mteb.get_model("mteb/baseline-random-encoder")  # a stand-in: your model here
    results = mteb.evaluate(model, tasks=tasks("user/eccv-caption", revision="<commit sha>"),
                            prediction_folder="predictions", overwrite_strategy="always")

:func:`tasks` gives one ``AbsTaskRetrieval`` per benchmark direction whose
configs the dataset has (its ``<subset>-corpus`` / ``-queries`` / ``-qrels``,
written by ``eccv-caption build``; :mod:`eccv_metric.benchmarks.subsets`):
category ``i2t``, ``t2i``, ``t2t`` or ``i2i``, ``hit_rate_at_1`` (R@1) as the main
score. mteb's own loader reads the data; nothing here changes how it scores.

- ``t2t`` / ``i2i``: the query is left out of its own results
  (``ignore_identical_ids``); MTEB drops it after the top-k cut, so these tasks
  keep one document more than ``max(k_values)`` and every K asked stays exact.
- COCO 1K: one task per direction holding the five fold subsets; the mean of
  its subsets' scores is COCO 1K R@K (equal query counts per fold).
- ``prediction_folder`` saves each query's top ``max(k_values)`` documents when the task runs (a result
  in MTEB's cache is returned without running: ``overwrite_strategy="always"`` reruns);
  ``eccv-caption evaluate --run <folder>/<task>_predictions.json --metrics ...``
  scores them with every metric (mAP@R, R-Precision, PMRP, MedR).
- Text queries are handed to mteb as rows read through an identity transform (:func:`rows_as_stored`): the
  same rows, but mteb 2.26's ``_combine_queries_with_instruction_text`` copies the ``text`` column with
  ``add_column(dataset["text"])``, which under datasets 5 reads a plain dataset's lazy ``Column`` one row
  at a time (10-22 s for 25,000 captions on two cores); through a transform it takes 0.4 s.
- t2t over 25,000 captions: wrap the model in
  ``mteb.models.search_wrappers.SearchEncoderWrapper(model, corpus_chunk_size=5000)``
  to bound the similarity matrix (~0.5 GB a chunk instead of 2.5 GB).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from datasets import get_dataset_config_names
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.subsets import GRADED
from eccv_metric.benchmarks.subsets import Subset
from eccv_metric.benchmarks.subsets import subsets as all_subsets
from eccv_metric.core.errors import EvaluationError

K_VALUES = (1, 5, 10, 100)
ROLES = ("corpus", "queries", "qrels")
PREFIX = "ECCVCaption_"
_ARXIV = re.compile(r"arXiv:([0-9]{4}\.[0-9]{4,5})")


def tasks(
    path: str | Path,
    revision: str = "main",
    names: Iterable[str] | None = None,
    k_values: Iterable[int] = K_VALUES,
) -> list[AbsTaskRetrieval]:
    """The MTEB tasks of a built dataset (a local folder or a Hub dataset repo at ``revision``).

    ``names``: task groups (``eccv-t2i``, ``coco_1k-i2t``, ``cxc_t2t-t2t``...; one COCO 1K fold by its
    subset name, ``coco_1k_fold3-t2i``) or task names (``ECCVCaption_eccv-t2i``); default: every group the
    dataset has. ``k_values``: the cutoffs MTEB
    reports (its search keeps ``max(k_values)`` documents per query).
    """
    ks = tuple(sorted(set(int(k) for k in k_values)))
    if not ks or ks[0] < 1:
        raise EvaluationError(f"k_values must be positive integers, not {tuple(k_values)!r}")
    configs = set(get_dataset_config_names(str(path), revision=revision))
    groups: dict[str, list[Subset]] = {}
    folds: dict[str, list[Subset]] = {}  # a single COCO 1K fold, by its subset name
    for sub in all_subsets():
        if all(f"{sub.name}-{role}" in configs for role in ROLES):
            groups.setdefault(sub.group, []).append(sub)
            if sub.fold is not None:
                folds[sub.name] = [sub]
    if not groups:
        raise EvaluationError(
            f"{path}: no <subset>-corpus / -queries / -qrels configs (build it with `eccv-caption build`)"
        )
    wanted = list(groups) if names is None else [n.removeprefix(PREFIX) for n in names]
    missing = [n for n in wanted if n not in groups and n not in folds]
    if missing:
        raise EvaluationError(
            f"{path} has no complete subset {missing[0]}: {why_missing(missing[0], configs)}; "
            f"it has {', '.join(groups)}"
        )
    return [task_class(name, groups.get(name) or folds[name], str(path), revision, ks)() for name in wanted]


def why_missing(name: str, configs: set[str]) -> str:
    """Why a built dataset has no complete subset ``name`` (a task group or a subset), and how to build it."""
    subs = [sub for sub in all_subsets() if name in (sub.name, sub.group)]
    if not subs:
        return "no benchmark direction has that name (names: eccv-t2i, coco_1k-i2t, cxc_t2t-t2t...)"
    sub = next((s for s in subs if f"{s.name}-qrels" in configs), None)
    if sub is None:
        if any(s.grading or s.kinds[0] == s.kinds[1] for s in subs):
            return "it needs the CxC ratings: build with the CxC CSVs in --source-dir, or --download"
        return "its qrels are missing: rebuild the folder with `eccv-caption build`"
    for kind in dict.fromkeys(sub.kinds):
        if f"beir-{kind}s" not in configs:
            source = "COCO captions JSON" if kind == "caption" else "COCO captions or instances JSON"
            return f"only its qrels are built, the {kind}s config is not: build with the {source} (--source-dir)"
    return (
        "only its qrels are built: images it ranks have no pixels in this build (MTEB's image pipeline needs "
        "every one); rebuild with --download, or --source-dir holding the val2014 folder or val2014.zip with "
        "every test image"
    )


def task_class(
    group: str, subsets: list[Subset], path: str, revision: str, k_values: tuple[int, ...]
) -> type[AbsTaskRetrieval]:
    """An ``AbsTaskRetrieval`` subclass for one benchmark direction (its subsets: the COCO 1K folds, or one)."""
    first = subsets[0]
    bench = REGISTRY.get(first.benchmark)
    image = "i" in first.direction
    graded = next((p for p, (base, _) in GRADED.items() if first.name.startswith(p + "-")), None)
    description = bench.description + (
        " Qrels scores: the SITS rating rounded half up (3-5), read by nDCG only." if graded else ""
    )
    arxiv = _ARXIV.search(bench.citation)
    metadata = TaskMetadata(
        name=PREFIX + group,
        description=description,
        reference=f"https://arxiv.org/abs/{arxiv.group(1)}" if arxiv else None,
        dataset={"path": path, "revision": revision},
        type="Any2AnyRetrieval" if image else "Retrieval",
        category=first.direction,
        modalities=["image", "text"] if image else ["text"],
        eval_splits=["test"],
        eval_langs={sub.name: ["eng-Latn"] for sub in subsets},
        main_score="hit_rate_at_1",
        license=_license(bench.license),
        annotations_creators="human-annotated",
        sample_creation="found",
        bibtex_citation="",
    )
    ks = k_values + ((max(k_values) + 1,) if first.exclude_self else ())
    name = "EccvCaption" + "".join(part.capitalize() for part in re.split(r"[-_]", group))
    attributes = {"metadata": metadata, "k_values": ks, "ignore_identical_ids": first.exclude_self}
    return type(name, (AbsTaskRetrieval,), {**attributes, "load_data": load_data})


def load_data(self: AbsTaskRetrieval, num_proc: int | None = None, **kwargs) -> None:
    """mteb's own loader, then each split's text queries read through :func:`rows_as_stored` (the same rows)."""
    if self.data_loaded:
        return
    AbsTaskRetrieval.load_data(self, num_proc=num_proc, **kwargs)
    for splits in self.dataset.values():
        for split in splits.values():
            queries = split["queries"]
            if "text" in queries.column_names and queries.format["type"] is None:
                split["queries"] = queries.with_transform(rows_as_stored)


def rows_as_stored(batch: dict) -> dict:
    """The identity: a dataset read through it gives the rows it holds, and mteb's copy of its ``text`` column
    reads them a block at a time instead of one by one (the module docstring)."""
    return batch


def _license(text: str) -> str:
    if text.startswith("CC BY 4.0"):
        return "cc-by-4.0"
    if text.startswith("MIT"):
        return "mit"
    return "not specified"
