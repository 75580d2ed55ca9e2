"""Newton / Fisher scoring for IRT objectives with a block-structured Hessian.

Parameters split into "person" parameters ``u`` (abilities, P of them) and per-item
parameters ``v`` (M, q).  Persons interact only through items, so the item block of the
Hessian is block-diagonal and a Newton step eliminates it with a Schur complement
(O(P^2 M q^2)) instead of factoring the full matrix; linear constraints (centred
difficulties) enter as Lagrange multipliers.  Used by the growth
model (:mod:`.dynamic`); the JML/MAP xPL fits solve the same system in compiled form
(:func:`._xpl_kernel.newton_step`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from bayesrank.baselines._optim import model_labels
from bayesrank.errors import NotIdentifiedError

__all__ = [
    "DIVERGED",
    "Diverged",
    "Hessian",
    "Terms",
    "divergence_error",
    "newton_step",
    "structured_newton",
]

DIVERGED = 50.0  # |ability| beyond this on the logit scale: the iterations run off
# A problem whose accepted steps lower the objective f (as the solver sees it: divided by
# the number of observed trials) by at most FLAT_GAIN * max(1, |f|) (relative, as scipy's
# L-BFGS-B ``ftol`` that the paper's scorio uses with 1e-14) for FLAT_STEPS steps in a row
# stops: its objective is flat to rounding (the Armijo test still accepts such steps: their
# required decrease is below the rounding of f).  Newton's quadratic convergence ends
# ordinary problems by the decrement within a step or two of reaching such gains, so only
# crawls along a flat ridge (or at an optimum whose decrement stays above the rounding
# test) are cut short.  Used by :func:`structured_newton` and the compiled xPL stages.
FLAT_GAIN = 1e-14
FLAT_STEPS = 20


@dataclass(frozen=True)
class Hessian:
    """Block-structured Hessian: dense person block, person-item block, item blocks."""

    uu: np.ndarray  # (P, P)
    uv: np.ndarray  # (P, M, q)
    vv: np.ndarray  # (M, q, q)


class Terms:
    """Objective pieces at one point for :func:`structured_newton`.

    Parameters are split into "person" parameters ``u`` (P,) and per-item
    parameters ``v`` (M, q).  The value is computed at once; the gradient and
    the curvature (the Hessian) only where a step is taken, not at rejected
    line-search points.
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

    def curvature(self) -> Hessian:
        return self._d[2]()


def newton_step(t: Terms, H: Hessian, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the Newton system subject to linear constraints ``sum_m E[m]^T dv_m = 0``.

    ``E`` (M, q, n_c) holds one column per constraint (e.g. ones on the
    difficulty component: the step keeps ``sum_m b_m`` fixed).  The
    block-diagonal item block is eliminated (Schur complement onto the P
    person parameters and the multipliers), so the cost is O(P^2 M q^2)
    instead of a dense factorisation of the full Hessian; when persons
    outnumber item parameters the persons are eliminated instead.
    """
    P = t.g_u.size
    M, q = t.g_v.shape
    d_uu = np.diag(H.uu)
    if P > M * q and np.array_equal(H.uu, np.diag(d_uu)):
        return _step_eliminating_persons(t, H, d_uu, E)
    ridge = 1e-12 * (np.abs(np.diagonal(H.vv, axis1=1, axis2=2)).mean() + 1e-300)
    K = np.linalg.inv(H.vv + ridge * np.eye(q))  # (M, q, q)
    uv = H.uv.reshape(P, M * q)
    HK = (H.uv.transpose(1, 0, 2) @ K).transpose(1, 0, 2).reshape(P, M * q)
    S = H.uu - HK @ uv.T
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


def _step_eliminating_persons(t: Terms, H: Hessian, d_uu, E):
    """The same Newton system when persons outnumber item parameters (P > M q).

    The person block is diagonal (abilities interact only through items), so
    the persons are eliminated instead and a dense (M q + constraints) system
    is solved: O(P M^2 q^2).
    """
    P = t.g_u.size
    M, q = t.g_v.shape
    inv_u = 1.0 / d_uu
    B = H.uv.reshape(P, M * q)
    S = -(B.T * inv_u) @ B
    for m in range(M):
        S[m * q : (m + 1) * q, m * q : (m + 1) * q] += H.vv[m]
    rhs = -t.g_v.ravel() + B.T @ (inv_u * t.g_u)
    Ef = E.reshape(M * q, -1)
    n_c = Ef.shape[1]
    system = np.block([[S, Ef], [Ef.T, np.zeros((n_c, n_c))]])
    dv = np.linalg.solve(system, np.r_[rhs, np.zeros(n_c)])[: M * q]
    du = -inv_u * (t.g_u + B @ dv)
    return du, dv.reshape(M, q)


class Diverged(Exception):
    """Internal: person parameters ran off to infinity (the estimate does not exist)."""

    def __init__(self, u: np.ndarray):
        super().__init__("diverged")
        self.u = u


def divergence_error(
    what: str, u: np.ndarray, names: str = "abilities", labels: Sequence[str] | None = None
) -> NotIdentifiedError:
    far = np.flatnonzero(np.abs(u) > 0.5 * max(np.abs(u).max(), 1.0))
    return NotIdentifiedError(
        f"{what}: the {names} of model(s) {model_labels(far, labels)} run off to "
        f"{'+' if np.all(u[far] > 0) else '-'}infinity, so the estimate does not exist for "
        "these data (with 3PL guessing, a weak model's few successes can be explained by "
        "guessing alone). Use the MAP variant (ability prior) or rasch_mml"
    )


def structured_newton(evaluate, u, v, constrained: tuple[int, ...], max_iter: int, what: str):
    """Newton iterations with an Armijo line search.

    ``evaluate(u, v)`` returns :class:`Terms`; ``v[:, j]`` for j in
    ``constrained`` keeps summing to zero (the identifiability constraints).
    Stops when the Newton decrement falls to the rounding level of the objective
    (scaled to O(1)), when no step decreases the objective any more, or when
    FLAT_STEPS accepted steps in a row gain at most FLAT_GAIN relative (the
    objective is flat to rounding; the compiled xPL stages stop by the same rule).
    """
    M, q = v.shape
    v = v.copy()
    E = np.zeros((M, q, len(constrained)))
    for c, j in enumerate(constrained):
        v[:, j] -= v[:, j].mean()
        E[:, j, c] = 1.0
    t = evaluate(u, v)
    flat = 0
    for it in range(1, int(max_iter) + 1):
        try:
            du, dv = newton_step(t, t.curvature(), E)
        except np.linalg.LinAlgError:
            raise Diverged(u) from None
        decrement = -(t.g_u @ du + np.sum(t.g_v * dv))
        if not (np.isfinite(decrement) and decrement > -1e-14):
            raise Diverged(u)
        if decrement < 1e-16 * max(1.0, abs(t.value)):  # converged to rounding error
            return u, v, t, it
        step = 1.0
        for _ in range(40):
            v_new = v + step * dv
            trial = evaluate(u + step * du, v_new)
            predicted = -(t.g_u @ (step * du) + np.sum(t.g_v * (v_new - v)))
            if np.isfinite(trial.value) and trial.value <= t.value - 1e-4 * max(predicted, 0.0):
                break
            step *= 0.5
        else:
            return u, v, t, it  # no further decrease at machine precision
        gain = t.value - trial.value
        flat = 0 if gain > FLAT_GAIN * max(1.0, abs(t.value)) else flat + 1
        u, v, t = u + step * du, v_new, trial
        if np.abs(u).max() > DIVERGED:
            raise Diverged(u)
        if flat >= FLAT_STEPS:  # flat to rounding: the decrement test cannot fire any more
            return u, v, t, it
    warnings.warn(
        f"{what}: no convergence within max_iter={max_iter} iterations",
        RuntimeWarning,
        stacklevel=3,
    )
    return u, v, t, int(max_iter)
