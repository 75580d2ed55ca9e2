"""Per-question effects of the item-response models, pooled across questions.

:func:`pooled` draws difficulties (Rasch) or intercepts (2PL, 3PL) i.i.d. from
Normal(location, scale): informed questions centred, one-sided ones (solved by
no model, or by every model in every trial) non-centred, or, for the 2PL and
3PL, measured from the wall their data put up (:func:`wall_intercepts`).  Used by
:func:`models.irt.item_response`; the one-sided Rasch difficulties can also be
integrated out (:mod:`models.one_sided`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable
from scipy.special import gammaln

from .wall_map import wall_map

__all__ = ["Walls", "floors", "pooled", "solve_rates", "wall_intercepts", "wall_models"]


class Walls(NamedTuple):
    """What a one-sided 2PL/3PL intercept's wall depends on: slopes a (M,) and abilities (L,)."""

    slope: TensorVariable
    ability: TensorVariable
    models: np.ndarray  # (2, L) one-hot: the best model (row 0), the worst (row 1)


def solve_rates(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Each model's overall solve rate sum_m k_lm / sum_m n_lm (0 for a model without trials)."""
    return k.sum(axis=1) / np.maximum(n.sum(axis=1), 1)


def wall_models(k: np.ndarray, n: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """One-hot rows of the models with the highest and the lowest solve rate, (2, L).

    ``among``: only these models (bool, L) can be walls.
    """
    rate = solve_rates(k, n)
    if among is not None:
        rate = np.where(among, rate, np.nan)
    L = k.shape[0]
    return np.stack([np.arange(L) == np.nanargmax(rate),
                     np.arange(L) == np.nanargmin(rate)]).astype(float)


def wall_intercepts(raw, location, scale, side, walls: Walls):
    """One-sided 2PL/3PL intercepts as their distance from the wall, and that map's log density.

    A question no model solves needs a_m theta_l + beta_m well below 0 for
    every model, which the best model's ability bounds: its intercept's
    conditional posterior is the prior N(mu, s^2) cut off by a soft wall at
    beta_w = -a_m theta_best (the worst model's for a question every model
    solves, from below).  The wall is about one logit wide, the prior s wide:
    on Reasoning Gym hard s is 32 (the one-sided questions lie in both tails
    of one normal), so in the non-centred z = (beta - mu) / s the wall is 1/32
    wide and NUTS needed step size 0.062, 63 leapfrog steps per draw (R-hat
    1.0126 on these intercepts; with this map 0.127, 31 steps, R-hat 1.0085,
    2.5x less wall time; docs/samplers.md, sixth round).  Here
    the free coordinate v of such a question is mapped to

        z = z_w + side h(v),  z_w = (beta_w - mu) / s,  h(v) = -softplus(-v) + v / s

    (``side`` +1 for never solved, -1 for always solved), so a_m theta_ref +
    beta_m = side s h(v): about s v logits on the open side (where only the
    prior acts, at unit scale in z) and about v past the wall, one logit per
    unit.  h is
    strictly increasing onto the real line, so for fixed other parameters v
    -> beta is a bijection; the density of v is phi(z) h'(v) with h'(v) =
    logistic(-v) + 1 / s, the same joint posterior of beta and the rest.

    Returns z per question and the log density of v relative to raw's own
    N(0, 1) prior, log phi(z) + log h'(v) - log phi(v), for the questions with
    ``side`` != 0 (elsewhere z = raw and the term is 0), computed by
    :class:`models.wall_map.WallMap` in one pass.
    """
    best, worst = _wall_rows(walls.models)
    reference = pt.where(side > 0, pt.dot(best, walls.ability), pt.dot(worst, walls.ability))
    return wall_map(raw, location, scale, walls.slope, reference, side)


def _wall_rows(models: np.ndarray):
    """The best and the worst model's one-hot rows, as data of the current model."""
    data = pm.modelcontext(None).named_vars.get("wall_models")
    if data is None:
        data = pm.Data("wall_models", models)
    return data[0], data[1]


def pooled(name: str, location, scale_name: str, split, uninformed_scale: bool = False,
           uninformed=None, walls: Walls | None = None, shift=None):
    """Item effects i.i.d. Normal(location, scale), scale ~ HalfNormal(2.5).

    The questions that ``split.centred`` marks are sampled as they are (the
    data pin each down); the others non-centred, location + scale z with z ~
    N(0, 1): an uninformed question's posterior is the prior's tail, whose
    width scales with the learnt scale, a funnel when centred.  One free
    vector ``{name}_raw`` holds both kinds, told apart by masks that are data
    (:class:`models.irt.QuestionSplit`), so the graph does not depend on which
    questions are which.

    ``uninformed_scale``: the uninformed questions get their own scale
    ``{scale_name}_uninformed`` ~ HalfNormal(2.5) (the 2PL and 3PL; :mod:`models.irt`)
    where ``split.own_scale``; otherwise they share ``scale`` and that variable keeps its
    prior (it is in the graph either way, so that datasets of one shape share one graph).
    ``walls``: with ``uninformed_scale``, the one-sided questions' z is
    measured from their wall (:func:`wall_intercepts`; the Potential
    ``one_sided_{name}`` carries that map's density).
    ``shift`` (M,): the centred questions' free coordinate is effect + shift, i.e.
    ``{name}_raw`` ~ Normal(location + shift, scale) there (:func:`floors`).
    ``uninformed(raw, location, scale)``: the uninformed questions' reported
    values from their z (:func:`models.one_sided.collapsed_difficulties`); then
    the result is the pair (the plain map, unnamed; the reported Deterministic).
    """
    scale = pm.HalfNormal(scale_name, 2.5)
    centred = split.data("centred") > 0
    shift = 0.0 if shift is None else shift
    raw = pm.Normal(
        f"{name}_raw",
        pt.where(centred, location + shift, 0.0),
        pt.where(centred, scale, 1.0),
        dims="question",
    )
    outside, z = scale, raw
    if uninformed_scale:
        own = pt.where(split.data("own_scale")[0] > 0,
                       pm.HalfNormal(f"{scale_name}_uninformed", 2.5), scale)
        outside = pt.where(split.data("informed") > 0, scale, own)
        if walls is not None:
            z, log_density = wall_intercepts(raw, location, own, split.data("side"), walls)
            pm.Potential(f"one_sided_{name}", log_density.sum())
    plain = pt.where(centred, raw - shift, location + outside * z)
    if uninformed is None:
        return pm.Deterministic(name, plain, dims="question")
    own = uninformed(raw, location, scale)
    reported = pt.where(split.data("informed") > 0, plain, own)
    return plain, pm.Deterministic(name, reported, dims="question")


def floors(name: str, guessing: tuple[float, float], share, level, centred):
    """3PL guessing floors c_m ~ Beta(alpha, beta) i.i.d., sampled by their share of p_m(0).

    For a centred (informed) question the free coordinates are u_m = beta_m +
    softplus(w_m) (``level``: the intercepts' raw coordinate, shifted in :func:`pooled`)
    and w_m (``share``), with

        c_m = logistic(u_m) logistic(w_m),   beta_m = u_m - softplus(w_m),

    i.e. u_m = logit p_m(0), p_m(0) = c_m + (1 - c_m) logistic(beta_m) the solve
    probability at the mean ability, and w_m the log-odds of the floor's share c_m / p_m(0).
    Why: a question that does not separate the models (AlpacaEval's wins: one won by 25 of
    52 models, half of the weaker and half of the stronger) is explained by a floor near its
    win rate with the curve pushed out of the way (beta_m -> -infinity) as well as by a flat
    curve and no floor; in (logit c, beta) that ridge bends, in (u, w) it runs along w at
    the p_m(0) the data fix, which a diagonal mass matrix follows. The map (u, w) -> (logit
    c, beta) has |Jacobian| 1, so the density is the Beta prior of c times c (1 - c) (the
    log-odds Jacobian) with the intercepts' prior at beta_m: the same
    model.  Elsewhere c_m = logistic(w_m).  Returns c (a Deterministic ``name``).
    """
    log_c = -pt.softplus(-share) - centred * pt.softplus(-level)
    log1m_c = pt.log1mexp(log_c)
    alpha, beta = guessing
    log_norm = gammaln(alpha) + gammaln(beta) - gammaln(alpha + beta)
    pm.Potential(f"{name}_prior", (alpha * log_c + beta * log1m_c - log_norm).sum())
    return pm.Deterministic(name, pt.exp(log_c), dims="question")
