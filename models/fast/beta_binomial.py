"""Beta-binomial cells around a logistic curve with a guessing floor (the 3PL's likelihood).

With eta_lm the cell's logit, c_m its question's floor and delta = 1 / phi the
over-dispersion,

    p_lm = c_m + (1 - c_m) logistic(eta_lm),   q_lm = 1 - p_lm = (1 - c_m) logistic(-eta_lm)
    k_lm ~ BetaBinomial(n_lm, p_lm / delta, q_lm / delta)
    log-pmf = log C(n, k) + sum_{i<k} log(p + i delta) + sum_{i<n-k} log(q + i delta)
              - sum_{i<n} log(1 + i delta)

(the rising factorials Gamma(k + p / delta) / Gamma(p / delta), times delta^k, which
cancels against the normaliser): exact from heavy over-dispersion to the binomial
limit delta -> 0, where it is k log p + (n - k) log q.  The normaliser depends on a
cell only through n.

:class:`BetaBinomialCells` computes every cell's log-pmf and its partial derivatives
in eta, c and log delta in one pass, for up to :data:`MAX_STEPPED_TRIALS` trials per
cell.  :class:`BetaBinomialSlopeCells` is the same at eta_lm = a_m theta_l + beta_m, the
item-response models' whole table, with the curve's parameters as inputs: the sum of its
cells, a fit's log-density, becomes :class:`BetaBinomialSlopeTotal` (a rewrite), which
returns the sum and its gradient in theta, a, beta, c and log delta from one pass over
the cells, without an (L, M) table.

As a graph of PyTensor operations (the form before 2026-11-29, kept as the peer in
``benchmarks/bench_pairwise_real.py``) the sums over trials were evaluated at every step
up to the largest n under a mask, each term a ``logaddexp``; the 3PL of a 43 x 400 x 10
tensor did not finish a default fit in 10 minutes. In the Op a cell costs one ``exp``
and two ``log1p`` for the curve, in a loop that LLVM vectorises (the branch-free
functions of :mod:`._vector_math`), then, where it has more than one trial, one division
per trial; the terms' product is taken in one ``log`` (renormalised where it leaves
(1e-200, 1e200)). With scalar calls to the C library's ``exp``, ``log1p`` and ``log``
the whole 50 x 14,000 table took 53 ms; vectorised, 14 ms, and its one-pass total 10 ms
(docs/scale.md).  Above :data:`MAX_STEPPED_TRIALS` trials per cell the O(1)-per-cell gammaln form
:func:`beta_binomial_logp_gamma` is built instead (the same density, tested against
scipy).

Implemented for NumPy (``perform``), Numba (nutpie; cached on disk like PyTensor's
own Ops) and JAX (NumPyro, GPUs), where it is the previous graph's formula (sums over
every step up to the largest n under a mask, which XLA vectorises) with its derivatives
by JAX's autodiff.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.special import log_expit

from ._backends import (
    cells_node_inputs,
    observed_rows,
    observed_rows_jax,
    observed_rows_numpy,
    source_version,
)
from ._beta_binomial_loops import (
    beta_binomial_observed,
    beta_binomial_slope_total,
    beta_binomial_table,
)
from .cell_table import cell_table
from .slope_cells import broadcast_scalar, register_sum_of_cells, uncast

__all__ = [
    "BetaBinomialCells", "BetaBinomialSlopeCells", "BetaBinomialSlopeTotal", "MAX_STEPPED_TRIALS",
    "ObservedBetaBinomialCells", "ObservedBetaBinomialTotal", "beta_binomial_cells",
    "beta_binomial_logp_gamma", "beta_binomial_observed_logp",
    "beta_binomial_slope_logp", "log_rising",
]

#: Most trials per cell for which the cells sum over the trials (the Op); above it the
#: gammaln form (O(1) per cell: at the paper's 80 trials the sums, then a PyTensor graph,
#: made the 20 x 30 x 80 example's 3PL fits about 4x slower).
MAX_STEPPED_TRIALS = 16


def _curve(eta, c):
    """log p, log q of p = c + (1 - c) logistic(eta), q = 1 - p, stable at any eta."""
    return (np.logaddexp(np.log(c), np.log1p(-c) + log_expit(eta)),
            np.log1p(-c) + log_expit(-eta))


def _cells_numpy(k, n, eta, c, log_delta, log_coef):
    c = np.broadcast_to(c, eta.shape)
    with np.errstate(divide="ignore"):
        log_p, log_q = _curve(eta, c)
    p, q, delta = np.exp(log_p), np.exp(log_q), np.exp(log_delta)
    s = np.exp(log_expit(eta))
    with np.errstate(divide="ignore", invalid="ignore"):
        # d log p / d eta = (1 - c) s (1 - s) / p, d log p / d c = (1 - s) / p
        cells = log_coef + np.where(k > 0, log_p, 0.0) + np.where(n - k > 0, log_q, 0.0)
        # (1 - c) s / p in [0, 1]; p = 0 only where c = 0 and s underflows
        d_eta = (np.where(k > 0, np.where(p > 0, (1 - c) * s / p, 1.0) * (1 - s), 0.0)
                 - np.where(n - k > 0, s, 0.0))
        d_c = np.where(k > 0, (1 - s) / p, 0.0) - np.where(n - k > 0, 1 / (1 - c), 0.0)
    d_p, d_q, d_log_delta = np.zeros_like(eta), np.zeros_like(eta), np.zeros_like(eta)
    for i in range(1, int(np.max(n, initial=1))):
        for count, base, slope in ((k, p, d_p), (n - k, q, d_q)):
            on = count > i
            term = base + i * delta
            cells += np.where(on, np.log(term), 0.0)
            slope += np.where(on, 1 / term, 0.0)
            d_log_delta += np.where(on, i * delta / term, 0.0)
        on = n > i
        cells -= np.where(on, np.log1p(i * delta), 0.0)
        d_log_delta -= np.where(on, i * delta / (1 + i * delta), 0.0)
    d_eta += (1 - c) * s * (1 - s) * (d_p - d_q)
    d_c += (1 - s) * (d_p - d_q)
    return cells, d_eta, d_c, d_log_delta


class BetaBinomialCells(Op):
    """(k, n, eta, c, log delta, log C(n, k)) -> (cells, d/d eta, d/d c, d/d log delta).

    k, n, eta, log C(n, k) and the outputs are (L, M); c is (M,) and log delta a
    scalar.  The three derivative outputs are per cell (module docstring).
    """

    __props__ = ("max_trials",)

    def __init__(self, max_trials: int):
        self.max_trials = int(max_trials)

    def make_node(self, k, n, eta, c, log_delta, log_coef):
        inputs, cells = cells_node_inputs(
            (k, n, eta, c, log_delta, log_coef), (2, 2, 2, 1, 0, 2),
            "BetaBinomialCells takes k, n, eta, log C(n, k) of shape (L, M), c (M,) and a "
            "scalar log delta")
        return Apply(self, inputs, [cells, cells.type(), cells.type(), cells.type()])

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, _cells_numpy(*inputs), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [shapes[0]] * 4

    def pullback(self, inputs, outputs, output_grads):
        k, n, eta, c, log_delta, log_coef = inputs
        g_cells = output_grads[0]
        if not all(isinstance(g.type, DisconnectedType) for g in output_grads[1:]):
            raise NotImplementedError(
                "BetaBinomialCells' derivative outputs are not differentiable")
        _, d_eta, d_c, d_log_delta = outputs
        return [grad_undefined(self, 0, k), grad_undefined(self, 1, n), g_cells * d_eta,
                (g_cells * d_c).sum(axis=0), (g_cells * d_log_delta).sum(), g_cells]


def beta_binomial_cells(k, n, eta, c, log_delta, log_coef, *, max_trials):
    """Each cell's beta-binomial log-pmf at p = c + (1 - c) logistic(eta), delta = e^log_delta
    (``max_trials``: the largest n, which the JAX implementation steps through)."""
    return BetaBinomialCells(max_trials)(k, n, eta, c, log_delta, log_coef)[0]


def _slope_tables(k, n, theta, a, beta, c, log_delta, log_coef):
    """The four (L, M) outputs at eta = a theta + beta (NumPy)."""
    eta = theta[:, None] * a[None, :] + beta[None, :]
    return _cells_numpy(np.asarray(k, float), np.asarray(n, float), eta, c, log_delta, log_coef)


def _observed_tables(k, n, theta, a, beta, c, log_delta, log_coef, starts, columns):
    """The four outputs at the observed cells, laid into (L, M) tables 0 elsewhere (NumPy)."""
    rows = observed_rows_numpy(starts)
    eta = a[columns] * theta[rows] + beta[columns]
    values = _cells_numpy(np.asarray(k, float)[None, rows, columns],
                          np.asarray(n, float)[None, rows, columns], eta[None], c[columns],
                          log_delta, log_coef[None])
    tables = np.zeros((4, *np.shape(k)))
    tables[:, rows, columns] = np.stack(values)[:, 0]
    return tuple(tables)


class BetaBinomialSlopeCells(Op):
    """(k, n, theta, a, beta, c, log delta, log C(n, k)) -> :class:`BetaBinomialCells`' four
    (L, M) outputs at eta = a_m theta_l + beta_m: the whole table's cells with the curve's
    parameters as inputs, so that the gradient of their sum (a fit's) is made in one pass
    without a table (:class:`BetaBinomialSlopeTotal`, :data:`sum_of_beta_binomial_cells`).
    theta is (L,); a, beta and c (M,)."""

    __props__ = ("max_trials",)
    #: the ranks of the inputs after k and n, and the one-line error for others
    ranks = (1, 1, 1, 1, 0, 2)
    usage = ("BetaBinomialSlopeCells takes k, n, log C(n, k) of shape (L, M), theta (L,), "
             "a, beta and c (M,) and a scalar log delta")
    tables_numpy = staticmethod(_slope_tables)

    def __init__(self, max_trials: int):
        self.max_trials = int(max_trials)

    def total(self):
        return BetaBinomialSlopeTotal(self.max_trials)

    def make_node(self, k, n, *params):
        k, n = (pt.as_tensor_variable(v).astype("float64") for v in (k, n))
        inputs = _node_params(params, self.ranks, self.usage)
        if (k.ndim, n.ndim) != (2, 2):
            raise ValueError(self.usage)
        return Apply(self, [k, n, *inputs], [pt.matrix(dtype="float64", shape=k.type.shape)
                                             for _ in range(4)])

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, self.tables_numpy(*inputs), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [shapes[0]] * 4

    def pullback(self, inputs, outputs, output_grads):
        k, n, theta, a, beta, c, log_delta, log_coef, *index = inputs
        g_cells = output_grads[0]
        if not all(isinstance(g.type, DisconnectedType) for g in output_grads[1:]):
            raise NotImplementedError(f"{type(self).__name__}' derivative outputs are not "
                                      "differentiable")
        undefined = [grad_undefined(self, 0, k), grad_undefined(self, 1, n)]
        indices = [grad_undefined(self, 8 + i, v) for i, v in enumerate(index)]
        weight = broadcast_scalar(g_cells)
        if weight is not None:  # the gradient of a sum of cells: no table needed
            _, *scores = self.total()(uncast(k), uncast(n), *inputs[2:])
            return [*undefined, *(weight * score for score in scores),
                    pt.ones_like(log_coef) * weight, *indices]
        _, d_eta, d_c, d_log_delta = outputs
        weighted = g_cells * d_eta
        g_coef = g_cells[observed_rows(index[0]), index[1]] if index else g_cells
        return [*undefined, pt.dot(weighted, a), pt.dot(theta, weighted), weighted.sum(axis=0),
                (g_cells * d_c).sum(axis=0), (g_cells * d_log_delta).sum(), g_coef, *indices]


class ObservedBetaBinomialCells(BetaBinomialSlopeCells):
    """:class:`BetaBinomialSlopeCells` at the observed cells only: (..., log C(n, k) (C,),
    starts (L + 1,), columns (C,)), the cells listed row by row as in
    :class:`models.fast.slope_cells.ObservedSlopeCells`; the four outputs are (L, M) tables,
    0 at every other cell.  Its sum is :class:`ObservedBetaBinomialTotal`."""

    ranks = (1, 1, 1, 1, 0, 1, 1, 1)
    usage = ("ObservedBetaBinomialCells takes k, n of shape (L, M), theta (L,), a, beta and c "
             "(M,), a scalar log delta, log C(n, k) and the columns of the observed cells (C,) "
             "and where each row's cells start (L + 1,)")
    tables_numpy = staticmethod(_observed_tables)

    def total(self):
        return ObservedBetaBinomialTotal(self.max_trials)


def _node_params(params, ranks, usage):
    """The parameters as float64 and the observed cells' indices as integers, checked for
    rank (one-line ValueError ``usage``)."""
    if len(params) != len(ranks):
        raise ValueError(usage)
    values = [pt.as_tensor_variable(v) for v in params]
    values = [v if i >= 6 else v.astype("float64") for i, v in enumerate(values)]
    if tuple(v.ndim for v in values) != ranks or not all(
            v.dtype.startswith("int") for v in values[6:]):
        raise ValueError(usage)
    return values


class BetaBinomialSlopeTotal(Op):
    """(k, n, theta, a, beta, c, log delta, log C(n, k)) -> (the sum of
    :class:`BetaBinomialSlopeCells`' cells, its gradient in theta, a, beta, c and log
    delta), in one pass.  ``k`` and ``n`` keep their number type (no cast of the table).
    The gradient outputs have no gradient (no second derivatives)."""

    __props__ = ("max_trials",)
    cells_op = BetaBinomialSlopeCells

    def __init__(self, max_trials: int):
        self.max_trials = int(max_trials)

    def make_node(self, k, n, *params):
        k, n = pt.as_tensor_variable(k), pt.as_tensor_variable(n)
        usage = self.cells_op.usage.replace(self.cells_op.__name__, type(self).__name__)
        inputs = _node_params(params, self.cells_op.ranks, usage)
        if (k.ndim, n.ndim) != (2, 2):
            raise ValueError(usage)
        outputs = [pt.scalar(dtype="float64"), *(v.type() for v in inputs[:5])]
        return Apply(self, [k, n, *inputs], outputs)

    def perform(self, node, inputs, output_storage):
        theta, a = inputs[2], inputs[3]
        cells, d_eta, d_c, d_log_delta = self.cells_op.tables_numpy(*inputs)
        values = (cells.sum(), d_eta @ a, theta @ d_eta, d_eta.sum(axis=0), d_c.sum(axis=0),
                  d_log_delta.sum())
        for storage, value in zip(output_storage, values, strict=True):
            storage[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [(), *shapes[2:7]]

    def pullback(self, inputs, outputs, output_grads):
        k, n, *_, log_coef = inputs[:8]
        g_total, *g_scores = output_grads
        if not all(isinstance(g.type, DisconnectedType) for g in g_scores):
            raise NotImplementedError(f"{type(self).__name__}'s gradient outputs have no "
                                      "gradient (no second derivatives)")
        return [grad_undefined(self, 0, k), grad_undefined(self, 1, n),
                *(g_total * score for score in outputs[1:]), pt.ones_like(log_coef) * g_total,
                *(grad_undefined(self, 8 + i, v) for i, v in enumerate(inputs[8:]))]


class ObservedBetaBinomialTotal(BetaBinomialSlopeTotal):
    """The sum of :class:`ObservedBetaBinomialCells`' cells and its gradient, in one pass over
    the observed cells."""

    cells_op = ObservedBetaBinomialCells


def _total_of(op, k, n, *inputs):
    return op.total()(uncast(k), uncast(n), *inputs)[0]


#: sum(BetaBinomialSlopeCells(...).cells) -> BetaBinomialSlopeTotal(...).total, and the same
#: for the observed cells (a subclass).
sum_of_beta_binomial_cells = register_sum_of_cells(
    "sum_of_beta_binomial_cells", BetaBinomialSlopeCells, _total_of)


def log_rising(count, log_a):
    """log Gamma(count + a) - log Gamma(a) = sum_{i<count} log(a + i), for a = exp(log_a).

    The form for many trials per cell (:data:`MAX_STEPPED_TRIALS`).  The gammaln
    difference cancels catastrophically for a >> count (a ~ 1e12 in the binomial
    limit), so there the expansion count log a + S1 / a - S2 / (2 a^2) + S3 /
    (3 a^3) with S_j = sum_{i<count} i^j is used (truncation error < count^5 /
    (20 a^4)).  Both branches get finite inputs, so neither poisons the other's
    gradient.
    """
    large = log_a > np.log(1e3) + pt.log1p(count)
    inv_a = pt.exp(-pt.switch(large, log_a, 0.0))
    s1 = count * (count - 1) / 2
    s2 = (count - 1) * count * (2 * count - 1) / 6
    series = count * log_a + inv_a * (s1 - inv_a * (s2 / 2 - inv_a * s1**2 / 3))
    small_a = pt.exp(pt.switch(large, 0.0, log_a))
    exact = pt.gammaln(count + small_a) - pt.gammaln(small_a)
    return pt.switch(large, series, exact)


def _per_trial_count(n, at_levels):
    """A function of the trial count alone, ``at_levels`` (its values at n = 0, ..., max n),
    picked at each cell's n by a 0/1 mask (cheaper than an index gather's scatter-add
    gradient: 0.31 against 0.47 ms per gradient on 20 x 30 x 80)."""
    return (pt.eq(n[..., None], pt.arange(at_levels.shape[0])) * at_levels).sum(axis=-1)


def beta_binomial_logp_gamma(value, n, log_p, log_q, log_delta, log_coef, *, levels):
    """The beta-binomial log-pmf by gammaln differences, alpha = p / delta, beta = q / delta."""
    if not all(log_delta.type.broadcastable):
        raise ValueError("the beta-binomial's log delta must be one value for all cells")
    log_delta = pt.squeeze(log_delta)
    normaliser = _per_trial_count(n, log_rising(levels, -log_delta))
    return (
        log_coef
        + log_rising(value, log_p - log_delta)
        + log_rising(n - value, log_q - log_delta)
        - normaliser
    )


def log_curve(eta, c):
    """log p, log q of p = c + (1 - c) logistic(eta), q = 1 - p, as a PyTensor graph."""
    return (pt.logaddexp(pt.log(c), pt.log1p(-c) - pt.softplus(-eta)),
            pt.log1p(-c) - pt.softplus(eta))


def _as_cells(*values):
    """(M,) cells (one reference examinee) as one row of an (L, M) table."""
    return [v[None, :] if v.ndim == 1 else v for v in values]


def _gamma_logp(value, n, eta, c, log_delta, log_coef, *, levels):
    return beta_binomial_logp_gamma(value, n, *log_curve(eta, c), log_delta, log_coef,
                                    levels=levels)


def _gamma_at_eta(n, name: str):
    """The gammaln form's log-pmf function of (value, n, eta, c, log delta, log C(n, k)), its
    trial levels 0, ..., max n the data ``{name}_trial_counts``."""
    most = int(np.max(n.get_value(), initial=1))
    return partial(_gamma_logp, levels=pm.Data(f"{name}_trial_counts", np.arange(most + 1.0)))


def beta_binomial_slope_logp(n, name: str):
    """The log-pmf function of a whole table's beta-binomial cells at eta = a theta + beta,
    of (value, n, ability, a, beta, c, log delta, log C(n, k)): :class:`BetaBinomialSlopeCells`
    up to :data:`MAX_STEPPED_TRIALS` trials per cell (a fit sums the cells in one pass), the
    gammaln form at eta above.  The graph is built for the largest count, so a compiled model
    reused for other data (``structure_key``) only ever sees counts of the same maximum."""
    most = int(np.max(n.get_value(), initial=1))
    if most > MAX_STEPPED_TRIALS:
        at_eta = _gamma_at_eta(n, name)

        def gamma_logp(value, n, ability, a, beta, c, log_delta, log_coef):
            return at_eta(value, n, a * ability + beta, c, log_delta, log_coef)

        return gamma_logp
    return partial(_slope_logp, max_trials=most)


def beta_binomial_observed_logp(n, name: str):
    """:func:`beta_binomial_slope_logp` over the observed cells of a sparse table, a function
    of (table, n, ability, a, beta, c, log delta, log C(n, k) (C,), starts, columns):
    :class:`ObservedBetaBinomialCells` up to :data:`MAX_STEPPED_TRIALS` trials per cell, the
    gammaln form at the gathered cells above, laid into the table by
    :mod:`models.fast.cell_table`."""
    most = int(np.max(n.get_value(), initial=1))
    if most <= MAX_STEPPED_TRIALS:
        return partial(_observed_logp, max_trials=most)
    at_eta = _gamma_at_eta(n, name)

    def gamma_logp(table, n, ability, a, beta, c, log_delta, log_coef, starts, columns):
        ability, a, beta, c, starts, columns = map(pt.flatten, (ability, a, beta, c, starts,
                                                                 columns))
        rows = observed_rows(starts)
        # gathered from the counts as stored: PyMC's cast of the table costs a pass over it
        value, n = uncast(table)[rows, columns], uncast(n)[rows, columns]
        cells = at_eta(value, n, a[columns] * ability[rows] + beta[columns], c[columns],
                       log_delta, pt.flatten(log_coef))
        return cell_table(cells, starts, columns, table)

    return gamma_logp


def _observed_logp(table, n, ability, a, beta, c, log_delta, log_coef, starts, columns, *,
                   max_trials):
    # PyMC hands the parameters over with leading axes added to the cells' rank
    flat = (pt.flatten(v) for v in (ability, a, beta, c))
    index = (pt.flatten(v) for v in (log_coef, starts, columns))
    return ObservedBetaBinomialCells(max_trials)(uncast(table), uncast(n), *flat,
                                                 pt.squeeze(log_delta), *index)[0]


def _slope_logp(value, n, ability, a, beta, c, log_delta, log_coef, *, max_trials):
    # PyMC hands the parameters over with leading axes added to the cells' rank; one
    # examinee's (M,) cells (a scalar ability) are a table of one row
    theta, a, beta, c = (pt.flatten(v) for v in (ability, a, beta, c))
    cells = BetaBinomialSlopeCells(max_trials)(
        *_as_cells(value, n), theta, a, beta, c, pt.squeeze(log_delta), *_as_cells(log_coef))[0]
    return cells[0] if value.ndim == 1 else cells


def _register_backends() -> None:
    from pytensor.link.jax.dispatch import jax_funcify
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    @register_funcify_default_op_cache_key(BetaBinomialCells)
    def numba_beta_binomial_cells(op, node=None, **kwargs):
        return beta_binomial_table, _kernel_version()

    @jax_funcify.register(BetaBinomialCells)
    def jax_beta_binomial_cells(op, **kwargs):
        return _jax_cells(op.max_trials)

    @register_funcify_default_op_cache_key(BetaBinomialSlopeCells)
    def numba_beta_binomial_slope_cells(op, node=None, **kwargs):
        def slope_cells(k, n, theta, a, beta, c, log_delta, log_coef):
            eta = np.outer(theta, a) + beta
            return beta_binomial_table(k, n, eta, c, log_delta, log_coef)

        return numba_njit(slope_cells, error_model="numpy"), _kernel_version()

    @register_funcify_default_op_cache_key(BetaBinomialSlopeTotal)
    def numba_beta_binomial_slope_total(op, node=None, **kwargs):
        return beta_binomial_slope_total, _kernel_version()

    @jax_funcify.register(BetaBinomialSlopeCells)
    def jax_beta_binomial_slope_cells(op, **kwargs):
        cells = _jax_cells(op.max_trials)

        def slope_cells(k, n, theta, a, beta, c, log_delta, log_coef):
            return cells(k, n, theta[:, None] * a + beta, c, log_delta, log_coef)

        return slope_cells

    @jax_funcify.register(BetaBinomialSlopeTotal)
    def jax_beta_binomial_slope_total(op, **kwargs):
        cells = _jax_cells(op.max_trials)

        def slope_total(k, n, theta, a, beta, c, log_delta, log_coef):
            k, n = k.astype(theta.dtype), n.astype(theta.dtype)
            value, d_eta, d_c, d_log_delta = cells(k, n, theta[:, None] * a + beta, c,
                                                   log_delta, log_coef)
            return (value.sum(), d_eta @ a, theta @ d_eta, d_eta.sum(axis=0),
                    d_c.sum(axis=0), d_log_delta.sum())

        return slope_total

    @register_funcify_default_op_cache_key(ObservedBetaBinomialCells)
    def numba_observed_beta_binomial_cells(op, node=None, **kwargs):
        def observed_cells(k, n, theta, a, beta, c, log_delta, log_coef, starts, columns):
            tables = np.zeros((4, k.shape[0], k.shape[1]))
            beta_binomial_observed(k, n, theta, a, beta, c, log_delta, log_coef, starts,
                                   columns, tables)
            return tables[0], tables[1], tables[2], tables[3]

        return numba_njit(observed_cells, error_model="numpy"), _kernel_version()

    @register_funcify_default_op_cache_key(ObservedBetaBinomialTotal)
    def numba_observed_beta_binomial_total(op, node=None, **kwargs):
        def observed_total(k, n, theta, a, beta, c, log_delta, log_coef, starts, columns):
            return beta_binomial_observed(k, n, theta, a, beta, c, log_delta, log_coef, starts,
                                          columns, np.zeros((4, 0, 0)))

        return numba_njit(observed_total, error_model="numpy"), _kernel_version()

    @jax_funcify.register(ObservedBetaBinomialCells)
    def jax_observed_beta_binomial_cells(op, **kwargs):
        import jax.numpy as jnp

        gathered = _jax_observed(op.max_trials)

        def observed_cells(k, n, *inputs):
            rows, columns, values = gathered(k, n, *inputs)
            return tuple(jnp.zeros(k.shape).at[rows, columns].set(v) for v in values)

        return observed_cells

    @jax_funcify.register(ObservedBetaBinomialTotal)
    def jax_observed_beta_binomial_total(op, **kwargs):
        import jax.numpy as jnp

        gathered = _jax_observed(op.max_trials)

        def observed_total(k, n, theta, a, beta, c, *rest):
            rows, columns, (value, d_eta, d_c, d_log_delta) = gathered(k, n, theta, a, beta, c,
                                                                       *rest)
            L, M = k.shape
            return (value.sum(), jnp.zeros(L).at[rows].add(d_eta * a[columns]),
                    jnp.zeros(M).at[columns].add(d_eta * theta[rows]),
                    jnp.zeros(M).at[columns].add(d_eta), jnp.zeros(M).at[columns].add(d_c),
                    d_log_delta.sum())

        return observed_total


def _jax_observed(max_trials: int):
    """The observed cells' rows and columns and their four outputs (C,), in JAX."""
    cells = _jax_cells(max_trials)

    def gathered(k, n, theta, a, beta, c, log_delta, log_coef, starts, columns):
        rows = observed_rows_jax(starts, columns.shape[0])
        eta = a[columns] * theta[rows] + beta[columns]
        values = cells(k[rows, columns][None].astype(eta.dtype),
                       n[rows, columns][None].astype(eta.dtype), eta[None], c[columns],
                       log_delta, log_coef[None])
        return rows, columns, [v[0] for v in values]

    return gathered


def _kernel_version() -> int:
    """The on-disk cache key's version of the Numba kernels: the source of this module, of
    its loops (:mod:`._beta_binomial_loops`) and of the vectorised functions they call."""
    here = Path(__file__)
    return (source_version(__file__) ^ source_version(str(here.with_name("_vector_math.py")))
            ^ source_version(str(here.with_name("_beta_binomial_loops.py"))))


def _jax_cells(max_trials: int):
    """:class:`BetaBinomialCells` in JAX: the sums over every step up to ``max_trials``
    under a mask (which XLA vectorises), the derivatives by JAX's autodiff."""
    import jax
    import jax.numpy as jnp

    steps = np.arange(1.0, max(max_trials, 1))

    def softplus(x):
        return jnp.logaddexp(x, 0.0)

    def rising(count, log_base, log_delta):
        terms = jnp.logaddexp(log_base[..., None], jnp.log(steps) + log_delta[..., None])
        return (jnp.where(count > 0, log_base, 0.0)
                + jnp.where(steps < count[..., None] - 0.5, terms, 0.0).sum(axis=-1))

    def beta_binomial_cells_jax(k, n, eta, c, log_delta, log_coef):
        def cells(eta, c, log_delta):
            log_p = jnp.logaddexp(jnp.log(c), jnp.log1p(-c) - softplus(-eta))
            log_q = jnp.log1p(-c) - softplus(eta)
            below = steps < n[..., None] - 0.5
            normaliser = jnp.where(below, jnp.log1p(steps * jnp.exp(log_delta)[..., None]),
                                   0.0).sum(axis=-1)
            return (log_coef + rising(k, log_p, log_delta) + rising(n - k, log_q, log_delta)
                    - normaliser)

        full = (eta, jnp.broadcast_to(c, eta.shape), jnp.broadcast_to(log_delta, eta.shape))
        value, pullback = jax.vjp(cells, *full)
        return (value, *pullback(jnp.ones_like(value)))

    return beta_binomial_cells_jax


_register_backends()
