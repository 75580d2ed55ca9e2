"""Bayesian Bradley-Terry and Davidson: SBC, agreement with the MAP baselines, structure."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from _model_sims import pairwise_data, zero_sum_normal
from bayesrank.models import bradley_terry
from scipy import stats

import bayesrank
from bayesrank import ResponseData, kendall_tau
from bayesrank.inference.fitting import fit, fit_many

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:arviz")


def posterior_mode(model) -> np.ndarray:
    with model:
        point = pm.find_MAP(progressbar=False, maxeval=5000)
    return np.asarray(point["theta"])


def baseline_log_strengths(data, identifier) -> np.ndarray:
    try:
        ranking = bayesrank.rank(data, identifier)
    except bayesrank.UnknownMethodError:
        pytest.skip(f"{identifier} baseline not registered yet")
    theta = np.log(ranking.scores)
    return theta - theta.mean()


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_bradley_terry_simulation_based_calibration():
    """Ranks of the true log-strengths among posterior draws are uniform.

    40 datasets (4 models, 8 decisive comparisons per pair, theta from the
    prior ZeroSumNormal(1)) fitted in one vectorised NumPyro batch.
    """
    rng = np.random.default_rng(99)
    reps, L = 40, 4
    truths, datasets = [], []
    for _ in range(reps):
        theta = zero_sum_normal(rng, 1.0, L)
        data, _, _ = pairwise_data(rng, theta, 8)
        truths.append(theta)
        datasets.append(data)
    posts = fit_many(
        datasets, "bradley_terry", sampler="numpyro", draws=400, tune=400, chains=2, random_seed=3
    )
    ranks, hits = [], []
    for theta, post in zip(truths, posts, strict=True):
        draws = post.theta_draws()
        ranks.append((draws[::2] < theta).sum(0))
        lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
        hits.append((lo <= theta) & (theta <= hi))
        assert post.sampler == "numpyro"
    n_draws = draws[::2].shape[0]
    counts = np.bincount(np.concatenate(ranks) * 10 // (n_draws + 1), minlength=10)
    assert stats.chisquare(counts).pvalue > 0.01, counts
    hits = np.concatenate(hits)
    assert stats.binomtest(int(hits.sum()), hits.size, 0.9).pvalue > 0.01, hits.mean()
    assert sum(p.diagnostics.attrs["divergences"] for p in posts) == 0


@pytest.fixture(scope="module")
def paired():
    rng = np.random.default_rng(4)
    theta = np.array([-1.2, -0.5, 0.0, 0.4, 1.3])
    data, wins, ties = pairwise_data(rng, theta, 40, tie_log_nu=0.7)
    return data, theta, wins, ties


def test_reductions_hold_the_simulated_counts(paired):
    data, _, wins, ties = paired
    np.testing.assert_array_equal(data.reductions.wins, wins)
    np.testing.assert_array_equal(data.reductions.ties, ties)


def test_posterior_mode_is_the_bradley_terry_map(paired, numpy_graphs):
    """With scale 1 our zero-sum prior is the MAP baseline's N(0, 1) on log-strengths."""
    data = paired[0]
    mode = posterior_mode(bradley_terry.build(data))
    np.testing.assert_allclose(mode, baseline_log_strengths(data, "bradley_terry_map"), atol=1e-4)


def test_davidson_mode_matches_the_davidson_map(paired, numpy_graphs):
    """Davidson likelihood on W and T; the baseline estimates nu by ML, we put N(0, 2) on log nu."""
    data = paired[0]
    mode = posterior_mode(bradley_terry.build(data, ties="davidson"))
    np.testing.assert_allclose(
        mode, baseline_log_strengths(data, "bradley_terry_davidson_map"), atol=5e-3
    )


@pytest.mark.extended("a default Davidson fit, 11 s in make test on a cold cache; its "
                      "calibration is test_sbc's, its mode "
                      "test_davidson_mode_matches_the_davidson_map's")
def test_davidson_posterior_recovers_strengths_and_tie_parameter(paired):
    data, theta, _, _ = paired
    post = fit(data, "davidson", random_seed=6, log_likelihood=True)
    assert post.diagnostics["passed"].all() and post.diagnostics.attrs["divergences"] == 0
    draws = np.column_stack([post.theta_draws(), post.idata.posterior["log_nu"].values.ravel()])
    lo, hi = np.quantile(draws, [0.0005, 0.9995], axis=0)  # 6 parameters: Bonferroni
    truth = np.append(theta - theta.mean(), 0.7)
    assert np.all((lo <= truth) & (truth <= hi)), (lo, truth, hi)
    mean = post.theta.mean(("chain", "draw")).values
    assert kendall_tau(mean, theta) == pytest.approx(1.0)
    assert post.observed_var == "outcomes"
    assert post.idata.observed_data["outcomes"].dims == ("pair", "outcome")
    assert post.idata.log_likelihood["outcomes"].dims == ("chain", "draw", "pair")
    assert list(post.idata.observed_data["pair"].values[:2]) == [
        f"{data.models[0]} vs {data.models[1]}",
        f"{data.models[0]} vs {data.models[2]}",
    ]


def test_bradley_terry_posterior_mean_near_map(paired):
    data = paired[0]
    post = fit(data, "bradley_terry", random_seed=2, log_likelihood=True)
    mean = post.theta.mean(("chain", "draw")).values
    sd = post.theta.std(("chain", "draw")).values
    mode = baseline_log_strengths(data, "bradley_terry_map")
    np.testing.assert_array_less(np.abs(mean - mode), 0.25 * sd)
    np.testing.assert_allclose(post.theta_draws().sum(axis=1), 0.0, atol=1e-8)
    assert post.idata.log_likelihood["wins"].dims == ("chain", "draw", "pair")


def test_every_pair_enters_and_disconnected_graphs_stay_proper(numpy_graphs):
    """Pairs that never met add nothing; the prior alone ties separate components together."""
    R = np.zeros((4, 2, 1), dtype=int)
    mask = np.zeros((4, 2, 1), dtype=bool)
    mask[[0, 1], 0] = True  # 0 beats 1
    mask[[2, 3], 1] = True  # 2 beats 3
    R[0, 0] = R[2, 1] = 1
    data = ResponseData(R, mask=mask)
    model = bradley_terry.build(data)
    assert model.named_vars_to_dims["wins"] == ("pair",)
    assert len(model.coords["pair"]) == 6
    mode = posterior_mode(model)
    assert np.all(np.isfinite(mode))
    assert mode[0] > mode[1] and mode[2] > mode[3]
    assert mode[0] == pytest.approx(mode[2], abs=1e-6)  # symmetric components


def test_options_and_errors():
    R = ResponseData(np.random.default_rng(1).integers(0, 3, (3, 4, 5)), n_categories=3)
    model = bradley_terry.build(R, hierarchical=True, scale=2.0)  # categorical data: utilities
    assert "sigma" in model.named_vars
    with pytest.raises(ValueError, match="ties"):
        bradley_terry.build(R, ties="rao_kupper")
    with pytest.raises(ValueError, match="scale"):
        bradley_terry.build(R, scale=-1.0)


def test_davidson_likelihood_is_scipys_multinomial_and_draws_follow_it(paired, numpy_graphs):
    """The logit multinomial scores each pair with scipy's pmf and draws with its probabilities.

    P(i > j) : P(j > i) : P(i ~ j) = pi_i : pi_j : nu sqrt(pi_i pi_j) at a random point.
    """
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import graph_replace

    data = paired[0]
    model = remove_value_transforms(bradley_terry.build(data, ties="davidson"))
    rng = np.random.default_rng(8)
    theta = zero_sum_normal(rng, 1.0, len(data.models))
    log_nu = 0.4
    i, j = bradley_terry.pairs_of(len(data.models))
    weights = np.stack([theta[i], theta[j], log_nu + (theta[i] + theta[j]) / 2], axis=-1)
    p = np.exp(weights) / np.exp(weights).sum(-1, keepdims=True)
    table = model["pair_counts"].get_value()
    pointwise = model.compile_fn(
        model.logp(vars=[model["outcomes"]], sum=False)[0],
        inputs=[model.rvs_to_values[model["theta"]], model.rvs_to_values[model["log_nu"]]],
        on_unused_input="ignore",
    )
    expected = stats.multinomial.logpmf(table, table.sum(-1), p)
    np.testing.assert_allclose(pointwise({"theta": theta, "log_nu": log_nu}), expected, rtol=1e-10)

    given = {model["theta"]: pt.as_tensor(theta), model["log_nu"]: pt.as_tensor(log_nu)}
    draws = pm.draw(graph_replace(model["outcomes"], given), draws=4000, random_seed=9)
    assert draws.shape == (4000, *table.shape)
    np.testing.assert_array_equal(draws.sum(-1), np.broadcast_to(table.sum(-1), draws.shape[:2]))
    mean, sd = draws.mean(0), draws.std(0) / np.sqrt(len(draws))
    z = (mean - table.sum(-1, keepdims=True) * p) / np.maximum(sd, 1e-12)
    assert np.abs(z).max() < 4.5, z
