"""Bayes@N as a generative model: Dirichlet-multinomial outcomes per model-question cell.

Paper appendix, "Bayes@N" (Hariri et al.).  For model l and question m the outcome of
each trial is one of C + 1 categories with probabilities p_lm:

    p_lm        ~ Dirichlet(alpha_lm),   alpha_lmk = 1 + n0_lmk
    n_lm.       ~ Multinomial(n_lm, p_lm)                 (observed ``counts``)
    theta_l     = (1/M) sum_m sum_k w_k p_lmk             (expected weighted utility)

``n0`` are the category counts of the prior outcomes R0 (shared over models, shape (M,
C+1), or per model, (L, M, C+1)); without R0 the prior is uniform (Bayes_U@N).

One function builds the model, one line per line above: :func:`bayes_at_n`, from the
counts as :class:`CategoryCounts` prepares them once; :func:`build` checks the options.

Why this form:

* Conjugate: p_lm | data ~ Dirichlet(alpha_lm + n_lm.), so the posterior mean and sd of
  theta equal the closed form :func:`bayesrank.conjugate` (tested), and
  :func:`conjugate_draws` samples that posterior exactly (``fit(..., sampler="conjugate")``,
  the default for this model: i.i.d. draws, with the pointwise log-likelihood in closed
  form from the same draws; docs/samplers.md).  NUTS samples the same PyMC model like the
  others.  Either way the result is a :class:`~bayesrank.Posterior` with a pointwise
  log-likelihood per model-question cell.
* The counts, pseudo-counts and weights are ``pm.Data``: the exact sampler reads them
  from the model (:func:`conjugate_draws`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm

from bayesrank import conjugate
from bayesrank.data import ResponseData

from ._common import coords_of, response_data

__all__ = ["build", "bayes_at_n", "CategoryCounts", "conjugate_draws", "exact_sampler"]

CELL = ("llm", "question", "category")


@dataclass(frozen=True, eq=False, repr=False)
class CategoryCounts:
    """The category counts as Bayes@N reads them, prepared once (:meth:`of`)."""

    counts: np.ndarray  # n_lmk, the trials of each outcome per cell (L, M, C+1)
    alpha: np.ndarray  # 1 + n0_lmk, the Dirichlet's parameters (L, M, C+1)
    weights: np.ndarray  # w_k, the utility of each category (C+1,)
    coords: dict[str, list]  # llm, question, category

    @classmethod
    def of(cls, data: ResponseData, R0: Any = None, weights: Any = None) -> CategoryCounts:
        """The counts of ``data``, the pseudo-counts of ``R0`` and the utilities (:func:`build`)."""
        w = conjugate.resolve_weights(data, weights)
        counts = data.reductions.category_counts
        prior = conjugate.prior_counts(data, R0)
        prior = np.zeros(counts.shape) if prior is None else prior.astype(float)
        alpha = np.broadcast_to(1.0 + prior, counts.shape)
        return cls(counts, alpha, w, coords_of(data))

    def __repr__(self) -> str:
        L, M, C = self.counts.shape
        return f"CategoryCounts({L} models x {M} questions x {C} categories)"


def bayes_at_n(cells: CategoryCounts) -> pm.Model:
    """Bayes@N, line by line (module docstring)::

        p_lm    ~ Dirichlet(alpha_lm),   alpha_lmk = 1 + n0_lmk
        n_lm.   ~ Multinomial(n_lm, p_lm)
        theta_l = (1/M) sum_m sum_k w_k p_lmk
    """
    with pm.Model(coords=cells.coords) as model:
        n_obs = pm.Data("category_counts", cells.counts, dims=CELL)
        alpha = pm.Data("alpha", cells.alpha, dims=CELL)
        w = pm.Data("weights", cells.weights, dims="category")
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
    return bayes_at_n(CategoryCounts.of(response_data(data), R0, weights))


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
