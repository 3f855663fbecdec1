"""A direction's second stage as a file: an ``.npz`` of ``query_ids``, ``candidate_ids`` and ``scores``.

The format (what :func:`save_reranked` writes and :func:`load_reranked` reads, ``np.savez`` / ``np.load``, no
pickles)::

    query_ids      int   (nq,)      the queries that were reranked
    candidate_ids  int   (nq, k)    each query's candidates (gallery ids, distinct in a row), first stage's order
    scores         float (nq, k)    the final score of each candidate (higher is better), finite

One file per direction; the first stage is another file (a score matrix ``.npy`` or embeddings), given beside
it (``eccv-caption evaluate --scores first.npy --rerank i2t=i2t.npz``).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import atomic_open
from eccv_metric.inputs.reranked import FIELDS
from eccv_metric.inputs.reranked import Reranked

EXPECTED = "an .npz of query_ids, candidate_ids and scores (eccv_metric.formats.reranked)"


def is_reranked(path: str | Path) -> bool:
    """Whether a file is an ``.npz`` (a zip archive) holding the three arrays of a second stage."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = {Path(n).stem for n in archive.namelist()}
    except (OSError, zipfile.BadZipFile):
        return False
    return set(FIELDS) <= names


def load_reranked(path: str | Path) -> Reranked:
    """A second stage from its ``.npz``; errors name the file and the array."""
    path = Path(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except IsADirectoryError:
        raise EvaluationError(f"{path} is a folder; expected {EXPECTED}") from None
    except FileNotFoundError:
        raise EvaluationError(f"{path}: no such file; expected {EXPECTED}") from None
    except (OSError, ValueError, EOFError) as exc:
        raise EvaluationError(f"{path}: not an .npz ({exc}); expected {EXPECTED}") from None
    if isinstance(loaded, np.ndarray):
        raise EvaluationError(f"{path}: one .npy array, not an .npz of three; expected {EXPECTED}")
    with loaded:
        try:
            arrays = {name: loaded[name] for name in loaded.files}
        except ValueError:  # numpy's words advise allow_pickle, which is never given (a pickle runs code)
            raise EvaluationError(
                f"{path}: holds an array of Python objects (dtype object), which is never loaded (unsafe): save "
                "numbers instead"
            ) from None
    return Reranked.of(arrays, str(path), in_file=True)


def save_reranked(path: str | Path, reranked: Reranked) -> None:
    """Write a second stage as its ``.npz`` (atomically, with the user's umask)."""
    with atomic_open(path, "wb") as fout:
        np.savez(fout, query_ids=reranked.query_ids, candidate_ids=reranked.candidate_ids, scores=reranked.scores)
