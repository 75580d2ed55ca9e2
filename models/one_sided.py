"""The Rasch difficulties of one-sided questions, integrated out of the sampled density.

A question solved by no model in any trial (or by every model in every trial)
bounds its difficulty from one side only; given the abilities theta and the
pooled mu_b, sigma_b that difficulty is independent of everything else.  With
binomial counts and equal trials per question, all never-solved questions
share one likelihood factor S(b) and all always-solved ones another, so the
sampled density can carry two one-dimensional integrals in place of
thousands of parameters, and each difficulty is reported as an exact draw
from its conditional posterior (:func:`collapsed_difficulties`).  Used by
:func:`models.irt.collapsed_rasch` (issue 9, fifth round; docs/samplers.md).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import zero_grad

__all__ = ["COLLAPSE_GRID", "COLLAPSE_MIN_QUESTIONS", "collapsible", "collapsed_difficulties"]


#: Standard-normal grid of the collapsed difficulties (:func:`collapsed_difficulties`),
#: centred on the integrand's mode (:func:`_side_grid`): the trapezoid rule's error on it
#: is about exp(-2 pi^2 / (sigma_b dx)), below 1e-7 for sigma_b <= 20.
COLLAPSE_GRID = np.linspace(-6.5, 6.5, 209)


def collapsible(n: np.ndarray) -> bool:
    """Whether every question has the same trials per model (no missing trials)."""
    return bool(np.all(n == n[:, :1]))


#: One-sided questions from which :func:`models.irt.build` integrates them out by default.
COLLAPSE_MIN_QUESTIONS = 1000

#: The mode of a one-sided difficulty's conditional density is bracketed in
#: ``MODE_LEVELS`` rounds, each splitting the bracket into ``MODE_CELLS`` cells at once:
#: 16^3 = 4096 cells, the precision of 12 bisection steps in 3 vectorised rounds.
MODE_CELLS, MODE_LEVELS = 16, 3


def _side_grid(theta, location, scale, trials, side: int):
    """Grid x and log prior-times-likelihood of a one-sided question's difficulty on it.

    With b = location + scale x, the log integrand g(x) = log phi(x) + sum_l n_l
    log(1 - logistic(theta_l - b)) for a question no model solves (``side``
    -1) and log phi(x) + sum_l n_l log logistic(theta_l - b) for one every model
    solves (``side`` +1).  g'' <= -1 (a standard normal times log-concave
    factors), so beyond 6.5 from its mode the integrand has fallen below
    exp(-6.5^2 / 2) = 7e-10 of its peak: the grid is :data:`COLLAPSE_GRID`
    centred on the mode, which lies between 0 and -side scale sum_l n_l and
    is bracketed on g' to 1/4096 of that range (:data:`MODE_CELLS`,
    :data:`MODE_LEVELS`: one vectorised evaluation of g' per round, so the graph
    stays shallow; 12 nested bisection steps took PyTensor's rewrites 20-40 s to
    compile).  The centre is not differentiated: the integral does not depend on
    where the grid lies.
    """
    def slope(x):  # g'(x) at each point of the vector x
        eta = side * (location + scale * x[:, None] - theta[None, :])
        return -x - side * scale * (trials * pt.sigmoid(eta)).sum(axis=1)

    reach = -side * scale * trials.sum()
    lo, width = pt.minimum(reach, 0.0), pt.abs(reach)
    inner = np.arange(1, MODE_CELLS)
    for _ in range(MODE_LEVELS):
        width = width / MODE_CELLS
        # g' falls strictly (g'' <= -1): the points where it still rises come first
        lo = lo + width * (slope(lo + width * inner) > 0).sum()
    hi = lo + width
    x = zero_grad(0.5 * (lo + hi)) + pt.as_tensor(COLLAPSE_GRID)
    eta = theta[:, None] - (location + scale * x)[None, :]
    log_prior = -0.5 * x**2 - 0.5 * np.log(2.0 * np.pi)
    # log(1 - logistic(e)) = -softplus(e), log logistic(e) = -softplus(-e)
    return x, log_prior - (trials[:, None] * pt.softplus(float(-side) * eta)).sum(axis=0)


def _log_trapezoid(log_f):
    """log of the trapezoid rule's integral of exp(log_f) over a :data:`COLLAPSE_GRID`."""
    dx = COLLAPSE_GRID[1] - COLLAPSE_GRID[0]
    weights = np.ones(COLLAPSE_GRID.size)
    weights[[0, -1]] = 0.5
    return pt.logsumexp(log_f + np.log(weights)) + np.log(dx)


def _inverse_cdf(x, log_f, u):
    """y with F(y) = u, F the integral of exp(log_f) over the grid x (equally spaced).

    F at the grid points: trapezoid partial sums with the Euler-Maclaurin end
    correction.  Within a cell the density is taken linear, its CDF there
    quadratic: a fraction r of the cell's mass is reached at t = 2 r m / (f0 +
    sqrt(f0^2 + 2 d r m)) of the cell, with end values f0, f0 + d and mean m = f0 + d / 2.
    """
    size, dx = COLLAPSE_GRID.size, COLLAPSE_GRID[1] - COLLAPSE_GRID[0]
    f = pt.exp(log_f - pt.max(log_f))
    # trapezoid partial sums with the Euler-Maclaurin end correction -h^2/12 (f'(x) - f'(x0)):
    # the partial integrals are then O(h^4), not O(h^2) (central differences for f')
    slope = pt.concatenate([f[1:2] - f[:1], 0.5 * (f[2:] - f[:-2]), f[-1:] - f[-2:-1]])
    cdf = pt.concatenate([pt.zeros(1), pt.cumsum(0.5 * (f[1:] + f[:-1]))])
    cdf = cdf - (slope - slope[0]) / 12.0
    cdf = cdf / cdf[-1]
    lo = pt.clip(pt.extra_ops.searchsorted(cdf, u) - 1, 0, size - 2)
    width = cdf[lo + 1] - cdf[lo]
    r = pt.clip((u - cdf[lo]) / pt.where(width > 0, width, 1.0), 0.0, 1.0)
    f0, d = f[lo], f[lo + 1] - f[lo]
    mean = f0 + 0.5 * d
    root = f0 + pt.sqrt(pt.maximum(f0**2 + 2.0 * d * r * mean, 0.0))
    t = pt.where(root > 0, 2.0 * r * mean / pt.where(root > 0, root, 1.0), r)
    return x[lo] + pt.clip(t, 0.0, 1.0) * dx


def collapsed_difficulties(theta, k: np.ndarray, n: np.ndarray):
    """Difficulties of the questions solved by no model or by all, integrated out.

    Given theta, mu_b and sigma_b such a question's difficulty is independent
    of everything else, with density proportional to N(b | mu_b, sigma_b)
    S(b), S(b) = prod_l (1 - logistic(theta_l - b))^n_l (never solved) or
    prod_l logistic(theta_l - b)^n_l (always solved): the prior's tail beyond
    the models, bounded by the data from one side only.  Sampled next to theta
    by NUTS, these b mixed slowly on real benchmarks (docs/samplers.md, fifth round).  Here
    they are integrated out of the sampled density, which gets log Z = log int
    N(b | mu_b, sigma_b) S(b) db per such question in place of its cells
    (trapezoid rule on a standard-normal grid, :func:`_side_grid`: two
    integrals whatever the number of questions, since with equal trials per
    question all never-solved questions share S, and all always-solved ones).
    Each such b is reported as an exact draw from its conditional posterior,
    b_m = mu_b + sigma_b F^-1(Phi(z_m)) with F the conditional CDF in standard
    units and z_m ~ N(0, 1) the question's free coordinate, whose posterior is
    then its prior.  The joint posterior of (theta, mu_b, sigma_b, b) is the
    uncollapsed model's.

    The sampled model's observed ``k`` weighs these questions' cells 0 and the
    Potential ``uninformed_difficulties`` adds their log Z; its b for them is
    the plain mu_b + sigma_b z_m, which the weight makes irrelevant, so
    sampling never evaluates F^-1 (the draws' Deterministic ``b`` does, once
    per draw).  Its twin for scoring (``score_every_cell``,
    :func:`models._common.scoring_model`: pointwise log-likelihood, LOO,
    posterior-predictive draws) has the same free variables, scores every
    cell at the reported b and has no Potential.

    Returns ``difficulties(raw, location, scale)`` for :func:`models.item_effects.pooled`,
    ``likelihood(b_sampled, b_reported, score_every_cell) -> (b, cell weight or
    None)`` for the observed cells, and ``potential()`` (the sampled model only).
    """
    total, tries = k.sum(axis=0), n.sum(axis=0)
    never = pm.Data("never_solved", (total == 0).astype(float), dims="question")
    always = pm.Data("always_solved", ((total == tries) & (total > 0)).astype(float),
                     dims="question")
    trials = pm.Data("question_trials", n[:, 0].astype(float), dims="llm")
    grids = {}

    def difficulties(raw, location, scale):
        grids["never"] = _side_grid(theta, location, scale, trials, -1)
        grids["always"] = _side_grid(theta, location, scale, trials, +1)
        u = 0.5 * pt.erfc(-raw / np.sqrt(2.0))
        x = pt.where(never > 0, _inverse_cdf(*grids["never"], u), _inverse_cdf(*grids["always"], u))
        return zero_grad(location + scale * x)

    def likelihood(b_sampled, b_reported, score_every_cell):
        if score_every_cell:
            return b_reported, None
        return b_sampled, (1.0 - never - always)[None, :]

    def potential():
        log_z = (never.sum() * _log_trapezoid(grids["never"][1])
                 + always.sum() * _log_trapezoid(grids["always"][1]))
        pm.Potential("uninformed_difficulties", log_z)

    return difficulties, likelihood, potential


def scoring_twin(model: pm.Model, build) -> pm.Model:
    """``build()``, made once per model and kept on it, with the model's current data."""
    twin = model.__dict__.get("_scoring_twin")
    if twin is None:
        twin = model.__dict__["_scoring_twin"] = build()
    with twin:
        pm.set_data({v.name: v.get_value() for v in model.data_vars if v.name in twin.named_vars})
    return twin
