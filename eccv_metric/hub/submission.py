"""What ``push-results`` publishes, read and checked from the files of one run, before anything talks to the Hub.

A results file of ``eccv-caption evaluate --model SPEC --data DATASET -o res.json`` (or of MTEB's predictions,
``evaluate --run <task>_predictions.json -o res.json``) holds the numbers and their ``provenance``: the model,
the data and its revision, the package, the run's ``date`` and the ``digests`` of the numbers, the per-query values
and the provenance as written (:mod:`eccv_metric.core.provenance`). A results file naming no model is refused, as
is a metric or direction the benchmark does not register, a value out of its range, a file edited after the run
(its numbers or any field of its provenance, the model it names included, no longer match their digests), a file
whose digests do not seal its provenance (an earlier version's: run it again), a per-query file of another run (its
digest, or failing one its aggregates, differ) and, unless ``other_model=True`` (``--other-model``), results whose
model loads another repo than ``model_repo``. The per-query values are what the details repo publishes
(:mod:`eccv_metric.hub.details`); ``details=False`` (``--no-details``) publishes the numbers alone. A folder
(``evaluate --model A --model B -o DIR``) is one submission per results file in it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from eccv_metric.benchmarks.names import metric_info
from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.provenance import broken_seal
from eccv_metric.evidence.load import Evidence
from eccv_metric.hub.eval_tasks import TASKS
from eccv_metric.hub.eval_tasks import HubTask
from eccv_metric.hub.eval_tasks import task_of
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import is_repo_id
from eccv_metric.hub.run_files import read_per_query
from eccv_metric.hub.run_files import read_run_evidence

RESULTS = "the results JSON of `eccv-caption evaluate --model SPEC --data DATASET -o res.json`"
EVALUATE = "write it with `eccv-caption evaluate --model SPEC --data DATASET_REPO -o res.json --per-query pq.json`"
HUB_SPECS = ("hf:", "st:", "open_clip:hf-hub:", "mteb:")  # model specs whose rest is a Hub model repo
RANGES = {"fraction": (0.0, 1.0), "correlation": (-1.0, 1.0), "rank": (1.0, math.inf)}
SAFE_WORD = re.compile(r"[A-Za-z0-9 ._+-]{1,40}")


@dataclass
class Submission:
    """One run's numbers for one model repo and benchmark dataset (values as res.json holds them: fractions),
    with the provenance recorded beside them and, for the details repo, the per-query values."""

    path: str
    model_repo: str
    model_spec: str
    dataset_repo: str
    dataset_revision: str | None
    package: str
    values: list[tuple[HubTask, float]]
    provenance: dict
    means: dict = field(default_factory=dict)  # every number of the results file (fractions), as it holds them
    left_out: list[str] = field(default_factory=list)  # metric/direction pairs that are no task of the benchmark
    model_from_spec: bool = False
    per_query: dict | None = None  # {metric: {direction: {"query_ids", "values", "aggregate"}}}; None: no details
    notes: list[str] = field(default_factory=list)  # what the user is told before anything is sent
    other_model: bool = False  # published on another repo than the one the results' model loads (other_model=True)
    evidence: Evidence | None = None  # what the run scored (evaluate --evidence), checked: the details' evidence/

    @property
    def version(self) -> str:
        return self.package.removeprefix(DISTRIBUTION).strip()

    @property
    def date(self) -> str | None:
        date = self.provenance.get("date")
        return date if isinstance(date, str) else None

    @property
    def local_build(self) -> dict[str, str] | None:
        """The sha256 of the local build's Parquet files the run read (None: scored on a Hub repo, or unknown)."""
        files = self.provenance.get("data_files")
        return files if isinstance(files, dict) and files and self.dataset_revision is None else None

    @property
    def producer(self) -> str:
        return "MTEB" if self.provenance.get("producer") == "mteb" else DISTRIBUTION

    @property
    def public_spec(self) -> str:
        return public_spec(self.model_spec)

    @property
    def setup(self) -> str:
        """The entries' ``notes``: precision, similarity, model revision, a pair scorer's protocol, producer; short,
        never a local path."""
        prov, parts = self.provenance, []
        for key, suffix in (("precision", ""), ("similarity", " similarity")):
            if isinstance(prov.get(key), str) and SAFE_WORD.fullmatch(prov[key]):
                parts.append(prov[key] + suffix)
        identity = prov.get("identity") if isinstance(prov.get("identity"), dict) else {}
        revision = identity.get("revision")
        if isinstance(revision, str) and re.fullmatch(r"[0-9a-f]{7,64}", revision):
            parts.append(f"model revision {revision[:12]}")
        parts += protocol_words(prov.get("protocol"))
        if self.producer == "MTEB":
            parts.append("ranked by MTEB (trec_eval ties)")
        if self.other_model:
            parts.append(f"results of {self.public_spec}, published on {self.model_repo}")
        return ", ".join(parts)

    def tasks(self) -> list[str]:
        return [task.id for task, _ in self.values]


def protocol_words(protocol: object) -> list[str]:
    """A pair scorer's protocol as the notes say it (``rerank top 128 by itm+itc``, ``every pair by itm``, COCO
    1K reranked within each fold); [] for a dual encoder's run (no protocol) or a value not of ours."""
    if not isinstance(protocol, dict):
        return []
    name, rule, k = protocol.get("name"), protocol.get("score_rule"), protocol.get("rerank_k")
    if not (isinstance(rule, str) and SAFE_WORD.fullmatch(rule)):
        return []
    if name == "exhaustive":
        return [f"every pair by {rule}"]
    if name != "rerank" or not isinstance(k, int) or isinstance(k, bool):
        return []
    words = [f"rerank top {k} by {rule}"]
    if protocol.get("coco_1k") == "within":
        words.append("COCO 1K reranked within each fold")
    return words


def public_spec(spec: str) -> str:
    """A model spec as it may be published: a Hub model's as it is, a local folder's without its path."""
    if suggested_repo(spec) is not None:
        return spec
    prefix = spec.split(":", 1)[0] + ":" if ":" in spec else ""
    return f"{prefix}(a local model folder)"


def suggested_repo(spec: str) -> str | None:
    """The Hub model repo a spec loads (``hf:ORG/MODEL``, ``st:ORG/MODEL``, ``open_clip:hf-hub:ORG/MODEL``,
    MTEB's ``mteb:ORG/MODEL``)."""
    for prefix in HUB_SPECS:
        rest = spec.removeprefix(prefix)
        if spec.startswith(prefix) and is_repo_id(rest):
            return rest
    return None


def results_files(path: str | Path, what: str = "results") -> list[Path]:
    """The results files at ``path``: the file, or each ``*.json`` of a folder ``evaluate --model A --model B -o
    DIR`` wrote (one per model, named ``<k>-<spec>.json``)."""
    path = Path(path)
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.glob("*.json") if p.is_file())
    if not files:
        raise EvaluationError(f"{path} is a folder without {what} files (*.json); {EVALUATE}")
    return files


def read_submission(
    path: str | Path,
    model_repo: str | None = None,
    dataset_repo: str | None = None,
    per_query: str | Path | None = None,
    other_model: bool = False,
    evidence: str | Path | None = None,
) -> Submission:
    """Check a results file (and its per-query file and evidence folder: ``evidence``, default the one the results
    record) and say what it publishes; every refusal is one line naming the file or keyword."""
    path = str(path)
    raw = require_object(read_json(path, RESULTS), path, RESULTS)
    provenance = raw.get("provenance")
    if not isinstance(provenance, dict):
        raise EvaluationError(
            f"{path} holds no provenance (results scored from --scores, --rankings or embeddings, or written by "
            f"hand, name no model): push-results publishes a model's results; {EVALUATE}"
        )
    spec = provenance.get("model")
    if not isinstance(spec, str) or not spec.strip():
        raise EvaluationError(
            f"{path}: its provenance names no model (results scored from --scores, --rankings or embeddings name "
            f"none): push-results publishes a model's results; {EVALUATE}"
        )
    package = provenance.get("package")
    if not isinstance(package, str) or not package.startswith(DISTRIBUTION):
        raise EvaluationError(f"{path}: its provenance names no {DISTRIBUTION} version ('package'); {EVALUATE}")
    if provenance.get("partial") is True:
        raise EvaluationError(
            f"{path} was scored with --partial (only the queries its input ranks count): a published number is "
            "one of every query of its benchmark; evaluate without --partial, then push those results"
        )
    means = {k: v for k, v in raw.items() if k != "provenance"}
    check_sealed(path, provenance, means)
    digests = provenance["digests"]
    dataset, revision = _dataset(path, provenance, dataset_repo)
    repo, from_spec = _model_repo(path, spec, model_repo, other_model)
    values, left_out = _values(path, means)
    sub = Submission(path, repo, spec, dataset, revision, package, values, provenance, means, left_out, from_spec)
    own = suggested_repo(spec)
    sub.other_model = own is not None and own.casefold() != repo.casefold()
    if per_query is not None:
        sub.per_query = read_per_query(str(per_query), sub.path, sub.values, digests.get("per_query"))
        sub.evidence = read_run_evidence(sub.path, sub.provenance, sub.notes, evidence, digests.get("evidence"))
    elif evidence is not None:
        raise EvaluationError("evidence= goes into the details repo beside the per-query values: give per_query= too")
    if revision is None and sub.local_build is None:
        sub.notes.append(
            f"no dataset.revision: {path} was scored on a local build whose files its provenance does not record "
            "(results written before eccv-caption-hf 0.2.0)"
        )
    if sub.date is None:
        sub.notes.append(f"no date: {path} records no run time (the Hub shows the commit's)")
    return sub


def check_sealed(path: str, provenance: dict, means: dict) -> None:
    """The results file as the run wrote it: its numbers and every field of its provenance (the model, its
    revision, the data revision, the protocol, the date) match the digests the run sealed them with
    (:func:`~eccv_metric.core.provenance.broken_seal`); a file without that seal is refused too (see the module
    docstring of :mod:`eccv_metric.core.provenance`)."""
    broken = broken_seal(provenance, means)
    if broken == "unsealed":
        raise EvaluationError(
            f"{path} records no digest of its provenance (a file of an earlier eccv-caption-hf, or its digests "
            "removed): nothing shows that the model, date and data revision it names are the run's; run the same "
            "evaluate command again (cached embeddings and pair scores make it a re-score) and publish the file it "
            "writes"
        )
    if broken is not None:
        what = "numbers" if broken == "numbers" else "provenance (the model, its revision, the data, the date...)"
        raise EvaluationError(
            f"{path} was changed after the run: its {what} no longer match the digest the run recorded; publish "
            "the file evaluate wrote (or run evaluate again)"
        )


def _dataset(path: str, provenance: dict, given: str | None) -> tuple[str, str | None]:
    """The benchmark dataset: the Hub repo the numbers were scored on (with its revision), or ``given`` for a
    local build or MTEB's predictions; a Hub repo other than the one scored is refused."""
    data, revision = provenance.get("data"), provenance.get("data_revision")
    on_hub = isinstance(revision, str) and is_repo_id(data)  # the model path records a revision for Hub data only
    if given is not None:
        check_repo_id(given, "dataset_repo", "you/eccv-caption")
        if on_hub and given != data:
            raise EvaluationError(
                f"{path} was scored on the Hub dataset {data}, not dataset_repo= {given}: drop dataset_repo= "
                f"(or evaluate on {given})"
            )
        return given, revision if on_hub else None
    if not on_hub:
        where = "MTEB's predictions" if provenance.get("producer") == "mteb" else f"the local folder {data!r}"
        raise EvaluationError(
            f"{path} was scored on {where}: give dataset_repo=, the Hub dataset repo that build was pushed to "
            "(its eval.yaml registers the tasks)"
        )
    return data, revision  # type: ignore[return-value]


def _model_repo(path: str, spec: str, given: str | None, other_model: bool) -> tuple[str, bool]:
    """(the model repo, whether it came from the spec); ``given`` where the results' model loads another repo is
    refused unless ``other_model``."""
    if given is not None:
        check_repo_id(given, "model_repo", "you/your-model")
        own = suggested_repo(spec)
        if own is not None and own.casefold() != given.casefold() and not other_model:
            raise EvaluationError(
                f"{path} holds the results of {spec} (the model repo {own}), not of model_repo= {given}: publish "
                f"them to {own} (drop model_repo=), or give other_model=True to publish them on {given}, the "
                "entries' notes naming the model that was run"
            )
        return given, False
    suggested = suggested_repo(spec)
    if suggested is None:
        raise EvaluationError(
            f"the results' model {public_spec(spec)!r} names no Hub model repo: give model_repo= ORG/MODEL, the "
            "repo the results are published to"
        )
    return suggested, True


def _values(path: str, means: dict) -> tuple[list[tuple[HubTask, float]], list[str]]:
    """(task, value) of every metric and direction that is a task; the others, named; bad values refused."""
    values, left_out = [], []
    for metric, by_dir in means.items():
        try:
            bench, kind = metric_info(metric)
        except EvaluationError:
            raise EvaluationError(
                f"{path}: {metric!r} is not a metric the benchmark registers (`eccv-caption benchmarks` lists "
                f"them); {EVALUATE}"
            ) from None
        by_dir = require_object(by_dir, path, f"{metric} to map directions to values")
        for direction, value in by_dir.items():
            if direction not in bench.directions:
                raise EvaluationError(
                    f"{path}: {metric} has no direction {direction!r} (it has {', '.join(bench.directions)})"
                )
            low, high = RANGES[kind.scale]
            if type(value) not in (int, float) or not low <= value <= high:
                raise EvaluationError(
                    f"{path}: {metric}/{direction} = {value!r:.30} is not a {kind.scale} in [{low:g}, {high:g}] "
                    "(results files hold fractions, as evaluate -o writes them)"
                )
            task = task_of(metric, direction)
            if task is None:
                left_out.append(f"{metric}/{direction}")
            else:
                values.append((task, float(value)))
    values.sort(key=lambda item: TASKS.index(item[0]))  # the order of eval.yaml
    if not values:
        raise EvaluationError(
            f"{path} holds none of the benchmark's tasks (headline metrics such as eccv_map_at_r, eccv_r1, "
            "coco_5k_r1, cxc_r1 in a direction): evaluate with --benchmarks eccv_caption or --metrics eccv_map_at_r "
            "eccv_rprecision eccv_r1"
        )
    return values, left_out
