"""Compiled loops of Ranked Pairs (locking) and Nanson/Baldwin (elimination), many elections.

Kept apart from :mod:`bayesrank.baselines.voting_batch` so that numba is imported only
when one of them first runs.  Compiled on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def lock_victories(election, winner, loser, n_elections, L):
    """Lock the sorted victories ``winner -> loser`` of each election unless they close a cycle.

    Victories arrive sorted (by election, then by the rule's priority).  ``reach[e, a, b]``
    records a path ``a -> b`` in election e's locked graph; locking ``w -> l`` adds every
    path ``a -> ... -> w -> l -> ... -> c``.
    """
    reach = np.zeros((n_elections, L, L), dtype=np.bool_)
    for e in range(n_elections):
        for i in range(L):
            reach[e, i, i] = True
    locked = np.zeros((n_elections, L, L), dtype=np.bool_)
    for t in range(election.size):
        e = election[t]
        w = winner[t]
        lose = loser[t]
        if reach[e, lose, w]:
            continue
        locked[e, w, lose] = True
        for a in range(L):
            if reach[e, a, w]:
                for c in range(L):
                    if reach[e, lose, c]:
                        reach[e, a, c] = True
    return locked


@njit(cache=True)
def borda_elimination(points, nanson):
    """Survival rounds of Nanson's (``nanson=True``) or Baldwin's elimination, every election.

    ``points`` (B, L, L); see :func:`bayesrank.baselines.voting_batch.borda_elimination_batch`.
    Each election runs alone, its sums in index order.
    """
    B, L, _ = points.shape
    survival = np.zeros((B, L))
    alive = np.empty(L, dtype=np.bool_)
    out = np.empty(L, dtype=np.bool_)
    s = np.zeros(L)
    for e in range(B):
        alive[:] = True
        n_alive = L
        round_no = 0.0
        while n_alive > 1:
            top = 0.0
            total = 0.0
            low = np.inf
            for i in range(L):
                if alive[i]:
                    acc = 0.0
                    for j in range(L):
                        if alive[j]:
                            acc += points[e, i, j]
                    s[i] = acc
                    top = max(top, abs(acc))
                    total += acc
                    low = min(low, acc)
            tol = 1e-12 * max(1.0, top)
            n_out = 0
            for i in range(L):
                if nanson:
                    out[i] = alive[i] and s[i] * n_alive <= total + tol * n_alive
                else:
                    out[i] = alive[i] and s[i] <= low + tol
                n_out += out[i]
            if n_out == n_alive:  # removing everyone: the remaining candidates tie
                break
            for i in range(L):
                if out[i]:
                    survival[e, i] = round_no
                    alive[i] = False
            n_alive -= n_out
            round_no += 1.0
        for i in range(L):
            if alive[i]:
                survival[e, i] = round_no
    return survival
