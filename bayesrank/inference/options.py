"""How to sample: one options object shared by :func:`~bayesrank.fit`, ``fit_many`` and the
back ends.

>>> opts = SamplerOptions(draws=500, random_seed=1)
>>> bayesrank.fit(data, "rasch", opts)                      # doctest: +SKIP
>>> bayesrank.fit(data, "rasch", draws=500, random_seed=1)  # the same fit  # doctest: +SKIP

The keywords of :func:`~bayesrank.fit` that name a field here replace that field of the
options given (or of the defaults); every other keyword is a model option.  Before a back
end runs, :meth:`SamplerOptions.resolved` fills every default (the sampler, draws, warm-up,
seed, progress bar and target acceptance): the back ends read only resolved options.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from bayesrank.checks import check_int

__all__ = ["SamplerOptions"]

#: Warm-up iterations per chain when ``tune`` is not given, by sampler.  nutpie adapts its
#: mass matrix from the gradients as well as the draws and defaults to 400 itself; at 500
#: the 2PL's warm-up took 52-56% of the gradients it took at 1,000 on the five real sets,
#: with the same checks passed (docs/samplers.md).  PyMC and NumPyro adapt from the draws
#: alone: the usual 1,000.
DEFAULT_TUNE = {"nutpie": 500, "pymc": 1000, "numpyro": 1000, "conjugate": 0, "laplace": 0}


@dataclass(frozen=True)
class SamplerOptions:
    """Options of one NUTS run (or of the exact conjugate sampler).

    Parameters
    ----------
    sampler : {"nutpie", "numpyro", "pymc", "conjugate", "laplace"}, optional
        Default: the fastest measured for the model (docs/samplers.md).
        ``"numpyro"`` runs on a GPU when JAX sees one; ``"conjugate"`` draws
        the ``"bayes"`` model's Dirichlet posterior exactly (its default);
        ``"laplace"`` draws the binomial Rasch's or 2PL's Laplace approximation,
        an approximation for leaderboard-sized data on a CPU
        (:mod:`bayesrank.inference.laplace`, docs/scale.md).
    draws : int, optional
        Kept draws per chain.  Default: 1,000 up to 146 parameters, more beyond,
        so that a fit that mixes well fails R-hat <= 1.01 by chance at most one
        time in 20 (1,250 up to 1,950 parameters, 1,500 for the 2PL's 9,111 on
        Reasoning Gym hard; :func:`~bayesrank.inference.diagnostics.default_draws`).
    tune : int, optional
        Warm-up iterations per chain.  Default: 500 for nutpie, whose adaptation reads
        the gradients too (nutpie's own default is 400), 1,000 for PyMC and NumPyro
        (``DEFAULT_TUNE``; measured on the real sets in docs/samplers.md).
    chains : int
        Number of chains.
    random_seed : int, optional
        Same seed, same draws.  Without one a fresh seed is drawn and stored in
        ``posterior.idata.posterior.attrs["random_seed"]``.  One exception: PyTensor
        compiles its Numba code with fast-math flags, so the first fit of a model new to
        the machine (compiled, not loaded from PyTensor's on-disk cache) can differ in the
        last bits of its gradient from later fits, and its chains then drift apart from
        theirs; later fits agree with each other.  ``PYTENSOR_FLAGS=numba__fastmath=False``
        makes the first fit agree too, at 1.4-1.9x the gradient time (docs/samplers.md).
    progressbar : bool, optional
        Default: on in a terminal or notebook, off otherwise.
    target_accept : float, optional
        NUTS step-size adaptation target; raise it (e.g. 0.95) after divergences.
        Default: the model's own (0.8 for every model today; docs/samplers.md).
    log_likelihood : bool
        Store the pointwise log-likelihood as the ``log_likelihood`` group (one value per
        observation unit and draw: L x M x draws for the cell models, 22 GB for 50 x
        14,000 cells x 4,000 draws), for ArviZ functions that read it.  Default False:
        :meth:`~bayesrank.Posterior.loo` and :func:`~bayesrank.compare` make it on
        demand, block by block, with the same results (docs/scale.md).
    """

    sampler: str | None = None
    draws: int | None = None
    tune: int | None = None
    chains: int = 4
    random_seed: int | None = None
    progressbar: bool | None = None
    target_accept: float | None = None
    log_likelihood: bool = False

    def __post_init__(self) -> None:
        if self.draws is not None:
            check_int("draws", self.draws)
        if self.tune is not None:
            check_int("tune", self.tune, minimum=0)
        check_int("chains", self.chains)
        if self.random_seed is not None and int(self.random_seed) < 0:
            raise ValueError(
                f"random_seed must be a non-negative integer, got {self.random_seed!r}")
        if self.target_accept is not None and not 0.0 < float(self.target_accept) < 1.0:
            raise ValueError(f"target_accept must lie in (0, 1), got {self.target_accept!r}")

    @classmethod
    def split(cls, options: SamplerOptions | None,
              keywords: dict[str, Any]) -> tuple[SamplerOptions, dict[str, Any]]:
        """``options`` with the sampler keywords of ``keywords`` applied, and the rest."""
        if options is not None and not isinstance(options, SamplerOptions):
            raise TypeError(f"options must be a SamplerOptions, got {type(options).__name__}; "
                            "pass model options as keywords")
        names = {f.name for f in dataclasses.fields(cls)}
        given = {k: v for k, v in keywords.items() if k in names}
        rest = {k: v for k, v in keywords.items() if k not in names}
        return dataclasses.replace(options or cls(), **given), rest

    def resolved(self, *, sampler: str, draws: int, seed: int, progressbar: bool,
                 target_accept: float) -> SamplerOptions:
        """These options with every default filled in: what a back end runs with."""
        return dataclasses.replace(
            self,
            sampler=sampler,
            draws=int(draws),
            tune=DEFAULT_TUNE[sampler] if self.tune is None else int(self.tune),
            chains=int(self.chains),
            random_seed=int(seed),
            progressbar=bool(progressbar),
            target_accept=float(target_accept),
        )

    @property
    def is_resolved(self) -> bool:
        return None not in (self.sampler, self.draws, self.tune, self.random_seed,
                            self.progressbar, self.target_accept)
