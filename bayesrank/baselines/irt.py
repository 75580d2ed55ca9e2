"""Item response theory (IRT) point estimators on binomial counts.

Every model is an examinee with ability ``theta_l``, every question an item.
Trials are i.i.d. given the parameters, so the likelihood depends on the data
only through the success counts ``k_lm`` out of ``n_lm`` observed trials
(:attr:`Reductions.successes`, :attr:`Reductions.trials`; paper App. "Item
Response Theory (IRT) Methods", binomial reduction):

.. math::
    k_{lm} \\sim \\mathrm{Binomial}(n_{lm}, p_{lm}),\\qquad
    p_{lm} = c_m + (1 - c_m)\\,\\sigma\\big(a_m(\\theta_l - b_m)\\big)

with ``a = 1, c = 0`` (Rasch / 1PL), ``c = 0`` (2PL) or all three (3PL).

Estimators
----------
- :func:`fit_irt` — joint maximum likelihood (JML, ``prior_var=None``) or MAP
  with a Gaussian ``N(0, prior_var)`` prior on abilities (Mislevy, 1986);
  Newton / Fisher scoring with analytic derivatives; item difficulties are centred
  (``sum_m b_m = 0``), discriminations are ``exp`` of free parameters with a
  weak ridge on ``log a`` (``reg_discrimination``; it also fixes the 2PL scale),
  guessing ``c = guessing_upper * sigmoid(gamma)`` with a ridge on ``gamma``.
- :func:`fit_rasch_mml` — marginal ML by EM over Gauss–Hermite quadrature
  (Bock & Aitkin, 1981) with EAP abilities and posterior quantiles.
- :func:`fit_growth_irt` — longitudinal Rasch model with per-model linear
  trend over the (ordered) trial axis.

Non-existent estimates
----------------------
Items that every model solves (or none does) carry no information about
abilities; their difficulty is ``-inf`` (``+inf``), so they cannot enter the
centring ``sum_m b_m = 0``: every fit sets them aside and reports infinite
difficulty (for JML this is exactly the limit of the likelihood maximiser).
JML estimates are finite only when the data are not separated.  For the
binomial Rasch model the exact condition is Ford's (1957) condition on the
bipartite "beats" graph (model l beats item m if ``k_lm > 0``, item m beats
model l if ``k_lm < n_lm``): it must be strongly connected.  Models that solve
every informative trial (or none) have infinite JML ability, and under 3PL
guessing a weak model's ability can run off to ``-inf``: both raise
:class:`NotIdentifiedError` (use the MAP or MML variants, whose abilities are
always finite).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
from scipy.special import expit, gammaln, log_expit

from bayesrank.baselines._optim import check_ford, prior_variance
from bayesrank.checks import (
    check_choice,
    check_finite,
    check_in_interval,
    check_int,
    check_probability,
)
from bayesrank.data import ResponseData
from bayesrank.errors import DataError, NotIdentifiedError
from bayesrank.ranking import ranking_method

__all__ = [
    "IrtFit",
    "MmlFit",
    "fit_irt",
    "fit_rasch_mml",
    "fit_growth_irt",
    "normal_quadrature",
    "ability_posterior",
    "posterior_quantile",
    "rasch",
    "rasch_2pl",
    "rasch_3pl",
    "rasch_mml",
    "dynamic_irt",
]

IrtModel = Literal["1pl", "2pl", "3pl"]
# 3PL guessing logits tried as starts: the paper's c = 0.25 and c = 0.5 sigmoid(-3) ~ 0.024
_GUESSING_STARTS = (0.0, -3.0)
_DIVERGED = 50.0  # |ability| beyond this on the logit scale: the iterations run off
# |log a| <= 8 (as in scorio 0.2.3): an item at the bound acts as a step function of ability
_LOG_A_BOUND = 8.0


@dataclass(frozen=True)
class IrtFit:
    """Point estimates of an IRT model.

    Attributes
    ----------
    ability : (L,) abilities ``theta`` (larger = better).
    difficulty : (M,) difficulties ``b`` (centred over informative items;
        ``-inf`` / ``+inf`` for items all models solved / failed under JML).
    discrimination : (M,) ``a`` or None (1PL).
    guessing : (M,) ``c`` or None (1PL, 2PL).
    objective : negative log-likelihood plus penalties at the optimum.
    n_iter : optimizer iterations.
    extra : model-specific arrays (e.g. slopes of the growth model).
    """

    ability: np.ndarray
    difficulty: np.ndarray
    discrimination: np.ndarray | None = None
    guessing: np.ndarray | None = None
    objective: float = np.nan
    n_iter: int = 0
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def item_params(self) -> dict[str, np.ndarray]:
        """Item parameters as a dict (difficulty, and discrimination/guessing if fitted)."""
        out = {"difficulty": self.difficulty}
        if self.discrimination is not None:
            out["discrimination"] = self.discrimination
        if self.guessing is not None:
            out["guessing"] = self.guessing
        return out


# ---------------------------------------------------------------------------------------
# Input checks and separation diagnostics
# ---------------------------------------------------------------------------------------
def _counts(successes, trials) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(successes, dtype=float)
    n = np.broadcast_to(np.asarray(trials, dtype=float), k.shape).astype(float)
    if k.ndim != 2:
        raise DataError(f"successes must be an (L, M) matrix, got shape {k.shape}")
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise DataError("successes and trials must be finite")
    if np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)) or np.any(n != np.round(n)):
        raise DataError("need integer counts with 0 <= successes <= trials")
    return k, n


def _informative_items(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Items with at least one observed success and one observed failure."""
    return (k.sum(axis=0) > 0) & ((n - k).sum(axis=0) > 0)


def _boundary_difficulty(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """JML difficulty of uninformative items: -inf if always solved, +inf if never, NaN unseen."""
    solved, failed = k.sum(axis=0), (n - k).sum(axis=0)
    return np.where(solved + failed == 0, np.nan, np.where(failed == 0, -np.inf, np.inf))


# ---------------------------------------------------------------------------------------
# Joint ML / MAP estimation of 1PL, 2PL and 3PL models
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Hessian:
    """Block-structured Hessian: dense person block, person-item block, item blocks."""

    uu: np.ndarray  # (P, P)
    uv: np.ndarray  # (P, M, q)
    vv: np.ndarray  # (M, q, q)


class _Terms:
    """Objective pieces at one point for :func:`_structured_newton`.

    Parameters are split into "person" parameters ``u`` (P,) and per-item
    parameters ``v`` (M, q).  The value is computed at once; the gradient and
    the curvature (observed Hessian, then fallbacks such as the Fisher
    information) only where a step is taken, not at rejected line-search points.
    """

    def __init__(self, value: float, derivatives: Callable[[], tuple]):
        self.value = value
        self._derivatives = derivatives

    @cached_property
    def _d(self) -> tuple:
        return self._derivatives()  # (g_u, g_v, curvature)

    @property
    def g_u(self) -> np.ndarray:
        return self._d[0]

    @property
    def g_v(self) -> np.ndarray:
        return self._d[1]

    def curvature(self) -> tuple[_Hessian, ...]:
        return self._d[2]()


def _newton_step(
    t: _Terms, H: _Hessian, E: np.ndarray, require_convex: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Solve the Newton system subject to linear constraints ``sum_m E[m]^T dv_m = 0``.

    ``E`` (M, q, n_c) holds one column per constraint (e.g. ones on the
    difficulty component: the step keeps ``sum_m b_m`` fixed).  The
    block-diagonal item block is eliminated (Schur complement onto the P
    person parameters and the multipliers), so the cost is O(P^2 M q^2)
    instead of a dense factorisation of the full Hessian; when persons
    outnumber item parameters the persons are eliminated instead.  With
    ``require_convex`` it raises LinAlgError unless H is positive semi-definite
    (item blocks positive definite and Schur complement without negative
    eigenvalues), so that an indefinite observed Hessian is never used.
    """
    P = t.g_u.size
    M, q = t.g_v.shape
    d_uu = np.diag(H.uu)
    if P > M * q and np.array_equal(H.uu, np.diag(d_uu)):
        return _newton_step_items(t, H, d_uu, E, require_convex)
    ridge = 1e-12 * (np.abs(np.diagonal(H.vv, axis1=1, axis2=2)).mean() + 1e-300)
    if require_convex and np.any(np.linalg.eigvalsh(H.vv)[:, 0] <= 0):
        raise np.linalg.LinAlgError("indefinite item block")
    K = np.linalg.inv(H.vv + ridge * np.eye(q))  # (M, q, q)
    uv = H.uv.reshape(P, M * q)
    HK = (H.uv.transpose(1, 0, 2) @ K).transpose(1, 0, 2).reshape(P, M * q)
    S = H.uu - HK @ uv.T
    if require_convex:
        eig = np.linalg.eigvalsh(S)
        if eig[0] < -1e-9 * max(abs(eig[-1]), 1e-300):
            raise np.linalg.LinAlgError("indefinite Schur complement")
    Kg = (K @ t.g_v[:, :, None])[:, :, 0]
    g = t.g_v.reshape(M * q)
    rhs_u = -t.g_u + HK @ g
    n_c = E.shape[2]
    Ef = E.reshape(M * q, n_c)
    KE = (K @ E).reshape(M * q, n_c)
    system = np.zeros((P + n_c, P + n_c))
    system[:P, :P] = S
    system[:P, P:] = -HK @ Ef
    system[P:, :P] = system[:P, P:].T
    system[P:, P:] = -Ef.T @ KE
    sol = np.linalg.solve(system, np.r_[rhs_u, Ef.T @ Kg.reshape(M * q)])
    du, mu = sol[:P], sol[P:]
    forcing = t.g_v + (du @ uv).reshape(M, q) + (Ef @ mu).reshape(M, q)
    return du, -(K @ forcing[:, :, None])[:, :, 0]


def _newton_step_items(t: _Terms, H: _Hessian, d_uu, E, require_convex):
    """The same Newton system when persons outnumber item parameters (P > M q).

    The person block is diagonal (abilities interact only through items), so
    the persons are eliminated instead and a dense (M q + constraints) system
    is solved: O(P M^2 q^2).
    """
    P = t.g_u.size
    M, q = t.g_v.shape
    if require_convex and np.any(d_uu <= 0):
        raise np.linalg.LinAlgError("indefinite person block")
    inv_u = 1.0 / d_uu
    B = H.uv.reshape(P, M * q)
    S = -(B.T * inv_u) @ B
    for m in range(M):
        S[m * q : (m + 1) * q, m * q : (m + 1) * q] += H.vv[m]
    if require_convex:
        eig = np.linalg.eigvalsh(S)
        if eig[0] < -1e-9 * max(abs(eig[-1]), 1e-300):
            raise np.linalg.LinAlgError("indefinite Schur complement")
    rhs = -t.g_v.ravel() + B.T @ (inv_u * t.g_u)
    Ef = E.reshape(M * q, -1)
    n_c = Ef.shape[1]
    system = np.block([[S, Ef], [Ef.T, np.zeros((n_c, n_c))]])
    dv = np.linalg.solve(system, np.r_[rhs, np.zeros(n_c)])[: M * q]
    du = -inv_u * (t.g_u + B @ dv)
    return du, dv.reshape(M, q)


def _freeze(t: _Terms, H: _Hessian, fixed: np.ndarray) -> tuple[_Terms, _Hessian]:
    """Remove item components held at a bound from the Newton system (their step is 0)."""
    g_v = np.where(fixed, 0.0, t.g_v)
    uv = np.where(fixed[None], 0.0, H.uv)
    vv = H.vv * ~fixed[:, :, None] * ~fixed[:, None, :]
    vv = vv + np.einsum("mq,qr->mqr", fixed.astype(float), np.eye(fixed.shape[1]))
    return _Terms(t.value, lambda: (t.g_u, g_v, t.curvature)), _Hessian(H.uu, uv, vv)


class _Diverged(Exception):
    """Internal: person parameters ran off to infinity (the estimate does not exist)."""

    def __init__(self, u: np.ndarray):
        super().__init__("diverged")
        self.u = u


def _divergence_error(what: str, u: np.ndarray, names: str = "abilities") -> NotIdentifiedError:
    far = np.flatnonzero(np.abs(u) > 0.5 * max(np.abs(u).max(), 1.0))
    return NotIdentifiedError(
        f"{what}: the {names} of model(s) {far.tolist()} run off to "
        f"{'+' if np.all(u[far] > 0) else '-'}infinity, so the estimate does not exist for "
        "these data (with 3PL guessing, a weak model's few successes can be explained by "
        "guessing alone). Use the MAP variant (ability prior) or rasch_mml"
    )


def _structured_newton(
    evaluate,
    u,
    v,
    constrained: tuple[int, ...],
    max_iter: int,
    what: str,
    bounds: dict[int, float] | None = None,
):
    """Newton / Fisher-scoring iterations with a projected Armijo line search.

    ``evaluate(u, v)`` returns :class:`_Terms`; ``v[:, j]`` for j in
    ``constrained`` keeps summing to zero (the identifiability constraints)
    and ``|v[:, j]| <= bounds[j]`` (projected Newton: components at a bound
    whose gradient pushes outwards are held fixed for the step).  Stops when
    the Newton decrement falls to the rounding level of the objective (scaled
    to O(1)) or no step decreases the objective any more.
    """
    bounds = bounds or {}
    M, q = v.shape
    v = v.copy()
    for j in constrained:
        v[:, j] -= v[:, j].mean()
    for j, lim in bounds.items():
        v[:, j] = np.clip(v[:, j], -lim, lim)

    def project(w):
        for j, lim in bounds.items():
            w[:, j] = np.clip(w[:, j], -lim, lim)
        return w

    t = evaluate(u, v)
    for it in range(1, int(max_iter) + 1):
        fixed = np.zeros((M, q), dtype=bool)
        for j, lim in bounds.items():
            fixed[:, j] = ((v[:, j] >= lim) & (t.g_v[:, j] < 0)) | (
                (v[:, j] <= -lim) & (t.g_v[:, j] > 0)
            )
        E = np.zeros((M, q, len(constrained)))
        for c, j in enumerate(constrained):
            E[:, j, c] = ~fixed[:, j]
        hessians = t.curvature()
        for i, H in enumerate(hessians):  # first convex curvature (the last is a fallback)
            tf, Hf = _freeze(t, H, fixed) if fixed.any() else (t, H)
            try:
                du, dv = _newton_step(tf, Hf, E, i < len(hessians) - 1)
            except np.linalg.LinAlgError:
                continue
            decrement = -(tf.g_u @ du + np.sum(tf.g_v * dv))
            if np.isfinite(decrement) and decrement > -1e-14:
                break
        else:
            raise _Diverged(u)
        if decrement < 1e-16 * max(1.0, abs(t.value)):  # converged to rounding error
            return u, v, t, it
        step = 1.0
        for _ in range(40):
            v_new = project(v + step * dv)
            trial = evaluate(u + step * du, v_new)
            predicted = -(t.g_u @ (step * du) + np.sum(t.g_v * (v_new - v)))
            if np.isfinite(trial.value) and trial.value <= t.value - 1e-4 * max(predicted, 0.0):
                break
            step *= 0.5
        else:
            return u, v, t, it  # no further decrease at machine precision
        u, v, t = u + step * du, v_new, trial
        if np.abs(u).max() > _DIVERGED:
            raise _Diverged(u)
    warnings.warn(
        f"{what}: no convergence within max_iter={max_iter} iterations",
        RuntimeWarning,
        stacklevel=3,
    )
    return u, v, t, int(max_iter)


@dataclass(frozen=True)
class _Layout:
    """Model and penalties of a JML/MAP xPL fit (item columns: b, log a, guessing logit)."""

    model: IrtModel
    prior_var: float | None
    reg_a: float
    reg_c: float
    upper: float
    fixed_c: float | None

    @property
    def has_a(self) -> bool:
        return self.model != "1pl"

    @property
    def free_c(self) -> bool:
        return self.model == "3pl" and self.fixed_c is None

    @property
    def n_item_params(self) -> int:
        return 1 + self.has_a + self.free_c


def _xpl_terms(theta, v, k, n, lay: _Layout, scale: float) -> _Terms:
    """Negative log posterior, gradient, observed Hessian and Fisher information (xPL).

    Per cell, with ``eta = a (theta - b)``, ``p = c + (1 - c) sigma(eta)`` and
    ``s = (1 - c) sigma / p``, the loss ``-k log p - (n - k) log(1 - p)`` has

    - ``l_eta = (n - k) sigma - k s (1 - sigma)``,
      ``l_c = -k (1 - sigma) / p + (n - k) / (1 - c)``;
    - ``l_eta_eta = (n - k) sigma (1 - sigma)``
      ``- k [s (1 - sigma)(1 - 2 sigma) - s^2 (1 - sigma)^2]``,
      ``l_eta_c = k sigma (1 - sigma) / p^2``,
      ``l_cc = k (1 - sigma)^2 / p^2 + (n - k) / (1 - c)^2``;

    expected values (Fisher): ``n s sigma (1 - sigma)``, ``n sigma (1 - sigma) / p``,
    ``n (1 - sigma) / (p (1 - c))``.  Parameters enter through ``eta`` (theta: a;
    b: -a; log a: eta) and ``c = upper * sigmoid(gamma)``; the chain rule
    assembles the block Hessians.  Penalty Hessians are added exactly.
    """
    b = v[:, 0]
    log_a = v[:, 1] if lay.has_a else np.zeros_like(b)
    a = np.exp(log_a)
    eta = a * (theta[:, None] - b)
    log_sig = log_expit(eta)
    L, M, q = theta.size, b.size, lay.n_item_params
    if lay.model == "3pl":
        c = lay.upper * expit(v[:, 2]) if lay.free_c else np.full(M, float(lay.fixed_c))
        with np.errstate(divide="ignore"):
            log_c = np.log(c)  # -inf for c = 0: logaddexp then gives the 2PL term
        log_p = np.logaddexp(log_c, np.log1p(-c) + log_sig)
        nll = -np.sum(k * log_p + (n - k) * (np.log1p(-c) + log_expit(-eta)))
    else:
        nll = np.sum(n * (eta - log_sig) - k * eta)  # softplus(eta) = eta - log sigmoid(eta)
    value = nll
    if lay.prior_var is not None:
        value += 0.5 * theta @ theta / lay.prior_var
    if lay.has_a:
        value += lay.reg_a * log_a @ log_a
    if lay.free_c:
        value += lay.reg_c * v[:, 2] @ v[:, 2]

    def derivatives():
        sig = np.exp(log_sig)
        s1 = sig * (1.0 - sig)
        zero = np.zeros(M)
        if lay.model == "3pl":
            share = np.exp(np.log1p(-c) + log_sig - log_p)  # (1 - c) sigma / p
            q1 = share * (1.0 - sig)
            g_eta = (n - k) * sig - k * q1
            A_obs = (n - k) * s1 - k * (q1 * (1.0 - 2.0 * sig) - q1**2)
            A_fis = n * share * s1
        else:
            g_eta = n * sig - k
            A_obs = A_fis = n * s1
        # (d eta / d x, d c / d x) of each item parameter x
        comps = [(-a * np.ones((L, 1)), zero)] + ([(eta, zero)] if lay.has_a else [])
        cell_c = None
        if lay.free_c:
            unit = expit(v[:, 2])
            dc = lay.upper * unit * (1.0 - unit)
            comps.append((np.zeros((L, M)), dc))
            p = np.exp(log_p)
            g_c = -k * (1.0 - sig) / p + (n - k) / (1.0 - c)
            cell_c = {
                "obs": (k * s1 / p**2, k * (1.0 - sig) ** 2 / p**2 + (n - k) / (1.0 - c) ** 2),
                "fis": (n * s1 / p, n * (1.0 - sig) / (p * (1.0 - c))),
            }

        def second(x, y):
            """Second derivative of eta (and c) w.r.t. item parameters x, y of one item."""
            if lay.has_a and {x, y} == {0, 1}:
                return -a, 0.0
            if lay.has_a and x == y == 1:
                return eta, 0.0
            if lay.free_c and x == y == q - 1:
                return 0.0, dc * (1.0 - 2.0 * unit)
            return 0.0, 0.0

        g_v = np.stack(
            [
                (g_eta * de).sum(axis=0) + (0.0 if cell_c is None else (g_c * dcx).sum(0))
                for de, dcx in comps
            ],
            axis=1,
        )
        g_u = g_eta @ a
        if lay.prior_var is not None:
            g_u = g_u + theta / lay.prior_var
        if lay.has_a:
            g_v[:, 1] += 2.0 * lay.reg_a * log_a
        if lay.free_c:
            g_v[:, 2] += 2.0 * lay.reg_c * v[:, 2]

        def assemble(A, first_order: bool, kind: str) -> _Hessian:
            X, Y = cell_c[kind] if cell_c is not None else (0.0, 0.0)
            G = g_eta if first_order else 0.0
            Gc = g_c if (first_order and cell_c is not None) else 0.0
            uu = np.diag((A * a * a).sum(axis=1))
            uv = np.empty((L, M, q))
            vv = np.empty((M, q, q))
            for i, (ei, ci) in enumerate(comps):
                # theta-item: eta_theta = a, c_theta = 0, eta_(theta, log a) = a
                mixed = a if (lay.has_a and i == 1) else 0.0
                uv[:, :, i] = A * a * ei + X * a * ci + G * mixed
                for j in range(i + 1):
                    ej, cj = comps[j]
                    e2, c2 = second(i, j)
                    h = A * ei * ej + X * (ei * cj + ej * ci) + Y * ci * cj + G * e2 + Gc * c2
                    vv[:, i, j] = vv[:, j, i] = h.sum(axis=0)
            if lay.prior_var is not None:
                uu[np.diag_indices(L)] += 1.0 / lay.prior_var
            if lay.has_a:
                vv[:, 1, 1] += 2.0 * lay.reg_a
            if lay.free_c:
                vv[:, 2, 2] += 2.0 * lay.reg_c
            return _Hessian(uu / scale, uv / scale, vv / scale)

        def curvature() -> tuple[_Hessian, ...]:
            obs, fis = assemble(A_obs, True, "obs"), assemble(A_fis, False, "fis")
            # Items whose observed block is indefinite (e.g. near-step items) take their
            # Fisher block: keeps Newton's fast convergence on the rest of the model.
            bad = np.linalg.eigvalsh(obs.vv)[:, 0] <= 0
            if bad.any() and not bad.all():
                mixed = _Hessian(
                    obs.uu,
                    np.where(bad[None, :, None], fis.uv, obs.uv),
                    np.where(bad[:, None, None], fis.vv, obs.vv),
                )
                return (obs, mixed, fis)
            return (obs, fis)

        return g_u / scale, g_v / scale, curvature

    return _Terms(value / scale, derivatives)


def _logit(p: np.ndarray) -> np.ndarray:
    return np.log(p) - np.log1p(-p)


def _initial_location(k: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta from smoothed model accuracy, b from smoothed item solve rate (paper, Alg. xPL)."""
    theta = _logit((k.sum(axis=1) + 0.5) / (n.sum(axis=1) + 1.0))
    b = -_logit((k.sum(axis=0) + 0.5) / (n.sum(axis=0) + 1.0))
    return theta - b.mean(), b - b.mean()


def fit_irt(
    successes: np.ndarray,
    trials: np.ndarray | int,
    *,
    model: IrtModel = "1pl",
    prior_var: float | None = None,
    max_iter: int = 500,
    reg_discrimination: float = 0.01,
    reg_guessing: float = 0.1,
    guessing_upper: float = 0.5,
    fix_guessing: float | None = None,
) -> IrtFit:
    """Fit a binomial 1PL/2PL/3PL model by joint ML or MAP (paper, Alg. "Binomial xPL IRT").

    Minimises

    .. math::
        -\\sum_{l,m}\\big[k_{lm}\\log p_{lm} + (n_{lm}-k_{lm})\\log(1-p_{lm})\\big]
        + \\frac{\\lVert\\theta\\rVert^2}{2\\,\\mathrm{prior\\_var}}
        + \\lambda_a \\lVert\\log a\\rVert^2 + \\lambda_c \\lVert\\gamma\\rVert^2

    subject to ``sum_m b_m = 0`` by Newton's method with an Armijo line search,
    using the exact (observed) Hessian where it is positive definite and the
    Fisher information (always positive semi-definite) elsewhere.  The item
    block of the Hessian is block-diagonal, so each step costs O(L^2 M) via a
    Schur complement.  2PL and 3PL fits start from the 1PL solution with
    ``a = 1``; the multimodal 3PL is started twice, at the paper's ``c = 0.25``
    and near the 2PL fit (``c ~ 0.024``), and the better optimum is kept.
    (The paper names L-BFGS; both target the same optimum, but on 20 x 120 x 80
    counts L-BFGS needs more than 500 iterations along the weakly curved
    2PL/3PL scale direction, where Newton needs ~20.)

    Parameters
    ----------
    successes, trials : array_like (L, M)
        Counts ``k_lm`` and ``n_lm`` (trials may be a scalar).  Unobserved
        cells have ``n_lm = 0``.
    model : {"1pl", "2pl", "3pl"}
    prior_var : float, optional
        Variance of the Gaussian ability prior (MAP); None = joint ML.
    max_iter : int
        Iteration limit per stage (1PL, 2PL, 3PL); a RuntimeWarning is
        emitted if it is reached.
    reg_discrimination : float
        Ridge ``lambda_a`` on ``log a`` (a weak log-normal prior; it also fixes
        the JML 2PL scale).  0 gives the pure likelihood with the scale fixed by
        ``mean(log a) = 0`` instead.  ``|log a|`` is also bounded by 8 (as in
        scorio 0.2.3; the paper "constrains a_m"): items that separate models
        perfectly would otherwise push ``a`` to infinity, and at the bound they
        act as step functions (``extra["discrimination_at_bound"]``).
    reg_guessing : float
        Ridge ``lambda_c`` on the guessing logit ``gamma`` (3PL); must be > 0 when
        guessing is estimated, else boundary guessing values diverge.
    guessing_upper : float
        ``c_m = guessing_upper * sigmoid(gamma_m)`` lies in ``(0, guessing_upper)``.
    fix_guessing : float, optional
        Fixed common ``c`` (e.g. a known chance level) instead of estimating it.

    Raises
    ------
    NotIdentifiedError
        JML only: a model solves every informative trial (or none), or the data
        are separated (see module notes).
    """
    k, n = _counts(successes, trials)
    check_choice("model", model, ("1pl", "2pl", "3pl"))
    prior_var = prior_variance(prior_var, "prior_var")
    max_iter = check_int("max_iter", max_iter)
    check_finite("reg_discrimination", reg_discrimination, nonnegative=True)
    check_finite("reg_guessing", reg_guessing, nonnegative=True)
    check_in_interval("guessing_upper", guessing_upper, 0.0, 1.0, closed="neither")
    if fix_guessing is not None:
        check_in_interval("fix_guessing", fix_guessing, 0.0, 1.0, closed="left")
    if model == "3pl" and fix_guessing is None and reg_guessing == 0:
        raise DataError("reg_guessing must be > 0 when 3PL guessing is estimated")
    what = f"{model.upper()} {'MAP' if prior_var is not None else 'joint ML'}"

    L, M = k.shape
    keep = _informative_items(k, n)
    if prior_var is None:
        check_ford(k[:, keep], n[:, keep], what)
    kk, nn = k[:, keep], n[:, keep]
    Mk = int(keep.sum())
    if Mk == 0:  # MAP without informative items: the prior alone, theta = 0
        difficulty = _boundary_difficulty(k, n)
        ones = np.ones(M) if model != "1pl" else None
        guess = np.full(M, np.nan if fix_guessing is None else fix_guessing)
        return IrtFit(np.zeros(L), difficulty, ones, guess if model == "3pl" else None)

    def layout(m: IrtModel) -> _Layout:
        return _Layout(m, prior_var, reg_discrimination, reg_guessing, guessing_upper, fix_guessing)

    scale = max(float(nn.sum()), 1.0)
    # reg_discrimination = 0 (JML): the 2PL scale is fixed by mean(log a) = 0 instead
    scale_free = reg_discrimination == 0 and prior_var is None

    def solve(lay: _Layout, theta, v):
        constrained = (0, 1) if (scale_free and lay.has_a) else (0,)
        return _structured_newton(
            lambda u, w: _xpl_terms(u, w, kk, nn, lay, scale),
            theta,
            v,
            constrained,
            max_iter,
            what,
            bounds={1: _LOG_A_BOUND} if lay.has_a else None,
        )

    theta, b = _initial_location(kk, nn)
    try:
        theta, v, terms, n_iter = solve(layout("1pl"), theta, b[:, None])
    except _Diverged as exc:
        raise _divergence_error(what, exc.u) from None
    lay = layout(model)
    if lay.has_a:  # 2PL and 3PL continue from the 1PL fit with a = 1
        v = np.c_[v, np.zeros(Mk)]
        # the 3PL likelihood is multimodal: guessing starts both at the paper's c = 0.25
        # and near the 2PL solution (c ~ 0.024); the better optimum is kept
        starts = [v] if not lay.free_c else [np.c_[v, np.full(Mk, g)] for g in _GUESSING_STARTS]
        best, failure, caught = None, None, []
        for start in starts:
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always")
                try:
                    out = solve(lay, theta, start)
                except _Diverged as exc:
                    failure = failure or exc
                    continue
            if best is None or out[2].value < best[2].value:
                best, caught = out, record
        if best is None:
            raise _divergence_error(what, failure.u) from None
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=2)
        theta, v, terms, it = best
        n_iter += it
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(v))):
        raise NotIdentifiedError(f"{what}: the iterations diverged (non-finite parameters)")
    difficulty = _boundary_difficulty(k, n)
    difficulty[keep] = v[:, 0]
    discrimination = guessing = None
    extra = {}
    if lay.has_a:
        discrimination = np.ones(M)
        discrimination[keep] = np.exp(v[:, 1])
        extra["discrimination_at_bound"] = np.zeros(M, dtype=bool)
        extra["discrimination_at_bound"][keep] = np.abs(v[:, 1]) >= _LOG_A_BOUND
    if model == "3pl":
        guessing = np.full(M, np.nan if lay.free_c else float(fix_guessing))
        if lay.free_c:
            guessing[keep] = guessing_upper * expit(v[:, 2])
    return IrtFit(theta, difficulty, discrimination, guessing, terms.value * scale, n_iter, extra)


def _binary_counts(data: ResponseData, what: str) -> tuple[np.ndarray, np.ndarray]:
    data.require_binary(what)
    red = data.reductions
    return red.successes, red.trials


@ranking_method
def rasch(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Rasch (1PL) abilities, ``k_lm ~ Binomial(n_lm, sigmoid(theta_l - b_m))``.

    ``prior=None`` is joint ML (identifier ``rasch``); a float is the variance
    of a Gaussian ability prior, N(0, prior), for MAP (``rasch_map``, prior=1).
    See :func:`fit_irt`.  ``return_item_params=True`` puts ``difficulty`` in
    ``details``.  On complete data the JML ranking equals the ranking by total
    successes (the Rasch sufficient statistic).
    """
    k, n = _binary_counts(data, "Rasch IRT")
    fit = fit_irt(k, n, model="1pl", prior_var=prior_variance(prior), max_iter=max_iter)
    return fit.ability, (fit.item_params() if return_item_params else {})


@ranking_method
def rasch_2pl(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    reg_discrimination: float = 0.01,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """2PL abilities, ``sigmoid(a_m (theta_l - b_m))`` (Birnbaum, 1968); JML or MAP.

    Identifiers ``rasch_2pl`` (prior=None) and ``rasch_2pl_map`` (prior=1.0).
    ``reg_discrimination`` is the ridge on ``log a`` (see :func:`fit_irt`).
    """
    k, n = _binary_counts(data, "2PL IRT")
    fit = fit_irt(
        k,
        n,
        model="2pl",
        prior_var=prior_variance(prior),
        max_iter=max_iter,
        reg_discrimination=reg_discrimination,
    )
    return fit.ability, (fit.item_params() if return_item_params else {})


@ranking_method
def rasch_3pl(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    fix_guessing: float | None = None,
    guessing_upper: float = 0.5,
    reg_discrimination: float = 0.01,
    reg_guessing: float = 0.1,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """3PL abilities, ``c_m + (1 - c_m) sigmoid(a_m (theta_l - b_m))``; JML or MAP.

    Identifiers ``rasch_3pl`` (prior=None) and ``rasch_3pl_map`` (prior=1.0).
    Guessing ``c_m`` is estimated in ``(0, guessing_upper)`` unless
    ``fix_guessing`` gives a known chance level (see :func:`fit_irt`).
    """
    k, n = _binary_counts(data, "3PL IRT")
    fit = fit_irt(
        k,
        n,
        model="3pl",
        prior_var=prior_variance(prior),
        max_iter=max_iter,
        fix_guessing=fix_guessing,
        guessing_upper=guessing_upper,
        reg_discrimination=reg_discrimination,
        reg_guessing=reg_guessing,
    )
    return fit.ability, (fit.item_params() if return_item_params else {})


# ---------------------------------------------------------------------------------------
# Marginal ML (EM + Gauss-Hermite quadrature), EAP and posterior quantiles
# ---------------------------------------------------------------------------------------
def normal_quadrature(n_points: int, sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights for expectations under N(0, sd^2).

    ``E[f(theta)] ~= sum_q w_q f(theta_q)`` with ``theta_q = sd * sqrt(2) x_q`` and
    ``w_q = h_q / sqrt(pi)`` from the physicists' rule ``(x_q, h_q)``.
    """
    n_points = check_int("n_quadrature", n_points, minimum=2)
    x, h = np.polynomial.hermite.hermgauss(n_points)
    return sd * np.sqrt(2.0) * x, h / np.sqrt(np.pi)


def _log_lik_at_nodes(k, n, nodes, difficulty, discrimination=None, guessing=None):
    """log p(k_l | theta_q) up to the binomial constant, shape (L, Q)."""
    a = np.ones_like(difficulty) if discrimination is None else discrimination
    eta = a[None, :] * (nodes[:, None] - difficulty[None, :])  # (Q, M)
    if guessing is None:
        log_p, log_q = log_expit(eta), log_expit(-eta)
    else:
        c = guessing[None, :]
        p = c + (1.0 - c) * expit(eta)
        log_p, log_q = np.log(p), np.log1p(-p)
    return k @ log_p.T + (n - k) @ log_q.T


def ability_posterior(
    successes: np.ndarray,
    trials: np.ndarray | int,
    difficulty: np.ndarray,
    *,
    discrimination: np.ndarray | None = None,
    guessing: np.ndarray | None = None,
    n_quadrature: int = 61,
    population_sd: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Discrete posterior of each ability given item parameters (the E-step).

    ``w_lq ∝ w_q prod_m p_m(theta_q)^{k_lm} (1 - p_m(theta_q))^{n_lm - k_lm}`` over
    Gauss–Hermite nodes of ``N(0, population_sd^2)``; items with infinite
    difficulty are skipped (they contribute a constant).

    Returns
    -------
    posterior : (L, Q) weights summing to 1 per row.
    nodes : (Q,) ability nodes.  EAP = ``posterior @ nodes``.
    """
    k, n = _counts(successes, trials)
    difficulty = np.asarray(difficulty, dtype=float)
    finite = np.isfinite(difficulty)
    nodes, weights = normal_quadrature(n_quadrature, population_sd)

    def sub(v):
        return None if v is None else np.asarray(v, dtype=float)[finite]

    log_post = _log_lik_at_nodes(
        k[:, finite],
        n[:, finite],
        nodes,
        difficulty[finite],
        sub(discrimination),
        sub(guessing),
    ) + np.log(weights)
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True), nodes


def posterior_quantile(posterior: np.ndarray, nodes: np.ndarray, q: float) -> np.ndarray:
    """Quantile of discrete posteriors: the smallest node whose CDF reaches ``q``.

    The paper scores ``rasch_mml_credible`` by this discrete-CDF quantile, so
    models whose posteriors cross ``q`` at the same node tie.
    """
    q = check_probability("quantile", q)
    order = np.argsort(nodes)
    cdf = np.cumsum(posterior[:, order], axis=1)
    idx = np.minimum(np.argmax(cdf >= q * (1 - 1e-12), axis=1), nodes.size - 1)
    return nodes[order][idx]


@dataclass(frozen=True)
class MmlFit:
    """Rasch marginal-ML fit.

    Attributes
    ----------
    difficulty : (M,) item difficulties (``±inf`` for items all models solved / failed).
    population_sd : standard deviation of the N(0, sd^2) ability population.
    nodes : (Q,) quadrature abilities; posterior : (L, Q) posterior weights.
    eap : (L,) posterior means; posterior_sd : (L,) posterior standard deviations.
    log_likelihood : marginal log-likelihood (with binomial coefficients).
    n_iter : EM iterations run; converged : whether the EM tolerance was met.
    """

    difficulty: np.ndarray
    population_sd: float
    nodes: np.ndarray
    posterior: np.ndarray
    eap: np.ndarray
    posterior_sd: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool


def _solve_difficulties(r, s, nodes, b, slope, max_iter):
    """M-step: for each item solve sum_q [r_qm - s_qm sigmoid(slope*z_q - b_m)] = 0 (Newton).

    ``r`` and ``s`` are expected successes and trials per node (Q, M); the
    left side is strictly increasing in b_m, so safeguarded Newton converges.
    """
    for _ in range(int(max_iter)):
        p = expit(slope * nodes[:, None] - b[None, :])
        g = (s * p).sum(axis=0) - r.sum(axis=0)  # d(-loglik)/d b_m ... sign: increasing root
        h = (s * p * (1.0 - p)).sum(axis=0)
        step = np.clip(g / np.maximum(h, 1e-300), -2.0, 2.0)
        b = b + step
        if np.max(np.abs(step)) < 1e-12:
            break
    return b


def _solve_slope(r, s, nodes, b, slope, max_iter):
    """M-step for the common slope (= population sd) of the free-variance Rasch model."""
    for _ in range(int(max_iter)):
        p = expit(slope * nodes[:, None] - b[None, :])
        z = nodes[:, None]
        g = ((r - s * p) * z).sum()
        h = (s * p * (1.0 - p) * z**2).sum()
        step = np.clip(g / max(h, 1e-300), -0.5, 0.5)
        slope = max(slope + step, 1e-3)
        if abs(step) < 1e-12:
            break
    return slope


def fit_rasch_mml(
    successes: np.ndarray,
    trials: np.ndarray | int,
    *,
    n_quadrature: int = 21,
    em_iter: int = 20,
    max_iter: int = 100,
    population_sd: float | None = 1.0,
    tol: float = 1e-8,
) -> MmlFit:
    """Rasch marginal ML by EM over Gauss–Hermite quadrature (Bock & Aitkin, 1981).

    Abilities are integrated out under ``theta ~ N(0, sd^2)``; the marginal
    likelihood is maximised over the difficulties by EM (paper, Alg. "Rasch
    MML"): the E-step forms each model's discrete posterior over the nodes,
    the M-step solves each item's expected-count score equation (vectorised
    Newton, at most ``max_iter`` steps).  EM stops after ``em_iter`` iterations
    or when no difficulty moves by more than ``tol``.

    ``population_sd=None`` estimates the population sd as well (a Rasch model
    with free latent variance, equivalently a common slope on a standard-normal
    ability: mirt's ``itemtype='Rasch'``).  The population mean is 0, which
    fixes the location, so difficulties are *not* re-centred.

    Items solved by every model (or none) have difficulty ``-inf`` (``+inf``):
    with a fixed population that is the exact marginal-ML value, and the items
    carry no information about abilities, so they are set aside.
    """
    k, n = _counts(successes, trials)
    em_iter = check_int("em_iter", em_iter)
    max_iter = check_int("max_iter", max_iter)
    if population_sd is not None:
        population_sd = check_finite("population_sd", population_sd, positive=True)
    z, w = normal_quadrature(n_quadrature)
    keep = _informative_items(k, n)
    kk, nn = k[:, keep], n[:, keep]
    slope = 1.0 if population_sd is None else float(population_sd)
    # logistic-normal approximation E[sigmoid(theta - b)] ~ sigmoid(-b / sqrt(1 + 0.346 sd^2))
    b = -_logit((kk.sum(axis=0) + 0.5) / (nn.sum(axis=0) + 1.0)) * np.sqrt(1 + 0.346 * slope**2)
    log_w = np.log(w)

    def e_step(b, slope):
        log_post = _log_lik_at_nodes(kk, nn, slope * z, b) + log_w
        top = log_post.max(axis=1, keepdims=True)
        post = np.exp(log_post - top)
        norm = post.sum(axis=1, keepdims=True)
        return post / norm, float(np.sum(np.log(norm) + top))

    converged = False
    n_iter = 0
    for n_iter in range(1, int(em_iter) + 1):  # noqa: B007  (reported after the loop)
        post, _ = e_step(b, slope)
        r, s = post.T @ kk, post.T @ nn  # expected successes / trials per node (Q, M)
        new_b = _solve_difficulties(r, s, z, b.copy(), slope, max_iter)
        new_slope = slope
        if population_sd is None:
            new_slope = _solve_slope(r, s, z, new_b, slope, max_iter)
        change = max(np.max(np.abs(new_b - b), initial=0.0), abs(new_slope - slope))
        b, slope = new_b, new_slope
        if change < tol:
            converged = True
            break
    post, log_lik = e_step(b, slope)
    log_lik += float(np.sum(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    nodes = slope * z
    eap = post @ nodes
    sd = np.sqrt(np.maximum(post @ nodes**2 - eap**2, 0.0))
    difficulty = _boundary_difficulty(k, n)
    difficulty[keep] = b
    return MmlFit(difficulty, slope, nodes, post, eap, sd, log_lik, n_iter, converged)


@ranking_method
def rasch_mml(
    data: ResponseData,
    *,
    quantile: float | None = None,
    max_iter: int = 100,
    em_iter: int = 20,
    n_quadrature: int = 21,
    population_sd: float | None = 1.0,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Rasch marginal ML (EM + quadrature) with EAP or posterior-quantile scores.

    ``quantile=None`` scores by the EAP ability (identifier ``rasch_mml``);
    ``quantile=q`` by the discrete posterior quantile ``Q_q(theta_l | k)``
    (``rasch_mml_credible``, q = 0.05: a conservative lower bound).  See
    :func:`fit_rasch_mml`.

    Both are computed on the fixed quadrature grid, as in the paper: with many
    trials per model a posterior is narrower than the node spacing (about 0.3
    for 21 nodes), collapses onto one node and models tie there.  Raise
    ``n_quadrature`` for a finer resolution.  ``return_item_params=True`` adds ``difficulty``,
    ``ability_sd`` (posterior sd) and ``population_sd`` to ``details``.
    """
    k, n = _binary_counts(data, "Rasch MML")
    fit = fit_rasch_mml(
        k,
        n,
        n_quadrature=n_quadrature,
        em_iter=em_iter,
        max_iter=max_iter,
        population_sd=population_sd,
    )
    scores = fit.eap if quantile is None else posterior_quantile(fit.posterior, fit.nodes, quantile)
    details = {}
    if return_item_params:
        details = {
            "difficulty": fit.difficulty,
            "ability_sd": fit.posterior_sd,
            "population_sd": fit.population_sd,
        }
    return scores, details


# ---------------------------------------------------------------------------------------
# Dynamic (longitudinal) IRT
# ---------------------------------------------------------------------------------------
def fit_growth_irt(
    responses: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    time_points: np.ndarray | None = None,
    slope_reg: float = 0.01,
    max_iter: int = 500,
) -> IrtFit:
    """Logistic growth (longitudinal Rasch) model over ordered trials.

    .. math::
        P(R_{lmn} = 1) = \\sigma(\\theta_{0,l} + \\theta_{1,l} t_n - b_m),

    with times ``t_n`` rescaled to [0, 1] (default: equally spaced), centred
    difficulties and a ridge ``slope_reg * ||theta_1||^2`` on the slopes
    (Verhelst & Glas, 1993; paper Alg. "Dynamic IRT growth model").  The
    Bernoulli likelihood is convex; it is maximised by Newton's method with the
    exact Hessian and a line search.

    Returns an :class:`IrtFit` with ``ability`` = baseline ``theta_0`` and
    ``extra = {"slope": theta_1, "time": t}``.
    """
    R = np.asarray(responses)
    if R.ndim != 3:
        raise DataError(f"responses must be an (L, M, N) tensor, got shape {R.shape}")
    L, M, N = R.shape
    obs = np.ones(R.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if obs.shape != R.shape:
        raise DataError(f"mask shape {obs.shape} does not match responses {R.shape}")
    if np.any(((R != 0) & (R != 1)) & obs):
        raise DataError("the growth IRT model needs binary responses")
    slope_reg = check_finite("slope_reg", slope_reg, positive=True)
    if time_points is None:
        t = np.linspace(0.0, 1.0, N) if N > 1 else np.zeros(1)
    else:
        t = np.asarray(time_points, dtype=float)
        if t.shape != (N,) or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise DataError(f"time_points must be {N} strictly increasing finite values")
        t = (t - t[0]) / (t[-1] - t[0]) if N > 1 else np.zeros(1)
    Rf = np.where(obs, R, 0).astype(float)
    k = Rf.sum(axis=2)
    n = obs.sum(axis=2).astype(float)
    keep = _informative_items(k, n)
    what = "dynamic IRT (growth)"
    check_ford(k[:, keep], n[:, keep], what)
    Rk, Ok, kk = Rf[:, keep], obs[:, keep].astype(float), k[:, keep]
    S = kk.sum(axis=1)  # successes per model
    U = np.einsum("lmn,n->l", Rk, t)  # time-weighted successes per model
    K = kk.sum(axis=0)  # successes per item
    scale = max(float(Ok.sum()), 1.0)

    def evaluate(u: np.ndarray, v: np.ndarray) -> _Terms:
        """Bernoulli NLL of sigmoid(theta0 + theta1 t - b): exact gradient and Hessian."""
        th0, th1, b = u[:L], u[L:], v[:, 0]
        eta = (th0[:, None] - b)[:, :, None] + th1[:, None, None] * t  # (L, Mk, N)
        e = np.exp(-np.abs(eta))  # softplus and sigmoid from one exponential
        softplus = np.maximum(eta, 0.0) + np.log1p(e)
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        if mask is not None:
            softplus *= Ok
            p *= Ok
        nll = softplus.sum() - (S @ th0 + U @ th1 - K @ b)
        p_lm = p.sum(axis=2)
        g_u = np.r_[p_lm.sum(axis=1) - S, (p @ t).sum(axis=1) - U + 2 * slope_reg * th1]

        def curvature() -> tuple[_Hessian]:
            w = p * (1.0 - p)  # zero where unobserved (p = 0 there)
            A, B, C = w.sum(axis=2), w @ t, w @ (t * t)
            H_uu = np.block(
                [
                    [np.diag(A.sum(axis=1)), np.diag(B.sum(axis=1))],
                    [np.diag(B.sum(axis=1)), np.diag(C.sum(axis=1) + 2 * slope_reg)],
                ]
            )
            uv = -np.concatenate([A, B])[:, :, None]
            return (_Hessian(H_uu / scale, uv / scale, A.sum(axis=0)[:, None, None] / scale),)

        value = (nll + slope_reg * th1 @ th1) / scale
        return _Terms(
            value, lambda: (g_u / scale, (K - p_lm.sum(axis=0))[:, None] / scale, curvature)
        )

    theta0, b0 = _initial_location(kk, n[:, keep])
    try:
        u, v, terms, n_iter = _structured_newton(
            evaluate, np.r_[theta0, np.zeros(L)], b0[:, None], (0,), max_iter, what
        )
    except _Diverged as exc:
        raise _divergence_error(what, exc.u[:L], "baseline abilities") from None
    th0, th1, b = u[:L], u[L:], v[:, 0]
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))):
        raise NotIdentifiedError(f"{what}: the iterations diverged (non-finite parameters)")
    difficulty = _boundary_difficulty(k, n)
    difficulty[keep] = b
    return IrtFit(
        th0,
        difficulty,
        objective=terms.value * scale,
        n_iter=n_iter,
        extra={"slope": th1, "time": t},
    )


@ranking_method
def dynamic_irt(
    data: ResponseData,
    *,
    variant: Literal["linear", "growth"] = "linear",
    max_iter: int = 500,
    slope_reg: float = 0.01,
    time_points: np.ndarray | None = None,
    score: Literal["baseline", "final", "mean"] = "baseline",
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Dynamic IRT: abilities that may change along the (ordered) trial axis.

    - ``variant="linear"``: constant abilities over trials, the binomial
      Rasch joint-ML fit on the counts (identifier ``dynamic_irt_linear``);
    - ``variant="growth"``: the logistic growth model ``theta_0 + theta_1 t_n``
      of :func:`fit_growth_irt` (``dynamic_irt_growth``).  It reads trial order,
      so it is meaningful only when trials were run in a meaningful sequence.

    ``score`` picks the growth-model ranking score: ``"baseline"`` theta_0
    (the paper's choice), ``"final"`` theta_0 + theta_1, or ``"mean"`` ability
    over the observed times.  ``return_item_params=True`` adds ``difficulty``
    and, for growth, ``baseline`` and ``slope`` to ``details``.
    """
    check_choice("variant", variant, ("linear", "growth"))
    check_choice("score", score, ("baseline", "final", "mean"))
    data.require_binary("dynamic IRT")
    if variant == "linear":
        k, n = data.reductions.successes, data.reductions.trials
        fit = fit_irt(k, n, model="1pl", max_iter=max_iter)
        return fit.ability, (fit.item_params() if return_item_params else {})
    fit = fit_growth_irt(
        data.R, mask=data.mask, time_points=time_points, slope_reg=slope_reg, max_iter=max_iter
    )
    slope, t = fit.extra["slope"], fit.extra["time"]
    scores = {
        "baseline": fit.ability,
        "final": fit.ability + slope * t[-1],
        "mean": fit.ability + slope * t.mean(),
    }[score]
    details = {}
    if return_item_params:
        details = {"difficulty": fit.difficulty, "baseline": fit.ability, "slope": slope}
    return scores, details
