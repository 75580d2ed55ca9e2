"""Joint-ML / MAP 1PL, 2PL and 3PL fits of a batch of count matrices at once.

The numeric core of :func:`.xpl.fit_irt` (paper App. "Item Response Theory (IRT)
Methods", Alg. "Binomial xPL IRT"), written over a leading batch axis: B count matrices
``k, n`` (B, L, M) are fitted together by :func:`._lockstep.lockstep_newton`, each with its
own informative items, stopping rule and errors.  :func:`.xpl.fit_irt` is this fit with
B = 1 and the study's stacked rules (:mod:`bayesrank.study.stack_irt`) call it on every
draw of a stack, so both run the same arithmetic per problem and give identical abilities.

Uninformative items of a problem (solved by every model or by none) stay in its arrays
with zero counts, which add exactly nothing to the objective; they are held out of the
Newton steps and of the centring ``sum_m b_m = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

from bayesrank.baselines._optim import check_ford_condition
from bayesrank.baselines.irt._common import IrtModel, logit
from bayesrank.baselines.irt._lockstep import (
    DIVERGED_STATUS,
    MAX_ITER,
    BatchHessian,
    lockstep_newton,
)
from bayesrank.baselines.irt._newton import divergence_error
from bayesrank.errors import NotIdentifiedError

__all__ = ["GUESSING_STARTS", "LOG_A_BOUND", "Layout", "XplBatchFit", "fit_xpl_batch",
           "xpl_derivatives", "xpl_value"]

# 3PL guessing logits tried as starts: the paper's c = 0.25 and c = 0.5 sigmoid(-3) ~ 0.024
GUESSING_STARTS = (0.0, -3.0)
# |log a| <= 8 (as in scorio 0.2.3): an item at the bound acts as a step function of ability
LOG_A_BOUND = 8.0


@dataclass(frozen=True)
class Layout:
    """Model and penalties of a JML/MAP xPL fit (item columns: b, log a, guessing logit)."""

    model: IrtModel
    prior_var: float | None
    reg_a: float
    reg_c: float
    upper: float
    fixed_c: float | None
    labels: tuple[str, ...] | None = None  # model names for error messages

    @property
    def has_a(self) -> bool:
        return self.model != "1pl"

    @property
    def free_c(self) -> bool:
        return self.model == "3pl" and self.fixed_c is None

    @property
    def n_item_params(self) -> int:
        return 1 + self.has_a + self.free_c

    @property
    def scale_free(self) -> bool:
        """JML without a ridge on log a: the 2PL scale is fixed by mean(log a) = 0 instead."""
        return self.has_a and self.reg_a == 0 and self.prior_var is None

    @property
    def what(self) -> str:
        """The fit's name in messages, e.g. "2PL joint ML"."""
        return f"{self.model.upper()} {'MAP' if self.prior_var is not None else 'joint ML'}"


def _cells(theta, v, lay: Layout):
    """``log a``, ``a`` (B, M), ``eta``, ``log sigma(eta)`` (B, L, M), and 3PL ``c``, ``log p``."""
    b = v[..., 0]
    log_a = v[..., 1] if lay.has_a else np.zeros_like(b)
    a = np.exp(log_a)
    eta = a[:, None, :] * (theta[:, :, None] - b[:, None, :])
    log_sig = log_expit(eta)
    c = log_p = None
    if lay.model == "3pl":
        c = lay.upper * expit(v[..., 2]) if lay.free_c else np.full(b.shape, float(lay.fixed_c))
        with np.errstate(divide="ignore"):
            log_c = np.log(c)  # -inf for c = 0: logaddexp then gives the 2PL term
        log_p = np.logaddexp(log_c[:, None, :], np.log1p(-c)[:, None, :] + log_sig)
    return log_a, a, eta, log_sig, c, log_p


def xpl_value(theta, v, k, n, lay: Layout, scale) -> np.ndarray:
    """Negative log posterior of B problems divided by their ``scale``, shape (B,).

    ``-sum_lm [k log p + (n - k) log(1 - p)] + |theta|^2 / (2 prior_var)
    + reg_a |log a|^2 + reg_c |gamma|^2`` (see :func:`.xpl.fit_irt`).
    """
    log_a, a, eta, log_sig, c, log_p = _cells(theta, v, lay)
    if lay.model == "3pl":
        log_q = np.log1p(-c)[:, None, :] + log_expit(-eta)
        value = -np.sum(k * log_p + (n - k) * log_q, axis=(1, 2))
    else:
        value = np.sum(n * (eta - log_sig) - k * eta, axis=(1, 2))  # softplus(eta) - k eta
    if lay.prior_var is not None:
        value = value + 0.5 * (theta * theta).sum(axis=1) / lay.prior_var
    if lay.has_a:
        value = value + lay.reg_a * (log_a * log_a).sum(axis=1)
    if lay.free_c:
        value = value + lay.reg_c * (v[..., 2] * v[..., 2]).sum(axis=1)
    return value / scale


def xpl_derivatives(theta, v, k, n, keep, lay: Layout, scale):
    """Gradient and curvatures of :func:`xpl_value` for B problems.

    Per cell, with ``eta = a (theta - b)``, ``p = c + (1 - c) sigma(eta)`` and
    ``s = (1 - c) sigma / p``, the loss ``-k log p - (n - k) log(1 - p)`` has

    - ``l_eta = (n - k) sigma - k s (1 - sigma)``,
      ``l_c = -k (1 - sigma) / p + (n - k) / (1 - c)``;
    - ``l_eta_eta = (n - k) sigma (1 - sigma)``
      ``- k [s (1 - sigma)(1 - 2 sigma) - s^2 (1 - sigma)^2]``,
      ``l_eta_c = k sigma (1 - sigma) / p^2``,
      ``l_cc = k (1 - sigma)^2 / p^2 + (n - k) / (1 - c)^2``;

    expected values (Fisher): ``n s sigma (1 - sigma)``, ``n sigma (1 - sigma) / p``,
    ``n (1 - sigma) / (p (1 - c))``.  Parameters enter through ``eta`` (theta: a; b: -a;
    log a: eta) and ``c = upper * sigmoid(gamma)``; the chain rule assembles the block
    Hessians and the penalty Hessians are added exactly.

    Returns ``(g_u (B, L), g_v (B, M, q), (observed, mixed, fisher), bad (B, M))``:
    ``mixed`` takes the Fisher block on the informative items whose observed block is
    not positive definite (``bad``: near-step items), which keeps Newton's fast
    convergence on the rest.
    """
    log_a, a, eta, log_sig, c, log_p = _cells(theta, v, lay)
    B, L = theta.shape
    M, q = v.shape[1], lay.n_item_params
    a_ = a[:, None, :]
    sig = np.exp(log_sig)
    s1 = sig * (1.0 - sig)
    if lay.model == "3pl":
        c_ = c[:, None, :]
        share = np.exp(np.log1p(-c_) + log_sig - log_p)  # (1 - c) sigma / p
        q1 = share * (1.0 - sig)
        g_eta = (n - k) * sig - k * q1
        A_obs = (n - k) * s1 - k * (q1 * (1.0 - 2.0 * sig) - q1**2)
    else:
        g_eta = n * sig - k
        A_obs = n * s1
    d_eta = [np.broadcast_to(-a_, eta.shape)] + ([eta] if lay.has_a else [])
    g_v = np.zeros((B, M, q))
    for i, de in enumerate(d_eta):
        g_v[..., i] = (g_eta * de).sum(axis=1)
    g_u = (g_eta * a_).sum(axis=2)
    if lay.prior_var is not None:
        g_u = g_u + theta / lay.prior_var
    if lay.has_a:
        g_v[..., 1] += 2.0 * lay.reg_a * log_a
    cell_obs = (0.0, 0.0)
    if lay.free_c:
        unit = expit(v[..., 2])
        dc = (lay.upper * unit * (1.0 - unit))[:, None, :]
        d2c = dc * (1.0 - 2.0 * unit[:, None, :])
        p = np.exp(log_p)
        g_c = -k * (1.0 - sig) / p + (n - k) / (1.0 - c_)
        g_v[..., 2] = (g_c * dc).sum(axis=1) + 2.0 * lay.reg_c * v[..., 2]
        cell_obs = (k * s1 / p**2, k * (1.0 - sig) ** 2 / p**2 + (n - k) / (1.0 - c_) ** 2)

    def assemble(rows, A, cell, observed: bool) -> BatchHessian:
        """The Hessian of problems ``rows`` from per-cell curvatures of those rows."""
        a_r, g_r = a_[rows], g_eta[rows]
        de = [d[rows] for d in d_eta]
        uu = (A * a_r * a_r).sum(axis=2)
        if lay.prior_var is not None:
            uu = uu + 1.0 / lay.prior_var
        uv = np.zeros((A.shape[0], L, M, q))
        vv = np.zeros((A.shape[0], M, q, q))
        for i, ei in enumerate(de):
            uv[..., i] = A * a_r * ei + (g_r * a_r if observed and i == 1 else 0.0)
            for j in range(i + 1):
                h = A * ei * de[j]
                if observed and i == 1:  # d2 eta / (db dlog a) = -a, d2 eta / dlog a^2 = eta
                    h = h + g_r * (-a_r if j == 0 else de[1])
                vv[..., i, j] = vv[..., j, i] = h.sum(axis=1)
        if lay.free_c:
            X, Y = cell
            dc_r = dc[rows]
            uv[..., 2] = X * a_r * dc_r
            for j, ej in enumerate(de):
                vv[..., 2, j] = vv[..., j, 2] = (X * ej * dc_r).sum(axis=1)
            h = Y * dc_r * dc_r + (g_c[rows] * d2c[rows] if observed else 0.0)
            vv[..., 2, 2] = h.sum(axis=1) + 2.0 * lay.reg_c
        if lay.has_a:
            vv[..., 1, 1] += 2.0 * lay.reg_a
        s = scale[rows][:, None]
        return BatchHessian(uu / s, uv / s[..., None, None], vv / s[..., None, None])

    def fisher(rows) -> BatchHessian:
        """The expected information of problems ``rows``, assembled only where it is tried."""
        n_r = n[rows]
        if lay.model != "3pl":
            return assemble(rows, n_r * s1[rows], None, False)
        s1_r, p_r, c_r = s1[rows], p[rows] if lay.free_c else None, c_[rows]
        cell = (n_r * s1_r / p_r, n_r * (1.0 - sig[rows]) / (p_r * (1.0 - c_r))) if (
            lay.free_c) else None
        return assemble(rows, n_r * share[rows] * s1_r, cell, False)

    def mixed(rows) -> BatchHessian:
        """Fisher blocks on the items of ``rows`` flagged ``bad``, observed ones elsewhere."""
        fis, obs_r, bad_r = fisher(rows), obs.take(rows), bad[rows]
        return BatchHessian(obs_r.uu, np.where(bad_r[:, None, :, None], fis.uv, obs_r.uv),
                            np.where(bad_r[..., None, None], fis.vv, obs_r.vv))

    obs = assemble(slice(None), A_obs, cell_obs, True)
    bad = np.zeros(keep.shape, dtype=bool)  # only informative items can be bad
    bad[keep] = np.linalg.eigvalsh(obs.vv[keep])[..., 0] <= 0
    s = scale[:, None]
    return g_u / s, g_v / s[..., None], (obs, mixed, fisher), bad


@dataclass
class XplBatchFit:
    """Fits of B problems: abilities, item parameters (full item axis), errors, warnings."""

    theta: np.ndarray  # (B, L); NaN where the fit failed
    v: np.ndarray  # (B, M, q): b, log a, guessing logit (0 on uninformative items)
    keep: np.ndarray  # (B, M) informative items
    objective: np.ndarray  # (B,)
    n_iter: np.ndarray  # (B,)
    errors: list[NotIdentifiedError | None]
    unconverged: np.ndarray  # (B,) stages that stopped at max_iter (warnings)


def _initial_location(k, n, keep):
    """theta from smoothed model accuracy, b from smoothed item solve rate (Alg. xPL)."""
    theta = logit((k.sum(axis=2) + 0.5) / (n.sum(axis=2) + 1.0))
    b = -logit((k.sum(axis=1) + 0.5) / (n.sum(axis=1) + 1.0))
    centre = np.where(keep, b, 0.0).sum(axis=1) / np.maximum(keep.sum(axis=1), 1)
    return theta - centre[:, None], np.where(keep, b - centre[:, None], 0.0)


def _curvatures(g_u, g_v, hessians, bad):
    """The derivatives for :func:`._lockstep.lockstep_newton`: which curvatures to try.

    Without bad items the mixed Hessian is the observed one, so trying it again could
    only fail the same way: those problems go straight on to the Fisher information.
    """
    usable = np.ones((bad.shape[0], len(hessians)), dtype=bool)
    usable[:, 1] = bad.any(axis=1)
    return g_u, g_v, hessians, usable


def _stage(lay: Layout, k, n, keep, scale, theta, v, max_iter):
    """One Newton stage of the xPL objective for every problem given (rows of k, n, ...)."""
    return lockstep_newton(
        lambda i, u, w: xpl_value(u, w, k[i], n[i], lay, scale[i]),
        lambda i, u, w: _curvatures(*xpl_derivatives(u, w, k[i], n[i], keep[i], lay, scale[i])),
        theta, v, ~keep, (0, 1) if lay.scale_free else (0,), max_iter,
        bounds={1: LOG_A_BOUND} if lay.has_a else None,
    )


def fit_xpl_batch(k: np.ndarray, n: np.ndarray, lay: Layout, max_iter: int) -> XplBatchFit:
    """Fit B binomial xPL problems (counts ``k``, ``n`` of shape (B, L, M)) in lockstep.

    Per problem exactly :func:`.xpl.fit_irt`'s staged fit: Ford's condition (JML), the 1PL
    fit from the smoothed start, then (2PL, 3PL) the fit from the 1PL solution with
    ``a = 1``, for the 3PL from both guessing starts keeping the better optimum (the first
    start unless the second is strictly better).  A problem that fails gets its
    :class:`NotIdentifiedError` in ``errors`` and NaN abilities; a problem without
    informative items (MAP) keeps abilities 0.
    """
    B, L, M = k.shape
    keep = (k.sum(axis=1) > 0) & ((n - k).sum(axis=1) > 0)
    errors: list[NotIdentifiedError | None] = [None] * B
    if lay.prior_var is None:
        for b in range(B):
            try:
                check_ford_condition(k[b][:, keep[b]], n[b][:, keep[b]], lay.what, lay.labels)
            except NotIdentifiedError as exc:
                errors[b] = exc
    kk = np.where(keep[:, None, :], k, 0.0)
    nn = np.where(keep[:, None, :], n, 0.0)
    scale = np.maximum(nn.sum(axis=(1, 2)), 1.0)
    q = lay.n_item_params
    out = XplBatchFit(np.zeros((B, L)), np.zeros((B, M, q)), keep, np.full(B, np.nan),
                      np.zeros(B, dtype=int), errors, np.zeros(B, dtype=int))
    idx = np.flatnonzero(np.array([e is None for e in errors]) & keep.any(axis=1))
    theta0, b0 = _initial_location(kk[idx], nn[idx], keep[idx])
    one = _stage(Layout("1pl", lay.prior_var, lay.reg_a, lay.reg_c, lay.upper, lay.fixed_c),
                 kk[idx], nn[idx], keep[idx], scale[idx], theta0, b0[..., None], max_iter)
    out.unconverged[idx] += one.status == MAX_ITER
    out.n_iter[idx] = one.n_iter
    for i in np.flatnonzero(one.status == DIVERGED_STATUS):
        errors[idx[i]] = divergence_error(lay.what, one.u[i], labels=lay.labels)
    alive = one.status != DIVERGED_STATUS
    idx, theta, v, value = idx[alive], one.u[alive], one.v[alive], one.value[alive]
    if lay.has_a:
        v = np.concatenate([v, np.zeros_like(v)], axis=2)
        starts = ([v] if not lay.free_c else
                  [np.concatenate([v, np.where(keep[idx], g, 0.0)[..., None]], axis=2)
                   for g in GUESSING_STARTS])
        rows = np.tile(idx, len(starts))
        two = _stage(lay, kk[rows], nn[rows], keep[rows], scale[rows], np.tile(theta, (len(
            starts), 1)), np.concatenate(starts), max_iter)
        best = np.full(idx.size, -1)
        for s in range(len(starts)):
            at = s * idx.size + np.arange(idx.size)
            ok = two.status[at] != DIVERGED_STATUS
            better = ok & ((best < 0) | (two.value[at] < two.value[np.maximum(best, 0)]))
            best = np.where(better, at, best)
        for i in np.flatnonzero(best < 0):  # every start ran off: report the first
            errors[idx[i]] = divergence_error(lay.what, two.u[i], labels=lay.labels)
        found = best >= 0
        idx, best = idx[found], best[found]
        theta, v, value = two.u[best], two.v[best], two.value[best]
        out.unconverged[idx] += two.status[best] == MAX_ITER
        out.n_iter[idx] += two.n_iter[best]
    out.theta[idx], out.v[idx], out.objective[idx] = theta, v, value * scale[idx]
    for i in idx:
        if not (np.all(np.isfinite(out.theta[i])) and np.all(np.isfinite(out.v[i]))):
            errors[i] = NotIdentifiedError(
                f"{lay.what}: the iterations diverged (non-finite parameters)")
    for i, e in enumerate(errors):
        if e is not None:
            out.theta[i] = np.nan
    return out
