"""Compiled models remembered for reuse: the few most recent, keyed by model structure.

Compiling a PyMC model for nutpie or JAX costs seconds; fitting the same model
to other data of the same shape (the paper's N = 1 and model-pool protocols)
only swaps the data in.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import pymc as pm

__all__ = ["DATA_ONLY_DIMS", "cached", "clear_cache", "data_only_axes", "same_layout",
           "structure_key"]

_CACHE: OrderedDict[Hashable, Any] = OrderedDict()
_CACHE_SIZE = 8


def cached(key: Hashable | None, make: Callable[[], Any]) -> tuple[Any, bool]:
    """``make()``, remembered under ``key`` (a few most recent); returns (value, was_cached)."""
    if key is None:
        return make(), False
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key], True
    value = make()
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value, False


def clear_cache() -> None:
    """Forget every compiled model (frees memory; the next fit compiles again)."""
    _CACHE.clear()


#: Dims along which a model lays data (and observed values) only, never a free variable
#: or a static shape of its graph (Davidson-Luce's events, a sparse table's observed
#: cells: models.likelihoods.SPARSE_COVERAGE): their lengths are left out of
#: :func:`structure_key`, so one compiled model serves data of any length along them.
DATA_ONLY_DIMS = frozenset({"event", "observed_cell"})


def structure_key(model: pm.Model, tag: Hashable | None) -> Hashable | None:
    """Key under which a compiled ``model`` can be reused for other data of the same shape.

    ``tag`` names the model and its options (everything that shapes the graph
    besides data); all data must live in ``pm.Data`` containers, whose names,
    shapes and dtypes complete the key, with the names of the model's variables
    (data-driven choices such as a parameterisation show there).  A data axis along
    one of :data:`DATA_ONLY_DIMS` is keyed as None: any length.  None disables reuse.
    """
    if tag is None:
        return None
    dims = model.named_vars_to_dims
    shapes = tuple(
        (v.name, tuple(None if dim in DATA_ONLY_DIMS else length
                       for dim, length in zip(dims.get(v.name) or (None,) * v.ndim,
                                              np.shape(v.get_value(borrow=True)),
                                              strict=True)),
         str(v.dtype))
        for v in model.data_vars
    )
    variables = tuple(v.name for v in (*model.free_RVs, *model.deterministics))
    return (tag, shapes, variables)


def data_only_axes(model: pm.Model, name: str) -> tuple[bool, ...]:
    """Which axes of the data ``name`` lie along :data:`DATA_ONLY_DIMS` (none for a name
    that is not a data variable of ``model``, such as a dimension's length)."""
    var = model.named_vars.get(name)
    if var is None or var not in model.data_vars:
        return ()
    dims = model.named_vars_to_dims.get(name) or (None,) * var.ndim
    return tuple(dim in DATA_ONLY_DIMS for dim in dims)


def same_layout(old: np.ndarray, new: np.ndarray, free: tuple[bool, ...] = ()) -> bool:
    """Whether ``new`` can replace ``old`` in a compiled model: the same dtype and number
    of axes, and the same length along every axis not marked in ``free``
    (:func:`data_only_axes`)."""
    if old.dtype != new.dtype or old.ndim != new.ndim:
        return False
    free = free or (False,) * old.ndim
    return all(f or a == b for a, b, f in zip(old.shape, new.shape, free, strict=True))
