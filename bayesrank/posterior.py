"""A fitted Bayesian ranking model and the analytics built on its draws."""

from __future__ import annotations

from typing import Any

import arviz as az
import numpy as np
import xarray as xr

from bayesrank.data import ResponseData

__all__ = ["Posterior"]


class Posterior:
    """Posterior of a ranking model: an :class:`arviz.InferenceData` plus its data.

    Parameters
    ----------
    idata : arviz.InferenceData
        Must hold ``posterior["theta"]`` with dims ``(chain, draw, llm)``
        (larger is better).
    data : ResponseData
        The data the model was fitted to.
    model : str
        Model identifier (``"bayes"``, ``"rasch"``, ...).
    sampler : str, optional
        Backend that produced the draws.
    pymc_model : pymc.Model, optional
        The generative model (needed for posterior-predictive sampling).
    observed_var : str, optional
        Name of the likelihood variable in ``pymc_model`` / ``observed_data``.
    diagnostics : pandas.DataFrame, optional
        R-hat, ESS, divergences, BFMI summary of the fit.
    """

    def __init__(
        self,
        idata: az.InferenceData,
        data: ResponseData,
        model: str,
        *,
        sampler: str | None = None,
        pymc_model: Any = None,
        observed_var: str | None = None,
        diagnostics: Any = None,
        timings: dict[str, float] | None = None,
    ) -> None:
        if "posterior" not in idata.groups() or "theta" not in idata.posterior:
            raise ValueError("idata must hold posterior['theta'] with dims (chain, draw, llm)")
        self.idata = idata
        self.data = data
        self.model = model
        self.sampler = sampler
        self.pymc_model = pymc_model
        self.observed_var = observed_var
        self.diagnostics = diagnostics
        self.timings = dict(timings or {})

    @property
    def theta(self) -> xr.DataArray:
        """Draws of the ranking quantity, dims (chain, draw, llm)."""
        return self.idata.posterior["theta"]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(str(x) for x in self.theta["llm"].values)

    def theta_draws(self) -> np.ndarray:
        """Draws of theta as an (S, L) array, chains concatenated."""
        t = self.theta.transpose("chain", "draw", "llm").values
        return t.reshape(-1, t.shape[-1])

    def __repr__(self) -> str:
        c, d = self.theta.sizes["chain"], self.theta.sizes["draw"]
        return (
            f"Posterior(model={self.model!r}, sampler={self.sampler!r}, "
            f"{c} chains x {d} draws, L={self.theta.sizes['llm']})"
        )
