"""Whether the local build that scored a run is the Hub dataset repo it was pushed to: its ``dataset.revision``.

A model run on a local build records the sha256 of the build's Parquet files it read (``provenance.data_files``).
Before publishing, the build's folder (``provenance.data``) is read again: its files the run read must be
unchanged (else the numbers are of another build), and every Parquet file under ``data/`` must be the repo's, byte
for byte by sha256 (the Hub gives the LFS sha256 of each: ``dataset_info(files_metadata=True)``); then the repo's
commit is the revision the numbers were scored at. A folder that is no longer there cannot be compared: no revision,
said. A difference is one line naming the first file; nothing is sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from eccv_metric.core.errors import EvaluationError
from eccv_metric.hub.submission import Submission

AGAIN = "run push-results again"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fin:
        for block in iter(lambda: fin.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def same_build(info: object, sub: Submission, push: str, log: Callable[[str], None]) -> str | None:
    """The repo's commit when the local build is its files (see the module docstring); None when the build cannot
    be read any more."""
    root = Path(str(sub.provenance.get("data")))
    if not (root / "data").is_dir():
        log(f"note: no dataset.revision: the local build the run read ({root}) is not here to compare with "
            f"{sub.dataset_repo}'s files")  # fmt: skip
        return None
    now = {p.relative_to(root).as_posix(): sha256_of(p) for p in sorted(root.glob("data/*/*.parquet"))}
    changed = [path for path, digest in sorted((sub.local_build or {}).items()) if now.get(path) != digest]
    if changed:
        raise EvaluationError(
            f"{sub.path}: the build {root} changed since the run ({changed[0]} is no longer the file it read): "
            f"evaluate again on it, then {AGAIN}"
        )
    on_hub = {
        s.rfilename: (s.lfs or {}).get("sha256")
        for s in info.siblings or []  # type: ignore[attr-defined]
        if s.rfilename.startswith("data/") and s.rfilename.endswith(".parquet")
    }
    differ = sorted(path for path in set(now) | set(on_hub) if now.get(path) != on_hub.get(path))
    if differ:
        first = differ[0]
        why = "is not in the repo" if first not in on_hub else "is only in the repo" if first not in now else "differs"
        raise EvaluationError(
            f"{sub.path} was scored on a local build whose files are not those of {sub.dataset_repo} ({first} {why}; "
            f"{len(differ)} of {len(set(now) | set(on_hub))} differ): push that build there ({push}), or evaluate on "
            f"--data {sub.dataset_repo}, then {AGAIN}"
        )
    return info.sha  # type: ignore[attr-defined]
