"""The Laplace approximation of the binomial Rasch (issue 47's CPU route at leaderboard
scale): its mode, its Schur-complement covariance against the dense Hessian's inverse,
its draws' moments, and its refusals.  Against NUTS on a real set: tests/test_models_real.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

import bayesrank as br
from bayesrank.errors import DataError
from bayesrank.inference import laplace as LP

pytestmark = pytest.mark.xdist_group("laplace")


def _cells(L=12, M=60, trials=3, seed=0):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1.2, L), rng.normal(0, 1.2, M)
    n = np.full((L, M), float(trials))
    k = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
    return k, n


def test_gradient_is_that_of_the_log_density():
    k, n = _cells(5, 9)
    x = np.random.default_rng(1).normal(0, 0.7, 14)
    value = lambda x: LP._negative_log_posterior(x, k, n, 9.0, 1.7)[0]  # noqa: E731
    numeric = approx_fprime(x, value, 1e-7)
    np.testing.assert_allclose(LP._negative_log_posterior(x, k, n, 9.0, 1.7)[1], numeric,
                               rtol=1e-5, atol=1e-5)


def test_scale_step_maximises_the_expected_log_density():
    squares, M = 37.0, 20
    u = LP._scale_step(squares, M)
    objective = lambda u: -M / 2 * np.log(u) - squares / (2 * u) - u / (2 * 2.5**2)  # noqa: E731
    assert objective(u) > max(objective(u * 1.001), objective(u / 1.001))


def test_draws_have_the_schur_complement_covariance_of_the_dense_hessian():
    """theta's draws: mean the mode (which zeroes the gradient) and covariance the (theta,
    theta) block of the inverse of the full (L + M) Hessian; b given theta as derived."""
    k, n = _cells()
    L, M = k.shape
    informed = np.ones(L, bool)
    out = LP.rasch_laplace(k, n, informed, 3.0, 200_000, np.random.default_rng(2))
    sigma2 = out["sigma_b"] ** 2
    theta, b = out["theta"], out["b"]
    # the mode, from the draws' mean (the centring is a translation of theta and b alike)
    hat = np.concatenate([theta.mean(0), b.mean(0)])
    # dense Hessian at the mode (centring removed: the shift is unidentified by the cells)
    rough = LP.rasch_laplace(k, n, informed, 3.0, 1, np.random.default_rng(3))
    assert rough["sigma_b"] == pytest.approx(out["sigma_b"], rel=1e-12)
    x = _mode(k, n, sigma2)
    p = 1 / (1 + np.exp(-(x[:L, None] - x[None, L:])))
    W = n * p * (1 - p)
    H = np.block([[np.diag(W.sum(1) + 1 / 9.0), -W], [-W.T, np.diag(W.sum(0) + 1 / sigma2)]])
    cov = np.linalg.inv(H)
    centre = np.concatenate([np.full((L, L), 1.0 / L), np.full((M, L), 1.0 / L)])
    # draws are (theta, b) - mean(theta): covariance C cov C^T with C = I - centre rows
    C = np.eye(L + M) - np.hstack([centre, np.zeros((L + M, M))])
    expected = C @ cov @ C.T
    got = np.cov(np.hstack([theta, b]).T)
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    assert np.abs(got - expected).max() / scale.max() < 0.02
    # the draws' mean is the mode found here independently, to Monte Carlo error
    np.testing.assert_allclose(hat, C @ x, atol=4 * np.sqrt(np.diag(expected).max() / 200_000))


def _mode(k, n, sigma2):
    from scipy.optimize import minimize

    L, M = k.shape
    found = minimize(LP._negative_log_posterior, np.zeros(L + M), args=(k, n, 9.0, sigma2),
                     jac=True, method="L-BFGS-B",
                     options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 10_000})
    return found.x


def test_fit_with_laplace_gives_iid_draws_of_the_centred_abilities():
    rng = np.random.default_rng(4)
    R = (rng.random((8, 50, 2)) < rng.random((8, 1, 1))).astype(int)
    post = br.fit(br.ResponseData(R), "rasch", sampler="laplace", draws=300, chains=2,
                  random_seed=5, progressbar=False)
    theta = post.idata["posterior"]["theta"]
    assert theta.sizes == {"chain": 2, "draw": 300, "llm": 8}
    np.testing.assert_allclose(theta.mean("llm"), 0.0, atol=1e-12)  # every model informed
    assert post.sampler == "laplace"
    assert (post.diagnostics.loc[post.diagnostics.index.str.startswith("theta"),
                                 "ess_bulk"] == 600).all()
    # the conservative ranking reads the draws: each model's score is its 5% quantile
    lower = np.quantile(theta.values.reshape(-1, 8), 0.05, axis=0)
    np.testing.assert_allclose(post.rank(by="lcb", q=0.05).scores, lower, rtol=1e-12)


@pytest.mark.parametrize(("model", "options", "message"), [
    ("2pl", {}, "Rasch posterior only"),
    ("rasch", {"likelihood": "beta_binomial"}, "binomial Rasch without prior runs"),
])
def test_laplace_refuses_other_models_in_one_line(model, options, message):
    R = (np.random.default_rng(6).random((5, 20, 2)) < 0.5).astype(int)
    with pytest.raises(DataError, match=message) as caught:
        br.fit(br.ResponseData(R), model, sampler="laplace", progressbar=False, **options)
    assert "\n" not in str(caught.value)


def test_a_laplace_fit_checks_and_scores_its_own_draws():
    """The PPC replicates at the draws' theta and b (its replicated accuracies centre on the
    observed ones), and PSIS-LOO scores every cell at them (close to NUTS's elpd)."""
    rng = np.random.default_rng(7)
    theta, b = rng.normal(0, 1, 20), rng.normal(0, 1, 60)
    R = (rng.random((20, 60, 2)) < 1 / (1 + np.exp(-(theta[:, None] - b)))[..., None])
    data = br.ResponseData(R.astype(int))
    post = br.fit(data, "rasch", sampler="laplace", random_seed=8, progressbar=False)
    check = post.ppc(num_draws=200, random_seed=9)
    rows = check.statistics.query("statistic == 'accuracy'")
    assert (rows["p_value"].between(0.01, 0.99)).all()
    loo = post.loo()
    nuts = br.fit(data, "rasch", random_seed=8, progressbar=False)
    assert float(loo["elpd"]) == pytest.approx(float(nuts.loo()["elpd"]), abs=5.0)
