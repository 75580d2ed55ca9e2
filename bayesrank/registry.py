"""Method registry: the paper's 72 identifiers as named configurations of rules.

Each family module under :mod:`bayesrank.baselines` registers its identifiers with
:func:`register`.  :func:`rank` looks one up, merges the caller's options over
the identifier's defaults and calls the rule.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData
from bayesrank.errors import UnknownMethodError
from bayesrank.ranking import Ranking

__all__ = ["MethodSpec", "register", "rank", "methods", "get_method"]


@dataclass(frozen=True)
class MethodSpec:
    """One registered identifier."""

    identifier: str
    label: str
    function: Callable[..., Ranking]
    defaults: Mapping[str, Any]
    in_paper: bool

    @property
    def base(self) -> str:
        return self.function.__name__

    @property
    def family(self) -> str:
        """The family module the rule lives in (metrics, paired, luce, ratings, ...)."""
        return self.function.__module__.rsplit(".", 1)[-1]


_REGISTRY: dict[str, MethodSpec] = {}
_LOADED = False


def register(
    identifier: str,
    function: Callable[..., Ranking],
    family: str,
    *,
    in_paper: bool = True,
    **defaults: Any,
) -> None:
    """Register ``identifier`` as ``function`` called with ``defaults``.

    ``family`` is a human-readable label (e.g. the paper's family name); the
    machine-readable family is the module the rule lives in.
    """
    if identifier in _REGISTRY and _REGISTRY[identifier].function is not function:
        raise ValueError(f"method identifier {identifier!r} registered twice")
    _REGISTRY[identifier] = MethodSpec(
        identifier, family, function, MappingProxyType(dict(defaults)), in_paper
    )


def _load() -> None:
    global _LOADED
    if not _LOADED:
        import bayesrank.baselines  # noqa: F401  (registers every family)

        _LOADED = True


def get_method(identifier: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``identifier`` (raises UnknownMethodError)."""
    _load()
    try:
        return _REGISTRY[identifier]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(identifier, list(_REGISTRY), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownMethodError(
            f"unknown ranking method {identifier!r}{hint} (bayesrank.methods() lists all)"
        ) from None


def rank(
    data: ResponseData | np.ndarray, method: str = "avg", *, ties: str = "competition", **options
) -> Ranking:
    """Rank models with a registered method.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    method : str
        An identifier from :func:`methods` (e.g. ``"avg"``, ``"elo_tie_draw"``,
        ``"bradley_terry_map"``) or a base rule name (``"elo"``).
    ties : str
        Tie convention of the returned ranks (see :mod:`bayesrank.ranks`).
    **options
        Override the identifier's default arguments.
    """
    spec = get_method(method)
    result = dataclasses.replace(spec.function(data, **{**spec.defaults, **options}), method=method)
    return result if ties == "competition" else result.with_ties(ties)  # type: ignore[arg-type]


def methods(*, paper_only: bool = False) -> pd.DataFrame:
    """Every identifier with its family, base rule and default arguments."""
    _load()
    rows = [
        {
            "identifier": s.identifier,
            "family": s.family,
            "label": s.label,
            "base": s.base,
            "defaults": dict(s.defaults),
            "in_paper": s.in_paper,
        }
        for s in _REGISTRY.values()
        if s.in_paper or not paper_only
    ]
    return pd.DataFrame(rows)
