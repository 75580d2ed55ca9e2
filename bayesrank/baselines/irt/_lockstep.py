"""Newton / Fisher scoring for a batch of independent IRT problems, in lockstep.

The batched twin of :func:`._newton.structured_newton`: B problems of the same shape
(P person parameters, M items with q parameters each) iterate together, every numpy call
working on a leading batch axis, and each problem stops on its own (a per-problem status
mask).  A problem's arithmetic does not depend on the other problems in the batch, so a
batch of one gives exactly the numbers of a batch of many: the per-draw fits
(:func:`.xpl.fit_irt`) and the stacked ones (:mod:`bayesrank.study.stack_irt`) run this
same code.

Items outside a problem (``held`` (B, M): uninformative items of that draw, which carry
no data) stay in the arrays with zero counts and are held fixed: their step is 0 and they
leave the sum-to-zero constraints, so every problem keeps the full item axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bayesrank.baselines.irt._newton import DIVERGED

__all__ = [
    "CONVERGED",
    "DIVERGED_STATUS",
    "MAX_ITER",
    "BatchHessian",
    "LockstepResult",
    "batch_newton_step",
    "lockstep_newton",
]

RUNNING, CONVERGED, STALLED, MAX_ITER, DIVERGED_STATUS = 0, 1, 2, 3, 4

# The Armijo search tries the steps 2^-j, j = 0..39, in this order and takes the first that
# decreases the objective enough.  The full step is tried alone (most problems take it);
# the halvings are then tried several at a time, every candidate evaluated on its own row,
# so a slowly progressing problem costs a few rounds instead of up to 39.  The first
# acceptable j is the one the sequential search would stop at, whatever the grouping, so
# the grouping only trades rows evaluated for rounds (numpy calls): about
# _ROWS_PER_ROUND rows a round, between 1 and 8 steps per problem.
_N_HALVINGS = 40
# A problem whose accepted steps lower the objective f (as the solver sees it: divided by
# the number of observed trials) by at most FLAT_GAIN * max(1, |f|)
# (relative, as scipy's L-BFGS-B ``ftol`` that the paper's scorio uses with 1e-14) for
# FLAT_STEPS steps in a row stops (STALLED): its objective is flat to rounding (the Armijo
# test still accepts such steps: their required decrease is below the rounding of f).
# Newton's quadratic convergence ends ordinary problems by the decrement within a step
# or two of reaching such gains, so only crawls along a flat ridge (abilities or items
# drifting off while f no longer changes) are cut short.
FLAT_GAIN = 1e-14
FLAT_STEPS = 20
_ROWS_PER_ROUND = 32


@dataclass(frozen=True)
class BatchHessian:
    """Block-structured Hessians of B problems (the person block is diagonal)."""

    uu: np.ndarray  # (B, P) diagonal of the person block
    uv: np.ndarray  # (B, P, M, q)
    vv: np.ndarray  # (B, M, q, q)

    def take(self, idx: np.ndarray) -> BatchHessian:
        return BatchHessian(self.uu[idx], self.uv[idx], self.vv[idx])

    def freeze(self, fixed: np.ndarray) -> BatchHessian:
        """Components held fixed (B, M, q) leave the system: unit diagonal, no coupling."""
        free = ~fixed
        eye = np.eye(fixed.shape[2])
        vv = self.vv * free[..., :, None] * free[..., None, :] + fixed[..., None] * eye
        return BatchHessian(self.uu, np.where(fixed[:, None], 0.0, self.uv), vv)


def _each(fn: Callable, a: np.ndarray, *rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fn`` on a stack; where one problem's matrix is singular, NaN for it (and ok False).

    LAPACK solves each matrix of a stack alone, so the others keep their exact result.
    """
    ok = np.ones(a.shape[0], dtype=bool)
    try:
        return fn(a, *rest), ok
    except np.linalg.LinAlgError:
        pass
    out = np.full(rest[0].shape if rest else a.shape, np.nan)
    for i in range(a.shape[0]):
        try:
            out[i] = fn(a[i : i + 1], *(r[i : i + 1] for r in rest))[0]
        except np.linalg.LinAlgError:
            ok[i] = False
    return out, ok


def _small_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(x * y).sum(axis=-2)`` over a short axis without the product's full temporary.

    The terms are added left to right, as numpy's sum over an axis of fewer than eight
    elements does, so the result is the same to the last bit.
    """
    out = x[..., 0, :] * y[..., 0, :]
    for i in range(1, max(x.shape[-2], y.shape[-2])):
        out = out + x[..., i, :] * y[..., i, :]
    return out


def batch_newton_step(g_u, g_v, H: BatchHessian, E, require_convex: bool):
    """Newton steps of B problems subject to ``sum_m E[b, m]^T dv_m = 0``.

    The block-diagonal item block is eliminated (Schur complement onto the P persons and
    the multipliers), as in :func:`._newton.newton_step`.  Returns ``(du, dv, ok)``;
    ``ok`` is False where the system is singular or, with ``require_convex``, where H is
    not positive semi-definite (item blocks positive definite, Schur complement without
    negative eigenvalues).  A problem that fails a check gets NaN steps and leaves the
    rest of the work, which is done row by row and so does not change the others.
    """
    B, P = g_u.shape
    _, M, q = g_v.shape
    n_c = E.shape[3]
    du, dv = np.full((B, P), np.nan), np.full((B, M, q), np.nan)
    ok = np.ones(B, dtype=bool)
    if require_convex:
        ok &= ~np.any(np.linalg.eigvalsh(H.vv)[..., 0] <= 0, axis=1)
    r = np.flatnonzero(ok)
    vv, uv = H.vv[r], H.uv[r]
    diag_vv = np.abs(np.diagonal(vv, axis1=2, axis2=3))
    ridge = 1e-12 * (diag_vv.mean(axis=(1, 2)) + 1e-300)
    K, inverted = _each(np.linalg.inv, vv + ridge[:, None, None, None] * np.eye(q))
    HK = _small_sum(uv[..., :, None], K[:, None])  # (b, P, M, q)
    HKf, uvf = HK.reshape(r.size, P, M * q), uv.reshape(r.size, P, M * q)
    S = -(HKf @ np.swapaxes(uvf, 1, 2))
    S[:, np.arange(P), np.arange(P)] += H.uu[r]
    if require_convex:
        eig = np.linalg.eigvalsh(S)
        inverted &= ~(eig[:, 0] < -1e-9 * np.maximum(np.abs(eig[:, -1]), 1e-300))
    ok[r] = inverted
    keep = np.flatnonzero(inverted)
    r, K, HKf, uvf, S = r[keep], K[keep], HKf[keep], uvf[keep], S[keep]
    Kg = (K * g_v[r][:, :, None, :]).sum(axis=3).reshape(r.size, M * q)
    g = g_v[r].reshape(r.size, M * q)
    Ef = E[r].reshape(r.size, M * q, n_c)
    KE = (K[..., None] * E[r][:, :, None]).sum(axis=3).reshape(r.size, M * q, n_c)
    system = np.zeros((r.size, P + n_c, P + n_c))
    system[:, :P, :P] = S
    system[:, :P, P:] = -(HKf @ Ef)
    system[:, P:, :P] = np.swapaxes(system[:, :P, P:], 1, 2)
    system[:, P:, P:] = -(np.swapaxes(Ef, 1, 2) @ KE)
    rhs = np.concatenate([-g_u[r] + (HKf * g[:, None, :]).sum(axis=2),
                          (Ef * Kg[:, :, None]).sum(axis=1)], axis=1)
    sol, solved = _each(np.linalg.solve, system, rhs[..., None])
    ok[r] = solved
    du[r], mu = sol[:, :P, 0], sol[:, P:, 0]
    forcing = g + (du[r][:, :, None] * uvf).sum(axis=1) + (Ef * mu[:, None, :]).sum(axis=2)
    dv[r] = -(K * forcing.reshape(r.size, M, 1, q)).sum(axis=3)
    return du, dv, ok


@dataclass
class LockstepResult:
    """Final iterate, objective, iterations and status (CONVERGED, ..., MAX_ITER) per problem."""

    u: np.ndarray
    v: np.ndarray
    value: np.ndarray
    n_iter: np.ndarray
    status: np.ndarray


def lockstep_newton(
    value: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    derivatives: Callable,
    u: np.ndarray,
    v: np.ndarray,
    held: np.ndarray,
    constrained: tuple[int, ...],
    max_iter: int,
    bounds: dict[int, float] | None = None,
) -> LockstepResult:
    """Projected Newton with an Armijo line search for B problems at once.

    ``value(idx, u, v)`` is the objective of problems ``idx`` at ``(u, v)`` (B_idx,);
    ``derivatives(idx, u, v)`` gives ``(g_u, g_v, hessians, usable)``: a tuple of
    :class:`BatchHessian` tried in order (all but the last must be positive
    semi-definite) and which of them each problem tries (``usable`` (B_idx, n_H)).
    A curvature may also be a function of the rows (positions in ``idx``) that
    need it, so a fallback is only assembled for the problems that try it.
    Columns ``constrained`` of ``v`` keep summing to zero over the items
    not ``held``; ``|v[..., j]| <= bounds[j]``.  Per problem the iteration is
    :func:`._newton.structured_newton`'s: stop when the Newton decrement falls to the
    rounding level of the objective (CONVERGED) or no step decreases it (STALLED); a
    problem without a usable step or with an ability beyond ``DIVERGED`` is
    DIVERGED_STATUS (its ``u`` is where it ran off).  In addition a problem whose last
    ``FLAT_STEPS`` accepted steps each lowered the objective by at most
    ``FLAT_GAIN * max(1, |f|)`` is STALLED (the relative-reduction test of L-BFGS-B,
    ``ftol``, as the paper's implementation uses it): without it such problems crawl
    along a flat ridge to ``max_iter``.
    """
    bounds = bounds or {}
    u, v = u.copy(), v.copy()
    B, M, q = v.shape
    live = ~held
    for j in constrained:
        centre = np.where(live, v[..., j], 0.0).sum(axis=1) / live.sum(axis=1)
        v[..., j] = np.where(live, v[..., j] - centre[:, None], v[..., j])

    def project(w):
        for j, lim in bounds.items():
            w[..., j] = np.clip(w[..., j], -lim, lim)
        return w

    v = project(v)
    val = value(np.arange(B), u, v)
    status = np.full(B, RUNNING)
    n_iter = np.full(B, int(max_iter))
    flat = np.zeros(B, dtype=int)  # accepted steps in a row that left the objective unchanged
    for it in range(1, int(max_iter) + 1):
        a = np.flatnonzero(status == RUNNING)
        if a.size == 0:
            break
        g_u, g_v, hessians, usable = derivatives(a, u[a], v[a])
        fixed = np.repeat(held[a][:, :, None], q, axis=2)
        for j, lim in bounds.items():
            fixed[..., j] |= ((v[a, :, j] >= lim) & (g_v[..., j] < 0)) | (
                (v[a, :, j] <= -lim) & (g_v[..., j] > 0))
        E = np.zeros((a.size, M, q, len(constrained)))
        for c, j in enumerate(constrained):
            E[:, :, j, c] = ~fixed[..., j]
        g_free = np.where(fixed, 0.0, g_v)
        du, dv = np.full(u[a].shape, np.nan), np.full(v[a].shape, np.nan)
        decrement = np.full(a.size, np.nan)
        chosen = np.zeros(a.size, dtype=bool)
        for i, H in enumerate(hessians):
            need = np.flatnonzero(~chosen & usable[:, i])
            if need.size == 0:
                continue
            H_need = H.take(need) if isinstance(H, BatchHessian) else H(need)
            d_u, d_v, ok = batch_newton_step(
                g_u[need], g_free[need], H_need.freeze(fixed[need]), E[need],
                i < len(hessians) - 1)
            dec = -((g_u[need] * d_u).sum(axis=1) + (g_free[need] * d_v).sum(axis=(1, 2)))
            good = ok & np.isfinite(dec) & (dec > -1e-14)
            du[need[good]], dv[need[good]] = d_u[good], d_v[good]
            decrement[need[good]] = dec[good]
            chosen[need[good]] = True
        status[a[~chosen]] = DIVERGED_STATUS
        n_iter[a[~chosen]] = it
        done = chosen & (decrement < 1e-16 * np.maximum(1.0, np.abs(val[a])))
        status[a[done]], n_iter[a[done]] = CONVERGED, it
        pending = np.flatnonzero(chosen & ~done)  # positions in a
        start, width = 0, 1
        while pending.size and start < _N_HALVINGS:
            halvings = np.arange(start, min(start + width, _N_HALVINGS), dtype=float)
            rows = np.repeat(pending, halvings.size)  # each pending problem x these steps
            s = np.tile(0.5**halvings, pending.size)
            p = a[rows]
            v_new = project(v[p] + s[:, None, None] * dv[rows])
            u_new = u[p] + s[:, None] * du[rows]
            trial = value(p, u_new, v_new)
            predicted = -((g_u[rows] * (s[:, None] * du[rows])).sum(axis=1)
                          + (g_v[rows] * (v_new - v[p])).sum(axis=(1, 2)))
            accept = np.isfinite(trial) & (trial <= val[p] - 1e-4 * np.maximum(predicted, 0.0))
            accept = accept.reshape(pending.size, halvings.size)
            found = accept.any(axis=1)
            first = np.flatnonzero(found) * halvings.size + accept.argmax(axis=1)[found]
            take = a[pending[found]]
            gain = val[take] - trial[first]
            flat[take] = np.where(gain > FLAT_GAIN * np.maximum(1.0, np.abs(val[take])), 0,
                                  flat[take] + 1)
            u[take], v[take], val[take] = u_new[first], v_new[first], trial[first]
            runaway = take[np.abs(u[take]).max(axis=1) > DIVERGED]
            status[runaway], n_iter[runaway] = DIVERGED_STATUS, it
            pending = pending[~found]
            start += halvings.size
            width = int(np.clip(_ROWS_PER_ROUND // max(pending.size, 1), 1, 8))
        stalled = np.union1d(a[pending], a[(flat[a] >= FLAT_STEPS) & (status[a] == RUNNING)])
        status[stalled], n_iter[stalled] = STALLED, it
    status[status == RUNNING] = MAX_ITER
    return LockstepResult(u, v, val, n_iter, status)
