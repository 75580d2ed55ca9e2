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
:func:`bayesrank.bayes_at_n` (tested).  :func:`conjugate_draws` samples that
posterior exactly (``fit(..., sampler="conjugate")``, the default for this
model: i.i.d. draws in milliseconds); NUTS samples the same PyMC model like the
others.  Either way the result is a :class:`~bayesrank.Posterior` with a
pointwise log-likelihood per model-question cell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm

from bayesrank.data import ResponseData
from bayesrank.errors import DataError

from ._common import coords_of, response_data

__all__ = ["build", "conjugate_draws", "dirichlet_multinomial"]

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
    R0: Any = "data",
    weights: Any = None,
) -> pm.Model:
    """Build the Bayes@N model of ``data``.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    R0 : "data", None or array_like
        ``"data"`` uses the data's prior outcomes (uniform prior when it has
        none), ``None`` forces the uniform prior (Bayes_U@N), an array of shape
        (M, D) or (L, M, D) replaces them.
    weights : array_like, optional
        Category utilities (default: the data's weights).

    Returns
    -------
    pymc.Model
        Free variable ``p`` (llm, question, category); observed ``counts``
        (llm, question, category); ranking quantity ``theta`` (llm).
    """
    d = response_data(data)
    if isinstance(R0, str):
        if R0 != "data":
            raise ValueError(f"R0 must be 'data', None or an array, got {R0!r}")
    elif R0 is not None:
        d = ResponseData(
            d.R, models=d.models, questions=d.questions, R0=R0, weights=d.weights, mask=d.mask
        )
    w = d.weights if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (d.n_categories,) or not np.all(np.isfinite(w)):
        raise DataError(f"weights must be {d.n_categories} finite numbers, got shape {w.shape}")
    red = d.reductions
    counts = red.category_counts
    use_prior = R0 is not None and d.R0 is not None
    prior = red.prior_category_counts if use_prior else np.zeros(counts.shape)
    return dirichlet_multinomial(counts, prior.astype(float), w, coords_of(d))


def conjugate_draws(
    model: pm.Model, *, draws: int, chains: int, seed: int
) -> dict[str, np.ndarray]:
    """Exact posterior draws of a model built by :func:`build` (no MCMC).

    p_lm | data ~ Dirichlet(alpha_lm + n_lm.), independently over cells, so
    draws are i.i.d.: the effective sample size equals the number of draws.

    Returns
    -------
    dict
        ``p`` (chain, draw, llm, question, category) and ``theta`` (chain, draw, llm).
    """
    alpha = np.asarray(model["alpha"].get_value()) + np.asarray(
        model["category_counts"].get_value()
    )
    w = np.asarray(model["weights"].get_value())
    rng = np.random.default_rng(seed)
    gamma = rng.standard_gamma(alpha, size=(chains, draws, *alpha.shape))
    p = gamma / gamma.sum(axis=-1, keepdims=True)
    return {"p": p, "theta": (p @ w).mean(axis=-1)}
