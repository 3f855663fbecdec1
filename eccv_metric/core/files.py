"""Files: the one atomic writer, folder swaps, and strict reading of the arrays and texts users give.

Every file the package writes goes through :func:`atomic_open` (or its
shorthands): a temporary file in the destination folder, renamed into place
when complete, so a failure never leaves half a file; the new file gets the
mode an ordinary ``open`` would give (``0o666`` minus the user's umask), not
the ``0o600`` of a bare temporary file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from eccv_metric.core.errors import EvaluationError

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask (read without changing it where Linux allows; else set and restored under a lock)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it is given the usual mode and renamed to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else "") as fout:
            yield fout
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write text atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w") as fout:
        fout.write(text)


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    with atomic_open(path, "wb") as fout:
        fout.write(data)


def write_json_atomic(path: str | Path, payload: object) -> None:
    """Write JSON atomically (indented, one trailing newline)."""
    import json

    write_text_atomic(path, json.dumps(payload, indent=2) + "\n")


def temporary_folder(dest: str | Path) -> Path:
    """A new empty folder beside ``dest`` (same file system: it can be renamed onto it) with the usual mode."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    tmp.chmod(0o777 & ~current_umask())
    return tmp


def replace_folder(new: Path, dest: Path) -> None:
    """Put the finished folder ``new`` in place of ``dest`` (renames; the old one is removed afterwards)."""
    old = None
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(dest, old)
    os.replace(new, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class UnreadableFileError(EvaluationError):
    """A file that cannot be read at all: missing, a folder, not readable, not UTF-8 text (:func:`unreadable`).

    Its message starts with the path, so the layer that was given the path puts its own word for it first
    (:func:`named_file`: a flag, a keyword, a box); ``named``: whether one did."""

    def __init__(self, message: str, named: bool = False):
        super().__init__(message)
        self.named = named


def unreadable(path: str | Path, exc: OSError | UnicodeDecodeError, expected: str | None = None) -> UnreadableFileError:
    """The one wording of a file that cannot be read, by what went wrong (a missing file says it is missing,
    not that it is not UTF-8); ``expected``: what the file should hold."""
    want = f"; expected {expected}" if expected else ""
    if isinstance(exc, UnicodeDecodeError):
        return UnreadableFileError(f"{path} is not UTF-8 text ({exc.reason}: save it as UTF-8){want}")
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return UnreadableFileError(f"{path}: no such file{want}")
    if isinstance(exc, IsADirectoryError):
        return UnreadableFileError(f"{path} is a folder{want or '; expected a file'}")
    if isinstance(exc, PermissionError):
        return UnreadableFileError(f"{path}: permission denied (the file cannot be read: check its permissions)")
    return UnreadableFileError(f"cannot read {path}: {exc.strerror or exc}")


@contextlib.contextmanager
def named_file(word: str) -> Iterator[None]:
    """A file that cannot be read (:class:`UnreadableFileError`) named by ``word`` first, the flag or keyword that gave
    it: ``--run nope.trec: no such file``, ``instances_json= nope.json: no such file`` (keywords written ``name=``
    are put in each front end's words). A file already named keeps its name."""
    try:
        yield
    except UnreadableFileError as exc:
        if exc.named:
            raise
        raise UnreadableFileError(f"{word} {exc}", named=True) from None


def check_input_path(path: str | Path | None, expected: str | None = None) -> None:
    """Fail before any work when an input file cannot be opened (missing, a folder, not readable)."""
    if path is None:
        return
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise unreadable(path, exc, expected) from None


def read_text(path: str | Path) -> str:
    """A UTF-8 text file (a byte-order mark is dropped); errors name the file (:func:`unreadable`)."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None


CANNOT_OPEN = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)  # before any byte is read


def load_npy(path: str | Path, expected: str) -> np.ndarray:
    """A .npy array (memory-mapped; no pickles); other formats are named in the error."""
    path = Path(path)
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        if not isinstance(arr, np.ndarray):  # an .npz archive loads as a lazy NpzFile
            arr.close()
            raise ValueError("an archive of several arrays")
        return arr
    except CANNOT_OPEN as exc:
        raise unreadable(path, exc, expected) from None
    except (OSError, ValueError, EOFError) as exc:
        with open(path, "rb") as fin:
            head = fin.read(6)
        raise EvaluationError(f"{path}: {npy_problem(head, str(exc))}; expected {expected}") from None


def npy_problem(head: bytes, numpy_says: str) -> str:
    """What is wrong with a file np.load refused, in our words: numpy's own text may advise ``allow_pickle``
    (unsafe: a pickle runs code), which is never passed on."""
    if head[:2] == b"PK":
        return "a .npz archive (save one array with np.save; a two-stage result's .npz is given as rerank=)"
    if head != b"\x93NUMPY":
        return "not a .npy file (no .npy header)"
    if "pickle" in numpy_says.lower() or "python objects" in numpy_says.lower():
        return "a .npy of Python objects (dtype object), which is never loaded (unsafe): save numbers instead"
    return f"a broken .npy ({numpy_says})"


def check_output_path(path: str | Path | None) -> None:
    """Fail before any work when an output path cannot be written as a file."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise EvaluationError(f"output {path} is a folder: give a file name, e.g. {path / 'results.json'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise EvaluationError(f"output {path}: cannot create it under {parent}")


def find_below(root: str | Path, pattern: str) -> list[Path]:
    """Every file or folder below ``root`` (itself excluded) whose name matches ``pattern`` (fnmatch), sorted.

    Unlike ``Path.rglob`` (Python < 3.13), symlinked folders are followed: a source folder assembled from
    links to the real copies is searched like any other; a link back to a folder already walked is not
    entered twice (no endless loop).
    """
    import fnmatch

    root = Path(root)
    hits: list[Path] = []
    seen: set[str] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        hits.extend(Path(folder) / name for name in dirs + files if fnmatch.fnmatchcase(name, pattern))
    return sorted(hits)
