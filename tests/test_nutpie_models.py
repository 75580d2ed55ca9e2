"""nutpie's models around PyTensor's compiled function: the C callbacks and the Python calls."""

from __future__ import annotations

import numpy as np
import pytest
from bayesrank.models import get_model

from bayesrank import ResponseData

nutpie = pytest.importorskip("nutpie")
from bayesrank.inference.backends import model_var_names  # noqa: E402
from bayesrank.inference.nutpie_models import (  # noqa: E402
    _callback_key,
    compile_for_nutpie,
    nutpie_numba_model,
    nutpie_pytensor_model,
)

RUN = dict(draws=150, tune=150, chains=2, cores=2, seed=11, progress_bar=False)


def _data(seed: int) -> ResponseData:
    R = np.random.default_rng(seed).integers(0, 2, (4, 7, 3))
    return ResponseData(R)


def test_c_callbacks_sample_exactly_what_pythons_calls_of_the_same_function_sample():
    """Same function, same seed: the callbacks' draws equal, bit for bit, the draws through
    PyTensor's function called from Python (nutpie_pytensor_model, an independent path:
    no address table, no callback)."""
    model = get_model("rasch").build(_data(0))
    names = model_var_names(model)
    assert len(model.data_vars) >= 2  # several data arrays read through the table
    via_c = nutpie.sample(nutpie_numba_model(model, names), **RUN).posterior
    via_python = nutpie.sample(nutpie_pytensor_model(model, names), **{**RUN, "cores": 1}).posterior
    for name in names:
        np.testing.assert_array_equal(via_c[name].values, via_python[name].values)


def test_swapped_data_of_the_same_shape_is_read_and_other_shapes_are_refused():
    """``with_data`` (reuse across data sets of one shape) samples the new data's posterior,
    the very draws of a model compiled for that data; another shape is an error."""
    first, second = (get_model("bradley_terry").build(_data(s)) for s in (1, 2))
    names = model_var_names(first)
    compiled = compile_for_nutpie(first, "numba", names)
    swapped = compiled.with_data(
        **{v.name: v.get_value() for v in second.data_vars})
    fresh = compile_for_nutpie(second, "numba", names)
    a = nutpie.sample(swapped, **RUN).posterior
    b = nutpie.sample(fresh, **RUN).posterior
    c = nutpie.sample(compiled, **RUN).posterior
    np.testing.assert_array_equal(a["theta"].values, b["theta"].values)
    assert not np.array_equal(a["theta"].values, c["theta"].values)  # the data did change
    name = first.data_vars[0].name
    value = first.data_vars[0].get_value()
    with pytest.raises(ValueError, match=rf"data '{name}' is .* of shape \(1,\)"):
        compiled.with_data(**{name: value[:1]})
    with pytest.raises(ValueError, match=rf"data '{name}' is complex128 of shape"):
        compiled.with_data(**{name: value.astype(complex)})
    with pytest.raises(KeyError, match="unknown data variable 'nope'"):
        compiled.with_data(nope=np.zeros(3))


def test_scalar_data_keeps_its_shape_so_a_reused_model_takes_its_own_data_back():
    """A 0-d ``pm.Data`` (the 2PL's ``theta_one_sided_shift``, present when a model solves
    nothing) stays 0-d in the compiled model.  It used to become shape (1,), so the second
    fit of the same data in one process (compiled-model reuse) raised "this compiled model
    takes float64 of shape (1,) only"; reused, the model samples the same draws."""
    R = np.random.default_rng(5).integers(0, 2, (4, 7, 3))
    R[0] = 0
    model = get_model("2pl").build(ResponseData(R))
    scalars = [v.name for v in model.data_vars if np.ndim(v.get_value()) == 0]
    assert "theta_one_sided_shift" in scalars
    names = model_var_names(model)
    compiled = compile_for_nutpie(model, "numba", names)
    reused = compiled.with_data(**{v.name: v.get_value(borrow=True) for v in model.data_vars})
    a = nutpie.sample(compiled, **RUN).posterior
    b = nutpie.sample(reused, **RUN).posterior
    np.testing.assert_array_equal(a["theta"].values, b["theta"].values)


def test_initial_points_asked_from_several_threads_at_once_are_all_whole():
    """nutpie's chains ask for initial points concurrently; PyTensor's function shares its
    output storage between calls, so unguarded calls return missing values (115 of 1,200
    on ZeroEval's Bradley-Terry, 4 threads)."""
    import threading

    from bayesrank.inference.nutpie_models import _functions

    model = get_model("bradley_terry").build(_data(3))
    n_dim, *_, initial_point, _, _ = _functions(model, model_var_names(model), "NUMBA", True)
    failures, points = [], []

    def ask(thread: int) -> None:
        for seed in range(150):
            try:
                points.append(initial_point(1000 * thread + seed))
            except Exception as exc:  # noqa: BLE001 - any failure is the finding
                failures.append(exc)

    threads = [threading.Thread(target=ask, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert len(points) == 600 and all(p.shape == (n_dim,) and np.isfinite(p).all() for p in points)


def test_a_callback_compiled_once_loads_from_the_disk_cache_and_samples_the_same_draws():
    """The second compile of one model loads both callbacks from Numba's on-disk cache
    (keyed by PyTensor's key of the function, the callback's source and its constants)
    and samples what the freshly compiled callbacks sampled; another data shape or
    source has another key."""
    model = get_model("davidson").build(_data(3))
    names = model_var_names(model)
    first = nutpie_numba_model(model, names)
    again = nutpie_numba_model(get_model("davidson").build(_data(3)), names)
    assert again.compiled_logp_func.cache_hits == 1
    assert again.compiled_expand_func.cache_hits == 1
    a = nutpie.sample(first, **RUN).posterior
    b = nutpie.sample(again, **RUN).posterior
    for name in names:
        np.testing.assert_array_equal(a[name].values, b[name].values)
    fn = first.logp_func.vm.jit_fn
    key = _callback_key(fn, "source", {"SHAPE0": (6,)})
    assert key is not None and key != _callback_key(fn, "source", {"SHAPE0": (10,)})
    assert key != _callback_key(fn, "other source", {"SHAPE0": (6,)})


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_deterministics_made_after_sampling_equal_those_the_sampler_stores(monkeypatch):
    """Beyond the budget nutpie stores the free variables only and the deterministics are
    made from their draws after sampling (memory, issue 47): the same posterior, the same
    variables in the same order, every value as the sampler's own to rounding."""
    import bayesrank
    from bayesrank.datatree import group
    from bayesrank.inference import backends

    data = _data(3)
    options = dict(model="2pl", draws=200, tune=200, chains=2, random_seed=5)
    stored = group(bayesrank.fit(data, **options).idata, "posterior")
    model = get_model("2pl").build(data)
    assert backends.stored_var_names(model, 400) == model_var_names(model)
    monkeypatch.setattr(backends, "SAMPLER_DETERMINISTIC_VALUES", 0)
    free = [v.name for v in model.free_RVs]
    assert backends.stored_var_names(model, 400) == free
    made = group(bayesrank.fit(data, **options).idata, "posterior")
    assert list(made.data_vars) == list(stored.data_vars)
    assert {v.name for v in model.deterministics} <= set(made.data_vars) - set(free)
    for name in stored.data_vars:
        assert made[name].dims == stored[name].dims
        np.testing.assert_allclose(made[name].values, stored[name].values, rtol=1e-12,
                                   atol=1e-12, err_msg=name)
    # a compiled model reused for other labels: the made draws take the new labels
    renamed = ResponseData(data.R, models=[f"m{i}" for i in range(data.R.shape[0])],
                           questions=[f"q{i}" for i in range(data.R.shape[1])])
    again = group(bayesrank.fit(renamed, **options).idata, "posterior")
    assert list(again["b"].coords["question"].values) == list(renamed.questions)
    assert list(again["theta"].coords["llm"].values) == list(renamed.models)
    np.testing.assert_allclose(again["b"].values, stored["b"].values, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
@pytest.mark.parametrize("model", ["rasch", "2pl"])
def test_draws_written_to_disk_read_back_as_the_in_memory_draws(monkeypatch, tmp_path, model):
    """Beyond the in-memory budget nutpie writes its draws to a temporary zarr store (memory,
    issue 47): the fit returns the same posterior and sampler statistics as the in-memory
    path, bit for bit, and leaves no file behind."""
    import tempfile

    import bayesrank
    from bayesrank.inference import backends

    data = _data(4)
    options = dict(model=model, draws=200, tune=200, chains=2, random_seed=9)
    memory = bayesrank.fit(data, **options).idata
    monkeypatch.setattr(backends, "IN_MEMORY_TRACE_VALUES", 0)
    # the 2PL also with its deterministics made after sampling: equal to rounding
    monkeypatch.setattr(backends, "SAMPLER_DETERMINISTIC_VALUES", 0 if model == "2pl" else 2**26)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folders = []
    read = backends._read_trace

    def spy(idata, names):
        folders.extend(tmp_path.glob("bayesrank-draws-*"))
        return read(idata, names)

    monkeypatch.setattr(backends, "_read_trace", spy)
    fitted = bayesrank.fit(data, **options)
    disk = fitted.idata
    assert len(folders) == 1 and not folders[0].exists()
    assert fitted.leaderboard().shape[0] == data.R.shape[0]
    for name in ("posterior", "sample_stats"):
        a, b = memory[name].to_dataset(), disk[name].to_dataset()
        # laid out per divergence or per flow update on disk, per draw in memory; unread
        a = a.drop_vars(list(backends.PER_DRAW_IN_MEMORY_ONLY), errors="ignore")
        assert sorted(b.data_vars) == sorted(a.data_vars), name
        assert name != "posterior" or list(b.data_vars) == list(a.data_vars)
        assert sorted(b.coords) == sorted(a.coords), name
        for coord in a.coords:
            np.testing.assert_array_equal(b[coord].values, a[coord].values)
        assert set(b.attrs) >= {"created_at", "sample_dims"}, name
        for var in a.data_vars:
            assert b[var].dims == a[var].dims, var
            np.testing.assert_allclose(b[var].values, a[var].values, rtol=1e-12, atol=1e-12,
                                       err_msg=var)
            if model == "rasch":  # every variable from the sampler itself: bit for bit
                np.testing.assert_array_equal(b[var].values, a[var].values, err_msg=var)
