"""The models' count likelihoods, one call each: bayesrank's fast kernels or plain PyMC.

Every function here adds one observed variable to the current model:

    binomial_logit   k ~ Binomial(n, logistic(eta))
    binomial_rasch   k_lm ~ Binomial(n_lm, logistic(theta_l - b_m))
    binomial_2pl     k_lm ~ Binomial(n_lm, logistic(a_m theta_l + beta_m))
    binomial_floor   k ~ Binomial(n, p),  p = c + (1 - c) logistic(eta)
    beta_binomial    k ~ BetaBinomial(n, p / delta, q / delta),  q = 1 - p,  delta = 1 / phi
    multinomial_logits  x ~ Multinomial(n, softmax(logits))   (pairs' outcome counts)
    bernoulli_battles   y_k ~ Bernoulli(logistic(theta_a_k - theta_b_k + z_k . beta))

and one sum the Davidson-Luce normaliser is made of, :func:`tie_size_sums`.

With the fast path on (the default, ``models.build(..., fast=True)``) the cells are
computed by the kernels of :mod:`models.fast` (one Op per table of cells: log-pmf and
gradient in one pass, Numba for nutpie and JAX for NumPyro) and log C(n, k) is a data
array computed once (``{name}_log_binomial``).  With it off (``fast=False``) they are
PyMC's own ``pm.Binomial`` and ``pm.BetaBinomial``: the reference that the fast path is
held equal to (log-density and gradient, ``tests/test_fast_path.py``), a fallback when a
PyTensor or Numba upgrade breaks a kernel, and the half of a bisection.  The switch is
a context (:func:`fast_kernels`) that :func:`models.build` sets, so a model function
reads the same either way.

A table of cells with most cells missing (trials 0) is scored over its observed cells only
(:data:`SPARSE_COVERAGE`; the Rasch and 2PL binomials and the beta-binomial): time
proportional to those cells.

``weight`` (0 or 1 per cell; the collapsed Rasch, :mod:`models.one_sided`) multiplies
each cell's log-pmf; draws ignore it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln, log_expit

from bayesrank.data.reductions import ObservedCells

from ._common import answered_draws, logistic_binomial_draws

__all__ = ["bernoulli_battles", "beta_binomial", "binomial_2pl", "binomial_floor",
           "binomial_logit", "binomial_rasch", "davidson_battles", "fast_enabled", "fast_kernels",
           "elementary_symmetric", "log_binomial", "multinomial_logits", "tie_size_sums"]

_FAST: ContextVar[bool] = ContextVar("bayesrank_fast_kernels", default=True)


@contextmanager
def fast_kernels(on: bool = True) -> Iterator[None]:
    """Build models with bayesrank's fast kernels (``on``) or with plain PyMC only."""
    token = _FAST.set(bool(on))
    try:
        yield
    finally:
        _FAST.reset(token)


def fast_enabled() -> bool:
    """Whether models built now use the fast kernels (:func:`fast_kernels`)."""
    return _FAST.get()


def log_binomial(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log C(n, k), computed once from the data."""
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _log_coef(name: str, observed, n, dims):
    """log C(n, k) of the observed counts as data ``{name}_log_binomial``: PyMC's Binomial
    recomputes it (three gammaln per cell) at every gradient because the counts live in
    mutable ``pm.Data`` (2.6x the NUTS time on 20 x 120 x 80, the same density)."""
    coef = log_binomial(np.asarray(observed.get_value(), float), np.asarray(n.get_value(), float))
    return pm.Data(f"{name}_log_binomial", coef, dims=dims)


def _plain_binomial(name, n, observed, dims, weight, **p):
    """PyMC's Binomial (``logit_p=`` or ``p=``), each cell's log-pmf times ``weight`` if given."""
    if weight is None:
        return pm.Binomial(name, n=n, observed=observed, dims=dims, **p)
    (key, value), = p.items()

    def logp(k, n, value, weight):
        return weight * pm.logp(pm.Binomial.dist(n=n, **{key: value}), k)

    def random(n, value, weight, rng=None, size=None):
        prob = 1.0 / (1.0 + np.exp(-value)) if key == "logit_p" else value
        return rng.binomial(n, prob, size=size)

    return pm.CustomDist(name, n, value, weight, logp=logp, random=random, observed=observed,
                         dims=dims)


def binomial_logit(name, n, eta, observed, dims, weight=None):
    """k ~ Binomial(n, logistic(eta)): log C(n, k) + k eta - n softplus(eta)."""
    if not fast_enabled():
        return _plain_binomial(name, n, observed, dims, weight, logit_p=eta)
    params = (n, eta, _log_coef(name, observed, n, dims)) + (() if weight is None else (weight,))

    def logp(value, n, eta, log_coef, *weight):
        # log p = -softplus(-eta) = eta - softplus(eta): one softplus per cell, not two
        cells = log_coef + value * eta - n * pt.softplus(eta)
        return cells * weight[0] if weight else cells

    def random(n, eta, log_coef, *weight, rng=None, size=None):
        return logistic_binomial_draws(rng, n, eta, size)

    return pm.CustomDist(name, *params, logp=logp, random=random, observed=observed, dims=dims)


def binomial_rasch(name, n, ability, difficulty, observed, dims, weight=None):
    """k_lm ~ Binomial(n_lm, logistic(theta_l - b_m)); ``ability`` (L, 1), ``difficulty`` (M,).

    Fast: :func:`binomial_2pl` at a = 1 (its kernel sums the cells and their gradient
    without the (L, M) tables: a fifth of the time at 50 x 14,000 cells, docs/scale.md);
    cells with a ``weight``: :class:`models.fast.rasch_cells.RaschCells`."""
    if not fast_enabled():
        return _plain_binomial(name, n, observed, dims, weight, logit_p=ability - difficulty)
    if weight is None:  # the 2PL's kernel at a = 1: its sum and gradient without the table
        return binomial_2pl(name, n, ability, pt.ones_like(difficulty), -difficulty, observed,
                            dims)
    from .fast.rasch_cells import rasch_cells

    params = (n, ability, difficulty, _log_coef(name, observed, n, dims))
    params += () if weight is None else (weight,)

    def logp(value, n, ability, difficulty, log_coef, *weight):
        cells = rasch_cells(value, n, pt.flatten(ability), pt.flatten(difficulty), log_coef)
        return cells * weight[0] if weight else cells

    def random(n, ability, difficulty, log_coef, *weight, rng=None, size=None):
        return logistic_binomial_draws(rng, n, ability - difficulty, size)

    return pm.CustomDist(name, *params, logp=logp, random=random, observed=observed, dims=dims)


#: A table of cells with at most this share of cells observed (trials > 0) is scored over
#: its observed cells only (:func:`binomial_2pl`, :func:`beta_binomial`).  A binomial
#: observed cell costs about 2.4 times a cell of the whole table's vectorised loop
#: (docs/scale.md, "Sparse coverage").
SPARSE_COVERAGE = 1 / 3


def sparse_table(trials: np.ndarray) -> bool:
    """Whether an (L, M) table of trials is scored over its observed cells: at most
    :data:`SPARSE_COVERAGE` of its cells observed."""
    return trials.ndim == 2 and np.count_nonzero(trials) <= SPARSE_COVERAGE * trials.size


def _observed_cells(name: str, observed, n):
    """log C(n, k) and the columns of the observed cells (trials > 0), row by row, and where
    each row's cells start, as data, when at most :data:`SPARSE_COVERAGE` of the (L, M)
    table is observed; else None.  The cells lie along the dim ``observed_cell``, whose
    length is data only (any count of observed cells reuses a compiled model:
    :data:`bayesrank.inference.cache.DATA_ONLY_DIMS`)."""
    trials = np.asarray(n.get_value())
    if not sparse_table(trials):
        return None
    cells = ObservedCells.of(trials)
    successes = cells.gather(np.asarray(observed.get_value(), float))
    coef = log_binomial(successes, cells.gather(trials).astype(float))
    return (pm.Data(f"{name}_log_binomial", coef, dims="observed_cell"),
            pm.Data(f"{name}_row_starts", cells.starts.astype(np.int64)),
            pm.Data(f"{name}_columns", cells.columns.astype(np.int32), dims="observed_cell"))


def binomial_2pl(name, n, ability, a, beta, observed, dims):
    """k_lm ~ Binomial(n_lm, logistic(a_m theta_l + beta_m)); ``ability`` (L, 1), ``a``,
    ``beta`` (M,).  Fast: :class:`models.fast.slope_cells.SlopeCells` (and its sum), or, for
    a table with most cells missing, :class:`~models.fast.slope_cells.ObservedSlopeCells`
    over its observed cells (:data:`SPARSE_COVERAGE`)."""
    if not fast_enabled():
        return pm.Binomial(name, n=n, logit_p=a * ability + beta, observed=observed, dims=dims)
    from .fast.slope_cells import observed_slope_cells, slope_cells

    cells = _observed_cells(name, observed, n)
    data = (_log_coef(name, observed, n, dims),) if cells is None else cells

    def logp(value, n, ability, a, beta, *data):
        # PyMC hands the parameters over with leading axes added to the cells' rank
        params = (pt.flatten(ability), pt.flatten(a), pt.flatten(beta))
        if cells is None:
            return slope_cells(value, n, *params, *data)
        return observed_slope_cells(value, n, *params, *map(pt.flatten, data))

    def random(n, ability, a, beta, *data, rng=None, size=None):
        return logistic_binomial_draws(rng, n, ability * a + beta, size)

    return pm.CustomDist(name, n, ability, a, beta, *data, logp=logp, random=random,
                         observed=observed, dims=dims)


def binomial_floor(name, n, eta, c, observed, dims):
    """k ~ Binomial(n, c + (1 - c) logistic(eta)): the binomial 3PL."""
    p = c + (1.0 - c) * pm.math.sigmoid(eta)
    if not fast_enabled():
        return pm.Binomial(name, n=n, p=p, observed=observed, dims=dims)

    def logp(value, n, p, log_coef):
        return log_coef + value * pt.log(p) + (n - value) * pt.log1p(-p)

    def random(n, p, log_coef, rng=None, size=None):
        return rng.binomial(n, p, size=size)

    return pm.CustomDist(name, n, p, _log_coef(name, observed, n, dims), logp=logp,
                         random=random, observed=observed, dims=dims)


def _beta_binomial_random(n, eta, c, log_delta, *log_coef, rng=None, size=None):
    """BetaBinomial draws at the cells with trials (:func:`models._common.answered_draws`)."""
    def draw(n, eta, c, log_delta):
        # from the log-probabilities, so a cell probability that rounds to 1 keeps 1 - p > 0
        with np.errstate(divide="ignore"):
            log_p = np.logaddexp(np.log(c), np.log1p(-c) + log_expit(eta))
            log_q = np.log1p(-c) + log_expit(-eta)
        phi, tiny = np.exp(-log_delta), np.finfo(float).tiny
        alpha = np.maximum(np.exp(log_p) * phi, tiny)
        beta = np.maximum(np.exp(log_q) * phi, tiny)
        return rng.binomial(n, rng.beta(alpha, beta))

    return answered_draws(draw, n, eta, c, log_delta, size=size)


def beta_binomial(name, n, ability, a, beta, c, log_delta, observed, dims):
    """k ~ BetaBinomial(n, p / delta, q / delta), p = c + (1 - c) logistic(eta), q = 1 - p,
    eta = a ability + beta.

    ``ability`` (L, 1) with ``a``, ``beta`` and the floors ``c`` (M,) (zeros without one) for
    a table of cells, or a scalar with (M,) ones for one examinee; ``log_delta`` = log(1 /
    phi) the over-dispersion.  Fast: the log-pmf and its derivatives in one pass, exact from
    heavy over-dispersion to the binomial limit
    (:func:`models.fast.beta_binomial.beta_binomial_slope_logp`; a fit sums the cells and
    their gradient without an (L, M) table), over the observed cells only for a table with
    most cells missing (:data:`SPARSE_COVERAGE`;
    :class:`~models.fast.beta_binomial.ObservedBetaBinomialCells`); plain:
    ``pm.BetaBinomial``, whose gammaln differences lose digits as phi grows.
    """
    if not fast_enabled():
        p = c + (1.0 - c) * pm.math.sigmoid(a * ability + beta)
        phi = pt.exp(-log_delta)
        return pm.BetaBinomial(name, n=n, alpha=p * phi, beta=(1.0 - p) * phi,
                               observed=observed, dims=dims)
    from .fast.beta_binomial import beta_binomial_observed_logp, beta_binomial_slope_logp

    def random(n, ability, a, beta, c, log_delta, *cells, rng=None, size=None):
        return _beta_binomial_random(n, ability * a + beta, c, log_delta, rng=rng, size=size)

    cells = _observed_cells(name, observed, n)
    if cells is None:
        logp, data = beta_binomial_slope_logp(n, name), (_log_coef(name, observed, n, dims),)
    else:
        logp, data = beta_binomial_observed_logp(n, name), cells
    return pm.CustomDist(name, n, ability, a, beta, c, log_delta, *data, logp=logp,
                         random=random, observed=observed, dims=dims)


def multinomial_logits(name: str, counts, logits, *, dims: tuple[str, str]):
    """Observed counts ~ Multinomial(n, softmax(logits)) along the last axis.

    ``counts`` is a ``pm.Data`` table (..., K).  Fast: log n! - sum_k log x_k! + sum_k
    x_k log softmax(logits)_k with the data-only first terms computed once (``pm.Data``
    ``{name}_log_coefficient``) and no parameter checks: PyMC's ``Multinomial`` on ``p =
    softmax(logits)`` recomputes the log-gamma terms and checks at every gradient (2.3x
    the time per log-density and gradient on a 43-model Davidson, 903 pairs).  Draws are
    PyMC's multinomial either way.
    """
    n = counts.sum(axis=-1)
    if not fast_enabled():
        return pm.Multinomial(name, n=n, p=pt.special.softmax(logits, axis=-1),
                              observed=counts, dims=dims)
    table = counts.get_value()
    coefficient = gammaln(table.sum(axis=-1) + 1) - gammaln(table + 1).sum(-1)
    log_coefficient = pm.Data(f"{name}_log_coefficient", coefficient, dims=dims[:-1])

    def logp(value, n, logits, log_coefficient):
        return log_coefficient + (value * pt.special.log_softmax(logits, axis=-1)).sum(axis=-1)

    def draws(n, logits, log_coefficient, size):
        return pm.Multinomial.dist(n=n, p=pt.special.softmax(logits, axis=-1), size=size)

    return pm.CustomDist(name, n, logits, log_coefficient, dist=draws, logp=logp,
                         signature="(),(k),()->(k)", observed=counts, dims=dims)


def bernoulli_battles(name: str, theta, beta, a, b, z, observed, *, dims: str):
    """y_k ~ Bernoulli(logistic(theta[a_k] - theta[b_k] + z_k . beta)), one per battle.

    ``a``, ``b`` (battles,) the sides' model indices, ``z`` (K, battles) the covariate
    differences (covariate-major: :mod:`models.fast.battle_cells`), ``observed`` 1 where
    side a won.  Fast: :mod:`models.fast.battle_cells` (the sum over battles and its
    gradient in one kernel call); plain: ``pm.Bernoulli``.
    """
    if not fast_enabled():
        return pm.Bernoulli(name, logit_p=theta[a] - theta[b] + pt.dot(beta, z),
                            observed=observed, dims=dims)
    from .fast.battle_cells import battle_cells

    def logp(value, theta, beta, a, b, z_rows):
        # PyMC hands the core parameters over with leading axes added to the battles' rank;
        # z_rows.T is z itself (the two transposes cancel in the compiled graph)
        return battle_cells(value, a, b, z_rows.T, pt.flatten(theta), pt.flatten(beta))

    def random(theta, beta, a, b, z_rows, rng=None, size=None):
        theta, beta = np.ravel(theta), np.ravel(beta)
        eta = theta[a] - theta[b] + z_rows @ beta
        return (rng.random(size=size) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)

    # the battles are the batch: z enters battle-major, one (c) row per battle
    return pm.CustomDist(name, theta, beta, a, b, z.T, logp=logp, random=random,
                         signature="(l),(c),(),(),(c)->()", dtype="int64",
                         observed=observed, dims=dims)


def davidson_battles(name: str, theta, beta, log_nu, a, b, z, observed, *, dims: str):
    """o_k ~ Categorical(softmax(delta_k / 2, -delta_k / 2, log nu)), delta_k = theta[a_k] -
    theta[b_k] + z_k . beta, one per battle (o: 0 a won, 1 b won, 2 tie).

    ``a``, ``b``, ``z`` as in :func:`bernoulli_battles`.  Fast:
    :mod:`models.fast.davidson_battles` (the sum over battles and its gradient in one
    kernel call); plain: ``pm.Categorical``.
    """
    if not fast_enabled():
        delta = theta[a] - theta[b] + pt.dot(beta, z)
        logits = pt.stack([0.5 * delta, -0.5 * delta, pt.zeros_like(delta) + log_nu], axis=-1)
        return pm.Categorical(name, logit_p=logits, observed=observed, dims=dims)
    from .fast.davidson_battles import davidson_cells

    def logp(value, theta, beta, log_nu, a, b, z_rows):
        # leading axes added by PyMC as in bernoulli_battles; z_rows.T is z itself
        return davidson_cells(value, a, b, z_rows.T, pt.flatten(theta), pt.flatten(beta),
                              pt.squeeze(log_nu))

    def random(theta, beta, log_nu, a, b, z_rows, rng=None, size=None):
        theta, beta = np.ravel(theta), np.ravel(beta)
        half = 0.5 * (theta[a] - theta[b] + z_rows @ beta)
        logits = np.stack([half, -half, np.broadcast_to(np.squeeze(log_nu), half.shape)], -1)
        p = np.exp(logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True))
        draws = rng.random(size=size)[..., None] > np.cumsum(p, axis=-1)[..., :2]
        return draws.sum(axis=-1).astype(np.int64)

    return pm.CustomDist(name, theta, beta, log_nu, a, b, z.T, logp=logp, random=random,
                         signature="(l),(c),(),(),(),(c)->()", dtype="int64",
                         observed=observed, dims=dims)


def tie_size_sums(theta, sets, max_order: int):
    """(s, E): s = max theta, E[t-1, g] = e_t(x^(t) on S_g), x^(t)_i = exp((theta_i - s) /
    t), t = 1..max_order: (D, G).

    The Davidson-Luce normaliser's sums over the winner sets of each size
    (:mod:`models.davidson_luce`), for log-strengths ``theta`` (L,) and comparison sets
    ``sets`` (G, L) of 0/1; the shift keeps the products in range.  Fast:
    :mod:`models.fast.tie_sizes` (the recurrence and its adjoint, O(L D^2) per set);
    plain: :func:`elementary_symmetric` of every order at once in PyTensor, its diagonal
    taken as a masked sum (dense ops compile fast and differentiate cheaply).
    """
    if fast_enabled():
        from .fast.tie_sizes import tie_size_sums as fast_sums

        return fast_sums(theta, sets, max_order)
    shift = pt.max(theta)
    order = np.arange(1, max_order + 1, dtype=float)
    # x[t-1, g, i] = 1{i in S_g} exp((theta_i - s) / t): non-members add a factor 1 + 0 z
    x = sets[None, :, :] * pt.exp((theta - shift)[None, None, :] / order[:, None, None])
    esp = elementary_symmetric(x, max_order)  # (D, G, D + 1)
    return shift, pt.sum(esp[:, :, 1:] * np.eye(max_order)[:, None, :], axis=-1)


def _convolution(degree: int, max_order: int) -> np.ndarray:
    """C[(a, b), c] = 1{a + b = c}: multiplies two polynomials of ``degree`` (truncated)."""
    a, b = np.meshgrid(np.arange(degree + 1), np.arange(degree + 1), indexing="ij")
    out = np.zeros(((degree + 1) ** 2, min(2 * degree, max_order) + 1))
    keep = (a + b).ravel() <= max_order
    out[np.flatnonzero(keep), (a + b).ravel()[keep]] = 1.0
    return out


def elementary_symmetric(x, max_order: int):
    """e_0..e_max_order of the values along the last axis of ``x`` (PyTensor).

    The coefficients of prod_i (1 + x_i z) are e_r(x).  The product is taken
    pairwise in a binary tree (log2(n) levels, each one batched polynomial
    multiplication), truncating every intermediate polynomial at
    ``max_order``.  All terms are non-negative, so nothing cancels.

    Parameters
    ----------
    x : tensor (..., n) with static n
    max_order : int

    Returns
    -------
    tensor (..., max_order + 1)
    """
    n = int(x.type.shape[-1])
    width = 1 << max(n - 1, 0).bit_length()  # next power of two
    ones = pt.ones_like(x)
    poly = pt.stack([ones, x], axis=-1)  # (..., n, 2): 1 + x_i z
    if width > n:
        pad = pt.zeros((*[x.shape[i] for i in range(x.ndim - 1)], width - n, 2))
        pad = pt.set_subtensor(pad[..., 0], 1.0)
        poly = pt.concatenate([poly, pad], axis=-2)
    degree = 1
    while width > 1:
        width //= 2
        pairs = poly.reshape((*[poly.shape[i] for i in range(poly.ndim - 2)], width, 2, degree + 1))
        left, right = pairs[..., 0, :], pairs[..., 1, :]
        outer = (left[..., :, None] * right[..., None, :]).reshape(
            (*[left.shape[i] for i in range(left.ndim - 1)], (degree + 1) ** 2)
        )
        poly = pt.dot(outer, _convolution(degree, max_order))
        degree = min(2 * degree, max_order)
    out = poly[..., 0, :]
    if degree < max_order:  # fewer items than orders: the higher e_r are 0
        out = pt.concatenate(
            [out, pt.zeros((*[out.shape[i] for i in range(out.ndim - 1)], max_order - degree))],
            axis=-1,
        )
    return out
