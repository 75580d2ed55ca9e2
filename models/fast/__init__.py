"""bayesrank's fast kernels: everything under the models that is there for speed alone.

The models (:mod:`models.irt`, :mod:`models.bradley_terry`, ...) never call these modules
directly: they call the likelihoods of :mod:`models.likelihoods` and the transforms of
:mod:`models.transforms`, which use these kernels when the fast path is on
(``models.build(..., fast=True)``, the default) and PyMC's own distributions and
PyTensor's operations when it is off.  ``tests/test_fast_path.py`` holds the two equal
(log-density and gradient) on the real sets' shapes.

===============================  ===================================================
module                           what it computes
===============================  ===================================================
:mod:`.rasch_cells`              the Rasch's binomial cells, log-pmf and score (Op)
:mod:`.slope_cells`              the 2PL's binomial cells, and their sum in one pass
                                 (Ops and the graph rewrite that uses the sum), over
                                 the whole table or its observed cells only
:mod:`.beta_binomial`            beta-binomial cells around a curve with a floor, at
                                 the logits, at a theta + beta, and their sum in one
                                 pass, over the whole table or its observed cells
                                 (Ops, rewrite)
:mod:`._beta_binomial_loops`     those Ops' Numba loops (the curve vectorised)
:mod:`.cell_table`               a sparse table's observed cells laid into the table,
                                 and the sum that skips it (Op, rewrite; the gammaln
                                 form's beta-binomial above 16 trials per cell)
:mod:`.wall_map`                 the one-sided intercepts' wall map and its log-Jacobian (Op)
:mod:`.floors`                   the 3PL's floors, intercept shift and log-Jacobian (Op)
:mod:`.battle_cells`             the contextual Bradley-Terry's battles, log-pmf and
                                 score, and their sum in one pass (Ops, rewrite)
:mod:`.davidson_battles`         the same for the contextual Davidson's battles
:mod:`.tie_sizes`                the Davidson-Luce normaliser's sums over winner sets
                                 of each size and their gradient (Ops, rewrite)
:mod:`._vector_math`             e^x, log1p and log that LLVM vectorises (Numba)
:mod:`._backends`                the Ops' Numba and JAX registration, cache keys
===============================  ===================================================

Every Op has a NumPy ``perform``, a Numba implementation (nutpie) and a JAX one
(NumPyro).  Measurements of each are in ``docs/samplers.md``.
"""
