"""What verifying a details commit's evidence found, kept so that a leaderboard scores each published run once.

A details commit is immutable (its id is the hash of its files), and so is a benchmark's revision: the engine's
recomputation of a commit's evidence against the ground truth at a revision is the same every time, for one version
of this package. It is kept as the table's rows (each number's recomputed value, how many of its per-query values
differ, or why it is not recomputable), keyed by everything that decides them: the details repo and commit, the
benchmark and its revision, the package's version, where the embeddings were ranked (numpy, or a device). A
published entry is compared with its row afresh each time (:meth:`~eccv_metric.evidence.check.Check.against`), so
an entry changed later is never taken as verified. The file is named by the sha256 of its key and holds the key;
one that does not hold it, or cannot be read, is not used (and is written anew). Folder: ``$ECCV_CAPTION_CACHE`` or
``$HF_HOME`` (default ``~/.cache/huggingface``), then ``eccv_caption_verified``; one that cannot be written just
means no cache. ``verify --from-hub`` never reads it: it recomputes. Only a recomputation is kept: the Hub failing
while the evidence or the ground truth is read (:class:`~eccv_metric.core.errors.HubReadError`) is no outcome, nor
is any other error, so the next run tries again.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from pathlib import Path

from eccv_metric.core.download import cache_home
from eccv_metric.core.files import write_json_atomic
from eccv_metric.core.provenance import PACKAGE
from eccv_metric.core.provenance import json_digest
from eccv_metric.evidence.check import DIFFERS
from eccv_metric.evidence.check import EQUAL
from eccv_metric.evidence.check import NOT_RECOMPUTABLE
from eccv_metric.evidence.check import Check

# v2: partial runs and edited provenance no longer verified; v3: details sealed, evidence naming its model, the
# digests of its score arrays kept
FORMAT = "eccv-caption verified evidence v3"
FOLDER = "eccv_caption_verified"


@dataclass
class Outcome:
    """One details commit's evidence scored again: the rows (``checks``: their published values those of the
    entries verified first), the evidence's digest, the table's notes, the model the run names and the digests of
    its score arrays (``arrays``: file -> digest, :meth:`~eccv_metric.evidence.load.Evidence.score_digests`; {}
    where nothing was scored)."""

    checks: list[Check]
    digest: str
    notes: list[str]
    spec: str | None = None
    arrays: dict[str, str] = field(default_factory=dict)


def outcome_key(repo: str, sha: str, dataset: str, revision: str | None, device: str | None) -> dict:
    """Everything that decides a recomputation (see the module docstring)."""
    return {"format": FORMAT, "package": PACKAGE, "details": repo, "commit": sha, "dataset": dataset,
            "revision": revision, "ranked_by": device or "numpy"}  # fmt: skip


def _path(key: dict) -> Path:
    return cache_home() / FOLDER / f"{json_digest(key)}.json"


def load_outcome(key: dict) -> Outcome | None:
    """The outcome kept for ``key``; None when there is none, or the file is not one for this key."""
    try:
        held = json.loads(_path(key).read_text(encoding="utf-8"))
        if held.get("key") != key:
            return None
        checks = [_check(row) for row in held["checks"]]
        digest, notes, spec, arrays = held["digest"], held["notes"], held.get("spec"), held["arrays"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if None in checks or not isinstance(digest, str) or not all(isinstance(n, str) for n in notes):
        return None
    if not isinstance(arrays, dict) or not all(isinstance(x, str) for pair in arrays.items() for x in pair):
        return None
    return Outcome(checks, digest, notes, spec if isinstance(spec, str) else None, arrays)  # type: ignore[arg-type]


def store_outcome(key: dict, outcome: Outcome) -> None:
    """Keep ``outcome`` for ``key`` (atomically); a folder that cannot be written keeps nothing."""
    payload = {"key": key, "checks": [asdict(c) for c in outcome.checks], "digest": outcome.digest,
               "notes": outcome.notes, "spec": outcome.spec, "arrays": outcome.arrays}  # fmt: skip
    try:
        _path(key).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(_path(key), payload)
    except OSError:
        pass


TYPES = {"metric": str, "direction": str, "status": str, "published": float, "recomputed": (float, type(None)),
         "why": str, "queries": int, "differing": (int, type(None)), "label": str, "percent": bool}  # fmt: skip


def _check(row: object) -> Check | None:
    """A kept row read back, every field of its type (a number finite); None otherwise."""
    if not isinstance(row, dict) or set(row) != {f.name for f in fields(Check)}:
        return None
    values = {name: float(v) if isinstance(v, int) and TYPES[name] is float else v for name, v in row.items()}
    for name, value in values.items():
        wanted = TYPES[name]
        if not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool):
            return None
        if isinstance(value, float) and not math.isfinite(value):
            return None
    if values["status"] not in (EQUAL, DIFFERS, NOT_RECOMPUTABLE):
        return None
    return Check(**values)  # type: ignore[arg-type]
