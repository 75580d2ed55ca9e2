"""Pointwise log-likelihood of a fit's draws, compiled once per model structure.

:func:`pymc.compute_log_likelihood` builds and compiles the elementwise log-density
of the observed variable at every call, then evaluates it draw by draw.  Building it
was most of the time on small sets (AIME 2PL, 16 x 15 x 4: 1.5 s of a 5.2 s fit,
2026-12-04, 2-core AMD EPYC).  Here the same function (the model with its value
transforms removed, as PyMC scores the posterior's constrained draws; PyTensor's
default back end, whose compiled code is shared between graphs, so a machine new to a
model compiles little) is kept in memory and in :mod:`.function_store` under the
model's structure key, and takes each fit's data in its shared variables.
``benchmarks/bench_log_likelihood.py`` measures both on the real sets.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pymc as pm
import xarray as xr

from bayesrank.inference.cache import cached
from bayesrank.inference.function_store import load_or_make, put_data

__all__ = ["Blocks", "pointwise_log_likelihood", "pointwise_log_likelihood_blocks",
           "MAX_BLOCK_VALUES"]

#: Values (cells x draws) of one block of the pointwise log-likelihood made on demand:
#: 2^25 float64 values, 256 MB (:func:`pointwise_log_likelihood_blocks`).
MAX_BLOCK_VALUES = 2**25


def _make_function(model: pm.Model, observed_var: str) -> tuple:
    """(function of the free variables' constrained values -> elementwise log-likelihood of
    ``observed_var``, the free variables' names and dtypes in argument order)."""
    from pymc.model.transform.conditioning import remove_value_transforms

    plain = remove_value_transforms(model)
    values = [plain.rvs_to_values[rv] for rv in plain.free_RVs]
    (elementwise,) = plain.logp(vars=[plain[observed_var]], sum=False)
    # PyMC's compile, as pm.compute_log_likelihood's: its rewrites (parameter checks as
    # switches) are part of the values it returns
    fn = plain.compile_fn(elementwise, inputs=values, on_unused_input="ignore", point_fn=False,
                          trust_input=True)
    return fn, tuple(rv.name for rv in plain.free_RVs), tuple(v.type.dtype for v in values)


def log_likelihood_function(model: pm.Model, observed_var: str,
                            key: Hashable | None = None) -> tuple:
    """The compiled elementwise log-likelihood of ``observed_var`` with ``model``'s data.

    ``key``: ``model``'s structure key (:func:`~bayesrank.inference.cache.structure_key`);
    the function is then reused within the process and across processes.
    """
    store_key = None if key is None else ("log-likelihood", key, observed_var)
    functions, reused = cached(
        store_key, lambda: load_or_make(store_key, model, lambda: _make_function(model,
                                                                                 observed_var)))
    if reused and not put_data(functions, model):
        return _make_function(model, observed_var)  # not expected: the key fixes the data
    return functions


def _dims_and_coords(model: pm.Model, observed_var: str, ndim: int) -> tuple[list, dict]:
    # a multivariate observation (a Davidson pair's outcome counts) has one value: its
    # leading dims are the log-likelihood's
    dims = list(model.named_vars_to_dims.get(observed_var) or
                [f"{observed_var}_dim_{i}" for i in range(ndim)])[:ndim]
    coords = {dim: list(model.coords[dim]) for dim in dims if model.coords.get(dim) is not None}
    return dims, coords


class Blocks(NamedTuple):
    """A pointwise log-likelihood in blocks: the observations' ``dims``, ``coords`` and
    ``shape``, and ``blocks``, an iterator of ``(cells, values)``: ``cells`` the flat (C
    order) indices of some observations, ``values`` their log-likelihood (chain, draw,
    cells)."""

    dims: tuple[str, ...]
    coords: dict
    shape: tuple[int, ...]
    blocks: Iterator[tuple[Any, np.ndarray]]


def pointwise_log_likelihood_blocks(
    posterior: xr.Dataset, model: pm.Model, observed_var: str, key: Hashable | None = None,
    max_values: int = MAX_BLOCK_VALUES,
) -> Blocks:
    """The pointwise log-likelihood in blocks of observations, never all of it at once.

    The same numbers as :func:`pointwise_log_likelihood`'s, in blocks of consecutive
    observations (C order of its dims) of at most about ``max_values`` values each (one
    observation's draws at least).  The model's own compiled function scores every
    observation of a draw, so B blocks cost B passes over the draws: time for memory,
    where holding every observation's draws (L x M x draws: 22 GB for 50 x 14,000
    cells x 4,000 draws) does not fit.
    """
    fn, names, dtypes = log_likelihood_function(model, observed_var, key)
    arguments = [np.asarray(posterior[name].values, dtype=dtype)
                 for name, dtype in zip(names, dtypes, strict=True)]
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    first = np.asarray(fn(*(a[0, 0, ...] for a in arguments)))
    step = max(1, int(max_values) // (chains * draws))

    def blocks() -> Iterator[tuple[slice, np.ndarray]]:
        for start in range(0, first.size, step):
            cells = slice(start, min(start + step, first.size))
            out = np.empty((chains, draws, cells.stop - start), dtype=first.dtype)
            for c in range(chains):
                for d in range(draws):
                    out[c, d] = np.asarray(fn(*(a[c, d, ...] for a in arguments))).ravel()[cells]
            yield cells, out

    dims, coords = _dims_and_coords(model, observed_var, first.ndim)
    return Blocks(tuple(dims), coords, first.shape, blocks())


def pointwise_log_likelihood(posterior: xr.Dataset, model: pm.Model, observed_var: str,
                             key: Hashable | None = None) -> xr.Dataset:
    """log p(y_i | draw) of every observation of ``observed_var`` at every posterior draw.

    The same values as :func:`pymc.compute_log_likelihood` (``posterior`` holds the free
    variables' constrained draws with dims ``chain`` and ``draw``), as a Dataset with
    dims ``(chain, draw, *dims of observed_var)`` and the model's coordinates.
    """
    fn, names, dtypes = log_likelihood_function(model, observed_var, key)
    arguments = [np.asarray(posterior[name].values, dtype=dtype)
                 for name, dtype in zip(names, dtypes, strict=True)]
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    first = np.asarray(fn(*(a[0, 0, ...] for a in arguments)))
    out = np.empty((chains, draws, *first.shape), dtype=first.dtype)
    for c in range(chains):
        for d in range(draws):
            out[c, d] = fn(*(a[c, d, ...] for a in arguments))
    dims, coords = _dims_and_coords(model, observed_var, first.ndim)
    coords.update(chain=posterior["chain"].values, draw=posterior["draw"].values)
    return xr.Dataset({observed_var: (["chain", "draw", *dims], out)}, coords=coords)
