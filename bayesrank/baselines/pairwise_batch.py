"""Batched solvers of the paired-comparison fits: D independent problems in lockstep.

The per-problem fits of :mod:`~bayesrank.baselines.paired` (Bradley–Terry, Davidson,
Rao–Kupper) and Hunter's MM for Plackett–Luce (:mod:`~bayesrank.baselines.luce`) run here
on a leading batch axis: ``W``, ``T`` of shape (D, L, L).  The single-problem functions
call these solvers with D = 1, so both paths do the same floating-point operations on
every problem and give bit-identical estimates.  That needs three things:

- every problem keeps its own state: damped Newton (:func:`newton_batch`) and the MM loop
  (:func:`pl_mm_batch`) carry a mask of unfinished problems, and each problem takes
  exactly the steps, step halvings and stopping decision it would take alone;
- every reduction runs along the last, contiguous axis of an array whose per-problem
  layout does not depend on D (numpy sums each row alone), and linear solves go through
  ``numpy.linalg`` whose gufuncs call LAPACK once per matrix;
- pairs are dense: all ``L (L - 1) / 2`` pairs ``i < j`` of every problem, unmet pairs
  with zero counts (they add exact zeros).

Identification (strong connectivity of the beat graph) is checked by the callers (for a
batch: :func:`~bayesrank.baselines.graph_batch.strongly_connected_batch`, imported here as
``strongly_connected``); :func:`~bayesrank.ranking.exchangeable_pairs` /
:func:`average_exchangeable` put exactly tied models on exactly equal scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from bayesrank.baselines._optim import GTOL
from bayesrank.baselines.graph_batch import strongly_connected_batch as strongly_connected

__all__ = [
    "PairBatch",
    "average_exchangeable",
    "bt_fit_batch",
    "btl_fit_batch",
    "davidson_fit_batch",
    "newton_batch",
    "pair_fit_batch",
    "pl_mm_batch",
    "rao_kupper_fit_batch",
    "strongly_connected",
]

#: ``objective(x, rows)`` -> (f (k,), gradient (k, n), Hessian (k, n, n)) of problems ``rows``.
BatchObjective = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


# -- damped Newton in lockstep -------------------------------------------------------------------
def _solve_each(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``H_k^{-1} g_k`` for every problem; (solution, solved) with singular ones unsolved."""
    try:
        return np.linalg.solve(H, g[..., None])[..., 0], np.ones(len(g), bool)
    except np.linalg.LinAlgError:  # one singular matrix fails the gufunc: solve one by one
        out = np.zeros_like(g)
        ok = np.ones(len(g), bool)
        for k in range(len(g)):
            try:
                out[k] = np.linalg.solve(H[k:k + 1], g[k:k + 1, :, None])[0, :, 0]
            except np.linalg.LinAlgError:
                ok[k] = False
        return out, ok


def newton_step_batch(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Newton directions ``-H_k^{-1} g_k``; where that is no descent direction (or ``H_k`` is
    singular) the eigenvalues of ``H_k`` are replaced by their absolute values."""
    sol, ok = _solve_each(H, g)
    step = -sol
    bad = ~ok | ~(np.sum(g * step, axis=-1) < 0)
    if bad.any():
        vals, vecs = np.linalg.eigh(H[bad])
        floor = 1e-8 * np.maximum(1.0, np.abs(vals).max(axis=-1, keepdims=True))
        vt = np.ascontiguousarray(np.swapaxes(vecs, -1, -2))
        coef = np.sum(vt * g[bad][:, None, :], axis=-1) / np.maximum(np.abs(vals), floor)
        step[bad] = -np.sum(vecs * coef[:, None, :], axis=-1)
    return step


def newton_batch(
    objective: BatchObjective,
    x0: np.ndarray,
    max_iter: int,
    gtol: float = GTOL,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise D smooth convex objectives, each by :func:`bayesrank.baselines._optim.newton`'s
    iteration on its own (its stopping test, Armijo halving and give-up step); only
    unfinished problems are evaluated.

    Returns
    -------
    x : (D, n) solutions
    stalled : (D,) bool
        Problems that used all ``max_iter`` iterations and still have
        ``max |gradient| > 1e-7`` (the single-problem solver warns for them).
    """
    x = np.array(x0, dtype=float)
    D = x.shape[0]
    f, g, H = objective(x, np.arange(D))
    f, g, H = f.copy(), g.copy(), H.copy()
    active = np.arange(D)
    for _ in range(max_iter):
        active = active[np.max(np.abs(g[active]), axis=-1, initial=0.0) > gtol]
        if active.size == 0:
            break
        step = newton_step_batch(H[active], g[active])
        slope = np.sum(g[active] * step, axis=-1)
        f_old = f[active]
        noise = 1e-13 * (1.0 + np.abs(f_old))
        alpha = np.ones(active.size)
        searching = np.arange(active.size)
        x_new = np.empty_like(step)
        f_new = np.empty(active.size)
        g_new = np.empty_like(step)
        H_new = np.empty((active.size,) + H.shape[1:])
        while searching.size:
            rows = active[searching]
            x_new[searching] = x[rows] + alpha[searching, None] * step[searching]
            fs, gs, Hs = objective(x_new[searching], rows)
            f_new[searching], g_new[searching], H_new[searching] = fs, gs, Hs
            a = alpha[searching]
            done = (fs <= f_old[searching] + 1e-4 * a * slope[searching] + noise[searching]) | (
                a < 1e-12)
            alpha[searching[~done]] /= 2
            searching = searching[~done]
        moved = alpha >= 1e-12
        rows = active[moved]
        x[rows], f[rows], g[rows], H[rows] = x_new[moved], f_new[moved], g_new[moved], H_new[
            moved]
        active = rows  # a problem whose step vanished keeps its point and stops
    stalled = np.zeros(D, bool)
    stalled[active] = np.max(np.abs(g[active]), axis=-1, initial=0.0) > 1e-7
    return x, stalled


def penalise_batch(f, g, H, theta, prior_var: float | None, scale: np.ndarray):
    """:func:`bayesrank.baselines._optim.penalise` for a batch (``scale`` per problem)."""
    L = theta.shape[-1]
    diag = np.arange(L)
    if prior_var is None:
        m = np.mean(theta, axis=-1)
        f = f + 0.5 * m**2 * scale
        g[:, :L] += (m * scale / L)[:, None]
        H[:, :L, :L] += (scale / L**2)[:, None, None]
    else:
        f = f + 0.5 * np.sum(theta * theta, axis=-1) / prior_var
        g[:, :L] += theta / prior_var
        H[:, diag, diag] += 1.0 / prior_var
    return f / scale, g / scale[:, None], H / scale[:, None, None]


# -- pair counts of a batch ------------------------------------------------------------------
@dataclass(frozen=True)
class PairBatch:
    """Counts of every pair ``i < j`` of D problems: ``a = W_ij``, ``b = W_ji``, ``t = T_ij``."""

    L: int
    a: np.ndarray  # (D, P)
    b: np.ndarray
    t: np.ndarray

    @classmethod
    def from_counts(cls, W: np.ndarray, T: np.ndarray | None = None) -> PairBatch:
        W = np.asarray(W, dtype=float)
        L = W.shape[-1]
        i, j = np.triu_indices(L, 1)
        t = np.zeros((W.shape[0], i.size)) if T is None else np.asarray(T, float)[:, i, j]
        return cls(L, np.ascontiguousarray(W[:, i, j]), np.ascontiguousarray(W[:, j, i]),
                   np.ascontiguousarray(t))

    def rows(self, rows: np.ndarray) -> PairBatch:
        return PairBatch(self.L, self.a[rows], self.b[rows], self.t[rows])

    @property
    def total(self) -> np.ndarray:
        return np.sum(self.a + self.b + self.t, axis=-1)

    def diff(self, theta: np.ndarray) -> np.ndarray:
        i, j = np.triu_indices(self.L, 1)
        return theta[:, i] - theta[:, j]

    def to_nodes(self, per_pair: np.ndarray) -> np.ndarray:
        """B^T v per problem (d = theta_i - theta_j): row sums of the antisymmetric matrix."""
        i, j = np.triu_indices(self.L, 1)
        M = np.zeros(per_pair.shape[:1] + (self.L, self.L))
        M[:, i, j] = per_pair
        M[:, j, i] = -per_pair
        return np.sum(M, axis=-1)

    def laplacian(self, per_pair: np.ndarray) -> np.ndarray:
        """B^T diag(v) B per problem: the theta-Hessian of a function of the differences."""
        i, j = np.triu_indices(self.L, 1)
        S = np.zeros(per_pair.shape[:1] + (self.L, self.L))
        S[:, i, j] = per_pair
        S[:, j, i] = per_pair
        H = -S
        diag = np.arange(self.L)
        H[:, diag, diag] = np.sum(S, axis=-1)
        return H


# -- per-pair terms (broadcast over the batch; shared with the single-problem log-likelihoods)
def bt_terms(p, d: np.ndarray):
    """Bradley–Terry per-pair log-likelihood and its first two derivatives in d."""
    n = p.a + p.b
    ll = n * log_expit(d) - p.b * d  # a log s(d) + b log s(-d), with log s(-d) = log s(d) - d
    s = expit(d)
    return ll, p.a - n * s, -n * s * (1 - s)


def davidson_terms(p, d: np.ndarray, lam):
    """Davidson as a 3-outcome logit with scores (d/2, -d/2, lam), lam = log nu."""
    n = p.a + p.b + p.t
    u = np.stack([d / 2, -d / 2, np.broadcast_to(lam, d.shape)])
    top = u.max(axis=0)
    e = np.exp(u - top)
    z = e[0] + e[1] + e[2]
    pw, pl, pt = e / z
    lse = top + np.log(z)
    ll = (p.a - p.b) * d / 2 + (p.t * lam if np.all(lam > -np.inf) else 0.0) - n * lse
    g_d = (p.a - p.b) / 2 - n * (pw - pl) / 2
    h_dd = -n * ((pw + pl) - (pw - pl) ** 2) / 4
    g_l = p.t - n * pt
    h_ll = -n * pt * (1 - pt)
    h_dl = n * (pw - pl) * pt / 2
    return ll, g_d, h_dd, g_l, h_ll, h_dl


def rao_kupper_terms(p, d: np.ndarray, eta):
    """Rao–Kupper with eta = log kappa > 0: two shifted logistic terms plus a tie constant."""
    x1, x2 = d - eta, -d - eta
    wa, wb = p.a + p.t, p.b + p.t
    s1, s2 = expit(x1), expit(x2)
    r1, r2 = expit(-x1), expit(-x2)  # 1 - s1, 1 - s2 without cancellation
    # a tie-free problem adds t * const = exact zeros (eta > 0 keeps the constant finite)
    tie_const = np.log(np.expm1(2 * eta)) if p.t.any() else 0.0
    ll = wa * log_expit(x1) + wb * log_expit(x2) + p.t * tie_const
    g_d = wa * r1 - wb * r2
    h_dd = -wa * s1 * r1 - wb * s2 * r2
    q = -np.expm1(-2 * eta)  # 1 - exp(-2 eta)
    g_e = -wa * r1 - wb * r2 + p.t * 2 / q
    h_ee = -wa * s1 * r1 - wb * s2 * r2 - p.t * 4 * np.exp(-2 * eta) / q**2
    h_de = wa * s1 * r1 - wb * s2 * r2
    return ll, g_d, h_dd, g_e, h_ee, h_de


# -- the fits --------------------------------------------------------------------------------------
def pair_fit_batch(
    pairs: PairBatch,
    model: str,
    *,
    prior_var: float | None,
    max_iter: int,
    tie0: np.ndarray | float | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Centred log-strengths (and the tie parameter) of every problem by damped Newton.

    ``model`` is "bt", "davidson" (free log nu, start ``tie0`` per problem), "rk" (fixed
    eta = ``tie0``) or "rk_free" (free log eta, start ``tie0``).  The objective is the
    negative log-posterior per comparison; for ML a term ``(mean theta)^2 / 2`` fixes the
    free shift without moving the optimum (paper appendix, paired-comparison models).

    Returns theta (D, L), the tie parameter (D,) (None for "bt" and "rk") and ``stalled``.
    """
    L = pairs.L
    D = pairs.a.shape[0]
    scale = np.maximum(pairs.total, 1.0)
    free_tie = model in ("davidson", "rk_free")

    def objective(x, rows):
        p = pairs.rows(rows)
        theta = x[:, :L]
        d = p.diff(theta)
        if model == "bt":
            ll, g_d, h_dd = bt_terms(p, d)
        elif model == "rk":
            ll, g_d, h_dd = rao_kupper_terms(p, d, tie0)[:3]
        elif model == "davidson":
            ll, g_d, h_dd, g_t, h_tt, h_dt = davidson_terms(p, d, x[:, L:])
        else:  # rk_free: x[L] = log eta
            eta = np.exp(x[:, L:])
            ll, g_d, h_dd, g_e, h_ee, h_de = rao_kupper_terms(p, d, eta)
            g_t, h_tt, h_dt = eta * g_e, eta**2 * h_ee + eta * g_e, eta * h_de
        f = -np.sum(ll, axis=-1)
        g = np.zeros(x.shape)
        H = np.zeros(x.shape + x.shape[-1:])
        g[:, :L] = -p.to_nodes(g_d)
        H[:, :L, :L] = -p.laplacian(h_dd)
        if free_tie:
            g[:, L] = -np.sum(g_t, axis=-1)
            H[:, L, L] = -np.sum(h_tt, axis=-1)
            H[:, :L, L] = H[:, L, :L] = -p.to_nodes(h_dt)
        return penalise_batch(f, g, H, theta, prior_var, scale[rows])

    x0 = np.zeros((D, L + (1 if free_tie else 0)))
    if free_tie:
        x0[:, L] = tie0
    x, stalled = newton_batch(objective, x0, max_iter)
    theta = x[:, :L] - np.mean(x[:, :L], axis=-1, keepdims=True)
    return theta, (x[:, L] if free_tie else None), stalled


def bt_fit_batch(W: np.ndarray, *, prior_var: float | None, max_iter: int):
    """Bradley–Terry log-strengths and ``stalled`` of every problem (zeros where no
    comparison is decisive)."""
    W = np.asarray(W, dtype=float)
    D, L = W.shape[:2]
    theta = np.zeros((D, L))
    stalled = np.zeros(D, bool)
    fit = (W > 0).any(axis=(1, 2))
    if fit.any():
        theta[fit], _, stalled[fit] = pair_fit_batch(PairBatch.from_counts(W[fit]), "bt",
                                                     prior_var=prior_var, max_iter=max_iter)
    return theta, stalled


def davidson_fit_batch(W: np.ndarray, T: np.ndarray, *, prior_var: float | None,
                       max_iter: int):
    """Davidson (1970) log-strengths, ``nu`` and ``stalled`` of every problem.

    Without a decisive comparison: zeros and ``nu = inf``; without a tie: Bradley–Terry
    and ``nu = 0``; otherwise Newton on (theta, log nu) from ``theta = 0`` and the ``nu``
    that matches the tie share at ``theta = 0`` (``P(tie) = nu / (2 + nu)``).
    """
    W = np.asarray(W, dtype=float)
    T = np.asarray(T, dtype=float)
    D, L = W.shape[:2]
    theta = np.zeros((D, L))
    nu = np.full(D, np.inf)
    stalled = np.zeros(D, bool)
    pairs = PairBatch.from_counts(W, T)
    decisive = (W > 0).any(axis=(1, 2))
    tied = (pairs.t > 0).any(axis=-1)
    plain = decisive & ~tied
    if plain.any():
        theta[plain], stalled[plain] = bt_fit_batch(W[plain], prior_var=prior_var,
                                                    max_iter=max_iter)
        nu[plain] = 0.0
    both = decisive & tied
    if both.any():
        p = pairs.rows(both)
        share = np.sum(p.t, axis=-1) / p.total
        tie0 = np.log(2 * share / (1 - share))
        theta[both], lam, stalled[both] = pair_fit_batch(p, "davidson", prior_var=prior_var,
                                                         max_iter=max_iter, tie0=tie0)
        nu[both] = np.exp(lam)
    return theta, nu, stalled


def rao_kupper_fit_batch(W: np.ndarray, T: np.ndarray, *, kappa: float,
                         prior_var: float | None, max_iter: int):
    """Rao–Kupper (1967) log-strengths and ``stalled`` of every problem at fixed ``kappa > 1``."""
    pairs = PairBatch.from_counts(W, T)
    theta, _, stalled = pair_fit_batch(pairs, "rk", prior_var=prior_var, max_iter=max_iter,
                                       tie0=np.log(kappa))
    return theta, stalled


def pl_mm_batch(W: np.ndarray, *, max_iter: int, tol: float):
    """Hunter's MM of :func:`bayesrank.baselines.luce.pl_log_strengths` on every problem
    (each needs a decisive comparison).  Returns centred log-strengths (D, L) and
    ``stalled`` (D,): problems that did not reach ``tol`` in ``max_iter`` iterations.
    """
    W = np.asarray(W, dtype=float)
    wins = np.sum(W, axis=-1)
    n = W + np.swapaxes(W, 1, 2)
    pi = wins / np.sum(wins, axis=-1, keepdims=True)
    active = np.arange(W.shape[0])
    for _ in range(max_iter):
        if active.size == 0:
            break
        p = pi[active]
        new = wins[active] / np.sum(n[active] / (p[:, :, None] + p[:, None, :]), axis=-1)
        new /= np.sum(new, axis=-1, keepdims=True)
        done = np.max(np.abs(new - p), axis=-1) < tol
        pi[active] = new
        active = active[~done]
    stalled = np.zeros(W.shape[0], bool)
    stalled[active] = True
    theta = np.log(pi)
    return theta - np.mean(theta, axis=-1, keepdims=True), stalled


# -- Bradley-Terry-Luce on setwise events ---------------------------------------------------
#: Events per block: sums over events add within fixed-size blocks, then across blocks.
_EVENT_BLOCK = 64


def _padded_events(n: int) -> int:
    """Events after padding: whole blocks (at least one)."""
    return max(1, -(-n // _EVENT_BLOCK)) * _EVENT_BLOCK


def _pad_events(x: np.ndarray) -> np.ndarray:
    E = x.shape[1]
    n = _padded_events(E)
    if n == E:
        return x
    return np.concatenate([x, np.zeros((x.shape[0], n - E) + x.shape[2:], x.dtype)], axis=1)


def _halving_sum(x: np.ndarray) -> np.ndarray:
    """Sum over axis 1 by the fixed tree ``x[:, :h] + x[:, h:]`` (zero-padded to a power
    of two).  Extra zero terms at the end only add exact zeros to each of the first
    terms before the same tree runs, so the result does not depend on that padding."""
    n = x.shape[1]
    width = 1 << max(0, n - 1).bit_length()
    if width != n:
        x = np.concatenate([x, np.zeros((x.shape[0], width - n) + x.shape[2:])], axis=1)
    while width > 1:
        width //= 2
        x = x[:, :width] + x[:, width:]
    return x[:, 0]


def _event_sum(x: np.ndarray) -> np.ndarray:
    """Sum over the event axis (axis 1): a halving tree within each block of
    :data:`_EVENT_BLOCK` events, then a halving tree over the blocks.

    Problems of a batch have different numbers of events and are padded with empty
    zero-count events at the end; this fixed order of additions gives a problem the same
    result with any padding (numpy's pairwise summation regroups terms with the length).
    """
    x = _pad_events(x)
    D, E = x.shape[:2]
    blocks = x.reshape((D * (E // _EVENT_BLOCK), _EVENT_BLOCK) + x.shape[2:])
    partial = _halving_sum(blocks).reshape((D, E // _EVENT_BLOCK) + x.shape[2:])
    return _halving_sum(partial)


def _event_gram(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``sum_e A[:, e, :, None] * B[:, e, None, :]`` (D, La, Lb), padding-invariant.

    One matrix product of a fixed shape per block of :data:`_EVENT_BLOCK` events (BLAS:
    the same call for a problem in any batch), then the halving tree over the blocks
    (padding blocks are exact zeros).
    """
    A, B = _pad_events(A), _pad_events(B)
    D, E, La = A.shape
    n_blocks = E // _EVENT_BLOCK
    A = np.ascontiguousarray(np.swapaxes(A.reshape(D, n_blocks, _EVENT_BLOCK, La), 2, 3))
    B = np.ascontiguousarray(B.reshape(D, n_blocks, _EVENT_BLOCK, B.shape[2]))
    return _halving_sum(np.matmul(A, B))


def btl_terms_batch(theta: np.ndarray, U: np.ndarray, V: np.ndarray, c: np.ndarray):
    """Value, gradient and Hessian of the Bradley–Terry–Luce log-likelihood, every problem.

    Each winner ``i`` of event ``e`` is a Luce choice from ``{i} ∪ V_e`` (paper, BTL):
    ``sum_e c_e sum_{i in U_e} [theta_i - log(pi_i + s_e)]`` with ``s_e = sum_{V_e} pi``.
    With ``p`` the choice probabilities (``q = pi_i r`` on the winner, ``pi_j r`` on each
    loser, ``r = 1 / (pi_i + s_e)``) the Hessian is ``-sum c_e [diag(p) - p p^T]``.

    Sums over events use :func:`_event_sum`, so a problem gets the same value in any
    batch, whatever the padding.

    Parameters
    ----------
    theta : (D, L)
    U : (D, E, L) bool
        Winners of each event (padding events at the end: no winner, no loser, zero count).
    V : (D, E, L) float
        Losers (0/1).
    c : (D, E)
        Event counts.
    """
    top = np.max(theta, axis=-1, keepdims=True)
    pi = np.exp(theta - top)  # common scale cancels in every probability
    s = np.sum(V * pi[:, None, :], axis=-1)
    den = np.where(U, pi[:, None, :] + s[:, :, None], 1.0)
    chosen = np.where(U, (theta - top)[:, None, :] - np.log(den), 0.0)
    value = _event_sum(c * np.sum(chosen, axis=-1))
    r = np.where(U, 1.0 / den, 0.0)
    q = pi[:, None, :] * r
    cc = c[:, :, None]
    loser_mass = pi * _event_sum(V * (c * np.sum(r, axis=-1))[:, :, None])
    grad = _event_sum(np.where(U, cc * (1.0 - q), 0.0)) - loser_mass
    dvec = _event_sum(cc * q * (1.0 - q)) + loser_mass
    winner_loser = _event_gram(cc * q * r, V)
    M = winner_loser * pi[:, None, :]
    loser_pairs = V * (c * np.sum(r * r, axis=-1))[:, :, None]
    third = _event_gram(loser_pairs, V)
    third = third * pi[:, :, None] * pi[:, None, :]
    H = M + np.swapaxes(M, 1, 2) + third
    diag = np.arange(theta.shape[-1])
    H[:, diag, diag] -= dvec
    return value, grad, H


def btl_fit_batch(U: np.ndarray, V: np.ndarray, c: np.ndarray, x0: np.ndarray, *,
                  prior_var: float | None, max_iter: int):
    """Bradley–Terry–Luce log-strengths (centred) of every problem by damped Newton from
    ``x0`` (D, L) (:func:`bayesrank.baselines.luce.btl_log_strengths` says which).  Every
    problem needs an event with a winner and a loser.  Returns theta (D, L), ``stalled`` (D,).
    """
    # whole blocks of events once, not in every event sum
    U = _pad_events(np.asarray(U, dtype=bool))
    V = _pad_events(np.asarray(V, dtype=float))
    c = _pad_events(np.asarray(c, dtype=float))
    scale = _event_sum(c * np.sum(U, axis=-1))  # winner entries (the choices)

    def objective(x, rows):
        value, g, H = btl_terms_batch(x, U[rows], V[rows], c[rows])
        return penalise_batch(-value, -g, -H, x, prior_var, scale[rows])

    x, stalled = newton_batch(objective, x0, max_iter)
    return x - np.mean(x, axis=-1, keepdims=True), stalled


# -- identification and exact ties ------------------------------------------------------------
def average_exchangeable(theta: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Replace each log-strength by the mean over its exchangeable group (exact ties)."""
    L = theta.shape[-1]
    total = np.zeros(theta.shape)
    for k in range(L):  # members in index order, as one sequential sum per group
        total += np.where(same[:, :, k], theta[:, k:k + 1], 0.0)
    return total / np.sum(same, axis=-1)
