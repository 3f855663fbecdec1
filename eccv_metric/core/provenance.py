"""What every results file of ``evaluate -o`` records beside its numbers: when it ran, which package, and digests.

``date``: the run's time (ISO-8601, UTC, seconds), as the Hub's eval results take it (``date: "2026-01-15T10:30:00Z"``).
``digests``: sha256 of the numbers as written (``results``), of the per-query values (``per_query``, when
``--per-query`` wrote them), of the evidence's manifest (``evidence``, when ``--evidence`` kept what the run scored)
and of every other field of the provenance (``provenance``: the model and its revision, the data and its revision, a
pair scorer's protocol, the date, the package...), each over the canonical JSON text of what the file holds (keys
sorted, no spaces): a file edited after the run (a number, or the model it names), or the per-query file or evidence
of another run, no longer matches (``push-results`` and ``verify`` check them; :func:`broken_seal`). A digest catches
an edit, not a forger, who can recompute it: what vouches for a number is its evidence scored again. A file whose
digests hold no ``provenance`` was written before the seal (an earlier eccv-caption-hf): it is not trusted as sealed
(``push-results`` asks for the run again; cached embeddings make it a re-score).
``data_files`` (a model run on a local build): the sha256 of each of its Parquet files, so the build can be told
apart from, or matched with, the Hub repo it was pushed to.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from collections.abc import Mapping
from datetime import UTC
from datetime import datetime
from pathlib import Path

from eccv_metric.core.about import DISTRIBUTION
from eccv_metric.core.about import __version__

PACKAGE = f"{DISTRIBUTION} {__version__}"
# an absolute local path inside a text: at its start or after a space, quote, '=', '(' or ':' (hf:/tmp/x)
LOCAL_PATH = re.compile(r"(?:(?<=^)|(?<=[\s'\"=(:]))(?:[A-Za-z]:[\\/]|~?/)[^\s'\",;)]*")


def utc_now() -> str:
    """The time now as ISO-8601 in UTC to the second: ``2026-01-15T10:30:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_digest(payload: object) -> str:
    """sha256 of ``payload``'s canonical JSON text (what a file holding it reads back to, digested alike)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def provenance_digest(provenance: Mapping[str, object]) -> str:
    """The seal of a provenance: the digest of every field but ``digests``, as a file holding it reads back (a key
    that is no string is one once written)."""
    fields = {key: value for key, value in provenance.items() if key != "digests"}
    return json_digest(json.loads(json.dumps(fields)))


def with_digests(provenance: dict, means: dict, per_query: dict | None, evidence: str | None = None) -> dict:
    """``provenance`` with the ``digests`` of the numbers and, when written, the per-query values and the evidence
    (``evidence``: the digest of its manifest, :mod:`eccv_metric.evidence.layout`), and of itself."""
    digests = {"results": json_digest(means)}
    if per_query is not None:
        digests["per_query"] = json_digest(per_query)
    if evidence is not None:
        digests["evidence"] = evidence
    digests["provenance"] = provenance_digest(provenance)
    return {**provenance, "digests": digests}


def broken_seal(provenance: Mapping[str, object], means: Mapping[str, object]) -> str | None:
    """Why a results file's digests do not vouch for it, None when they do: ``"unsealed"`` (no digest of its
    provenance: written before the seal, or its digests removed), ``"numbers"`` or ``"provenance"`` (changed after
    the run)."""
    digests = provenance.get("digests")
    if not isinstance(digests, dict) or not isinstance(digests.get("provenance"), str):
        return "unsealed"
    if digests.get("results") != json_digest(means):
        return "numbers"
    if digests["provenance"] != provenance_digest(provenance):
        return "provenance"
    return None


def seal_breaks(provenance: Mapping[str, object], means: Mapping[str, object]) -> list[str]:
    """Every part of a results file its digests no longer vouch for: ``["unsealed"]``, or those of ``"numbers"``
    and ``"provenance"`` changed after the run ([]: none); :func:`broken_seal` says the first."""
    first = broken_seal(provenance, means)
    if first in (None, "unsealed"):
        return [first] if first else []
    digests: dict = provenance["digests"]  # type: ignore[assignment]
    return [first] + (["provenance"] if first == "numbers" and digests["provenance"] != provenance_digest(provenance)
                      else [])  # fmt: skip


def scrub(value: object) -> object:
    """``value`` (a provenance, a model spec) with every absolute local path replaced by ``(local path)``: what may
    be published (``hf:/home/me/clip`` is ``hf:(local path)``)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        return LOCAL_PATH.sub("(local path)", value)
    return value


def run_stamp() -> dict:
    """The run's ``date`` and ``package`` (the start of every provenance)."""
    return {"date": utc_now(), "package": PACKAGE}


def build_digests(
    root: Path | None, known: Mapping[str, object], current: Callable[[str], object]
) -> dict[str, str] | None:
    """``{data/<config>/<file>.parquet: sha256}`` of the local build's Parquet files the run digested (``known``:
    real path -> [stamp, sha256], kept only where ``current(path)`` is still that stamp); None for a Hub repo
    (its commit names it) or when none was read. What ``push-results`` compares with the Hub repo's files to
    publish that repo's revision. Nothing is hashed here: the run digested what it read."""
    if root is None:
        return None
    base = os.path.realpath(root)
    out = {}
    for name, seen in known.items():
        inside = name.startswith(os.path.join(base, "data") + os.sep) and name.endswith(".parquet")
        if inside and isinstance(seen, list) and len(seen) == 2 and os.path.exists(name) and current(name) == seen[0]:
            out[os.path.relpath(name, base).replace(os.sep, "/")] = str(seen[1])
    return dict(sorted(out.items())) or None
