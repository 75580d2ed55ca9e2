"""Graph, spectral and game-theoretic rankings on the pairwise counts (W, T).

Every rule here reads the pairwise win and tie counts ``W``, ``T`` from
:attr:`ResponseData.reductions` and the tied-split empirical win probability
(paper, App. "Graph and Spectral Methods")

.. math::
    \\widehat P_{i\\succ j} = \\frac{W_{ij} + \\tfrac12 T_{ij}}{W_{ij} + W_{ji} + T_{ij}},
    \\qquad \\widehat P_{i\\succ i} = \\tfrac12 .

The comparison graph has an edge {i, j} when the pair shared at least one
question-trial.  Models in different connected components were never compared,
not even indirectly, so every rule raises :class:`DisconnectedGraphError` for
a disconnected graph instead of inventing an order between components.

Where a rule is the fixed point of an iteration (PageRank, stationary
distributions, Perron vectors) it is solved in closed form (``solver="exact"``:
linear solve, Grassmann–Taksar–Heyman elimination or a dense eigensolver);
``solver="power"`` runs the paper's power iteration with ``max_iter``/``tol``.

The array-level functions (:func:`pagerank_scores`, :func:`stationary_distribution`,
:func:`nash_equilibrium`, ...) work on plain matrices of any graph or game; their numeric
cores are :mod:`bayesrank.baselines.graph_batch`'s, called here with a batch of one.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import scipy.linalg
from scipy.optimize import linprog, minimize

from bayesrank.baselines import graph_batch as gb
from bayesrank.baselines._optim import require_connected
from bayesrank.checks import check_choice, check_finite, check_in_interval, check_int
from bayesrank.data import ResponseData
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError
from bayesrank.ranking import ranking_method

__all__ = [
    "alpharank_options",
    "check_solver",
    "hodge_options",
    "nash_options",
    "pagerank_options",
    "rank_centrality_options",
    "win_probabilities",
    "zero_sum_game",
    "pagerank_scores",
    "stationary_distribution",
    "perron_vector",
    "alpharank_scores",
    "nash_equilibrium",
    "serial_rank_scores",
    "hodge_potential",
    "pagerank",
    "spectral",
    "rank_centrality",
    "alpharank",
    "nash",
    "serial_rank",
    "hodge_rank",
]

Solver = Literal["exact", "power"]


# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------
def win_probabilities(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tied-split win probabilities and the comparison graph.

    Parameters
    ----------
    wins, ties : numpy.ndarray, shape (L, L)
        ``W_ij`` (trials where i beats j) and ``T_ij`` (ties).

    Returns
    -------
    P_hat : numpy.ndarray, shape (L, L)
        ``(W_ij + T_ij / 2) / (W_ij + W_ji + T_ij)``; 1/2 on the diagonal and for
        pairs never compared (so that ``P_hat + P_hat.T == 1`` everywhere).
    compared : numpy.ndarray of bool, shape (L, L)
        Off-diagonal pairs with at least one shared comparison (graph edges).
    """
    P_hat, compared = gb.win_probabilities_batch(np.asarray(wins)[None], np.asarray(ties)[None])
    return P_hat[0], compared[0]


def _pairwise(data: ResponseData, what: str) -> tuple[np.ndarray, np.ndarray]:
    red = data.reductions
    P_hat, compared = win_probabilities(red.wins, red.ties)
    require_connected(compared, what, labels=data.models)
    return P_hat, compared


# Option checks of each rule, shared with its stacked form (bayesrank.study.stack_graph):
# each raises the rule's DataError and returns the options the rule computes with.
def check_solver(solver: str, max_iter: int, tol: float) -> bool:
    """Check the iteration options; True for the closed-form solver (``"exact"``)."""
    check_choice("solver", solver, ("exact", "power"))
    check_int("max_iter", max_iter)
    check_finite("tol", tol, positive=True)
    return solver == "exact"


def pagerank_options(damping: float, solver: str, max_iter: int, tol: float) -> float:
    """The checked damping of :func:`pagerank_scores` (and its solver options)."""
    damping = check_in_interval("damping", damping, 0.0, 1.0, closed="neither")
    check_solver(solver, max_iter, tol)
    return damping


def rank_centrality_options(tie_handling: str, smoothing: float, teleport: float,
                            solver: str, max_iter: int, tol: float) -> tuple[float, float]:
    """The checked ``(smoothing, teleport)`` of :func:`rank_centrality`."""
    check_choice("tie_handling", tie_handling, ("ignore", "half"))
    smoothing = check_finite("smoothing", smoothing, nonnegative=True)
    teleport = check_in_interval("teleport", teleport, 0.0, 1.0, closed="left")
    check_solver(solver, max_iter, tol)
    return smoothing, teleport


def alpharank_options(alpha: float, population_size: int, solver: str, max_iter: int,
                      tol: float) -> tuple[float, int]:
    """The checked ``(alpha, population_size)`` of :func:`alpharank_scores`."""
    alpha = check_finite("alpha", alpha, nonnegative=True)
    population_size = check_int("population_size", population_size, minimum=2)
    check_solver(solver, max_iter, tol)
    return alpha, population_size


def nash_options(score_type: str, solver: str, n_iter: int, temperature: float
                 ) -> tuple[int, float]:
    """The checked ``(n_iter, temperature)`` of :func:`nash`."""
    check_choice("score_type", score_type,
                 ("vs_equilibrium", "advantage_vs_equilibrium", "equilibrium"))
    check_choice("solver", solver, ("lp", "fictitious_play"))
    return check_int("n_iter", n_iter), check_finite("temperature", temperature, positive=True)


def hodge_options(pairwise_stat: str, weight_method: str, epsilon: float) -> float:
    """The checked ``epsilon`` of :func:`hodge_rank`."""
    check_choice("pairwise_stat", pairwise_stat, ("binary", "log_odds"))
    check_choice("weight_method", weight_method, ("total", "decisive", "uniform"))
    return check_finite("epsilon", epsilon, positive=True)


def _power(step, x0: np.ndarray, max_iter: int, tol: float) -> np.ndarray:
    """Iterate ``x <- step(x)`` (renormalised to sum 1) until the L1 change is below tol."""
    x = x0
    for _ in range(int(max_iter)):
        new = step(x)
        new = new / new.sum()
        done = np.abs(new - x).sum() < tol
        x = new
        if done:
            break
    return x


# ---------------------------------------------------------------------------------------
# Markov chains and Perron vectors (array level)
# ---------------------------------------------------------------------------------------
def stationary_distribution(P: np.ndarray) -> np.ndarray:
    """Stationary distribution ``pi P = pi`` of an irreducible row-stochastic matrix.

    Uses Grassmann–Taksar–Heyman state reduction, which involves no
    subtractions and therefore keeps full relative accuracy even for states
    with tiny stationary mass (alpha-Rank chains routinely have transition
    probabilities around 1e-11).  Only off-diagonal entries are read.

    Raises
    ------
    NotIdentifiedError
        If the chain is reducible (no unique stationary distribution).
    """
    A = np.array(P, dtype=float)
    n = A.shape[0]
    if A.ndim != 2 or A.shape != (n, n):
        raise DataError(f"transition matrix must be square, got shape {A.shape}")
    np.fill_diagonal(A, 0.0)
    if np.any(A < 0) or not np.all(np.isfinite(A)):
        raise DataError("transition probabilities must be finite and non-negative")
    if not gb.strongly_connected_batch(A[None] > 0)[0]:
        raise NotIdentifiedError(
            "the Markov chain is reducible (its transition graph is not strongly "
            "connected), so its stationary distribution is not unique"
        )
    return gb.stationary_batch(A[None])[0]


def _stationary(P: np.ndarray, solver: Solver, max_iter: int, tol: float) -> np.ndarray:
    if solver == "exact":
        return stationary_distribution(P)
    return _power(lambda pi: pi @ P, np.full(len(P), 1.0 / len(P)), max_iter, tol)


def perron_vector(W: np.ndarray) -> np.ndarray:
    """Principal right eigenvector ``v >= 0`` of a non-negative matrix, with sum(v) = 1.

    Raises
    ------
    NotIdentifiedError
        If the spectral radius is not a simple eigenvalue (the principal
        eigenvector, and hence the ranking, is not unique).
    """
    v, simple = gb.perron_batch(np.asarray(W, dtype=float)[None])
    if not simple[0]:
        raise NotIdentifiedError(
            "the principal eigenvalue is not simple, so the spectral ranking is not unique"
        )
    return v[0]


# ---------------------------------------------------------------------------------------
# PageRank
# ---------------------------------------------------------------------------------------
def pagerank_scores(
    adjacency: np.ndarray,
    damping: float = 0.85,
    *,
    teleport: np.ndarray | None = None,
    solver: Solver = "exact",
    max_iter: int = 100,
    tol: float = 1e-12,
) -> np.ndarray:
    """PageRank of a weighted directed graph.

    ``adjacency[j, i]`` is the weight of the link j -> i (row = source).  The
    column-stochastic transition matrix is ``P_ij = a_ji / sum_k a_jk``; a node
    without out-links (dangling) jumps according to ``teleport``.  The scores
    solve

    .. math:: r = d\\,P\\,r + (1 - d)\\,e,\\qquad \\sum_i r_i = 1,

    exactly by a linear solve of ``(I - d P) r = (1 - d) e`` (``solver="exact"``)
    or by ``max_iter`` power iterations.  Page et al. (1999); same conventions
    as :func:`networkx.pagerank` (uniform teleport by default).
    """
    A = np.asarray(adjacency, dtype=float)
    L = A.shape[0]
    if A.shape != (L, L) or np.any(A < 0) or not np.all(np.isfinite(A)):
        raise DataError("adjacency must be a square matrix of finite non-negative weights")
    damping = pagerank_options(damping, solver, max_iter, tol)
    if teleport is None:
        e = np.full(L, 1.0 / L)
    else:
        e = np.asarray(teleport, dtype=float)
        if e.shape != (L,) or np.any(e < 0) or not np.isfinite(e).all() or e.sum() <= 0:
            raise DataError(f"teleport must be {L} non-negative weights with a positive sum")
        e = e / e.sum()
    if solver == "exact":
        return gb.pagerank_batch(A[None], damping, e)[0]
    out = A.sum(axis=1)
    dangling = out <= 0
    P = np.where(dangling[None, :], e[:, None], A.T / np.where(dangling, 1.0, out)[None, :])
    r = _power(lambda r: damping * (P @ r) + (1.0 - damping) * e, e, max_iter, tol)
    return r / r.sum()


@ranking_method
def pagerank(
    data: ResponseData,
    *,
    damping: float = 0.85,
    max_iter: int = 100,
    tol: float = 1e-12,
    solver: Solver = "exact",
) -> np.ndarray:
    """PageRank on the win-probability graph ("losers link to winners").

    The link j -> i has weight ``P_hat[i, j]`` for every compared pair, so
    ``P_ij = P_hat[i, j] / sum_{k != j} P_hat[k, j]``; PageRank with damping
    ``d`` (paper App. "PageRank"; Page et al., 1999).  Solved exactly unless
    ``solver="power"`` (then ``max_iter``, ``tol`` apply).
    """
    P_hat, compared = _pairwise(data, "pagerank")
    adjacency = np.where(compared, P_hat, 0.0).T  # row j (loser) -> column i (winner)
    return pagerank_scores(adjacency, damping, solver=solver, max_iter=max_iter, tol=tol)


# ---------------------------------------------------------------------------------------
# Spectral (eigenvector centrality) and Rank Centrality
# ---------------------------------------------------------------------------------------
@ranking_method
def spectral(
    data: ResponseData,
    *,
    max_iter: int = 10_000,
    tol: float = 1e-12,
    solver: Solver = "exact",
) -> np.ndarray:
    """Eigenvector centrality of the win-probability matrix.

    ``W_ij = P_hat[i, j]`` for compared pairs, ``W_ii = sum_{j != i} W_ij``
    (a self-loop making W diagonally dominant); the score is the principal
    right eigenvector normalised to sum 1 (paper App. "Spectral").
    """
    check_solver(solver, max_iter, tol)
    P_hat, compared = _pairwise(data, "spectral")
    W = gb.spectral_matrix_batch(P_hat[None], compared[None])[0]
    if solver == "exact":
        return perron_vector(W)
    return _power(lambda v: W @ v, np.full(len(W), 1.0 / len(W)), max_iter, tol)


@ranking_method
def rank_centrality(
    data: ResponseData,
    *,
    tie_handling: Literal["ignore", "half"] = "half",
    smoothing: float = 0.0,
    teleport: float = 0.0,
    max_iter: int = 10_000,
    tol: float = 1e-12,
    solver: Solver = "exact",
) -> np.ndarray:
    """Rank Centrality (Negahban, Oh & Shah, 2017): stationary mass of a comparison walk.

    With win counts ``w_ij = W_ij`` (``tie_handling="ignore"``) or
    ``W_ij + T_ij / 2`` (``"half"``), plus ``smoothing`` pseudo-counts, the walk
    moves from i to j with probability ``P_ij = w_ji / (w_ij + w_ji) / d_max``
    (``d_max`` = largest degree of the comparison graph) and stays otherwise;
    ``teleport`` mixes in a uniform jump.  Scores are the stationary
    distribution (paper App. "Rank Centrality").

    Raises
    ------
    DisconnectedGraphError
        If, without smoothing or teleport, some model cannot reach every other
        model through "beaten by" steps (e.g. a model that never loses a
        decisive comparison with ``tie_handling="ignore"``): the chain is then
        reducible and its stationary distribution does not rank all models.
    """
    smoothing, teleport = rank_centrality_options(tie_handling, smoothing, teleport, solver,
                                                  max_iter, tol)
    red = data.reductions
    P, edges = gb.rank_centrality_chain_batch(
        red.wins[None], red.ties[None], tie_handling, smoothing, teleport)
    require_connected(edges[0], f"rank_centrality(tie_handling={tie_handling!r})",
                      labels=data.models)
    if teleport == 0 and not gb.strongly_connected_batch(P > 0)[0]:
        raise DisconnectedGraphError(
            f"rank_centrality(tie_handling={tie_handling!r}): the 'beaten by' graph is not "
            "strongly connected (some models never lose, or never win, against the rest), "
            "so the random walk is reducible; use tie_handling='half', smoothing>0 or teleport>0"
        )
    return _stationary(P[0], solver, max_iter, tol)


# ---------------------------------------------------------------------------------------
# alpha-Rank
# ---------------------------------------------------------------------------------------
def alpharank_scores(
    payoffs: np.ndarray,
    alpha: float = 1.0,
    population_size: int = 50,
    *,
    solver: Solver = "exact",
    max_iter: int = 100_000,
    tol: float = 1e-12,
    constant_sum: bool = False,
) -> np.ndarray:
    """Single-population alpha-Rank of a symmetric game.

    ``payoffs[r, s]`` is the payoff of strategy r against s.  The Markov chain
    over strategies moves from resident s to mutant r with probability
    ``C_sr = rho_{r,s} / (L - 1)`` (fixation probability under Fermi selection
    with intensity ``alpha`` in a population of ``population_size``); the scores
    are its stationary distribution (Omidshafiei et al., 2019).  For a
    constant-sum game with payoff sum 1 this reduces to the paper's
    ``rho = (1 - e^{-u}) / (1 - e^{-m u})``, ``u = alpha m/(m-1) (P_hat - 1/2)``;
    ``constant_sum=True`` (caller guarantees ``A + A^T = 1``) evaluates that form.
    """
    A = np.asarray(payoffs, dtype=float)
    L = A.shape[0]
    if A.shape != (L, L) or not np.all(np.isfinite(A)):
        raise DataError("payoffs must be a finite square matrix")
    alpha, population_size = alpharank_options(alpha, population_size, solver, max_iter, tol)
    if constant_sum and not np.allclose(A + A.T, 1.0, rtol=0.0, atol=1e-12):
        raise DataError("constant_sum=True needs payoffs with payoffs + payoffs.T == 1")
    C = gb.alpharank_chain_batch(A[None], alpha, population_size, constant_sum=constant_sum)[0]
    if not np.all(C[~np.eye(L, dtype=bool)] > 0):
        raise NotIdentifiedError(
            f"alpha-Rank: fixation probabilities underflow at alpha={alpha}; the chain is "
            "numerically reducible. Lower alpha or the population size."
        )
    return _stationary(C, solver, max_iter, tol)


@ranking_method
def alpharank(
    data: ResponseData,
    *,
    alpha: float = 1.0,
    population_size: int = 50,
    max_iter: int = 100_000,
    tol: float = 1e-12,
    solver: Solver = "exact",
) -> np.ndarray:
    """alpha-Rank on the constant-sum meta-game with payoffs ``P_hat`` (paper App. alpha-Rank).

    The game is constant-sum (``P_hat + P_hat^T = 1``), so the fixation probabilities
    take the paper's closed form.  Scores are stationary probabilities; weak models can
    carry very little mass, which :func:`stationary_distribution` still resolves
    accurately.
    """
    P_hat, _ = _pairwise(data, "alpharank")
    return alpharank_scores(P_hat, alpha, population_size, solver=solver, max_iter=max_iter,
                            tol=tol, constant_sum=True)


# ---------------------------------------------------------------------------------------
# Nash equilibrium of the zero-sum meta-game
# ---------------------------------------------------------------------------------------
def _equilibrium_cone(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One equilibrium of the symmetric zero-sum game A and the largest equilibrium support.

    For antisymmetric A the value is 0 and the equilibria are
    ``{x in simplex : A x <= 0}``.  One HiGHS linear program over the cone
    ``{y >= 0 : A y <= 0}`` maximises ``sum_i min(y_i, 1)``; since the cone is closed
    under addition and scaling, the optimum has ``y_i >= 1`` exactly on the
    union S of the supports of all equilibria.
    """
    L = A.shape[0]
    # variables (y, z): maximise sum z  s.t.  z <= y,  A y <= 0,  sum y <= bound,  0 <= z <= 1
    eye = np.eye(L)
    res = linprog(
        c=np.r_[np.zeros(L), -np.ones(L)],
        A_ub=np.block([[-eye, eye], [A, np.zeros((L, L))], [np.ones((1, L)), np.zeros((1, L))]]),
        b_ub=np.r_[np.zeros(2 * L), 1e8],
        bounds=[(0, None)] * L + [(0, 1)] * L,
        method="highs",
    )
    if res.status != 0:
        raise NotIdentifiedError(f"Nash linear program failed: {res.message}")
    y, z = np.clip(res.x[:L], 0.0, None), res.x[L:]
    return y / y.sum(), z > 0.5


def _max_entropy_equilibrium(A: np.ndarray) -> np.ndarray:
    """Maximum-entropy equilibrium of the symmetric zero-sum game A (antisymmetric).

    Every equilibrium x satisfies ``(A x)_i = 0`` on the maximal support S
    (for equilibria x, y: x^T A y = 0, and A x <= 0), so the equilibria are
    the points of ``{x_S >= 0 : A_SS x_S = 0, sum x_S = 1, A_{S^c S} x_S <= 0}``.
    Generically that set is a single point, solved exactly; otherwise the
    entropy is maximised over its (low-dimensional) affine parameterisation.
    """
    # Shortcut: models that never lose (A_ij >= 0), tie among themselves and beat all
    # others strictly are exactly the support of every equilibrium: x uniform on them.
    top_x, dominated = gb.top_set_equilibrium_batch(A[None])
    if dominated[0]:
        return top_x[0]
    x = np.zeros(A.shape[0])
    x0, S = _equilibrium_cone(A)
    A_SS, A_out = A[np.ix_(S, S)], A[np.ix_(~S, S)]
    system = np.vstack([A_SS, np.ones((1, S.sum()))])
    rhs = np.r_[np.zeros(S.sum()), 1.0]
    basis = scipy.linalg.null_space(system, rcond=1e-10)
    if basis.shape[1] == 0:
        x[S] = scipy.linalg.lstsq(system, rhs)[0]
        return np.clip(x, 0.0, None) / np.clip(x, 0.0, None).sum()
    uniform = np.full(S.sum(), 1.0 / S.sum())
    if np.allclose(A_SS @ uniform, 0.0, atol=1e-12) and np.all(A_out @ uniform <= 1e-12):
        x[S] = uniform  # uniform on S is the entropy maximiser of the whole face
        return x
    start = x0[S]

    def neg_entropy(t):
        xs = np.clip(start + basis @ t, 1e-300, None)
        return float(np.sum(xs * np.log(xs))), basis.T @ (np.log(xs) + 1.0)

    res = minimize(
        neg_entropy,
        np.zeros(basis.shape[1]),
        jac=True,
        method="SLSQP",
        constraints=[
            {"type": "ineq", "fun": lambda t: start + basis @ t, "jac": lambda t: basis},
            {
                "type": "ineq",
                "fun": lambda t: -(A_out @ (start + basis @ t)),
                "jac": lambda t: -(A_out @ basis),
            },
        ],
        options={"maxiter": 500, "ftol": 1e-14},
    )
    xs = np.clip(start + basis @ res.x, 0.0, None) if res.success else start
    x[S] = xs / xs.sum()
    return x


def nash_equilibrium(
    payoff: np.ndarray, *, selection: Literal["max_entropy", "lp"] = "max_entropy"
) -> np.ndarray:
    """Equilibrium mixture of a symmetric zero-sum game.

    Parameters
    ----------
    payoff : numpy.ndarray, shape (L, L)
        Antisymmetric payoff ``A`` (``A_ij`` = payoff of i against j, ``A = -A^T``);
        the game value is 0 and the equilibria (maximin strategies) are
        ``{x in simplex : A x <= 0}``, a polytope.
    selection : {"max_entropy", "lp"}
        ``"max_entropy"`` returns its unique maximum-entropy point (Balduzzi
        et al., 2018, "Nash averaging": invariant to relabelling and to
        duplicated models); ``"lp"`` returns the equilibrium found by a single
        HiGHS linear program (not unique in degenerate games).
    """
    A = np.asarray(payoff, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not np.all(np.isfinite(A)):
        raise DataError("payoff must be a finite square matrix")
    if not np.allclose(A, -A.T, atol=1e-12):
        raise DataError("payoff must be antisymmetric (a symmetric zero-sum game)")
    check_choice("selection", selection, ("max_entropy", "lp"))
    L = A.shape[0]
    if np.all(A == 0):
        return np.full(L, 1.0 / L)
    if selection == "lp":
        return _equilibrium_cone(A)[0]
    return _max_entropy_equilibrium(A)


def zero_sum_game(P_hat: np.ndarray) -> np.ndarray:
    """``A = 2 P_hat - 1`` with a zero diagonal, of one matrix or a batch (..., L, L)."""
    A = 2.0 * P_hat - 1.0
    A[..., np.eye(A.shape[-1], dtype=bool)] = 0.0
    return A


def _smooth_fictitious_play(A: np.ndarray, n_iter: int, temperature: float) -> np.ndarray:
    """Average of logit (softmax) best responses to the running average opponent."""
    L = A.shape[0]
    avg = np.full(L, 1.0 / L)
    for t in range(1, int(n_iter) + 1):
        u = A @ avg / temperature
        br = np.exp(u - u.max())
        avg += (br / br.sum() - avg) / (t + 1)
    return avg


@ranking_method
def nash(
    data: ResponseData,
    *,
    n_iter: int = 100,
    temperature: float = 0.1,
    solver: Literal["lp", "fictitious_play"] = "lp",
    score_type: Literal["vs_equilibrium", "advantage_vs_equilibrium", "equilibrium"] = (
        "vs_equilibrium"
    ),
    return_equilibrium: bool = False,
    selection: Literal["max_entropy", "lp"] = "max_entropy",
) -> np.ndarray | tuple[np.ndarray, dict]:
    """Nash averaging on the zero-sum meta-game ``A = 2 P_hat - 1`` (paper App. Nash).

    The equilibrium mixture x is a maximin strategy of A.  ``solver="lp"``
    solves the linear program and, with ``selection="max_entropy"``, returns
    the unique maximum-entropy equilibrium (Balduzzi et al., 2018);
    ``solver="fictitious_play"`` approximates it with ``n_iter`` rounds of
    smooth fictitious play at ``temperature`` (these two arguments are used by
    that solver only).  Scores:

    - ``"vs_equilibrium"``: ``s_i = sum_j P_hat[i, j] x_j`` (expected win rate);
    - ``"advantage_vs_equilibrium"``: ``(A x)_i = 2 s_i - 1`` (same order);
    - ``"equilibrium"``: x itself.

    ``return_equilibrium=True`` adds ``details["equilibrium"]`` and ``["value"]``.
    """
    n_iter, temperature = nash_options(score_type, solver, n_iter, temperature)
    P_hat, _ = _pairwise(data, "nash")
    A = zero_sum_game(P_hat)
    if solver == "lp":
        x = nash_equilibrium(A, selection=selection)
    else:
        x = _smooth_fictitious_play(A, n_iter, temperature)
    value = float(np.min(A.T @ x))  # payoff x guarantees; 0 at an exact equilibrium
    scores = {"vs_equilibrium": gb.mix_batch(P_hat[None], x[None])[0],
              "advantage_vs_equilibrium": gb.mix_batch(A[None], x[None])[0], "equilibrium": x}
    details = {"equilibrium": x, "value": value} if return_equilibrium else {}
    return scores[score_type], details


# ---------------------------------------------------------------------------------------
# SerialRank
# ---------------------------------------------------------------------------------------
def serial_rank_scores(C: np.ndarray) -> tuple[np.ndarray, bool]:
    """SerialRank (Fogel, d'Aspremont & Vojnovic, 2016) of a skew-symmetric comparison matrix.

    ``S = (L 11^T + C C^T) / 2``, ``L_S = diag(S 1) - S``; the scores are the
    Fiedler vector of ``L_S`` (eigenvector of the second-smallest eigenvalue),
    oriented to agree with the most comparisons (``sign(v_i - v_j) = sign(C_ij)``;
    ties broken by the |C|-weighted agreement).

    Returns
    -------
    scores : numpy.ndarray, shape (L,)
    unique : bool
        False when the Fiedler eigenvalue is repeated (or the vector is
        constant): the seriation is then not identified and the scores fall
        back to the net comparison ``mean_j C_ij``.
    """
    scores, unique = gb.serial_rank_batch(np.asarray(C, dtype=float)[None])
    return scores[0], bool(unique[0])


@ranking_method
def serial_rank(
    data: ResponseData, *, comparison: Literal["prob_diff", "sign"] = "prob_diff"
) -> tuple[np.ndarray, dict]:
    """SerialRank on ``C_ij = (W_ij - W_ji) / (W_ij + W_ji + T_ij)`` or its sign.

    Paper App. "SerialRank".  ``details["fiedler_unique"]`` is False when the
    seriation is not identified (repeated Fiedler eigenvalue); the scores are
    then the mean comparison ``mean_j C_ij`` (for complete binary data the
    same order as mean accuracy).
    """
    check_choice("comparison", comparison, ("prob_diff", "sign"))
    P_hat, _ = _pairwise(data, "serial_rank")
    C = zero_sum_game(P_hat)  # = (W_ij - W_ji) / total on compared pairs, 0 otherwise
    scores, unique = serial_rank_scores(np.sign(C) if comparison == "sign" else C)
    return scores, {"fiedler_unique": unique}


# ---------------------------------------------------------------------------------------
# HodgeRank
# ---------------------------------------------------------------------------------------
def hodge_potential(flow: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, dict]:
    """Weighted least-squares potential of a skew-symmetric edge flow (HodgeRank).

    Solves ``min_s sum_{i<j} w_ij ((s_j - s_i) - Y_ij)^2`` (Jiang, Lim, Yao & Ye,
    2011), i.e. the graph-Laplacian system ``Delta_0 s = -div Y`` with
    ``(div Y)_i = sum_j w_ij Y_ij``; the minimum-norm (mean-zero) solution is
    returned.  A flow that is exactly a gradient, ``Y_ij = s_j - s_i``, is
    recovered exactly.

    Returns
    -------
    scores : numpy.ndarray, shape (L,)
        Potentials, mean zero (higher = better).
    diagnostics : dict
        ``residual_l2`` = ||Y - grad s||_w over edges i<j and
        ``relative_residual_l2`` (its share of ||Y||_w; 0 = perfectly consistent).

    Raises
    ------
    DisconnectedGraphError
        If the graph of positive weights is disconnected.
    """
    Y = np.asarray(flow, dtype=float)
    w = np.asarray(weights, dtype=float)
    L = Y.shape[0]
    if Y.shape != (L, L) or w.shape != (L, L):
        raise DataError("flow and weights must be square matrices of the same shape")
    if not np.allclose(Y, -Y.T) or not np.allclose(w, w.T) or np.any(w < 0):
        raise DataError("flow must be skew-symmetric and weights symmetric non-negative")
    w = w.copy()
    np.fill_diagonal(w, 0.0)
    edges = w > 0
    require_connected(edges, "hodge_rank (weighted graph)")
    # Connected graph: the Laplacian has a one-dimensional kernel (constants);
    # pinning the mean to zero gives a non-singular bordered system.
    s = gb.hodge_potential_batch(Y[None], w[None])[0]
    upper = np.triu(edges, 1)
    resid = (Y - (s[None, :] - s[:, None]))[upper]
    total = float(np.sqrt(np.sum(w[upper] * Y[upper] ** 2)))
    res = float(np.sqrt(np.sum(w[upper] * resid**2)))
    return s, {"residual_l2": res, "relative_residual_l2": res / total if total > 0 else 0.0}


@ranking_method
def hodge_rank(
    data: ResponseData,
    *,
    pairwise_stat: Literal["binary", "log_odds"] = "binary",
    weight_method: Literal["total", "decisive", "uniform"] = "total",
    epsilon: float = 0.5,
    return_diagnostics: bool = False,
) -> tuple[np.ndarray, dict]:
    """HodgeRank: least-squares potential of the pairwise edge flow (paper App. HodgeRank).

    Flows (Jiang et al., 2011, Sec. 2.2.1):

    - ``"binary"``: ``Y_ij = P_hat[j, i] - P_hat[i, j] = (W_ji - W_ij) / total_ij``;
    - ``"log_odds"``: ``Y_ij = log((total - W_ij + eps) / (total - W_ji + eps))``,
      the log-ratio of Pr{j >= i} to Pr{i >= j} with ``epsilon`` smoothing.

    Edge weights: ``"total"`` comparisons (W_ij + W_ji + T_ij), ``"decisive"``
    (W_ij + W_ji) or ``"uniform"`` (1 per compared pair).
    ``return_diagnostics=True`` adds the weighted residual norms to ``details``.
    """
    epsilon = hodge_options(pairwise_stat, weight_method, epsilon)
    red = data.reductions
    _, compared = _pairwise(data, "hodge_rank")
    Y, w = gb.hodge_flow_batch(red.wins[None], red.comparisons[None], compared[None],
                               pairwise_stat, weight_method, epsilon)
    try:
        scores, diagnostics = hodge_potential(Y[0], w[0])
    except DisconnectedGraphError:
        raise DisconnectedGraphError(
            f"hodge_rank(weight_method={weight_method!r}): the graph of positive edge weights "
            "is disconnected (e.g. pairs with only ties get weight 0 under 'decisive'), so "
            "the potentials of its components are not comparable"
        ) from None
    return scores, (diagnostics if return_diagnostics else {})
