"""Fit a suite of benchmarks at once: :func:`fit_benchmarks` (the model: :mod:`models.suite`).

>>> suite = bayesrank.load_benchmarks("suite.npz")            # doctest: +SKIP
>>> post = bayesrank.fit_benchmarks(suite, "rasch", random_seed=1)   # doctest: +SKIP
>>> post.leaderboard()                    # overall: the common skill   # doctest: +SKIP
>>> post.leaderboard(benchmark="gsm8k")   # every model, predicted where not run   # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from threadpoolctl import threadpool_limits

from bayesrank.analysis.suite import SuitePosterior
from bayesrank.data.interrupts import interrupts_not_dropped
from bayesrank.datatree import group, with_groups
from bayesrank.inference.backends import default_progressbar, sample, seed_or_new
from bayesrank.inference.diagnostics import check, summarize
from bayesrank.inference.fitting import (
    _add_observed,
    _choose_sampler,
    _draws,
    _require_all_draws,
)
from bayesrank.inference.options import SamplerOptions
from bayesrank.models import suite as suite_models

__all__ = ["fit_benchmarks"]


def fit_benchmarks(
    benchmarks: Mapping[str, Any],
    model: str = "rasch",
    options: SamplerOptions | None = None,
    **keywords: Any,
) -> SuitePosterior:
    """Fit one suite model to several benchmarks: per-benchmark abilities pooled into a skill.

    Parameters
    ----------
    benchmarks : mapping of str to ResponseData
        Two or more binary benchmarks (``bayesrank.load_benchmarks`` reads them), models
        matched by name; a model need not run every benchmark, but every benchmark must
        share a model with the others (else :class:`~bayesrank.errors.DataError`).
    model : {"rasch", "2pl"}
        The item model of every benchmark (:mod:`models.suite`).
    options : SamplerOptions, optional
        As in :func:`bayesrank.fit` (NUTS; the exact ``"conjugate"`` sampler does not
        apply).  The suite stores no pointwise log-likelihood.
    **keywords
        A field of :class:`SamplerOptions` by name replaces it; ``ability_scale`` goes to
        the model.

    Returns
    -------
    SuitePosterior
        ``leaderboard()`` (overall), ``leaderboard(benchmark=name)``, ``spread()``,
        ``predict(model, benchmark)``; ``diagnostics`` as for a single fit.

    Warns
    -----
    SamplingWarning
        When R-hat > 1.01, bulk/tail ESS < 400, any divergence, or E-BFMI < 0.3.
    """
    opts, model_options = SamplerOptions.split(options, keywords)
    suite_models.check_option("model", model, suite_models.KINDS)
    suite = suite_models.SuiteData.of(benchmarks)
    pymc_model = suite_models.build(suite, kind=model, **model_options)
    sampler = _choose_sampler(model, opts.sampler)
    if sampler == "conjugate":
        raise ValueError("the suite models have no exact sampler; choose nutpie, numpyro or pymc")
    run = opts.resolved(
        sampler=sampler,
        draws=_draws(opts.draws, pymc_model, opts.chains, sampler),
        seed=seed_or_new(opts.random_seed),
        progressbar=default_progressbar() if opts.progressbar is None else opts.progressbar,
        target_accept=0.8 if opts.target_accept is None else opts.target_accept,
    )
    # one BLAS thread: the chains fill the cores, and BLAS threads on the abilities' small
    # dense matrices (models.pooling) spin against them (docs/suite.md, Speed)
    with warnings.catch_warnings(), interrupts_not_dropped(), threadpool_limits(1, "blas"):
        warnings.filterwarnings("ignore", message="Found chain dimension to be longer")
        idata, timings = sample(pymc_model, run)
    _require_all_draws(idata, run.draws)
    idata = _add_observed(idata, pymc_model)
    posterior = group(idata, "posterior")
    posterior.attrs.update({"bayesrank_model": f"suite_{model}", "sampler": sampler,
                            "random_seed": run.random_seed})
    idata = with_groups(idata, posterior=posterior)
    diagnostics = summarize(idata)
    check(diagnostics, model=f"suite {model}", stacklevel=2)
    return SuitePosterior(idata, suite, model, sampler=sampler, pymc_model=pymc_model,
                          diagnostics=diagnostics, timings=timings)
