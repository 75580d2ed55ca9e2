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
from bayesrank.inference.log_likelihood import (
    MAX_BLOCK_VALUES,
    Blocks,
    pointwise_log_likelihood_blocks,
)
from bayesrank.models import scoring_model

if TYPE_CHECKING:
    from bayesrank.analysis.posterior import Posterior

__all__ = ["compare", "log_likelihood_blocks", "loo", "pointwise_log_likelihood",
           "observation_unit", "relative_efficiency"]

PARETO_K_THRESHOLD = 0.7
_UNIT_NAMES = {("llm", "question"): "model-question cell", ("observed",): "observed unit"}


def observation_unit(dims: tuple[str, ...]) -> str:
    """Plain-language name of the LOO unit given the pointwise dims."""
    return _UNIT_NAMES.get(tuple(dims), " x ".join(dims))


def log_likelihood_blocks(posterior: Posterior,
                          max_values: int = MAX_BLOCK_VALUES) -> Blocks:
    """The posterior's pointwise log-likelihood in blocks of at most ``max_values`` values.

    Read from the ``log_likelihood`` group when the fit stored it (one block); otherwise
    made on demand, block by block, so that a fit never holds all L x M x draws values:
    the exact Bayes@N draws again from their seed
    (:meth:`~bayesrank.conjugate.ExactDraws.log_likelihood_blocks`), any other model with
    its own compiled log-density
    (:func:`~bayesrank.inference.log_likelihood.pointwise_log_likelihood_blocks`).
    The posterior itself is not changed.
    """
    var = posterior.observed_var
    idata = posterior.idata
    if var is None:
        raise ValueError(f"posterior of {posterior.model!r} has no observed_var")
    if has_group(idata, "log_likelihood") and var in idata["log_likelihood"]:
        stored = idata["log_likelihood"][var]
        dims = tuple(d for d in stored.dims if d not in ("chain", "draw"))
        values = stored.transpose("chain", "draw", *dims).values
        coords = {d: stored[d].values for d in dims if d in stored.coords}
        shape = values.shape[2:]
        return Blocks(dims, coords, shape, iter([(slice(None), values.reshape(
            *values.shape[:2], -1))]))
    if posterior.pymc_model is None:
        raise ValueError(
            f"posterior of {posterior.model!r} has no log_likelihood[{var!r}] and no "
            "pymc_model to compute it from"
        )
    draws = group(idata, "posterior")
    if posterior.sampler == "conjugate":
        from bayesrank.models.bayes import exact_sampler

        model = posterior.pymc_model
        sampler = exact_sampler(model, draws=draws.sizes["draw"], chains=draws.sizes["chain"],
                                seed=int(draws.attrs["random_seed"]))
        L, M = sampler.shape[:2]
        counts = np.asarray(model["category_counts"].get_value())
        return Blocks(("llm", "question"), {"llm": list(model.coords["llm"]),
                                            "question": list(model.coords["question"])},
                      (L, M), sampler.log_likelihood_blocks(counts, max_values))
    return pointwise_log_likelihood_blocks(draws, scoring_model(posterior.pymc_model), var,
                                           max_values=max_values)


def pointwise_log_likelihood(posterior: Posterior) -> xr.DataArray:
    """Pointwise log-likelihood of the observed variable, dims (chain, draw, *unit).

    Every value at once (L x M x draws for the cell models): read from the
    ``log_likelihood`` group when present, otherwise made by :func:`log_likelihood_blocks`
    (the posterior itself is not changed).  :func:`loo` and :func:`compare` need only a
    block at a time.
    """
    made = log_likelihood_blocks(posterior)
    theta = posterior.theta
    values = np.empty((theta.sizes["chain"], theta.sizes["draw"], int(np.prod(made.shape))))
    for cells, block in made.blocks:
        values[:, :, cells] = block
    coords = {**made.coords, "chain": posterior.theta["chain"].values,
              "draw": posterior.theta["draw"].values}
    return xr.DataArray(values.reshape(*values.shape[:2], *made.shape),
                        dims=("chain", "draw", *made.dims), coords=coords,
                        name=posterior.observed_var)


def relative_efficiency(posterior: Posterior) -> float:
    """PSIS's relative efficiency ``r_eff``: mean bulk ESS / draws over the posterior's
    variables, as :func:`arviz.loo` computes it by default; 1 for draws independent by
    construction (exact conjugate draws, whose cell probabilities ``p`` are not held, and
    the Laplace approximation's: there is nothing to estimate) and for one chain."""
    draws = group(posterior.idata, "posterior")
    n = draws.sizes["chain"] * draws.sizes["draw"]
    if posterior.independent_draws or draws.sizes["chain"] == 1:
        return 1.0
    ess = az.ess(draws, method="mean")
    return float(np.hstack([ess[v].values.ravel() for v in ess.data_vars]).mean() / n)


def loo(posterior: Posterior, *, max_values: int = MAX_BLOCK_VALUES):
    """PSIS-LOO of a fit over its observation units, one block of units at a time.

    PSIS smooths each unit's importance ratios over that unit's draws alone, so the
    pointwise results of blocks of units (:func:`log_likelihood_blocks`, at most
    ``max_values`` values each) are those of the whole: the same ``elpd_i``, Pareto k and
    ``p_loo_i`` as :func:`arviz.loo` on the dense log-likelihood with the same
    ``reff`` (:func:`relative_efficiency`; tested), summed as :func:`arviz.loo` sums
    them.  Memory: one block, plus a few numbers per unit.

    A unit whose log-likelihood is 0 at every draw observed nothing (a model-question
    cell without trials, a pair that never met): it is left out, as :func:`arviz.loo`
    could not smooth it, and the pointwise results are then on one dim ``observed``
    (the observed units, their labels stacked).

    Returns
    -------
    arviz_stats.utils.ELPDDataLOO
        Pointwise (``elpd_i``, ``pareto_k`` on the unit's dims, or ``observed``), without
        ``log_weights`` (those are draws per unit).
    """
    from arviz_stats.utils import ELPDDataLOO

    made = log_likelihood_blocks(posterior, max_values)
    reff = relative_efficiency(posterior)
    size = int(np.prod(made.shape))
    elpd_i, pareto_k, p_loo_i = (np.empty(size) for _ in range(3))
    observed = np.empty(size, dtype=bool)
    n_samples = None
    for cells, values in made.blocks:
        n_samples = values.shape[0] * values.shape[1]
        seen = np.any(values != 0.0, axis=(0, 1))
        observed[cells] = seen
        block = xr.DataArray(values[:, :, seen], dims=("chain", "draw", "unit"))
        e, k, p = block.azstats.loo(sample_dims=["chain", "draw"], r_eff=reff)
        index = np.arange(size)[cells][seen]
        elpd_i[index], pareto_k[index], p_loo_i[index] = e.values, k.values, p.values

    def unit(values: np.ndarray, name: str) -> xr.DataArray:
        full = xr.DataArray(values.reshape(made.shape), dims=made.dims,
                            coords={d: c for d, c in made.coords.items() if d in made.dims},
                            name=name)
        if observed.all():
            return full
        return full.stack(observed=made.dims).isel(observed=np.flatnonzero(observed))

    elpd_da, p_da = unit(elpd_i, "elpd_i"), unit(p_loo_i, "p_loo_i")
    elpd, se, p_loo, _ = elpd_da.azstats.loo_summary(p_da)
    good_k = min(1.0 - 1.0 / np.log10(n_samples), 0.7)  # arviz's threshold for S draws
    k_da = unit(pareto_k, "pareto_k")
    return ELPDDataLOO(elpd=elpd, se=se, p=p_loo, n_samples=n_samples,
                       n_data_points=int(observed.sum()), scale="log",
                       warning=bool(np.any(k_da.values > good_k)), good_k=good_k,
                       elpd_i=elpd_da, pareto_k=k_da)


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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # re-raised below, with a count
            elpd = loo(post)
        unit_dims = tuple(elpd.elpd_i.dims)
        units[name] = (unit_dims, tuple(elpd.elpd_i.shape))
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
            "n_observations": int(np.prod(unit_shape)),  # the observed units
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
