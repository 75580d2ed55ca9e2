"""Luce-family choice models: Plackett–Luce, Bradley–Terry–Luce and Davidson–Luce.

Paper appendix, "Listwise / Setwise Choice Models (Luce Family)".  Each question-trial
``(m, n)`` splits the models into winners ``U = {l: R_lmn = 1}`` and losers
``V = {l: R_lmn = 0}``; events with ``U`` or ``V`` empty carry no ranking information and are
dropped.  The rules read these events, grouped with multiplicities, from
``data.reductions.setwise`` and never loop over question-trials.

- **Plackett–Luce** (``plackett_luce``): in the binary setting the paper applies PL to the
  pairwise win matrix ``W`` (where it coincides with Bradley–Terry) and fits it with the MM
  algorithm of Hunter (2004).  :func:`pl_rankings_log_strengths` fits PL to genuine
  rankings (e.g. race results).
- **Bradley–Terry–Luce** (``bradley_terry_luce``): every winner ``i`` of an event is a Luce
  choice from ``{i} ∪ V``: ``P(U > V) = prod_{i in U} pi_i / (pi_i + sum_{j in V} pi_j)``.
- **Davidson–Luce** (Firth, Kosmidis & Turner 2019): the whole winner set is one tied choice,
  ``P(U | S) = delta_t g_t(U) / Z(S)`` with ``S = U ∪ V``, ``t = |U|``,
  ``g_t(T) = (prod_{i in T} pi_i)^(1/t)``, ``delta_1 = 1`` and
  ``Z(S) = sum_{t=1}^{min(D, |S|)} delta_t e_t(pi_S^(1/t))``, where ``e_t`` is the ``t``-th
  elementary symmetric polynomial of the values ``pi_i^(1/t)``, ``i in S``.  ``e_t`` comes
  from the recurrence ``e_j <- e_j + x_i e_{j-1}`` over the items (O(|S| D) per order), so the
  likelihood is exact without enumerating subsets.

The Davidson–Luce log-likelihood depends on the events only through ``A_i = sum_e c_e
[i in U_e] / |U_e|`` (winner shares), the counts of each tie order, and the counts of each
distinct comparison set ``S``; on complete data every event has ``S`` = all models, so one
``Z`` serves all events.  :func:`davidson_luce_loglik` (with gradient) is the reference
implementation for the Bayesian models.

Identification: strengths are centred.  ML needs a strongly connected "beat" graph (BTL:
an edge i -> j when ``i`` wins an event that ``j`` loses; Davidson–Luce: when ``i`` wins an
event in which ``j`` takes part); otherwise the ML rules raise
:class:`~bayesrank.errors.NotIdentifiedError` / :class:`~bayesrank.errors.DisconnectedGraphError`
and suggest the ``_map`` rule, whose Gaussian prior ``N(0, prior)`` on log-strengths always
gives a unique answer.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from scipy import optimize
from scipy.special import gammaln, logsumexp

from bayesrank.baselines._optim import (
    average_groups,
    check_identified,
    fit_options,
    newton,
    normalised_strengths,
    penalise,
    strengths,
    warn_stalled,
)
from bayesrank.baselines.paired import bt_log_strengths, exchangeable_average, strength_scores
from bayesrank.baselines.pairwise_batch import btl_fit_batch, pl_mm_batch
from bayesrank.checks import check_finite, check_int
from bayesrank.data import ResponseData
from bayesrank.errors import DataError, NotIdentifiedError
from bayesrank.ranking import ranking_method

__all__ = [
    "elementary_symmetric",
    "davidson_luce_log_normalizer",
    "davidson_luce_loglik",
    "davidson_luce_log_strengths",
    "btl_log_strengths",
    "pl_log_strengths",
    "pl_rankings_log_strengths",
    "plackett_luce",
    "bradley_terry_luce",
    "davidson_luce",
]

_LOG_DELTA_BOUND = 30.0
_CHUNK = 64


# -- elementary symmetric polynomials ---------------------------------------------------------
def elementary_symmetric(x: np.ndarray, max_order: int) -> np.ndarray:
    """Elementary symmetric polynomials ``e_0, ..., e_max_order`` of the last axis of ``x``.

    ``e_j(x) = sum_{|T| = j} prod_{i in T} x_i``, computed by the recurrence
    ``e_j <- e_j + x_i e_{j-1}`` over the items ``i`` (O(n max_order), all terms positive for
    ``x >= 0``, so no cancellation).  Vectorised over the leading axes; an item with
    ``x_i = 0`` is absent.

    Returns
    -------
    numpy.ndarray, shape ``x.shape[:-1] + (max_order + 1,)``
    """
    x = np.asarray(x, dtype=float)
    e = np.zeros(x.shape[:-1] + (max_order + 1,))
    e[..., 0] = 1.0
    for k in range(x.shape[-1]):
        e[..., 1:] = e[..., 1:] + x[..., k, None] * e[..., :-1]
    return e


def _leave_one_out_top(x: np.ndarray, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``e_t(x)`` and ``e_{t-1}(x without item i)`` for every item ``i``.

    ``x`` has shape (..., D, n); row ``d`` of the second-last axis uses order ``orders[d]``.
    Prefix polynomials (items before ``i``) are stored, suffix polynomials (items after
    ``i``) are streamed backwards, and ``e_{t-1}(x_{-i}) = sum_a prefix_a suffix_{t-1-a}``:
    every term is a sum of positive products, so leaving an item out never cancels.
    """
    n = x.shape[-1]
    top = int(orders.max())
    prefix = np.zeros(x.shape[:-1] + (n + 1, top + 1))
    prefix[..., 0, 0] = 1.0
    for k in range(n):
        prefix[..., k + 1, :] = prefix[..., k, :]
        prefix[..., k + 1, 1:] += x[..., k, None] * prefix[..., k, :-1]
    rows = x.shape[:-1]
    e_t = np.take_along_axis(prefix[..., n, :], np.broadcast_to(orders[:, None], rows + (1,)),
                             axis=-1)[..., 0]
    want = orders[:, None] - 1 - np.arange(top)[None, :]  # suffix order paired with prefix a
    valid = want >= 0
    gather = np.where(valid, want, 0)
    row = np.arange(orders.size)[:, None]
    suffix = np.zeros(rows + (top,))
    suffix[..., 0] = 1.0
    loo = np.empty(x.shape)
    for k in range(n - 1, -1, -1):
        paired = suffix[..., row, gather] * valid
        loo[..., k] = (prefix[..., k, :top] * paired).sum(axis=-1)
        suffix[..., 1:] = suffix[..., 1:] + x[..., k, None] * suffix[..., :-1]
    return e_t, loo


def davidson_luce_log_normalizer(
    theta: np.ndarray, log_delta: np.ndarray, present: np.ndarray, max_orders: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log Z(S)`` of Davidson–Luce for each comparison set, with its gradients.

    Parameters
    ----------
    theta : array_like, shape (L,)
        Log-strengths.
    log_delta : array_like, shape (D,)
        ``log_delta[t-1] = log delta_t``; ``-inf`` removes order ``t``.
    present : array_like of bool, shape (K, L)
        Comparison sets ``S``.
    max_orders : array_like of int, shape (K,)
        Highest tie order summed for each set (``min(D, |S|)`` in the paper).

    Returns
    -------
    log_z : (K,)
    d_theta : (K, L)
        ``d log Z / d theta_i = sum_t w_t P(i in T | t) / t`` (``w_t`` = share of order
        ``t`` in ``Z``; ``P(i in T | t) = x_i e_{t-1}(x_{-i}) / e_t(x)``).
    d_log_delta : (K, D)
        ``w_t``.
    """
    theta = np.asarray(theta, dtype=float)
    log_delta = np.asarray(log_delta, dtype=float)
    present = np.asarray(present, dtype=bool)
    K, L = present.shape
    D = log_delta.size
    orders = np.arange(1, D + 1)
    log_z = np.empty(K)
    d_theta = np.empty((K, L))
    d_delta = np.empty((K, D))
    for start in range(0, K, _CHUNK):
        sets = present[start:start + _CHUNK]
        top = np.max(np.where(sets, theta, -np.inf), axis=1)  # per-set max for scaling
        scaled = np.where(sets, theta - top[:, None], -np.inf)
        x = np.exp(scaled[:, None, :] / orders[None, :, None])  # (k, D, L): pi^(1/t) / top
        e_t, loo = _leave_one_out_top(x, orders)
        with np.errstate(divide="ignore"):
            log_terms = log_delta[None, :] + np.log(e_t)
        allowed = orders[None, :] <= max_orders[start:start + _CHUNK, None]
        log_terms = np.where(allowed, log_terms, -np.inf)
        lz = logsumexp(log_terms, axis=1)
        w = np.exp(log_terms - lz[:, None])
        inclusion = np.where(e_t[..., None] > 0, x * loo / np.where(e_t > 0, e_t, 1)[..., None],
                             0.0)
        d_theta[start:start + _CHUNK] = np.einsum("kt,ktl->kl", w / orders, inclusion)
        d_delta[start:start + _CHUNK] = w
        log_z[start:start + _CHUNK] = lz + top  # e_t(pi^(1/t)) = exp(top) e_t(scaled)
    return log_z, d_theta, d_delta


def _co_occurrence(A: np.ndarray, B: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``sum_e w_e A[e, i] B[e, j]`` as an (L, L) matrix (einsum: no threaded BLAS call)."""
    A = np.asarray(A, dtype=float)
    if weights is not None:
        A = A * np.asarray(weights, dtype=float)[:, None]
    return np.einsum("ei,ej->ij", A, np.asarray(B, dtype=float))


def _events(winners, losers, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    U = np.asarray(winners, dtype=bool)
    V = np.asarray(losers, dtype=bool)
    c = np.asarray(counts, dtype=float)
    if U.ndim != 2 or U.shape != V.shape or c.shape != (U.shape[0],):
        raise DataError(
            f"winners and losers must be (E, L) boolean arrays and counts (E,); got "
            f"{U.shape}, {V.shape}, {c.shape}"
        )
    if (U & V).any():
        raise DataError("a model cannot be both a winner and a loser of the same event")
    if not U.any(axis=1).all():
        raise DataError("every event needs at least one winner")
    if (c < 0).any() or not np.all(np.isfinite(c)):
        raise DataError("event counts must be finite and non-negative")
    return U, V, c


class _DLStats:
    """Sufficient statistics of Davidson–Luce events."""

    def __init__(self, U, V, c, max_tie_order, exclude_all_tied):
        S = U | V
        size = S.sum(axis=1)
        order = U.sum(axis=1)
        cap = size - (1 if exclude_all_tied else 0)
        D = int(cap.max()) if max_tie_order is None else check_int("max_tie_order", max_tie_order)
        bad = order > np.minimum(D, cap)
        if (bad & (c > 0)).any():
            e = int(np.argmax(bad & (c > 0)))
            raise DataError(
                f"event {e} has {int(order[e])} tied winners, more than the highest tie order "
                f"allowed (max_tie_order={D}, set size {int(size[e])}); raise max_tie_order"
            )
        self.D = D
        self.L = U.shape[1]
        self.share = np.einsum("e,el->l", c / order, U)  # A_i
        self.order_wins = np.einsum("e,el,et->lt", c, U, order[:, None] == np.arange(1, D + 1))
        self.order_counts = np.bincount(order - 1, c, minlength=D)[:D]
        packed = np.packbits(S, axis=1)
        if (packed == packed[0]).all():  # complete data: every event compares all models
            first, inverse = np.zeros(1, np.int64), np.zeros(len(S), np.int64)
        else:
            _, first, inverse = np.unique(packed, axis=0, return_index=True,
                                          return_inverse=True)
        self.sets = S[first]
        self.set_counts = np.bincount(inverse.ravel(), c, minlength=len(self.sets))
        self.set_orders = np.minimum(D, self.sets.sum(axis=1) - (1 if exclude_all_tied else 0))
        self.total = float(c.sum())
        self._events = (U, S, c)

    @cached_property
    def beats(self) -> np.ndarray:
        """``i`` won an event in which ``j`` took part (the ML identification graph)."""
        U, S, c = self._events
        return _co_occurrence(U, S, c) > 0


def davidson_luce_loglik(
    theta: np.ndarray,
    log_delta: np.ndarray,
    winners: np.ndarray,
    losers: np.ndarray,
    counts: np.ndarray,
    max_tie_order: int | None = None,
    *,
    exclude_all_tied: bool = False,
    return_grad: bool = False,
):
    """Exact Davidson–Luce log-likelihood of grouped setwise events.

    ``sum_e c_e [log delta_{t_e} + (1/t_e) sum_{i in U_e} theta_i - log Z(S_e)]``
    (paper, "Davidson--Luce"; Firth et al. 2019), with ``Z`` from elementary symmetric
    polynomials (:func:`elementary_symmetric`).

    Parameters
    ----------
    theta : (L,)
        Log-strengths ``log pi``.
    log_delta : (D,)
        ``log_delta[t-1] = log delta_t`` for tie orders ``t = 1..D`` (the model fixes
        ``delta_1 = 1``: pass 0 first); ``-inf`` removes an order from ``Z``.
    winners, losers : (E, L) bool
        Event winner and loser sets (``S = U ∪ V``); ``counts`` (E,) their multiplicities.
    max_tie_order : int, optional
        ``D`` of the paper; default ``len(log_delta)``.
    exclude_all_tied : bool
        Drop the outcome "every member of S ties" from ``Z`` (use when such events were
        discarded from the data, as in the binary benchmark setting).
    return_grad : bool
        Also return the gradients with respect to ``theta`` and ``log_delta``.

    Returns
    -------
    float, or (float, (L,) array, (D,) array)
    """
    U, V, c = _events(winners, losers, counts)
    log_delta = np.asarray(log_delta, dtype=float)
    D = log_delta.size if max_tie_order is None else int(max_tie_order)
    if log_delta.size != D:
        raise DataError(f"log_delta has {log_delta.size} entries but max_tie_order is {D}")
    stats = _DLStats(U, V, c, D, exclude_all_tied)
    return _dl_value(np.asarray(theta, float), log_delta, stats, return_grad)


def _dl_value(theta, log_delta, st: _DLStats, return_grad: bool):
    used = st.order_counts > 0
    value = float(st.order_counts[used] @ log_delta[used] + theta @ st.share)
    log_z, d_theta, d_delta = davidson_luce_log_normalizer(theta, log_delta, st.sets,
                                                           st.set_orders)
    value -= float(st.set_counts @ log_z)
    if not return_grad:
        return value
    g_theta = st.share - st.set_counts @ d_theta
    g_delta = st.order_counts - st.set_counts @ d_delta
    return value, g_theta, g_delta


def _dl_profile_terms(theta: np.ndarray, st: _DLStats):
    """Profile log-likelihood of Davidson–Luce over the tie prevalences, one comparison set.

    With a single set ``S`` the ML ``delta`` given ``theta`` is closed-form,
    ``delta_t e_t / Z = n_t / n`` (``n_t`` = events of order ``t``), which leaves
    ``l_p(theta) = theta . A - sum_t n_t log e_t(pi_S^(1/t)) + const``: a product of
    "``t`` winners drawn with probability ∝ ``g_t``" models.  Gradient
    ``A - sum_t n_t P(i in U | t) / t`` and Hessian ``-sum_t n_t / t^2 Cov_t``, where
    ``Cov_t`` needs the joint inclusions ``x_i x_j e_{t-2}(x_{-i,-j}) / e_t(x)``.
    Returns the value, gradient, Hessian and ``log e_t`` (for ``delta``).
    """
    members = np.flatnonzero(st.sets[0])
    th = theta[members]
    n = members.size
    ts = np.flatnonzero(st.order_counts) + 1
    nt = st.order_counts[ts - 1]
    top = th.max()
    x = np.exp((th - top)[None, :] / ts[:, None])  # (orders, n)
    e_t, loo = _leave_one_out_top(x, ts)
    incl = x * loo / e_t[:, None]  # P(i in U | order t)
    log_e = np.log(e_t) + top  # log e_t(pi^(1/t)), unscaled
    value = float(theta @ st.share - nt @ log_e)
    grad = st.share.copy()
    grad[members] -= (nt / ts) @ incl
    cov = np.einsum("t,ti,tj->ij", nt / ts**2, -incl, incl)
    cov[np.diag_indices(n)] += (nt / ts**2) @ incl
    two = ts >= 2
    if two.any():
        x2 = x[two]
        xb = np.broadcast_to(x2, (n,) + x2.shape).copy()
        xb[np.arange(n), :, np.arange(n)] = 0.0  # batch b: item b removed
        _, loo2 = _leave_one_out_top(xb, ts[two] - 1)  # e_{t-2}(x without b and j)
        joint = np.einsum("tb,tj,btj->tbj", x2, x2, loo2) / e_t[two][:, None, None]
        idx = np.arange(n)
        joint[:, idx, idx] = 0.0
        cov += np.einsum("t,tbj->bj", nt[two] / ts[two] ** 2, joint)
    H = np.zeros((theta.size, theta.size))
    H[np.ix_(members, members)] = -cov
    return value, grad, H, log_e, ts


def davidson_luce_log_strengths(
    winners: np.ndarray,
    losers: np.ndarray,
    counts: np.ndarray,
    *,
    max_tie_order: int | None = None,
    prior: float | None = None,
    exclude_all_tied: bool = False,
    max_iter: int = 500,
    labels: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Davidson–Luce fit: centred log-strengths and tie prevalences ``delta_1..delta_D``.

    Maximises :func:`davidson_luce_loglik` (ML, ``prior=None``) or adds a Gaussian prior
    ``N(0, prior)`` on the log-strengths (MAP).  ``delta_t`` are estimated by ML in both
    cases; a tie order that never occurs has ML value ``delta_t = 0`` (the likelihood falls
    as it grows) and is set to exactly 0.

    When every event has the same comparison set (complete data) ``delta`` is profiled out
    in closed form and ``theta`` is found by damped Newton on the profile likelihood with
    its exact Hessian (``delta_t = inf`` when no event has a single winner, because
    ``delta_1 = 1`` fixes the scale); otherwise ``(theta, log delta)`` are fitted jointly by
    L-BFGS-B with the analytic gradient (``|log delta_t| <= 30``).  ``labels`` name the
    models in identification errors.

    Returns
    -------
    theta : (L,) centred log-strengths
    delta : (D,) with ``delta[0] = 1``
    """
    U, V, c = _events(winners, losers, counts)
    prior_var, max_iter = fit_options(prior, max_iter)
    st = _DLStats(U, V, c, max_tie_order, exclude_all_tied)
    L, D = st.L, st.D
    if prior_var is None:
        check_identified(st.beats, method="Davidson-Luce ML", labels=labels,
                         suggestion="prior=... or the davidson_luce_map rule")
    if len(st.sets) == 1:
        return _dl_fit_profile(st, prior_var, max_iter)
    free = np.flatnonzero(st.order_counts[1:] > 0) + 1  # orders t >= 2 that occur (index t-1)
    log_delta = np.full(D, -np.inf)
    log_delta[0] = 0.0
    # start: theta = 0 and order frequencies matched on the typical comparison set size
    n_typ = int(np.round(np.average(st.sets.sum(axis=1), weights=st.set_counts)))
    f = st.order_counts / max(st.total, 1.0)
    t = free + 1
    with np.errstate(divide="ignore"):
        log_binom = gammaln(n_typ + 1) - gammaln(t + 1) - gammaln(np.maximum(n_typ - t, 0) + 1)
        start_delta = (np.log(f[free]) - np.log(f[0]) + np.log(n_typ) - log_binom
                       if f[0] > 0 else np.zeros(free.size))
    x0 = np.concatenate([np.zeros(L), np.clip(start_delta, -20, 20)])
    scale = max(st.total, 1.0)

    def objective(x):
        theta = x[:L]
        ld = log_delta.copy()
        ld[free] = x[L:]
        value, g_theta, g_delta = _dl_value(theta, ld, st, True)
        g = np.concatenate([-g_theta, -g_delta[free]])
        return penalise(-value, g, None, theta, prior_var, scale)[:2]

    bounds = [(None, None)] * L + [(-_LOG_DELTA_BOUND, _LOG_DELTA_BOUND)] * free.size
    res = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-10})
    grad = objective(res.x)[1]
    if not res.success and np.max(np.abs(grad)) > 1e-7:
        warnings.warn(f"Davidson-Luce fit stopped before convergence ({res.message})",
                      RuntimeWarning, stacklevel=2)
    at_bound = np.abs(res.x[L:]) >= _LOG_DELTA_BOUND - 1e-6
    if at_bound.any() and prior_var is None:
        raise NotIdentifiedError(
            f"Davidson-Luce ML: tie prevalence delta_{int(free[at_bound][0]) + 1} diverges (the "
            "data cannot pin it down, e.g. no event with a single winner)"
        )
    log_delta[free] = res.x[L:]
    theta = res.x[:L] - res.x[:L].mean()
    return theta, np.exp(log_delta)


def _equal_share_groups(st: _DLStats) -> np.ndarray:
    """Group models whose winner shares ``A_i = sum_t C_it / t`` are exactly equal.

    ``C_it`` (events of order ``t`` won by ``i``) are integers for integer counts, so
    ``A_i * lcm(1..D)`` is compared in exact integer arithmetic; otherwise as floats.
    """
    counts = st.order_wins
    if not np.all(counts == np.round(counts)):
        return np.unique(st.share, return_inverse=True)[1].ravel()
    lcm = math.lcm(*range(1, st.D + 1))
    numerators = [sum(int(c) * (lcm // t) for t, c in enumerate(row, start=1)) for row in counts]
    _, groups = np.unique(np.asarray(numerators, dtype=object).astype(str), return_inverse=True)
    return groups.ravel()


def _dl_fit_profile(st: _DLStats, prior_var: float | None, max_iter: int):
    """Newton on the profile likelihood (one comparison set), then the closed-form delta."""
    L, scale = st.L, max(st.total, 1.0)

    def objective(x):
        value, g, H = _dl_profile_terms(x, st)[:3]
        f, g, H = -value, -g, -H
        return penalise(f, g, H, x, prior_var, scale)

    x = newton(objective, np.zeros(L), max_iter, "Davidson-Luce fit")
    # the profile likelihood sees theta only through the winner shares A (and a symmetric
    # normaliser), so models with exactly equal A are exactly tied: remove optimiser noise
    theta = average_groups(x - x.mean(), _equal_share_groups(st))
    log_e, ts = _dl_profile_terms(theta, st)[3:]
    delta = np.zeros(st.D)
    n1 = st.order_counts[0]
    with np.errstate(divide="ignore"):
        # delta_t = (n_t / n_1) e_1 / e_t; without single-winner events delta_1 = 1 is not
        # attainable and the other prevalences are infinite (theta is unaffected)
        delta[ts - 1] = (np.exp(np.log(st.order_counts[ts - 1] / n1) + log_e[0] - log_e)
                         if n1 > 0 else np.inf)
    delta[0] = 1.0
    return theta, delta


# -- Bradley–Terry–Luce (setwise choice from each winner vs the loser set) -------------------
def btl_log_strengths(
    winners: np.ndarray,
    losers: np.ndarray,
    counts: np.ndarray,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    labels: Sequence[str] | None = None,
) -> np.ndarray:
    """Bradley–Terry–Luce log-strengths (centred) by ML or MAP (Gaussian prior variance).

    Damped Newton with the analytic Hessian; the cost per iteration is linear in the number
    of winner entries of the distinct events.  ML raises when the choice graph (an edge
    i -> j when ``i`` wins an event ``j`` loses) is not strongly connected; ``labels`` name
    the models in that message.
    """
    U, V, c = _events(winners, losers, counts)
    prior_var, max_iter = fit_options(prior, max_iter)
    keep = V.any(axis=1) & (c > 0)  # a winner with no loser makes no choice
    U, V, c = U[keep], V[keep].astype(float), c[keep]
    if not keep.any():
        return np.zeros(U.shape[1])
    wins = _co_occurrence(U, V, c)  # pairwise wins implied by the events
    if prior_var is None:
        check_identified(wins > 0, method="Bradley-Terry-Luce ML", labels=labels,
                         suggestion="prior=... or the bradley_terry_luce_map rule")
    # Bradley-Terry on the implied pairwise wins is a close, cheap starting point (the same
    # identification condition), so Newton needs only a few iterations
    x0 = bt_log_strengths(wins, prior=prior_var, max_iter=max_iter)
    theta, stalled = btl_fit_batch(U[None], V[None], c[None], x0[None],
                                   prior_var=prior_var, max_iter=max_iter)
    warn_stalled(stalled, "Bradley-Terry-Luce fit", max_iter)
    return theta[0]


# -- Plackett–Luce ---------------------------------------------------------------------------
def pl_log_strengths(W: np.ndarray, *, max_iter: int = 500, tol: float = 1e-8) -> np.ndarray:
    """Plackett–Luce (= Bradley–Terry) ML on pairwise wins by Hunter's (2004) MM algorithm.

    ``pi_i <- w_i / sum_{j != i} n_ij / (pi_i + pi_j)`` with ``w_i = sum_j W_ij`` and
    ``n_ij = W_ij + W_ji``, then ``pi`` is normalised to sum 1; stops when
    ``max_i |pi_i - pi_i_old| < tol`` (paper, Algorithm "MM algorithm for PL/BT").

    Returns centred log-strengths; raises when the win graph is not strongly connected.
    """
    W = np.asarray(W, dtype=float)
    max_iter = check_int("max_iter", max_iter)
    tol = check_finite("tol", tol, positive=True)
    L = W.shape[0]
    wins = W.sum(axis=1)
    if wins.sum() == 0:
        return np.zeros(L)
    check_identified(W > 0, method="Plackett-Luce ML")
    theta, stalled = pl_mm_batch(W[None], max_iter=max_iter, tol=tol)
    if stalled[0]:
        warnings.warn(f"Plackett-Luce MM did not reach tol={tol} in {max_iter} iterations",
                      RuntimeWarning, stacklevel=2)
    return theta[0]


def pl_rankings_log_strengths(
    rankings: Sequence[Sequence[int]],
    n_items: int | None = None,
    *,
    prior: float | None = None,
    max_iter: int = 500,
) -> np.ndarray:
    """Plackett–Luce ML/MAP from (partial) rankings, e.g. race results.

    ``P(i_1 > ... > i_K) = prod_{s=1}^{K-1} pi_{i_s} / sum_{u >= s} pi_{i_u}`` (Plackett
    1975; Luce 1959).  Each ranking lists item indices best first and may cover any subset
    of the items.  Damped Newton with the exact Hessian.

    Returns centred log-strengths of shape (n_items,).
    """
    seqs = [np.asarray(r, dtype=np.int64) for r in rankings]
    if not seqs or any(s.ndim != 1 for s in seqs):
        raise DataError("rankings must be a non-empty sequence of 1-D index sequences")
    if any(np.unique(s).size != s.size for s in seqs):
        raise DataError("an item appears twice in one ranking")
    L = int(max(s.max() for s in seqs)) + 1 if n_items is None else int(n_items)
    if any(s.min() < 0 or s.max() >= L for s in seqs):
        raise DataError(f"ranking entries must be item indices in 0..{L - 1}")
    prior_var, max_iter = fit_options(prior, max_iter)
    chosen, members = [], []
    for s in seqs:
        for k in range(s.size - 1):
            row = np.zeros(L, bool)
            row[s[k:]] = True
            chosen.append(s[k])
            members.append(row)
    if not chosen:
        return np.zeros(L)
    chosen = np.asarray(chosen)
    S = np.asarray(members, dtype=float)
    pick = np.zeros_like(S)
    pick[np.arange(len(chosen)), chosen] = 1.0
    if prior_var is None:
        check_identified(_co_occurrence(pick, S) > 0, method="Plackett-Luce ML")
    wins = pick.sum(axis=0)
    scale = float(len(chosen))

    def objective(x):
        z = np.where(S > 0, x[None, :], -np.inf)
        lse = logsumexp(z, axis=1)
        P = np.exp(z - lse[:, None])
        f = -(x @ wins - lse.sum())
        g = -(wins - P.sum(axis=0))
        H = np.diag(P.sum(axis=0)) - np.einsum("sk,sj->kj", P, P)
        return penalise(f, g, H, x, prior_var, scale)

    x = newton(objective, np.zeros(L), max_iter, "Plackett-Luce rankings fit")
    return x - x.mean()


# -- ranking rules --------------------------------------------------------------------------
@ranking_method
def plackett_luce(
    data: ResponseData, *, prior: float | None = None, max_iter: int = 500, tol: float = 1e-8
):
    """Plackett–Luce on the pairwise win matrix ``W``: ML by MM (Hunter 2004) or MAP.

    In the binary setting PL on ``W`` is Bradley–Terry (paper), so the ranking equals
    ``bradley_terry``'s.  ML (``prior=None``, identifier ``plackett_luce``) runs the MM
    algorithm of :func:`pl_log_strengths` until ``tol`` and scores by ``pi`` normalised to
    sum 1; it raises when the win graph is not strongly connected.  MAP (``prior`` a
    Gaussian variance, ``plackett_luce_map`` uses 1.0) is the Bradley–Terry MAP of
    :func:`~bayesrank.baselines.paired.bt_log_strengths` with ``theta_i ~ N(0, prior)``,
    scored by ``exp(theta)`` with centred ``theta``; ``tol`` plays no role there.
    """
    W = data.reductions.wins
    if prior is not None:
        return strength_scores(bt_log_strengths(W, prior=prior, max_iter=max_iter), W)
    if W.sum() > 0:
        check_identified(W > 0, method="plackett_luce", suggestion="plackett_luce_map",
                         labels=data.models)
    theta = exchangeable_average(pl_log_strengths(W, max_iter=max_iter, tol=tol), W)
    return normalised_strengths(theta), {"log_strengths": theta}


def _setwise(data: ResponseData, what: str):
    data.require_binary(what)
    ev = data.reductions.setwise
    return ev.winners, ev.losers, ev.counts


@ranking_method
def bradley_terry_luce(data: ResponseData, *, prior: float | None = None, max_iter: int = 500):
    """Bradley–Terry–Luce setwise choice (each winner vs the loser set); scores ``exp(theta)``.

    Binary data only.  ML (``prior=None``) raises when the choice graph (winner -> loser) is
    not strongly connected; ``prior`` adds ``theta_i ~ N(0, prior)`` (MAP; identifier
    ``bradley_terry_luce_map`` uses 1.0).
    """
    U, V, c = _setwise(data, "bradley_terry_luce")
    theta = btl_log_strengths(U, V, c, prior=prior, max_iter=max_iter, labels=data.models)
    return strengths(theta), {"log_strengths": theta}


@ranking_method
def davidson_luce(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    max_tie_order: int | None = None,
):
    """Davidson–Luce setwise ties (Firth et al. 2019); scores ``exp(theta)``.

    Binary data only.  ``max_tie_order`` is ``D`` (default ``L - 1``: every non-degenerate
    winner-set size).  Because events where every present model ties are discarded, ``Z(S)``
    excludes that outcome (identical to the paper's ``Z`` on complete data with the default
    ``D``).  ``details["tie_prevalence"]`` holds ``delta_1..delta_D`` (``delta_1 = 1``; 0 for
    orders never observed).  ``prior=None`` is ML; a variance puts ``theta_i ~ N(0, prior)``
    on log-strengths (MAP, ``davidson_luce_map`` uses 1.0; ``delta`` stays ML).

    On complete data the likelihood sees ``theta`` only through the winner shares
    ``A_i = sum_e c_e [i in U_e] / |U_e|`` and a symmetric concave term, so the ML and MAP
    rankings are the ranking of ``A``, exact ties included.
    """
    U, V, c = _setwise(data, "davidson_luce")
    if max_tie_order is None:
        max_tie_order = max(data.L - 1, 1)
    if c.size == 0:
        return np.ones(data.L), {"log_strengths": np.zeros(data.L)}
    theta, delta = davidson_luce_log_strengths(
        U, V, c, max_tie_order=max_tie_order, prior=prior, exclude_all_tied=True,
        max_iter=max_iter, labels=data.models,
    )
    return strengths(theta), {"log_strengths": theta, "tie_prevalence": delta}
