"""Keep a fitted posterior: :func:`save_posterior` (``post.save(path)``) and :func:`load_posterior`.

>>> post.save("fit.nc")                                  # doctest: +SKIP
>>> post = bayesrank.load_posterior("fit.nc")            # doctest: +SKIP
>>> post.rank("lcb"), post.ppc(), bayesrank.compare({"a": post})  # doctest: +SKIP

The file holds the draws (every group of the fit), the data (R, mask, R0,
weights, names), the diagnostics and the settings (model, its build options,
sampler, seed).  On loading, the PyMC model is rebuilt from the data, the model
name and its options, so posterior-predictive checks and PSIS-LOO work as on
the fitted object.  Format: :mod:`bayesrank.analysis.posterior_file`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from bayesrank.analysis.posterior import NormalPosterior, Posterior
from bayesrank.analysis.posterior_file import (
    DATA_GROUP,
    DIAGNOSTICS_GROUP,
    NORMAL_GROUP,
    save_posterior,
    store_kind,
)
from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PairwiseData
from bayesrank.errors import LoadError

__all__ = ["save_posterior", "load_posterior"]


def _open(path: Path) -> xr.DataTree:
    kind = store_kind(path)
    if not path.exists():
        raise LoadError(f"no such posterior file: {path}")
    try:
        if kind == "netcdf":
            with xr.open_datatree(path, engine="h5netcdf") as tree:
                return tree.load().copy()
        return xr.open_datatree(path, engine="zarr", consolidated=False).load()
    except (OSError, ValueError, KeyError) as exc:
        raise LoadError(f"cannot read {path} as a saved posterior: {exc}") from exc


def _diagnostics(ds: xr.Dataset) -> pd.DataFrame:
    frame = ds.to_dataframe()
    frame = frame[json.loads(ds.attrs.get("columns", "null")) or list(frame.columns)]
    frame["passed"] = frame["passed"].astype(bool)
    frame.attrs.update(json.loads(ds.attrs.get("frame_attrs", "{}")))
    return frame


def _rebuild(model: str, data: ResponseData, options_json: str) -> tuple[Any, str]:
    """The PyMC model of the fit, rebuilt from its data, name and build options."""
    from bayesrank.models import get_model

    if not options_json:
        raise LoadError(f"the {model} fit was built with options that could not be saved; "
                        "its PyMC model cannot be rebuilt")
    spec = get_model(model)
    pymc_model = spec.build(data, **json.loads(options_json))
    return pymc_model, spec.observed_var(pymc_model)


def _with_exact_p(idata: xr.DataTree, model: Any) -> xr.DataTree:
    """The exact Bayes@N draws of ``p``, which a file does not hold, made again from the
    fit's seed when first read (the same draws: :meth:`~bayesrank.conjugate.ExactDraws.p`)."""
    from bayesrank.conjugate import deferred_variable
    from bayesrank.models.bayes import exact_sampler

    posterior = idata["posterior"].to_dataset()
    if "p" in posterior:
        return idata
    sampler = exact_sampler(model, draws=posterior.sizes["draw"], chains=posterior.sizes["chain"],
                            seed=int(posterior.attrs["random_seed"]))
    p = deferred_variable(sampler.deferred_p(), ("chain", "draw", "llm", "question", "category"))
    posterior = posterior.assign_coords(category=list(model.coords["category"])).assign(p=p)
    out = idata.copy()
    out["posterior"] = xr.DataTree(posterior)
    return out


def load_posterior(path: str | os.PathLike) -> Posterior | NormalPosterior:
    """Read a posterior written by :meth:`Posterior.save` / :func:`save_posterior`.

    Returns the same kind of object with the same draws, data, diagnostics and
    settings; every analytic (rank, superiority, ppc, compare, report) works on it.
    """
    source = Path(path)
    tree = _open(source)
    attrs = dict(tree.attrs)
    if "bayesrank_posterior" not in attrs:
        raise LoadError(f"{source} is not a posterior saved by bayesrank (post.save(path))")
    stored = tree[DATA_GROUP].to_dataset() if DATA_GROUP in tree.children else None
    kind = (PairwiseData if stored is not None and stored.attrs.get("bayesrank_data") == "pairwise"
            else ResponseData)
    data = None if stored is None else kind.from_xarray(stored)
    model = str(attrs["model"])
    if attrs.get("kind") == "normal":
        normal = tree[NORMAL_GROUP].to_dataset()
        return NormalPosterior(normal["mu"].values, normal["sigma"].values,
                               [str(m) for m in normal["llm"].values], data=data, model=model)
    groups = {name: tree[name].to_dataset() for name in tree.children
              if name not in (DATA_GROUP, DIAGNOSTICS_GROUP)}
    idata = xr.DataTree.from_dict(groups)
    pymc_model, observed_var = None, str(attrs.get("observed_var") or "") or None
    if int(attrs.get("has_pymc_model", 0)) and data is not None:
        pymc_model, observed_var = _rebuild(model, data, str(attrs.get("model_options", "{}")))
    if pymc_model is not None and attrs.get("sampler") == "conjugate":
        idata = _with_exact_p(idata, pymc_model)
    diagnostics = (_diagnostics(tree[DIAGNOSTICS_GROUP].to_dataset())
                   if DIAGNOSTICS_GROUP in tree.children else None)
    return Posterior(
        idata,
        data,  # type: ignore[arg-type]
        model,
        sampler=str(attrs.get("sampler") or "") or None,
        pymc_model=pymc_model,
        observed_var=observed_var,
        diagnostics=diagnostics,
        timings=json.loads(attrs.get("timings", "{}")),
    )
