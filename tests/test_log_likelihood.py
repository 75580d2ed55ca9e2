"""The pointwise log-likelihood compiled once per model structure (``inference.log_likelihood``)
against PyMC's :func:`pymc.compute_log_likelihood`, the oracle."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from bayesrank.models import get_model, scoring_model

from bayesrank import ResponseData
from bayesrank.datatree import group
from bayesrank.inference import function_store
from bayesrank.inference.cache import clear_cache, structure_key
from bayesrank.inference.fitting import _tag
from bayesrank.inference.log_likelihood import pointwise_log_likelihood

MODELS = ["rasch", "2pl", "3pl", "bradley_terry", "davidson", "davidson_luce"]


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE_DIR", str(tmp_path / "store"))
    monkeypatch.delenv("BAYESRANK_FUNCTION_CACHE", raising=False)
    clear_cache()
    yield tmp_path / "store"
    clear_cache()


def _data(seed: int) -> ResponseData:
    """5 models x 8 questions x 3 trials with a question nobody solves, one everybody solves
    and a model that solves nothing (the Rasch scores its collapsed difficulties then)."""
    R = np.random.default_rng(seed).integers(0, 2, (5, 8, 3))
    R[:, 0], R[:, 1], R[4] = 0, 1, 0
    return ResponseData(R)


def _prior_as_posterior(model: pm.Model, seed: int) -> xr.Dataset:
    """12 jittered initial points of the free variables (constrained) shaped as a posterior
    (2 chains x 6 draws): inputs at which both implementations are evaluated, without NUTS
    (the 3PL's flat prior has no draws of its own)."""
    from pymc.initial_point import make_initial_point_fn

    points = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs),
                                   return_transformed=False)
    draws = [points(seed + i) for i in range(12)]
    variables, coords = {}, {"chain": [0, 1], "draw": np.arange(6)}
    for rv in model.free_RVs:
        values = np.stack([d[rv.name] for d in draws])
        dims = model.named_vars_to_dims.get(rv.name) or tuple(
            f"{rv.name}_dim_{i}" for i in range(values.ndim - 1))
        variables[rv.name] = (("chain", "draw", *dims), values.reshape(2, 6, *values.shape[1:]))
        coords.update({d: list(model.coords[d]) for d in dims if d in model.coords})
    return xr.Dataset(variables, coords=coords)


def _pymc(posterior: xr.Dataset, model: pm.Model, var: str) -> xr.DataArray:
    tree = pm.compute_log_likelihood(xr.DataTree.from_dict({"posterior": posterior}),
                                     model=model, var_names=[var],
                                     extend_inferencedata=False, progressbar=False)
    return (group(tree, "log_likelihood") if isinstance(tree, xr.DataTree) else tree)[var]


@pytest.mark.parametrize("name", MODELS)
def test_pointwise_log_likelihood_is_pymcs_with_its_dims(name):
    spec = get_model(name)
    model = spec.build(_data(0))
    var = spec.observed_var(model)
    scoring = scoring_model(model)
    posterior = _prior_as_posterior(scoring, seed=1)
    ours = pointwise_log_likelihood(posterior, scoring, var,
                                    key=structure_key(model, _tag(spec, {})))[var]
    oracle = _pymc(posterior, scoring, var)
    assert ours.dims == oracle.dims
    for dim in ours.dims[2:]:
        assert list(ours[dim].values) == list(oracle[dim].values)
    np.testing.assert_allclose(ours.values, oracle.values, rtol=1e-9, atol=1e-12)
    assert np.isfinite(ours.values).all()


@pytest.mark.parametrize("name", ["rasch", "2pl"])
def test_a_reused_function_scores_the_new_data(name, store, monkeypatch):
    """Another data set of the same structure reuses the compiled function, within the
    process and from the store in a fresh one, and gets its own values, not the first's."""
    spec = get_model(name)
    first, second = spec.build(_data(0)), spec.build(_data(3))
    key = structure_key(first, _tag(spec, {}))
    assert structure_key(second, _tag(spec, {})) == key
    var = spec.observed_var(first)
    posterior = _prior_as_posterior(scoring_model(second), seed=2)
    first_values = pointwise_log_likelihood(posterior, scoring_model(first), var, key)[var].values
    assert len(list(store.glob("*.pkl"))) == 1
    oracle = _pymc(posterior, scoring_model(second), var).values
    assert not np.allclose(first_values, oracle)

    from bayesrank.inference import log_likelihood

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again instead of reused")

    monkeypatch.setattr(log_likelihood, "_make_function", refuse)
    in_process = pointwise_log_likelihood(posterior, scoring_model(second), var, key)[var]
    np.testing.assert_allclose(in_process.values, oracle, rtol=1e-9, atol=1e-12)
    clear_cache()
    from_store = pointwise_log_likelihood(posterior, scoring_model(second), var, key)[var]
    np.testing.assert_allclose(from_store.values, oracle, rtol=1e-9, atol=1e-12)


def test_a_function_that_does_not_take_the_data_is_refused():
    """put_data matches shared variables by name, shape and dtype; a mismatch copies nothing."""
    spec = get_model("rasch")
    small, large = spec.build(_data(0)), spec.build(ResponseData(np.zeros((6, 8, 3), int)))
    var = spec.observed_var(small)
    from bayesrank.inference.log_likelihood import log_likelihood_function

    functions = log_likelihood_function(scoring_model(small), var)
    before = [v.get_value().copy() for v in functions[0].get_shared()]
    assert not function_store.put_data(functions, scoring_model(large))
    after = [v.get_value() for v in functions[0].get_shared()]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_a_kept_function_that_refuses_the_data_is_compiled_anew(monkeypatch):
    """Should a kept function not take a model's data (the structure key rules it out), the
    log-likelihood is compiled for that model instead of scoring it with another's data."""
    from bayesrank.inference import log_likelihood

    spec = get_model("2pl")
    first, second = spec.build(_data(0)), spec.build(_data(3))
    key = structure_key(first, _tag(spec, {}))
    var = spec.observed_var(first)
    posterior = _prior_as_posterior(scoring_model(second), seed=4)
    pointwise_log_likelihood(posterior, scoring_model(first), var, key)
    monkeypatch.setattr(log_likelihood, "put_data", lambda functions, model: False)
    got = pointwise_log_likelihood(posterior, scoring_model(second), var, key)[var]
    np.testing.assert_allclose(got.values, _pymc(posterior, scoring_model(second), var).values,
                               rtol=1e-9, atol=1e-12)
