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
cell.  As a graph of PyTensor operations (the form before 2026-11-29, kept as the
peer in ``benchmarks/bench_pairwise_real.py``) the sums over trials were evaluated at
every step up to the largest n under a mask, each term a ``logaddexp``; the 3PL of a
43 x 400 x 10 tensor did not finish a default fit in 10 minutes.  In the Op a cell
costs one ``exp``, one ``log1p`` and one ``log`` for the curve, then one division per
trial; the terms' product is taken in one ``log`` (renormalised where it leaves
(1e-200, 1e200)).  Above that many trials per cell the O(1)-per-cell gammaln form
:func:`beta_binomial_logp_gamma` is built instead (the same density, tested against
scipy).

Implemented for NumPy (``perform``), Numba (nutpie; cached on disk like PyTensor's
own Ops) and JAX (NumPyro, GPUs), where it is the previous graph's formula (sums over
every step up to the largest n under a mask, which XLA vectorises) with its derivatives
by JAX's autodiff.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from scipy.special import log_expit

from ._backends import cells_node_inputs, source_version

__all__ = [
    "BetaBinomialCells", "MAX_STEPPED_TRIALS", "beta_binomial_cells", "beta_binomial_logp",
    "beta_binomial_logp_gamma", "log_rising",
]

#: Most trials per cell for which the cells sum over the trials (the Op); above it the
#: gammaln form (O(1) per cell: at the paper's 80 trials the sums, then a PyTensor graph,
#: made the 20 x 30 x 80 example's 3PL fits about 4x slower).
MAX_STEPPED_TRIALS = 16
#: a product of terms outside (SMALL, LARGE) is moved into the log-sum
SMALL, LARGE = 1e-200, 1e200


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


def _stepped_logp(value, n, eta, c, log_delta, log_coef, *, max_trials):
    c = c[(0,) * (c.ndim - 1)]  # the random variable gave the (M,) floors a leading axis
    cells = BetaBinomialCells(max_trials)(
        *_as_cells(value, n, eta), c, pt.squeeze(log_delta), *_as_cells(log_coef))[0]
    return cells[0] if value.ndim == 1 else cells


def _gamma_logp(value, n, eta, c, log_delta, log_coef, *, levels):
    return beta_binomial_logp_gamma(value, n, *log_curve(eta, c), log_delta, log_coef,
                                    levels=levels)


def beta_binomial_logp(n, name: str):
    """The log-pmf function of beta-binomial cells with trial counts ``n`` (a ``pm.Data``):
    the stepped Op up to :data:`MAX_STEPPED_TRIALS` trials per cell, the gammaln form above
    (whose trial levels become the data ``{name}_trial_counts``).  The graph is built for the
    largest count, so a compiled model reused for other data (``structure_key``) only ever
    sees counts of the same maximum."""
    most = int(np.max(n.get_value(), initial=1))
    if most > MAX_STEPPED_TRIALS:
        return partial(_gamma_logp, levels=pm.Data(f"{name}_trial_counts", np.arange(most + 1.0)))
    return partial(_stepped_logp, max_trials=most)


def _register_backends() -> None:
    from pytensor.link.jax.dispatch import jax_funcify
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    @register_funcify_default_op_cache_key(BetaBinomialCells)
    def numba_beta_binomial_cells(op, node=None, **kwargs):
        @numba_njit(error_model="numpy")
        def rising(base, count, delta, product, logs):
            """prod_{1<=i<count} (base + i delta) into (product, logs), sum 1 / (base + i
            delta) and sum i delta / (base + i delta)."""
            slope, dispersion = 0.0, 0.0
            for i in range(1, count):
                term = base + i * delta
                inverse = 1.0 / term
                slope += inverse
                dispersion += i * delta * inverse
                product *= term
                if not SMALL < product < LARGE:
                    logs += np.log(product)
                    product = 1.0
            return product, logs, slope, dispersion

        @numba_njit(error_model="numpy")
        def log_softplus_tail(x):
            return np.log1p(np.exp(-abs(x)))

        @numba_njit(error_model="numpy")
        def beta_binomial_cells_kernel(k, n, eta, c, log_delta, log_coef):
            L, M = k.shape
            delta = np.exp(log_delta.item())
            most = 1
            for i in range(L):
                for j in range(M):
                    most = max(most, int(n[i, j]))
            normaliser = np.zeros(most + 1)
            normaliser_slope = np.zeros(most + 1)
            for t in range(2, most + 1):
                normaliser[t] = normaliser[t - 1] + np.log1p((t - 1) * delta)
                normaliser_slope[t] = normaliser_slope[t - 1] + (t - 1) * delta / (
                    1.0 + (t - 1) * delta)
            cells = np.empty((L, M))
            d_eta = np.empty((L, M))
            d_c = np.empty((L, M))
            d_log_delta = np.empty((L, M))
            for j in range(M):
                floor = c[j]
                log_rest = np.log1p(-floor)
                for i in range(L):
                    x = eta[i, j]
                    e = np.exp(-abs(x))
                    r = 1.0 / (1.0 + e)
                    s, s1 = (r, e * r) if x >= 0.0 else (e * r, r)  # logistic(x), logistic(-x)
                    hits, trials = int(k[i, j]), int(n[i, j])
                    misses = trials - hits
                    p, q = floor + (1.0 - floor) * s, (1.0 - floor) * s1
                    # the log-pmf's log p and log q, and the rising products, in one log
                    product, logs = 1.0, log_coef[i, j] - normaliser[trials]
                    slope_eta, slope_c = 0.0, 0.0
                    if hits > 0:
                        if p > SMALL:
                            product = p
                        elif floor > 0.0:  # log(c + (1 - c) s) from log((1 - c) s)
                            log_curve = log_rest + min(x, 0.0) - log_softplus_tail(x)
                            high, low = max(np.log(floor), log_curve), min(np.log(floor), log_curve)
                            logs += high + np.log1p(np.exp(low - high))
                        else:
                            logs += min(x, 0.0) - log_softplus_tail(x)
                        # (1 - c) s / p in [0, 1]; p = 0 only where c = 0 and s underflows
                        slope_eta += ((1.0 - floor) * s / p if p > 0.0 else 1.0) * s1
                        slope_c += s1 / p
                    if misses > 0:
                        if q > SMALL:
                            product *= q
                        else:
                            logs += log_rest - max(x, 0.0) - log_softplus_tail(x)
                        slope_eta -= s
                        slope_c -= 1.0 / (1.0 - floor)
                    product, logs, slope_p, dispersion_p = rising(p, hits, delta, product, logs)
                    product, logs, slope_q, dispersion_q = rising(q, misses, delta, product, logs)
                    cells[i, j] = logs + np.log(product)
                    d_eta[i, j] = slope_eta + (1.0 - floor) * s * s1 * (slope_p - slope_q)
                    d_c[i, j] = slope_c + s1 * (slope_p - slope_q)
                    d_log_delta[i, j] = dispersion_p + dispersion_q - normaliser_slope[trials]
            return cells, d_eta, d_c, d_log_delta

        return beta_binomial_cells_kernel, source_version(__file__)

    @jax_funcify.register(BetaBinomialCells)
    def jax_beta_binomial_cells(op, **kwargs):
        import jax
        import jax.numpy as jnp

        steps = np.arange(1.0, max(op.max_trials, 1))

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
