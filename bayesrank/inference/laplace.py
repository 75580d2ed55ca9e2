"""The Laplace approximation of the binomial Rasch posterior: the CPU route at leaderboard
scale (``fit(data, "rasch", sampler="laplace")``).  An approximation, and named one.

The Rasch's prior in the paper's form (the same posterior of every contrast as
:func:`models.irt.rasch`, whose zero-sum abilities move their mean into the items:
module docstring of :mod:`models.irt`)::

    theta_l ~ N(0, s^2),  b_m ~ N(0, sigma_b^2),  sigma_b ~ HalfNormal(2.5)
    k_lm    ~ Binomial(n_lm, logistic(theta_l - b_m))

sigma_b is the fixed point of EM with the Laplace approximation of b in the E-step (the
joint mode of (theta, b, sigma_b) is at sigma_b = 0, the hierarchical funnel's neck):
given sigma_b the mode of (theta, b) is found by L-BFGS (:func:`scipy.optimize.minimize`;
the negative log-density is convex there), and the EM map sends sigma_b^2 to the
maximiser of E[log p(b, sigma_b)] with E[b_m^2] = b_hat_m^2 + 1 / h_b,m; its fixed point
is found by Brent's method (:func:`scipy.optimize.brentq`), EM's own steps being slow
where the data say little about each question.  At the mode, with W_lm = n_lm p_lm (1 -
p_lm), the negative log-density's Hessian in (theta, b) given sigma_b is

    H = [[diag(h_theta), -W], [-W^T, diag(h_b)]],  h_theta = W 1 + 1 / s^2,
                                                    h_b = W^T 1 + 1 / sigma_b^2,

so the abilities' marginal precision is the L x L Schur complement P = diag(h_theta) - W
diag(1 / h_b) W^T (one pass over the cells, no (L + M)^2 matrix), theta ~ N(theta_hat,
P^-1), and b | theta ~ N(b_hat + diag(1 / h_b) W^T (theta - theta_hat), diag(1 / h_b)).
Draws are i.i.d.; as in the NUTS fit, theta and b are reported with the informed models'
mean ability subtracted.  sigma_b is held at its estimate (every draw the same).

Where it is accurate: every ability is informed by many questions and every question by
many models, so the posterior of the abilities is close to Gaussian (a leaderboard's
1,000 models x 20,000 questions).  Where it is not: a model that solves nothing or every
question (its ability's posterior is the prior's tail), few questions per model, and the
difficulties of questions nobody solves (one-sided: skewed, the mode at the wall).
docs/scale.md compares it with NUTS on sets both can fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
from scipy.linalg import cho_factor, solve_triangular
from scipy.optimize import brentq, minimize
from scipy.special import expit, log_expit

from bayesrank.errors import DataError

__all__ = ["approximated_model", "laplace_draws", "rasch_laplace"]

SIGMA_B_PRIOR = 2.5  # sigma_b ~ HalfNormal(2.5), as models.item_effects.pooled


def _negative_log_posterior(x, k, n, s2, sigma2):
    """-log p(theta, b | sigma_b, data) up to a constant, and its gradient."""
    L = k.shape[0]
    theta, b = x[:L], x[L:]
    eta = theta[:, None] - b[None, :]
    value = -(k * eta + n * log_expit(-eta)).sum()  # log p^k (1 - p)^(n - k), up to C(n, k)
    residual = k - n * expit(eta)
    value += theta @ theta / (2 * s2) + b @ b / (2 * sigma2)
    grad = np.concatenate([-residual.sum(axis=1) + theta / s2, residual.sum(axis=0) + b / sigma2])
    return value, grad


def _scale_step(squares: float, M: int) -> float:
    """sigma_b^2 maximising E[log p(b, sigma_b)] = -M log sigma - S / (2 sigma^2) - sigma^2 /
    (2 * 2.5^2), S = sum_m E[b_m^2]: the root u > 0 of u^2 / 2.5^2 + M u - S = 0."""
    c = 1.0 / SIGMA_B_PRIOR**2
    return (-M + np.sqrt(M * M + 4.0 * c * squares)) / (2.0 * c)


#: L-BFGS stops by the gradient alone; a mode is accepted when every coordinate's gradient
#: is below _MODE_TOL times the square root of its posterior precision, i.e. it is off by
#: less than about _MODE_TOL posterior sd in each coordinate
_STOP, _MODE_TOL = {"maxiter": 5000, "ftol": 0.0, "gtol": 0.0}, 1e-4
#: sigma_b^2 is settled to this relative tolerance, bracketed between these bounds
_SCALE_TOL, _SCALE_RANGE = 1e-4, (1e-8, 1e4)


class _Modes:
    """Modes of (theta, b) given sigma_b^2, each search starting from the last mode, in
    coordinates scaled by the square roots of the last mode's curvatures (a diagonal
    preconditioner: a model's ability is pinned by M cells, a question's by L)."""

    def __init__(self, k, n, s2):
        self.k, self.n, self.s2 = k, n, s2
        rate = (k.sum(axis=0) + 0.5) / (n.sum(axis=0) + 1.0)
        self.x = np.concatenate([np.zeros(k.shape[0]), np.log((1 - rate) / rate)])
        q = (k + 0.5) / (n + 1.0)
        W = n * q * (1.0 - q)
        self.root = np.sqrt(np.concatenate([W.sum(axis=1), W.sum(axis=0)]) + 1.0 / s2)

    def _scaled(self, z, sigma2):
        value, grad = _negative_log_posterior(z / self.root, self.k, self.n, self.s2, sigma2)
        return value, grad / self.root

    def at(self, sigma2: float):
        """The mode, the cells' weights W and the precisions (h_theta, h_b) at sigma2."""
        L = self.k.shape[0]
        # in the scaled coordinates a unit is a posterior sd: stop at a tenth of the bound
        found = minimize(self._scaled, self.x * self.root, args=(sigma2,), jac=True,
                         method="L-BFGS-B", options={**_STOP, "gtol": 0.1 * _MODE_TOL})
        x = found.x / self.root
        p = expit(x[:L, None] - x[None, L:])
        W = self.n * p * (1.0 - p)
        h_theta, h_b = W.sum(axis=1) + 1.0 / self.s2, W.sum(axis=0) + 1.0 / sigma2
        gradient = found.jac * self.root  # the scaled search's gradient, unscaled
        root = np.sqrt(np.concatenate([h_theta, h_b]))
        if np.abs(gradient / root).max(initial=0.0) > _MODE_TOL:
            raise DataError(f"the Laplace approximation's mode search did not converge "
                            f"({found.message}); fit with NUTS instead (sampler='nutpie')")
        self.x, self.root = x, root
        return x, W, h_theta, h_b

    def em_gap(self, log_sigma2: float) -> float:
        """log T(u) - log u for the EM map T (:func:`_scale_step`) at u = exp(log_sigma2)."""
        L = self.k.shape[0]
        x, _, _, h_b = self.at(float(np.exp(log_sigma2)))
        squares = float(x[L:] @ x[L:] + (1.0 / h_b).sum())  # sum of E[b_m^2]
        return float(np.log(_scale_step(squares, x.size - L))) - log_sigma2

def _settled_scale(modes: _Modes) -> float:
    """sigma_b^2 where the EM map stands still: bracketed from the questions' spread by
    factors of 4, then Brent's method on log sigma_b^2."""
    low, high = np.log(_SCALE_RANGE)
    start = float(np.clip(np.log(max(np.var(modes.x[modes.k.shape[0]:]), 1e-2)), low, high))
    a = b = start
    gap = modes.em_gap(start)
    step = np.log(4.0) if gap > 0 else -np.log(4.0)  # T(u) > u: the fixed point lies above
    while True:
        b = float(np.clip(a + step, low, high))
        if modes.em_gap(b) * gap <= 0:
            break
        if b in (low, high):  # no fixed point inside the range: the data hold sigma_b there
            return float(np.exp(b))
        a = b
    root = brentq(modes.em_gap, min(a, b), max(a, b), xtol=_SCALE_TOL, rtol=_SCALE_TOL)
    return float(np.exp(root))


def rasch_laplace(k: np.ndarray, n: np.ndarray, informed: np.ndarray, ability_scale: float,
                  samples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``samples`` i.i.d. draws of theta (samples, L) and b (samples, M) from the Laplace
    approximation (module docstring), and sigma_b's estimate."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    L = k.shape[0]
    modes = _Modes(k, n, float(ability_scale) ** 2)
    sigma2 = _settled_scale(modes)
    x, W, h_theta, h_b = modes.at(sigma2)
    theta_hat, b_hat = x[:L], x[L:]
    precision = np.diag(h_theta) - (W / h_b) @ W.T
    factor, _ = cho_factor(precision, lower=True)
    # theta - theta_hat = C^-T z has covariance (C C^T)^-1 = P^-1
    dtheta = solve_triangular(factor, rng.standard_normal((L, samples)), lower=True,
                              trans="T").T
    b = b_hat + (dtheta @ W) / h_b + rng.standard_normal((samples, b_hat.size)) / np.sqrt(h_b)
    theta = theta_hat + dtheta
    centre = theta[:, informed].mean(axis=1, keepdims=True)
    return {"theta": theta - centre, "b": b - centre, "sigma_b": float(np.sqrt(sigma2))}


def laplace_draws(model: pm.Model, *, draws: int, chains: int, seed: int,
                  log_likelihood: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """The ``posterior`` group's arrays (chain, draw, ...) of :func:`rasch_laplace` for a
    Rasch model built by :func:`models.irt.build`, read from the model's data."""
    names = model.named_vars
    if "theta_direction" not in names or "b" not in names or "a" in names:
        raise DataError("sampler 'laplace' approximates the Rasch posterior only; fit other "
                        "models with NUTS (sampler='nutpie')")
    if "inv_sqrt_phi" in names or "prior_successes" in names:
        raise DataError("sampler 'laplace' approximates the binomial Rasch without prior runs; "
                        "fit the beta-binomial or R0 Rasch with NUTS (sampler='nutpie')")
    value = _data_values(model)
    informed, ability_scale = _abilities_prior(value)
    found = rasch_laplace(value["successes"], value["trials"], informed, ability_scale,
                          draws * chains, np.random.default_rng(seed))
    shaped = {name: found[name].reshape(chains, draws, -1) for name in ("theta", "b")}
    shaped["sigma_b"] = np.full((chains, draws), found["sigma_b"])  # held at its estimate
    return {"posterior": shaped}


def approximated_model(model: pm.Model) -> pm.Model:
    """The Rasch in the paper's form (module docstring) over ``model``'s data, whose free
    variables are the draws' theta and b: the model a Laplace fit's posterior-predictive
    check and PSIS-LOO score (``model``'s own free variables, its zero-sum coordinates, are
    not among the draws)."""
    value = _data_values(model)
    informed, ability_scale = _abilities_prior(value)
    with pm.Model(coords=model.coords) as paper:
        theta = pm.Normal("theta", 0.0, ability_scale, dims="llm")
        sigma_b = pm.HalfNormal("sigma_b", SIGMA_B_PRIOR)
        b = pm.Normal("b", 0.0, sigma_b, dims="question")
        pm.Binomial("k", n=value["trials"], logit_p=theta[:, None] - b,
                    observed=value["successes"], dims=("llm", "question"))
    return paper


def _data_values(model: pm.Model) -> dict[str, Any]:
    return {v.name: np.asarray(v.get_value()) for v in model.data_vars}


def _abilities_prior(value: dict[str, Any]) -> tuple[np.ndarray, float]:
    """The informed models and the abilities' prior sd s, read from the Rasch's data (its
    items' location sd is s / sqrt(L_I), :meth:`models.irt.IrtData.location_sd`)."""
    informed = value["theta_direction"] > 0
    return informed, float(value["location_sd"][0]) * np.sqrt(informed.sum())
