"""One direction's second stage of a two-stage ranking: the queries reranked, their candidates, the final scores.

:class:`Reranked` holds what a reranker (an ITM head, a cross-encoder) produced for one direction, checked
when it is made: every array of the right shape, the query ids distinct, each query's candidate ids distinct,
every final score finite. What the ids name (gallery items of the first stage) is checked by
:class:`~eccv_metric.inputs.twostage.TwoStage`, which knows the first stage's rows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.errors import preview
from eccv_metric.core.ids import int_ids

FIELDS = ("query_ids", "candidate_ids", "scores")


class Reranked:
    """One direction's second stage.

    ``query_ids`` (nq): the queries that were reranked; ``candidate_ids`` (nq x k): each query's candidates
    (gallery ids, distinct within a row; their order in a row does not matter: candidates of equal final score
    rank in the gallery's order, the tie rule); ``scores`` (nq x k): the final score of each candidate (higher is
    better; finite). The ranking they define, with the first stage,
    is :class:`~eccv_metric.inputs.twostage.TwoStage`'s. ``what`` prefixes every error (e.g. a file name);
    ``in_file``: errors name the arrays of a file (``the scores array``), not keywords (``scores=``).
    """

    def __init__(
        self, query_ids: object, candidate_ids: object, scores: object, *, what: str = "", in_file: bool = False
    ):
        head = f"{what}: " if what else ""
        q_name, c_name, s_name = (f"the {f} array" if in_file else f"{f}=" for f in FIELDS)
        self.query_ids = int_ids(query_ids, head + q_name, ndim=1)
        candidates = int_ids(candidate_ids, head + c_name)
        if candidates.ndim != 2 or candidates.shape[1] == 0:
            raise EvaluationError(
                f"{head}{c_name} must be 2-D (one row of candidate ids per query, at least one column), got shape "
                f"{candidates.shape}"
            )
        values = final_scores(scores, head + s_name)
        n = len(self.query_ids)
        for name, arr in ((c_name, candidates), (s_name, values)):
            if arr.shape[0] != n:
                raise EvaluationError(f"{head}{name} has {arr.shape[0]} rows but {q_name} {n}: one row per query")
        if values.shape != candidates.shape:
            raise EvaluationError(
                f"{head}{s_name} has shape {values.shape} but {c_name} {candidates.shape}: one final score per "
                "candidate"
            )
        uniq, counts = np.unique(self.query_ids, return_counts=True)
        if (counts > 1).any():
            raise EvaluationError(f"{head}{q_name} names queries more than once: {preview(uniq[counts > 1])}")
        ordered = np.sort(candidates, axis=1)
        repeated = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        if repeated.any():
            row = int(np.flatnonzero(repeated)[0])
            twice = ordered[row][1:][ordered[row][1:] == ordered[row][:-1]]
            raise EvaluationError(
                f"{head}{c_name} of query {self.query_ids[row]} names candidates more than once: "
                f"{preview(np.unique(twice))} ({int(repeated.sum())} query(ies) in all)"
            )
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            col = int(np.flatnonzero(~np.isfinite(values[row]))[0])
            raise EvaluationError(
                f"{head}{s_name} of query {self.query_ids[row]} hold {values[row, col]} (candidate "
                f"{candidates[row, col]}; {int(bad.sum())} query(ies) in all): every final score must be finite"
            )
        self.candidate_ids = candidates
        self.scores = values

    @property
    def k(self) -> int:
        """Candidates per query."""
        return int(self.candidate_ids.shape[1])

    def __repr__(self) -> str:
        return f"Reranked({len(self.query_ids)} queries x {self.k} candidates)"

    @classmethod
    def of(cls, value: object, what: str, in_file: bool = False) -> Reranked:
        """A :class:`Reranked` from itself, a mapping with its three fields (e.g. ``np.load`` of an ``.npz``), or a
        tuple ``(query_ids, candidate_ids, scores)``; ``what`` names it in errors."""
        if isinstance(value, Reranked):
            return value
        if isinstance(value, tuple) and len(value) == 3:
            return cls(*value, what=what)
        if isinstance(value, Mapping) or hasattr(value, "files"):  # np.load(".npz") is a mapping of its arrays
            names = list(getattr(value, "files", None) or value.keys())  # type: ignore[union-attr]
            missing = [f for f in FIELDS if f not in names]
            extra = sorted(set(names) - set(FIELDS))
            if missing or extra:
                wrong = [f"missing {missing}"] if missing else []
                wrong += [f"unknown {extra}"] if extra else []
                raise EvaluationError(f"{what} must hold exactly {', '.join(FIELDS)}: {'; '.join(wrong)}")
            return cls(*(value[f] for f in FIELDS), what=what, in_file=in_file)  # type: ignore[index]
        raise EvaluationError(
            f"{what} must be a Reranked(query_ids, candidate_ids, scores), a mapping of those three arrays (an .npz) "
            f"or a tuple of them, not {type(value).__name__}"
        )


def final_scores(scores: object, what: str) -> np.ndarray:
    """The final scores as a 2-D float64 array (numpy or torch; bfloat16 / float16 upcast); ``what`` names them."""
    if hasattr(scores, "detach") and hasattr(scores, "cpu"):
        tensor = scores.detach().cpu()  # type: ignore[attr-defined]
        if str(getattr(tensor, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            tensor = tensor.float()
        scores = tensor.numpy()
    arr = np.asarray(scores)
    if arr.dtype.kind != "f":
        raise EvaluationError(f"{what} must be float16, float32 or float64, not {arr.dtype}")
    if arr.ndim != 2:
        raise EvaluationError(f"{what} must be 2-D (one row per query), got shape {arr.shape}")
    return arr.astype(np.float64)
