"""The analysis layer: decisions from a posterior, never changing it.

:mod:`.posterior` (:class:`Posterior`, :class:`NormalPosterior`,
:func:`closed_form`) with rank statistics from :mod:`.rank_stats`;
posterior-predictive checks (:mod:`.ppc`) and PSIS-LOO comparison
(:mod:`.comparison`) return new objects.
"""

from bayesrank.analysis.posterior import NormalPosterior, Posterior, RankAnalytics, closed_form

__all__ = ["NormalPosterior", "Posterior", "RankAnalytics", "closed_form"]
