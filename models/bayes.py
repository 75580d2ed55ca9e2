"""Bayes@N as a generative model: Dirichlet-multinomial outcomes per model-question cell.

Paper appendix, "Bayes@N" (Hariri et al.).  For model l and question m the
outcome of each trial is one of C + 1 categories with probabilities p_lm:

    p_lm        ~ Dirichlet(alpha_lm),   alpha_lmk = 1 + n0_lmk
    n_lm.       ~ Multinomial(n_lm, p_lm)                 (observed ``counts``)
    theta_l     = (1/M) sum_m sum_k w_k p_lmk             (expected weighted utility)

``n0`` are the category counts of the prior outcomes R0 (shared over models,
shape (M, C+1), or per model, (L, M, C+1)); without R0 the prior is uniform
(Bayes_U@N).  The model is conjugate: p_lm | data ~ Dirichlet(alpha_lm + n_lm.),
so the posterior mean and sd of theta equal the closed form
:func:`bayesrank.conjugate` (tested).  :func:`conjugate_draws` samples that
posterior exactly (``fit(..., sampler="conjugate")``, the default for this
model: i.i.d. draws, with the pointwise log-likelihood in closed form from the
same draws; docs/samplers.md); NUTS samples the same PyMC model like the
others.  Either way the result is a :class:`~bayesrank.Posterior` with a
pointwise log-likelihood per model-question cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm

from bayesrank import conjugate
from bayesrank.data import ResponseData

from ._common import coords_of, response_data

__all__ = ["build", "conjugate_draws", "dirichlet_multinomial", "exact_sampler"]

CELL = ("llm", "question", "category")


def dirichlet_multinomial(
    counts: np.ndarray,
    prior_counts: np.ndarray,
    weights: np.ndarray,
    coords: dict[str, list],
) -> pm.Model:
    """Dirichlet-multinomial model on category counts.

    Parameters
    ----------
    counts : ndarray (L, M, C+1)
        Observed trials of each outcome per cell.
    prior_counts : ndarray (L, M, C+1) or (M, C+1)
        Pseudo-counts added to the uniform Dirichlet(1) prior.
    weights : ndarray (C+1,)
        Utility of each category.
    coords : dict
        ``llm``, ``question`` and ``category`` labels.
    """
    with pm.Model(coords=coords) as model:
        n_obs = pm.Data("category_counts", counts, dims=CELL)
        alpha = pm.Data("alpha", np.broadcast_to(1.0 + prior_counts, counts.shape), dims=CELL)
        w = pm.Data("weights", weights, dims="category")
        p = pm.Dirichlet("p", a=alpha, dims=CELL)
        pm.Multinomial("counts", n=n_obs.sum(axis=-1), p=p, observed=n_obs, dims=CELL)
        pm.Deterministic("theta", (p @ w).mean(axis=1), dims="llm")
    return model


def build(
    data: ResponseData | Any,
    *,
    R0: Any = None,
    weights: Any = None,
) -> pm.Model:
    """Build the Bayes@N model of ``data``.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    R0 : None, "data" or array_like
        Prior outcomes, as everywhere in bayesrank (:func:`bayesrank.conjugate.prior_counts`):
        ``None`` (default) the uniform prior (Bayes_U@N), ``"data"`` the data's
        own prior outcomes, an array of shape (M, D) or (L, M, D) replaces them.
    weights : array_like, optional
        Category utilities (default: the data's weights).

    Returns
    -------
    pymc.Model
        Free variable ``p`` (llm, question, category); observed ``counts``
        (llm, question, category); ranking quantity ``theta`` (llm).
    """
    d = response_data(data)
    w = conjugate.resolve_weights(d, weights)
    counts = d.reductions.category_counts
    prior = conjugate.prior_counts(d, R0)
    prior = np.zeros(counts.shape) if prior is None else prior.astype(float)
    return dirichlet_multinomial(counts, prior, w, coords_of(d))


def exact_sampler(model: pm.Model, *, draws: int, chains: int, seed: int
                  ) -> conjugate.ExactDraws:
    """The exact sampler of a model built by :func:`build`: Dirichlet(alpha + counts) per cell.

    Same seed, same draws: a fit's draws of ``p`` and of its pointwise log-likelihood can be
    made again from its seed at any time (:meth:`~bayesrank.conjugate.ExactDraws.p`,
    :meth:`~bayesrank.conjugate.ExactDraws.log_likelihood_blocks`).
    """
    counts = np.asarray(model["category_counts"].get_value())
    nu = np.asarray(model["alpha"].get_value()) + counts
    weights = np.asarray(model["weights"].get_value())
    return conjugate.ExactDraws(nu, weights, draws=draws, chains=chains, seed=seed)


def conjugate_draws(
    model: pm.Model, *, draws: int, chains: int, seed: int, log_likelihood: bool = True
) -> dict[str, dict[str, np.ndarray]]:
    """Exact posterior draws of a model built by :func:`build` (no MCMC).

    p_lm | data ~ Dirichlet(alpha_lm + n_lm.), independently over cells
    (:func:`bayesrank.conjugate.exact_draws`), so draws are i.i.d.: the
    effective sample size equals the number of draws.

    Returns
    -------
    dict
        ``{"posterior": {"p", "theta"}}`` and, with ``log_likelihood``,
        ``{"log_likelihood": {"counts"}}``: the multinomial log-density of each
        cell's observed counts at each draw (dims chain, draw, llm, question),
        in closed form from the same draws (what :func:`pymc.compute_log_likelihood`
        returns for ``counts``, tested).  ``p`` is a
        :class:`~bayesrank.conjugate.DeferredArray`: its draws are made again
        from the same seeds only when they are first read (``theta`` needed
        them once; keeping them would cost more time than drawing them).
    """
    counts = np.asarray(model["category_counts"].get_value())
    sampler = exact_sampler(model, draws=draws, chains=chains, seed=seed)
    drawn = sampler.sample(counts if log_likelihood else None)
    groups = {"posterior": {"p": sampler.deferred_p(), "theta": drawn["theta"]}}
    if log_likelihood:
        groups["log_likelihood"] = {"counts": drawn["log_likelihood"]}
    return groups
