"""nutpie's compiled functions kept on disk between processes (``function_store``)."""

from __future__ import annotations

import numpy as np
import pytest
from bayesrank.models import get_model

from bayesrank import ResponseData

nutpie = pytest.importorskip("nutpie")
compile_pymc = pytest.importorskip("nutpie.compile_pymc")

from bayesrank.inference import function_store  # noqa: E402
from bayesrank.inference.backends import model_var_names  # noqa: E402
from bayesrank.inference.cache import structure_key  # noqa: E402
from bayesrank.inference.fitting import _tag  # noqa: E402
from bayesrank.inference.nutpie_models import compile_for_nutpie  # noqa: E402

RUN = dict(draws=150, tune=150, chains=2, cores=2, seed=5, progress_bar=False)


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.delenv("BAYESRANK_FUNCTION_CACHE", raising=False)
    return tmp_path / "store"


def _data(seed: int, order=None) -> ResponseData:
    R = np.random.default_rng(seed).integers(0, 2, (5, 8, 3))
    return ResponseData(R if order is None else R[order])


def _compile(name: str, data: ResponseData):
    spec = get_model(name)
    model = spec.build(data)
    key = structure_key(model, _tag(spec, {}))
    return model, key, compile_for_nutpie(model, "numba", model_var_names(model), key=key)


def _no_rebuild(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the functions were built again instead of loaded")

    monkeypatch.setattr(compile_pymc, "_make_functions", refuse)


def test_stored_functions_load_with_the_new_data_and_sample_its_posterior(store, monkeypatch):
    """Another data set of the same structure (the models reordered: same shapes, other
    values) loads the stored functions, and samples exactly what a compile for that data
    samples; the first data's posterior is another."""
    first_model, first_key, first = _compile("rasch", _data(0))
    assert len(list(store.glob("*.pkl"))) == 1
    second_data = _data(0, order=[4, 2, 0, 1, 3])
    with monkeypatch.context() as patch:
        _no_rebuild(patch)
        second_model, second_key, loaded = _compile("rasch", second_data)
    assert second_key == first_key
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE", "0")
    _, _, fresh = _compile("rasch", second_data)
    a = nutpie.sample(loaded, **RUN).posterior
    b = nutpie.sample(fresh, **RUN).posterior
    c = nutpie.sample(first, **RUN).posterior
    for name in model_var_names(second_model):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert not np.array_equal(a["theta"].values, c["theta"].values)
    # the loaded PyTensor functions hold the new data too, not the stored one
    x = loaded.initial_point_func(0)
    np.testing.assert_array_equal(loaded.logp_func(x)[1], fresh.logp_func(x)[1])


def test_a_damaged_file_is_compiled_anew_and_replaced(store, monkeypatch):
    _compile("bradley_terry", _data(1))
    (path,) = store.glob("*.pkl")
    path.write_bytes(b"not a pickle")
    _compile("bradley_terry", _data(1))
    assert path.read_bytes() != b"not a pickle"
    with monkeypatch.context() as patch:
        _no_rebuild(patch)
        _compile("bradley_terry", _data(1))  # the replacement loads


def test_functions_whose_data_do_not_match_the_model_are_not_used(store):
    model, key, _ = _compile("bradley_terry", _data(2))
    (path,) = store.glob("*.pkl")
    other = get_model("bradley_terry").build(ResponseData(np.ones((3, 8, 3), dtype=int)))
    assert function_store._load(path, model) is not None
    assert function_store._load(path, other) is None  # 3 models' data, stored for 5


def test_the_store_can_be_turned_off_and_keeps_the_newest_files(store, monkeypatch):
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE", "0")
    _compile("bradley_terry", _data(3))
    assert not store.exists()
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE", "1")
    monkeypatch.setattr(function_store, "MAX_FILES", 1)
    _compile("bradley_terry", _data(3))
    (kept,) = store.glob("*.pkl")
    _compile("bradley_terry", ResponseData(_data(3).R[:4]))  # another structure
    (newest,) = store.glob("*.pkl")
    assert newest != kept
    assert [p.name for p in store.iterdir()] == [newest.name]  # nothing left half-written


def test_a_fit_draws_the_same_whatever_the_process_compiled_before(monkeypatch):
    """Same data, same seed: the draws of a model compiled afresh, loaded from the store,
    or reused in memory from a fit to other data of the same structure are identical.
    The two data sets' initial points differ (the never and always solved questions sit
    elsewhere), so the reused model must take the new data's initial points, not keep the
    old ones."""
    import bayesrank
    from bayesrank.inference import backends
    from bayesrank.inference.cache import clear_cache
    from bayesrank.inference.nutpie_models import initial_points

    monkeypatch.setattr(backends, "NUTPIE_BACKEND", "numba")
    R = np.random.default_rng(4).integers(0, 2, (5, 8, 3))
    R[:, 0], R[:, 1] = 0, 1
    first, second = R, R[:, ::-1].copy()
    first_data, second_data = ResponseData(first), ResponseData(second)
    first_model, key, compiled = _compile("2pl", first_data)
    second_model, second_key, _ = _compile("2pl", second_data)
    assert key == second_key
    assert not np.array_equal(initial_points(first_model, compiled.shape_info)(0),
                              initial_points(second_model, compiled.shape_info)(0))

    def theta(data):
        return bayesrank.fit(data, "2pl", random_seed=3, draws=100, tune=100, chains=2,
                             progressbar=False, log_likelihood=False).theta_draws()

    clear_cache()
    theta(first_data)
    reused = theta(second_data)  # the compiled model of the first fit, in memory
    clear_cache()
    loaded = theta(second_data)  # from the store
    clear_cache()
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE", "0")
    fresh = theta(second_data)
    np.testing.assert_array_equal(reused, fresh)
    np.testing.assert_array_equal(loaded, fresh)
