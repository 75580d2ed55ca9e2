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

__all__ = ["cached", "clear_cache", "structure_key"]

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


def structure_key(model: pm.Model, tag: Hashable | None) -> Hashable | None:
    """Key under which a compiled ``model`` can be reused for other data of the same shape.

    ``tag`` names the model and its options (everything that shapes the graph
    besides data); all data must live in ``pm.Data`` containers, whose names,
    shapes and dtypes complete the key, with the names of the model's variables
    (data-driven choices such as a parameterisation show there).  None
    disables reuse.
    """
    if tag is None:
        return None
    shapes = tuple(
        (v.name, tuple(np.shape(v.get_value(borrow=True))), str(v.dtype)) for v in model.data_vars
    )
    variables = tuple(v.name for v in (*model.free_RVs, *model.deterministics))
    return (tag, shapes, variables)
