"""One options object carries how to sample from fit and fit_many to the back ends (issue 51)."""

from __future__ import annotations

import numpy as np
import pytest

import bayesrank as br
from bayesrank import DataError, ResponseData
from bayesrank.inference import backends
from bayesrank.inference.options import DEFAULT_TUNE, SamplerOptions

# short exact draws: ESS below the fit's bar by design, the draws are what is compared
pytestmark = pytest.mark.filterwarnings(
    "ignore::bayesrank.inference.diagnostics.SamplingWarning")


@pytest.fixture(scope="module")
def data() -> ResponseData:
    R = np.random.default_rng(5).integers(0, 2, (4, 12, 3))
    return ResponseData(R)


def _theta(post) -> np.ndarray:
    return post.idata.posterior["theta"].to_numpy()


def test_an_options_object_and_keywords_give_the_same_fit(data):
    opts = SamplerOptions(draws=60, chains=2, random_seed=11, progressbar=False)
    by_object = br.fit(data, "bayes", opts)
    by_keywords = br.fit(data, "bayes", draws=60, chains=2, random_seed=11, progressbar=False)
    np.testing.assert_array_equal(_theta(by_object), _theta(by_keywords))
    assert _theta(by_object).shape[:2] == (2, 60)
    # a keyword replaces that field of the object; the object itself is left as it was
    other = br.fit(data, "bayes", opts, random_seed=12)
    assert not np.array_equal(_theta(other), _theta(by_object))
    assert opts.random_seed == 11
    assert other.idata.posterior.attrs["random_seed"] == 12


def test_fit_many_takes_the_same_object(data):
    opts = SamplerOptions(draws=40, chains=1, random_seed=3, progressbar=False)
    first, second = br.fit_many([data, data], "bayes", opts)
    again = br.fit_many([data, data], "bayes", draws=40, chains=1, random_seed=3,
                        progressbar=False)
    np.testing.assert_array_equal(_theta(first), _theta(again[0]))
    np.testing.assert_array_equal(_theta(second), _theta(again[1]))
    assert not np.array_equal(_theta(first), _theta(second))  # one seed per dataset


def test_model_options_pass_through_beside_the_sampler_options():
    opts, rest = SamplerOptions.split(None, {"draws": 10, "use_R0": True, "ties": "davidson"})
    assert opts == SamplerOptions(draws=10)
    assert rest == {"use_R0": True, "ties": "davidson"}


@pytest.mark.parametrize("bad, message", [
    ({"draws": 0}, "draws must be a positive integer"),
    ({"draws": 10.0}, "draws must be a positive integer"),
    ({"tune": -1}, "tune must be an integer >= 0"),
    ({"chains": True}, "chains must be a positive integer"),
    ({"target_accept": 1.0}, r"target_accept must lie in \(0, 1\)"),
    ({"random_seed": -3}, "random_seed must be a non-negative integer"),
])
def test_bad_options_are_refused_when_made(bad, message):
    with pytest.raises((DataError, ValueError), match=message):
        SamplerOptions(**bad)


def test_options_that_are_not_an_options_object_are_refused(data):
    with pytest.raises(TypeError, match="options must be a SamplerOptions"):
        br.fit(data, "bayes", {"draws": 10})


def test_resolved_options_fill_every_default():
    opts = SamplerOptions(chains=2)
    assert not opts.is_resolved
    run = opts.resolved(sampler="pymc", draws=100, seed=7, progressbar=False, target_accept=0.9)
    assert run.is_resolved
    assert (run.sampler, run.draws, run.tune, run.random_seed) == ("pymc", 100, 1000, 7)
    assert run.tune == DEFAULT_TUNE["pymc"]
    assert SamplerOptions(tune=0).resolved(sampler="nutpie", draws=1, seed=0, progressbar=False,
                                           target_accept=0.8).tune == 0
    with pytest.raises(ValueError, match="resolved options"):
        backends.sample(None, opts)


def test_the_nutpie_back_end_is_read_from_the_environment_when_used(monkeypatch):
    """Not at import: a variable set after ``import bayesrank`` takes effect."""
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "pytensor")
    assert backends.nutpie_backend() == "pytensor"
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "jax")
    assert backends.nutpie_backend() == "jax"
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "fortran")
    with pytest.raises(ValueError, match="BAYESRANK_NUTPIE_BACKEND must be"):
        backends.nutpie_backend()
