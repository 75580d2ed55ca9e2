"""The Rasch MML EM of one problem, compiled (the core of :func:`.mml.fit_rasch_mml_batch`).

Paper Alg. "Rasch MML" (Bock & Aitkin, 1981).  With nodes ``z_q`` and weights ``w_q`` of
Gauss-Hermite quadrature for N(0, 1) and the common slope ``s`` (the population sd),
every EM iteration

- E-step: ``log post_lq = sum_m [k_lm log sigma(eta_qm) + (n_lm - k_lm) log sigma(-eta_qm)]
  + log w_q`` with ``eta_qm = s z_q - b_m``, normalised over q;
- expected counts per node ``r_qm = sum_l post_lq k_lm``, ``s_qm = sum_l post_lq n_lm``;
- M-step: for every item, safeguarded Newton on the increasing score
  ``g(b_m) = sum_q s_qm sigma(eta_qm) - sum_q r_qm`` (steps clipped to +-2) until no
  difficulty moves by 1e-12; with a free population sd the slope follows by the same
  Newton on ``sum_qm (r_qm - s_qm sigma) z_q = 0`` (steps clipped to +-0.5, s >= 1e-3);

and EM stops when neither the difficulties nor the slope move by more than ``tol``.
``log sigma(-eta) = log sigma(eta) - eta`` needs one logarithm per node and item.

Problems are independent and the kernel releases the GIL, so a batch is split over
threads; a problem's result does not depend on the problems fitted with it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesrank.baselines._mcmc_kernels import _log_expit
from bayesrank.baselines.irt._xpl_kernel import _JIT, _expit


@njit(**_JIT)
def e_step(k, n, z, log_w, slope, b, post):
    """Posterior over the nodes of every model into ``post`` (L, Q); returns the
    marginal log-likelihood (without the binomial constants)."""
    L, M = k.shape
    Q = z.size
    log_p = np.empty((Q, M))
    for q in range(Q):
        for m in range(M):
            log_p[q, m] = _log_expit(slope * z[q] - b[m])
    total = 0.0
    for l in range(L):
        top = -np.inf
        for q in range(Q):
            acc = log_w[q]
            for m in range(M):
                lp = log_p[q, m]
                acc += k[l, m] * lp + (n[l, m] - k[l, m]) * (lp - (slope * z[q] - b[m]))
            post[l, q] = acc
            top = max(top, acc)
        norm = 0.0
        for q in range(Q):
            post[l, q] = math.exp(post[l, q] - top)
            norm += post[l, q]
        for q in range(Q):
            post[l, q] /= norm
        total += math.log(norm) + top
    return total


@njit(**_JIT)
def _difficulties(r_sum, s, z, slope, b, max_iter):
    """M-step for the difficulties (in place); ``r_sum`` (M,) = sum_q r_qm."""
    Q, M = s.shape
    for _ in range(max_iter):
        largest = 0.0
        for m in range(M):
            g, h = -r_sum[m], 0.0
            for q in range(Q):
                p = _expit(slope * z[q] - b[m])
                g += s[q, m] * p
                h += s[q, m] * p * (1.0 - p)
            step = min(max(g / max(h, 1e-300), -2.0), 2.0)
            b[m] += step
            largest = max(largest, abs(step))
        if largest < 1e-12:
            break


@njit(**_JIT)
def _slope(r, s, z, b, slope, max_iter):
    """M-step for the common slope (the free population sd)."""
    Q, M = s.shape
    for _ in range(max_iter):
        g, h = 0.0, 0.0
        for q in range(Q):
            for m in range(M):
                p = _expit(slope * z[q] - b[m])
                g += (r[q, m] - s[q, m] * p) * z[q]
                h += s[q, m] * p * (1.0 - p) * z[q] * z[q]
        step = min(max(g / max(h, 1e-300), -0.5), 0.5)
        slope = max(slope + step, 1e-3)
        if abs(step) < 1e-12:
            break
    return slope


@njit(**_JIT)
def em(k, n, z, log_w, slope, b, free_slope, em_iter, max_iter, tol):
    """EM of one problem from ``(slope, b)``; ``b`` is updated in place.

    Returns ``(slope, posterior (L, Q), log-likelihood, iterations, converged)``.
    """
    L, M = k.shape
    Q = z.size
    post = np.empty((L, Q))
    r, s = np.empty((Q, M)), np.empty((Q, M))
    r_sum = np.empty(M)
    n_iter, converged = 0, False
    for it in range(1, em_iter + 1):
        e_step(k, n, z, log_w, slope, b, post)
        r[:], s[:] = 0.0, 0.0
        for l in range(L):
            for q in range(Q):
                w = post[l, q]
                for m in range(M):
                    r[q, m] += w * k[l, m]
                    s[q, m] += w * n[l, m]
        for m in range(M):
            r_sum[m] = 0.0
            for q in range(Q):
                r_sum[m] += r[q, m]
        old = b.copy()
        _difficulties(r_sum, s, z, slope, b, max_iter)
        new_slope = _slope(r, s, z, b, slope, max_iter) if free_slope else slope
        change = abs(new_slope - slope)
        for m in range(M):
            change = max(change, abs(b[m] - old[m]))
        slope, n_iter = new_slope, it
        if change < tol:
            converged = True
            break
    log_lik = e_step(k, n, z, log_w, slope, b, post)
    return slope, post, log_lik, n_iter, converged


@njit(**_JIT)
def em_many(k, n, z, log_w, slope, b, free_slope, em_iter, max_iter, tol):
    """:func:`em` for each of B problems (leading batch axis; ``b``, ``slope`` updated)."""
    B, L = k.shape[0], k.shape[1]
    post = np.empty((B, L, z.size))
    log_lik = np.empty(B)
    n_iter = np.zeros(B, np.int64)
    converged = np.zeros(B, np.bool_)
    for i in range(B):
        slope[i], post[i], log_lik[i], n_iter[i], converged[i] = em(
            k[i], n[i], z, log_w, slope[i], b[i], free_slope, em_iter, max_iter, tol)
    return post, log_lik, n_iter, converged
