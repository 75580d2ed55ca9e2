"""Item response theory (IRT) point estimators on binomial counts.

Every model is an examinee with ability ``theta_l``, every question an item.
Trials are i.i.d. given the parameters, so the likelihood depends on the data
only through the success counts ``k_lm`` out of ``n_lm`` observed trials
(:attr:`Reductions.successes`, :attr:`Reductions.trials`; paper App. "Item
Response Theory (IRT) Methods", binomial reduction):

.. math::
    k_{lm} \\sim \\mathrm{Binomial}(n_{lm}, p_{lm}),\\qquad
    p_{lm} = c_m + (1 - c_m)\\,\\sigma\\big(a_m(\\theta_l - b_m)\\big)

with ``a = 1, c = 0`` (Rasch / 1PL), ``c = 0`` (2PL) or all three (3PL).

Estimators
----------
- :func:`fit_irt` (:mod:`.xpl`, rules ``rasch``, ``rasch_2pl``, ``rasch_3pl``) — joint
  maximum likelihood (JML, ``prior_var=None``) or MAP with a Gaussian ``N(0, prior_var)``
  ability prior (Mislevy, 1986), by Newton's method with analytic derivatives.
- :func:`fit_rasch_mml` (:mod:`.mml`, rule ``rasch_mml``) — marginal ML by EM over
  Gauss–Hermite quadrature (Bock & Aitkin, 1981), scored by each model's own posterior.
- :func:`fit_growth_irt` (:mod:`.dynamic`, rule ``dynamic_irt``) — longitudinal Rasch model
  with per-model linear trend over the (ordered) trial axis.

Non-existent estimates
----------------------
Items that every model solves (or none does) carry no information about abilities; every
fit sets them aside with infinite difficulty (for JML exactly the limit of the likelihood
maximiser).  JML estimates are finite only when the data are not separated: for the
binomial Rasch model exactly when Ford's (1957) bipartite "beats" graph (model l beats
item m if ``k_lm > 0``, item m beats model l if ``k_lm < n_lm``) is strongly connected.
Otherwise, or when 3PL guessing lets a weak model's ability run off to ``-inf``, the fits
raise :class:`NotIdentifiedError` (the MAP and MML variants are always finite).

Layout: :mod:`._common` (counts, :class:`IrtFit`), :mod:`._newton` (the growth model's
block-structured Newton solver), compiled kernels (:mod:`._xpl_kernel`, :mod:`._mml_kernel`,
:mod:`._person_kernel`), then one module per estimator.  The xPL and MML fits are written
over a leading batch axis (:mod:`.xpl_batch`, :func:`.mml.fit_rasch_mml_batch`), which the
single-fit functions call with one problem.
"""

from bayesrank.baselines.irt._common import IrtFit
from bayesrank.baselines.irt.dynamic import dynamic_irt, fit_growth_irt
from bayesrank.baselines.irt.mml import (
    MmlFit,
    ability_posterior,
    fit_rasch_mml,
    normal_quadrature,
    posterior_quantile,
    rasch_mml,
)
from bayesrank.baselines.irt.xpl import (
    fit_irt,
    rasch,
    rasch_2pl,
    rasch_3pl,
)

__all__ = [
    "IrtFit",
    "MmlFit",
    "fit_irt",
    "fit_rasch_mml",
    "fit_growth_irt",
    "normal_quadrature",
    "ability_posterior",
    "posterior_quantile",
    "rasch",
    "rasch_2pl",
    "rasch_3pl",
    "rasch_mml",
    "dynamic_irt",
]
