"""Samplers behind :func:`bayesrank.fit`: NUTS via nutpie, NumPyro (JAX) or PyMC, and exact draws.

``"conjugate"`` draws the Bayes@N model's Dirichlet posterior exactly
(i.i.d.); it applies to that model only.

Each back end takes a built ``pm.Model`` and returns an ArviZ DataTree with
``posterior`` (model variables only, no transformed copies) and
``sample_stats`` (at least ``diverging``, ``energy``, ``lp``), plus wall-clock
``compile`` and ``sample`` seconds.  Same seed, same draws.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from importlib.util import find_spec
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors

from bayesrank.conjugate import DeferredArray, deferred_variable
from bayesrank.datatree import from_arrays, group, with_groups, without_groups
from bayesrank.errors import DataError, MissingDependencyError
from bayesrank.inference.cache import cached
from bayesrank.inference.jax_nuts import jaxify, run_nuts
from bayesrank.inference.nutpie_models import compile_for_nutpie, nutpie_cores, with_model_data
from bayesrank.inference.options import SamplerOptions

__all__ = ["SAMPLERS", "default_progressbar", "require", "sample", "sample_batch"]

SAMPLERS = ("nutpie", "numpyro", "pymc", "conjugate", "laplace")
_PACKAGES = {
    "nutpie": ("nutpie",),
    "numpyro": ("jax", "numpyro"),
    "pymc": ("pymc",),
    "conjugate": (),
    "laplace": (),
}
_EXTRAS = {"nutpie": "nutpie", "numpyro": "jax", "pymc": None, "conjugate": None,
           "laplace": None}


def require(sampler: str) -> None:
    """Raise a clear error for an unknown sampler or one whose package is missing."""
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    missing = [p for p in _PACKAGES[sampler] if find_spec(p) is None]
    if missing:
        extra = _EXTRAS[sampler]
        raise MissingDependencyError(
            f"sampler {sampler!r} needs {', '.join(missing)}, which is not installed; "
            f"install it with: pip install 'bayesrank[{extra}]'"
        )


#: ``report(draws done, draws in all)``, over all chains and warm-up included, that the
#: nutpie sampler calls while it runs (a context variable: set it around a fit, e.g. the
#: command line's stage lines; nothing process-wide)
draws_progress: ContextVar[Callable[[int, int], None] | None] = ContextVar(
    "draws_progress", default=None)


def _nutpie_callback() -> Callable[[Any], None] | None:
    report = draws_progress.get()
    if report is None:
        return None
    return lambda chains: report(sum(c.finished_draws for c in chains),
                                 sum(c.total_draws for c in chains))


def default_progressbar() -> bool:
    """Progress bars when a person is watching: a terminal or a Jupyter kernel."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _relabel(idata: xr.DataTree, model: pm.Model) -> xr.DataTree:
    """Coordinates of ``model`` on every group (a reused compiled model carries old labels)."""
    relabelled = {}
    for name in idata.children:
        ds = group(idata, name)
        labels = {d: list(model.coords[d]) for d in ds.dims if d in model.coords}
        if labels:
            relabelled[name] = ds.assign_coords(labels)
    return with_groups(idata, **relabelled)


def model_var_names(model: pm.Model) -> list[str]:
    """Free and deterministic variables, without PyMC's transformed value copies."""
    return [v.name for v in model.free_RVs] + [v.name for v in model.deterministics]


#: nutpie stores the deterministics' draws itself up to this many values (chains x draws x
#: their sizes); beyond, it stores the free variables only and the deterministics are
#: computed from their draws after sampling (:func:`stored_var_names`)
SAMPLER_DETERMINISTIC_VALUES = 2**26


def _size(model: pm.Model, var) -> int:
    """How many values one draw of ``var`` holds: from its dims, else its shape."""
    dims = model.named_vars_to_dims.get(var.name)
    if dims:
        return int(np.prod([len(model.coords[d]) for d in dims]))
    return int(np.prod(var.shape.eval()))


def stored_var_names(model: pm.Model, draws: int) -> list[str]:
    """The variables nutpie stores for ``draws`` draws (chains x draws) of ``model``.

    Every model variable (:func:`model_var_names`) while the deterministics' draws fit
    ``SAMPLER_DETERMINISTIC_VALUES`` values (512 MB), else the free variables only:
    nutpie keeps its draws in Arrow tables and converts them to NumPy at the end, with
    both alive, and its peak was 3.5 times the posterior's size (6.6 GB for a 2PL of
    8,000 questions at 6,000 draws, docs/scale.md).  The deterministics
    (:func:`_with_deterministics`) are then made after that storage is freed.
    """
    size = sum(_size(model, v) for v in model.deterministics)
    if draws * size <= SAMPLER_DETERMINISTIC_VALUES:
        return model_var_names(model)
    return [v.name for v in model.free_RVs]


def _keep_model_vars(idata: xr.DataTree, model: pm.Model) -> xr.DataTree:
    posterior = group(idata, "posterior")
    keep = [n for n in model_var_names(model) if n in posterior]
    return with_groups(idata, posterior=posterior[keep])


#: The environment variable naming the back end nutpie compiles the log-density with
#: ("auto", "pytensor", "jax" or "numba"), read at each fit.
NUTPIE_BACKEND_VARIABLE = "BAYESRANK_NUTPIE_BACKEND"

#: Below this many observed values (response cells) PyMC's sampler runs the chains one after
#: the other in this process (:func:`_sample_pymc`).
IN_PROCESS_MAX_OBSERVED = 1_000

#: "auto": a model with this many observed values (response cells) is "at scale".
SCALE_OBSERVED = 10_000

#: "auto" compiles with Numba on a CPU from this many NUTS iterations (chains x (tune + draws)).
NUMBA_MIN_ITERATIONS = 4_000


def observed_size(model: pm.Model) -> int:
    """How many observed values ``model`` scores: per observed variable, its largest data array."""
    total = 0
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        sizes = [
            np.size(v.get_value(borrow=True) if isinstance(v, SharedVariable) else v.data)
            for v in ancestors([value])
            if isinstance(v, SharedVariable | Constant) and v.ndim == value.ndim
        ]
        total += max(sizes, default=0)
    return int(total)


def nutpie_backend(model: pm.Model | None = None,
                   iterations: int = NUMBA_MIN_ITERATIONS) -> str:
    """The back end nutpie compiles ``model`` with: ``BAYESRANK_NUTPIE_BACKEND``, "auto" by
    measurement.

    With "auto": Numba (:func:`.nutpie_models.nutpie_numba_model`) where jax is missing
    or its default device is not the CPU.  On a CPU, Numba for any model with at least
    ``SCALE_OBSERVED`` observed values or any run of at least ``NUMBA_MIN_ITERATIONS``
    NUTS iterations (``iterations``: chains x (tune + draws); the default fit has
    8,000), JAX for short runs of small models.

    Why (docs/samplers.md, "nutpie's Numba model in seconds"): nutpie calls a JAX
    log-density from Python for every gradient (1.1-1.6 ms of wall time a gradient on
    the AIME and LiveCodeBench Bradley-Terry, chains sharing the interpreter lock),
    while the Numba callback runs without Python and its chains in parallel (0.09-0.14
    ms there); default fits of the real sets took 1.5-5.8x less wall time with Numba.
    Its cost is the compile: 2-15 s with PyTensor's on-disk cache warm, 5-50 s for a
    graph (model and data shape) new to the machine, against 1-3 s for JAX, which a
    short run does not pay back.  (Until the beta-binomial cells became one Op,
    ``models.fast.beta_binomial``, the 3PL at scale went to JAX: its cells cost 7.8 ms per
    gradient in Numba against 4.4 in XLA on 43 x 400 x 10; the Op, 1.1 ms.)  "pytensor"
    (:func:`.nutpie_models.nutpie_pytensor_model`) is chosen by hand only.
    """
    choice = os.environ.get(NUTPIE_BACKEND_VARIABLE, "auto")
    if choice not in ("auto", "pytensor", "jax", "numba"):
        raise ValueError(f"{NUTPIE_BACKEND_VARIABLE} must be 'auto', 'pytensor', 'jax' or "
                         f"'numba', got {choice!r}")
    if choice != "auto":
        return choice
    if find_spec("jax") is None:
        return "numba"
    import jax

    if jax.default_backend() != "cpu":
        return "numba"
    large = model is not None and observed_size(model) >= SCALE_OBSERVED
    return "numba" if large or iterations >= NUMBA_MIN_ITERATIONS else "jax"


def _sample_nutpie(model: pm.Model, run: SamplerOptions, key: Hashable | None = None):
    import nutpie

    t0 = time.perf_counter()
    backend = nutpie_backend(model, run.chains * (run.tune + run.draws))
    stored = stored_var_names(model, run.chains * run.draws)
    # nutpie's JAX build bakes pm.Data in as constants (no with_data) and the PyTensor one
    # reads this model's data: both are compiled anew each time (1-5 s)
    compiled, reused = cached(
        None if key is None or backend in ("jax", "pytensor") else ("nutpie", key, *stored),
        lambda: compile_for_nutpie(model, backend, stored, key=key),
    )
    if reused:
        compiled = with_model_data(compiled, model, key)
    t1 = time.perf_counter()
    values = run.chains * (run.tune + run.draws) * sum(_size(model, model[n]) for n in stored)
    with _trace_store(values) as store:
        idata = nutpie.sample(
            compiled,
            draws=run.draws,
            tune=run.tune,
            chains=run.chains,
            cores=nutpie_cores(backend, run.chains),
            seed=run.random_seed,
            progress_bar=run.progressbar,
            progress_callback=_nutpie_callback(),
            save_warmup=False,
            target_accept=run.target_accept,
            zarr_store=store,
        )
        if store is not None:
            idata = _read_trace(idata, stored)
    t2 = time.perf_counter()
    stats = group(idata, "sample_stats")
    if "logp" in stats and "lp" not in stats:
        renames = {k: v for k, v in {"logp": "lp", "depth": "tree_depth"}.items() if k in stats}
        idata = with_groups(idata, sample_stats=stats.rename(renames))
    idata = _relabel(_with_deterministics(_keep_model_vars(idata, model), model), model)
    return idata, {"compile": t1 - t0, "sample": t2 - t1}


#: nutpie keeps its draws in memory (Arrow tables) up to this many values (chains x (tune +
#: draws) x the stored variables' sizes); beyond, it writes them to a temporary zarr store
#: on disk (:func:`_trace_store`)
IN_MEMORY_TRACE_VALUES = 2**26

#: the sampler statistics nutpie's zarr store holds that its Arrow path leaves out (it
#: stores none of them by default: gradients, unconstrained draws, mass matrices,
#: divergences' end points, transformed positions)
_UNSTORED_STATS = ("gradient", "unconstrained_draw", "mass_matrix_inv", "mass_matrix_eigvals",
                   "mass_matrix_stds", "divergence_start", "divergence_end",
                   "divergence_momentum", "divergence_start_gradient", "transformed_position",
                   "transformed_gradient", "transformation_mu")

#: those it lays out per divergence or per update of the flow adaptation, not per draw as
#: in memory; nothing here reads them (``diverging`` marks each draw)
PER_DRAW_IN_MEMORY_ONLY = ("divergence_draw", "divergence_message", "divergence_energy_error",
                           "transformation_update_id")


@contextlib.contextmanager
def _trace_store(values: int) -> Iterator[Any]:
    """None (nutpie's in-memory Arrow tables) up to ``IN_MEMORY_TRACE_VALUES`` values, else a
    zarr store in a temporary directory, removed when the draws have been read.

    nutpie's Arrow tables hold every draw, warm-up included, and are converted to NumPy at
    the end with both alive: the 2PL at 50 x 14,000 peaked at 6.6 GB inside the sampler
    with a posterior of 1.3 GB of free variables (docs/scale.md).  Written to disk as it
    samples, only the kept draws are ever read into memory (:func:`_read_trace`).
    """
    if values <= IN_MEMORY_TRACE_VALUES:
        yield None
        return
    import nutpie

    with tempfile.TemporaryDirectory(prefix="bayesrank-draws-") as folder:
        yield nutpie.zarr_store.LocalStore(folder)


def _read_trace(idata: xr.DataTree, names: list[str]) -> xr.DataTree:
    """The posterior's ``names`` and the sampler statistics of a zarr trace, read into memory
    (the groups and variables nutpie's Arrow path returns)."""
    stats = group(idata, "sample_stats")
    groups = {"posterior": group(idata, "posterior")[names].load(), "sample_stats": stats.drop_vars(
        [v for v in _UNSTORED_STATS + PER_DRAW_IN_MEMORY_ONLY if v in stats]).load()}
    # made again as ArviZ makes the in-memory path's: coordinates for chain, draw and every
    # unlabelled dimension, and its attributes
    coords = {d: ds[d].values for ds in groups.values() for d in ds.coords}
    dims = {k: list(v.dims[2:]) for ds in groups.values() for k, v in ds.items()}
    return from_arrays({name: {k: v.values for k, v in ds.items()} for name, ds in groups.items()},
                       coords=coords, dims=dims)


def _with_deterministics(idata: xr.DataTree, model: pm.Model) -> xr.DataTree:
    """The posterior with the deterministics the sampler did not store, made from its draws."""
    posterior = group(idata, "posterior")
    missing = [v.name for v in model.deterministics if v.name not in posterior]
    if not missing:
        return idata
    made = pm.compute_deterministics(posterior, var_names=missing, model=model,
                                     progressbar=False, backend="numba")
    # by dims, not labels (a reused compiled model's labels are replaced after, _relabel)
    return with_groups(idata, posterior=posterior.assign(
        {name: (made[name].dims, made[name].values) for name in missing}))


#: what PyMC raises when Ctrl-C stopped its chains before any draw was kept
_PYMC_NO_DRAWS = "Not enough samples to build a trace."


@contextlib.contextmanager
def _interrupt_raised(draws: int) -> Iterator[None]:
    """Ctrl-C or SIGTERM while PyMC samples ends as the interrupt it is.

    PyMC catches the KeyboardInterrupt and hands back the draws made so far (the fit then
    reports the interrupt); during warm-up there are none, and it raises a ValueError
    instead.  A signal handled while the compiled log-density runs comes out of Numba's
    dispatcher as a SystemError caused (through another SystemError, when it landed in
Numba's unpickler) by the interrupt.  Either would read as a fault in
    the model or the data.
    """
    try:
        yield
    except ValueError as exc:
        if str(exc) != _PYMC_NO_DRAWS:
            raise
        raise KeyboardInterrupt(f"sampling interrupted after 0 of {draws} draws") from exc
    except SystemError as exc:
        cause = exc.__cause__
        while isinstance(cause, SystemError):  # Numba's dispatcher, then its unpickler
            cause = cause.__cause__
        if not isinstance(cause, KeyboardInterrupt):
            raise
        raise cause from None


def _sample_pymc(model: pm.Model, run: SamplerOptions):
    # PyMC compiles inside pm.sample; compiling the log-density and its gradient
    # first fills PyTensor's on-disk cache, so "compile" is measured here and
    # pm.sample's own compilation becomes a cache hit.
    # Chains in worker processes cost a process start each (forkserver: about 15 s for two
    # chains of a 4 x 6 Rasch, against 6 s for both in this process, the same draws), which
    # only a long sampling pays back
    small = observed_size(model) < IN_PROCESS_MAX_OBSERVED
    t0 = time.perf_counter()
    model.compile_logp()
    model.compile_dlogp()
    t1 = time.perf_counter()
    with model, _interrupt_raised(run.draws):
        idata = pm.sample(
            nuts_sampler="pymc",
            draws=run.draws,
            tune=run.tune,
            chains=run.chains,
            cores=1 if small else min(run.chains, os.cpu_count() or 1),
            init="jitter+adapt_diag",
            target_accept=run.target_accept,
            random_seed=run.random_seed,
            progressbar=run.progressbar,
            quiet=not run.progressbar,
            compute_convergence_checks=False,
            # forking a process that has started JAX's threads can deadlock
            mp_ctx="forkserver" if "jax" in sys.modules else None,
        )
    t2 = time.perf_counter()
    idata = without_groups(idata, "observed_data", "constant_data")
    return _keep_model_vars(idata, model), {"compile": t1 - t0, "sample": t2 - t1}


def _exact_group(values: dict[str, Any], coords: dict, dims: dict, name: str) -> xr.Dataset:
    """One group of an exact sampler's draws; deferred arrays stay lazy until read."""
    eager = {k: v for k, v in values.items() if not isinstance(v, DeferredArray)}
    ds = group(from_arrays({name: eager}, coords=coords, dims=dims), name)
    for var, value in values.items():
        if isinstance(value, DeferredArray):
            var_dims = ("chain", "draw", *dims[var])
            labels = {d: coords[d] for d in dims[var] if d in coords and d not in ds.coords}
            ds = ds.assign_coords(labels).assign({var: deferred_variable(value, var_dims)})
    return ds[list(values)].assign_attrs(ds.attrs)


def _sample_exact(model: pm.Model, run: SamplerOptions, exact_draws=None,
                  log_likelihood: tuple[str, ...] = ()):
    from pymc.backends.arviz import coords_and_dims_for_inferencedata

    if exact_draws is None:
        raise ValueError("sampler 'conjugate' draws exact conjugate posteriors: it applies to "
                         "the 'bayes' model only")
    t0 = time.perf_counter()
    draws, chains = run.draws, run.chains
    groups = exact_draws(model, draws=draws, chains=chains, seed=run.random_seed,
                         log_likelihood=bool(log_likelihood))
    t1 = time.perf_counter()
    coords, dims = coords_and_dims_for_inferencedata(model)
    idata = from_arrays(
        {"sample_stats": {"diverging": np.zeros((chains, draws), dtype=bool)}},
        coords=coords, dims=dims,
    )
    idata = with_groups(idata, posterior=_exact_group(groups["posterior"], coords, dims,
                                                      "posterior"))
    wanted = {k: v for k, v in groups.get("log_likelihood", {}).items() if k in log_likelihood}
    if wanted:
        # pointwise over the observed variable's dims without the last (the category)
        cell_dims = {k: list(dims[k][:-1]) for k in wanted}
        idata = with_groups(idata, log_likelihood=_exact_group(wanted, coords, cell_dims,
                                                               "log_likelihood"))
    return idata, {"compile": 0.0, "sample": t1 - t0}


def jax_inference_data(model: pm.Model, result: dict[str, Any]) -> xr.DataTree:
    """DataTree (posterior, sample_stats, log_likelihood) from one :func:`run_nuts` result."""
    from pymc.backends.arviz import coords_and_dims_for_inferencedata

    coords, dims = coords_and_dims_for_inferencedata(model)
    keep = model_var_names(model)
    return from_arrays(
        {
            "posterior": {k: v for k, v in result["posterior"].items() if k in keep},
            "sample_stats": result["sample_stats"],
            "log_likelihood": result["log_likelihood"] or {},
        },
        coords=coords,
        dims=dims,
    )


def _sample_numpyro(model: pm.Model, run: SamplerOptions,
                    log_likelihood: tuple[str, ...] = (), key: Hashable | None = None):
    from bayesrank.inference.jax_nuts import jaxify, run_nuts

    t0 = time.perf_counter()
    jm, _ = cached(
        None if key is None else ("jaxify", key, tuple(log_likelihood)),
        lambda: jaxify(model, log_likelihood),
    )
    t1 = time.perf_counter()
    (result,), timings = run_nuts(
        jm,
        [jm.data_values(model)],
        run,
        cache_key=None if key is None else (key, tuple(log_likelihood)),
        model=model,
    )
    idata = jax_inference_data(model, result)
    return idata, {"compile": t1 - t0 + timings["compile"], "sample": timings["sample"]}


def sample(
    model: pm.Model,
    run: SamplerOptions,
    *,
    log_likelihood: tuple[str, ...] = (),
    key: Hashable | None = None,
    exact_draws: Callable[..., dict[str, dict[str, np.ndarray]]] | None = None,
) -> tuple[xr.DataTree, dict[str, float]]:
    """Draw from the posterior of ``model`` as ``run`` (resolved options) says.

    ``log_likelihood`` names observed variables whose pointwise log-likelihood
    the NumPyro back end computes in the same JAX program and the exact
    sampler in closed form (nutpie and PyMC leave that to
    :func:`pymc.compute_log_likelihood`).  With a ``key`` from
    :func:`structure_key`, the nutpie and NumPyro back ends reuse a model
    compiled earlier for data of the same shape and only swap the data in.
    ``exact_draws(model, draws=, chains=, seed=, log_likelihood=)`` is the
    model's own exact sampler, used by ``sampler="conjugate"``: it returns the
    ``posterior`` group's arrays and, when asked, the ``log_likelihood`` group's
    (in closed form from the same draws, so :func:`fit` needs no
    :func:`pymc.compute_log_likelihood` pass).
    """
    if not run.is_resolved:
        raise ValueError("sample() runs resolved options (SamplerOptions.resolved)")
    require(run.sampler)
    if run.sampler == "nutpie":
        return _sample_nutpie(model, run, key=key)
    if run.sampler == "pymc":
        return _sample_pymc(model, run)
    if run.sampler == "conjugate":
        return _sample_exact(model, run, exact_draws=exact_draws, log_likelihood=log_likelihood)
    if run.sampler == "laplace":  # i.i.d. draws of an approximation (bayesrank.inference.laplace)
        from bayesrank.inference.laplace import laplace_draws

        return _sample_exact(model, run, exact_draws=laplace_draws)
    return _sample_numpyro(model, run, log_likelihood=log_likelihood, key=key)


def sample_batch(
    models: list[pm.Model],
    run: SamplerOptions,
    *,
    log_likelihood: tuple[str, ...] = (),
    key: Hashable | None = None,
) -> tuple[list[xr.DataTree], dict[str, float]]:
    """Sample models of one structure (the same graph, other data) as one NumPyro program.

    Every chain of every model runs NUTS under ``jax.vmap`` in one compiled
    program (what a GPU runs in parallel).  All models must hold data of equal
    shapes; a :class:`~bayesrank.errors.DataError` names the first that does not.
    """
    require("numpyro")
    jm, _ = cached(("jaxify", key, log_likelihood), lambda: jaxify(models[0], log_likelihood))
    values = [jm.data_values(m) for m in models]
    for i, vals in enumerate(values[1:], start=1):
        for name, a, b in zip(jm.data_names, values[0], vals, strict=True):
            if a.shape != b.shape:
                raise DataError(
                    f"dataset {i} has {name} of shape {b.shape} but dataset 0 has {a.shape}; "
                    "fit_many needs datasets of equal shape"
                )
    results, timings = run_nuts(
        jm,
        values,
        run,
        cache_key=None if key is None else (key, log_likelihood),
    )
    trees = [jax_inference_data(m, r) for m, r in zip(models, results, strict=True)]
    return trees, {**timings, "batch_size": len(models)}


def seed_or_new(random_seed: int | None) -> int:
    """``random_seed`` itself (checked when the :class:`SamplerOptions` were made), or fresh
    entropy recorded so the fit can be repeated."""
    if random_seed is None:
        return int(np.random.SeedSequence().entropy % (2**31 - 1))
    return int(random_seed)
