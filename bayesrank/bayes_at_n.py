"""Closed-form Bayes@N (Hariri et al.; paper appendix, "Bayes@N").

For model l and question m, category counts n_mk and pseudo-counts
n0_mk = 1 + sum_d 1{R0_md = k} (a Dirichlet(1, ..., 1) prior plus the prior
outcomes) give a Dirichlet posterior with parameters nu_mk = n_mk + n0_mk and
total T = 1 + C + D + N.  The weighted score of the model has

    mu_l    = w_0 + 1/(M T) sum_m sum_k nu_mk (w_k - w_0)
    sigma_l = ( 1/(M^2 (T+1)) sum_m [ sum_k nu_mk/T (w_k - w_0)^2
                                      - (sum_k nu_mk/T (w_k - w_0))^2 ] )^(1/2)

With missing trials T varies by cell (T_lm = 1 + C + D + n_lm); the formula
is applied cell by cell, which is the same expression when data are complete.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError

__all__ = ["bayes_at_n", "dirichlet_parameters"]


def dirichlet_parameters(data: ResponseData, *, use_prior: bool = True) -> np.ndarray:
    """Posterior Dirichlet parameters nu_lmk, shape (L, M, C+1).

    Uniform Dirichlet(1) plus prior-outcome pseudo-counts (when ``use_prior`` and
    the data carry R0) plus observed category counts.
    """
    red = data.reductions
    nu = red.category_counts + 1.0
    if use_prior and data.R0 is not None:
        nu = nu + red.prior_category_counts  # broadcasts (M, C+1) over models
    return nu


def bayes_at_n(
    data: ResponseData | Any,
    *,
    weights: np.ndarray | None = None,
    R0: Any = "data",
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean ``mu`` and standard deviation ``sigma`` of each model's score.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    weights : array_like, optional
        Category utilities ``w``; default the data's weights.
    R0 : "data", None or array_like
        ``"data"`` uses the data's own prior outcomes (if any), ``None`` the
        uniform prior only (Bayes_U@N), an array replaces the prior outcomes.

    Returns
    -------
    mu, sigma : numpy.ndarray, shape (L,)
    """
    d = as_response_data(data)
    if R0 is None or (isinstance(R0, str) and R0 == "data"):
        use_prior = R0 is not None
    else:
        d = ResponseData(
            d.R, models=d.models, questions=d.questions, R0=R0, weights=d.weights, mask=d.mask
        )
        use_prior = True
    w = d.weights if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (d.n_categories,):
        raise DataError(f"weights must have length C+1={d.n_categories}, got shape {w.shape}")
    nu = dirichlet_parameters(d, use_prior=use_prior)
    T = nu.sum(axis=-1)
    shifted = w - w[0]
    mean_cell = (nu @ shifted) / T
    second_cell = (nu @ shifted**2) / T
    var_cell = (second_cell - mean_cell**2) / (T + 1.0)
    M = d.M
    mu = w[0] + mean_cell.sum(axis=1) / M
    sigma = np.sqrt(np.maximum(var_cell.sum(axis=1), 0.0)) / M
    return mu, sigma
