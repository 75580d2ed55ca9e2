"""Contextual Bradley-Terry battles as PyTensor Ops: log-pmf and score together.

For battle k between models a_k and b_k with covariate differences z_k (column k of z,
stored covariate-major, (K, battles)) and outcome y_k (1: a_k won, 0: b_k won), with
strengths theta (L,) and coefficients beta (K,),

    eta_k      = theta_{a_k} - theta_{b_k} + z_k . beta
    cells_k    = y_k eta_k - log(1 + e^(eta_k))           (the Bernoulli log-pmf)
    residual_k = y_k - logistic(eta_k)                    (d cells_k / d eta_k)

and, for the output gradient g, d/d theta_l = sum_{k: a_k = l} g_k r_k - sum_{k: b_k = l}
g_k r_k and d/d beta = sum_k g_k r_k z_k.

A fit reads only the sum over battles and its gradient: :class:`BattleCellsTotal`
computes both in one kernel call, returning no per-battle array, and the
rewrite :func:`sum_of_battle_cells` puts it in place of the sum of :class:`BattleCells`
(the elementwise Op stays for pointwise log-likelihoods), as
:mod:`models.fast.slope_cells` does for the 2PL.  PyTensor's own graph of the same
log-density gathers theta twice, writes eta, the softplus and the residual, and
scatters the residual back with an indexed increment, array by array.  The Numba loop
works in passes that LLVM vectorises (eta, one covariate row at a time; softplus and
residual; each covariate's score), with the one scatter into theta last: that is why z
is covariate-major, each covariate's differences contiguous.  One fused loop over
battles, scattering as it went, could not be vectorised (timings of both and of PyMC's
graph: docs/pairwise.md, "Style control").  The summed kernel makes these passes over
one block of :data:`BLOCK` battles at a time, so that the block's predictor and residuals
stay in the core's cache between passes and the covariates are read from memory once a
gradient, not twice, and the predictor never (docs/pairwise.md).

NumPy ``perform``, Numba (nutpie; the softplus and logistic of
:mod:`models.fast._vector_math`) and JAX (NumPyro).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from numba import njit
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._backends import register_cells_backends
from ._vector_math import KERNEL_OPTIONS, SUM_OPTIONS, softplus_and_sigmoid
from .slope_cells import broadcast_scalar, register_sum_of_cells

__all__ = ["BattleCells", "BattleCellsTotal", "battle_cells"]

_USAGE = ("battle cells take y, a, b (battles,), z (K, battles), theta (L,) and beta (K,)")


def battle_inputs(y, a, b, z, theta, beta):
    """The inputs of the battle Ops as tensors, checked: y, a, b (battles,) integers, z
    (K, battles), theta (L,) and beta (K,) as float64."""
    y, a, b = (pt.as_tensor_variable(v) for v in (y, a, b))
    z, theta, beta = (pt.as_tensor_variable(v).astype("float64") for v in (z, theta, beta))
    if (y.ndim, a.ndim, b.ndim, z.ndim, theta.ndim, beta.ndim) != (1, 1, 1, 2, 1, 1):
        raise ValueError(_USAGE)
    if not (a.dtype.startswith(("int", "uint")) and b.dtype.startswith(("int", "uint"))):
        raise ValueError("battle cells take integer model indices a and b")
    return [y, a, b, z, theta, beta]


def _cells_numpy(y, a, b, z, theta, beta):
    eta = theta[a] - theta[b] + beta @ z
    return y * eta - np.logaddexp(0.0, eta), y - 0.5 * (1.0 + np.tanh(0.5 * eta))


class BattleCells(Op):
    """(y, a, b, z, theta, beta) -> (cells, residual), both (battles,); module docstring."""

    __props__ = ()

    def make_node(self, y, a, b, z, theta, beta):
        inputs = battle_inputs(y, a, b, z, theta, beta)
        cells = pt.vector(dtype="float64", shape=inputs[1].type.shape)
        return Apply(self, inputs, [cells, cells.type()])

    def perform(self, node, inputs, output_storage):
        y, a, b, z, theta, beta = inputs
        for storage, value in zip(output_storage, _cells_numpy(np.asarray(y, float), a, b, z,
                                                               theta, beta), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [shapes[1], shapes[1]]

    def pullback(self, inputs, outputs, output_grads):
        y, a, b, z, theta, beta = inputs
        g_cells, g_residual = output_grads
        if not isinstance(g_residual.type, DisconnectedType):
            raise NotImplementedError("BattleCells' residual output is not differentiable")
        undefined = [grad_undefined(self, k, v) for k, v in enumerate((y, a, b, z))]
        weight = broadcast_scalar(g_cells)
        if weight is not None:  # the gradient of a sum of cells: one pass, no arrays
            _, d_theta, d_beta = BattleCellsTotal()(y, a, b, z, theta, beta)
            return [*undefined, weight * d_theta, weight * d_beta]
        weighted = g_cells * outputs[1]
        d_theta = pt.zeros_like(theta)[a].inc(weighted)[b].inc(-weighted)
        return [*undefined, d_theta, pt.dot(z, weighted)]


class BattleCellsTotal(Op):
    """(y, a, b, z, theta, beta) -> (sum of the cells, its gradient in theta and beta), in
    one pass; the gradient outputs have none (no second derivatives)."""

    __props__ = ()

    def make_node(self, y, a, b, z, theta, beta):
        inputs = battle_inputs(y, a, b, z, theta, beta)
        return Apply(self, inputs, [pt.scalar(dtype="float64"), inputs[4].type(),
                                    inputs[5].type()])

    def perform(self, node, inputs, output_storage):
        y, a, b, z, theta, beta = inputs
        cells, residual = _cells_numpy(np.asarray(y, float), a, b, z, theta, beta)
        d_theta = (np.bincount(a, residual, theta.size) - np.bincount(b, residual, theta.size))
        values = (np.asarray(cells.sum()), d_theta, z @ residual)
        for storage, value in zip(output_storage, values, strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [(), shapes[4], shapes[5]]

    def pullback(self, inputs, outputs, output_grads):
        g_total, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError("BattleCellsTotal's gradient outputs have no gradient "
                                      "(no second derivatives)")
        undefined = [grad_undefined(self, k, v) for k, v in enumerate(inputs[:4])]
        return [*undefined, g_total * outputs[1], g_total * outputs[2]]


#: sum(BattleCells(...).cells) -> BattleCellsTotal(...).total: the sum without arrays.
sum_of_battle_cells = register_sum_of_cells(
    "sum_of_battle_cells", BattleCells, lambda op, *inputs: BattleCellsTotal()(*inputs)[0])

def battle_cells(y, a, b, z, theta, beta):
    """y eta - softplus(eta), eta = theta[a] - theta[b] + beta @ z: the Bernoulli log-pmf
    of each battle."""
    return BattleCells()(y, a, b, z, theta, beta)[0]


#: Battles per block of the summed kernels (module docstring).
BLOCK = 2048


@njit(**KERNEL_OPTIONS)
def block_predictor(a, b, z, theta, beta, start, eta):
    """eta_k = theta[a_k] - theta[b_k] + z_k . beta into ``eta`` for the battles ``start``
    to ``start + eta.size - 1``, in passes: the strengths, then one covariate row at a time.
    The loops index slices from 0: an index ``start + k`` may be negative as far as Numba
    knows, and its wraparound check stops the vectorisation (5x slower)."""
    n = eta.size
    a, b = a[start:start + n], b[start:start + n]
    for k in range(n):
        eta[k] = theta[a[k]] - theta[b[k]]
    for c in range(z.shape[0]):
        row, coefficient = z[c, start:start + n], beta[c]
        for k in range(n):
            eta[k] += row[k] * coefficient
    return eta


@njit(**KERNEL_OPTIONS)
def linear_predictor(a, b, z, theta, beta):
    """eta_k for every battle (:func:`block_predictor`)."""
    return block_predictor(a, b, z, theta, beta, 0, np.empty(z.shape[1]))


@njit(**SUM_OPTIONS)
def add_block_scores(a, b, z, residual, start, d_theta, d_beta):
    """Add to ``d_theta`` and ``d_beta`` the gradient of the cells of the battles ``start``
    to ``start + residual.size - 1`` with residuals ``residual`` (d cells_k / d eta_k): each
    covariate's score, then the scatter into theta."""
    n = residual.size
    for c in range(z.shape[0]):
        row, score = z[c, start:start + n], 0.0
        for k in range(n):
            score += residual[k] * row[k]
        d_beta[c] += score
    a, b = a[start:start + n], b[start:start + n]
    for k in range(n):
        d_theta[a[k]] += residual[k]
        d_theta[b[k]] -= residual[k]


@njit(**KERNEL_OPTIONS)
def _residuals(y, a, b, z, theta, beta, cells):
    """eta, then the cells (into ``cells``) and the residuals (in eta's place)."""
    eta = linear_predictor(a, b, z, theta, beta)
    for k in range(eta.size):
        softplus, sigmoid = softplus_and_sigmoid(eta[k])
        cells[k] = y[k] * eta[k] - softplus
        eta[k] = y[k] - sigmoid
    return eta


@njit(**SUM_OPTIONS)
def _battle_total(y, a, b, z, theta, beta):
    """The sum of the battles' cells and its gradient in theta and beta, block by block."""
    n = z.shape[1]
    buffer = np.empty(min(BLOCK, n))
    total, d_theta, d_beta = 0.0, np.zeros(theta.size), np.zeros(beta.size)
    for start in range(0, n, BLOCK):
        residual = block_predictor(a, b, z, theta, beta, start,
                                   buffer[:min(BLOCK, n - start)])
        outcome = y[start:start + residual.size]
        for k in range(residual.size):
            softplus, sigmoid = softplus_and_sigmoid(residual[k])
            total += outcome[k] * residual[k] - softplus
            residual[k] = outcome[k] - sigmoid
        add_block_scores(a, b, z, residual, start, d_theta, d_beta)
    return total, d_theta, d_beta


def _battle_cells_loop(y, a, b, z, theta, beta):
    """The cells and residuals (compiled by Numba for nutpie)."""
    cells = np.empty(z.shape[1])
    return cells, _residuals(y, a, b, z, theta, beta, cells)


def _battle_total_loop(y, a, b, z, theta, beta):
    """The sum (a 0-d array, as PyTensor's scalars are) and its gradient (Numba)."""
    total, d_theta, d_beta = _battle_total(y, a, b, z, theta, beta)
    return np.full((), total), d_theta, d_beta


def _battle_cells_jax(y, a, b, z, theta, beta):
    from jax.nn import sigmoid, softplus

    eta = theta[a] - theta[b] + beta @ z
    y = y.astype(eta.dtype)
    return y * eta - softplus(eta), y - sigmoid(eta)


def _battle_total_jax(y, a, b, z, theta, beta):
    cells, residual = _battle_cells_jax(y, a, b, z, theta, beta)
    d_theta = (theta * 0).at[a].add(residual).at[b].add(-residual)
    return cells.sum(), d_theta, z @ residual


register_cells_backends(BattleCells, _battle_cells_loop, _battle_cells_jax, __file__)
register_cells_backends(BattleCellsTotal, _battle_total_loop, _battle_total_jax, __file__)
