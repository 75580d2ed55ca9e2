"""Fit the Bayesian ranking models: :func:`fit` one dataset, :func:`fit_many` a batch.

>>> post = bayesrank.fit(data, "rasch", random_seed=1)      # doctest: +SKIP
>>> post.theta.mean(("chain", "draw"))                        # doctest: +SKIP

Every fit returns a :class:`~bayesrank.Posterior` whose InferenceData holds
``posterior``, ``sample_stats``, ``observed_data`` and ``log_likelihood``
(pointwise, e.g. per model-question cell for the Bayes@N and IRT models), and
whose ``diagnostics`` frame holds R-hat, bulk/tail ESS, divergences and E-BFMI;
a :class:`~bayesrank.inference.diagnostics.SamplingWarning` names whatever failed.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from bayesrank.analysis.posterior import Posterior
from bayesrank.checks import check_int
from bayesrank.data import ResponseData, as_response_data
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
from bayesrank.models import get_model, scoring_model

__all__ = ["fit", "fit_many", "DEFAULT_SAMPLER"]

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


#: Warm-up iterations per chain when ``tune`` is not given, by sampler.  nutpie adapts its
#: mass matrix from the gradients as well as the draws and defaults to 400 itself; at 500
#: the 2PL's warm-up took 52-56% of the gradients it took at 1,000 on the five real sets,
#: with the same checks passed (docs/samplers.md).  PyMC and NumPyro adapt from the draws
#: alone: the usual 1,000.
DEFAULT_TUNE = {"nutpie": 500, "pymc": 1000, "numpyro": 1000, "conjugate": 0}


def _check_draws(draws: int | None, tune: int | None, chains: int) -> None:
    if draws is not None:
        check_int("draws", draws)
    if tune is not None:
        check_int("tune", tune, minimum=0)
    check_int("chains", chains)


def _tune(tune: int | None, sampler: str) -> int:
    return DEFAULT_TUNE[sampler] if tune is None else int(tune)


def _draws(draws: int | None, model: pm.Model, chains: int, sampler: str) -> int:
    """``draws``, or by default enough that chance does not fail R-hat (:func:`default_draws`).

    Exact i.i.d. draws (the conjugate sampler) have no R-hat to fail: 1,000.
    """
    if draws is not None:
        return int(draws)
    if sampler == "conjugate":
        return 1000
    shapes = model.eval_rv_shapes()
    n_free = sum(int(np.prod(shapes[v.name])) for v in model.value_vars)
    return default_draws(n_free, chains)


def _require_all_draws(idata: xr.DataTree, draws: int) -> None:
    """Raise KeyboardInterrupt when a sampler stopped early (Ctrl-C returns a partial trace).

    nutpie and PyMC catch the interrupt and hand back the draws made so far (none
    during warm-up); those would pass for a finished fit, so the interrupt goes on.
    """
    kept = group(idata, "posterior").sizes.get("draw", 0)
    if kept < draws:
        raise KeyboardInterrupt(f"sampling interrupted after {kept} of {draws} draws")


def _target_accept(spec: Any, target_accept: float | None) -> float:
    value = spec.target_accept if target_accept is None else float(target_accept)
    if not 0.0 < value < 1.0:
        raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
    return value


def _tag(spec: Any, options: dict[str, Any]) -> tuple | None:
    """What besides data shapes determines a model's graph (None: never reuse)."""
    if not spec.batchable:
        return None
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
    # exact i.i.d. draws: ESS is the number of draws by construction, nothing to estimate
    diagnostics = (summarize(idata, ["theta"], independent=True) if sampler == "conjugate"
                   else summarize(idata))
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
    *,
    sampler: str | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int = 4,
    random_seed: int | None = None,
    progressbar: bool | None = None,
    target_accept: float | None = None,
    log_likelihood: bool = True,
    **model_options: Any,
) -> Posterior:
    """Fit a Bayesian ranking model with NUTS.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    model : str
        ``"bayes"``, ``"rasch"``, ``"2pl"``, ``"3pl"``, ``"bradley_terry"``,
        ``"davidson"`` or ``"davidson_luce"`` (see :mod:`bayesrank.models`).
    sampler : {"nutpie", "numpyro", "pymc", "conjugate"}, optional
        Default: the fastest measured for the model (docs/samplers.md).
        ``"numpyro"`` runs on a GPU when JAX sees one; ``"conjugate"`` draws
        the ``"bayes"`` model's Dirichlet posterior exactly (its default).
    draws : int, optional
        Kept draws per chain.  Default: 1,000, more for models with hundreds
        or thousands of parameters so that a fit that mixes well does not fail
        R-hat <= 1.01 by chance (1,500 for the 2PL's 9,111 parameters on
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
        Store the pointwise log-likelihood (for LOO/WAIC).
    **model_options
        Passed to the model builder (e.g. ``use_R0=True`` for IRT,
        ``ties="davidson"`` for Bradley-Terry).

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
    _check_draws(draws, tune, chains)
    spec = get_model(model)
    target_accept = _target_accept(spec, target_accept)
    d = as_response_data(data)
    d.require_models(f"fit(..., {model!r})")
    pymc_model = spec.build(d, **model_options)
    observed_var = spec.observed_var(pymc_model)
    chosen = _choose_sampler(model, sampler)
    draws = _draws(draws, pymc_model, chains, chosen)
    seed = seed_or_new(random_seed)
    key = structure_key(pymc_model, _tag(spec, model_options))
    with warnings.catch_warnings():
        # ArviZ's guess that dims are misnamed when an interrupted run kept fewer draws than
        # chains; _require_all_draws below reports the interrupt itself
        warnings.filterwarnings("ignore", message="Found chain dimension to be longer")
        idata, timings = sample(
            pymc_model,
            chosen,
            draws=int(draws),
            tune=_tune(tune, chosen),
            chains=int(chains),
            seed=seed,
            progressbar=default_progressbar() if progressbar is None else bool(progressbar),
            target_accept=float(target_accept),
            log_likelihood=(observed_var,) if log_likelihood else (),
            key=key,
            exact_draws=spec.exact_draws,
        )
    _require_all_draws(idata, int(draws))
    if log_likelihood and not has_group(idata, "log_likelihood"):
        import time

        t0 = time.perf_counter()
        idata = with_groups(idata, log_likelihood=pointwise_log_likelihood(
            group(idata, "posterior"), scoring_model(pymc_model), observed_var, key))
        timings["log_likelihood"] = time.perf_counter() - t0
    return _finish(idata, d, model, pymc_model, observed_var, chosen, seed, timings,
                   model_options=model_options)


def fit_many(
    datasets: Sequence[ResponseData | Any],
    model: str,
    *,
    sampler: str | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int = 4,
    random_seed: int | None = None,
    progressbar: bool | None = None,
    target_accept: float | None = None,
    log_likelihood: bool = True,
    warn: bool = True,
    **model_options: Any,
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
    sampler : {"numpyro", "nutpie", "pymc", "conjugate"}, optional
        ``"numpyro"``: one vectorised program (every model except
        ``davidson_luce``, whose event list differs between datasets); any
        other: :func:`fit` per dataset.  Default: ``"numpyro"`` when JAX sees a
        GPU, else the model's default sampler per dataset.
    draws, tune, chains, random_seed, target_accept, log_likelihood
        As in :func:`fit` (the default draws from the first dataset's model).
    progressbar : bool, optional
        One bar on stderr for the whole batch (all chains of all datasets):
        iterations of warm-up then sampling, divergences so far, elapsed time.
        Default: on in a terminal or notebook, off otherwise.  Same draws either way.
    warn : bool
        Emit a SamplingWarning for each dataset whose fit fails the checks
        (``Posterior.diagnostics`` is filled either way).

    Returns
    -------
    list of Posterior
        One per dataset, in order.  From the vectorised batch each has
        ``timings`` with the batch's compile and sampling seconds and
        ``batch_size``; per-dataset seeds are drawn from ``random_seed``.
    """
    _check_draws(draws, tune, chains)
    spec = get_model(model)
    if not len(datasets):
        raise ValueError("fit_many needs at least one dataset")
    chosen = _batch_sampler(model, sampler)
    if chosen != "numpyro":
        seeds = np.random.SeedSequence(seed_or_new(random_seed)).generate_state(len(datasets))
        with warnings.catch_warnings():
            if not warn:
                warnings.simplefilter("ignore", SamplingWarning)
            return [
                fit(d, model, sampler=chosen, draws=draws, tune=tune, chains=chains,
                    random_seed=int(s), progressbar=progressbar, target_accept=target_accept,
                    log_likelihood=log_likelihood, **model_options)
                for d, s in zip(datasets, seeds, strict=True)
            ]
    target_accept = _target_accept(spec, target_accept)
    if not spec.batchable:
        raise ValueError(f"model {model!r} cannot be fitted in a batch; call fit() per dataset")
    data = [as_response_data(x) for x in datasets]
    for d in data:
        d.require_models(f"fit_many(..., {model!r})")
    models = [spec.build(d, **model_options) for d in data]
    draws = _draws(draws, models[0], chains, "numpyro")
    observed_var = spec.observed_var(models[0])
    wanted = (observed_var,) if log_likelihood else ()
    seed = seed_or_new(random_seed)
    trees, timings = sample_batch(
        models,
        chains=int(chains),
        draws=int(draws),
        tune=_tune(tune, "numpyro"),
        seed=seed,
        target_accept=float(target_accept),
        progressbar=default_progressbar() if progressbar is None else bool(progressbar),
        log_likelihood=wanted,
        key=structure_key(models[0], _tag(spec, model_options)),
    )
    for tree in trees:
        _require_all_draws(tree, int(draws))
    return [
        _finish(tree, d, model, m, observed_var, "numpyro", seed, timings, warn, model_options)
        for d, m, tree in zip(data, models, trees, strict=True)
    ]
