"""nutpie's compiled models around PyTensor's own compiled log-density and gradient.

PyTensor 3 compiles a model's log-density and gradient with Numba and keeps the whole
function in its on-disk cache, so a model compiled once on a machine loads in about a
second afterwards.  Two ways to hand that function to nutpie's Rust sampler:

- :func:`nutpie_numba_model`: a small Numba C callback (``cfunc``) that reads the data
  arrays through a table of addresses and calls PyTensor's function.  The sampler calls it
  without Python, so the chains run in parallel.  nutpie's own Numba build wraps the same
  function in a callback that reads the data from a record by field name, which Numba
  compiles anew on every fit (13-80 s; profiled: type inference and lowering of string
  and record overloads, not the model).  With this callback a model compiles in 2-15 s
  with PyTensor's cache warm (5-50 s for a graph, model and data shape, new to the
  machine); the callbacks are cached on disk too (:func:`_callback_key`), which takes
  a warm compile to about half a second.  They read the data's shapes at run time, so
  one callback serves every data set of a graph whose shapes do not depend on the data's
  (Davidson-Luce's events: with the function store keyed without their lengths, a new
  LiveCodeBench subsample's compile went from 19-23 s to about 2 s, docs/samplers.md).
- :func:`nutpie_pytensor_model`: PyTensor's function called from Python for every
  gradient (nutpie's ``from_pyfunc``); no callback to compile, but the calls hold Python's
  interpreter lock, so its chains run on one thread.

Both use two of nutpie's private helpers (``_make_functions``, which builds the flat
parameter vector, initial points and the trace's extra variables as for nutpie's other
back ends, and ``_prepare_dims_and_coords``), hence the pin on nutpie's minor versions;
``tests/test_fitting.py`` and ``tests/test_nutpie_models.py`` sample through both.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import threading
from collections.abc import Callable

import numpy as np
import pymc as pm

from bayesrank.inference.cache import cached, data_only_axes, same_layout
from bayesrank.inference.function_store import load_or_make, put_data

__all__ = ["compile_for_nutpie", "nutpie_cores", "nutpie_numba_model", "nutpie_pytensor_model"]


def one_at_a_time(initial_point):
    """``initial_point(seed)`` behind a lock.

    nutpie's chains ask for their initial points from several threads at once, and a
    PyTensor function's output storage is shared between calls: unguarded, 115 of 1,200
    concurrent calls from 4 threads returned an initial value None (nutpie: "Failed to
    initialize point"; seen once in a default fit under load).
    """
    lock = threading.Lock()

    def guarded(seed):
        with lock:
            return initial_point(seed)

    return guarded


def initial_point_function(model: pm.Model):
    """PyMC's compiled function of ``model``'s jittered support points (transformed), seeded
    through its random generators (:func:`initial_points`)."""
    from pymc.initial_point import make_initial_point_fn

    seeded = make_initial_point_fn(
        model=model, jitter_rvs=set(model.free_RVs), default_strategy="support_point",
        return_transformed=True,
    )
    return seeded.__wrapped__  # the compiled function PyMC's seeded wrapper calls


def initial_points(model: pm.Model, shape_info, fn=None) -> Callable:
    """PyMC's jittered support points of ``model``'s free variables as nutpie's flat vector.

    Some depend on the data (the walls of one-sided abilities and intercepts), so a model
    compiled for other data of the same structure takes this model's initial points with
    its data: then a fit's draws depend on its seed and data only, not on what the process
    fitted before (in ``make test-real`` a reused 2PL started from another set's points).
    ``fn``: :func:`initial_point_function` of a model of the same structure holding
    ``model``'s data (compiling it took 0.2-0.7 s of an AIME 2PL fit, so it is kept with the
    model's other functions); by default compiled here.
    """
    from nutpie.compile_pymc import _rv_dict_to_flat_array_wrapper
    from pymc.pytensorf import find_rng_nodes, reseed_rngs

    fn = initial_point_function(model) if fn is None else fn
    rngs = find_rng_nodes(fn.maker.fgraph.outputs)
    values = [model.rvs_to_values[rv].name for rv in model.free_RVs]  # in the outputs' order
    free = len(model.free_RVs)

    def point(seed):
        reseed_rngs(rngs, seed)
        return dict(zip(values, fn(), strict=True))

    return one_at_a_time(_rv_dict_to_flat_array_wrapper(
        point, names=shape_info[0][:free], shapes=shape_info[2][:free]))


def with_model_data(compiled, model: pm.Model, key=None):
    """``compiled`` (a Numba model of ``model``'s structure ``key``) with ``model``'s data and
    initial points."""
    swapped = compiled.with_data(**{v.name: v.get_value(borrow=True) for v in model.data_vars})
    fn, reused = cached(None if key is None else ("initial-points", key),
                        lambda: initial_point_function(model))
    if reused and not put_data((fn,), model):
        fn = initial_point_function(model)  # not expected: the key fixes the data's shapes
    return dataclasses.replace(
        swapped, initial_point_func=initial_points(model, compiled.shape_info, fn))


def _functions(model: pm.Model, var_names: list[str], mode: str | None, join_expanded: bool,
               key=None):
    """nutpie's ``_make_functions`` with PyMC's jittered initial points (:func:`initial_points`).

    With a structure ``key`` (:func:`bayesrank.inference.cache.structure_key`), the
    compiled functions come from :mod:`.function_store` when an earlier process stored
    them.
    """
    from nutpie.compile_pymc import _make_functions

    def make():
        # nutpie only wraps the initial-point function; ours is compiled and kept with these
        n_dim, n_expanded, logp_fn, expand_fn, _, shape_info, reparameterized = _make_functions(
            model, mode=mode, compute_grad=True, join_expanded=join_expanded,
            pymc_initial_point_fn=lambda seed: {}, var_names=var_names,
        )
        return (n_dim, n_expanded, logp_fn, expand_fn, shape_info, reparameterized,
                initial_point_function(model))

    store_key = None if key is None else ("nutpie-functions", key, tuple(var_names), mode,
                                          join_expanded)
    n_dim, n_expanded, logp_fn, expand_fn, shape_info, reparameterized, initial_fn = (
        load_or_make(store_key, model, make))
    if key is not None:  # for a later fit of this structure in the process (with_model_data)
        cached(("initial-points", key), lambda: initial_fn)
    return (n_dim, n_expanded, logp_fn, expand_fn, initial_points(model, shape_info, initial_fn),
            shape_info, reparameterized)


def _callback_source(kind: str, ndims: list[int], start: int, stop: int) -> str:
    """Source of the C callback nutpie calls: log-density and gradient, or the expansion.

    The address table (:func:`_address_table`) holds the flat parameters' and the expanded
    values' sizes, then every data array's address (``ndims``: each one's number of
    axes), then their shapes.  The callback's arrays, ``start`` to ``stop``, are rebuilt
    from it, each with its dtype fixed at compile time (``DTYPE{i}``) and its shape read at
    run time, so one compiled callback serves data of any shape.  Return codes as nutpie's:
    0 fine, 3 non-finite gradient, 4 non-finite log-density.
    """
    at = 2 + len(ndims) + sum(ndims[:start])  # where array ``start``'s shape begins
    data = ""
    for i, ndim in enumerate(ndims[start:stop]):
        shape = "".join(f"table[{at + d}], " for d in range(ndim))
        data += f"    s{i} = carray(as_pointer(table[{2 + start + i}]), ({shape}), DTYPE{i})\n"
        at += ndim
    args = "".join(f", s{i}" for i in range(stop - start))
    head = "    table = carray(user_data_, (N_TABLE,), np.int64)\n"
    if kind == "logp":
        return (
            "def callback(dim, x_, out_, logp_, user_data_):\n" + head +
            "    n = table[0]\n    if dim != n:\n        return -1\n" + data +
            "    x = carray(x_, (n,))\n    out = carray(out_, (n,))\n"
            f"    value, grad = fn(x{args})\n"
            "    logp = carray(logp_, (1,))\n    logp[0] = value[()]\n"
            "    for i in range(n):\n        out[i] = grad[i]\n"
            "    for i in range(n):\n        if not isfinite(grad[i]):\n            return 3\n"
            "    return 0 if isfinite(logp[0]) else 4\n")
    return (
        "def callback(dim, expanded, x_, out_, user_data_):\n" + head +
        "    n, m = table[0], table[1]\n"
        "    if dim != n or expanded != m:\n        return -1\n" + data +
        "    x = carray(x_, (n,))\n    out = carray(out_, (m,))\n"
        f"    (values,) = fn(x{args})\n"
        "    for i in range(m):\n        out[i] = values[i]\n    return 0\n")


def _callback(kind: str, fn, arrays: list[np.ndarray], start: int, stop: int):
    """Compile the C callback of ``kind`` ("logp" or "expand") around PyTensor's ``fn``,
    which reads the data ``arrays[start:stop]`` (of all the table's ``arrays``)."""
    import math

    import numba
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
    from pytensor.link.numba.cache import compile_numba_function_src

    @intrinsic
    def as_pointer(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], cgutils.voidptr_t)

        return types.voidptr(address), codegen

    ndims = [a.ndim for a in arrays]
    constants = {"N_TABLE": 2 + len(ndims) + sum(ndims)}
    for i, a in enumerate(arrays[start:stop]):
        constants[f"DTYPE{i}"] = a.dtype
    source = _callback_source(kind, ndims, start, stop)
    key = _callback_key(fn, source, constants)
    env = {"__name__": __name__, "np": np, "carray": numba.carray, "as_pointer": as_pointer,
           "isfinite": math.isfinite, "fn": fn, **constants}
    callback = compile_numba_function_src(source, "callback", global_env=env, cache_key=key)
    double = types.CPointer(types.double)
    signature = (
        types.int64(types.uint64, double, double, double, types.voidptr) if kind == "logp" else
        types.int64(types.uint64, types.uint64, double, double, types.voidptr))
    return numba.cfunc(signature, cache=key is not None)(callback)


def _callback_key(fn, source: str, constants: dict) -> str | None:
    """The on-disk cache key of a callback around PyTensor's cached function ``fn``.

    Numba compiles PyTensor's function into every callback that calls it, and finalising
    that code again took most of a large model's compile (13.9 of Davidson-Luce's 17.2 s on
    43 x 400 x 10, cache warm); cached, the callback loads as PyTensor's function does.
    The key is PyTensor's key of ``fn`` (its graph) with the callback's source and the
    constants compiled into it; None (compile, do not cache) when PyTensor keeps no key.
    """
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

    callee = CACHED_SRC_FUNCTIONS.get(getattr(fn, "py_func", None))
    if callee is None:
        return None
    text = "\n".join([_this_module_hash(), callee, source,
                      *(f"{k}={v!r}" for k, v in sorted(constants.items()))])
    return "bayesrank-callback-" + hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _this_module_hash() -> str:
    """A changed callback builder (this file) compiles new callbacks instead of loading old ones."""
    with open(__file__, "rb") as source:
        return hashlib.sha256(source.read()).hexdigest()


def _address_table(arrays: list[np.ndarray], n_dim: int, n_out: int) -> np.ndarray:
    """[n_dim, n_out, the arrays' addresses, their shapes] (:func:`_callback_source`)."""
    return np.array([n_dim, n_out, *(a.ctypes.data for a in arrays),
                     *(d for a in arrays for d in a.shape)], dtype=np.int64)


def nutpie_numba_model(model: pm.Model, var_names: list[str], key=None):
    """nutpie's Numba model of ``model`` through small C callbacks (module docstring).

    The data arrays' dtypes are compiled into the callbacks, their shapes read at run
    time; ``with_data`` takes arrays of the same shapes (any length along
    :data:`~bayesrank.inference.cache.DATA_ONLY_DIMS`) and dtypes only, as
    :func:`bayesrank.inference.cache.structure_key` guarantees for a reused model.
    """
    from nutpie.compile_pymc import _prepare_dims_and_coords

    n_dim, n_expanded, logp_fn, expand_fn, initial_flat, shape_info, reparameterized = (
        _functions(model, var_names, "NUMBA", join_expanded=True, key=key))
    shared = {}
    for var in (*logp_fn.get_shared(), *expand_fn.get_shared()):
        shared.setdefault(var.name, (var, np.asarray(var.get_value(borrow=True), order="C")))
    logp_names = [v.name for v in logp_fn.get_shared()]
    names = logp_names + [v.name for v in expand_fn.get_shared()]
    arrays = [shared[name][1] for name in names]
    split = len(logp_names)
    logp_c = _callback("logp", logp_fn.vm.jit_fn, arrays, 0, split)
    expand_c = _callback("expand", expand_fn.vm.jit_fn, arrays, split, len(names))
    dims, coords = _prepare_dims_and_coords(model, shape_info, reparameterized)
    return _addressed_model_class()(
        _n_dim=n_dim, dims=dims, _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*shape_info, strict=True)},
        compiled_logp_func=logp_c, compiled_expand_func=expand_c,
        initial_point_func=initial_flat,
        shared_data={name: shared[name][1] for name in shared},
        shared_var_keys={shared[name][0]: name for name in shared},
        user_data=_address_table(arrays, n_dim, n_expanded), n_expanded=n_expanded,
        shape_info=shape_info,
        logp_func=logp_fn, expand_func=expand_fn, table_names=tuple(names),
        free_axes={name: data_only_axes(model, name) for name in shared},
    )


@functools.cache
def _addressed_model_class():
    """nutpie's compiled PyMC model whose ``user_data`` is a table of data addresses."""
    from nutpie.compile_pymc import CompiledPyMCModel

    @dataclasses.dataclass(frozen=True)
    class AddressedModel(CompiledPyMCModel):
        table_names: tuple[str, ...] = ()  # the data behind each table entry, in order
        free_axes: dict = dataclasses.field(default_factory=dict)  # cache.data_only_axes

        def with_data(self, **updates):
            data = dict(self.shared_data)
            for name, value in updates.items():
                if name not in data:
                    raise KeyError(f"unknown data variable {name!r}")
                old, new = data[name], np.array(value, order="C", copy=True)
                if not same_layout(old, new, self.free_axes.get(name, ())):
                    raise ValueError(
                        f"data {name!r} is {new.dtype} of shape {new.shape}; this compiled "
                        f"model takes {old.dtype} of shape {old.shape} only (any length "
                        "along a data-only dim)")
                data[name] = new
            table = _address_table([data[name] for name in self.table_names], self._n_dim,
                                   self.n_expanded)
            return dataclasses.replace(self, shared_data=data, user_data=table)

    return AddressedModel


def nutpie_pytensor_model(model: pm.Model, var_names: list[str]):
    """nutpie's model around PyTensor's compiled log-density-and-gradient, called from Python.

    Each chain gets its own copy of the functions (their output buffers are reused
    between calls); the chains run on one thread, since every call holds Python's
    interpreter lock.
    """
    from nutpie.compile_pymc import _prepare_dims_and_coords
    from nutpie.compiled_pyfunc import from_pyfunc

    n_dim, _, logp_fn, expand_fn, initial_flat, shape_info, reparameterized = _functions(
        model, var_names, None, join_expanded=False)
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


def compile_for_nutpie(model: pm.Model, backend: str, var_names: list[str], key=None):
    """nutpie's compiled model of ``model`` with ``backend`` ("numba", "pytensor" or "jax").

    ``key``: the model's structure key; the Numba build then keeps its functions on disk
    (:mod:`.function_store`).
    """
    if backend == "numba":
        return nutpie_numba_model(model, var_names, key=key)
    if backend == "pytensor":
        return nutpie_pytensor_model(model, var_names)
    import nutpie

    compiled = nutpie.compile_pymc_model(model, var_names=var_names, backend="jax",
                                         gradient_backend="jax")
    return dataclasses.replace(
        compiled, _make_initial_points=one_at_a_time(compiled._make_initial_points))


def nutpie_cores(backend: str, chains: int) -> int:
    """Threads for nutpie's chains: one for "pytensor", whose calls hold the GIL."""
    return 1 if backend == "pytensor" else min(chains, os.cpu_count() or 1)
