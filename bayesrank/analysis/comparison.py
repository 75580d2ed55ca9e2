"""PSIS-LOO comparison of Bayesian ranking models fitted to the same data.

Leave-one-out is over *observation units*, and the units must be the same for
every model compared.  For the cell-count likelihoods of bayesrank (binomial
``k`` for the IRT models, multinomial ``counts`` for the Bayes@N model) the unit
is the **model-question cell** (all N trials of one model on one question): the
pointwise log-likelihood has dims ``(llm, question)``, L x M values.  Pairwise
or setwise likelihoods (Bradley-Terry, Davidson-Luce) observe different units
and cannot be compared with the cell models by LOO; :func:`compare` refuses that.

Binomial and multinomial cell likelihoods both include the multinomial
coefficient, so on binary data ``k`` and ``counts`` give the same log density
for the same cell probabilities and their ELPDs are directly comparable.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.datatree import group, has_group
from bayesrank.errors import DataError
from bayesrank.models import scoring_model

if TYPE_CHECKING:
    from bayesrank.analysis.posterior import Posterior

__all__ = ["compare", "pointwise_log_likelihood", "observation_unit"]

PARETO_K_THRESHOLD = 0.7
_UNIT_NAMES = {("llm", "question"): "model-question cell"}


def observation_unit(dims: tuple[str, ...]) -> str:
    """Plain-language name of the LOO unit given the pointwise dims."""
    return _UNIT_NAMES.get(tuple(dims), " x ".join(dims))


def pointwise_log_likelihood(posterior: Posterior) -> xr.DataArray:
    """Pointwise log-likelihood of the observed variable, dims (chain, draw, *unit).

    Read from the ``log_likelihood`` group when present, otherwise computed
    with :func:`pymc.compute_log_likelihood` from the posterior's ``pymc_model``
    (the posterior itself is not changed).
    """
    var = posterior.observed_var
    idata = posterior.idata
    if var is None:
        raise ValueError(f"posterior of {posterior.model!r} has no observed_var")
    if has_group(idata, "log_likelihood") and var in idata["log_likelihood"]:
        return idata["log_likelihood"][var]
    else:
        if posterior.pymc_model is None:
            raise ValueError(
                f"posterior of {posterior.model!r} has no log_likelihood[{var!r}] and no "
                "pymc_model to compute it from"
            )
        import pymc as pm

        loglik = pm.compute_log_likelihood(
            idata, model=scoring_model(posterior.pymc_model), var_names=[var],
            extend_inferencedata=False,
            progressbar=False,
        )
        return loglik[var]


def _same_data(a, b) -> bool:
    if a is b:
        return True
    same_mask = (a.mask is None and b.mask is None) or (
        a.mask is not None and b.mask is not None and np.array_equal(a.mask, b.mask)
    )
    return a.shape == b.shape and np.array_equal(a.R, b.R) and same_mask


def compare(
    posteriors: Mapping[str, Posterior],
    *,
    method: str = "stacking",
    pareto_k_threshold: float = PARETO_K_THRESHOLD,
) -> pd.DataFrame:
    """Rank fitted models by expected log predictive density (PSIS-LOO, :func:`arviz.compare`).

    Parameters
    ----------
    posteriors : mapping of name -> Posterior
        At least two posteriors fitted to the same data with the same
        observation unit (see module docstring).
    method : str
        Weighting method passed to :func:`arviz.compare`.
    pareto_k_threshold : float
        Pareto-k above this marks an unreliable PSIS estimate (0.7, Vehtari et al. 2017).

    Returns
    -------
    pandas.DataFrame
        bayesrank's comparison table, one row per model (index ``model``), best first:

        ``rank``
            1 = highest ELPD.
        ``elpd_loo``, ``se``
            PSIS-LOO expected log pointwise predictive density and its standard error.
        ``elpd_diff``, ``diff_se``
            Difference to the best model (<= 0) and the standard error of the
            pointwise differences.
        ``p_loo``
            Effective number of parameters.
        ``weight``
            Model weight (``method``, stacking by default; sums to 1).
        ``n_pareto_k_high``, ``max_pareto_k``
            Observations with Pareto k above the threshold, and the largest k.
        ``observation_unit``, ``n_observations``
            What one LOO observation is and how many there are.

        ``attrs`` repeat the unit and threshold.  A :class:`UserWarning` names
        models with high Pareto k.
    """
    if len(posteriors) < 2:
        raise ValueError("compare needs at least two posteriors")
    items = list(posteriors.items())
    first_data = items[0][1].data
    elpds = {}
    units: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}
    high_k: dict[str, tuple[int, float]] = {}
    for name, post in items:
        if not _same_data(post.data, first_data):
            raise DataError(
                f"posterior {name!r} was fitted to different data than {items[0][0]!r}; "
                "LOO comparison needs the same observations"
            )
        loglik = pointwise_log_likelihood(post)
        unit_dims = tuple(d for d in loglik.dims if d not in ("chain", "draw"))
        units[name] = (unit_dims, tuple(loglik.sizes[d] for d in unit_dims))
        single = xr.DataTree.from_dict(
            {"posterior": group(post.idata, "posterior"),
             "log_likelihood": loglik.to_dataset(name="obs")}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # re-raised below, with a count
            elpd = az.loo(single, pointwise=True, var_name="obs")
        k = np.asarray(elpd.pareto_k).ravel()
        high_k[name] = (int((k > pareto_k_threshold).sum()), float(np.nanmax(k)))
        elpds[name] = elpd
    distinct = set(units.values())
    if len(distinct) > 1:
        listing = ", ".join(f"{n}: {u[0]} {u[1]}" for n, u in units.items())
        raise DataError(
            "models observe different units and cannot be compared by LOO "
            f"({listing}); compare models with the same likelihood unit (e.g. IRT and "
            "Bayes@N models, both per model-question cell)"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ/pandas chatter; Pareto-k is reported below
        arviz_table = az.compare(elpds, method=method, round_to="none")
    unit_dims, unit_shape = units[items[0][0]]
    table = pd.DataFrame(
        {
            "rank": arviz_table["rank"].astype(int) + 1,
            "elpd_loo": arviz_table["elpd"].astype(float),
            "se": arviz_table["se"].astype(float),
            "elpd_diff": arviz_table["elpd_diff"].astype(float),
            "diff_se": arviz_table["dse"].astype(float),
            "p_loo": arviz_table["p"].astype(float),
            "weight": arviz_table["weight"].astype(float),
            "n_pareto_k_high": [high_k[n][0] for n in arviz_table.index],
            "max_pareto_k": [high_k[n][1] for n in arviz_table.index],
            "observation_unit": observation_unit(unit_dims),
            "n_observations": int(np.prod(unit_shape)),
        },
        index=pd.Index([str(n) for n in arviz_table.index], name="model"),
    )
    table.attrs.update(
        observation_unit=observation_unit(unit_dims),
        pareto_k_threshold=pareto_k_threshold,
    )
    flagged = {n: c for n, (c, _) in high_k.items() if c}
    if flagged:
        listing = ", ".join(f"{n}: {c}" for n, c in flagged.items())
        warnings.warn(
            f"PSIS-LOO is unreliable for some observations (Pareto k > {pareto_k_threshold}): "
            f"{listing} of {int(np.prod(unit_shape))} {observation_unit(unit_dims)}s; "
            "treat those ELPD differences with caution (consider K-fold CV)",
            UserWarning,
            stacklevel=2,
        )
    return table
