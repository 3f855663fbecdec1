"""Downloading a canonical source file: resumable, retried, sha256-checked, renamed atomically."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from eccv_metric.groundtruth import sha256_file


class SourceError(RuntimeError):
    """A source that cannot be found, downloaded or verified."""


def default_cache_dir() -> Path:
    root = os.environ.get("ECCV_CAPTION_CACHE") or Path(
        os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")
    )
    return Path(root) / "eccv_caption_sources"


def download(
    url: str,
    dest: Path,
    sha256: str | None = None,
    retries: int = 3,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Fetch ``url`` to ``dest``: resumes a ``.part`` file, retries with backoff, checks sha256, renames atomically."""
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
                with open(part, "ab" if have else "wb") as fout:
                    done = have
                    for block in iter(lambda: response.read(1 << 20), b""):
                        fout.write(block)
                        done += len(block)
                        if progress:
                            progress(done, total)
            if sha256 is not None and sha256_file(part) != sha256:
                part.unlink()
                raise SourceError(f"{url}: sha256 mismatch (expected {sha256})")
            os.replace(part, dest)
            return dest
        except SourceError:
            raise
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            last = exc
            time.sleep(min(2**attempt, 10) * 0.1)
    raise SourceError(f"could not download {url} after {retries} attempts: {last}")
