"""Fit the Bayesian ranking models: :func:`fit` one dataset, :func:`fit_many` a batch.

>>> post = bayesrank.fit(data, "rasch", random_seed=1)      # doctest: +SKIP
>>> post.theta.mean(("chain", "draw"))                        # doctest: +SKIP

Every fit returns a :class:`~bayesrank.Posterior` whose InferenceData holds
``posterior``, ``sample_stats`` and ``observed_data`` (and ``log_likelihood``, pointwise
per model-question cell for the Bayes@N and IRT models, when asked: ``log_likelihood=True``;
otherwise PSIS-LOO makes it block by block on demand), and
whose ``diagnostics`` frame holds R-hat, bulk/tail ESS, divergences and E-BFMI;
a :class:`~bayesrank.inference.diagnostics.SamplingWarning` names whatever failed.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Hashable, Sequence
from importlib.util import find_spec
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from bayesrank.analysis.posterior import INDEPENDENT_DRAWS, Posterior
from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.interrupts import interrupts_not_dropped
from bayesrank.data.pairwise import PairwiseData
from bayesrank.datatree import from_arrays, group, has_group, with_groups
from bayesrank.inference.backends import (
    default_progressbar,
    require,
    sample,
    sample_batch,
    seed_or_new,
)
from bayesrank.inference.cache import structure_key
from bayesrank.inference.diagnostics import SamplingWarning, check, default_draws, summarize
from bayesrank.inference.log_likelihood import pointwise_log_likelihood
from bayesrank.inference.options import SamplerOptions
from bayesrank.models import get_model, scoring_model

__all__ = ["fit", "fit_many", "DEFAULT_SAMPLER", "SamplerOptions"]

# Chosen by measurement on the 20 x 120 x 80 example (docs/samplers.md).
DEFAULT_SAMPLER = {
    "bayes": "conjugate",
    "rasch": "nutpie",
    "2pl": "nutpie",
    "3pl": "nutpie",
    "bradley_terry": "nutpie",
    "davidson": "nutpie",
    "davidson_luce": "nutpie",
}
_FALLBACK = ("nutpie", "numpyro", "pymc")


def _choose_sampler(model: str, sampler: str | None) -> str:
    if sampler is not None:
        require(sampler)
        return sampler
    preferred = DEFAULT_SAMPLER.get(model, "nutpie")
    for candidate in (preferred, *_FALLBACK):
        try:
            require(candidate)
            return candidate
        except ImportError:
            continue
    raise AssertionError("pymc is always installed")  # pragma: no cover


def _jax_sees_a_gpu() -> bool:
    if find_spec("jax") is None:
        return False
    import jax

    return jax.default_backend() != "cpu"


def _batch_sampler(model: str, sampler: str | None) -> str:
    """``sampler``, else NumPyro's vectorised batch on a GPU and the model's default on a CPU."""
    if sampler is not None:
        require(sampler)
        return sampler
    if _jax_sees_a_gpu() and find_spec("numpyro") is not None:
        return "numpyro"
    return _choose_sampler(model, None)


#: The number of free coordinates of each model structure fitted in this process
_FREE_SIZES: dict[Hashable, int] = {}


def _free_size(model: pm.Model, key: Hashable | None) -> int:
    """The number of coordinates NUTS samples, remembered by structure ``key``: PyMC's
    ``eval_rv_shapes`` compiles a function of the transforms' graphs (docs/samplers.md),
    which a second fit of the same structure need not pay again.  Kept apart from
    :func:`~bayesrank.inference.cache.cached`, whose few entries hold compiled models that
    an integer per structure would push out."""
    if key in _FREE_SIZES:
        return _FREE_SIZES[key]
    shapes = model.eval_rv_shapes()
    size = sum(int(np.prod(shapes[v.name])) for v in model.value_vars)
    if key is not None:
        _FREE_SIZES[key] = size
    return size


def _draws(draws: int | None, model: pm.Model, chains: int, sampler: str,
           key: Hashable | None = None) -> int:
    """``draws``, or by default enough that chance does not fail R-hat (:func:`default_draws`).

    Exact i.i.d. draws (the conjugate sampler) have no R-hat to fail: 1,000.
    """
    if draws is not None:
        return int(draws)
    if sampler in INDEPENDENT_DRAWS:
        return 1000
    return default_draws(_free_size(model, key), chains)


def _resolve(opts: SamplerOptions, spec: Any, model: pm.Model, sampler: str,
             key: Hashable | None = None) -> SamplerOptions:
    """``opts`` with every default filled in for ``model`` and ``sampler``."""
    return opts.resolved(
        sampler=sampler,
        draws=_draws(opts.draws, model, opts.chains, sampler, key),
        seed=seed_or_new(opts.random_seed),
        progressbar=default_progressbar() if opts.progressbar is None else opts.progressbar,
        target_accept=_target_accept(spec, opts.target_accept),
    )


def _require_all_draws(idata: xr.DataTree, draws: int) -> None:
    """Raise KeyboardInterrupt when a sampler stopped early (Ctrl-C returns a partial trace).

    nutpie and PyMC catch the interrupt and hand back the draws made so far (none
    during warm-up); those would pass for a finished fit, so the interrupt goes on.
    """
    kept = group(idata, "posterior").sizes.get("draw", 0)
    if kept < draws:
        raise KeyboardInterrupt(f"sampling interrupted after {kept} of {draws} draws")


def _target_accept(spec: Any, target_accept: float | None) -> float:
    return spec.target_accept if target_accept is None else float(target_accept)


def _tag(spec: Any, options: dict[str, Any]) -> tuple | None:
    """What besides data shapes determines a model's graph: every model keeps its data in
    ``pm.Data`` (:func:`~bayesrank.inference.cache.structure_key`)."""
    return (spec.name, repr(sorted({**spec.defaults, **options}.items())))


def _options_json(options: dict[str, Any]) -> str:
    """Model options as JSON (arrays as lists): stored with the draws, read by load_posterior."""
    import json

    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            return value.tolist()
        raise TypeError(value)

    try:
        return json.dumps(options, sort_keys=True, default=plain)
    except TypeError:  # e.g. a callable: the fit stands, a reload cannot rebuild the model
        return ""


def _add_observed(idata: xr.DataTree, model: pm.Model) -> xr.DataTree:
    from pymc.backends.arviz import coords_and_dims_for_inferencedata, find_observations

    coords, dims = coords_and_dims_for_inferencedata(model)
    observed = {k: np.asarray(v) for k, v in find_observations(model).items()}
    observed_tree = from_arrays({"observed_data": observed}, coords=coords, dims=dims)
    groups = {"observed_data": group(observed_tree, "observed_data")}
    constant = _prior_data(model)
    if constant:
        constant_tree = from_arrays({"constant_data": constant}, coords=coords, dims=dims)
        groups["constant_data"] = group(constant_tree, "constant_data")
    return with_groups(idata, **groups)


def _prior_data(model: pm.Model) -> dict[str, np.ndarray]:
    """The ``pm.Data`` that some free variable's prior reads (e.g. the IRT question masks).

    Kept as ``constant_data`` so ``pm.sample_posterior_predictive`` sees them
    unchanged and keeps the posterior draws of the variables they shape
    (without the group it cannot tell, and warns that it froze them).  The
    data only the likelihood reads (counts, log C(n, k)) stay out: large, and
    already in ``observed_data`` or derived from it.
    """
    from pytensor.graph.traversal import ancestors

    upstream = set(ancestors(model.free_RVs))
    return {v.name: np.asarray(v.get_value()) for v in model.data_vars if v in upstream}


def _finish(
    idata: xr.DataTree,
    data: ResponseData,
    name: str,
    pymc_model: pm.Model,
    observed_var: str,
    sampler: str,
    seed: int,
    timings: dict[str, float],
    warn: bool = True,
    model_options: dict[str, Any] | None = None,
) -> Posterior:
    idata = _add_observed(idata, pymc_model)
    posterior = group(idata, "posterior")
    # the options the model was built with, so a saved posterior can rebuild it (ppc, LOO)
    posterior.attrs.update({"bayesrank_model": name, "sampler": sampler, "random_seed": seed,
                            "model_options": _options_json(model_options or {})})
    idata = with_groups(idata, posterior=posterior)
    # i.i.d. draws: ESS is the number of draws by construction, nothing to estimate
    diagnostics = (summarize(idata, ["theta"], independent=True)
                   if sampler in INDEPENDENT_DRAWS else summarize(idata))
    if warn:
        check(diagnostics, model=name, stacklevel=4)
    return Posterior(
        idata,
        data,
        name,
        sampler=sampler,
        pymc_model=pymc_model,
        observed_var=observed_var,
        diagnostics=diagnostics,
        timings=timings,
    )


def fit(
    data: ResponseData | Any,
    model: str,
    options: SamplerOptions | None = None,
    **keywords: Any,
) -> Posterior:
    """Fit a Bayesian ranking model with NUTS.

    Parameters
    ----------
    data : ResponseData, PairwiseData or array_like (L, M, N)
        Pairwise data (battles, win and tie counts) fit ``"bradley_terry"`` and
        ``"davidson"``, which read only the counts; battles loaded with covariates
        (``from_battles(frame, covariates=[...])``) fit their contextual ("style
        control") forms, per battle, with coefficients ``beta`` (:mod:`models.contextual`).
    model : str
        ``"bayes"``, ``"rasch"``, ``"2pl"``, ``"3pl"``, ``"bradley_terry"``,
        ``"davidson"`` or ``"davidson_luce"`` (see :mod:`bayesrank.models`).
    options : SamplerOptions, optional
        How to sample: sampler, draws, tune, chains, random_seed, progressbar,
        target_accept, log_likelihood (:class:`~bayesrank.inference.options.SamplerOptions`
        documents each and its default).
    **keywords
        A field of :class:`SamplerOptions` by name (``draws=500``) replaces that field of
        ``options``; every other keyword goes to the model builder (e.g. ``use_R0=True``
        for IRT, ``ties="davidson"`` for Bradley-Terry).

    Returns
    -------
    Posterior
        Draws of ``theta`` (larger is better) and everything else; its
        ``diagnostics`` frame; ``timings`` (``compile``, ``sample``, and
        ``log_likelihood`` seconds when the pointwise log-likelihood was computed
        after sampling, :func:`~bayesrank.inference.log_likelihood.pointwise_log_likelihood`;
        NumPyro and the exact sampler compute it with the draws, inside ``sample``).

    Warns
    -----
    SamplingWarning
        When R-hat > 1.01, bulk/tail ESS < 400, any divergence, or E-BFMI < 0.3.
    """
    opts, model_options = SamplerOptions.split(options, keywords)
    spec = get_model(model)
    d = (data.require_model(model) if isinstance(data, PairwiseData)
         else as_response_data(data))
    d.require_models(f"fit(..., {model!r})")
    pymc_model = spec.build(d, **model_options)
    observed_var = spec.observed_var(pymc_model)
    key = structure_key(pymc_model, _tag(spec, model_options))
    run = _resolve(opts, spec, pymc_model, _choose_sampler(model, opts.sampler), key)
    with warnings.catch_warnings(), interrupts_not_dropped():
        # ArviZ's guess that dims are misnamed when an interrupted run kept fewer draws than
        # chains; _require_all_draws below reports the interrupt itself
        warnings.filterwarnings("ignore", message="Found chain dimension to be longer")
        idata, timings = sample(
            pymc_model,
            run,
            log_likelihood=(observed_var,) if run.log_likelihood else (),
            key=key,
            exact_draws=spec.exact_draws,
        )
    _require_all_draws(idata, run.draws)
    if run.sampler == "laplace":  # its draws are of theta and b: checks score those
        from bayesrank.inference.laplace import approximated_model

        pymc_model = approximated_model(pymc_model)
    if run.log_likelihood and not has_group(idata, "log_likelihood"):
        import time

        t0 = time.perf_counter()
        idata = with_groups(idata, log_likelihood=pointwise_log_likelihood(
            group(idata, "posterior"), scoring_model(pymc_model), observed_var, key))
        timings["log_likelihood"] = time.perf_counter() - t0
    return _finish(idata, d, model, pymc_model, observed_var, run.sampler, run.random_seed,
                   timings, model_options=model_options)


def fit_many(
    datasets: Sequence[ResponseData | Any],
    model: str,
    options: SamplerOptions | None = None,
    *,
    warn: bool = True,
    **keywords: Any,
) -> list[Posterior]:
    """Fit one model to many datasets, as one vectorised JAX program on a GPU.

    With ``sampler="numpyro"`` the datasets' sufficient statistics are stacked
    and every chain of every dataset runs NumPyro's NUTS under ``jax.vmap`` in
    one compiled program: what a GPU runs in parallel.  On a CPU that batch is
    slower than fitting the datasets one by one with nutpie, reusing the
    compiled model (3.4 s against 2.6 s per dataset for 16 Rasch fits of the
    20 x 30 x 1 example, docs/samplers.md), so the default picks by device.
    Meant for protocols that fit many subsampled datasets (the paper's
    model-pool and N = 1 experiments).

    Parameters
    ----------
    datasets : sequence of ResponseData or array_like
        For the vectorised batch, all with the same (L, M, N), categories and
        R0 shape.
    model : str
    options : SamplerOptions, optional
        As in :func:`fit` (the default draws from the first dataset's model), with the
        sampler chosen per batch:
        ``"numpyro"``: one vectorised program (every model except
        ``davidson_luce``, whose event list differs between datasets); any
        other: :func:`fit` per dataset.  Default: ``"numpyro"`` when JAX sees a
        GPU, else the model's default sampler per dataset.  ``progressbar``:
        one bar on stderr for the whole batch (all chains of all datasets):
        iterations of warm-up then sampling, divergences so far, elapsed time.
        Default: on in a terminal or notebook, off otherwise.  Same draws either way.
    warn : bool
        Emit a SamplingWarning for each dataset whose fit fails the checks
        (``Posterior.diagnostics`` is filled either way).
    **keywords
        Fields of :class:`SamplerOptions` by name, and model options, as in :func:`fit`.

    Returns
    -------
    list of Posterior
        One per dataset, in order.  From the vectorised batch each has
        ``timings`` with the batch's compile and sampling seconds and
        ``batch_size``; per-dataset seeds are drawn from ``random_seed``.
    """
    opts, model_options = SamplerOptions.split(options, keywords)
    spec = get_model(model)
    if not len(datasets):
        raise ValueError("fit_many needs at least one dataset")
    chosen = _batch_sampler(model, opts.sampler)
    if chosen != "numpyro":
        seeds = np.random.SeedSequence(seed_or_new(opts.random_seed)).generate_state(
            len(datasets))
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore", SamplingWarning)
            return [
                fit(d, model, dataclasses.replace(opts, sampler=chosen, random_seed=int(s)),
                    **model_options)
                for d, s in zip(datasets, seeds, strict=True)
            ]
    if not spec.batchable:
        raise ValueError(f"model {model!r} cannot be fitted in a batch; call fit() per dataset")
    data = [as_response_data(x) for x in datasets]
    for d in data:
        d.require_models(f"fit_many(..., {model!r})")
    models = [spec.build(d, **model_options) for d in data]
    run = _resolve(opts, spec, models[0], "numpyro")
    observed_var = spec.observed_var(models[0])
    with interrupts_not_dropped():
        trees, timings = sample_batch(
            models,
            run,
            log_likelihood=(observed_var,) if run.log_likelihood else (),
            key=structure_key(models[0], _tag(spec, model_options)),
        )
    for tree in trees:
        _require_all_draws(tree, run.draws)
    return [
        _finish(tree, d, model, m, observed_var, "numpyro", run.random_seed, timings, warn,
                model_options)
        for d, m, tree in zip(data, models, trees, strict=True)
    ]
