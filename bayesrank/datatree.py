"""Small helpers over ArviZ 1's posterior container, :class:`xarray.DataTree`.

A fit's groups (``posterior``, ``sample_stats``, ``observed_data``,
``log_likelihood``, ``posterior_predictive``) are child nodes of one tree.
Groups are never attached by attribute assignment (on a DataTree that only
sets a Python attribute); these helpers build new trees instead, so a tree
handed to a user is never changed behind their back.
"""

from __future__ import annotations

from collections.abc import Mapping

import arviz as az
import numpy as np
import xarray as xr

__all__ = ["from_arrays", "group", "has_group", "with_groups", "without_groups"]


def from_arrays(
    groups: Mapping[str, Mapping[str, np.ndarray]],
    *,
    coords: Mapping[str, list] | None = None,
    dims: Mapping[str, list[str]] | None = None,
) -> xr.DataTree:
    """A DataTree from ``{group: {variable: array (chain, draw, ...)}}`` (empty groups skipped).

    ``observed_data`` arrays carry no chain/draw dimensions, as ArviZ expects.
    """
    present = {name: dict(values) for name, values in groups.items() if values}
    return az.from_dict(present, coords=dict(coords or {}), dims=dict(dims or {}))


def has_group(tree: xr.DataTree, name: str) -> bool:
    """Whether ``tree`` has the child group ``name``."""
    return name in tree.children


def group(tree: xr.DataTree, name: str) -> xr.Dataset:
    """The variables of group ``name`` as a Dataset (KeyError naming the groups present)."""
    if name not in tree.children:
        raise KeyError(f"no group {name!r}; groups present: {', '.join(tree.children)}")
    return tree[name].to_dataset()


def with_groups(tree: xr.DataTree, **groups: xr.Dataset) -> xr.DataTree:
    """A shallow copy of ``tree`` with the given groups added or replaced."""
    out = tree.copy()
    for name, dataset in groups.items():
        out[name] = xr.DataTree(dataset)
    return out


def without_groups(tree: xr.DataTree, *names: str) -> xr.DataTree:
    """A shallow copy of ``tree`` without the named groups (absent ones ignored)."""
    out = tree.copy()
    for name in names:
        if name in out.children:
            del out[name]
    return out
