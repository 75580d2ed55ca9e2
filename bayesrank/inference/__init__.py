"""The inference layer: fit the PyMC models with NUTS and check the fit.

:mod:`.fitting` (:func:`fit`, :func:`fit_many`) builds a model of
:mod:`bayesrank.models` and samples it with a back end of :mod:`.backends`
(nutpie, NumPyro/JAX via :mod:`.jax_nuts`, PyMC, or exact conjugate draws),
reusing compiled models (:mod:`.cache`); :mod:`.diagnostics` checks R-hat,
ESS, divergences and E-BFMI.  A fit returns a :class:`bayesrank.Posterior`.
"""

from bayesrank.inference.fitting import fit, fit_many

__all__ = ["fit", "fit_many"]
