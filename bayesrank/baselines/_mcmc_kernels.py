"""Compiled inner loops of the Bayesian Bradley-Terry independence sampler.

Kept apart from :mod:`bayesrank.baselines.paired` so that numba is imported only when
:func:`bayesrank.baselines.paired.bt_posterior_draws` first runs.  Both loops are
sequential sums in a fixed order, so a chain's result does not depend on which batch
of chains it was computed in.  Compiled on first use and cached on disk; the two entry
points release the GIL, so chains of different draws can run on threads side by side.
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
_UNSCALE = 2.0**-600  # product * _UNSCALE == product / _RESCALE exactly (product > 2^600)


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
def whole_counts(n):
    """Each pair's count when it is a whole number up to ``_SMALL_COUNT``, else -1."""
    whole = np.empty(n.size, dtype=np.int64)
    for p in range(n.size):
        c = n[p]
        whole[p] = int(c) if c == math.floor(c) and 0.0 <= c <= _SMALL_COUNT else -1
    return whole


@njit(cache=True)
def log_posterior_row(x, first, second, n, whole, loss_nodes, prior_var):
    """:func:`bt_log_posterior` of one row ``x`` (L,), pair by pair (the reference order)."""
    L = x.size
    top = x[0]
    for k in range(1, L):
        top = max(top, x[k])
    expo = np.empty(L)
    for k in range(L):
        expo[k] = math.exp(x[k] - top)
    acc = 0.0
    product = 1.0
    halvings = 0
    for p in range(first.size):
        i = first[p]
        j = second[p]
        d = x[i] - x[j]
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
        lin += x[k] * loss_nodes[k]
        sq += x[k] * x[k]
    return acc - lin - 0.5 * sq / prior_var


_ROWS = 64  # rows evaluated side by side: per-row accumulators stay in L1


# error_model="numpy": a division by an underflowed e^(x - max x) gives inf or nan on that
# lane (the row is redone) instead of raising, and leaves the row loops free of checks
@njit(cache=True, nogil=True, error_model="numpy")
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

    Every row is :func:`log_posterior_row` operation for operation (same values, same
    order per row), but rows are taken ``_ROWS`` at a time with the pair loop outside
    the row loop, so the branch-free pair work runs on SIMD lanes across rows.  A row
    where some model's ``e^(x - max x)`` underflows is redone by :func:`log_posterior_row`.
    """
    S, L = x.shape
    P = first.size
    whole = whole_counts(n)
    out = np.empty(S)
    xt = np.empty((L, _ROWS))
    expo = np.empty((L, _ROWS))
    acc = np.empty(_ROWS)
    product = np.empty(_ROWS)
    halvings = np.empty(_ROWS, dtype=np.int64)
    base = np.empty(_ROWS)
    power = np.empty(_ROWS)
    underflow = np.empty(_ROWS, dtype=np.bool_)
    for s0 in range(0, S, _ROWS):
        R = min(_ROWS, S - s0)
        for r in range(R):
            top = x[s0 + r, 0]
            for k in range(1, L):
                top = max(top, x[s0 + r, k])
            tiny = False
            for k in range(L):
                xt[k, r] = x[s0 + r, k]
                expo[k, r] = math.exp(x[s0 + r, k] - top)
                tiny |= expo[k, r] <= 1e-300
            acc[r] = 0.0
            product[r] = 1.0
            halvings[r] = 0
            # a pair can underflow only where some model does: such rows (rare) are redone
            underflow[r] = tiny
        for p in range(P):
            i = first[p]
            j = second[p]
            c = whole[p]
            if c >= 0:
                for r in range(R):
                    d = xt[i, r] - xt[j, r]
                    small = expo[j, r] if d >= 0.0 else expo[i, r]
                    large = expo[i, r] if d >= 0.0 else expo[j, r]
                    acc[r] += n[p] * min(d, 0.0)
                    base[r] = 1.0 + small / large
                    power[r] = 1.0
                while c:  # _int_power on every lane: the same squarings in the same order
                    if c & 1:
                        for r in range(R):
                            power[r] *= base[r]
                    c >>= 1
                    if c:
                        for r in range(R):
                            base[r] *= base[r]
                for r in range(R):
                    product[r] *= power[r]
                    big = product[r] > _RESCALE
                    product[r] = product[r] * _UNSCALE if big else product[r]
                    halvings[r] += 600 if big else 0
            else:
                for r in range(R):
                    d = xt[i, r] - xt[j, r]
                    small = expo[j, r] if d >= 0.0 else expo[i, r]
                    large = expo[i, r] if d >= 0.0 else expo[j, r]
                    acc[r] += n[p] * (min(d, 0.0) - math.log1p(small / large))
        for r in range(R):
            s = s0 + r
            if underflow[r]:
                out[s] = log_posterior_row(x[s], first, second, n, whole, loss_nodes,
                                           prior_var)
                continue
            a = acc[r] - (math.log(product[r]) + halvings[r] * _LN2)
            lin = 0.0
            sq = 0.0
            for k in range(L):
                lin += x[s, k] * loss_nodes[k]
                sq += x[s, k] * x[s, k]
            out[s] = a - lin - 0.5 * sq / prior_var
    return out


@njit(cache=True, nogil=True)
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


@njit(cache=True)
def laplace_precision(first, second, weights, met, prior_var, L):
    """Laplace precisions ``B^T diag(w) B + I / prior_var`` of B chains, (B, L, L).

    ``weights`` (B, P): ``n s (1 - s)`` of the pairs ``(first[p], second[p])`` at the
    mode; ``met`` (B, P): the pairs that met, the only ones a chain's sparse construction
    (the met pairs' ``-w`` off the diagonal, their ``np.bincount`` sums on it) keeps.  Its
    sums run in the same order, so each matrix equals that construction bit for bit.
    """
    B = weights.shape[0]
    H = np.zeros((B, L, L))
    d_i = np.zeros(L)
    d_j = np.zeros(L)
    for b in range(B):
        d_i[:] = 0.0
        d_j[:] = 0.0
        for p in range(first.size):
            if not met[b, p]:
                continue
            i, j, w = first[p], second[p], weights[b, p]
            H[b, i, j] = -w + 0.0
            H[b, j, i] = -w + 0.0
            d_i[i] += w
            d_j[j] += w
        for k in range(L):
            H[b, k, k] = (d_i[k] + d_j[k]) + 1.0 / prior_var
    return H


@njit(cache=True, nogil=True)
def chain_mean(states, row_means, first, second, n, loss_nodes, prior_var, log_u, log_q,
               burnin):
    """Mean of the centred kept states of one independence chain, and its accepted count.

    ``states`` (T + 1, L): row 0 the start (the mode), row ``k + 1`` proposal ``k``;
    ``row_means`` (T + 1,) their means over models.  The chain is
    :func:`independence_chain` on the log-weights ``bt_log_posterior - log_q``; the
    result is ``mean_k (states[h_k] - row_means[h_k])`` over the held states ``h_k`` of
    steps ``k >= burnin``, summed in step order and divided by the count, as
    ``numpy.mean`` of the gathered draws (axis 0) does, without gathering them.
    """
    log_w = bt_log_posterior(states, first, second, n, loss_nodes, prior_var)
    index, accepted = independence_chain(log_u, log_w[1:] - log_q, log_w[0])
    L = states.shape[1]
    acc = np.zeros(L)
    for k in range(burnin, index.size):
        h = index[k] + 1
        centre = row_means[h]
        if k == burnin:
            for j in range(L):
                acc[j] = states[h, j] - centre
        else:
            for j in range(L):
                acc[j] += states[h, j] - centre
    return acc / (index.size - burnin), accepted
