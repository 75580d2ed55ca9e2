"""Prior predictive checks: what a model says before it has seen the results.

Every model of :mod:`bayesrank.models` is generative with proper priors, so
``pm.sample_prior_predictive`` draws its parameters from their priors and replicated
results on the data's design (models, questions, trials, missing cells).  The check a
user wants first is whether those replicated benchmarks look like benchmarks: accuracies
spread over (0, 1) rather than piled at 0 and 1, questions of every difficulty.
:func:`prior_predictive` returns the draws; :func:`prior_accuracy` summarises the
replicated accuracy of each model next to the observed one.

The Rasch model integrates its one-sided difficulties out when there are many of them
(:mod:`models.one_sided`), a device of the sampler whose density carries a Potential;
the prior check builds the same model without it, which has the same prior.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from bayesrank.data import as_response_data
from bayesrank.models import get_model

from .ppc import FORWARD_COMPILE, _without_pymc_info

__all__ = ["prior_accuracy", "prior_predictive"]


def prior_predictive(data: Any, model: str = "2pl", *, draws: int = 500,
                     random_seed: int = 0, **options: Any) -> xr.DataTree:
    """Draws from ``model``'s prior and prior predictive on the design of ``data``.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
        Only its design is used (models, questions, trials, mask) and, as observed data,
        kept beside the draws for comparison.
    model : str
        A model of :func:`bayesrank.models.build` (``"bayes"``, ``"rasch"``, ``"2pl"``,
        ``"3pl"``, ``"bradley_terry"``, ``"davidson"``, ``"davidson_luce"``).
    draws, random_seed : int
        Number of prior draws and their seed.
    **options
        Model options, as for :func:`bayesrank.fit` (``likelihood=``, ``fast=``, ...).

    Returns
    -------
    xarray.DataTree
        Groups ``prior`` (parameters), ``prior_predictive`` (replicated results) and
        ``observed_data``.
    """
    d = as_response_data(data)
    if model == "rasch":
        options.setdefault("collapse_uninformed", False)  # the same prior, no Potential
    pymc_model = get_model(model).build(d, **options)
    with pymc_model, _without_pymc_info():  # PyMC 6 returns a DataTree
        return pm.sample_prior_predictive(draws=draws, random_seed=random_seed,
                                          compile_kwargs=FORWARD_COMPILE)


def prior_accuracy(data: Any, model: str = "2pl", *, draws: int = 500, random_seed: int = 0,
                   q: float = 0.9, **options: Any) -> pd.DataFrame:
    """Each model's observed accuracy and the central ``q`` interval of its accuracy under
    the prior predictive of an IRT model (``k`` replicated on the data's trials).

    A prior that puts most observed accuracies far inside its intervals is weakly
    informative, as intended; one whose intervals miss them says the prior is at odds
    with benchmarks like this one.
    """
    d = as_response_data(data)
    if model not in ("rasch", "2pl", "3pl"):
        raise ValueError(f"prior_accuracy needs an IRT model (rasch, 2pl, 3pl), got {model!r}")
    tree = prior_predictive(d, model, draws=draws, random_seed=random_seed, **options)
    k = tree["prior_predictive"]["k"].values.reshape(-1, d.L, d.M)
    trials = d.reductions.trials.sum(axis=1)
    accuracy = k.sum(axis=-1) / trials
    lo, hi = np.quantile(accuracy, [(1 - q) / 2, (1 + q) / 2], axis=0)
    observed = d.reductions.successes.sum(axis=1) / trials
    return pd.DataFrame({"observed": observed, "prior_lo": lo, "prior_hi": hi,
                         "inside": (observed >= lo) & (observed <= hi)},
                        index=pd.Index(list(d.models), name="llm"))
