"""The inference layer: fit the PyMC models with NUTS and check the fit.

:mod:`.fitting` (:func:`fit`, :func:`fit_many`) builds a model of
:mod:`bayesrank.models` and samples it with a back end of :mod:`.backends`
(nutpie, NumPyro/JAX via :mod:`.jax_nuts`, PyMC, or exact conjugate draws),
reusing compiled models (:mod:`.cache`); :mod:`.diagnostics` checks R-hat,
ESS, divergences and E-BFMI.  :class:`.options.SamplerOptions` carries how to sample from
:func:`fit` and :func:`fit_many` to the back ends.  A fit returns a :class:`bayesrank.Posterior`.
"""

from bayesrank.inference.fitting import fit, fit_many
from bayesrank.inference.options import SamplerOptions

__all__ = ["SamplerOptions", "fit", "fit_many"]
