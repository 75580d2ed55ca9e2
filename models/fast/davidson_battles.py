"""Contextual Davidson battles as PyTensor Ops: log-pmf and score together.

For battle k between models a_k and b_k with covariate differences z_k (column k of z,
covariate-major, (K, battles)), outcome o_k (0: a_k won, 1: b_k won, 2: tie), strengths
theta (L,), coefficients beta (K,) and log nu,

    u_k        = (theta_{a_k} - theta_{b_k} + z_k . beta) / 2
    Z_k        = log(e^(u_k) + e^(-u_k) + nu)                  (Davidson's normaliser)
    cells_k    = (u_k, -u_k, log nu)[o_k] - Z_k                 (the Categorical log-pmf)
    residual_k = ([o_k = 0] - [o_k = 1] - p_a + p_b) / 2        (d cells_k / d delta_k)
    tie_k      = [o_k = 2] - p_tie                               (d cells_k / d log nu)

with p = softmax(u_k, -u_k, log nu).  For the output gradient g, d/d theta_l =
sum_{k: a_k = l} g_k r_k - sum_{k: b_k = l} g_k r_k, d/d beta = sum_k g_k r_k z_k and
d/d log nu = sum_k g_k tie_k.  Z_k is computed from its largest term m = max(|u_k|,
log nu): m + log(e^(u-m) + e^(-u-m) + e^(log nu - m)), the sum in [1, 3].

As :mod:`models.fast.battle_cells` does for Bradley-Terry, :class:`DavidsonCellsTotal`
gives the sum over battles and its gradient in one call, and a rewrite puts it in place
of the sum of :class:`DavidsonCells` (the elementwise Op stays for pointwise
log-likelihoods).  NumPy ``perform``, Numba (nutpie) and JAX (NumPyro).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from numba import njit
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from . import battle_cells
from ._backends import register_cells_backends
from ._vector_math import KERNEL_OPTIONS, SUM_OPTIONS, exp_nonpositive, log_positive
from .battle_cells import BLOCK, add_block_scores, battle_inputs, block_predictor, linear_predictor
from .slope_cells import broadcast_scalar, register_sum_of_cells

__all__ = ["DavidsonCells", "DavidsonCellsTotal", "davidson_cells"]


def _inputs(o, a, b, z, theta, beta, log_nu):
    log_nu = pt.as_tensor_variable(log_nu).astype("float64")
    if log_nu.ndim != 0:
        raise ValueError("Davidson battle cells take a scalar log nu")
    return [*battle_inputs(o, a, b, z, theta, beta), log_nu]


def _cells_numpy(o, a, b, z, theta, beta, log_nu):
    u = 0.5 * (theta[a] - theta[b] + beta @ z)
    logits = np.stack([u, -u, np.full_like(u, log_nu)])
    Z = np.logaddexp.reduce(logits, axis=0)
    p = np.exp(logits - Z)
    cells = np.take_along_axis(logits, o[None].astype(np.int64), axis=0)[0] - Z
    won = (o == 0).astype(float) - (o == 1)
    return cells, 0.5 * (won - p[0] + p[1]), (o == 2) - p[2]


class DavidsonCells(Op):
    """(o, a, b, z, theta, beta, log_nu) -> (cells, residual, tie), each (battles,)."""

    __props__ = ()

    def make_node(self, o, a, b, z, theta, beta, log_nu):
        inputs = _inputs(o, a, b, z, theta, beta, log_nu)
        cells = pt.vector(dtype="float64", shape=inputs[1].type.shape)
        return Apply(self, inputs, [cells, cells.type(), cells.type()])

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, _cells_numpy(*inputs), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [shapes[1]] * 3

    def pullback(self, inputs, outputs, output_grads):
        o, a, b, z, theta, beta, log_nu = inputs
        g_cells, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError("DavidsonCells' residual outputs are not differentiable")
        undefined = [grad_undefined(self, k, v) for k, v in enumerate((o, a, b, z))]
        weight = broadcast_scalar(g_cells)
        if weight is not None:  # the gradient of a sum of cells: one pass, no arrays
            _, d_theta, d_beta, d_log_nu = DavidsonCellsTotal()(*inputs)
            return [*undefined, weight * d_theta, weight * d_beta, weight * d_log_nu]
        weighted = g_cells * outputs[1]
        d_theta = pt.zeros_like(theta)[a].inc(weighted)[b].inc(-weighted)
        return [*undefined, d_theta, pt.dot(z, weighted), pt.sum(g_cells * outputs[2])]


class DavidsonCellsTotal(Op):
    """(o, a, b, z, theta, beta, log_nu) -> (sum of the cells, its gradient in theta, beta
    and log nu), in one pass; the gradient outputs have none (no second derivatives)."""

    __props__ = ()

    def make_node(self, o, a, b, z, theta, beta, log_nu):
        inputs = _inputs(o, a, b, z, theta, beta, log_nu)
        return Apply(self, inputs, [pt.scalar(dtype="float64"), inputs[4].type(),
                                    inputs[5].type(), pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        o, a, b, z, theta, beta, log_nu = inputs
        cells, residual, tie = _cells_numpy(*inputs)
        d_theta = np.bincount(a, residual, theta.size) - np.bincount(b, residual, theta.size)
        values = (np.asarray(cells.sum()), d_theta, z @ residual, np.asarray(tie.sum()))
        for storage, value in zip(output_storage, values, strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [(), shapes[4], shapes[5], ()]

    def pullback(self, inputs, outputs, output_grads):
        g_total, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError("DavidsonCellsTotal's gradient outputs have no gradient "
                                      "(no second derivatives)")
        undefined = [grad_undefined(self, k, v) for k, v in enumerate(inputs[:4])]
        return [*undefined, *(g_total * d for d in outputs[1:])]


#: sum(DavidsonCells(...).cells) -> DavidsonCellsTotal(...).total: the sum without arrays.
sum_of_davidson_cells = register_sum_of_cells(
    "sum_of_davidson_cells", DavidsonCells, lambda op, *inputs: DavidsonCellsTotal()(*inputs)[0])


def davidson_cells(o, a, b, z, theta, beta, log_nu):
    """(u, -u, log nu)[o] - log(e^u + e^-u + nu), u = (theta[a] - theta[b] + beta @ z) / 2:
    the Categorical log-pmf of each battle."""
    return DavidsonCells()(o, a, b, z, theta, beta, log_nu)[0]


@njit(inline="always", **KERNEL_OPTIONS)
def _battle(outcome, delta, log_nu):
    """One battle's cell, residual (d cell / d delta) and tie score (d cell / d log nu)."""
    half = 0.5 * delta
    m = max(abs(half), log_nu)
    e_a, e_b = exp_nonpositive(half - m), exp_nonpositive(-half - m)
    e_tie = exp_nonpositive(log_nu - m)
    total = e_a + e_b + e_tie
    chosen = half if outcome == 0 else (-half if outcome == 1 else log_nu)
    won = 1.0 if outcome == 0 else (-1.0 if outcome == 1 else 0.0)
    return (chosen - (m + log_positive(total)), 0.5 * (won - (e_a - e_b) / total),
            (1.0 if outcome == 2 else 0.0) - e_tie / total)


@njit(**KERNEL_OPTIONS)
def _residuals(o, a, b, z, theta, beta, log_nu, cells):
    """delta, then the cells (into ``cells``), the residuals (in delta's place) and the
    tie scores."""
    delta = linear_predictor(a, b, z, theta, beta)
    tie = np.empty(delta.size)
    for k in range(delta.size):
        cells[k], delta[k], tie[k] = _battle(o[k], delta[k], log_nu)
    return delta, tie


@njit(**SUM_OPTIONS)
def _davidson_total(o, a, b, z, theta, beta, log_nu):
    """The sum of the battles' cells and its gradient in theta, beta and log nu, block by
    block (:data:`models.fast.battle_cells.BLOCK`)."""
    n = z.shape[1]
    buffer = np.empty(min(BLOCK, n))
    total, d_log_nu = 0.0, 0.0
    d_theta, d_beta = np.zeros(theta.size), np.zeros(beta.size)
    for start in range(0, n, BLOCK):
        delta = block_predictor(a, b, z, theta, beta, start, buffer[:min(BLOCK, n - start)])
        outcome = o[start:start + delta.size]
        for k in range(delta.size):
            cell, delta[k], tie = _battle(outcome[k], delta[k], log_nu)
            total += cell
            d_log_nu += tie
        add_block_scores(a, b, z, delta, start, d_theta, d_beta)
    return total, d_theta, d_beta, d_log_nu


def _davidson_cells_loop(o, a, b, z, theta, beta, log_nu):
    """The cells, residuals and tie scores (compiled by Numba for nutpie)."""
    cells = np.empty(z.shape[1])
    residual, tie = _residuals(o, a, b, z, theta, beta, log_nu[()], cells)
    return cells, residual, tie


def _davidson_total_loop(o, a, b, z, theta, beta, log_nu):
    """The sum and the log-nu score (0-d arrays, as PyTensor's scalars are) and the
    gradient in theta and beta (Numba)."""
    total, d_theta, d_beta, d_log_nu = _davidson_total(o, a, b, z, theta, beta, log_nu[()])
    return np.full((), total), d_theta, d_beta, np.full((), d_log_nu)


def _davidson_cells_jax(o, a, b, z, theta, beta, log_nu):
    import jax.numpy as jnp
    from jax.nn import log_softmax

    u = 0.5 * (theta[a] - theta[b] + beta @ z)
    logp = log_softmax(jnp.stack([u, -u, jnp.full_like(u, log_nu)]), axis=0)
    p = jnp.exp(logp)
    cells = jnp.take_along_axis(logp, o[None].astype(jnp.int32), axis=0)[0]
    won = (o == 0).astype(u.dtype) - (o == 1).astype(u.dtype)
    return cells, 0.5 * (won - p[0] + p[1]), (o == 2).astype(u.dtype) - p[2]


def _davidson_total_jax(o, a, b, z, theta, beta, log_nu):
    cells, residual, tie = _davidson_cells_jax(o, a, b, z, theta, beta, log_nu)
    d_theta = (theta * 0).at[a].add(residual).at[b].add(-residual)
    return cells.sum(), d_theta, z @ residual, tie.sum()


# the loops call battle_cells' passes: its source is part of their cache key
_KERNELS = (__file__, battle_cells.__file__)
register_cells_backends(DavidsonCells, _davidson_cells_loop, _davidson_cells_jax, *_KERNELS)
register_cells_backends(DavidsonCellsTotal, _davidson_total_loop, _davidson_total_jax, *_KERNELS)
