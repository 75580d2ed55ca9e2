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


def exact_draws(
    nu: np.ndarray, weights: np.ndarray, *, draws: int, chains: int, seed: int
) -> dict[str, np.ndarray]:
    """Exact i.i.d. posterior draws: ``p_lm ~ Dirichlet(nu_lm)`` independently over cells.

    Returns
    -------
    dict
        ``p`` (chain, draw, llm, question, category) and ``theta`` (chain, draw, llm);
        their effective sample size equals the number of draws.
    """
    rng = np.random.default_rng(seed)
    gamma = rng.standard_gamma(nu, size=(chains, draws, *nu.shape))
    p = gamma / gamma.sum(axis=-1, keepdims=True)
    return {"p": p, "theta": (p @ weights).mean(axis=-1)}
