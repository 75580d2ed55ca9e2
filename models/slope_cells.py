"""The 2PL's binomial cells as one PyTensor Op: log-pmf and score in one pass.

For abilities theta_l, discriminations a_m and intercepts beta_m, with
x_lm = a_m theta_l + beta_m,

    cells_lm    = c_lm + k_lm x_lm - n_lm softplus(x_lm)   (c = log C(n, k): the log-pmf)
    residual_lm = k_lm - n_lm sigma(x_lm)                 (d cells_lm / d x_lm)

and, for the output gradient g, d/d theta_l = sum_m g_lm residual_lm a_m,
d/d a_m = sum_l g_lm residual_lm theta_l, d/d beta_m = sum_l g_lm residual_lm.  Unlike
the Rasch's (:mod:`models.rasch_cells`) the exponential does not factorise over models
and questions, so a cell costs one ``exp`` and one ``log``: with u = e^(-|x|) in
(0, 1], softplus(x) = max(x, 0) + log(1 + u) and sigma(x) = 1 / (1 + u) or
u / (1 + u), where PyTensor's graph computed the softplus (``exp`` and ``log1p``) for
the density and the sigmoid again for the gradient through several fused loops.
log(1 + u) loses at most about 1.1e-16 absolutely against log1p(u) and is much cheaper.
One log-density and gradient of the whole 2PL, PyTensor's Numba function (same run,
2026-11-29): 331 against 550 us on 43 x 400 x 10, 301 against 435 on LiveCodeBench,
521 against 864 on ZeroEval MATH-L5, 1,329 against 1,896 on Reasoning Gym hard
(docs/samplers.md, sixteenth round).

Numba compiles ``exp`` and ``log`` to scalar library calls, so that loop ran one cell at a
time.  It now calls :mod:`models._vector_math` (range reduction and polynomials, no call,
no branch), which LLVM runs 8 cells at a time: the whole 2PL's log-density and gradient,
same run (2026-12-02), 452 against 187 us on ZeroEval MATH-L5, 1,040 against 513 on
Reasoning Gym hard, 195 against 102 on LiveCodeBench; its default fits 53.9 against
29.8 s (new graph's compile included) and 275.7 against 160.1 s, same steps per draw,
both passing (docs/samplers.md).

The back ends are those of :mod:`models.rasch_cells` (NumPy, Numba for nutpie, and JAX
with PyTensor's own softplus).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply

from ._common import (
    LogisticCellsOp,
    cells_node_inputs,
    logistic_binomial_draws,
    logistic_cells_jax,
    register_cells_backends,
)
from ._vector_math import binomial_logit_cells

__all__ = ["SlopeCells", "binomial_2pl", "slope_cells"]


def _cells_numpy(k, n, theta, a, beta, log_coef):
    x = theta[:, None] * a[None, :] + beta[None, :]
    u = np.exp(-np.abs(x))
    softplus = np.maximum(x, 0.0) + np.log(1.0 + u)
    sigmoid = np.where(x >= 0.0, 1.0 / (1.0 + u), u / (1.0 + u))
    return log_coef + k * x - n * softplus, k - n * sigmoid


class SlopeCells(LogisticCellsOp):
    """(k, n, theta, a, beta, log C(n, k)) -> (cells, residual), both (L, M); module docstring."""

    cells_numpy = staticmethod(_cells_numpy)

    def make_node(self, k, n, theta, a, beta, log_coef):
        inputs, cells = cells_node_inputs(
            (k, n, theta, a, beta, log_coef), (2, 2, 1, 1, 1, 2),
            "SlopeCells takes k, n, log C(n, k) of shape (L, M), theta (L,) and a, beta (M,)")
        return Apply(self, inputs, [cells, cells.type()])

    def pullback(self, inputs, outputs, output_grads):
        k, n, theta, a, beta, log_coef = inputs
        g_cells, g_residual = output_grads
        if not isinstance(g_residual.type, DisconnectedType):
            raise NotImplementedError("SlopeCells' residual output is not differentiable")
        weighted = g_cells * outputs[1]
        return [grad_undefined(self, 0, k), grad_undefined(self, 1, n),
                pt.dot(weighted, a), pt.dot(theta, weighted), weighted.sum(axis=0), g_cells]


def slope_cells(k, n, theta, a, beta, log_coef):
    """log C(n, k) + k x - n softplus(x), x = a_m theta_l + beta_m: the binomial log-pmf."""
    return SlopeCells()(k, n, theta, a, beta, log_coef)[0]


def _binomial_2pl_logp(value, n, ability, a, beta, log_coef):
    # PyMC hands the parameters over with leading axes added to the cells' rank: (L, 1), (1, M)
    return slope_cells(value, n, pt.flatten(ability), pt.flatten(a), pt.flatten(beta), log_coef)


def _binomial_2pl_random(n, ability, a, beta, log_coef, rng=None, size=None):
    return logistic_binomial_draws(rng, n, ability * a + beta, size)


def binomial_2pl(name, n, ability, a, beta, log_coef, observed, dims):
    """k_lm ~ Binomial(n_lm, logistic(a_m theta_l + beta_m)), log C(n, k) precomputed.

    ``ability`` (L, 1), ``a`` and ``beta`` (M,): the density of ``irt.binomial_logit``
    at that eta, its log-pmf and gradient from :class:`SlopeCells`.
    """
    return pm.CustomDist(
        name, n, ability, a, beta, log_coef, logp=_binomial_2pl_logp,
        random=_binomial_2pl_random, observed=observed, dims=dims,
    )


def _slope_cells_loop(k, n, theta, a, beta, log_coef):
    """The cells and residuals (compiled by Numba for nutpie): the vectorised loop."""
    return binomial_logit_cells(k, n, theta, a, beta, log_coef)


def _slope_cells_jax(k, n, theta, a, beta, log_coef):
    return logistic_cells_jax(k, n, theta[:, None] * a[None, :] + beta[None, :], log_coef)


register_cells_backends(SlopeCells, _slope_cells_loop, _slope_cells_jax, __file__)
