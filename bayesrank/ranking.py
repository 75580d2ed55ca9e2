"""Rankings: scores to ranks (1 = best), rank agreement, and the result of every rule.

Every ranking in bayesrank is derived from scores where larger is better.
Tie conventions follow :func:`scipy.stats.rankdata`:

- ``competition`` ("min"): 1, 2, 2, 4 — the default everywhere;
- ``dense``: 1, 2, 2, 3;
- ``average``: 1, 2.5, 2.5, 4;
- ``ordinal``: 1, 2, 3, 4 (ties broken by position).

:class:`Ranking` is what every rule returns (:func:`ranking_method` makes a
function over validated data into one).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse.csgraph import connected_components

from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.pairwise import PairwiseData
from bayesrank.data.reductions import NEAR_TIE_TOL

__all__ = [
    "TIE_METHODS", "Ranking", "competition_ranks", "exchangeable_groups", "exchangeable_pairs",
    "kendall_tau", "ranking_method", "scores_to_ranks",
]

TieMethod = Literal["competition", "dense", "average", "ordinal", "max"]
TIE_METHODS: dict[str, str] = {
    "competition": "min",
    "min": "min",
    "dense": "dense",
    "average": "average",
    "ordinal": "ordinal",
    "max": "max",
}


DEFAULT_TOL = NEAR_TIE_TOL  # relative: 1e-12 * max(1, max |score|)


def scores_to_ranks(
    scores: np.ndarray, ties: TieMethod = "competition", *, tol: float | None = None
) -> np.ndarray:
    """Rank scores so that the largest score gets rank 1.

    Parameters
    ----------
    scores : array_like, shape (L,)
        Finite scores, larger is better.
    ties : {"competition", "dense", "average", "ordinal", "max"}
        Tie convention (see module docstring).
    tol : float, optional
        Scores within ``tol`` of their sorted neighbour are treated as tied
        (chains of near-equal scores merge), so floating-point noise never
        splits an exact tie.  Default ``1e-12 * max(1, max |score|)``; 0 means
        exact equality.

    Returns
    -------
    numpy.ndarray
        Integer ranks (float for ``average``).
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite; got {s[~np.isfinite(s)][:3]}")
    if ties not in TIE_METHODS:
        raise ValueError(f"unknown tie convention {ties!r}; use one of {sorted(TIE_METHODS)}")
    if tol is None:
        tol = DEFAULT_TOL * max(1.0, float(np.max(np.abs(s), initial=0.0)))
    if tol > 0 and s.size > 1:
        s = -competition_ranks(s, tol)  # near-ties merged into equal values, order kept
    r = stats.rankdata(-s, method=TIE_METHODS[ties])
    return r if ties == "average" else r.astype(np.int64)


def competition_ranks(scores: np.ndarray, tol: float | None = None) -> np.ndarray:
    """``scores_to_ranks(scores, tol=tol)`` (competition ties) as float, faster; also of
    every row of a stack (D, L) at once.

    Scores within ``tol`` (default ``1e-12 max(1, max |s|)``, per row) of their sorted
    neighbour share a group (chains merge); a model's rank is 1 + the number of models in
    better groups, i.e. the first sorted position of its group + 1.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim not in (1, 2):
        raise ValueError(f"scores must be 1-D (or a 2-D stack), got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite; got {s[~np.isfinite(s)][:3]}")
    rows = np.atleast_2d(s)
    if tol is None:
        tol = DEFAULT_TOL * np.maximum(1.0, np.max(np.abs(rows), axis=1, initial=0.0))
    order = np.argsort(-rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    new_group = np.ones(rows.shape, dtype=bool)
    new_group[:, 1:] = -np.diff(ordered, axis=1) > np.reshape(tol, (-1, 1))
    first = np.maximum.accumulate(np.where(new_group, np.arange(rows.shape[1]), 0), axis=1)
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, first + 1.0, axis=1)
    return ranks if s.ndim == 2 else ranks[0]


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b between two rankings or score vectors (scipy).

    Returns NaN when either input is constant (tau-b is undefined there).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.kendalltau(a, b, variant="b").statistic)

def exchangeable_pairs(*mats: np.ndarray) -> np.ndarray:
    """``same[d, i, j]``: swapping models i and j leaves every matrix of problem d unchanged.

    ``mats`` are count matrices of a batch, (D, L, L) each.  The relation is an
    equivalence (a composition of automorphisms is one), so each row lists a group.
    """
    first = np.asarray(mats[0])
    eye = np.eye(first.shape[-1], dtype=bool)
    ignore = eye[None, :, None, :] | eye[None, None, :, :]
    same = np.ones(first.shape, bool)
    for M in mats:
        M = np.asarray(M, dtype=float)
        Mt = np.swapaxes(M, 1, 2)
        for X in (M, Mt):  # rows and columns agree off the pair
            same &= ((X[:, :, None, :] == X[:, None, :, :]) | ignore).all(axis=3)
        same &= M == Mt
    return same


def exchangeable_groups(W: np.ndarray, T: np.ndarray | None = None) -> np.ndarray:
    """Group labels of models that swapping leaves the counts unchanged.

    Models ``i`` and ``j`` are exchangeable when the transposition (i j) maps ``W`` (and
    ``T``) onto itself (:func:`exchangeable_pairs` of a batch of one); any exchangeable
    estimator gives such models equal scores.  Used to remove optimiser and Monte Carlo
    noise from exact ties.
    """
    mats = [W] + ([] if T is None else [T])
    same = exchangeable_pairs(*(np.asarray(M, float)[None] for M in mats))[0]
    _, labels = connected_components(same, directed=False)
    return labels


@dataclass(frozen=True)
class Ranking:
    """Scores and ranks of L models under one method.

    Attributes
    ----------
    scores : numpy.ndarray, shape (L,)
        Larger is better.
    method : str
        Identifier of the rule that produced it.
    models : tuple of str
        Model names aligned with ``scores``.
    ranks : numpy.ndarray, shape (L,)
        1 = best; derived from ``scores`` with the ``ties`` convention unless
        the method defines ranks itself (e.g. an elimination order).
    ties : str
        Tie convention used for ``ranks``.
    details : dict
        Method-specific extras (standard deviations, item parameters, ...).
    """

    scores: np.ndarray
    method: str
    models: tuple[str, ...]
    ranks: np.ndarray = None  # type: ignore[assignment]
    ties: str = "competition"
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=float)
        if scores.shape != (len(self.models),):
            raise ValueError(f"{len(self.models)} models but scores of shape {scores.shape}")
        scores.setflags(write=False)
        object.__setattr__(self, "scores", scores)
        ranks = self.ranks
        if ranks is None:
            ranks = scores_to_ranks(scores, self.ties)  # type: ignore[arg-type]
        ranks = np.asarray(ranks)
        ranks.setflags(write=False)
        object.__setattr__(self, "ranks", ranks)

    def with_ties(self, ties: TieMethod) -> Ranking:
        """The same scores ranked with another tie convention."""
        return Ranking(self.scores, self.method, self.models, ties=ties, details=self.details)

    def to_frame(self) -> pd.DataFrame:
        """Leaderboard sorted best first: columns rank, model, score."""
        order = np.lexsort((np.arange(len(self.models)), self.ranks))
        return pd.DataFrame(
            {
                "rank": self.ranks[order],
                "model": np.asarray(self.models, dtype=object)[order],
                "score": self.scores[order],
            }
        ).reset_index(drop=True)

    def __len__(self) -> int:
        return len(self.models)

    def __repr__(self) -> str:
        return f"Ranking(method={self.method!r})\n{self.to_frame().to_string(index=False)}"


def ranking_method(func: Callable[..., Any]) -> Callable[..., Ranking]:
    """Turn ``func(data: ResponseData, **options) -> scores | (scores, details)`` into a rule.

    The wrapped function accepts a :class:`ResponseData` or a raw array as its
    first argument and returns a :class:`Ranking` named after the function; a
    :class:`~bayesrank.data.pairwise.PairwiseData` is passed on to the rules that read
    only pairwise counts, and refused by the others (``PairwiseData.for_rule``).
    Explicit ranks may be returned under ``details["ranks"]``.
    """

    @functools.wraps(func)
    def wrapper(data: ResponseData | PairwiseData | np.ndarray, /, **options: Any) -> Ranking:
        d = (data.for_rule(func.__name__) if isinstance(data, PairwiseData)
             else as_response_data(data))
        out = func(d, **options)
        scores, details = out if isinstance(out, tuple) else (out, {})
        details = dict(details)
        ranks = details.pop("ranks", None)
        return Ranking(scores, func.__name__, d.models, ranks=ranks, details=details)

    wrapper.__wrapped_rule__ = func  # type: ignore[attr-defined]
    return wrapper
