"""Rasch person scores of an MML fit, compiled (the person side of :mod:`.mml`).

Given the fitted difficulties ``b_m`` and the population sd ``s``, a model with counts
``k_m`` of ``n_m`` trials has the log posterior (up to a constant)

``g(theta) = K theta - sum_m n_m log(1 + exp(theta - b_m)) - theta^2 / (2 s^2)``,
``K = sum_m k_m``,

strictly concave (its curvature is at most ``-1 / s^2``), so the posterior is log-concave
and unimodal.  Per model, :func:`scores`

1. finds the mode ``theta_hat`` (Newton on ``g'`` inside the bracket
   ``[s^2 (K - N), s^2 K]`` with ``N = sum_m n_m``, bisecting when a step leaves it) and the
   curvature scale ``sigma_hat = (-g''(theta_hat))^(-1/2)``;
2. in ``u = (theta - theta_hat) / sigma_hat`` finds where the log density has fallen by
   :data:`DROP` below the mode on each side (Newton on the concave ``g``);
3. integrates ``exp(g - g(theta_hat))`` over that range by Gauss-Legendre quadrature
   (``n_nodes`` nodes) for the normaliser, mean and variance;
4. for a quantile ``q``, solves ``F(t) = q`` by Newton with a bisection safeguard from the
   normal approximation: ``F`` there is the Gauss-Legendre integral over ``[u_lo, t]``,
   and each Newton step of at most ``SHORT`` adds a short (16-node) rule's integral over
   the step.

Models are independent: a model's scores depend only on its own counts and the item
parameters, so they do not depend on the other models or problems scored with it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesrank.baselines.irt._xpl_kernel import _JIT, _expit, _softplus

#: the range covers the posterior down to ``exp(-DROP)`` of its mode
DROP = 40.0
#: longest quantile step (in ``u``) integrated by the short rule alone
SHORT = 0.5


@njit(**_JIT)
def _log_post(theta, total, n, b, var):
    acc = total * theta - 0.5 * theta * theta / var
    for m in range(b.size):
        if n[m] > 0:
            acc -= n[m] * _softplus(theta - b[m])[0]
    return acc


@njit(**_JIT)
def _slope_curv(theta, total, n, b, var):
    """``(g'(theta), g''(theta))``."""
    g, h = total - theta / var, -1.0 / var
    for m in range(b.size):
        if n[m] > 0:
            p = _expit(theta - b[m])
            g -= n[m] * p
            h -= n[m] * p * (1.0 - p)
    return g, h


@njit(**_JIT)
def _mode(total, n, b, var):
    """Mode of the strictly concave ``g``: bracketed Newton on the decreasing ``g'``."""
    lo, hi = var * (total - n.sum()), var * total  # g'(lo) >= 0 >= g'(hi)
    theta = min(max(0.0, lo), hi)
    for _ in range(200):
        g, h = _slope_curv(theta, total, n, b, var)
        if g > 0:
            lo = theta
        else:
            hi = theta
        new = theta - g / h
        if abs(new - theta) <= 1e-15 * (1.0 + abs(theta)):
            return new  # converged (before the bracket test: a rounding-size step may cross it)
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * (1.0 + abs(theta)):
            return new
        theta = new
    return theta


@njit(**_JIT)
def _edge(sign, mode, scale, top, total, n, b, var):
    """``u`` (sign +1: right of the mode, -1: left) where ``g`` is ``DROP`` below ``top``:
    Newton on the concave ``g - top + DROP``, which converges monotonically after the
    first step."""
    u = sign * math.sqrt(2.0 * DROP)
    for _ in range(100):
        theta = mode + scale * u
        f = _log_post(theta, total, n, b, var) - top + DROP
        g, _ = _slope_curv(theta, total, n, b, var)
        step = -f / (g * scale)
        u += step
        if abs(step) < 1e-6 * abs(u):
            break
    return u


@njit(**_JIT)
def _integral(a, c, x, w, mode, scale, top, total, n, b, var, moments):
    """Gauss-Legendre integrals of ``u^j exp(g - top)`` over ``[a, c]``, j < moments.size."""
    half, mid = 0.5 * (c - a), 0.5 * (c + a)
    moments[:] = 0.0
    for j in range(x.size):
        u = mid + half * x[j]
        f = w[j] * half * math.exp(_log_post(mode + scale * u, total, n, b, var) - top)
        for i in range(moments.size):
            moments[i] += f
            f *= u


@njit(**_JIT)
def _quantile(q, lo, hi, norm, rules, mode, scale, top, total, n, b, var, t0):
    """``t`` in ``[lo, hi]`` with ``F(t) = q``: Newton on the increasing CDF, bisecting
    whenever a step would leave the bracket.  ``F`` at the start is the full rule's
    integral over ``[lo, t]``; a step of at most :data:`SHORT` adds the short rule's
    integral over the step (the density varies on the scale 1 there)."""
    x, w, xs, ws = rules
    a, c, t = lo, hi, min(max(t0, lo), hi)
    buf = np.empty(1)
    _integral(lo, t, x, w, mode, scale, top, total, n, b, var, buf)
    mass = buf[0]
    for _ in range(100):
        f = mass / norm - q
        if f < 0:
            a = t
        else:
            c = t
        dens = math.exp(_log_post(mode + scale * t, total, n, b, var) - top) / norm
        new = t - f / dens if dens > 0 else 0.5 * (a + c)
        if abs(new - t) < 1e-13 * max(1.0, abs(t)):
            return new  # converged (before the bracket test: a rounding-size step may cross it)
        if not a < new < c:
            new = 0.5 * (a + c)
        if abs(new - t) <= SHORT:
            _integral(t, new, xs, ws, mode, scale, top, total, n, b, var, buf)
            mass += buf[0]
        else:
            _integral(lo, new, x, w, mode, scale, top, total, n, b, var, buf)
            mass = buf[0]
        t = new
    return t


@njit(**_JIT)
def scores(total, n, b, slope, rules, q, t0, out):
    """Per-model posterior mean, sd and (q not NaN) ``q``-quantile of abilities.

    ``total`` (L,) total successes, ``n`` (L, M) trials (0 where an item is set aside),
    ``b`` (M,) difficulties, ``slope`` the population sd, ``rules`` the nodes and weights
    on [-1, 1] of the full and the short Gauss-Legendre rules ``(x, w, xs, ws)``, ``t0``
    the standard-normal ``q``-quantile (a start); ``out`` (L, 3) receives
    ``(mean, sd, quantile)``.
    """
    x, w = rules[0], rules[1]
    var = slope * slope
    moments = np.empty(3)
    for l in range(total.size):
        mode = _mode(total[l], n[l], b, var)
        _, h = _slope_curv(mode, total[l], n[l], b, var)
        scale = 1.0 / math.sqrt(-h)
        top = _log_post(mode, total[l], n[l], b, var)
        lo = _edge(-1.0, mode, scale, top, total[l], n[l], b, var)
        hi = _edge(1.0, mode, scale, top, total[l], n[l], b, var)
        _integral(lo, hi, x, w, mode, scale, top, total[l], n[l], b, var, moments)
        mean = moments[1] / moments[0]
        out[l, 0] = mode + scale * mean
        out[l, 1] = scale * math.sqrt(max(moments[2] / moments[0] - mean * mean, 0.0))
        out[l, 2] = np.nan
        if not math.isnan(q):
            out[l, 2] = mode + scale * _quantile(q, lo, hi, moments[0], rules, mode, scale,
                                                 top, total[l], n[l], b, var, t0)


@njit(**_JIT)
def scores_many(total, n, b, slope, rules, q, t0):
    """:func:`scores` for each of B problems (leading batch axis); returns (B, L, 3)."""
    out = np.empty((total.shape[0], total.shape[1], 3))
    for i in range(total.shape[0]):
        scores(total[i], n[i], b[i], slope[i], rules, q, t0, out[i])
    return out
