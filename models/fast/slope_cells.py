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

A fit needs only the sum of the cells and its gradient.  :class:`SlopeCellsTotal` computes
both in one pass over the counts, with no (L, M) table written or read again: the
gradient of a sum of cells is built from it (:meth:`SlopeCells.pullback`, where the
output gradient is one value broadcast over the table), and the rewrite
:func:`sum_of_slope_cells` puts it in place of the sum itself, so that PyTensor's merge
leaves one such node in a compiled log-density and gradient.  The elementwise Op stays
for pointwise log-likelihoods and any other use of single cells.  The tables had cost
more than the cells' arithmetic: casting the counts to floats, writing the cells and
residuals, then summing them and taking two products with them read or wrote about 11
arrays of L x M floats per gradient.

A table with most cells missing (trials 0, as a mask leaves them) is scored over a list
of its observed cells, row by row (their columns, and where each row starts), by
:class:`ObservedSlopeCells` and its sum :class:`ObservedSlopeCellsTotal`: the same log-pmf
and gradient, in time proportional to the observed cells (the missing cells' log-pmf and
residual are 0).  Its log C(n, k) holds the observed cells only.  An observed cell costs
about 2.4 times a cell of the whole table's loop (gathers and scattered additions around the
same vectorised loop), so :func:`models.likelihoods.binomial_2pl` takes it below a share
of observed cells (:data:`models.likelihoods.SPARSE_COVERAGE`; docs/scale.md).

The back ends are those of :mod:`models.rasch_cells` (NumPy, Numba for nutpie, and JAX
with PyTensor's own softplus).
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.basic import Alloc
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum
from pytensor.tensor.rewriting.basic import register_canonicalize, register_specialize

from ._backends import (
    LogisticCellsOp,
    cells_node_inputs,
    logistic_cells_jax,
    observed_rows,
    observed_rows_jax,
    observed_rows_numpy,
    register_cells_backends,
)
from ._vector_math import (
    binomial_logit_cells,
    binomial_logit_observed_cells,
    binomial_logit_observed_total,
    binomial_logit_total,
)

__all__ = ["ObservedSlopeCells", "ObservedSlopeCellsTotal", "SlopeCells", "SlopeCellsTotal",
           "observed_slope_cells", "slope_cells", "uncast"]


def _cells_numpy(k, n, theta, a, beta, log_coef):
    return _cells_at(k, n, theta[:, None] * a[None, :] + beta[None, :], log_coef)


def _cells_at(k, n, x, log_coef):
    """The binomial logit cells and residuals at the logits ``x`` (NumPy)."""
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
        undefined = [grad_undefined(self, 0, k), grad_undefined(self, 1, n)]
        weight = broadcast_scalar(g_cells)
        if weight is not None:  # the gradient of a sum of cells: no table needed
            _, d_theta, d_a, d_beta = SlopeCellsTotal()(uncast(k), uncast(n), theta, a, beta,
                                                         log_coef)
            return [*undefined, weight * d_theta, weight * d_a, weight * d_beta, g_cells]
        weighted = g_cells * outputs[1]
        return [*undefined, pt.dot(weighted, a), pt.dot(theta, weighted), weighted.sum(axis=0),
                g_cells]


def _total_numpy(k, n, theta, a, beta, log_coef):
    cells, residual = _cells_numpy(k, n, theta, a, beta, log_coef)
    return (np.asarray(cells.sum()), residual @ a, theta @ residual, residual.sum(axis=0))


class SlopeCellsTotal(Op):
    """(k, n, theta, a, beta, log C(n, k)) -> (sum of the cells, its gradient in theta, a and
    beta): :class:`SlopeCells` summed, in one pass (module docstring).  ``k`` and ``n`` keep
    their dtype.  The sum's gradient is the Op's other outputs; those have none (no second
    derivatives)."""

    __props__ = ()

    def make_node(self, k, n, theta, a, beta, log_coef):
        k, n = pt.as_tensor_variable(k), pt.as_tensor_variable(n)
        params = [pt.as_tensor_variable(v).astype("float64") for v in (theta, a, beta, log_coef)]
        if (k.ndim, n.ndim, *(v.ndim for v in params)) != (2, 2, 1, 1, 1, 2):
            raise ValueError("SlopeCellsTotal takes k, n, log C(n, k) of shape (L, M), theta (L,) "
                             "and a, beta (M,)")
        theta = params[0]
        outputs = [pt.scalar(dtype="float64"), theta.type(), params[1].type(), params[2].type()]
        return Apply(self, [k, n, *params], outputs)

    def perform(self, node, inputs, output_storage):
        k, n, *params = inputs
        values = _total_numpy(np.asarray(k, float), np.asarray(n, float), *params)
        for storage, value in zip(output_storage, values, strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        k, _, theta, a, beta, _ = shapes
        return [(), theta, a, beta]

    def pullback(self, inputs, outputs, output_grads):
        k, n, theta, a, beta, log_coef = inputs
        g_total, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError("SlopeCellsTotal's gradient outputs have no gradient "
                                      "(no second derivatives)")
        return [grad_undefined(self, 0, k), grad_undefined(self, 1, n),
                *(g_total * score for score in outputs[1:]), pt.ones_like(log_coef) * g_total]


def broadcast_scalar(value):
    """The scalar that ``value`` broadcasts over a table, when it is one (as the output
    gradient of a sum is, ``second(cells, g)``, or ``alloc(g, L, M)``); else None."""
    owner = value.owner
    if owner is None:
        return None
    if isinstance(owner.op, Elemwise) and isinstance(owner.op.scalar_op, ps.Second):
        source = owner.inputs[1]
    elif isinstance(owner.op, Alloc):
        source = owner.inputs[0]
    else:
        return None
    if not all(source.type.broadcastable):
        return None
    return pt.squeeze(source) if source.ndim else source


def uncast(value):
    """``value`` before the node's cast to float64, when it was cast from a number type."""
    owner = value.owner
    if (owner is not None and isinstance(owner.op, Elemwise)
            and isinstance(owner.op.scalar_op, ps.Cast) and owner.inputs[0].dtype in
            ("int8", "int16", "int32", "int64", "uint8", "uint16", "float32", "float64")):
        return owner.inputs[0]
    return value


def register_sum_of_cells(name: str, op_type: type, total_of):
    """Register the rewrite ``sum(op_type(...).cells) -> total_of(the Op, *its inputs)``
    (canonicalize and specialize) under ``name``: a sum of every cell becomes the one-pass
    total."""

    def rewrite(fgraph, node):
        (cells,) = node.inputs
        owner = cells.owner
        if owner is None or not isinstance(owner.op, op_type) or cells is not owner.outputs[0]:
            return None
        if node.op.axis is not None and sorted(node.op.axis) != list(range(cells.ndim)):
            return None
        return [total_of(owner.op, *owner.inputs).astype(node.outputs[0].dtype)]

    rewrite.__name__ = name
    rewriter = node_rewriter([Sum])(rewrite)
    register_canonicalize(rewriter, name=name)
    register_specialize(rewriter, name=name)
    return rewriter


def _slope_total(op, k, n, *params):
    return SlopeCellsTotal()(uncast(k), uncast(n), *params)[0]


#: sum(SlopeCells(...).cells) -> SlopeCellsTotal(...).total: the sum without the table.
sum_of_slope_cells = register_sum_of_cells("sum_of_slope_cells", SlopeCells, _slope_total)


def _observed_node_inputs(k, n, theta, a, beta, log_coef, starts, columns):
    """The observed cells Ops' inputs: k and n as given (any number type), the parameters as
    float64, the cells' indices as integers, all checked for rank (one-line ValueError)."""
    k, n = pt.as_tensor_variable(k), pt.as_tensor_variable(n)
    params = [pt.as_tensor_variable(v).astype("float64") for v in (theta, a, beta, log_coef)]
    index = [pt.as_tensor_variable(v) for v in (starts, columns)]
    ranks = (k.ndim, n.ndim, *(v.ndim for v in params), *(v.ndim for v in index))
    if ranks != (2, 2, 1, 1, 1, 1, 1, 1) or not all(v.dtype.startswith("int") for v in index):
        raise ValueError("observed slope cells take k, n of shape (L, M), theta (L,), a, beta "
                         "(M,), log C(n, k) and the columns (integers) of the observed cells (C,) "
                         "and where each row's cells start (L + 1, integers)")
    return [k, n, *params, *index]


def _observed_numpy(k, n, theta, a, beta, log_coef, starts, columns):
    rows = observed_rows_numpy(starts)
    cells, residual = np.zeros(np.shape(k)), np.zeros(np.shape(k))
    cells[rows, columns], residual[rows, columns] = _cells_at(
        np.asarray(k, float)[rows, columns], np.asarray(n, float)[rows, columns],
        theta[rows] * a[columns] + beta[columns], log_coef)
    return cells, residual


class ObservedSlopeCells(LogisticCellsOp):
    """(k, n, theta, a, beta, log C(n, k), starts, columns) -> (cells, residual), both (L, M):
    :class:`SlopeCells` at the observed cells (l, columns[c]), 0 at every other cell,
    whose counts are 0 (module docstring)."""

    cells_numpy = staticmethod(_observed_numpy)

    def make_node(self, *inputs):
        inputs = _observed_node_inputs(*inputs)
        cells = pt.matrix(dtype="float64", shape=inputs[0].type.shape)
        return Apply(self, inputs, [cells, cells.type()])

    def pullback(self, inputs, outputs, output_grads):
        k, n, theta, a, beta, log_coef, starts, columns = inputs
        g_cells, g_residual = output_grads
        if not isinstance(g_residual.type, DisconnectedType):
            raise NotImplementedError("ObservedSlopeCells' residual output is not differentiable")
        undefined = [grad_undefined(self, i, inputs[i]) for i in (0, 1, 6, 7)]
        weight = broadcast_scalar(g_cells)
        if weight is not None:  # the gradient of a sum of cells: no table needed
            _, d_theta, d_a, d_beta = ObservedSlopeCellsTotal()(uncast(k), uncast(n),
                                                                *inputs[2:])
            return [*undefined[:2], weight * d_theta, weight * d_a, weight * d_beta,
                    pt.ones_like(log_coef) * weight, *undefined[2:]]
        weighted = g_cells * outputs[1]
        return [*undefined[:2], pt.dot(weighted, a), pt.dot(theta, weighted),
                weighted.sum(axis=0), g_cells[observed_rows(starts), columns], *undefined[2:]]


class ObservedSlopeCellsTotal(Op):
    """(k, n, theta, a, beta, log C(n, k), starts, columns) -> (sum of the observed cells, its
    gradient in theta, a and beta): :class:`ObservedSlopeCells` summed in one pass over the
    observed cells (module docstring, and ``binomial_logit_observed_total`` in
    :mod:`models.fast._vector_math`)."""

    __props__ = ()

    def make_node(self, *inputs):
        inputs = _observed_node_inputs(*inputs)
        theta, a, beta = inputs[2:5]
        outputs = [pt.scalar(dtype="float64"), theta.type(), a.type(), beta.type()]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):
        k, n, theta, a, beta, log_coef, starts, columns = inputs
        cells, residual = _observed_numpy(k, n, theta, a, beta, log_coef, starts, columns)
        values = (np.asarray(cells.sum()), residual @ a, theta @ residual, residual.sum(axis=0))
        for storage, value in zip(output_storage, values, strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [(), shapes[2], shapes[3], shapes[4]]

    def pullback(self, inputs, outputs, output_grads):
        g_total, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError("ObservedSlopeCellsTotal's gradient outputs have no "
                                      "gradient (no second derivatives)")
        undefined = [grad_undefined(self, i, inputs[i]) for i in (0, 1, 6, 7)]
        return [*undefined[:2], *(g_total * score for score in outputs[1:]),
                pt.ones_like(inputs[5]) * g_total, *undefined[2:]]


def _observed_total(op, k, n, *inputs):
    return ObservedSlopeCellsTotal()(uncast(k), uncast(n), *inputs)[0]


#: sum(ObservedSlopeCells(...).cells) -> ObservedSlopeCellsTotal(...).total
sum_of_observed_slope_cells = register_sum_of_cells(
    "sum_of_observed_slope_cells", ObservedSlopeCells, _observed_total)


def observed_slope_cells(k, n, theta, a, beta, log_coef, starts, columns):
    """:func:`slope_cells` at the observed cells (l, columns[c]) only, 0 elsewhere;
    ``log_coef`` holds log C(n, k) of the observed cells, in their order."""
    return ObservedSlopeCells()(k, n, theta, a, beta, log_coef, starts, columns)[0]


def slope_cells(k, n, theta, a, beta, log_coef):
    """log C(n, k) + k x - n softplus(x), x = a_m theta_l + beta_m: the binomial log-pmf."""
    return SlopeCells()(k, n, theta, a, beta, log_coef)[0]


def _slope_cells_loop(k, n, theta, a, beta, log_coef):
    """The cells and residuals (compiled by Numba for nutpie): the vectorised loop."""
    return binomial_logit_cells(k, n, theta, a, beta, log_coef)


def _slope_cells_jax(k, n, theta, a, beta, log_coef):
    return logistic_cells_jax(k, n, theta[:, None] * a[None, :] + beta[None, :], log_coef)


def _slope_total_loop(k, n, theta, a, beta, log_coef):
    """The sum (a 0-d array, as PyTensor's scalars are) and its gradient (compiled by Numba
    for nutpie): one vectorised pass."""
    total, d_theta, d_a, d_beta = binomial_logit_total(k, n, theta, a, beta, log_coef)
    return np.full((), total), d_theta, d_a, d_beta


def _slope_total_jax(k, n, theta, a, beta, log_coef):
    k, n = k.astype(theta.dtype), n.astype(theta.dtype)
    cells, residual = _slope_cells_jax(k, n, theta, a, beta, log_coef)
    return cells.sum(), residual @ a, theta @ residual, residual.sum(axis=0)


def _observed_cells_loop(k, n, theta, a, beta, log_coef, starts, columns):
    """The observed cells as (L, M) tables (compiled by Numba for nutpie)."""
    return binomial_logit_observed_cells(k, n, theta, a, beta, log_coef, starts, columns)


def _observed_total_loop(k, n, theta, a, beta, log_coef, starts, columns):
    """The observed cells' sum and its gradient (Numba, nutpie): the blocked passes."""
    total, d_theta, d_a, d_beta = binomial_logit_observed_total(k, n, theta, a, beta, log_coef,
                                                                starts, columns)
    return np.full((), total), d_theta, d_a, d_beta


def _observed_jax(k, n, theta, a, beta, log_coef, starts, columns):
    """Each observed cell's row, the cells (C,) and their residuals, by JAX."""
    rows = observed_rows_jax(starts, columns.shape[0])
    x = theta[rows] * a[columns] + beta[columns]
    successes = k[rows, columns].astype(theta.dtype)
    return rows, *logistic_cells_jax(successes, n[rows, columns].astype(theta.dtype), x, log_coef)


def _observed_cells_jax(k, n, theta, a, beta, log_coef, starts, columns):
    import jax.numpy as jnp

    rows, cells, residual = _observed_jax(k, n, theta, a, beta, log_coef, starts, columns)
    table = jnp.zeros(k.shape, theta.dtype)
    return table.at[rows, columns].set(cells), table.at[rows, columns].set(residual)


def _observed_total_jax(k, n, theta, a, beta, log_coef, starts, columns):
    import jax.numpy as jnp

    rows, cells, residual = _observed_jax(k, n, theta, a, beta, log_coef, starts, columns)
    d_theta = jnp.zeros_like(theta).at[rows].add(residual * a[columns])
    d_a = jnp.zeros_like(a).at[columns].add(residual * theta[rows])
    return cells.sum(), d_theta, d_a, jnp.zeros_like(beta).at[columns].add(residual)


register_cells_backends(SlopeCells, _slope_cells_loop, _slope_cells_jax, __file__)
register_cells_backends(ObservedSlopeCells, _observed_cells_loop, _observed_cells_jax, __file__)
register_cells_backends(ObservedSlopeCellsTotal, _observed_total_loop, _observed_total_jax,
                        __file__)
register_cells_backends(SlopeCellsTotal, _slope_total_loop, _slope_total_jax, __file__)
