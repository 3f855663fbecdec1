"""A published number recomputed from its evidence: :func:`verify`, one row per number.

    import eccv_metric

    table = eccv_metric.verify("results.json", "evidence/")       # a results file and the run's evidence folder
    for row in table.checks:
        print(row.line())                                         # equal, differs (by how much), not recomputable
    table.equal                                                   # every number recomputed equal

The evidence (:mod:`eccv_metric.evidence.layout`) holds what the engine scored; with the benchmark's ground truth
(``resources``) the engine scores it again, each engine call as the run made it (the same benchmarks, metric names,
bootstrap samples and seed), and each published number is compared with its recomputation:

- **equal**: the same number (a results file's fraction, which ``evaluate`` writes with its every digit: the same
  float; an entry's percent, ``percent=True``: to the published precision, within half a unit of its last written
  decimal) and, where per-query values were published, every one of them, query for query;
- **differs**: by how much, and how many of the published per-query values differ;
- **not recomputable**: why (a file missing, of another shape, dtype or item order, changed since the run, a
  ground truth the ids are not of, no evidence for that number, evidence of another model's run than the results
  name or of a run that recorded no model): nothing is recomputed from evidence in doubt.

The Hub failing while the ground truth is read (:class:`~eccv_metric.core.errors.HubReadError`) is raised, never a
row: it says nothing of the evidence.

No row is ever marked verified but by its recomputation. The Hub's side (the evidence at an entry's pinned details
commit, the benchmark at its pinned revision) is :mod:`eccv_metric.hub.verify_hub`; the CLI translates
(``eccv-caption verify``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from decimal import Decimal
from decimal import localcontext
from pathlib import Path

import numpy as np

from eccv_metric.api.many import evaluate_benchmarks
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.benchmarks.resources import Resources
from eccv_metric.core.errors import ChanceLevelWarning
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import HubReadError
from eccv_metric.core.jsonio import read_json
from eccv_metric.core.jsonio import require_object
from eccv_metric.core.provenance import seal_breaks
from eccv_metric.evidence.load import Evidence
from eccv_metric.evidence.load import EvidenceInput
from eccv_metric.evidence.load import load_evidence
from eccv_metric.evidence.load import model_problem
from eccv_metric.evidence.truth import run_resources
from eccv_metric.measures.results import QueryScores
from eccv_metric.measures.results import Results

EQUAL = "equal"
DIFFERS = "differs"
NOT_RECOMPUTABLE = "not recomputable"
RESULTS = "the results JSON of `eccv-caption evaluate ... -o results.json`"


@dataclass(frozen=True)
class Check:
    """One published number and what its recomputation found (values as results files hold them: fractions).

    ``status``: :data:`EQUAL`, :data:`DIFFERS` or :data:`NOT_RECOMPUTABLE` (``why``); ``queries``: the per-query
    values compared, ``differing``: how many of them differ (None: no per-query values were published)."""

    metric: str
    direction: str
    status: str
    published: float
    recomputed: float | None = None
    why: str = ""
    queries: int = 0
    differing: int | None = None
    label: str = ""  # how the number is named (a Hub task id); default metric/direction
    percent: bool = False  # values in percent (fractions shifted two places, as the Hub's entries publish them)

    @property
    def name(self) -> str:
        return self.label or f"{self.metric}/{self.direction}"

    def against(self, published: float) -> Check:
        """This recomputation compared with another published value of the same number (a second entry of it,
        beside the same per-query values)."""
        if self.status == NOT_RECOMPUTABLE or self.recomputed is None:
            return replace(self, published=published)
        equal = same(published, self.recomputed, not self.percent) and not self.differing
        return replace(self, published=published, status=EQUAL if equal else DIFFERS)

    def line(self) -> str:
        """``<name>  <published>  equal`` / ``differs: ...`` / ``not recomputable: ...``."""
        head = f"{self.name:<24} {self.published!r:>20}  "
        if self.status == EQUAL:
            per = f" ({self.queries:,} per-query values equal)" if self.differing is not None else ""
            return head + EQUAL + per
        return head + f"{self.status}: {self.reason}"

    @property
    def reason(self) -> str:
        """What follows the status in :meth:`line`: how the number differs, or why it is not recomputable ("" when
        it is equal)."""
        if self.status == EQUAL:
            return ""
        if self.status != DIFFERS:
            return self.why
        parts = []
        if self.why:
            parts.append(self.why)
        elif self.recomputed is not None and not same(self.published, self.recomputed, not self.percent):
            parts.append(f"recomputed {self.recomputed!r} ({self.recomputed - self.published:+.6g})")
        else:
            parts.append("the number is recomputed equal")
        if self.differing:
            parts.append(f"{self.differing:,} of {self.queries:,} per-query values differ")
        elif self.differing == 0:
            parts.append(f"its {self.queries:,} per-query values are equal: the number is not their aggregate")
        return "; ".join(parts)


@dataclass
class Verification:
    """The table :func:`verify` returns: one :class:`Check` per published number, the notes, and (``reencode``)
    the re-encoding checks (:mod:`eccv_metric.evidence.reencode`)."""

    checks: list[Check]
    notes: list[str] = field(default_factory=list)
    reencoded: list = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """Every number recomputed equal (and every re-encoding within its tolerance)."""
        ok = bool(self.checks) and all(c.status == EQUAL for c in self.checks)
        return ok and all(r.ok for r in self.reencoded)

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in (EQUAL, DIFFERS, NOT_RECOMPUTABLE)}

    def summary(self) -> str:
        counts = self.counts()
        said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "nothing to verify"
        return f"{len(self.checks)} numbers: {said}"


def published_unit(metric: str, value: float, percent: bool) -> float:
    """A recomputed value (a fraction, as results files hold it) as it is published: with ``percent``, a fraction
    metric's value shifted two decimal places (exactly as push-results shifts it: the same float for the same
    value), every other value as it is."""
    if percent and scale(metric) == "fraction":
        return float(Decimal(repr(float(value))).scaleb(2))
    return float(value)


def scale(metric: str) -> str:
    try:
        return metric_info(metric)[1].scale
    except EvaluationError:
        return "fraction"


def same(published: float, recomputed: float, exact: bool = False) -> bool:
    """Whether ``recomputed`` is the number ``published``. ``exact``: the same float (a results file's fraction,
    written by ``evaluate`` with every digit: a value rounded there by hand is an edit). Else equal to the published
    precision (an entry's percent): within half a unit of the last decimal ``published`` is written with (its
    shortest repr), bounds included, so that either way of rounding a half gives the published value; exact decimal
    arithmetic on the two reprs, whatever their exponents (a value such as 1e-30 is compared, never an error)."""
    if not (math.isfinite(published) and math.isfinite(recomputed)):
        return False
    if exact:
        return float(published) == float(recomputed)
    shown, got = Decimal(repr(float(published))), Decimal(repr(float(recomputed)))
    with localcontext() as ctx:
        ctx.prec = 1000  # every digit of two doubles' reprs: their difference is exact
        half = Decimal(5).scaleb(shown.as_tuple().exponent - 1)  # type: ignore[operator]
        return abs(got - shown) <= half


def read_results(results: object) -> tuple[dict, dict]:
    """(numbers, provenance) of a results file or mapping ``{metric: {direction: value}}``."""
    raw = results
    if isinstance(results, (str, Path)):
        raw = require_object(read_json(str(results), RESULTS), str(results), RESULTS)
    if not isinstance(raw, Mapping):
        raise EvaluationError(f"results must be {RESULTS} or a mapping {{metric: {{direction: value}}}}")
    provenance = raw.get("provenance") if isinstance(raw.get("provenance"), dict) else {}
    numbers = {m: dict(v) for m, v in raw.items() if m != "provenance" and isinstance(v, Mapping)}
    return numbers, provenance  # type: ignore[return-value]


def verify(
    results: object,
    evidence: str | Path | Evidence,
    *,
    per_query: object = None,
    resources: Resources | None = None,
    device: str | None = None,
    digest: str | None = None,
    labels: Mapping[tuple[str, str], str] | None = None,
    percent: bool = False,
    whole: bool = False,
    model: Mapping | None = None,
) -> Verification:
    """Recompute every number of ``results`` from ``evidence`` (see the module docstring).

    ``results``: a results file (its provenance's ``digests.evidence`` is checked against the evidence) or
    ``{metric: {direction: value}}`` (fractions); ``evidence``: the folder ``evaluate --evidence`` wrote, or its
    :class:`~eccv_metric.evidence.load.Evidence`; ``per_query``: the run's per-query values (``evaluate
    --per-query``'s file or mapping), compared query for query; ``resources``: the ground truth (default: the
    package's, with the run's PM options); ``device``: where embeddings are ranked (None: numpy, the reference);
    ``digest``: the evidence digest the run recorded (default: the results file's); ``labels``: a name per
    (metric, direction) for the rows (the Hub's task ids); ``percent``: the values of ``results`` are in percent
    for fraction metrics (as the Hub's entries publish them), compared with the recomputed values shifted alike;
    ``whole``: each number claims every query of its benchmark (a published entry): a partial run's evidence is not
    recomputable; ``model``: the provenance naming the run's model (default: the results file's; a published
    ``results.json``'s for an entry), which must be the model the evidence records
    (:func:`~eccv_metric.evidence.load.model_problem`)."""
    numbers, provenance = read_results(results)
    per_query_values = read_per_query(per_query)
    ev = evidence if isinstance(evidence, Evidence) else load_evidence(evidence)
    recorded = digest or (provenance.get("digests") or {}).get("evidence")
    notes: list[str] = []
    doubt = None
    if recorded is not None and recorded != ev.digest:
        doubt = "the evidence is not the run's: its evidence.json is not the one the results' digest records"
    breaks = seal_breaks(provenance, numbers) if provenance else []
    if "provenance" in breaks:  # the run named (model, data, date...) is not the one its digest sealed
        doubt = doubt or ("the results' provenance was edited after the run (its digest no longer matches): the run "
                          "it names is not the one that was scored")  # fmt: skip
    if "numbers" in breaks:
        notes.append("the results' numbers were edited after the run (their digest no longer matches)")
    if "unsealed" in breaks:
        notes.append("the results file records no seal of its provenance (written before the seal, or removed)")
    named = model if model is not None else (provenance or None)
    if named is not None:
        doubt = doubt or model_problem(ev, named)
    if whole and ev.scoring.get("partial"):
        doubt = doubt or "the run scored only the queries its lists give (partial): not every query of the benchmark"
    given = ev.resources.get("given") or []
    if resources is None:
        if given:
            doubt = doubt or f"the run read {', '.join(given)} from sources of its own: give resources= the same"
        resources = run_resources(ev)
    ranking = ev.run.get("ranking")
    if isinstance(ranking, str) and ranking.startswith("torch") and device is None:
        notes.append(f"the run ranked with {ranking}; the numbers are recomputed by numpy on the CPU")
    published = [(m, d, float(v)) for m, by_dir in numbers.items() for d, v in by_dir.items()]
    checks: dict[tuple[str, str], Check] = {}
    by_input: dict[int, list[tuple[str, str, float]]] = {}
    for metric, direction, value in published:
        label = (labels or {}).get((metric, direction), "")
        part = ev.input_of(metric)
        if doubt is not None or part is None:
            why = doubt or f"the evidence holds no input that scored {metric}"
            checks[(metric, direction)] = Check(
                metric, direction, NOT_RECOMPUTABLE, value, why=why, label=label, percent=percent
            )
        else:
            by_input.setdefault(ev.inputs.index(part), []).append((metric, direction, value))
    for index, wanted in by_input.items():
        part = ev.inputs[index]
        got, why = recompute(part, resources, ev.scoring, device)
        for metric, direction, value in wanted:
            label = (labels or {}).get((metric, direction), "")
            scores = got[metric].get(direction) if got is not None and metric in got else None
            if scores is None:
                why_not = why or f"the evidence's {part.name} scored no {metric} {direction}"
                checks[(metric, direction)] = Check(metric, direction, NOT_RECOMPUTABLE, value, why=why_not,
                                                    label=label, percent=percent)  # fmt: skip
                continue
            entry = per_query_values.get(metric, {}).get(direction)
            checks[(metric, direction)] = compare(metric, direction, value, scores, entry, label, percent)
    ordered = [checks[(m, d)] for m, d, _ in published]
    return Verification(ordered, notes)


def check_values(
    results: object,
    per_query: object,
    labels: Mapping[tuple[str, str], str] | None = None,
    percent: bool = False,
) -> Verification:
    """Every number of ``results`` against its per-query values alone, where a run kept no evidence: nothing is
    scored again, so no number is ``equal``; one whose values give another number (their mean, MedR's median)
    ``differs`` (by how much), the others are ``not recomputable`` (per-query values only: the number is their
    aggregate, and the values are the run's own claim). Arguments as :func:`verify`'s."""
    numbers, _ = read_results(results)
    values = read_per_query(per_query)
    checks = []
    for metric, by_dir in numbers.items():
        for direction, value in by_dir.items():
            label = (labels or {}).get((metric, direction), "")
            entry = values.get(metric, {}).get(direction)
            if entry is None:
                why = "no evidence, and no per-query values of this number"
                checks.append(Check(metric, direction, NOT_RECOMPUTABLE, float(value), why=why, label=label,
                                    percent=percent))  # fmt: skip
                continue
            ids = np.asarray(entry.get("query_ids", []), np.int64)
            scores = QueryScores(metric, direction, ids, np.asarray(entry.get("values", []), np.float64),
                                 entry.get("aggregate", "mean"))  # fmt: skip
            got = published_unit(metric, scores.value, percent) if len(scores.values) else math.nan
            queries = len(scores.values)
            if same(float(value), got, not percent):
                why = f"per-query values only (no evidence): the number is the {scores.aggregate} of its {queries:,}"
                checks.append(Check(metric, direction, NOT_RECOMPUTABLE, float(value), got, why=why, queries=queries,
                                    label=label, percent=percent))  # fmt: skip
            else:
                why = f"its {queries:,} per-query values give {got!r} ({got - float(value):+.6g}); no evidence"
                checks.append(Check(metric, direction, DIFFERS, float(value), got, why=why, queries=queries,
                                    label=label, percent=percent))  # fmt: skip
    return Verification(checks)


def recompute(
    part: EvidenceInput, resources: Resources, scoring: Mapping, device: str | None
) -> tuple[Results | None, str | None]:
    """(the numbers of one engine call scored again, None) or (None, why it cannot be)."""
    try:
        source = part.source(device)
        problem = part.order_problem(resources)
        if problem is not None:
            return None, problem
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ChanceLevelWarning)
            out, _ = evaluate_benchmarks(
                source,  # type: ignore[arg-type]
                part.benchmarks,
                resources=resources,
                n_resamples=int(scoring.get("n_resamples", 1000)),
                seed=int(scoring.get("seed", 0)),
                partial=bool(scoring.get("partial", False)),
            )
    except HubReadError:
        raise  # the Hub out of reach: no verdict on the evidence
    except EvaluationError as exc:
        return None, str(exc).splitlines()[0]
    return out, None


def compare(
    metric: str, direction: str, value: float, scores: object, entry: Mapping | None, label: str, percent: bool
) -> Check:
    """One published number (and its per-query values, when given) against its recomputation."""
    recomputed = published_unit(metric, scores.value, percent)  # type: ignore[attr-defined]
    differing, queries = None, 0
    if entry is not None:
        ids = np.asarray(entry.get("query_ids", []), dtype=np.int64)
        values = np.asarray(entry.get("values", []), dtype=np.float64)
        differing, queries = count_differing(ids, values, scores.query_ids, scores.values)  # type: ignore[attr-defined]
    equal = same(value, recomputed, not percent) and not differing
    status = EQUAL if equal else DIFFERS
    return Check(
        metric, direction, status, value, recomputed, queries=queries, differing=differing, label=label, percent=percent
    )


def count_differing(ids: np.ndarray, values: np.ndarray, got_ids: np.ndarray, got: np.ndarray) -> tuple[int, int]:
    """(how many queries' values differ, how many were published): a query published and not recomputed (or the
    reverse) counts as one that differs; values compared exactly."""
    got_ids, got = np.asarray(got_ids, np.int64), np.asarray(got, np.float64)
    if len(ids) != len(values):
        return max(len(ids), len(got_ids)), len(ids)
    order, got_order = np.argsort(ids, kind="stable"), np.argsort(got_ids, kind="stable")
    a_ids, a_values = ids[order], values[order]
    b_ids, b_values = got_ids[got_order], got[got_order]
    common, at_a, at_b = np.intersect1d(a_ids, b_ids, assume_unique=False, return_indices=True)
    unmatched = (len(a_ids) - len(common)) + (len(b_ids) - len(common))
    differ = int((a_values[at_a] != b_values[at_b]).sum())
    return differ + unmatched, len(ids)


def read_per_query(per_query: object) -> dict:
    """The per-query values ``{metric: {direction: {"query_ids", "values"}}}`` of a file or mapping ({}: none)."""
    if per_query is None:
        return {}
    if isinstance(per_query, (str, Path)):
        what = "the per-query JSON of `evaluate --per-query`"
        per_query = require_object(read_json(str(per_query), what), str(per_query), what)
    if not isinstance(per_query, Mapping):
        raise EvaluationError("per_query must be the per-query JSON of `evaluate --per-query` or its mapping")
    return {m: dict(v) for m, v in per_query.items() if isinstance(v, Mapping)}
