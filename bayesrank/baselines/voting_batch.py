"""Voting rules of :mod:`bayesrank.baselines.voting` over a batch of elections at once.

Each function takes B elections stacked on a leading axis and returns what the
single-election rule returns for each of them; the single-election functions of
:mod:`bayesrank.baselines.voting` call these with a batch of one, so an election's result
does not depend on the batch it came in.  The rules are combinatorial (orderings,
eliminations, comparisons of counts); each function says how it batches them.

Paper appendix, "Voting rules" (Ranked Pairs, Nanson, Baldwin, Majority Judgment).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from bayesrank.checks import check_choice
from bayesrank.errors import DataError

__all__ = [
    "borda_elimination_batch",
    "dag_levels_batch",
    "majority_judgment_batch",
    "ranked_pairs_locked_batch",
]


def dag_levels_batch(above: np.ndarray) -> np.ndarray:
    """Kahn levels of B acyclic "ranks above" relations (B, L, L), see ``voting.dag_levels``.

    Every layer of all B relations is peeled at once, draws-last ((L, L, B), so each array
    operation runs along the long batch axis).  Raises DataError if any has a cycle.
    """
    adj = np.ascontiguousarray(np.moveaxis(np.asarray(above, dtype=bool), 0, -1)).astype(np.int64)
    L = adj.shape[0]
    indegree = adj.sum(axis=0)  # (L, B)
    alive = np.ones(indegree.shape, dtype=bool)
    scores = np.zeros(indegree.shape)
    level = float(L)
    while alive.any():
        sources = alive & (indegree == 0)
        if (alive.any(axis=0) & ~sources.any(axis=0)).any():
            raise DataError("the 'above' relation has a cycle; levels are undefined")
        scores[sources] = level
        level -= 1.0
        alive &= ~sources
        indegree = indegree - np.einsum("lb,ljb->jb", sources.astype(np.int64), adj)
    return np.ascontiguousarray(scores.T)


def ranked_pairs_locked_batch(P: np.ndarray, strength: str = "margin") -> np.ndarray:
    """Locked victories (bool (B, L, L)) of ``voting.ranked_pairs_locked`` in B elections
    of preference counts ``P`` (B, L, L): one ``lexsort`` of every election's victories."""
    from bayesrank.baselines._voting_kernels import lock_victories

    check_choice("strength", strength, ("margin", "winning_votes"))
    B, L, _ = P.shape
    margin = P - np.swapaxes(P, 1, 2)
    election, winner, loser = np.nonzero(margin > 0)
    votes = P[election, winner, loser]
    primary = margin[election, winner, loser] if strength == "margin" else votes
    order = np.lexsort((loser, winner, -votes, -primary, election))
    return lock_victories(election[order], winner[order], loser[order], B, L)


def borda_elimination_batch(points: np.ndarray, rule: str = "nanson") -> np.ndarray:
    """Survival rounds (B, L) of ``voting.borda_elimination_scores`` in B elections from
    their points (B, L, L) (``voting.borda_points``), in one compiled loop over the
    elections (:mod:`bayesrank.baselines._voting_kernels`); scores within
    ``1e-12 max(1, max |s|)`` of the mean (Nanson) or minimum (Baldwin) count as at it.
    """
    from bayesrank.baselines._voting_kernels import borda_elimination

    return borda_elimination(np.ascontiguousarray(points, dtype=float), rule == "nanson")


@lru_cache(maxsize=64)
def _median_removal_order(n: int) -> np.ndarray:
    """Positions of a sorted list of n grades in the order the lower median is removed."""
    remaining = list(range(n))
    out = [remaining.pop((len(remaining) - 1) // 2) for _ in range(n)]
    return np.asarray(out, dtype=np.int64)


def majority_judgment_batch(grades: np.ndarray) -> np.ndarray:
    """Majority Judgment levels of B elections, grades (B, L, V), see ``voting``: the dense
    lexicographic ranks of the median sequences within each election (0 = worst, equal
    sequences share a level; ``np.unique(sequences, axis=0, return_inverse=True)``).
    """
    B, L, V = grades.shape
    rows = np.sort(grades, axis=2)[:, :, _median_removal_order(V)].reshape(B * L, V)
    election = np.repeat(np.arange(B), L)
    order = np.lexsort((*rows.T[::-1], election))
    ordered, in_election = rows[order], election[order]
    new = np.ones(B * L, dtype=bool)
    new[1:] = (in_election[1:] != in_election[:-1]) | (ordered[1:] != ordered[:-1]).any(axis=1)
    dense = np.cumsum(new) - 1
    start = dense[np.searchsorted(in_election, np.arange(B))]  # each election counts from 0
    level = np.empty(B * L)
    level[order] = dense - start[in_election]
    return level.reshape(B, L)
