"""The Rasch model's binomial cells as one PyTensor Op: log-pmf and score in one pass.

The weighted cells of the collapsed Rasch (:mod:`models.one_sided`) use it; unweighted
cells take the 2PL's kernel at a = 1, which sums them without the tables
(:func:`models.likelihoods.binomial_rasch`).

For abilities theta_l and difficulties b_m, with x_lm = theta_l - b_m,

    cells_lm    = c_lm + k_lm x_lm - n_lm log(1 + e^(x_lm))   (c = log C(n, k): the log-pmf)
    residual_lm = k_lm - n_lm e^(x_lm) / (1 + e^(x_lm))    (d cells_lm / d x_lm)

and d/d theta_l = sum_m g_lm residual_lm, d/d b_m = -sum_l g_lm residual_lm for the
output gradient g.  The exponential factorises, e^(x_lm) = e^(theta_l) e^(-b_m), so a
cell costs one ``log`` and one division instead of an ``exp``, a ``log1p`` and the
gradient's second ``exp``, and ``log`` is much cheaper than ``log1p``.  These scalar
functions were the Rasch's sampling cost: on 43 x 400 cells PyTensor's Numba
log-density and gradient of the previous graph took 500 us against 128 us with this Op
(same run), and the default fit of a 43 x 400 x 10 tensor 36.5 s against 11.9 s
(docs/samplers.md, ``benchmarks/bench_pairwise_real.py --models rasch --peer``).
log(1 + u) loses at most about 1.1e-16 absolutely against log1p(u) for small u.  Where
e^(theta_l) e^(-b_m) leaves (1e-300, 1e300), the cell takes the stable
max(x, 0) + log1p(e^(-|x|)) instead.

The Numba loop (nutpie) is now the 2PL's vectorised one at slope 1 and intercept -b
(:func:`models._vector_math.binomial_logit_cells`): with ``exp`` and ``log1p`` as
polynomials, 8 cells per instruction cost less than one scalar ``log``.  The whole
Rasch's log-density and gradient, same run (2026-12-02): 72 against 56 us on
LiveCodeBench, 195 against 123 on ZeroEval MATH-L5, 451 against 313 on Reasoning Gym
hard.  The factorised exponential above remains NumPy's ``perform``.

Implemented for NumPy (``perform``), Numba (nutpie; cached on disk like PyTensor's own
Ops) and JAX (NumPyro, GPUs), where it computes PyTensor's own softplus: XLA vectorises
the functions anyway, and the JAX fits sample the previous graph's log-density.
"""

from __future__ import annotations

import numpy as np
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply

from ._backends import (
    LogisticCellsOp,
    cells_node_inputs,
    logistic_cells_jax,
    register_cells_backends,
)
from ._vector_math import binomial_logit_cells

__all__ = ["RaschCells", "rasch_cells"]

#: products e^(theta) e^(-b) outside (TINY, HUGE) take the stable fallback
TINY, HUGE = 1e-300, 1e300


def _cells_numpy(k, n, theta, b, log_coef):
    x = theta[:, None] - b[None, :]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        u = np.exp(theta)[:, None] * np.exp(-b)[None, :]
    fine = (u > TINY) & (u < HUGE)
    u = np.where(fine, u, 1.0)
    softplus = np.where(fine, np.log(1.0 + u), np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x))))
    sigmoid = np.where(fine, u / (1.0 + u), 0.5 * (1.0 + np.tanh(0.5 * x)))
    return log_coef + k * x - n * softplus, k - n * sigmoid


class RaschCells(LogisticCellsOp):
    """(k, n, theta, b, log C(n, k)) -> (cells, residual), both (L, M); module docstring."""

    cells_numpy = staticmethod(_cells_numpy)

    def make_node(self, k, n, theta, b, log_coef):
        inputs, cells = cells_node_inputs(
            (k, n, theta, b, log_coef), (2, 2, 1, 1, 2),
            "RaschCells takes k, n, log C(n, k) of shape (L, M) and theta (L,), b (M,)")
        return Apply(self, inputs, [cells, cells.type()])

    def pullback(self, inputs, outputs, output_grads):
        k, n, theta, b, log_coef = inputs
        g_cells, g_residual = output_grads
        if not isinstance(g_residual.type, DisconnectedType):
            raise NotImplementedError("RaschCells' residual output is not differentiable")
        weighted = g_cells * outputs[1]
        return [grad_undefined(self, 0, k), grad_undefined(self, 1, n),
                weighted.sum(axis=1), -weighted.sum(axis=0), g_cells]


def rasch_cells(k, n, theta, b, log_coef):
    """log C(n, k) + k x - n softplus(x), x = theta[:, None] - b[None, :]: binomial log-pmf."""
    return RaschCells()(k, n, theta, b, log_coef)[0]


def _rasch_cells_loop(k, n, theta, b, log_coef):
    """The cells and residuals (compiled by Numba for nutpie): the 2PL's vectorised loop at
    slope 1 and intercept -b."""
    return binomial_logit_cells(k, n, theta, np.ones(b.shape[0]), -b, log_coef)


def _rasch_cells_jax(k, n, theta, b, log_coef):
    return logistic_cells_jax(k, n, theta[:, None] - b[None, :], log_coef)


register_cells_backends(RaschCells, _rasch_cells_loop, _rasch_cells_jax, __file__)
