"""Samplers behind :func:`bayesrank.fit`: NUTS via nutpie, NumPyro (JAX) or PyMC, and exact draws.

``"conjugate"`` draws the Bayes@N model's Dirichlet posterior exactly
(i.i.d.); it applies to that model only.

Each back end takes a built ``pm.Model`` and returns an ArviZ DataTree with
``posterior`` (model variables only, no transformed copies) and
``sample_stats`` (at least ``diverging``, ``energy``, ``lp``), plus wall-clock
``compile`` and ``sample`` seconds.  Same seed, same draws.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Hashable
from importlib.util import find_spec
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from xarray.backends import BackendArray
from xarray.core import indexing

from bayesrank.conjugate import DeferredArray
from bayesrank.datatree import from_arrays, group, with_groups, without_groups
from bayesrank.errors import DataError, MissingDependencyError
from bayesrank.inference.cache import cached
from bayesrank.inference.jax_nuts import jaxify, run_nuts

__all__ = ["SAMPLERS", "default_progressbar", "require", "sample", "sample_batch"]

SAMPLERS = ("nutpie", "numpyro", "pymc", "conjugate")
_PACKAGES = {
    "nutpie": ("nutpie",),
    "numpyro": ("jax", "numpyro"),
    "pymc": ("pymc",),
    "conjugate": (),
}
_EXTRAS = {"nutpie": "nutpie", "numpyro": "jax", "pymc": None, "conjugate": None}


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


def _keep_model_vars(idata: xr.DataTree, model: pm.Model) -> xr.DataTree:
    posterior = group(idata, "posterior")
    keep = [n for n in model_var_names(model) if n in posterior]
    return with_groups(idata, posterior=posterior[keep])


#: Which nutpie back end compiles the log-density: "auto", "pytensor", "jax" or "numba".
NUTPIE_BACKEND = os.environ.get("BAYESRANK_NUTPIE_BACKEND", "auto")

#: Below this many observed values (response cells) PyMC's sampler runs the chains one after
#: the other in this process (:func:`_sample_pymc`).
IN_PROCESS_MAX_OBSERVED = 1_000

#: "auto" compiles with Numba on a CPU from this many observed values (response cells).
NUMBA_MIN_OBSERVED = 10_000


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


def nutpie_backend(model: pm.Model | None = None, numba_at_scale: bool = False) -> str:
    """The back end nutpie compiles ``model`` with: ``NUTPIE_BACKEND``, "auto" by measurement.

    With "auto": Numba where jax is missing or its default device is not the CPU;
    on a CPU, Numba for a model that runs faster there at scale
    (``numba_at_scale``: the binomial Rasch and 2PL, ``ModelSpec.numba_at_scale``)
    with at least ``NUMBA_MIN_OBSERVED`` observed values, JAX (XLA) for the
    others.  Measured on an idle 2-core machine (docs/samplers.md, "nutpie: JAX
    or Numba"): nutpie calls a JAX log-density from Python for every gradient,
    about 1 ms a call on the 15 x 713 x 10 Rasch against 0.47 ms for the Numba
    function, and only the Numba chains run free of Python's interpreter lock;
    but nutpie compiles a Numba model anew on every fit (13-80 s, no disk cache)
    against 1-4 s for JAX.  Default fits of the real Rasch and 2PL with 10,000 or
    more cells took 1.14-1.65x less wall time with Numba (the ZeroEval Rasch 5%
    more); the 3PL (beta-binomial cells) 1.4x more on ZeroEval, the Davidson-Luce
    on LiveCodeBench (7 leapfrog steps a draw) 1.1x more, and every smaller model
    about the same or more.  "pytensor" (:func:`nutpie_pytensor_model`) is chosen
    by hand only: with a warm PyTensor cache it fitted the small IRT and
    Bradley-Terry models 1.3-1.6x faster than JAX, but on a fresh machine its
    Numba compile of every new graph cost more than that (docs/samplers.md,
    "PyTensor's function for small models").
    """
    choice = NUTPIE_BACKEND
    if choice not in ("auto", "pytensor", "jax", "numba"):
        raise ValueError(
            f"NUTPIE_BACKEND must be 'auto', 'pytensor', 'jax' or 'numba', got {choice!r}")
    if choice != "auto":
        return choice
    if find_spec("jax") is None:
        return "numba"
    import jax

    if jax.default_backend() != "cpu":
        return "numba"
    large = numba_at_scale and model is not None and observed_size(model) >= NUMBA_MIN_OBSERVED
    return "numba" if large else "jax"


def nutpie_pytensor_model(model: pm.Model, var_names: list[str]):
    """nutpie's model around PyTensor's compiled log-density-and-gradient (its default mode).

    nutpie's Numba build wraps PyTensor's functions in a C callback and compiles
    it anew on every fit; its JAX build costs 0.1-0.3 ms per call from Python.
    PyTensor's own function (Numba kernels cached on disk) is called from Python
    too, at 0.01-0.06 ms on small models.  nutpie's helpers (private ones,
    ``_make_functions`` and ``_prepare_dims_and_coords``, hence the pin on
    nutpie's minor versions; ``tests/test_fitting.py`` fits through them) build
    the flat parameter vector, the initial points and the trace's extra
    variables as for its other back ends.  Each chain gets its own copy of the functions (their
    output buffers are reused between calls); the chains run on one thread,
    since every call holds Python's interpreter lock.
    """
    from nutpie.compile_pymc import _make_functions, _prepare_dims_and_coords
    from nutpie.compiled_pyfunc import from_pyfunc
    from pymc.initial_point import make_initial_point_fn

    initial_point = make_initial_point_fn(
        model=model, jitter_rvs=set(model.free_RVs), default_strategy="support_point",
        return_transformed=True,
    )
    n_dim, _, logp_fn, expand_fn, initial_flat, shape_info, reparameterized = _make_functions(
        model, mode=None, compute_grad=True, join_expanded=False,
        pymc_initial_point_fn=initial_point, var_names=var_names,
    )
    names, _, shapes = shape_info

    def own_copy(fn):
        fn = fn.copy()
        fn.trust_input = True
        return fn

    def make_logp():
        fn = own_copy(logp_fn)

        def logp(x):
            value, grad = fn(x)
            return float(value), np.array(grad, dtype="float64")

        return logp

    def make_expand(seed1, seed2, chain):
        fn = own_copy(expand_fn)

        def expand(x):
            return {name: np.array(v, dtype="float64").reshape(shape)
                    for name, v, shape in zip(names, fn(x), shapes, strict=True)}

        return expand

    dims, coords = _prepare_dims_and_coords(model, shape_info, reparameterized)
    return from_pyfunc(
        ndim=n_dim, make_logp_fn=make_logp, make_expand_fn=make_expand,
        make_initial_point_fn=initial_flat, expanded_dtypes=[np.dtype("float64")] * len(names),
        expanded_shapes=shapes, expanded_names=names, dims=dims, coords=coords,
        reparameterized_names=reparameterized,
    )


def compile_for_nutpie(model: pm.Model, backend: str, var_names: list[str]):
    """nutpie's compiled model of ``model`` with ``backend`` ("pytensor", "jax" or "numba")."""
    if backend == "pytensor":
        return nutpie_pytensor_model(model, var_names)
    import nutpie

    options = {"backend": "jax", "gradient_backend": "jax"} if backend == "jax" else {}
    return nutpie.compile_pymc_model(model, var_names=var_names, **options)


def nutpie_cores(backend: str, chains: int) -> int:
    """Threads for nutpie's chains: one for "pytensor", whose calls hold the GIL."""
    return 1 if backend == "pytensor" else min(chains, os.cpu_count() or 1)


def _sample_nutpie(model, *, draws, tune, chains, seed, progressbar, target_accept, key=None,
                   numba_at_scale=False):
    import nutpie

    t0 = time.perf_counter()
    backend = nutpie_backend(model, numba_at_scale)
    # nutpie's JAX build bakes pm.Data in as constants (no with_data) and the PyTensor one
    # reads this model's data: both are compiled anew each time (1-5 s)
    compiled, reused = cached(
        None if key is None or backend in ("jax", "pytensor") else ("nutpie", key),
        lambda: compile_for_nutpie(model, backend, model_var_names(model)),
    )
    if reused:
        compiled = compiled.with_data(
            **{v.name: v.get_value(borrow=True) for v in model.data_vars}
        )
    t1 = time.perf_counter()
    idata = nutpie.sample(
        compiled,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=nutpie_cores(backend, chains),
        seed=seed,
        progress_bar=progressbar,
        save_warmup=False,
        target_accept=target_accept,
    )
    t2 = time.perf_counter()
    stats = group(idata, "sample_stats")
    if "logp" in stats and "lp" not in stats:
        renames = {k: v for k, v in {"logp": "lp", "depth": "tree_depth"}.items() if k in stats}
        idata = with_groups(idata, sample_stats=stats.rename(renames))
    idata = _relabel(_keep_model_vars(idata, model), model)
    return idata, {"compile": t1 - t0, "sample": t2 - t1}


def _sample_pymc(model, *, draws, tune, chains, seed, progressbar, target_accept):
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
    with model:
        idata = pm.sample(
            nuts_sampler="pymc",
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1 if small else min(chains, os.cpu_count() or 1),
            init="jitter+adapt_diag",
            target_accept=target_accept,
            random_seed=seed,
            progressbar=progressbar,
            quiet=not progressbar,
            compute_convergence_checks=False,
            # forking a process that has started JAX's threads can deadlock
            mp_ctx="forkserver" if "jax" in sys.modules else None,
        )
    t2 = time.perf_counter()
    idata = without_groups(idata, "observed_data", "constant_data")
    return _keep_model_vars(idata, model), {"compile": t1 - t0, "sample": t2 - t1}


class _MadeOnFirstRead(BackendArray):
    """A :class:`~bayesrank.conjugate.DeferredArray` as a lazily indexed xarray variable."""

    def __init__(self, deferred: DeferredArray) -> None:
        self.shape = tuple(deferred.shape)
        self.dtype = np.dtype(deferred.dtype)
        self._make = deferred.make
        self._array: np.ndarray | None = None

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read)

    def _read(self, key):
        if self._array is None:
            self._array = np.asarray(self._make())
        return self._array[key]


def _exact_group(values: dict[str, Any], coords: dict, dims: dict, name: str) -> xr.Dataset:
    """One group of an exact sampler's draws; deferred arrays stay lazy until read."""
    eager = {k: v for k, v in values.items() if not isinstance(v, DeferredArray)}
    ds = group(from_arrays({name: eager}, coords=coords, dims=dims), name)
    for var, value in values.items():
        if isinstance(value, DeferredArray):
            var_dims = ("chain", "draw", *dims[var])
            labels = {d: coords[d] for d in dims[var] if d in coords and d not in ds.coords}
            ds = ds.assign_coords(labels).assign(
                {var: xr.Variable(var_dims, indexing.LazilyIndexedArray(_MadeOnFirstRead(value)))})
    return ds[list(values)].assign_attrs(ds.attrs)


def _sample_exact(model, *, draws, tune, chains, seed, progressbar, target_accept,
                  exact_draws=None, log_likelihood=()):
    from pymc.backends.arviz import coords_and_dims_for_inferencedata

    if exact_draws is None:
        raise ValueError("sampler 'conjugate' draws exact conjugate posteriors: it applies to "
                         "the 'bayes' model only")
    t0 = time.perf_counter()
    groups = exact_draws(model, draws=draws, chains=chains, seed=seed,
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


def _sample_numpyro(model, *, draws, tune, chains, seed, progressbar, target_accept,
                    log_likelihood=(), key=None):
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
        chains=chains,
        draws=draws,
        tune=tune,
        seed=seed,
        target_accept=target_accept,
        cache_key=None if key is None else (key, tuple(log_likelihood)),
        model=model,
        progressbar=progressbar,
    )
    idata = jax_inference_data(model, result)
    return idata, {"compile": t1 - t0 + timings["compile"], "sample": timings["sample"]}


def sample(
    model: pm.Model,
    sampler: str,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progressbar: bool,
    target_accept: float = 0.8,
    log_likelihood: tuple[str, ...] = (),
    key: Hashable | None = None,
    exact_draws: Callable[..., dict[str, dict[str, np.ndarray]]] | None = None,
    numba_at_scale: bool = False,
) -> tuple[xr.DataTree, dict[str, float]]:
    """Draw from the posterior of ``model`` with ``sampler``.

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
    :func:`pymc.compute_log_likelihood` pass).  ``numba_at_scale``: see
    :func:`nutpie_backend`.
    """
    require(sampler)
    kwargs = dict(
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        progressbar=progressbar,
        target_accept=target_accept,
    )
    if sampler == "nutpie":
        return _sample_nutpie(model, **kwargs, key=key, numba_at_scale=numba_at_scale)
    if sampler == "pymc":
        return _sample_pymc(model, **kwargs)
    if sampler == "conjugate":
        return _sample_exact(model, **kwargs, exact_draws=exact_draws,
                             log_likelihood=log_likelihood)
    return _sample_numpyro(model, **kwargs, log_likelihood=log_likelihood, key=key)


def sample_batch(
    models: list[pm.Model],
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progressbar: bool,
    target_accept: float = 0.8,
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
        chains=chains,
        draws=draws,
        tune=tune,
        seed=seed,
        target_accept=target_accept,
        cache_key=None if key is None else (key, log_likelihood),
        progressbar=progressbar,
    )
    trees = [jax_inference_data(m, r) for m, r in zip(models, results, strict=True)]
    return trees, {**timings, "batch_size": len(models)}


def seed_or_new(random_seed: int | None) -> int:
    """``random_seed`` itself, or fresh entropy recorded so the fit can be repeated."""
    if random_seed is None:
        return int(np.random.SeedSequence().entropy % (2**31 - 1))
    seed = int(random_seed)
    if seed < 0:
        raise ValueError(f"random_seed must be a non-negative integer, got {random_seed!r}")
    return seed
