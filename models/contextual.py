"""Contextual Bradley-Terry and Davidson models of battles with covariates ("style control").

Battle k puts model a_k against model b_k; its covariates (response length, markdown
headers, lists, bold ...) enter as the differences x_k = x_{a_k} - x_{b_k} of the two
sides' values (:func:`bayesrank.from_battles` with ``covariates=``), each divided by its
root mean square over the battles, s_c = sqrt(mean_k x_kc^2), so z_kc = x_kc / s_c.
With log-strengths theta_l and coefficients beta_c:

    theta  ~ ZeroSumNormal(scale)                  default scale 1 (as Bradley-Terry's)
    or, with ``hierarchical=True``,
    sigma  ~ HalfNormal(scale),  theta ~ ZeroSumNormal(sigma)
    beta   ~ Normal(0, beta_scale)                 (covariate), default beta_scale 1
    delta_k = theta_{a_k} - theta_{b_k} + z_k . beta

Bradley-Terry (model ``bradley_terry`` on battles with covariates), decisive battles:

    y_k    ~ Bernoulli(logistic(delta_k))            (observed ``a_wins``, 1: a_k won)

Davidson (model ``davidson``), every battle, ties included:

    log nu ~ Normal(0, 2)
    o_k    ~ Categorical(softmax(delta_k / 2, -delta_k / 2, log nu))
                                                   (observed ``outcomes``: a, b won, tie)

``beta_per_unit = beta / s`` is the same coefficient per unit of the covariate's own
difference.  theta is the strength with style held equal: the leaderboard ranks by it.

Why this form:

* The covariates enter as differences, so swapping a battle's sides turns delta_k into
  -delta_k and P(a wins) into P(b wins): no side is favoured by construction.
* Scaling by the root mean square (not the standard deviation, and without centring)
  keeps that symmetry, since s_c does not change when any battle's sides are swapped,
  and puts every covariate on one scale, so one prior sd fits all of them: a change of
  one typical difference moving the log-odds by more than 2 or 3 is implausible, and
  the default Normal(0, 1) leaves such effects possible.
* Davidson's three logits are Bradley-Terry's (theta_i, theta_j, log nu + (theta_i +
  theta_j) / 2) of :mod:`models.bradley_terry` shifted by -(theta_i + theta_j) / 2, with
  the style term added to theta_i - theta_j: the same model when beta = 0.
* The battles cannot be grouped into pair counts as Bradley-Terry's are (their
  covariates differ battle by battle), so the likelihood has one term per battle; at
  arena scale that sum and its gradient are one call of the fast kernel
  (:mod:`models.fast.battle_cells`, :mod:`models.fast.davidson_battles`).
* The zero sum and default scale of theta, and the prior of log nu, are those of
  :mod:`models.bradley_terry`, so a fit with and without covariates differ only by the
  style term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayesrank.data.pairwise import A_WINS, TIE, PairwiseData
from bayesrank.errors import DataError

from ._common import log_strengths
from .likelihoods import bernoulli_battles, davidson_battles

__all__ = ["ContextualBattles", "contextual_bradley_terry", "contextual_davidson"]

OUTCOMES = ("a_wins", "b_wins", "tie")


@dataclass(frozen=True, eq=False, repr=False)
class ContextualBattles:
    """The battles with covariates as the contextual models read them, prepared once.

    ``a``, ``b`` (battle,) model indices; ``z`` (covariate, battle) the covariate
    differences x_a - x_b divided by ``scale`` (covariate,), their root mean square,
    covariate-major (each covariate's row contiguous, as the fast kernel reads them);
    ``outcome`` (battle,) 0 (a won), 1 (b won) or 2 (tie, both-bad ties included).
    ``coords``: ``llm``, ``covariate`` and ``battle`` (the battles' rows in the data).
    """

    a: np.ndarray
    b: np.ndarray
    z: np.ndarray
    outcome: np.ndarray
    scale: np.ndarray
    coords: dict[str, list]

    @classmethod
    def of(cls, data: PairwiseData, ties: bool) -> ContextualBattles:
        """The battles of ``data`` (all of them with ``ties``, else the decisive ones)."""
        battles = data.battles
        if battles is None or battles.covariates is None:
            raise DataError("the contextual models need battles with covariates: load them "
                            "with bayesrank.from_battles(frame, covariates=[...])")
        rows = np.flatnonzero(battles.outcome < (TIE + 2 if ties else TIE))
        if not rows.size:
            raise DataError("no decisive battle to fit Bradley-Terry to (every battle is a "
                            "tie); fit 'davidson', which models ties")
        x = battles.covariates[rows]
        scale = np.sqrt(np.mean(x * x, axis=0))
        if (scale == 0).any():
            name = battles.covariate_names[int(np.flatnonzero(scale == 0)[0])]
            raise DataError(f"covariate {name!r} is 0 in every battle fitted; drop it")
        coords = {"llm": list(data.models), "covariate": list(battles.covariate_names),
                  "battle": rows.tolist()}
        return cls(battles.a[rows], battles.b[rows], np.ascontiguousarray((x / scale).T),
                   np.minimum(battles.outcome[rows], TIE).astype(np.int64), scale, coords)

    def __repr__(self) -> str:
        return (f"ContextualBattles({len(self.coords['llm'])} models, {self.a.size:,} battles, "
                f"covariates {', '.join(self.coords['covariate'])})")


def _style(battles: ContextualBattles, beta_scale: float):
    """beta ~ Normal(0, beta_scale) (covariate), beta_per_unit, and the battles' data."""
    beta = pm.Normal("beta", 0.0, beta_scale, dims="covariate")
    scale = pm.Data("covariate_scale", battles.scale, dims="covariate")
    pm.Deterministic("beta_per_unit", beta / scale, dims="covariate")
    a = pm.Data("battle_a", battles.a, dims="battle")
    b = pm.Data("battle_b", battles.b, dims="battle")
    z = pm.Data("battle_z", battles.z, dims=("covariate", "battle"))
    return beta, a, b, z


def contextual_bradley_terry(battles: ContextualBattles, scale: float = 1.0,
                             beta_scale: float = 1.0, hierarchical: bool = False) -> pm.Model:
    """Contextual Bradley-Terry, line by line (module docstring)::

        theta  ~ ZeroSumNormal(scale)  (hierarchical: sigma ~ HalfNormal(scale))
        beta   ~ Normal(0, beta_scale)
        y_k    ~ Bernoulli(logistic(theta[a_k] - theta[b_k] + z_k . beta))
    """
    with pm.Model(coords=battles.coords) as model:
        theta = log_strengths(scale, hierarchical)
        beta, a, b, z = _style(battles, beta_scale)
        y = pm.Data("a_won", (battles.outcome == A_WINS).astype(np.int64), dims="battle")
        bernoulli_battles("a_wins", theta, beta, a, b, z, y, dims="battle")
    return model


def contextual_davidson(battles: ContextualBattles, scale: float = 1.0,
                        beta_scale: float = 1.0, hierarchical: bool = False) -> pm.Model:
    """Contextual Davidson, line by line (module docstring)::

        theta   ~ ZeroSumNormal(scale)  (hierarchical: sigma ~ HalfNormal(scale))
        beta    ~ Normal(0, beta_scale)
        log nu  ~ Normal(0, 2)
        delta_k = theta[a_k] - theta[b_k] + z_k . beta
        o_k     ~ Categorical(softmax(delta_k / 2, -delta_k / 2, log nu))
    """
    with pm.Model(coords={**battles.coords, "outcome": list(OUTCOMES)}) as model:
        theta = log_strengths(scale, hierarchical)
        beta, a, b, z = _style(battles, beta_scale)
        log_nu = pm.Normal("log_nu", 0.0, 2.0)
        pm.Deterministic("nu", pt.exp(log_nu))
        o = pm.Data("battle_outcomes", battles.outcome, dims="battle")
        davidson_battles("outcomes", theta, beta, log_nu, a, b, z, o, dims="battle")
    return model
