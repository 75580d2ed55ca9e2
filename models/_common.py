"""Small helpers shared by the model builders (coords, checks, the log-strengths prior)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError

__all__ = ["coords_of", "response_data", "check_option", "log_strengths", "scoring_model"]


def scoring_model(model):
    """The model to score observations with: pointwise log-likelihoods, predictive draws.

    ``model`` itself, unless its sampled density integrates parameters out and
    leaves their observations out of the likelihood (the Rasch's one-sided
    difficulties, :func:`models.one_sided.collapsed_difficulties`): then a twin with
    the same free variables and deterministics whose likelihood scores every
    observation at the parameters' reported draws.
    """
    twin = getattr(model, "scoring_twin", None)
    return model if twin is None else twin()


def log_strengths(scale: float, hierarchical: bool = False):
    """The log-strengths of the pairwise and setwise models, ``theta`` (llm)::

        theta ~ ZeroSumNormal(scale)                               (sum 0: identified)
        or, ``hierarchical``: sigma ~ HalfNormal(scale), theta ~ ZeroSumNormal(sigma)
    """
    sigma = pm.HalfNormal("sigma", scale) if hierarchical else scale
    return pm.ZeroSumNormal("theta", sigma=sigma, dims="llm")


def answered_draws(draw, n, *params, size=None):
    """``draw(n, *params)`` at the cells with trials, broadcast to ``size``; a cell with no
    trial is 0 without a variate, so a table with most cells missing costs its observed
    cells (a table with every cell observed draws exactly as ``draw`` alone)."""
    if size is None:
        size = np.broadcast_shapes(*map(np.shape, (n, *params)))
    n, *params = (np.broadcast_to(x, size) for x in (n, *params))
    answered = n > 0
    if answered.all():
        return draw(n, *params)
    out = np.zeros(size, dtype=np.int64)
    out[answered] = draw(n[answered], *(x[answered] for x in params))
    return out


def logistic_binomial_draws(rng, n, eta, size=None):
    """Binomial(n, logistic(eta)) draws: the random method of the binomial logit cells, at
    the cells with trials (:func:`answered_draws`).  Where no cell has more than one trial
    (a leaderboard's table) each is one uniform against p, ``[U < p]``: the same
    distribution at a fifth of the cost of :meth:`numpy.random.Generator.binomial`."""
    def draw(n, eta):
        p = 1.0 / (1.0 + np.exp(-eta))
        return (rng.random(p.shape) < p) * n if n.max(initial=0) <= 1 else rng.binomial(n, p)

    return answered_draws(draw, n, eta, size=size)


def response_data(data: Any) -> ResponseData:
    """``data`` as a validated :class:`~bayesrank.ResponseData` (arrays are wrapped)."""
    return as_response_data(data)


def coords_of(data: ResponseData, **extra: Any) -> dict[str, list]:
    """Named coordinates ``llm``, ``question`` and ``category`` of ``data`` plus ``extra``."""
    coords: dict[str, list] = {
        "llm": list(data.models),
        "question": list(data.questions),
        "category": list(range(data.n_categories)),
    }
    coords.update({k: list(v) for k, v in extra.items()})
    return coords


def check_option(name: str, value: Any, allowed: tuple) -> None:
    """Raise a ValueError naming the allowed values when ``value`` is not one of them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def positive_scale(name: str, value: Any) -> float:
    """A finite positive float, or a clear ValueError."""
    x = float(value)
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return x


def binary_only(data: ResponseData, model: str) -> None:
    """Binary-outcome models refuse categorical data with a message naming the way out."""
    if not data.is_binary:
        raise DataError(
            f"model {model!r} needs binary outcomes but the data have {data.n_categories} "
            "categories; reduce them first (e.g. R == C) or fit the 'bayes' model, which "
            "handles categories"
        )
