"""Compiled inner loops of the Bayesian Bradley-Terry independence sampler.

Kept apart from :mod:`bayesrank.baselines.paired` so that numba is imported only when
:func:`bayesrank.baselines.paired.bt_posterior_draws` first runs.  Both loops are
sequential sums in a fixed order, so a chain's result does not depend on which batch
of chains it was computed in.  Compiled on first use and cached on disk.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_LN2 = math.log(2.0)


@njit(cache=True, inline="always")
def _log_expit(x):
    """log sigma(x) = -log(1 + e^-x), evaluated without overflow on either side."""
    if x < 0.0:
        return x - math.log1p(math.exp(x))
    return -math.log1p(math.exp(-x))


_SMALL_COUNT = 64  # counts up to this use the product form: (1 + r)^n <= 2^64
_RESCALE = 2.0**600


@njit(cache=True, inline="always")
def _int_power(base, n):
    """base**n for a non-negative integer n by repeated squaring."""
    out = 1.0
    while n:
        if n & 1:
            out *= base
        base *= base
        n >>= 1
    return out


@njit(cache=True)
def bt_log_posterior(x, first, second, n, loss_nodes, prior_var):
    """Unnormalised Bradley-Terry log-posterior of every row of ``x`` (S, L).

    ``sum_p n_p log sigma(d_p) - x . loss_nodes - |x|^2 / (2 prior_var)`` over the pairs
    ``p = (first[p], second[p])`` with ``n_p`` decisive comparisons and
    ``d_p = x_first - x_second``, where ``loss_nodes = B^T W_ji`` turns the pair sums into
    the win-count likelihood.

    ``log sigma(d) = min(d, 0) - log1p(r)`` with ``r = e^-|d|``, the ratio of the two
    models' ``e^(x - max x)`` (one exponential per model and row, not per pair).  For
    whole counts ``n_p <= 64`` the ``log1p`` terms are summed as one logarithm of the
    product of ``(1 + r)^n_p`` (kept in range by powers of two): one logarithm per row
    instead of one per pair, with absolute error of order ``P`` ulps.
    """
    S, L = x.shape
    P = first.size
    whole = np.empty(P, dtype=np.int64)  # the count when it is a small whole number, else -1
    for p in range(P):
        c = n[p]
        whole[p] = int(c) if c == math.floor(c) and 0.0 <= c <= _SMALL_COUNT else -1
    out = np.empty(S)
    expo = np.empty(L)
    for s in range(S):
        top = x[s, 0]
        for k in range(1, L):
            top = max(top, x[s, k])
        for k in range(L):
            expo[k] = math.exp(x[s, k] - top)
        acc = 0.0
        product = 1.0
        halvings = 0
        for p in range(P):
            i = first[p]
            j = second[p]
            d = x[s, i] - x[s, j]
            small, large = (expo[j], expo[i]) if d >= 0.0 else (expo[i], expo[j])
            if large <= 1e-300:  # both models far below the row's best: e^(x - max x) is subnormal
                acc += n[p] * _log_expit(d)
            elif whole[p] >= 0:
                acc += n[p] * min(d, 0.0)
                product *= _int_power(1.0 + small / large, whole[p])
                if product > _RESCALE:
                    product /= _RESCALE
                    halvings += 600
            else:
                acc += n[p] * (min(d, 0.0) - math.log1p(small / large))
        acc -= math.log(product) + halvings * _LN2
        lin = 0.0
        sq = 0.0
        for k in range(L):
            lin += x[s, k] * loss_nodes[k]
            sq += x[s, k] * x[s, k]
        out[s] = acc - lin - 0.5 * sq / prior_var
    return out


@njit(cache=True)
def independence_chain(log_u, log_w, start_log_w):
    """Accept/reject path of an independence Metropolis-Hastings chain.

    Proposal ``k`` (importance log-weight ``log_w[k]``) replaces the current state when
    ``log_u[k] < log_w[k] - current``.  Returns the index of the state held after every
    step (-1: still the start) and the number of accepted proposals.
    """
    index = np.empty(log_w.size, dtype=np.int64)
    cur = -1
    current = start_log_w
    accepted = 0
    for k in range(log_w.size):
        if log_u[k] < log_w[k] - current:
            cur = k
            current = log_w[k]
            accepted += 1
        index[k] = cur
    return index, accepted
