"""MTEB's saved predictions read as a run, so an MTEB model gets every metric (mAP@R, R-Precision, PMRP, MedR).

``mteb.evaluate(model, tasks, prediction_folder=...)`` writes one
``<task name>_predictions.json`` per task::

    {"mteb_model_meta": {"model_name": ..., "revision": ...},
     "<subset>": {"<split>": {"<query id>": {"<doc id>": <score>, ...}, ...}}, ...}

with the top ``max(k_values)`` documents of each query (in no particular order;
an intramodal task's query itself included). Subsets are this project's
(:mod:`eccv_metric.benchmarks.subsets`: ``eccv-t2i``, ``coco_1k_fold3-i2t``...),
ids ``image-<id>`` / ``caption-<id>``. Each list is ordered as MTEB scored it:
score descending, then document id descending as strings (trec_eval's rule;
there is no rank to keep another order). A fold subset ranked its queries
against their COCO 1K fold only, so its lists score ``coco_1k`` metrics and
nothing else: any other metric from them is refused.
"""

from __future__ import annotations

import math
from pathlib import Path

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.subsets import subset
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.view import DIRECTION_KINDS
from eccv_metric.core.view import View
from eccv_metric.formats.trec_lines import parse_trec_id
from eccv_metric.inputs.given import Rankings

TASK_PREFIX = "ECCVCaption_"  # the MTEB task names of eccv_caption_dataset.mteb (``ECCVCaption_<subset>``)
EXPECTED = 'MTEB predictions {"mteb_model_meta": ..., "<subset>": {"test": {"<query id>": {"<doc id>": score}}}}'
META = "mteb_model_meta"


def _head(path: str | Path) -> bytes:
    try:
        with open(path, "rb") as fin:
            return fin.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return b""


def is_mteb_predictions(path: str | Path) -> bool:
    """Whether a file looks like MTEB predictions (a JSON object whose first key is ``mteb_model_meta``)."""
    head = _head(path)
    return head.startswith(b"{") and head[1:].lstrip().startswith(b'"' + META.encode())


def is_json_object(path: str | Path) -> bool:
    """Whether a file starts like a JSON object (``{``): never a TREC run, whose lines start with a query id."""
    return _head(path).startswith(b"{")


def is_rankings_json(path: str | Path) -> bool:
    """Whether a file starts like a rankings JSON: a JSON object whose first key is a direction (``"i2t"``...)."""
    head = _head(path)
    return head.startswith(b"{") and any(head[1:].lstrip().startswith(f'"{d}"'.encode()) for d in DIRECTION_KINDS)


def not_rankings(path: str | Path, instead: str) -> EvaluationError:
    """The error for MTEB predictions given where a rankings JSON is expected; ``instead``: what takes them."""
    return EvaluationError(
        f"{path}: MTEB predictions (first key {META!r}; {{query: {{doc: score}}}} per subset), not a rankings JSON "
        f"{{direction: {{query id: [ranked ids]}}}}: {instead}"
    )


class PredictionRankings(Rankings):
    """Rankings read from MTEB predictions; knows which gallery each direction's lists searched."""

    def __init__(
        self,
        path: str | Path,
        restrictions: dict[str, tuple[str | None, list[str]]],
        meta: object = None,
        **directions: object,
    ):
        super().__init__(**directions)
        self.path = str(path)
        self.restrictions = restrictions  # direction -> (restriction of the subsets' search, subset names)
        self.meta = meta if isinstance(meta, dict) else {}  # mteb_model_meta: model_name, revision, ...

    def provenance(self) -> dict:
        """Who produced the lists: MTEB, its model (``mteb:<model_name>``; a Hub id names the model repo) and
        revision, and each MTEB task with the subsets it ran (``ECCVCaption_eccv-i2t``: ``eccv-i2t``)."""
        name, revision = self.meta.get("model_name"), self.meta.get("revision")
        subsets = [s for _, names in self.restrictions.values() for s in names]
        stem = Path(self.path).name.removesuffix(".json").removesuffix("_predictions")
        task = stem if stem.startswith(TASK_PREFIX) else None
        out: dict = {"producer": "mteb", "input": "mteb_predictions"}
        if isinstance(name, str) and name.strip():
            out["model"] = f"mteb:{name.strip()}"
        out["mteb"] = {
            "model_name": name if isinstance(name, str) else None,
            "revision": revision if isinstance(revision, str) else None,
            "tasks": {task: subsets} if task else {f"{TASK_PREFIX}{s}": [s] for s in subsets},
        }
        return out

    @property
    def made_for(self) -> tuple[str, ...]:  # type: ignore[override]
        """The benchmarks of the predictions' subsets; () for whole-gallery image-caption lists (then the
        official defaults apply, as for any image-caption input)."""
        if set(self.raw) <= {"i2t", "t2i"} and all(r is None for r, _ in self.restrictions.values()):
            return ()
        names = [subset(name).benchmark for _, subset_names in self.restrictions.values() for name in subset_names]
        return tuple(dict.fromkeys(names))

    def cannot(self, view: View) -> str | None:
        reason = super().cannot(view)
        restriction, names = self.restrictions.get(view.direction, (None, []))
        if reason is None and restriction is not None and view.restriction != restriction:
            return (
                f"{self.path}: the {view.direction} lists of MTEB subsets {', '.join(names)} ranked each query "
                f"within its {REGISTRY.restriction_label(restriction)} only: they score metrics of that "
                "restriction (coco_1k_*), not this one; use the predictions of an unrestricted subset"
            )
        return reason


def read_predictions(path: str | Path, split: str = "test") -> PredictionRankings:
    """MTEB predictions -> rankings per direction (see the module docstring)."""
    raw = require_object(read_json(path, EXPECTED), path, EXPECTED)
    if META not in raw and raw and set(raw) <= set(DIRECTION_KINDS):
        raise EvaluationError(
            f"{path}: a rankings JSON (keys {', '.join(raw)}), not MTEB predictions: read it with load_rankings"
        )
    if META not in raw:
        raise EvaluationError(
            f'{path}: no {META!r} key, which MTEB predictions hold first ({{"model_name": ..., "revision": ...}}, '
            "written by mteb.evaluate(..., prediction_folder=...)): put it back, or save the predictions again; "
            f"expected {EXPECTED}"
        )
    lists: dict[str, dict[int, list[int]]] = {}
    restrictions: dict[str, tuple[str | None, list[str]]] = {}
    for name, splits in raw.items():
        if name == META:
            continue
        sub = subset(name)
        splits = require_object(splits, path, f"subset {name}: {{split: {{query id: {{doc id: score}}}}}}")
        if split not in splits:
            raise EvaluationError(f"{path}: subset {name} has no {split!r} split (it has {', '.join(splits)})")
        restriction = REGISTRY.get(sub.benchmark).task(sub.direction).restriction
        seen = restrictions.setdefault(sub.direction, (restriction, []))
        if seen[0] != restriction:
            raise EvaluationError(f"{path}: subsets {seen[1][0]} and {name} searched different galleries")
        seen[1].append(name)
        queries = require_object(splits[split], path, f"subset {name} split {split}")
        target = lists.setdefault(sub.direction, {})
        for query, docs in queries.items():
            where = f"{path}: {name}, query {query}"
            kind, qid = parse_trec_id(query, where)
            if kind != sub.kinds[0]:
                raise EvaluationError(f"{where}: {sub.direction} queries are {sub.kinds[0]}-<id>")
            if qid in target:
                raise EvaluationError(f"{where}: the query appears in two subsets")
            target[qid] = _ordered(require_object(docs, path, f"{where}: {{doc id: score}}"), sub.kinds[1], where)
    if not lists:
        raise EvaluationError(f"{path}: no subset; expected {EXPECTED}")
    return PredictionRankings(path, restrictions, raw.get(META), **lists)


def _ordered(docs: dict, kind: str, where: str) -> list[int]:
    """A query's documents by score descending, then document id descending as strings (MTEB's order)."""
    rows = []
    for token, score in docs.items():
        dkind, did = parse_trec_id(token, where)
        if dkind != kind:
            raise EvaluationError(f"{where}: document {token} is not a {kind}")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise EvaluationError(f"{where}: the score of {token} must be a finite number, not {score!r:.40}")
        rows.append((score, token, did))
    rows.sort(key=lambda row: (row[0], row[1]), reverse=True)
    return [did for _, _, did in rows]
