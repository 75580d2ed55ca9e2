"""Scores to ranks (1 = best) and rank agreement.

Every ranking in bayesrank is derived from scores where larger is better.
Tie conventions follow :func:`scipy.stats.rankdata`:

- ``competition`` ("min"): 1, 2, 2, 4 — the default everywhere;
- ``dense``: 1, 2, 2, 3;
- ``average``: 1, 2.5, 2.5, 4;
- ``ordinal``: 1, 2, 3, 4 (ties broken by position).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy import stats

__all__ = ["TIE_METHODS", "scores_to_ranks", "kendall_tau"]

TieMethod = Literal["competition", "dense", "average", "ordinal", "max"]
TIE_METHODS: dict[str, str] = {
    "competition": "min",
    "min": "min",
    "dense": "dense",
    "average": "average",
    "ordinal": "ordinal",
    "max": "max",
}


DEFAULT_TOL = 1e-12


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
        order = np.argsort(-s, kind="stable")
        gaps = -np.diff(s[order]) > tol
        group = np.concatenate([[0], np.cumsum(gaps)])
        s = np.empty_like(s)
        s[order] = -group.astype(float)
    r = stats.rankdata(-s, method=TIE_METHODS[ties])
    return r if ties == "average" else r.astype(np.int64)


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
