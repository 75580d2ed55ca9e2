"""Method lookup: rank data with any identifier of :data:`bayesrank.baselines.METHODS`.

The identifiers themselves (rule, family, default arguments) are defined in one table,
:data:`bayesrank.baselines.METHODS`.  :func:`rank` looks one up, merges the caller's
options over the identifier's defaults and calls the rule; :func:`methods` lists the table.
The dependency runs one way: this module imports the baselines, never the reverse.
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings

import numpy as np
import pandas as pd

from bayesrank.baselines import METHODS, MethodSpec
from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PAIRWISE_RULES, PairwiseData
from bayesrank.errors import CovariatesIgnoredWarning, UnknownMethodError
from bayesrank.ranking import Ranking

__all__ = ["METHODS", "MethodSpec", "rank", "methods", "get_method"]


def get_method(identifier: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``identifier`` (raises UnknownMethodError)."""
    try:
        return METHODS[identifier]
    except KeyError:
        close = difflib.get_close_matches(identifier, list(METHODS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownMethodError(
            f"unknown ranking method {identifier!r}{hint} (bayesrank.methods() lists all)"
        ) from None


def rank(
    data: ResponseData | PairwiseData | np.ndarray, method: str = "avg", *,
    ties: str = "competition", **options
) -> Ranking:
    """Rank models with a method identifier.

    Parameters
    ----------
    data : ResponseData, PairwiseData or array_like (L, M, N)
        Pairwise data (battles, or win and tie counts) rank with the identifiers whose
        ``pairwise`` column in :func:`methods` is True.
    method : str
        An identifier from :func:`methods` (e.g. ``"avg"``, ``"elo_tie_draw"``,
        ``"bradley_terry_map"``) or a base rule name (``"elo"``).
    ties : str
        Tie convention of the returned ranks (see :mod:`bayesrank.ranking`).
    **options
        Override the identifier's default arguments.
    """
    spec = get_method(method)
    if getattr(data, "covariate_names", ()):
        warnings.warn(f"{method} ranks the battles' outcomes without their covariates "
                      f"({', '.join(data.covariate_names)}); bayesrank.fit(data, "
                      "'bradley_terry' or 'davidson') holds them equal (style control)",
                      CovariatesIgnoredWarning, stacklevel=2)
    result = dataclasses.replace(spec.function(data, **{**spec.defaults, **options}), method=method)
    return result if ties == "competition" else result.with_ties(ties)  # type: ignore[arg-type]


def methods(*, paper_only: bool = False) -> pd.DataFrame:
    """Every identifier with its family, base rule and default arguments, and whether it
    ranks pairwise data (``pairwise``: it reads only win and tie counts, or battles in
    order; :mod:`bayesrank.data.pairwise`)."""
    rows = [
        {
            "identifier": s.identifier,
            "family": s.family,
            "label": s.label,
            "base": s.base,
            "defaults": dict(s.defaults),
            "in_paper": s.in_paper,
            "pairwise": s.base in PAIRWISE_RULES,
        }
        for s in METHODS.values()
        if s.in_paper or not paper_only
    ]
    return pd.DataFrame(rows)
