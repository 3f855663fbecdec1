"""Canonical source files: the cache folder, sha256, and a resumable, retried, verified download."""

from __future__ import annotations

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eccv_metric.core import progress as progress_bars
from eccv_metric.core.errors import EvaluationError


class SourceError(EvaluationError):
    """A source file that cannot be found, downloaded or verified (the message says what to pass instead)."""


@dataclass(frozen=True)
class SourceFile:
    """One canonical source file: its path below its home (a URL prefix) and its sha256."""

    path: str  # e.g. "Annotations/MSCOCO_FG_ann.json"
    sha256: str

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def cache_home() -> Path:
    """``$ECCV_CAPTION_CACHE``, else ``$HF_HOME`` (default ``~/.cache/huggingface``): where the package's caches are."""
    root = os.environ.get("ECCV_CAPTION_CACHE") or Path(
        os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")
    )
    return Path(root)


def default_cache_dir() -> Path:
    """``$ECCV_CAPTION_CACHE``, else ``$HF_HOME`` (default ``~/.cache/huggingface``), then ``eccv_caption_sources``."""
    return cache_home() / "eccv_caption_sources"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fin:
        for block in iter(lambda: fin.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(
    url: str,
    dest: Path,
    sha256: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
    hint: str = "",
) -> Path:
    """Fetch ``url`` to ``dest``: resumes a ``.part`` file, retries with backoff, checks sha256, renames into place.

    ``hint``: what the user can pass instead (a local copy), appended to the error when the download fails.
    ``progress(done, total)``: called after each block; default: a byte bar on a terminal
    (:mod:`eccv_metric.core.progress`).
    """
    if dest.is_file() and (sha256 is None or sha256_file(dest) == sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    last: Exception | None = None
    for attempt in range(retries):
        try:
            have = part.stat().st_size if part.exists() else 0
            request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                if have and response.status != 206:  # the server ignored the range: start over
                    have = 0
                total = response.headers.get("Content-Length")
                total = int(total) + have if total is not None else None
                shown = (
                    progress_bars.bar(f"downloading {dest.name}", total, "B", unit_scale=True)
                    if progress is None
                    else progress_bars.NoBar()
                )
                with open(part, "ab" if have else "wb") as fout, shown:
                    done = have
                    shown.update(have)
                    for block in iter(lambda: response.read(1 << 20), b""):
                        fout.write(block)
                        done += len(block)
                        shown.update(len(block))
                        if progress:
                            progress(done, total)
            if sha256 is not None and sha256_file(part) != sha256:
                part.unlink()
                raise SourceError(f"{url}: sha256 mismatch (expected {sha256})" + (f"; {hint}" if hint else ""))
            os.replace(part, dest)
            return dest
        except SourceError:
            raise
        except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError) as exc:
            last = exc
            time.sleep(min(2**attempt, 10) * 0.1)
    reason = getattr(last, "reason", None) or last
    raise SourceError(f"could not download {url} after {retries} attempts ({reason})" + (f"; {hint}" if hint else ""))
