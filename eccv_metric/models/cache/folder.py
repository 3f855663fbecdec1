"""The embedding cache's folder as one run uses it: checked before the run, and every write through one door.

Before anything loads, the folder must be a folder or one that can be made: a file in its place (or a file
where one of its parents belongs) is one :class:`~eccv_metric.core.errors.EvaluationError` naming the folder and
the next step (another ``cache_dir=``, or ``cache=False``). A folder that exists but cannot be written (a
read-only copy of a lab's cache) is not refused: what it holds is read.

Every write of a run to the cache (an entry's ``partial/key.json`` and batches, its ``embeddings.npy`` and
``meta.json``: :mod:`~eccv_metric.models.cache.entries`; the model memo: :mod:`~eccv_metric.models.cache.recall`;
the file-digest memo: :mod:`~eccv_metric.models.data.digests`) goes through :meth:`CacheFolder.write`. The first
that fails (a full disk, a quota, a read-only file system, no permission) is one :class:`CacheWarning` line
naming the folder, why, and the next step; the run then writes nothing more there and its numbers come as
without the cache. Files appear by rename only, so a failed write leaves nothing half-written.
"""

from __future__ import annotations

import errno
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

from eccv_metric.core.errors import EvaluationError


class CacheWarning(UserWarning):
    """The embedding cache: an entry that does not hold what its key says (not used, encoded afresh), or a cache
    folder that cannot be written (the run goes on without writing it)."""


CacheWarning.__module__ = "eccv_metric.models"

NEXT_STEP = "give another cache_dir=, or cache=False"
WHY = {
    errno.ENOSPC: "no space left on its disk",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "a read-only file system",
    errno.EACCES: "no permission to write there",
    errno.EPERM: "no permission to write there",
}


class CacheFolder:
    """The cache folder ``root`` of one run (see the module docstring): its check and its writes."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.failed: str | None = None  # why the first write failed; then nothing more is written

    @property
    def writable(self) -> bool:
        return self.failed is None

    def check(self) -> None:
        """Make the folder (and its parents) unless it is there; one error naming it where that cannot be done."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise self.unusable("is a file, not a folder") from None
        except NotADirectoryError:
            raise self.unusable("cannot be made (one of its parents is a file)") from None
        except OSError as exc:
            if not self.root.is_dir():  # not made (no permission, read-only parent, ...); an existing one is read
                raise self.unusable(f"cannot be made ({self.why(exc)})") from None

    def unusable(self, what: str) -> EvaluationError:
        given = "" if os.environ.get("ECCV_CAPTION_CACHE") is None else " (ECCV_CAPTION_CACHE)"
        return EvaluationError(f"the embedding cache {self.root}{given} {what}: {NEXT_STEP}")

    def write(self, action: Callable[[], object]) -> bool:
        """Run one write (``action``), unless an earlier one failed; whether it was written. The first that fails
        is warned about once (see the module docstring)."""
        if self.failed is not None:
            return False
        try:
            action()
            return True
        except OSError as exc:
            self.failed = self.why(exc)
            room = "free space there, " if exc.errno in (None, errno.ENOSPC, errno.EDQUOT) else ""
        warnings.warn(
            f"cannot write the embedding cache {self.root} ({self.failed}): this run goes on without writing it; "
            f"{room}{NEXT_STEP}",
            CacheWarning,
            stacklevel=3,
        )
        return False

    def why(self, exc: OSError) -> str:
        """A write's failure in words: the system's reason, with the free space where it may be the cause (numpy's
        short write, ``N requested and M written``, carries no error number)."""
        said = WHY.get(exc.errno, exc.strerror or str(exc) or type(exc).__name__)  # type: ignore[arg-type]
        if exc.errno not in (None, errno.ENOSPC, errno.EDQUOT):
            return said
        try:
            free = shutil.disk_usage(self.root).free
        except OSError:
            return said
        if exc.errno is None:
            return f"a write was cut short ({exc}): {free:,} bytes free on its disk"
        return f"{said}: {free:,} bytes free"
