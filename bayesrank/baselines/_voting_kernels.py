"""Compiled locking loop of Ranked Pairs over a batch of elections.

Kept apart from :mod:`bayesrank.baselines.voting_batch` so that numba is imported only
when Ranked Pairs first runs.  Compiled on first use and cached on disk.
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
