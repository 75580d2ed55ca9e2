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
  prior on abilities (Mislevy, 1986); Newton / Fisher scoring with analytic derivatives;
  item difficulties are centred (``sum_m b_m = 0``), discriminations are ``exp`` of free
  parameters with a weak ridge on ``log a`` (``reg_discrimination``; it also fixes the 2PL
  scale), guessing ``c = guessing_upper * sigmoid(gamma)`` with a ridge on ``gamma``.
- :func:`fit_rasch_mml` (:mod:`.mml`, rule ``rasch_mml``) — marginal ML by EM over
  Gauss–Hermite quadrature (Bock & Aitkin, 1981) with EAP abilities and posterior quantiles
  of each model's own posterior (:mod:`._person_kernel`; not on the EM's grid, as scorio).
- :func:`fit_growth_irt` (:mod:`.dynamic`, rule ``dynamic_irt``) — longitudinal Rasch model
  with per-model linear trend over the (ordered) trial axis.

Non-existent estimates
----------------------
Items that every model solves (or none does) carry no information about
abilities; their difficulty is ``-inf`` (``+inf``), so they cannot enter the
centring ``sum_m b_m = 0``: every fit sets them aside and reports infinite
difficulty (for JML this is exactly the limit of the likelihood maximiser).
JML estimates are finite only when the data are not separated.  For the
binomial Rasch model the exact condition is Ford's (1957) condition on the
bipartite "beats" graph (model l beats item m if ``k_lm > 0``, item m beats
model l if ``k_lm < n_lm``): it must be strongly connected.  Models that solve
every informative trial (or none) have infinite JML ability, and under 3PL
guessing a weak model's ability can run off to ``-inf``: both raise
:class:`NotIdentifiedError` (use the MAP or MML variants, whose abilities are
always finite).

Layout: :mod:`._common` (counts, informative items, :class:`IrtFit`), :mod:`._newton`
(the block-structured Newton solver, for the growth model), :mod:`._xpl_kernel` (the
xPL objective and its Newton stages, compiled, one problem at a time), :mod:`._mml_kernel`
and :mod:`._person_kernel` (the MML EM and its person scores, compiled), then one module
per estimator.  The xPL and MML
fits are written over a leading batch axis (:mod:`.xpl_batch`,
:func:`.mml.fit_rasch_mml_batch`); the single-fit functions call them with one problem,
so the study's stacked rules (:mod:`bayesrank.study.stack_irt`) reproduce them exactly.
The ``*_map`` identifiers are the JML rules called with ``prior=1.0``.
"""

from bayesrank.baselines.irt._common import IrtFit
from bayesrank.baselines.irt._newton import newton_step as _newton_step  # noqa: F401
from bayesrank.baselines.irt.dynamic import dynamic_irt, fit_growth_irt
from bayesrank.baselines.irt.mml import (
    MmlFit,
    ability_posterior,
    fit_rasch_mml,
    normal_quadrature,
    posterior_quantile,
    rasch_mml,
)
from bayesrank.baselines.irt.xpl import (  # the private names are used by the tests
    _Layout,  # noqa: F401
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
