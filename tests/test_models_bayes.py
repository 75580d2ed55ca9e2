"""Bayes@N Dirichlet-multinomial model vs the closed form and scipy densities."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from bayesrank.models import bayes
from scipy import stats

import bayesrank
from bayesrank import DataError, ResponseData
from bayesrank.inference.fitting import fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:arviz")


def binary_data(seed=0, L=4, M=6, N=10, prior=None):
    rng = np.random.default_rng(seed)
    p = rng.beta(1.0, 1.0, (L, M))
    R = (rng.random((L, M, N)) < p[..., None]).astype(int)
    R0 = None
    if prior == "per_model":
        R0 = (rng.random((L, M, 2)) < p[..., None]).astype(int)
    elif prior == "shared":
        R0 = rng.integers(0, 2, (M, 1))
    return ResponseData(R, R0=R0)


def categorical_data(seed=1, L=3, M=5, N=8):
    """Three categories, shared prior outcomes, some missing trials, non-default weights."""
    rng = np.random.default_rng(seed)
    R = rng.integers(0, 3, (L, M, N))
    mask = rng.random((L, M, N)) > 0.2
    R0 = rng.integers(0, 3, (M, 2))
    return ResponseData(R, R0=R0, mask=mask, weights=[0.0, 0.3, 1.0])


def assert_matches_closed_form(post, data, R0=None, k=4.0):
    """Posterior mean and sd of theta within k Monte Carlo standard errors of Bayes@N."""
    mu, sigma = bayesrank.bayes_at_n(data, R0=R0)
    theta = post.idata.posterior["theta"]
    mean = theta.mean(("chain", "draw")).values
    sd = theta.std(("chain", "draw")).values
    mcse_mean = az.mcse(post.idata, var_names=["theta"], method="mean")["theta"].values
    mcse_sd = az.mcse(post.idata, var_names=["theta"], method="sd")["theta"].values
    np.testing.assert_array_less(np.abs(mean - mu), k * mcse_mean)
    np.testing.assert_array_less(np.abs(sd - sigma), k * mcse_sd)


def test_one_r0_default_everywhere():
    """rank(d, "bayes"), closed_form(d), fit(d, "bayes"): the uniform prior unless asked."""
    data = binary_data(prior="shared")
    uniform_mu, _ = bayesrank.bayes_at_n(data, R0=None)
    prior_mu, _ = bayesrank.bayes_at_n(data, R0="data")
    assert not np.allclose(uniform_mu, prior_mu)  # the prior matters on these data
    np.testing.assert_allclose(bayesrank.bayes_at_n(data)[0], uniform_mu)
    np.testing.assert_allclose(bayesrank.rank(data, "bayes").scores, uniform_mu)
    np.testing.assert_allclose(bayesrank.closed_form(data).mu, uniform_mu)
    np.testing.assert_allclose(bayesrank.rank(data, "bayes_greedy").scores, prior_mu)
    np.testing.assert_allclose(bayesrank.closed_form(data, R0="data").mu, prior_mu)
    assert bayesrank.closed_form(data).model == "bayes"
    assert bayesrank.closed_form(data, R0="data").model == "bayes_greedy"
    post = fit(data, "bayes", draws=2000, chains=2, random_seed=2)
    assert_matches_closed_form(post, data, R0=None)
    with pytest.raises(DataError, match="have none"):
        bayesrank.closed_form(binary_data(prior=None), R0="data")


@pytest.mark.parametrize(
    "make, R0",
    [
        (lambda: binary_data(prior=None), None),
        (lambda: binary_data(prior="per_model"), "data"),
        (lambda: binary_data(prior="per_model"), None),
        (lambda: binary_data(prior="shared"), "data"),
        (categorical_data, "data"),
    ],
    ids=["binary-uniform", "binary-R0-per-model", "binary-R0-ignored", "binary-R0-shared", "cat"],
)
def test_exact_posterior_matches_closed_form(make, R0):
    data = make()
    post = fit(data, "bayes", R0=R0, draws=4000, chains=2, random_seed=11)
    assert post.sampler == "conjugate"
    assert_matches_closed_form(post, data, R0=R0)


def test_nuts_posterior_matches_closed_form():
    """The PyMC model itself (sampled by NUTS) has the Bayes@N posterior."""
    data = categorical_data()
    post = fit(data, "bayes", sampler="nutpie", draws=1000, chains=2, random_seed=5)
    assert post.diagnostics.attrs["divergences"] == 0
    assert_matches_closed_form(post, data)


def test_model_density_is_dirichlet_times_multinomial(numpy_graphs):
    from pymc.model.transform.conditioning import remove_value_transforms

    data = categorical_data()
    model = remove_value_transforms(bayes.build(data, R0="data"))
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(3), size=(data.L, data.M))
    logp = model.compile_logp(jacobian=False)({"p": p})

    counts = data.reductions.category_counts
    alpha = 1.0 + data.reductions.prior_category_counts  # shared (M, C+1) prior
    expected = 0.0
    for l in range(data.L):
        for m in range(data.M):
            expected += stats.dirichlet.logpdf(p[l, m], alpha[m])
            expected += stats.multinomial.logpmf(counts[l, m], counts[l, m].sum(), p[l, m])
    assert logp == pytest.approx(expected, rel=1e-10)


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_log_likelihood_is_multinomial_per_cell():
    data = binary_data(prior="per_model")
    post = fit(data, "bayes", draws=50, chains=2, random_seed=2, log_likelihood=True)
    loglik = post.idata.log_likelihood["counts"]
    assert loglik.dims == ("chain", "draw", "llm", "question")
    p = post.idata.posterior["p"].values[1, 7]
    counts = data.reductions.category_counts
    expected = stats.binom.logpmf(counts[..., 1], counts.sum(-1), p[..., 1])
    np.testing.assert_allclose(loglik.values[1, 7], expected, rtol=1e-10)
    assert list(post.idata.posterior["theta"]["llm"].values) == list(data.models)


def test_prior_options_and_errors():
    data = binary_data(prior="per_model")
    other_R0 = np.ones((data.M, 3), dtype=int)
    post = fit(data, "bayes", R0=other_R0, draws=3000, chains=2, random_seed=4)
    assert_matches_closed_form(post, data, R0=other_R0)
    with pytest.raises(DataError, match="R0"):
        bayes.build(data, R0=np.ones((data.M + 1, 1), dtype=int))
    with pytest.raises(DataError, match="per-model R0"):
        bayes.build(data, R0=np.ones((data.L + 1, data.M, 1), dtype=int))
    with pytest.raises(ValueError, match="R0 must be"):
        bayes.build(data, R0="greedy")
    with pytest.raises(DataError, match="weights"):
        bayes.build(data, weights=[0.0, 0.5, 1.0])


def test_custom_weights_change_theta_as_the_closed_form_does():
    data = categorical_data()
    w = np.array([0.0, 1.0, 1.0])
    post = fit(data, "bayes", weights=w, draws=3000, chains=2, random_seed=8)
    mu, _ = bayesrank.bayes_at_n(data, weights=w)
    theta = post.idata.posterior["theta"]
    mcse = az.mcse(post.idata, var_names=["theta"])["theta"].values
    np.testing.assert_array_less(np.abs(theta.mean(("chain", "draw")).values - mu), 4 * mcse)
