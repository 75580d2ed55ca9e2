"""Numeric cores of the graph rules over a stack of problems (leading batch axis B).

Each function here solves B independent problems of the same size at once: stacked
LAPACK calls (``numpy.linalg.solve``, ``eig``, ``eigh`` loop over the batch with the
same routine per matrix), Grassmann–Taksar–Heyman elimination stepped in lockstep, and
reductions written as elementwise products summed along one axis.  The single-problem
functions of :mod:`bayesrank.baselines.graph` call these with a batch of one, so a
problem gives the same floating-point result whether it is solved alone or inside a
stack (``bayesrank.study.stack_graph`` relies on this to rank many draws at once).

Inputs are made C-contiguous first: a reduction's summation order depends on the memory
layout of the summed axis, and a contiguous copy gives every problem the same layout.
Validation and error messages stay in the single-problem functions; the batched ones
report per-problem feasibility as boolean masks instead of raising.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "alpharank_chain_batch",
    "connected_batch",
    "hodge_flow_batch",
    "hodge_potential_batch",
    "mix_batch",
    "pagerank_batch",
    "perron_batch",
    "rank_centrality_chain_batch",
    "serial_rank_batch",
    "spectral_matrix_batch",
    "stationary_batch",
    "strongly_connected_batch",
    "top_set_equilibrium_batch",
    "win_probabilities_batch",
]

#: Problems per block where temporaries grow like B L^2 m (alpha-Rank's population states).
BLOCK = 512


def _stacked(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=float)
    if a.ndim < 2:
        raise ValueError(f"expected a stack of problems (leading batch axis), got shape {a.shape}")
    return a


def _in_blocks(fn: Callable[[np.ndarray], np.ndarray], A: np.ndarray) -> np.ndarray:
    """``fn`` on blocks of :data:`BLOCK` problems of ``A``, the outputs concatenated."""
    if A.shape[0] <= BLOCK:
        return fn(A)
    return np.concatenate([fn(A[s:s + BLOCK]) for s in range(0, A.shape[0], BLOCK)])


def _diagonal_set(a: np.ndarray, values: np.ndarray | float) -> None:
    n = a.shape[-1]
    a[..., np.arange(n), np.arange(n)] = values


def mix_batch(matrix: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``matrix @ x`` of every problem, (B, L, L) x (B, L) -> (B, L), as a product-sum."""
    return (_stacked(matrix) * _stacked(x)[:, None, :]).sum(axis=2)


# -- graphs -------------------------------------------------------------------------------
def win_probabilities_batch(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tied-split win probabilities ``P_hat`` and comparison graphs of a stack (B, L, L).

    ``P_hat_ij = (W_ij + T_ij / 2) / (W_ij + W_ji + T_ij)`` on compared pairs, 1/2
    elsewhere (see :func:`bayesrank.baselines.graph.win_probabilities`).
    """
    wins, ties = _stacked(wins), _stacked(ties)
    total = wins + np.swapaxes(wins, 1, 2) + ties
    compared = total > 0
    _diagonal_set(compared, False)
    with np.errstate(invalid="ignore", divide="ignore"):
        P_hat = np.where(compared, (wins + 0.5 * ties) / np.where(compared, total, 1.0), 0.5)
    _diagonal_set(P_hat, 0.5)
    return P_hat, compared


def _reach(adjacency: np.ndarray) -> np.ndarray:
    """Nodes reachable from node 0 along directed edges ``adjacency[b, i, j]`` (i -> j)."""
    B, L, _ = adjacency.shape
    seen = np.zeros((B, L), dtype=bool)
    seen[:, 0] = True
    for _ in range(L - 1):
        grown = seen | (seen[:, :, None] & adjacency).any(axis=1)
        if np.array_equal(grown, seen):
            break
        seen = grown
    return seen


def connected_batch(edges: np.ndarray) -> np.ndarray:
    """Whether each undirected graph ``edges | edges^T`` (B, L, L) is connected, (B,)."""
    A = np.asarray(edges, dtype=bool)
    if A.shape[1] <= 1:
        return np.ones(A.shape[0], dtype=bool)
    return _reach(A | np.swapaxes(A, 1, 2)).all(axis=1)


def strongly_connected_batch(edges: np.ndarray) -> np.ndarray:
    """Whether each directed graph ``edges`` (B, L, L) is strongly connected, (B,).

    Strongly connected iff node 0 reaches every node and every node reaches node 0.
    """
    A = np.asarray(edges, dtype=bool)
    if A.shape[1] <= 1:
        return np.ones(A.shape[0], dtype=bool)
    return _reach(A).all(axis=1) & _reach(np.swapaxes(A, 1, 2)).all(axis=1)


# -- Markov chains, PageRank, Perron vectors ----------------------------------------------
def stationary_batch(P: np.ndarray) -> np.ndarray:
    """Stationary distributions of irreducible row-stochastic matrices (B, n, n) by GTH
    (see :func:`bayesrank.baselines.graph.stationary_distribution`), one elimination step
    for all problems at a time; irreducibility is the caller's to check."""
    A = np.array(_stacked(P))
    n = A.shape[1]
    _diagonal_set(A, 0.0)
    for k in range(n - 1, 0, -1):
        out = A[:, k, :k].sum(axis=1)
        A[:, :k, k] /= out[:, None]
        A[:, :k, :k] += A[:, :k, k, None] * A[:, k, None, :k]
    pi = np.zeros(A.shape[:2])
    pi[:, 0] = 1.0
    for k in range(1, n):
        pi[:, k] = (pi[:, :k] * A[:, :k, k]).sum(axis=1)
    return pi / pi.sum(axis=1, keepdims=True)


def pagerank_batch(adjacency: np.ndarray, damping: float, teleport: np.ndarray) -> np.ndarray:
    """PageRank of every weighted digraph (B, L, L) by one stacked linear solve of
    ``(I - d P) r = (1 - d) e``, ``teleport`` (L,) summing to 1 (see
    :func:`bayesrank.baselines.graph.pagerank_scores`)."""
    A = _stacked(adjacency)
    L = A.shape[1]
    e = np.asarray(teleport, dtype=float)
    out = A.sum(axis=2)
    dangling = out <= 0
    scaled = np.swapaxes(A, 1, 2) / np.where(dangling, 1.0, out)[:, None, :]
    P = np.where(dangling[:, None, :], e[None, :, None], scaled)
    rhs = np.broadcast_to((1.0 - damping) * e, (A.shape[0], L))[..., None]
    r = np.linalg.solve(np.eye(L) - damping * P, rhs)[..., 0]
    return r / r.sum(axis=1, keepdims=True)


def spectral_matrix_batch(P_hat: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """``W_ij = P_hat_ij`` on compared pairs and ``W_ii = sum_{j != i} W_ij``, (B, L, L)."""
    W = np.where(compared, _stacked(P_hat), 0.0)
    _diagonal_set(W, W.sum(axis=2))
    return W


def perron_batch(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Principal right eigenvectors (sum 1, clipped at 0) of non-negative matrices (B, L, L).

    Returns the vectors (B, L) and whether each spectral radius is a simple
    eigenvalue (its eigenvector, hence the ranking, is unique only then).
    """
    W = _stacked(W)
    B, L, _ = W.shape
    values, vectors = np.linalg.eig(W)
    order = np.argsort(-values.real, axis=1)
    rows = np.arange(B)
    top = values[rows, order[:, 0]].real
    simple = np.ones(B, dtype=bool)
    if L > 1:
        gap = np.abs(values[rows, order[:, 1]] - top)
        simple = ~(gap <= 1e-9 * np.maximum(np.abs(top), 1.0))
    v = np.ascontiguousarray(vectors[rows, :, order[:, 0]].real)
    v = v * np.sign(v.sum(axis=1))[:, None]
    v = np.clip(v, 0.0, None)
    return v / v.sum(axis=1, keepdims=True), simple


def rank_centrality_chain_batch(
    wins: np.ndarray, ties: np.ndarray, tie_handling: str, smoothing: float, teleport: float
) -> tuple[np.ndarray, np.ndarray]:
    """Rank Centrality transition matrices and comparison graphs, each (B, L, L)
    (the walk of :func:`bayesrank.baselines.graph.rank_centrality`)."""
    w = np.array(_stacked(wins))
    if tie_handling == "half":
        w += 0.5 * _stacked(ties)
    w += smoothing
    _diagonal_set(w, 0.0)
    wT = np.swapaxes(w, 1, 2)
    denom = w + wT
    edges = denom > 0
    L = w.shape[1]
    d_max = np.maximum(edges.sum(axis=2).max(axis=1), 1)  # 0 only for L == 1 (never walked)
    P = np.where(edges, wT / np.where(edges, denom, 1.0), 0.0) / d_max[:, None, None]
    _diagonal_set(P, 1.0 - P.sum(axis=2))
    if teleport > 0:
        P = (1.0 - teleport) * P + teleport / L
    return P, edges


def _log_fixation_block(A: np.ndarray, alpha: float, m: int) -> np.ndarray:
    """log rho[b, r, s]: fixation log-probability of one r-mutant among m - 1 s-residents.

    Fermi (logit) selection in a finite single population (Omidshafiei et al.,
    2019, Eq. for rho): with k mutants, the mutant's and resident's average
    payoffs are ``f_r(k) = ((k-1) A_rr + (m-k) A_rs) / (m-1)`` and
    ``f_s(k) = (k A_sr + (m-k-1) A_ss) / (m-1)``, and
    ``rho = 1 / (1 + sum_{l=1}^{m-1} prod_{k=1}^{l} exp(-alpha (f_r(k) - f_s(k))))``.
    """
    k = np.arange(1, m)[None, None, None, :]
    diag = np.diagonal(A, axis1=1, axis2=2)
    f_r = ((k - 1) * diag[:, :, None, None] + (m - k) * A[..., None]) / (m - 1)
    f_s = (k * np.swapaxes(A, 1, 2)[..., None] + (m - k - 1) * diag[:, None, :, None]) / (m - 1)
    log_terms = np.cumsum(-alpha * (f_r - f_s), axis=3)
    return -np.logaddexp(0.0, logsumexp(log_terms, axis=3))


def _log_abs_expm1(x: np.ndarray) -> np.ndarray:
    """``log |e^x - 1|`` without overflow (-inf at 0)."""
    with np.errstate(divide="ignore"):
        return np.where(x > 0, x, 0.0) + np.log(-np.expm1(-np.abs(x)))


def _log_fixation_constant_sum(A: np.ndarray, alpha: float, m: int) -> np.ndarray:
    """log rho of a constant-sum game (``A_rs + A_sr = 1``, ``A_rr = 1/2``) in closed form.

    There ``f_r(k) - f_s(k) = m (A_rs - 1/2) / (m - 1)`` for every k, so
    ``rho = (1 - e^{-u}) / (1 - e^{-m u})`` with ``u = alpha m (A_rs - A_sr) / (2 (m - 1))``
    (``1/m`` at u = 0): the paper's formula (App. alpha-Rank), evaluated in log space.
    """
    u = (alpha * m / (m - 1)) * (0.5 * (A - np.swapaxes(A, 1, 2)))
    with np.errstate(invalid="ignore"):  # -inf - (-inf) at u = 0, replaced
        return np.where(u == 0, -np.log(m), _log_abs_expm1(-u) - _log_abs_expm1(-m * u))


def alpharank_chain_batch(
    payoffs: np.ndarray, alpha: float, m: int, *, constant_sum: bool = False
) -> np.ndarray:
    """alpha-Rank transition matrices (B, L, L) of symmetric games ``payoffs`` (B, L, L) (the
    chain of :func:`bayesrank.baselines.graph.alpharank_scores`; off-diagonal zeros: the
    fixation probability underflowed; one model: the walk [[1]]).  ``constant_sum=True``
    uses the closed form of :func:`_log_fixation_constant_sum` instead of the sum over
    population states.
    """
    A = _stacked(payoffs)
    L = A.shape[1]
    if constant_sum:
        log_rho = _log_fixation_constant_sum(A, alpha, m)
    else:
        log_rho = _in_blocks(lambda a: _log_fixation_block(a, alpha, m), A)
    C = np.exp(np.swapaxes(log_rho, 1, 2)) / max(L - 1, 1)
    _diagonal_set(C, 0.0)
    _diagonal_set(C, 1.0 - C.sum(axis=2))
    return C


# -- Nash, SerialRank, HodgeRank ----------------------------------------------------------
def top_set_equilibrium_batch(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The equilibrium of antisymmetric games (B, L, L) whose best models dominate.

    When the models that never lose (``A_ij >= 0`` for all j) tie among themselves and
    beat every other model strictly, every equilibrium is supported on exactly them and
    the maximum-entropy one is uniform there (an all-zero game: uniform on all).
    Returns the mixtures (B, L) and whether this shortcut applies to each game.
    """
    A = _stacked(A)
    top = np.all(A >= 0, axis=2)
    both = top[:, :, None] & top[:, None, :]
    across = top[:, :, None] & ~top[:, None, :]
    ok = top.any(axis=1) & np.all((A == 0) | ~both, axis=(1, 2)) & np.all(
        (A > 0) | ~across, axis=(1, 2))
    x = np.where(top, 1.0, 0.0) / np.maximum(top.sum(axis=1), 1)[:, None]
    return x, ok


def _serial_block(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    L = C.shape[1]
    net = C.mean(axis=2)
    # stacked matmul calls BLAS once per matrix, with the same routine for any batch size
    S = 0.5 * (L + C @ np.swapaxes(C, 1, 2))  # (L 11^T + C C^T) / 2
    lap = -S
    _diagonal_set(lap, np.diagonal(lap, axis1=1, axis2=2) + S.sum(axis=2))
    values, vectors = np.linalg.eigh(lap)
    scale = np.maximum(1.0, np.abs(values).max(axis=1))
    v = np.ascontiguousarray(vectors[:, :, 1])
    unique = ~((values[:, 2] - values[:, 1] <= 1e-10 * scale) | (np.ptp(v, axis=1) <= 1e-12))
    upper = np.triu(np.ones((L, L), dtype=bool), 1)
    order = np.sign(v[:, :, None] - v[:, None, :])
    agree = (order[:, upper] * np.sign(C[:, upper])).sum(axis=1)
    weighted = (order * C)[:, upper].sum(axis=1)
    keep = (agree > 0) | ((agree == 0) & (weighted >= 0))
    scores = np.where(unique[:, None], np.where(keep[:, None], v, -v), net)
    return scores, unique


def serial_rank_batch(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SerialRank scores (B, L) and ``unique`` (B,) of skew-symmetric comparison matrices
    (B, L, L) (see :func:`bayesrank.baselines.graph.serial_rank_scores`)."""
    C = _stacked(C)
    L = C.shape[1]
    if L < 3:
        net = C.mean(axis=2)
        unique = (net[:, 0] != net[:, 1]) if L == 2 else np.zeros(C.shape[0], dtype=bool)
        return net, unique
    return _serial_block(C)


def hodge_flow_batch(
    wins: np.ndarray,
    total: np.ndarray,
    compared: np.ndarray,
    pairwise_stat: str,
    weight_method: str,
    epsilon: float,
) -> tuple[np.ndarray, np.ndarray]:
    """HodgeRank edge flows ``Y`` and weights ``w`` (B, L, L) from pairwise counts (those of
    :func:`bayesrank.baselines.graph.hodge_rank`; 0 off the compared pairs)."""
    W, total = _stacked(wins), _stacked(total)
    WT = np.swapaxes(W, 1, 2)
    if pairwise_stat == "binary":
        Y = np.where(compared, (WT - W) / np.where(compared, total, 1.0), 0.0)
    else:
        Y = np.where(compared, np.log((total - W + epsilon) / (total - WT + epsilon)), 0.0)
    weights = {"total": total, "decisive": W + WT, "uniform": compared.astype(float)}
    return Y, np.where(compared, weights[weight_method], 0.0)


def hodge_potential_batch(flow: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean-zero least-squares potentials (B, L) of edge flows on connected weighted graphs
    (:func:`bayesrank.baselines.graph.hodge_potential`): the bordered Laplacian systems
    ``[[Delta_0, 1], [1^T, 0]] [s; mu] = [-div Y; 0]`` in one stacked solve."""
    Y, w = _stacked(flow), np.array(_stacked(weights))
    B, L, _ = w.shape
    _diagonal_set(w, 0.0)
    bordered = np.zeros((B, L + 1, L + 1))
    bordered[:, :L, :L] = -w
    _diagonal_set(bordered[:, :L, :L], w.sum(axis=2))
    bordered[:, :L, L] = 1.0
    bordered[:, L, :L] = 1.0
    rhs = np.zeros((B, L + 1, 1))
    rhs[:, :L, 0] = -(w * Y).sum(axis=2)
    return np.linalg.solve(bordered, rhs)[:, :L, 0]
