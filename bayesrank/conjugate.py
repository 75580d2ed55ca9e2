"""Bayes@N in closed form: the one implementation (Hariri et al.; paper appendix, "Bayes@N").

For model l and question m, category counts n_lmk and pseudo-counts
n0_mk = sum_d 1{R0_md = k} give a Dirichlet posterior with parameters

    nu_lmk = 1 + n0_mk + n_lmk          (a Dirichlet(1, ..., 1) prior plus R0 plus data)

and total T_lm = sum_k nu_lmk = 1 + C + D + n_lm.  The weighted score of model l,
``theta_l = 1/M sum_m sum_k w_k p_lmk``, has posterior moments

    mu_l    = w_0 + 1/M sum_m sum_k nu_lmk/T_lm (w_k - w_0)
    sigma_l = ( 1/M^2 sum_m [ sum_k nu_lmk/T_lm (w_k - w_0)^2
                              - (sum_k nu_lmk/T_lm (w_k - w_0))^2 ] / (T_lm + 1) )^(1/2)

(cell by cell, so missing trials need no special case), and the posterior of
every cell's probabilities can be drawn exactly (:func:`exact_draws`).

The prior outcomes R0 enter through one argument with one default everywhere
(:func:`bayesrank.rank` with ``"bayes"``, :func:`bayesrank.closed_form`,
:func:`bayesrank.fit` with ``"bayes"``): ``R0=None`` is the uniform prior
(Bayes_U@N, the paper's gold standard); ``R0="data"`` uses the data's own prior
outcomes (Bayes_R0@N, identifier ``bayes_greedy``); an array replaces them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError

__all__ = [
    "bayes_at_n",
    "dirichlet_parameters",
    "exact_draws",
    "prior_counts",
    "resolve_weights",
    "uses_prior",
]


def prior_counts(data: ResponseData, R0: Any = None) -> np.ndarray | None:
    """Pseudo-counts of the prior outcomes, (M, C+1) or (L, M, C+1); None for the uniform prior.

    Parameters
    ----------
    data : ResponseData
    R0 : None, "data" or array_like
        ``None``: uniform prior.  ``"data"``: the data's own prior outcomes (a
        :class:`DataError` when it has none).  An array of shape (M, D) or
        (L, M, D): those prior outcomes instead.
    """
    if R0 is None:
        return None
    if isinstance(R0, str):
        if R0 != "data":
            raise DataError(f"R0 must be None, 'data' or an array of prior outcomes, got {R0!r}")
        if data.R0 is None:
            raise DataError(
                "R0='data' uses the data's prior outcomes (e.g. greedy decodes), but these "
                "data have none; load them with R0=... or use the uniform prior (R0=None)"
            )
        return data.reductions.prior_category_counts
    with_prior = ResponseData(
        data.R, models=data.models, questions=data.questions, R0=R0, weights=data.weights,
        mask=data.mask,
    )
    return with_prior.reductions.prior_category_counts


def uses_prior(R0: Any) -> bool:
    """Whether ``R0`` asks for prior outcomes (anything but None)."""
    return R0 is not None


def resolve_weights(data: ResponseData, weights: Any = None) -> np.ndarray:
    """Category utilities: ``weights`` checked against the data, or the data's own."""
    w = data.weights if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (data.n_categories,) or not np.all(np.isfinite(w)):
        raise DataError(
            f"weights must be {data.n_categories} finite numbers (one per category), "
            f"got shape {np.shape(w)}"
        )
    return w


def dirichlet_parameters(data: ResponseData, R0: Any = None) -> np.ndarray:
    """Posterior Dirichlet parameters ``nu_lmk``, shape (L, M, C+1)."""
    nu = data.reductions.category_counts + 1.0
    prior = prior_counts(data, R0)
    return nu if prior is None else nu + prior  # (M, C+1) broadcasts over models


def bayes_at_n(
    data: ResponseData | Any,
    *,
    weights: np.ndarray | None = None,
    R0: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean ``mu`` and standard deviation ``sigma`` of each model's score.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    weights : array_like, optional
        Category utilities ``w``; default the data's weights.
    R0 : None, "data" or array_like
        See :func:`prior_counts`; default the uniform prior (Bayes_U@N).

    Returns
    -------
    mu, sigma : numpy.ndarray, shape (L,)
    """
    d = as_response_data(data)
    w = resolve_weights(d, weights)
    nu = dirichlet_parameters(d, R0)
    T = nu.sum(axis=-1)
    shifted = w - w[0]
    mean_cell = (nu @ shifted) / T
    second_cell = (nu @ shifted**2) / T
    var_cell = (second_cell - mean_cell**2) / (T + 1.0)
    mu = w[0] + mean_cell.sum(axis=1) / d.M
    sigma = np.sqrt(np.maximum(var_cell.sum(axis=1), 0.0)) / d.M
    return mu, sigma


# Random numbers per block of cells: bounded temporaries (8 MiB), whatever the data size.
_BLOCK = 2**20


def _cell_blocks(cells: np.ndarray, n_samples: int):
    """``cells`` in consecutive blocks of about ``_BLOCK`` random numbers each."""
    step = max(1, _BLOCK // max(1, n_samples))
    for start in range(0, cells.size, step):
        yield cells[start:start + step]


def _one_parameter_beta(
    rng: np.random.Generator, p: np.ndarray, loglik: np.ndarray | None,
    nu: np.ndarray, counts: np.ndarray | None, cells: np.ndarray, one: int,
) -> None:
    """Two-category cells whose category ``one`` has ``nu = 1``: exact draws by inversion.

    With ``b = nu_other``, ``p_other ~ Beta(b, 1)``, whose CDF ``x^b`` inverts to
    ``p_other = U^(1/b) = exp(-E/b)`` with ``E = -log U ~ Exp(1)``; then
    ``log p_other = -E/b`` is exact and ``p_one = -expm1(-E/b)`` keeps its
    relative precision near 0.  ``nu_one = 1`` means no count and no prior
    outcome in category ``one``, so the cell's log-likelihood is
    ``n_other log p_other`` (the multinomial coefficient is 1).
    """
    other = 1 - one
    n_samples = p.shape[-1]
    for block in _cell_blocks(cells, n_samples):
        log_other = rng.standard_exponential((block.size, n_samples))
        log_other /= -nu[block, other, None]
        p[other, block] = np.exp(log_other)
        p[one, block] = -np.expm1(log_other)
        if loglik is not None:
            log_other *= counts[block, other, None]
            loglik[block] = log_other
            stray = block[counts[block, one] > 0]  # only with a hand-made nu; kept exact anyway
            if stray.size:
                loglik[stray] += counts[stray, one, None] * np.log(p[one, stray])


def _gamma_ratio(
    rng: np.random.Generator, p: np.ndarray, loglik: np.ndarray | None,
    nu: np.ndarray, counts: np.ndarray | None, cells: np.ndarray, coefficient: np.ndarray,
) -> None:
    """Cells sharing one parameter vector ``nu``: ``p = G / sum(G)``, ``G_k ~ Gamma(nu_k)``.

    One scalar shape per call (numpy's fast path; ``Gamma(1)`` is the
    exponential), which is what grouping the cells by ``nu`` buys.
    """
    n_samples = p.shape[-1]
    shape = nu[cells[0]]
    for block in _cell_blocks(cells, n_samples):
        size = (block.size, n_samples)
        gam = [rng.standard_exponential(size) if a == 1.0 else rng.standard_gamma(a, size)
               for a in shape]
        total = sum(gam[1:], start=gam[0].copy())
        ll = None if loglik is None else np.broadcast_to(coefficient[block, None], size).copy()
        for k, g in enumerate(gam):
            g /= total
            p[k, block] = g
            n_k = None if ll is None else counts[block, k]
            if n_k is not None and np.any(n_k):
                ll += n_k[:, None] * np.log(g)
        if ll is not None:
            loglik[block] = ll


def multinomial_coefficient(counts: np.ndarray) -> np.ndarray:
    """``log( n! / prod_k n_k! )`` over the last axis."""
    from scipy.special import gammaln

    return gammaln(counts.sum(axis=-1) + 1.0) - gammaln(counts + 1.0).sum(axis=-1)


def exact_draws(
    nu: np.ndarray, weights: np.ndarray, *, draws: int, chains: int, seed: int,
    counts: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Exact i.i.d. posterior draws: ``p_lm ~ Dirichlet(nu_lm)`` independently over cells.

    Cells are sampled by kind, each with numpy's fastest exact method: a
    two-category cell with a parameter equal to 1 (a question never or always
    solved, the bulk of real benchmarks) by inverting the Beta(b, 1) CDF from
    one exponential variate; every other cell from one Gamma variate per
    category, grouped by parameter vector so that numpy draws with a scalar
    shape.  Draws are laid out cell by cell (the returned arrays are views with
    the usual dimension order).  Same seed, same draws.

    Parameters
    ----------
    nu : ndarray (L, M, K)
        Posterior Dirichlet parameters (:func:`dirichlet_parameters`).
    weights : ndarray (K,)
    draws, chains, seed : int
    counts : ndarray (L, M, K), optional
        Observed category counts; when given, also the pointwise multinomial
        log-likelihood of every cell at every draw,
        ``log n_lm! - sum_k log n_lmk! + sum_k n_lmk log p_lmk``.

    Returns
    -------
    dict
        ``p`` (chain, draw, llm, question, category), ``theta`` (chain, draw, llm)
        and with ``counts`` ``log_likelihood`` (chain, draw, llm, question); their
        effective sample size equals the number of draws.
    """
    L, M, K = nu.shape
    n_samples = chains * draws
    flat = np.ascontiguousarray(nu, dtype=float).reshape(-1, K)
    n = None if counts is None else np.asarray(counts, dtype=float).reshape(-1, K)
    rng = np.random.default_rng(seed)
    p = np.empty((K, L * M, n_samples))
    loglik = None if n is None else np.empty((L * M, n_samples))
    rest = np.ones(L * M, dtype=bool)
    if K == 2:
        for one in (1, 0):
            cells = np.flatnonzero(rest & (flat[:, one] == 1.0))
            _one_parameter_beta(rng, p, loglik, flat, n, cells, one)
            rest[cells] = False
    if np.any(rest):
        coefficient = None if n is None else multinomial_coefficient(n)
        groups, which = np.unique(flat[rest], axis=0, return_inverse=True)
        left = np.flatnonzero(rest)
        for g in range(len(groups)):
            _gamma_ratio(rng, p, loglik, flat, n, left[which.ravel() == g], coefficient)
    score = np.tensordot(weights, p.reshape(K, L, M, n_samples).sum(axis=2), axes=1)
    out = {
        "p": p.reshape(K, L, M, chains, draws).transpose(3, 4, 1, 2, 0),
        "theta": (score / M).reshape(L, chains, draws).transpose(1, 2, 0),
    }
    if loglik is not None:
        out["log_likelihood"] = loglik.reshape(L, M, chains, draws).transpose(2, 3, 0, 1)
    return out
