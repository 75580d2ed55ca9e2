"""Voting rules with questions as voters (paper App. "Voting-based Methods").

Each question ``m`` is a voter that ranks the models by their per-question
result -- the solve count ``k_lm`` in the paper, here the cell's mean utility
``u_lm = data.reductions.cell_utility`` (``k_lm / N`` for complete binary data,
so the same ballot; with missing trials it is the honest generalisation, and a
question a model never observed abstains on that model's pairs).  From the
ballots come

- ``W_ij`` = #questions with ``u_im > u_jm`` (strict question wins, computed here
  from ``cell_utility``) and ``T_ij`` = #questions where they tie;
- ``P_ij = W_ij + T_ij / 2`` = ``data.reductions.question_preferences`` (paper's
  ``P^(q)``, ``tie_policy="half"``) or ``P_ij = W_ij`` (``tie_policy="ignore"``);
- margins ``Delta_ij = P_ij - P_ji`` (the same under both tie policies).

Every rule is a pure function over these matrices (``*_scores``), usable on
textbook profiles via :func:`pairwise_counts` on a candidates x voters grade
matrix, plus a :func:`~bayesrank.ranking.ranking_method` wrapper over
:class:`~bayesrank.ResponseData` registered under the paper's identifiers.
Rules that define an order rather than a score (Schulze, Ranked Pairs,
Kemeny-Young, Nanson, Baldwin, Majority Judgment) return *level* scores:
models with no predecessor get the top level, and so on (:func:`dag_levels`).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from scipy import optimize, sparse
from scipy.sparse import csgraph

from bayesrank.baselines.voting_batch import (
    borda_elimination_batch,
    dag_levels_batch,
    majority_judgment_batch,
    ranked_pairs_locked_batch,
)
from bayesrank.checks import check_choice, check_finite
from bayesrank.data import ResponseData
from bayesrank.data.reductions import question_pair_counts
from bayesrank.errors import DataError
from bayesrank.ranking import ranking_method

__all__ = [
    "TIE_POLICIES",
    "RANK_TIES",
    "baldwin",
    "borda",
    "borda_elimination_scores",
    "borda_points",
    "borda_scores",
    "copeland",
    "copeland_scores",
    "dag_levels",
    "kemeny_young",
    "kemeny_young_scores",
    "majority_judgment",
    "majority_judgment_scores",
    "minimax",
    "minimax_scores",
    "nanson",
    "pairwise_counts",
    "preference_matrix",
    "question_counts",
    "ranked_pairs",
    "ranked_pairs_locked",
    "schulze",
    "schulze_levels",
    "schulze_paths",
    "win_rate",
    "win_rate_scores",
]

TIE_POLICIES = ("ignore", "half")
RANK_TIES = ("average", "min", "max")
_MINIMAX_VARIANTS = ("margin", "winning_votes", "pairwise_opposition")
_STRENGTHS = ("margin", "winning_votes")


def _square(name: str, a: Any, *, batch: bool | None = False) -> np.ndarray:
    """``a`` as float, checked square: (L, L), a batch (B, L, L) with ``batch=True``, or
    either with ``batch=None``."""
    m = np.asarray(a, dtype=float)
    ranks, shape = {False: ((2,), "a square (L, L) matrix"),
                    True: ((3,), "a batch of square (B, L, L) matrices"),
                    None: ((2, 3), "a square (L, L) matrix or a batch (B, L, L)")}[batch]
    if m.ndim not in ranks or m.shape[-1] != m.shape[-2]:
        raise DataError(f"{name} must be {shape}, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise DataError(f"{name} must be finite")
    return m


# --------------------------------------------------------------------------------------
# Ballots -> pairwise counts
# --------------------------------------------------------------------------------------
def pairwise_counts(grades: Any, weights: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Strict wins and ties of every candidate pair over a set of graded ballots.

    Parameters
    ----------
    grades : array_like, shape (L, V)
        ``grades[i, v]``: how voter ``v`` rates candidate ``i`` (larger is
        preferred; only the order within a column matters).  NaN = not rated:
        the voter abstains on every pair involving that candidate.  A ranked
        ballot maps to grades as ``-position``; "unranked = tied last" maps the
        unranked candidates to one grade below all ranked ones.
    weights : array_like, shape (V,), optional
        Ballot multiplicities (default 1 each).

    Returns
    -------
    wins : numpy.ndarray (L, L)
        ``wins[i, j]`` = total weight of voters preferring i to j.
    ties : numpy.ndarray (L, L)
        Total weight of voters rating i and j equally (diagonal 0).
    """
    u = np.asarray(grades, dtype=float)
    if u.ndim != 2:
        raise DataError(f"grades must have shape (candidates, voters), got {u.shape}")
    if np.isinf(u).any():
        raise DataError("grades must be finite (use NaN for 'not rated')")
    w = None if weights is None else np.asarray(weights, dtype=float)
    if w is not None and (w.shape != u.shape[1:] or not np.all(np.isfinite(w)) or (w < 0).any()):
        raise DataError(f"weights must be {u.shape[1]} non-negative finite numbers, got {w.shape}")
    return question_pair_counts(u, w)


def question_counts(data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
    """Strict question wins W and question ties T of a dataset (questions as voters).

    Read from the shared reductions: ``W_ij`` counts questions with ``u_im > u_jm``
    over ``cell_utility`` and ``T_ij`` those with equal utility.
    """
    red = data.reductions
    return np.asarray(red.question_wins), np.asarray(red.question_ties)


def preference_matrix(wins: Any, ties: Any, tie_policy: str = "half", *,
                      batch: bool = False) -> np.ndarray:
    """``P = W + T/2`` (``tie_policy="half"``) or ``P = W`` (``"ignore"``), of one election
    (L, L) or, with ``batch``, of B elections (B, L, L)."""
    check_choice("tie_policy", tie_policy, TIE_POLICIES)
    W = _square("wins", wins, batch=batch)
    return W + 0.5 * _square("ties", ties, batch=batch) if tie_policy == "half" else W


# --------------------------------------------------------------------------------------
# Level scores of a strict partial order
# --------------------------------------------------------------------------------------
def dag_levels(above: Any) -> np.ndarray:
    """Level scores of an acyclic "ranks above" relation (larger is better).

    Candidates nobody is above get level ``L``; removing them, the next sources
    get ``L - 1``; and so on (Kahn layering).  Raises if ``above`` has a cycle.
    """
    adj = np.asarray(above, dtype=bool)
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise DataError(f"'above' must be a square (L, L) relation, got shape {adj.shape}")
    return dag_levels_batch(adj[None])[0]


# --------------------------------------------------------------------------------------
# Positional and pairwise-count rules
# --------------------------------------------------------------------------------------
# Each rule below takes one election (L, L) or a batch of them (B, L, L): the study scores
# every draw of a stack in one call, bayesrank.rank a dataset as a batch of one.
def borda_scores(preferences: Any) -> np.ndarray:
    """Borda points ``s_i = sum_j P_ij`` with ``P`` built with half ties.

    Equals ``sum_m (L - r_im)`` with tie-averaged per-voter ranks ``r_im``
    (``L - 1`` points for a unique first place, 0 for a unique last place).
    """
    return _square("preferences", preferences, batch=None).sum(axis=-1)


def copeland_scores(preferences: Any) -> np.ndarray:
    """Copeland ``s_i = sum_{j != i} sign(P_ij - P_ji)`` (pairwise wins minus losses)."""
    P = _square("preferences", preferences, batch=None)
    return np.sign(P - np.swapaxes(P, -1, -2)).sum(axis=-1)


def win_rate_scores(wins: Any) -> np.ndarray:
    """``s_i = sum_j W_ij / sum_j (W_ij + W_ji)`` over strict wins; 0.5 if i never decided."""
    W = _square("wins", wins, batch=None)
    won = W.sum(axis=-1)
    decided = won + W.sum(axis=-2)
    return np.divide(won, decided, out=np.full(won.shape, 0.5), where=decided > 0)


def minimax_scores(preferences: Any, variant: str = "margin") -> np.ndarray:
    """Minimax (Simpson-Kramer): minus the strength of the worst pairwise defeat.

    - ``"margin"``: ``-max_j max(0, Delta_ji)`` (paper eq.);
    - ``"winning_votes"``: ``-max {P_ji : Delta_ji > 0}`` (0 without defeats);
    - ``"pairwise_opposition"``: ``-max_j P_ji`` (defeat or not).
    """
    check_choice("variant", variant, _MINIMAX_VARIANTS)
    P = _square("preferences", preferences, batch=None)
    against = np.swapaxes(P, -1, -2).copy()  # against[..., i, j] = P_ji
    margin_against = against - P
    against[..., np.eye(P.shape[-1], dtype=bool)] = -np.inf
    if variant == "pairwise_opposition":
        worst = against.max(axis=-1)
    elif variant == "margin":
        worst = np.maximum(margin_against, 0.0).max(axis=-1)
    else:
        worst = np.where(margin_against > 0, against, 0.0).max(axis=-1)
    return -np.where(np.isfinite(worst), worst, 0.0)


def schulze_paths(preferences: Any, strength: str = "winning_votes") -> np.ndarray:
    """Strongest-path strengths ``p_ij`` of the Schulze method (Schulze 2011).

    Direct links are ``d_ij = P_ij`` (``"winning_votes"``) or ``Delta_ij``
    (``"margin"``) where ``P_ij > P_ji``, else 0; ``p`` is the widest-path
    (max-min) closure, computed by Floyd-Warshall.  A batch runs draws-last in blocks,
    (L, L, block): every min/max runs along the election axis (not along L = 5-15) and a
    block's L steps stay in cache; max/min are exact, so blocks change nothing but speed.
    """
    check_choice("strength", strength, _STRENGTHS)
    P = _square("preferences", preferences, batch=None)
    one = P.ndim == 2
    P = P[None] if one else P
    margin = P - np.swapaxes(P, 1, 2)
    p = np.where(margin > 0, margin if strength == "margin" else P, 0.0)
    B, L, _ = p.shape
    eye = np.eye(L, dtype=bool)
    block = max(1, 2**18 // (L * L))
    for start in range(0, B, block):
        q = np.ascontiguousarray(np.moveaxis(p[start:start + block], 0, -1))
        q[eye] = 0.0
        through = np.empty_like(q)
        for k in range(L):
            np.minimum(q[:, k:k + 1], q[k:k + 1, :], out=through)
            np.maximum(q, through, out=q)
        q[eye] = 0.0
        p[start:start + block] = np.moveaxis(q, -1, 0)
    return p[0] if one else p


def schulze_levels(preferences: Any, strength: str = "winning_votes") -> np.ndarray:
    """Schulze level scores (:func:`dag_levels` of ``p_ij > p_ji``), one election or a batch."""
    p = schulze_paths(preferences, strength)
    above = p > np.swapaxes(p, -1, -2)
    return dag_levels_batch(above) if above.ndim == 3 else dag_levels(above)


def ranked_pairs_locked(preferences: Any, strength: str = "margin") -> np.ndarray:
    """Locked victories of Ranked Pairs (Tideman 1987), as a bool (L, L) matrix.

    Victories ``i -> j`` (``Delta_ij > 0``) are sorted by strength (``|Delta_ij|``
    or ``P_ij``), then by winning votes ``P_ij`` (both descending), then by the
    indices of winner and loser (ascending) -- the deterministic tie-break of the
    paper's implementation -- and locked unless they would close a cycle.
    """
    return ranked_pairs_locked_batch(_square("preferences", preferences)[None], strength)[0]


# --------------------------------------------------------------------------------------
# Kemeny-Young (exact: linear ordering by cutting planes)
# --------------------------------------------------------------------------------------
class _Deadline:
    def __init__(self, time_limit: float | None) -> None:
        if time_limit is not None:
            time_limit = check_finite("time_limit", time_limit, positive=True)
        self.limit = time_limit
        self.end = None if time_limit is None else time.perf_counter() + time_limit

    def options(self) -> dict[str, float] | None:
        if self.end is None:
            return None
        left = self.end - time.perf_counter()
        if left <= 0:
            self.fail()
        return {"time_limit": left}

    def fail(self) -> None:
        raise RuntimeError(
            f"Kemeny-Young: optimality not proven within time_limit={self.limit} s; "
            "raise time_limit (or pass None) for an exact ranking"
        )


class _LinearOrdering:
    """max sum_{i above j} Delta_ij over the total orders of one block, exactly.

    Variables ``y_ij`` (i < j; 1 = i above j); the orders are the integer points of the
    transitivity constraints ``0 <= y_ij + y_jk - y_ik <= 1`` of every triple i < j < k.
    An optimum binds few of the s(s-1)(s-2)/6 triples, so they enter as cutting planes:
    the LP relaxation is re-solved with the triples violated so far until it violates
    none, and an integral optimum of a relaxation is the block's optimum (HiGHS via
    :func:`scipy.optimize.linprog`).  A fractional one is finished by the MILP over the
    same cuts, again adding what its integer solution violates.  The cuts are kept for
    the re-solves with one pair fixed (tie-aware Kemeny).
    """

    def __init__(self, margin: np.ndarray, deadline: _Deadline) -> None:
        s = margin.shape[0]
        self.margin, self.deadline = margin, deadline
        self.iu, self.ju = np.triu_indices(s, 1)
        index = np.zeros((s, s), dtype=np.int64)
        index[self.iu, self.ju] = np.arange(self.iu.size)
        t = np.array(list(itertools.combinations(range(s), 3)), dtype=np.int64).reshape(-1, 3)
        self.triples = np.stack([index[t[:, 0], t[:, 1]], index[t[:, 1], t[:, 2]],
                                 index[t[:, 0], t[:, 2]]], axis=1)
        self.active = np.zeros((2, len(t)), dtype=bool)  # cuts in use: y's sum <= 1, >= 0
        self.reduced_costs: np.ndarray | None = None

    def solve(self, fix: tuple[int, int] | None = None,
              floor: float = -np.inf) -> tuple[np.ndarray, float] | None:
        """(order best first, objective); ``fix=(a, b)`` forces a above b.  None when that
        is infeasible or no order reaches ``floor`` (a relaxation's value bounds every
        order's, so the cuts stop once it falls below).  Without ``fix`` and with an
        integral LP optimum, ``reduced_costs`` are its reduced costs
        (:func:`_certified_pairs`)."""
        n_var = self.iu.size
        lb, ub = np.zeros(n_var), np.ones(n_var)
        if fix is not None:
            a, b = fix
            k = np.flatnonzero((self.iu == min(a, b)) & (self.ju == max(a, b)))
            lb[k] = ub[k] = 1.0 if a < b else 0.0
        cost = -self.margin[self.iu, self.ju]
        sign = np.array([[1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])  # y_ij + y_jk - y_ik <= 1, >= 0
        integer = False
        while True:
            side, which = np.nonzero(self.active)
            A = sparse.csr_array((sign[side].ravel(), (np.repeat(np.arange(side.size), 3),
                                                       self.triples[which].ravel())),
                                 shape=(side.size, n_var))
            bound = (side == 0).astype(float)
            res = (optimize.milp(cost, integrality=np.ones(n_var), bounds=optimize.Bounds(lb, ub),
                                 constraints=[optimize.LinearConstraint(A, -np.inf, bound)],
                                 options=self.deadline.options()) if integer else
                   optimize.linprog(cost, A_ub=A, b_ub=bound, bounds=np.c_[lb, ub],
                                    method="highs", options=self.deadline.options()))
            if res.status == 2:
                return None
            if res.status != 0 or res.x is None:
                if res.status == 1:
                    self.deadline.fail()
                raise RuntimeError(f"Kemeny-Young linear ordering failed: {res.message}")
            if 2 * -res.fun - self.margin[self.iu, self.ju].sum() < floor:
                return None  # in _order_value's units: sum_{i<j} y Delta_ij - (1 - y) Delta_ij
            y = np.round(res.x) if integer else res.x
            t = self.triples
            s = y[t[:, 0]] + y[t[:, 1]] - y[t[:, 2]]
            excess = np.stack([s - 1.0, -s])
            cuts = np.flatnonzero((excess > 1e-9) & ~self.active)
            if cuts.size:
                keep = cuts[np.argsort(-excess.ravel()[cuts])[:4 * n_var]]
                self.active.ravel()[keep] = True
            elif not integer and np.abs(y - np.round(y)).max() > 1e-9:
                integer = True  # a fractional vertex of the relaxation: branch
            else:
                break
        if fix is None and not integer:
            self.reduced_costs = cost - A.T @ res.ineqlin.marginals  # multipliers >= 0
            slack = np.abs(res.ineqlin.residual) > 1e-9  # the re-solves start without them
            self.active[side[slack], which[slack]] = False
        above = np.zeros(self.margin.shape[0], dtype=np.int64)
        up = y > 0.5
        np.add.at(above, self.iu[up], 1)
        np.add.at(above, self.ju[~up], 1)
        order = np.argsort(-above, kind="stable")
        return order, _order_value(self.margin, order)


def _order_value(margin: np.ndarray, order: np.ndarray) -> float:
    """``sum_{i above j} margin_ij`` of the total order ``order`` (best first)."""
    position = np.argsort(order)  # the inverse permutation: each model's place
    return float(margin[position[:, None] < position[None, :]].sum())


def _certified_pairs(solver: _LinearOrdering, threshold: float) -> np.ndarray:
    """Pairs that keep their order in every optimum by the LP's reduced costs, closed
    transitively (``forced[a, b]``: a above b).

    The relaxation's optimal value is convex in a fixed ``y_ij``, with slope the reduced
    cost ``r_ij`` at the optimum, so flipping a pair loses at least ``|r_ij|``; beyond
    ``threshold`` (the tolerance of "optimal") no optimum flips it.
    """
    s = solver.margin.shape[0]
    forced = np.zeros((s, s), dtype=bool)
    r = solver.reduced_costs
    if r is None:
        return forced
    up, down = r < -threshold, r > threshold
    forced[solver.iu[up], solver.ju[up]] = True
    forced[solver.ju[down], solver.iu[down]] = True
    for k in range(s):
        forced |= np.outer(forced[:, k], forced[k])
    return forced


def _free_by_moves(margin: np.ndarray, order: np.ndarray, tol: float) -> np.ndarray:
    """Pairs that flip between optima found by swapping two adjacent runs of the optimal
    ``order`` at no loss: the runs at positions p..q-1 and q..r-1 change places at a cost of
    ``2 sum_{x in the second, y in the first} Delta_xy`` and flip exactly the pairs between
    them (a single model moved up or down is a run of one)."""
    s = order.size
    M = margin[np.ix_(order, order)]
    total = np.zeros((s + 1, s + 1))
    total[1:, 1:] = M.cumsum(axis=0).cumsum(axis=1)  # total[i, j] = sum M[:i, :j]
    free = np.zeros((s, s), dtype=bool)  # in positions
    for q in range(1, s):
        # swap[p, r - q - 1] = 2 sum M[q:r, p:q] for p < q < r
        r = np.arange(q + 1, s + 1)
        p = np.arange(q)
        block = (total[r, q] - total[q, q])[None, :] - (total[r][:, p].T - total[q, p][:, None])
        ok = 2 * block >= -tol
        # pair (x, y), x < q <= y, flips in some swap with p <= x and r > y
        reach = np.logical_or.accumulate(np.logical_or.accumulate(ok, axis=0)[:, ::-1],
                                         axis=1)[:, ::-1]
        free[:q, q:] |= reach
    free |= free.T
    flipped = np.zeros((s, s), dtype=bool)
    flipped[np.ix_(order, order)] = free
    return flipped


def _forced_in_block(solver: _LinearOrdering, order: np.ndarray, best: float,
                     tol: float) -> np.ndarray:
    """Which pairs keep their order in *every* optimal total order of the block.

    Decided without a re-solve where a certificate exists (:func:`_certified_pairs`,
    :func:`_free_by_moves`); each pair left is re-solved with its order fixed the other way.
    """
    margin = solver.margin
    s = order.size
    scale = max(1.0, float(np.abs(margin).max(initial=0.0)))
    forced = _certified_pairs(solver, 1e-6 * scale)  # forced[a, b]: a above b in all optima
    free = _free_by_moves(margin, order, tol)  # both orders occur among optima
    ref = np.argsort(order)  # each model's place in the order

    def note_optimum(opt_order: np.ndarray) -> None:
        pos = np.argsort(opt_order)
        free[(pos[:, None] < pos[None, :]) != (ref[:, None] < ref[None, :])] = True
        free[...] |= _free_by_moves(margin, opt_order, tol)

    for gap in range(1, s):
        for k in range(s - gap):
            a, b = order[k], order[k + gap]
            if free[a, b] or forced[a, b]:
                continue
            alt = solver.solve(fix=(b, a), floor=best - tol)
            if alt is not None and alt[1] >= best - tol:
                note_optimum(alt[0])
                continue
            # a above b in every optimum; optima are closed under this, so close transitively
            forced |= np.outer(forced[:, a] | (np.arange(s) == a), forced[b] | (np.arange(s) == b))
    return forced


_SUBSET_DP_MAX = 14


def _kemeny_subset_dp(margin: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact Kemeny on a small block by dynamic programming over subsets.

    ``h(S)`` = best internal value of ordering the set S,
    ``h(S) = max_{j in S} h(S - j) + sum_{i in S - j} Delta_ij`` (j placed last).
    A set S is an optimal *prefix* iff ``h(S) + h(S^c) + sum_{i in S, j notin S}
    Delta_ij`` equals the optimum; b can be above a in some optimal order iff an
    optimal prefix contains b but not a.  Returns (one optimal order, forced).
    """
    s = margin.shape[0]
    n = 1 << s
    subsets = np.arange(n)
    bits = ((subsets[:, None] >> np.arange(s)) & 1).astype(bool)
    colsum = bits.astype(float) @ margin  # colsum[S, j] = sum_{i in S} Delta_ij
    size = bits.sum(axis=1)
    h = np.zeros(n)
    last = np.zeros(n, dtype=np.int64)
    for k in range(1, s + 1):
        S = subsets[size == k]
        best = np.full(S.size, -np.inf)
        arg = np.zeros(S.size, dtype=np.int64)
        for j in range(s):
            has = bits[S, j]
            prev = S[has] ^ (1 << j)
            cand = h[prev] + colsum[prev, j]
            better = cand > best[has]
            rows = np.flatnonzero(has)[better]
            best[rows] = cand[better]
            arg[rows] = j
        h[S] = best
        last[S] = arg
    full = n - 1
    order = []
    S = full
    while S:
        order.append(last[S])
        S ^= 1 << last[S]
    cross = (colsum * ~bits).sum(axis=1)
    optimal_prefix = h + h[full ^ subsets] + cross >= h[full] - tol * s
    prefixes = bits[optimal_prefix].astype(np.int64)
    b_above_a = prefixes.T @ (1 - prefixes)  # [b, a]: optimal prefixes with b, without a
    forced = (b_above_a.T == 0) & ~np.eye(s, dtype=bool)
    return np.asarray(order[::-1], dtype=np.int64), forced


def kemeny_young_scores(
    preferences: Any, *, tie_aware: bool = True, time_limit: float | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Kemeny-Young: total orders maximising agreement ``sum_{i above j} P_ij`` (exact).

    The objective depends only on margins ``Delta``.  The majority graph
    (``i -> j`` when ``Delta_ij >= 0``) is split into strongly connected
    components; they form a chain with strict majorities between them, so every
    optimal order ranks a higher component above a lower one (an adjacent swap
    across the cut would gain ``Delta > 0``).  Components of up to 14 models are
    solved by dynamic programming over subsets, which also yields every pair's status
    across all optima at once; larger ones as a linear ordering problem by cutting
    planes (:class:`_LinearOrdering`), and tie-aware by re-solving, with the pair's
    order fixed the other way, each pair that no certificate decides
    (:func:`_forced_in_block`).

    Parameters
    ----------
    preferences : array_like (L, L)
        Pairwise preference counts P.
    tie_aware : bool
        True (paper default): rank by the pairs whose order is the same in *every*
        optimal order (level scores of that partial order; models whose relative
        order differs between optima tie).  False: one optimal order.
    time_limit : float, optional
        Wall-clock budget in seconds for all linear programs together; exceeding it raises
        RuntimeError (the result would not be exact).

    Returns
    -------
    scores : numpy.ndarray
        Level scores (tie-aware) or number of models ranked below (single order).
    details : dict
        ``order`` (one optimal order, best first), ``objective``
        (``sum_{i above j} P_ij`` of it) and, if tie-aware, ``forced`` (L, L bool).
    """
    P = _square("preferences", preferences)
    L = P.shape[0]
    margin = P - P.T
    scale = max(1.0, float(np.abs(margin).max(initial=0.0)))
    tol = 1e-9 * scale
    deadline = _Deadline(time_limit)

    majority = (margin >= -tol) & ~np.eye(L, dtype=bool)
    n_comp, label = csgraph.connected_components(
        sparse.csr_array(majority), directed=True, connection="strong"
    )
    members = [np.flatnonzero(label == c) for c in range(n_comp)]
    # Components form a chain: order them by how many models they strictly beat.
    beaten = np.array([(margin[m[0]] > tol).sum() for m in members])
    chain = np.argsort(-beaten, kind="stable")

    order_parts = []
    forced = np.zeros((L, L), dtype=bool)
    placed = np.zeros(L, dtype=bool)
    for c in chain:
        idx = members[c]
        forced[np.ix_(idx, ~placed)] = True  # above every later component
        placed[idx] = True
        if idx.size == 1:
            order_parts.append(idx)
            continue
        block = margin[np.ix_(idx, idx)]
        if idx.size <= _SUBSET_DP_MAX:
            deadline.options()  # raises once the budget is spent
            local_order, local = _kemeny_subset_dp(block, tol)
        else:
            solver = _LinearOrdering(block, deadline)
            local_order, best = solver.solve()
            local = _forced_in_block(solver, local_order, best, tol) if tie_aware else None
        order_parts.append(idx[local_order])
        if tie_aware:
            forced[np.ix_(idx, idx)] = local
    np.fill_diagonal(forced, False)
    order = np.concatenate(order_parts)
    details: dict[str, Any] = {"order": order, "objective": _order_value(P, order)}
    if tie_aware:
        details["forced"] = forced
        return dag_levels(forced), details
    return (L - 1 - np.argsort(order)).astype(float), details


# --------------------------------------------------------------------------------------
# Borda elimination (Nanson, Baldwin) and Majority Judgment
# --------------------------------------------------------------------------------------
def borda_elimination_scores(
    wins: Any, ties: Any, *, rule: str = "nanson", rank_ties: str = "average"
) -> np.ndarray:
    """Survival rounds of Nanson's or Baldwin's Borda elimination.

    Each round recomputes Borda points among the remaining candidates,
    ``s_i = sum_{j alive} (W_ij + c T_ij)`` (:func:`borda_points`: ``c`` is the per-voter
    tie convention ``rank_ties``), then removes every candidate with ``s_i <= mean(s)``
    (Nanson, "weak" form) or ``s_i = min(s)`` (Baldwin).  If that would remove
    everyone (all scores equal) the remaining candidates tie.

    Returns
    -------
    numpy.ndarray
        Round in which each candidate was eliminated (larger = survived longer).
    """
    check_choice("rule", rule, ("nanson", "baldwin"))
    points = borda_points(_square("wins", wins), _square("ties", ties), rank_ties)
    return borda_elimination_batch(points[None], rule)[0]


def borda_points(wins: np.ndarray, ties: np.ndarray, rank_ties: str) -> np.ndarray:
    """``W_ij + c T_ij``, ``c = 1/2, 1, 0`` for ``rank_ties = "average", "min", "max"``
    (one election or a batch)."""
    share = {"average": 0.5, "min": 1.0, "max": 0.0}[check_choice("rank_ties", rank_ties,
                                                                   RANK_TIES)]
    return wins + share * ties


def majority_judgment_scores(grades: Any) -> np.ndarray:
    """Majority Judgment (Balinski & Laraki 2011) level scores.

    Candidates are compared by their lower median grade; on a tie one median
    grade is removed from each and the comparison repeats.  That equals the
    lexicographic order of each candidate's *median sequence* (its grades in
    order of removal), so candidates tie exactly when their grade multisets agree.

    Parameters
    ----------
    grades : array_like (L, V)
        Every candidate graded by every voter (no NaN).
    """
    g = np.asarray(grades, dtype=float)
    if g.ndim != 2 or g.shape[1] == 0:
        raise DataError(f"grades must have shape (candidates, voters), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise DataError("majority judgment needs every candidate graded by every voter (no NaN)")
    return majority_judgment_batch(g[None])[0]


# --------------------------------------------------------------------------------------
# Rules over ResponseData (questions as voters)
# --------------------------------------------------------------------------------------
@ranking_method
def borda(data: ResponseData) -> np.ndarray:
    """Borda count, ``s_l = sum_m (L - r_lm)`` with tie-averaged ranks (paper App. "Borda")."""
    return borda_scores(data.reductions.question_preferences)


@ranking_method
def copeland(data: ResponseData) -> np.ndarray:
    """Copeland, ``s_i = sum_j sign(W_ij - W_ji)`` (paper App. "Copeland")."""
    return copeland_scores(data.reductions.question_preferences)


@ranking_method
def win_rate(data: ResponseData) -> np.ndarray:
    """Share of decisive question-level pairwise outcomes won (paper App. "Win rate")."""
    return win_rate_scores(question_counts(data)[0])


@ranking_method
def minimax(
    data: ResponseData,
    *,
    variant: str = "margin",
    tie_policy: str = "half",
) -> np.ndarray:
    """Minimax (Simpson-Kramer), see :func:`minimax_scores` (paper App. "Minimax")."""
    return minimax_scores(preference_matrix(*question_counts(data), tie_policy), variant)


@ranking_method
def schulze(
    data: ResponseData,
    *,
    tie_policy: str = "half",
    strength: str = "winning_votes",
) -> tuple[np.ndarray, dict[str, Any]]:
    """Schulze beatpath: i above j when ``p_ij > p_ji`` (paper App. "Schulze").

    The paper uses winning-votes link strengths; ``strength="margin"`` gives the
    margin variant (e.g. Debian's elections).  Scores are levels of the beatpath
    order; ``details["paths"]`` holds the strongest-path matrix.
    """
    p = schulze_paths(preference_matrix(*question_counts(data), tie_policy), strength)
    return dag_levels(p > p.T), {"paths": p}


@ranking_method
def ranked_pairs(
    data: ResponseData,
    *,
    strength: str = "margin",
    tie_policy: str = "half",
) -> tuple[np.ndarray, dict[str, Any]]:
    """Ranked Pairs (Tideman), levels of the locked graph (paper App. "Ranked Pairs")."""
    locked = ranked_pairs_locked(preference_matrix(*question_counts(data), tie_policy), strength)
    return dag_levels(locked), {"locked": locked}


@ranking_method
def kemeny_young(
    data: ResponseData,
    *,
    tie_policy: str = "half",
    time_limit: float | None = None,
    tie_aware: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Exact Kemeny-Young ranking, see :func:`kemeny_young_scores` (paper App. "Kemeny--Young")."""
    return kemeny_young_scores(preference_matrix(*question_counts(data), tie_policy),
                               tie_aware=tie_aware, time_limit=time_limit)


@ranking_method
def nanson(data: ResponseData, *, rank_ties: str = "average") -> np.ndarray:
    """Nanson's rule: drop models at or below the mean Borda score each round."""
    return borda_elimination_scores(*question_counts(data), rule="nanson", rank_ties=rank_ties)


@ranking_method
def baldwin(data: ResponseData, *, rank_ties: str = "average") -> np.ndarray:
    """Baldwin's rule: drop the model(s) with the lowest Borda score each round."""
    return borda_elimination_scores(*question_counts(data), rule="baldwin", rank_ties=rank_ties)


@ranking_method
def majority_judgment(data: ResponseData) -> np.ndarray:
    """Majority Judgment with per-question grades ``u_lm`` (= ``k_lm / N``; paper App.)."""
    grades = data.reductions.cell_grades
    if np.isnan(grades).any():
        raise DataError(
            "majority judgment needs a grade for every model-question cell, but some cells "
            "have no observed trial"
        )
    return majority_judgment_scores(grades)
