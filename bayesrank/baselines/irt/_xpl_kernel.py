"""Newton stages of the JML / MAP xPL objective, compiled, one problem at a time.

The numeric core of :func:`.xpl_batch.fit_xpl_batch` (paper App. "Item Response Theory
(IRT) Methods", Alg. "Binomial xPL IRT"), compiled with Numba: the objective, its
gradient and curvatures, the constrained Newton step and the projected Armijo iteration
of one problem, whose result does not depend on the problems given with it (compiled
rather than a numpy lockstep: ``docs/study.md`` has the measurements).

Per cell, with ``eta = a (theta - b)``, ``p = c + (1 - c) sigma(eta)`` and
``s = (1 - c) sigma / p``, the loss ``-k log p - (n - k) log(1 - p)`` has

- ``l_eta = (n - k) sigma - k s (1 - sigma)``, ``l_c = -k (1 - sigma) / p + (n - k) / (1 - c)``;
- ``l_eta_eta = (n - k) sigma (1 - sigma) - k [s (1 - sigma)(1 - 2 sigma) - s^2 (1 - sigma)^2]``,
  ``l_eta_c = k sigma (1 - sigma) / p^2``, ``l_cc = k (1 - sigma)^2 / p^2 + (n - k) / (1 - c)^2``;

expected values (Fisher): ``n s sigma (1 - sigma)``, ``n sigma (1 - sigma) / p``,
``n (1 - sigma) / (p (1 - c))``.  Parameters enter through ``eta`` (theta: a; b: -a;
log a: eta) and ``c = upper * sigmoid(gamma)``; the chain rule assembles the block
Hessians and the penalty Hessians are added exactly.  A Newton step tries the observed
Hessian, then the mixed one (Fisher blocks on the items whose observed block is not
positive definite: near-step items), then the Fisher information.

Only a problem's informative items enter the loops; the others keep their values (their
counts are zero and they are held out of the steps and of the centring).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from bayesrank.baselines.irt._newton import DIVERGED, FLAT_GAIN, FLAT_STEPS

RUNNING, CONVERGED, STALLED, MAX_ITER, DIVERGED_STATUS = 0, 1, 2, 3, 4
# The Armijo search tries the steps 2^-j, j = 0..N_HALVINGS - 1, and takes the first that
# decreases the objective enough.
N_HALVINGS = 40
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@njit(**_JIT)
def _softplus(x):
    """``log(1 + e^x)`` and ``sigmoid(x)`` from one exponential."""
    e = math.exp(-abs(x))
    return max(x, 0.0) + math.log1p(e), (1.0 / (1.0 + e) if x >= 0 else e / (1.0 + e))


@njit(**_JIT)
def _expit(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@njit(**_JIT)
def _guess(v, m, cfg):
    """``c_m``: ``upper * sigmoid(gamma_m)`` or the fixed guessing."""
    return cfg[3] * _expit(v[m, 2]) if cfg[8] > 0 else cfg[4]


@njit(**_JIT)
def value(theta, v, k, n, items, cfg, scale):
    """The xPL objective of one problem divided by its ``scale``.

    ``-sum_lm [k log p + (n - k) log(1 - p)] + |theta|^2 / (2 prior_var)
    + reg_a |log a|^2 + reg_c |gamma|^2`` (see :func:`.xpl.fit_irt`) over the ``items``
    given; ``cfg`` = (prior_var or NaN, reg_a, reg_c, upper, fixed_c or NaN, model 1/2/3,
    has_a, scale_free, free_c, log-a bound) (:func:`.xpl_batch.kernel_config`).
    """
    three, has_a = cfg[5] == 3, cfg[6] > 0
    total = 0.0
    for m in items:
        b = v[m, 0]
        a = math.exp(v[m, 1]) if has_a else 1.0
        c = _guess(v, m, cfg) if three else 0.0
        l1c = math.log1p(-c)
        for l in range(theta.size):
            eta = a * (theta[l] - b)
            kk, nn = k[l, m], n[l, m]
            soft, sig = _softplus(eta)  # -log(1 - sigma) and sigma
            if three:  # log p = log(c + (1 - c) sigma), log(1 - p) = log(1 - c) - softplus
                log_p = math.log(c + (1.0 - c) * sig) if c > 0 else eta - soft
                total -= kk * log_p + (nn - kk) * (l1c - soft)
            else:
                total += nn * soft - kk * eta
    if not math.isnan(cfg[0]):
        total += 0.5 * np.sum(theta * theta) / cfg[0]
    if has_a:
        total += cfg[1] * np.sum(v[:, 1] * v[:, 1])
    if cfg[8] > 0:
        total += cfg[2] * np.sum(v[:, 2] * v[:, 2])
    return total / scale


@njit(**_JIT)
def cell_derivatives(theta, v, k, n, items, cfg):
    """Per-cell derivative pieces (L, M): ``g_eta``, observed and Fisher curvatures.

    Returns ``a``, ``dc``, ``d2c`` (M,) (discrimination, first and second derivative of
    ``c`` in the guessing logit) and ``cells`` (9, L, M): ``eta``, ``l_eta``, observed
    and Fisher ``l_eta_eta``, ``l_c``, observed ``l_eta_c``, ``l_cc``, Fisher ``l_eta_c``,
    ``l_cc`` (module notes; the guessing pieces are zero without a free guessing
    parameter).
    """
    L, M = k.shape
    three, has_a, free_c = cfg[5] == 3, cfg[6] > 0, cfg[8] > 0
    a = np.ones(M)
    dc, d2c = np.zeros(M), np.zeros(M)
    out = np.zeros((9, L, M))
    for m in items:
        if has_a:
            a[m] = math.exp(v[m, 1])
        c = _guess(v, m, cfg) if three else 0.0
        if free_c:
            unit = _expit(v[m, 2])
            dc[m] = cfg[3] * unit * (1.0 - unit)
            d2c[m] = dc[m] * (1.0 - 2.0 * unit)
        for l in range(L):
            eta = a[m] * (theta[l] - v[m, 0])
            kk, nn = k[l, m], n[l, m]
            sig = _softplus(eta)[1]
            s1 = sig * (1.0 - sig)
            out[0, l, m] = eta
            if three:
                p = c + (1.0 - c) * sig
                share = (1.0 - c) * sig / p if c > 0 else 1.0  # (1 - c) sigma / p
                q1 = share * (1.0 - sig)
                out[1, l, m] = (nn - kk) * sig - kk * q1
                out[2, l, m] = (nn - kk) * s1 - kk * (q1 * (1.0 - 2.0 * sig) - q1 * q1)
                out[3, l, m] = nn * share * s1
                if free_c:
                    out[4, l, m] = -kk * (1.0 - sig) / p + (nn - kk) / (1.0 - c)
                    out[5, l, m] = kk * s1 / (p * p)
                    out[6, l, m] = kk * (1.0 - sig) ** 2 / (p * p) + (nn - kk) / (1.0 - c) ** 2
                    out[7, l, m] = nn * s1 / p
                    out[8, l, m] = nn * (1.0 - sig) / (p * (1.0 - c))
            else:
                out[1, l, m] = nn * sig - kk
                out[2, l, m] = nn * s1
                out[3, l, m] = nn * s1
    return a, dc, d2c, out


@njit(**_JIT)
def gradient(theta, v, items, cfg, scale, a, dc, cells):
    """``(g_u (L,), g_v (M, q))`` of :func:`value` from :func:`cell_derivatives`."""
    L, M, q = theta.size, v.shape[0], v.shape[1]
    has_a, free_c = cfg[6] > 0, cfg[8] > 0
    g_u, g_v = np.zeros(L), np.zeros((M, q))
    for m in items:
        for l in range(L):
            g = cells[1, l, m]
            g_u[l] += g * a[m]
            g_v[m, 0] -= g * a[m]
            if has_a:
                g_v[m, 1] += g * cells[0, l, m]
            if free_c:
                g_v[m, 2] += cells[4, l, m] * dc[m]
        if has_a:
            g_v[m, 1] += 2.0 * cfg[1] * v[m, 1]
        if free_c:
            g_v[m, 2] += 2.0 * cfg[2] * v[m, 2]
    if not math.isnan(cfg[0]):
        g_u += theta / cfg[0]
    return g_u / scale, g_v / scale


@njit(**_JIT)
def hessian(theta, items, cfg, scale, a, dc, d2c, cells, observed, only):
    """Block Hessian ``(uu (L,), uv (L, M, q), vv (M, q, q))``, observed or Fisher.

    ``only`` (M,) bool: the items assembled (the others stay zero).
    """
    L, M = cells.shape[1], cells.shape[2]
    has_a, free_c = cfg[6] > 0, cfg[8] > 0
    q = 1 + has_a + free_c
    A_at, X_at, Y_at = (2, 5, 6) if observed else (3, 7, 8)
    uu, uv, vv = np.zeros(L), np.zeros((L, M, q)), np.zeros((M, q, q))
    de = np.zeros(q)
    for m in items:
        if not only[m]:
            continue
        for l in range(L):
            A, g, eta = cells[A_at, l, m], cells[1, l, m], cells[0, l, m]
            de[0] = -a[m]
            if has_a:
                de[1] = eta
            uu[l] += A * a[m] * a[m]
            for i in range(1 + has_a):
                uv[l, m, i] = A * a[m] * de[i]
                for j in range(i + 1):
                    vv[m, i, j] += A * de[i] * de[j]
            if observed and has_a:
                uv[l, m, 1] += g * a[m]
                vv[m, 1, 0] -= g * a[m]
                vv[m, 1, 1] += g * eta
            if free_c:
                X = cells[X_at, l, m]
                uv[l, m, 2] = X * a[m] * dc[m]
                for j in range(1 + has_a):
                    vv[m, 2, j] += X * de[j] * dc[m]
                vv[m, 2, 2] += cells[Y_at, l, m] * dc[m] * dc[m]
                if observed:
                    vv[m, 2, 2] += cells[4, l, m] * d2c[m]
        if free_c:
            vv[m, 2, 2] += 2.0 * cfg[2]
        if has_a:
            vv[m, 1, 1] += 2.0 * cfg[1]
        for i in range(q):
            for j in range(i):
                vv[m, j, i] = vv[m, i, j]
    if not math.isnan(cfg[0]):
        uu += 1.0 / cfg[0]
    return uu / scale, uv / scale, vv / scale


@njit(**_JIT)
def _positive_definite(mat, q):
    """Whether the symmetric ``mat[:q, :q]`` (q <= 3) is positive definite (Sylvester)."""
    d1 = mat[0, 0]
    if q == 1 or not d1 > 0:
        return d1 > 0
    d2 = d1 * mat[1, 1] - mat[0, 1] * mat[1, 0]
    if q == 2 or not d2 > 0:
        return d2 > 0
    return _det3(mat) > 0


@njit(**_JIT)
def _det3(m):
    return (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1])
            - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))


@njit(**_JIT)
def _invert_small(m, out):
    """``out = m^-1`` for q <= 3 (adjugate); False if ``m`` is singular."""
    q = m.shape[0]
    if q == 1:
        out[0, 0] = 1.0 / m[0, 0]
        return m[0, 0] != 0
    if q == 2:
        det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
        if det == 0:
            return False
        out[0, 0], out[1, 1] = m[1, 1] / det, m[0, 0] / det
        out[0, 1], out[1, 0] = -m[0, 1] / det, -m[1, 0] / det
        return True
    det = _det3(m)
    if det == 0:
        return False
    for i in range(3):
        for j in range(3):
            r0, r1 = (j + 1) % 3, (j + 2) % 3
            c0, c1 = (i + 1) % 3, (i + 2) % 3
            out[i, j] = (m[r0, c0] * m[r1, c1] - m[r0, c1] * m[r1, c0]) / det
    return True


@njit(**_JIT)
def _solve(mat, rhs):
    """``mat^-1 rhs`` (rhs (n, r)) by LU with partial pivoting; ok False on a zero pivot."""
    a, x = mat.copy(), rhs.copy()
    size, width = a.shape[0], x.shape[1]
    for col in range(size):
        piv = col
        for row in range(col + 1, size):
            if abs(a[row, col]) > abs(a[piv, col]):
                piv = row
        if a[piv, col] == 0:
            return x, False
        if piv != col:
            for t in range(size):
                a[col, t], a[piv, t] = a[piv, t], a[col, t]
            for t in range(width):
                x[col, t], x[piv, t] = x[piv, t], x[col, t]
        for row in range(col + 1, size):
            f = a[row, col] / a[col, col]
            if f != 0:
                for t in range(col, size):
                    a[row, t] -= f * a[col, t]
                for t in range(width):
                    x[row, t] -= f * x[col, t]
    for col in range(size - 1, -1, -1):
        for t in range(width):
            x[col, t] /= a[col, col]
        for row in range(col):
            for t in range(width):
                x[row, t] -= a[row, col] * x[col, t]
    return x, True


@njit(**_JIT)
def newton_step(g_u, g_v, uu, uv, vv, fixed, constrained, items, require_convex):
    """Constrained Newton step of one problem (:func:`._newton.newton_step`'s system).

    Components ``fixed`` (M, q) leave the system (step 0); columns ``constrained`` of
    the step sum to zero over the items' free components.  The item blocks are
    eliminated (Schur complement onto the L abilities and the multipliers).  Returns
    ``(du, dv, ok)``; ``ok`` is False where the system is singular or, with
    ``require_convex``, not positive semi-definite.
    """
    L, M, q = uv.shape
    n_c = constrained.size
    du, dv = np.zeros(L), np.zeros((M, q))
    free = ~fixed
    vf = np.zeros((M, q, q))
    diag = float((M - items.size) * q)  # the frozen identity blocks of the held items
    for m in items:
        for i in range(q):
            for j in range(q):
                vf[m, i, j] = vv[m, i, j] if free[m, i] and free[m, j] else (1.0 if i == j else 0.0)
            diag += abs(vf[m, i, i])
        if require_convex and not _positive_definite(vf[m], q):
            return du, dv, False
    ridge = 1e-12 * (diag / (M * q) + 1e-300)
    K = np.zeros((M, q, q))
    HK = np.zeros((L, M, q))
    uvf = np.zeros((L, M, q))
    for m in items:
        for i in range(q):
            vf[m, i, i] += ridge
        if not _invert_small(vf[m], K[m]):
            return du, dv, False
        inv = K[m]
        for l in range(L):
            for i in range(q):
                uvf[l, m, i] = uv[l, m, i] if free[m, i] else 0.0
            for j in range(q):
                s = 0.0
                for i in range(q):
                    s += uvf[l, m, i] * inv[i, j]
                HK[l, m, j] = s
    g_free = np.where(free, g_v, 0.0).reshape(M * q)
    HK_flat = HK.reshape(L, M * q)
    size = L + n_c
    system = np.zeros((size, size))
    rhs = np.zeros((size, 1))
    system[:L, :L] = -np.dot(HK_flat, uvf.reshape(L, M * q).T)
    rhs[:L, 0] = np.dot(HK_flat, g_free) - g_u
    for l in range(L):
        system[l, l] += uu[l]
    if require_convex:
        eig = np.linalg.eigvalsh(system[:L, :L])
        if eig[0] < -1e-9 * max(abs(eig[-1]), 1e-300):
            return du, dv, False
    for c in range(n_c):
        jc = constrained[c]
        for m in items:
            if not free[m, jc]:
                continue
            for j in range(q):
                rhs[L + c, 0] += K[m, jc, j] * g_free[m * q + j]
            for l in range(L):
                system[l, L + c] -= HK[l, m, jc]
            for c2 in range(n_c):
                if free[m, constrained[c2]]:
                    system[L + c, L + c2] -= K[m, jc, constrained[c2]]
        for l in range(L):
            system[L + c, l] = system[l, L + c]
    sol, ok = _solve(system, rhs)
    if not ok:
        return du, dv, False
    du[:] = sol[:L, 0]
    forcing = np.zeros(q)
    for m in items:
        for i in range(q):
            if not free[m, i]:
                forcing[i] = 0.0
                continue
            f = g_v[m, i]
            for l in range(L):
                f += du[l] * uvf[l, m, i]
            for c in range(n_c):
                if constrained[c] == i:
                    f += sol[L + c, 0]
            forcing[i] = f
        for i in range(q):
            s = 0.0
            for j in range(q):
                s -= K[m, i, j] * forcing[j]
            dv[m, i] = s
    return du, dv, True


@njit(**_JIT)
def _project(v, cfg):
    if cfg[6] > 0:
        lim = cfg[9]
        for m in range(v.shape[0]):
            v[m, 1] = min(max(v[m, 1], -lim), lim)
    return v


@njit(**_JIT)
def stage(k, n, keep, scale, theta, v, cfg, max_iter):
    """Projected Newton with an Armijo line search for one problem, from ``(theta, v)``.

    Curvatures tried in order (the first that gives a descent step): observed, mixed
    (only where some informative item's observed block is not positive definite),
    Fisher (the fallback, not required convex).  The difficulties (and, for a JML 2PL
    without a ridge, ``log a``) keep summing to zero over the informative items and
    ``|log a| <= bound``: components at the bound pushed outwards are held for the step.
    Stops when the Newton decrement falls to the rounding level of the objective
    (CONVERGED), when no step decreases it or FLAT_STEPS steps in a row barely do
    (STALLED), when there is no descent step or an ability passes DIVERGED
    (DIVERGED_STATUS, ``theta`` where it ran off), or at ``max_iter`` (MAX_ITER).
    Returns ``(theta, v, value, n_iter, status)``.
    """
    L, M, q = k.shape[0], v.shape[0], v.shape[1]
    items = np.flatnonzero(keep)
    constrained = np.array([0, 1]) if cfg[7] > 0 else np.array([0])
    u, v = theta.copy(), v.copy()
    for j in constrained:
        v[items, j] -= np.sum(v[items, j]) / items.size
    v = _project(v, cfg)
    val = value(u, v, k, n, items, cfg, scale)
    flat = 0
    for it in range(1, max_iter + 1):
        a, dc, d2c, cells = cell_derivatives(u, v, k, n, items, cfg)
        g_u, g_v = gradient(u, v, items, cfg, scale, a, dc, cells)
        fixed = np.zeros((M, q), dtype=np.bool_)
        fixed[~keep] = True
        if cfg[6] > 0:
            lim = cfg[9]
            for m in items:
                fixed[m, 1] = (v[m, 1] >= lim and g_v[m, 1] < 0) or (
                    v[m, 1] <= -lim and g_v[m, 1] > 0)
        everywhere = np.ones(M, dtype=np.bool_)
        uu, uv, vv = hessian(u, items, cfg, scale, a, dc, d2c, cells, True, everywhere)
        bad = np.zeros(M, dtype=np.bool_)
        for m in items:
            bad[m] = not _positive_definite(vv[m], q)
        chosen = False
        du, dv = np.zeros(L), np.zeros((M, q))
        decrement = 0.0
        for attempt in range(3):
            if attempt == 1:
                if not bad.any():
                    continue
                uu_f, uv_f, vv_f = hessian(u, items, cfg, scale, a, dc, d2c, cells, False, bad)
                for m in items:
                    if bad[m]:
                        uv[:, m, :] = uv_f[:, m, :]
                        vv[m] = vv_f[m]
            elif attempt == 2:
                uu, uv, vv = hessian(u, items, cfg, scale, a, dc, d2c, cells, False, everywhere)
            du, dv, ok = newton_step(g_u, g_v, uu, uv, vv, fixed, constrained, items,
                                     attempt < 2)
            if not ok:
                continue
            decrement = -np.sum(g_u * du)
            for m in items:
                for i in range(q):
                    if not fixed[m, i]:
                        decrement -= g_v[m, i] * dv[m, i]
            if math.isfinite(decrement) and decrement > -1e-14:
                chosen = True
                break
        if not chosen:
            return u, v, val, it, DIVERGED_STATUS
        if decrement < 1e-16 * max(1.0, abs(val)):
            return u, v, val, it, CONVERGED
        found = False
        for h in range(N_HALVINGS):
            s = 0.5**h
            v_new = _project(v + s * dv, cfg)
            u_new = u + s * du
            trial = value(u_new, v_new, k, n, items, cfg, scale)
            predicted = -(np.sum(g_u * (s * du)) + np.sum(g_v * (v_new - v)))
            if math.isfinite(trial) and trial <= val - 1e-4 * max(predicted, 0.0):
                found = True
                break
        if not found:
            return u, v, val, it, STALLED
        flat = 0 if val - trial > FLAT_GAIN * max(1.0, abs(val)) else flat + 1
        u, v, val = u_new, v_new, trial
        if np.max(np.abs(u)) > DIVERGED:
            return u, v, val, it, DIVERGED_STATUS
        if flat >= FLAT_STEPS:
            return u, v, val, it, STALLED
    return u, v, val, max_iter, MAX_ITER


@njit(**_JIT)
def stages(k, n, keep, scale, theta, v, cfg, max_iter):
    """:func:`stage` for each of B problems (arrays with a leading batch axis)."""
    B = k.shape[0]
    value_out, n_iter, status = np.zeros(B), np.zeros(B, np.int64), np.zeros(B, np.int64)
    theta_out, v_out = np.empty_like(theta), np.empty_like(v)
    for b in range(B):
        theta_out[b], v_out[b], value_out[b], n_iter[b], status[b] = stage(
            k[b], n[b], keep[b], scale[b], theta[b], v[b], cfg, max_iter)
    return theta_out, v_out, value_out, n_iter, status
