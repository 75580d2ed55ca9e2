"""The on-disk form of a posterior: one DataTree in a NetCDF (``.nc``) or Zarr (``.zarr``) store.

Groups: the fit's own (``posterior``, ``sample_stats``, ``observed_data``,
``log_likelihood``, ...) for MCMC draws, or ``normal`` (``mu``, ``sigma`` on
``llm``) for a :class:`~bayesrank.NormalPosterior`; ``bayesrank_data`` (the
:class:`~bayesrank.ResponseData`, as :meth:`~bayesrank.ResponseData.to_xarray`
writes it) and ``bayesrank_diagnostics``.  The root's attributes hold the
settings: model, model options (JSON), sampler, observed variable, timings.

This module reads a posterior's attributes without importing its classes, so
:meth:`Posterior.save` can use it; :mod:`bayesrank.analysis.persist` builds the
objects back.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.data.io import atomic_write
from bayesrank.errors import LoadError

__all__ = ["FORMAT", "DATA_GROUP", "DIAGNOSTICS_GROUP", "NORMAL_GROUP", "save_posterior",
           "store_kind"]

FORMAT = 1
DATA_GROUP = "bayesrank_data"
DIAGNOSTICS_GROUP = "bayesrank_diagnostics"
NORMAL_GROUP = "normal"
_KINDS = {".nc": "netcdf", ".netcdf": "netcdf", ".h5": "netcdf", ".zarr": "zarr"}


def store_kind(path: Path) -> str:
    """``"netcdf"`` or ``"zarr"`` from the suffix (a LoadError for any other)."""
    try:
        return _KINDS[path.suffix.lower()]
    except KeyError:
        raise LoadError(f"cannot tell the posterior format of {path} from its suffix: use a "
                        ".nc (NetCDF) or .zarr name") from None


def _diagnostics_dataset(frame: pd.DataFrame | None) -> xr.Dataset | None:
    if frame is None:
        return None
    ds = xr.Dataset.from_dataframe(frame.astype({"passed": np.int8}))
    ds.attrs["frame_attrs"] = json.dumps(frame.attrs)
    ds.attrs["columns"] = json.dumps(list(frame.columns))  # Zarr lists variables by name
    return ds


def _tree(post: Any) -> xr.DataTree:
    """The posterior's groups and settings as one new DataTree (``post`` is not changed)."""
    attrs: dict[str, Any] = {"bayesrank_posterior": FORMAT, "model": post.model}
    groups: dict[str, xr.Dataset] = {}
    if hasattr(post, "idata"):  # MCMC draws
        attrs.update(kind="draws", sampler=post.sampler or "",
                     observed_var=post.observed_var or "",
                     has_pymc_model=int(post.pymc_model is not None),
                     timings=json.dumps(post.timings),
                     model_options=post.idata["posterior"].attrs.get("model_options", "{}"))
        groups.update({name: post.idata[name].to_dataset() for name in post.idata.children})
        if post.sampler == "conjugate" and "p" in groups["posterior"]:
            # exact draws made again from the seed on loading (persist.load_posterior):
            # writing them would make all L x M x categories x draws at once
            groups["posterior"] = groups["posterior"].drop_vars("p")
        diagnostics = _diagnostics_dataset(post.diagnostics)
        if diagnostics is not None:
            groups[DIAGNOSTICS_GROUP] = diagnostics
    else:  # independent normals
        attrs["kind"] = "normal"
        groups[NORMAL_GROUP] = xr.Dataset(
            {"mu": ("llm", post.mu), "sigma": ("llm", post.sigma)},
            coords={"llm": list(post.models)},
        )
    if post.data is not None:
        groups[DATA_GROUP] = post.data.to_xarray()
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs=attrs), **groups})


def _replace_folder(target: Path, write) -> Path:
    """Write a folder store next to ``target`` and move it into place only when complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write(tmp / "store")
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, old / "store")
        os.replace(tmp / "store", target)
        if old is not None:
            shutil.rmtree(old)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def save_posterior(post: Any, path: str | os.PathLike) -> Path:
    """Write a :class:`Posterior` or :class:`NormalPosterior` with its data and settings.

    ``.nc`` gives one NetCDF file (h5netcdf), ``.zarr`` a Zarr folder; either is
    written next to ``path`` and moved into place only when complete.  Read it
    back with :func:`bayesrank.load_posterior`.
    """
    target = Path(path)
    kind = store_kind(target)
    tree = _tree(post)
    if kind == "netcdf":
        return atomic_write(target, lambda tmp: tree.to_netcdf(tmp, engine="h5netcdf"))
    return _replace_folder(target, lambda tmp: tree.to_zarr(tmp, consolidated=False))
