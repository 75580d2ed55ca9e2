"""nutpie's compiled functions kept on disk between processes (``function_store``)."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import stat
import subprocess
import sys

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
    from bayesrank.inference.cache import clear_cache
    from bayesrank.inference.nutpie_models import initial_points

    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "numba")
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


# -- a store that cannot be used against its user (issue 50) -------------------------------
def test_a_new_store_is_private_to_its_user(store):
    _compile("bradley_terry", _data(6))
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    (path,) = store.glob("*.pkl")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _compiles(monkeypatch) -> list:
    calls = []
    real = compile_pymc._make_functions

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compile_pymc, "_make_functions", counted)
    return calls


@pytest.mark.parametrize("target", ["directory", "file"])
def test_a_store_others_can_write_is_not_read(store, monkeypatch, target):
    """A group- or world-writable store directory or file is never unpickled: one warning,
    and the functions are compiled anew.  A writable directory is then left alone (each
    compile as with no store); a writable file in a private directory is replaced by a
    private one, which the next compile loads."""
    function_store._refuse.cache_clear()
    _compile("bradley_terry", _data(7))
    (path,) = store.glob("*.pkl")
    planted = pickle.dumps(_Boom())
    path.write_bytes(planted)  # what another user with write access could leave there
    (store if target == "directory" else path).chmod(0o777 if target == "directory" else 0o666)
    calls = _compiles(monkeypatch)
    with pytest.warns(RuntimeWarning, match="not using the function store.*other users can"
                      ) as caught:
        _compile("bradley_terry", _data(7))
        _compile("bradley_terry", _data(7))
    assert len([w for w in caught if "function store" in str(w.message)]) == 1
    if target == "directory":
        assert len(calls) == 2  # compiled each time, as with no store
        assert path.read_bytes() == planted
    else:
        assert len(calls) == 1
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_bytes() != planted


class _Boom:
    """Unpickling this runs code: the test fails if the store unpickles a planted file."""

    def __reduce__(self):
        return (_explode, ())


def _explode():
    raise AssertionError("a planted pickle was loaded")


def test_a_store_owned_by_another_user_is_not_read(store, monkeypatch):
    from bayesrank.data import private

    function_store._refuse.cache_clear()
    _compile("bradley_terry", _data(8))
    (path,) = store.glob("*.pkl")
    path.write_bytes(pickle.dumps(_Boom()))
    monkeypatch.setattr(private.os, "geteuid", lambda: os.getuid() + 1)  # we are someone else
    calls = _compiles(monkeypatch)
    with pytest.warns(RuntimeWarning, match="owned by user id"):
        _compile("bradley_terry", _data(8))
    assert len(calls) == 1


def test_a_link_in_the_store_is_not_followed(store, monkeypatch, tmp_path):
    _compile("bradley_terry", _data(9))
    (path,) = store.glob("*.pkl")
    elsewhere = tmp_path / "elsewhere.pkl"
    elsewhere.write_bytes(pickle.dumps(_Boom()))
    path.unlink()
    path.symlink_to(elsewhere)
    calls = _compiles(monkeypatch)
    _compile("bradley_terry", _data(9))
    assert len(calls) == 1
    assert not path.is_symlink()  # replaced by a compiled file of our own


def test_a_truncated_file_is_compiled_anew(store, monkeypatch):
    _compile("bradley_terry", _data(10))
    (path,) = store.glob("*.pkl")
    whole = path.read_bytes()
    for cut in (0, 1, len(whole) // 2, len(whole) - 1):
        path.write_bytes(whole[:cut])
        calls = _compiles(monkeypatch)
        _compile("bradley_terry", _data(10))
        assert len(calls) == 1
        assert function_store._load(path, _compile_model("bradley_terry", _data(10))) is not None


def _compile_model(name, data):
    return get_model(name).build(data)


_FILL = """
import hashlib
import numpy as np
import pymc as pm
from bayesrank import ResponseData
from bayesrank.models import get_model
from bayesrank.inference.cache import structure_key
from bayesrank.inference.fitting import _tag
from bayesrank.inference.log_likelihood import pointwise_log_likelihood
R = np.random.default_rng(11).integers(0, 2, (4, 6, 2))
spec = get_model("bradley_terry")
model = spec.build(ResponseData(R))
prior = pm.sample_prior_predictive(draws=20, model=model, random_seed=2).prior
observed = model.observed_RVs[0].name
values = pointwise_log_likelihood(prior, model, observed, structure_key(model, _tag(spec, {})))
print(hashlib.sha256(np.ascontiguousarray(values[observed].values).tobytes()).hexdigest())
"""


@pytest.mark.slow
@pytest.mark.extended("four processes compiling one model at once, 15 s on 2 busy cores; the "
                      "store's loads and writes run in make test")
def test_four_processes_fill_a_cold_store_at_once(store, monkeypatch):
    """Four processes compile the same model's log-likelihood into an empty store at the
    same time: all succeed with identical values at the same seeded prior draws, and the
    store holds one whole file (no temporary left) that a fifth process loads and gets the
    same values from.  (The log-likelihood rather than nutpie's functions: the same store
    code, without four Numba builds at once on a small machine.)"""
    env = {**os.environ, "BAYESRANK_FUNCTION_CACHE_DIR": str(store),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _FILL], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err[-2000:] for _, err in results]
    digests = {out.strip() for out, _ in results}
    assert len(digests) == 1
    assert [p.suffix for p in store.iterdir()] == [".pkl"]
    calls = _compiles_log_likelihood(monkeypatch)
    with contextlib.redirect_stdout(io.StringIO()) as warm:
        exec(_FILL, {})  # this process, loading what they stored
    assert calls == [] and warm.getvalue().strip() in digests


def _compiles_log_likelihood(monkeypatch) -> list:
    from bayesrank.inference import cache, log_likelihood

    cache.clear_cache()
    calls = []
    monkeypatch.setattr(log_likelihood, "_make_function", lambda *a: calls.append(a))
    return calls
