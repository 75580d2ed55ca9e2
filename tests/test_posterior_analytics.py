"""Uncertainty-aware rankings from posteriors: ranks, intervals, superiority, rank
distributions, top sets, posterior-predictive checks and LOO comparison.

Draw-level analytics are checked against brute-force loops over the draws and
against ArviZ (az.hdi, az.mcse); the closed-form Bayes@N analytics against
simulation from its own normal approximation and against scorio's ``bayes``
ranking (the paper's implementation).  PPC and LOO are checked on data simulated
with and without item-by-model interaction and fitted by small PyMC models
written here (independent of bayesrank's own model code).
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from bayesrank import compare
from bayesrank.analysis.comparison import pointwise_log_likelihood
from bayesrank.analysis.posterior import NormalPosterior, Posterior, closed_form
from bayesrank.analysis.ppc import bayesian_p_values
from bayesrank.analysis.rank_stats import (
    normal_rank_probabilities,
    rank_probabilities_from_draws,
    superiority_from_draws,
    top_set_indices,
)
from bayesrank.data import ResponseData
from bayesrank.errors import DataError
from bayesrank.ranking import scores_to_ranks
from bayesrank.report.plots import (
    cells_are_binary,
    plot_ppc_calibration,
    plot_ppc_rootogram,
)

pm = pytest.importorskip("pymc")


# ---------------------------------------------------------------------------- helpers
def posterior_from_draws(theta: np.ndarray, data: ResponseData | None = None) -> Posterior:
    """Posterior around draws of shape (chain, draw, L)."""
    L = theta.shape[-1]
    names = list(data.models) if data is not None else [f"m{i}" for i in range(L)]
    idata = az.from_dict({"posterior": {"theta": theta}}, coords={"llm": names},
                         dims={"theta": ["llm"]})
    return Posterior(idata, data, "test")


def ar1_draws(rng, chains, draws, L, rho, means):
    """Autocorrelated Gaussian chains (AR(1) with coefficient rho), unit marginal sd."""
    x = np.empty((chains, draws, L))
    x[:, 0] = rng.standard_normal((chains, L))
    scale = np.sqrt(1 - rho**2)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + scale * rng.standard_normal((chains, L))
    return x + means


@pytest.fixture(scope="module")
def skewed_posterior() -> Posterior:
    rng = np.random.default_rng(11)
    L = 6
    means = np.array([0.0, 0.3, 0.35, 1.0, -0.5, 0.32])
    theta = means + rng.gamma(2.0, 0.4, size=(4, 500, L)) - 0.8
    return posterior_from_draws(theta)


@pytest.fixture(scope="module")
def tied_draws_posterior() -> Posterior:
    """Draws on a coarse grid, so ties inside a draw are common."""
    rng = np.random.default_rng(5)
    theta = rng.integers(0, 4, size=(2, 300, 5)).astype(float)
    theta[..., 0] += 1  # model 0 is better on average
    return posterior_from_draws(theta)


# ------------------------------------------------------------------ ranks and intervals
@pytest.mark.parametrize("by", ["mean", "median", "lcb"])
def test_rank_scores_are_the_draw_summaries(skewed_posterior, by):
    x = skewed_posterior.theta_draws()
    expected = {
        "mean": x.mean(axis=0),
        "median": np.median(x, axis=0),
        "lcb": np.quantile(x, 0.1, axis=0),
    }[by]
    ranking = skewed_posterior.rank(by, q=0.1)
    np.testing.assert_allclose(ranking.details["untied_scores"], expected, rtol=0, atol=1e-12)
    # models whose order rests on Monte Carlo error share their group's mean score
    tied = expected.copy()
    for group in ranking.details["tie_groups"]:
        idx = [skewed_posterior.models.index(m) for m in group]
        assert np.ptp(expected[idx]) < 0.1  # only near-equal summaries can tie here
        tied[idx] = expected[idx].mean()
    np.testing.assert_allclose(ranking.scores, tied, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ranking.ranks, scores_to_ranks(tied))
    assert ranking.models == skewed_posterior.models


def test_lcb_penalises_uncertain_models():
    rng = np.random.default_rng(0)
    # model 0: higher mean but very uncertain; model 1: slightly lower, precise
    theta = np.stack([1.0 + 2.0 * rng.standard_normal((2, 2000)),
                      0.9 + 0.05 * rng.standard_normal((2, 2000))], axis=-1)
    post = posterior_from_draws(theta)
    assert list(post.rank("mean").ranks) == [1, 2]
    assert list(post.rank("lcb", q=0.05).ranks) == [2, 1]


def test_credible_intervals_match_quantiles_and_arviz_hdi(skewed_posterior):
    x = skewed_posterior.theta_draws()
    eti = skewed_posterior.credible_intervals(0.8, "eti")
    np.testing.assert_allclose(eti["lower"], np.quantile(x, 0.1, axis=0))
    np.testing.assert_allclose(eti["upper"], np.quantile(x, 0.9, axis=0))
    assert list(eti.index) == list(skewed_posterior.models) and eti.index.name == "llm"
    hdi = skewed_posterior.credible_intervals(0.8, "hdi")
    ref = az.hdi(skewed_posterior.theta, prob=0.8).transpose("llm", "ci_bound").values
    np.testing.assert_allclose(hdi[["lower", "upper"]].to_numpy(), ref)
    # right-skewed draws: the HDI is the shorter interval and sits further left
    assert np.all(hdi["upper"] - hdi["lower"] <= eti["upper"] - eti["lower"] + 1e-12)
    assert np.all(hdi["lower"] < eti["lower"])


def test_bad_arguments_are_refused(skewed_posterior):
    with pytest.raises(ValueError, match="by must be"):
        skewed_posterior.rank("mode")
    with pytest.raises(ValueError, match="strictly between"):
        skewed_posterior.credible_intervals(1.0)
    with pytest.raises(ValueError, match="kind"):
        skewed_posterior.credible_intervals(0.9, "central")
    with pytest.raises(ValueError, match="NaN"):
        rank_probabilities_from_draws(np.array([[0.0, np.nan]]))


# ------------------------------------------------------------------------ superiority
def test_superiority_is_complementary_and_counts_ties_as_half(tied_draws_posterior):
    sup = tied_draws_posterior.superiority()
    assert sup["prob"].dims == ("llm", "llm_other")
    P = sup["prob"].values
    off = ~np.eye(P.shape[0], dtype=bool)
    np.testing.assert_allclose((P + P.T)[off], 1.0, atol=1e-12)
    np.testing.assert_allclose(np.diag(P), 0.5)
    x = tied_draws_posterior.theta_draws()
    for i in range(x.shape[1]):
        for j in range(x.shape[1]):
            if i != j:
                brute = np.mean([1.0 if a > b else 0.5 if a == b else 0.0
                                 for a, b in zip(x[:, i], x[:, j], strict=True)])
                assert P[i, j] == pytest.approx(brute, abs=1e-12)


def test_superiority_mcse_is_arviz_mcse_of_the_indicator():
    rng = np.random.default_rng(3)
    theta = ar1_draws(rng, 4, 400, 4, rho=0.8, means=np.array([0.0, 0.2, 0.5, 1.5]))
    P, se = superiority_from_draws(theta)
    for i, j in [(0, 1), (1, 2), (0, 3)]:
        indicator = (theta[..., i] > theta[..., j]).astype(float)
        ref = az.mcse(az.convert_to_dataset({"x": indicator}), method="mean")["x"].item()
        assert se[i, j] == pytest.approx(ref, rel=1e-6)
        assert se[j, i] == se[i, j]
        # autocorrelated chains: the MCSE exceeds the independent-draws formula
        assert se[i, j] > 1.2 * np.sqrt(P[i, j] * (1 - P[i, j]) / indicator.size)


def test_independent_draws_take_the_number_of_draws_as_ess():
    """Draws independent by construction (exact, Laplace): the same P, and each MCSE the
    i.i.d. formula sd / sqrt(S), close to arviz's estimate on such draws; a posterior
    whose sampler is the Laplace approximation's reads its draws so, one of unknown
    sampler does not."""
    rng = np.random.default_rng(4)  # rounded: ties within draws count 1/2
    theta = np.round(rng.normal(size=(4, 500, 4)) + np.array([0.0, 0.1, 0.4, 1.2]), 1)
    P, se = superiority_from_draws(theta)
    P_iid, se_iid = superiority_from_draws(theta, independent=True)
    np.testing.assert_allclose(P_iid, P, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(np.diagonal(se_iid), 0.0)
    for i, j in [(0, 1), (1, 2), (0, 3), (3, 1)]:
        indicator = ((theta[..., i] > theta[..., j]) + 0.5 * (theta[..., i] == theta[..., j]))
        assert se_iid[i, j] == pytest.approx(indicator.std(ddof=1) / np.sqrt(2000), rel=1e-12)
        assert se_iid[i, j] == pytest.approx(se[i, j], rel=0.15)
    assert not posterior_from_draws(theta).independent_draws
    post = Posterior(posterior_from_draws(theta).idata, None, "test", sampler="laplace")
    assert post.independent_draws
    top = theta == theta.max(axis=-1, keepdims=True)  # a tie for the best shares it
    best = (top[..., 2] / top.sum(axis=-1)).ravel()
    assert post.p_best_mcse().iloc[2] == pytest.approx(best.std(ddof=1) / np.sqrt(2000),
                                                       rel=1e-12)


# ------------------------------------------------------------------ rank distribution
def brute_rank_distribution(x: np.ndarray) -> np.ndarray:
    S, L = x.shape
    out = np.zeros((L, L))
    for row in x:
        for i in range(L):
            better = np.sum(row > row[i])
            tied = np.sum(row == row[i])  # includes i
            out[i, better : better + tied] += 1.0 / tied
    return out / S


def test_rank_distribution_matches_brute_force_with_ties(tied_draws_posterior):
    dist = tied_draws_posterior.rank_distribution()
    assert dist.dims == ("llm", "rank") and list(dist["rank"].values) == [1, 2, 3, 4, 5]
    np.testing.assert_allclose(dist.values, brute_rank_distribution(
        tied_draws_posterior.theta_draws()), atol=1e-12)


def test_rank_distribution_is_consistent_with_superiority(tied_draws_posterior,
                                                          skewed_posterior):
    for post in (tied_draws_posterior, skewed_posterior):
        p = post.rank_distribution().values
        np.testing.assert_allclose(p.sum(axis=0), 1.0, atol=1e-12)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
        P = post.superiority()["prob"].values
        # E[rank_i] = 1 + sum_{j != i} P(theta_j > theta_i), ties counting 1/2
        expected = 1 + (P.sum(axis=0) - 0.5)
        summary = post.rank_summary()
        np.testing.assert_allclose(summary["expected_rank"], expected, atol=1e-10)
    x = skewed_posterior.theta_draws()
    p_best = np.bincount(np.argmax(x, axis=1), minlength=x.shape[1]) / x.shape[0]
    np.testing.assert_allclose(skewed_posterior.rank_summary()["p_best"], p_best)


def test_rank_interval_covers_the_central_mass(skewed_posterior):
    summary = skewed_posterior.rank_summary(prob=0.8)
    p = skewed_posterior.rank_distribution().values
    for i, (lo, hi) in enumerate(zip(summary["rank_lower"], summary["rank_upper"], strict=True)):
        assert p[i, lo - 1 : hi].sum() >= 0.8 - 1e-12
        assert p[i, : lo - 1].sum() < 0.1 + 1e-12  # nothing more could be cut below
        assert p[i, hi:].sum() <= 0.1 + 1e-12


def test_p_best_mcse_matches_arviz():
    rng = np.random.default_rng(8)
    theta = ar1_draws(rng, 2, 500, 3, rho=0.5, means=np.array([0.0, 0.3, 0.1]))
    post = posterior_from_draws(theta)
    best = (theta.argmax(-1) == 1).astype(float)
    ref = az.mcse(az.convert_to_dataset({"x": best}), method="mean")["x"].item()
    assert post.p_best_mcse().iloc[1] == pytest.approx(ref, rel=1e-6)


# --------------------------------------------------------------------------- top set
def test_top_set_is_smallest_cover_and_grows_as_alpha_falls(skewed_posterior):
    p_best = skewed_posterior.rank_summary()["p_best"]
    previous: set[str] = set()
    for alpha in [0.5, 0.2, 0.1, 0.05, 0.01, 0.0]:
        top = skewed_posterior.top_set(alpha)
        assert top[0] == p_best.idxmax()
        covered = p_best.loc[list(top)].sum()
        assert covered >= 1 - alpha - 1e-12
        assert covered - p_best.loc[top[-1]] < 1 - alpha  # dropping the last one fails
        assert previous <= set(top)
        previous = set(top)
    assert set(skewed_posterior.top_set(0.0)) == set(p_best.index[p_best > 0])


def test_top_set_indices_edge_cases():
    assert list(top_set_indices(np.array([0.0, 1.0, 0.0]), 0.05)) == [1]
    assert list(top_set_indices(np.array([0.5, 0.5]), 0.05)) == [0, 1]
    assert list(top_set_indices(np.array([0.3, 0.3, 0.4]), 0.5)) == [2, 0]
    with pytest.raises(ValueError):
        top_set_indices(np.array([1.0]), 1.0)


def test_separated_pairs_and_leaderboard(skewed_posterior):
    pairs = skewed_posterior.separated_pairs(level=0.9)
    order = skewed_posterior.rank("mean").to_frame()["model"].tolist()
    assert pairs["upper"].tolist() == order[:-1] and pairs["lower"].tolist() == order[1:]
    P = skewed_posterior.superiority()["prob"].to_pandas()
    expected = [P.loc[u, v] for u, v in zip(pairs["upper"], pairs["lower"], strict=True)]
    np.testing.assert_allclose(pairs["p_superior"], expected)
    np.testing.assert_array_equal(pairs["separated"], np.asarray(expected) >= 0.9)

    board = skewed_posterior.leaderboard(level=0.9)
    assert board.index.tolist() == order
    assert board["rank"].is_monotonic_increasing
    np.testing.assert_allclose(board["p_above_next"].iloc[:-1], expected)
    assert board["separated_from_next"].iloc[:-1].tolist() == pairs["separated"].tolist()
    assert pd.isna(board["separated_from_next"].iloc[-1])
    assert set(board.index[board["in_top_set"]]) == set(skewed_posterior.top_set(0.05))
    np.testing.assert_array_equal(board.loc[order, "lcb_rank"],
                                  skewed_posterior.rank("lcb").ranks[
                                      [skewed_posterior.models.index(m) for m in order]])


# ------------------------------------------------------------ closed-form Bayes@N
@pytest.fixture(scope="module")
def benchmark_like_data() -> ResponseData:
    rng = np.random.default_rng(21)
    L, M, N = 8, 40, 12
    ability = np.linspace(-1.0, 1.0, L)
    ability[5] = ability[6]  # a near tie
    difficulty = rng.normal(0, 1.5, M)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    R = (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
    R0 = (rng.random((L, M, 1)) < p[..., None]).astype(np.int8)
    return ResponseData(R, R0=R0)


def test_closed_form_lcb_matches_scorio_bayes(benchmark_like_data):
    scorio_rank = pytest.importorskip("scorio.rank")
    d = benchmark_like_data
    post = closed_form(d, R0="data")  # the prior outcomes, asked for (the default is uniform)
    _, ref_mean = scorio_rank.bayes(np.asarray(d.R), R0=np.asarray(d.R0), return_scores=True)
    _, ref_lcb = scorio_rank.bayes(np.asarray(d.R), R0=np.asarray(d.R0), quantile=0.05,
                                   return_scores=True)
    np.testing.assert_allclose(post.rank("mean").scores, ref_mean, rtol=1e-12)
    np.testing.assert_allclose(post.rank("lcb", q=0.05).scores, ref_lcb, rtol=1e-12)
    assert closed_form(d, R0=None).model == "bayes" and post.model == "bayes_greedy"


def test_closed_form_analytics_agree_with_draws_from_the_approximation(benchmark_like_data):
    exact = closed_form(benchmark_like_data)
    sampled = exact.sample(draws=25_000, chains=2, random_seed=1)
    S = 50_000
    P_exact = exact.superiority()["prob"].values
    P_mc = sampled.superiority()["prob"].values
    assert np.all(exact.superiority()["mcse"].values == 0)
    se = np.sqrt(P_exact * (1 - P_exact) / S) + 1e-9
    assert np.max(np.abs(P_mc - P_exact) / se) < 5
    R_exact = exact.rank_distribution().values
    R_mc = sampled.rank_distribution().values
    se_rank = np.sqrt(R_exact * (1 - R_exact) / S) + 1e-9
    assert np.max(np.abs(R_mc - R_exact) / se_rank) < 5
    ci_exact = exact.credible_intervals(0.9)
    ci_mc = sampled.credible_intervals(0.9)
    sd = exact.sigma
    np.testing.assert_allclose(ci_mc["lower"], ci_exact["lower"], atol=0.05 * sd.max())
    np.testing.assert_allclose(ci_mc["upper"], ci_exact["upper"], atol=0.05 * sd.max())
    np.testing.assert_allclose(exact.credible_intervals(0.9, "hdi")[["lower", "upper"]],
                               ci_exact[["lower", "upper"]])
    assert set(exact.top_set(0.05)) == set(sampled.top_set(0.05)) or (
        # membership can differ only for a model whose P(best) sits at the cut
        len(set(exact.top_set(0.05)) ^ set(sampled.top_set(0.05))) == 1
    )


def test_normal_rank_probabilities_against_independent_integration():
    mu = np.array([0.0, 0.1, 0.12, 0.5])
    sigma = np.array([0.1, 0.02, 0.3, 0.001])
    P = normal_rank_probabilities(mu, sigma)
    fine = normal_rank_probabilities(mu, sigma, nodes_per_model=1601)
    # P(best_i) = integral phi_i(x) prod_{j != i} Phi_j(x) dx, by scipy.integrate.quad
    from scipy import integrate

    for i in range(4):
        def integrand(x, i=i):
            others = [stats.norm.cdf(x, mu[j], sigma[j]) for j in range(4) if j != i]
            return stats.norm.pdf(x, mu[i], sigma[i]) * np.prod(others)

        ref, _ = integrate.quad(integrand, mu[i] - 12 * sigma[i], mu[i] + 12 * sigma[i],
                                points=[mu[3]], limit=200)
        # trapezoid rule on the union grid: second order, ~1e-5 at the default resolution
        assert P[i, 0] == pytest.approx(ref, abs=2e-5)
        assert fine[i, 0] == pytest.approx(ref, abs=1e-6)
    np.testing.assert_allclose(P.sum(axis=0), 1, atol=2e-5)
    np.testing.assert_allclose(fine.sum(axis=0), 1, atol=1e-6)


def test_normal_posterior_point_masses_and_validation():
    post = NormalPosterior([1.0, 0.0, 1.0], [0.0, 0.0, 0.0], ["a", "b", "c"])
    P = post.superiority()["prob"].values
    assert P[0, 1] == 1 and P[1, 0] == 0 and P[0, 2] == 0.5
    with pytest.raises(ValueError):
        NormalPosterior([0.0], [-1.0], ["a"])


# ------------------------------------------------ fitted models (small PyMC programs)
def simulate(seed: int, interaction: float, *, L=6, M=25, N=30, duplicate_top=False):
    rng = np.random.default_rng(seed)
    theta = np.array([1.5, 1.5, 0.5, 0.0, -0.5, -2.5])[:L]
    b = rng.normal(0, 1.2, M)
    logit = theta[:, None] - b[None, :] + interaction * rng.standard_normal((L, M))
    R = (rng.random((L, M, N)) < 1 / (1 + np.exp(-logit[..., None]))).astype(np.int8)
    if duplicate_top:
        R[1] = R[0]  # exactly tied evidence for the two best models
    return ResponseData(R)


def fit(data: ResponseData, likelihood: str, seed: int = 0) -> Posterior:
    """Rasch (binomial) or beta-binomial Rasch, hierarchical item difficulties."""
    k, n = data.reductions.successes, data.reductions.trials
    coords = {"llm": list(data.models), "question": list(data.questions)}
    with pm.Model(coords=coords) as model:
        theta = pm.Normal("theta", 0, 2, dims="llm")
        sigma_b = pm.HalfNormal("sigma_b", 2)
        b = pm.Normal("b", 0, sigma_b, dims="question")
        eta = theta[:, None] - b[None, :]
        if likelihood == "binomial":
            pm.Binomial("k", n=n, logit_p=eta, observed=k, dims=("llm", "question"))
        else:
            phi = pm.Gamma("phi", 2, 0.1)
            p = pm.math.sigmoid(eta)
            pm.BetaBinomial("k", n=n, alpha=p * phi, beta=(1 - p) * phi, observed=k,
                            dims=("llm", "question"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws=400, tune=400, chains=2, cores=1, random_seed=seed,
                              nuts_sampler="pymc", progressbar=False,
                              compute_convergence_checks=False)
    return Posterior(idata, data, likelihood, pymc_model=model, observed_var="k")


@pytest.fixture(scope="module")
def rasch_fit() -> Posterior:
    return fit(simulate(1, 0.0, duplicate_top=True), "binomial")


@pytest.fixture(scope="module")
def interaction_data() -> ResponseData:
    return simulate(2, 1.0)


@pytest.fixture(scope="module")
def interaction_rasch_fit(interaction_data) -> Posterior:
    return fit(interaction_data, "binomial")


def test_truly_tied_models_share_the_top_set_and_far_models_separate(rasch_fit):
    sup = rasch_fit.superiority()
    p01 = float(sup["prob"][0, 1])
    se01 = float(sup["mcse"][0, 1])
    assert 0 < se01 < 0.05
    assert abs(p01 - 0.5) < 4 * se01 + 0.01  # identical evidence: symmetric posterior
    top = rasch_fit.top_set(0.05)
    assert {"model_0", "model_1"} <= set(top)
    assert "model_5" not in top
    assert float(sup["prob"][0, 5]) > 0.999 and float(sup["prob"][5, 0]) < 0.001
    pairs = rasch_fit.separated_pairs(0.95)
    first = pairs.iloc[0]
    assert {first["upper"], first["lower"]} == {"model_0", "model_1"}
    assert not first["separated"]
    assert pairs.iloc[-1]["separated"]  # model_4 vs model_5: 2 logits apart


def test_ppc_does_not_flag_rasch_data(rasch_fit):
    result = rasch_fit.ppc(num_draws=400, random_seed=1)
    overall = result.overall.set_index("statistic")
    assert np.all(overall["p_value"].between(0.05, 0.95)), overall
    assert not overall["flagged"].any()
    assert any("No misfit" in note for note in result.notes)
    assert "posterior_predictive" not in rasch_fit.idata.children  # the fit is left unchanged
    pp = result.idata["posterior_predictive"]["k"]
    assert pp.dims == ("chain", "draw", "llm", "question")
    assert pp.sizes["chain"] * pp.sizes["draw"] >= 400
    # replicated accuracies are centred on the observed ones (the model fits them)
    acc = result.statistics[result.statistics["statistic"] == "accuracy"]
    assert np.all(acc["p_value"].between(0.025, 0.975))


def test_ppc_flags_over_dispersion_from_item_by_model_interaction(interaction_rasch_fit):
    result = interaction_rasch_fit.ppc(num_draws=400, random_seed=1)
    overall = result.overall.set_index("statistic")
    assert overall.loc["question_dispersion", "p_value"] < 0.01
    assert overall.loc["model_dispersion", "p_value"] < 0.01
    assert overall["flagged"].all() and (overall["direction"] == "higher").all()
    assert any(note.startswith("Over-dispersion") for note in result.notes)
    observed = result.observed["model_dispersion"].sel(target="all").item()
    assert observed > result.replicated["model_dispersion"].sel(target="all").max().item()


def test_ppc_tree_works_with_arviz_plots(rasch_fit):
    import matplotlib

    matplotlib.use("Agg")

    result = rasch_fit.ppc(num_draws=100)
    collection = az.plot_ppc_dist(result.idata, var_names=["k"], num_samples=20,
                                  backend="matplotlib")
    assert collection.viz["figure"].item().axes
    fig = plot_ppc_rootogram(result)
    (ax,) = fig.axes
    assert "pooled" in ax.get_title() and ax.get_lines()


def test_binary_cells_get_a_calibration_plot_not_a_rootogram(rasch_fit):
    """N = 1: a rootogram of 0/1 counts has two bars; ArviZ's PAV calibration plot is
    the check for binary outcomes (and it raises none of ArviZ's rootogram warnings)."""
    import matplotlib

    matplotlib.use("Agg")
    binary = fit(simulate(3, 0.0, M=40, N=1), "binomial")
    result = binary.ppc(num_draws=100)
    assert cells_are_binary(result)
    assert not cells_are_binary(rasch_fit.ppc(num_draws=50))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_ppc_calibration(result)
    ax = fig.axes[0]
    assert "Calibration" in ax.get_title() and ax.get_lines()
    # the PAV curve is a step function of the predicted probability within [0, 1]
    xs = np.concatenate([line.get_xdata() for line in ax.get_lines()])
    assert xs.min() >= 0.0 and xs.max() <= 1.0


def test_ppc_needs_the_generative_model(skewed_posterior):
    with pytest.raises(ValueError, match="generative model"):
        skewed_posterior.ppc()


def test_bayesian_p_values_count_ties_as_half():
    rep = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0], [2.0, 5.0]])
    np.testing.assert_allclose(bayesian_p_values(rep, np.array([2.0, np.nan]))[0],
                               (1 + 0.5 * 2) / 4)
    assert np.isnan(bayesian_p_values(rep, np.array([2.0, np.nan]))[1])


def test_loo_prefers_the_overdispersed_model_and_reports_pareto_k(interaction_data,
                                                                   interaction_rasch_fit):
    beta_binomial = fit(interaction_data, "betabinomial")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = compare({"rasch": interaction_rasch_fit, "beta_binomial": beta_binomial})
    assert table.index[0] == "beta_binomial"
    rasch = table.loc["rasch"]
    assert rasch["elpd_diff"] < -4 * rasch["diff_se"]
    assert list(table["rank"]) == [1, 2] and np.isclose(table["weight"].sum(), 1.0)
    assert {"elpd_loo", "se", "p_loo", "max_pareto_k"} <= set(table.columns)
    assert (table["observation_unit"] == "model-question cell").all()
    assert (table["n_observations"] == 6 * 25).all()
    assert table.attrs["observation_unit"] == "model-question cell"
    # the count of high Pareto k equals az.loo's own diagnostics for that model
    for name, post in [("rasch", interaction_rasch_fit), ("beta_binomial", beta_binomial)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = xr.DataTree.from_dict({
                "posterior": post.idata["posterior"].to_dataset(),
                "log_likelihood": pointwise_log_likelihood(post).to_dataset(name="k"),
            })
            loo = az.loo(tree, pointwise=True, var_name="k")
        assert "log_likelihood" not in post.idata.children  # compare() left the fit unchanged
        assert table.loc[name, "n_pareto_k_high"] == int((loo.pareto_k.values > 0.7).sum())
    if table["n_pareto_k_high"].sum():
        assert any("Pareto k" in str(w.message) for w in caught)


def test_compare_refuses_different_data_or_units(rasch_fit, interaction_rasch_fit):
    with pytest.raises(DataError, match="different data"):
        compare({"a": rasch_fit, "b": interaction_rasch_fit})
    rng = np.random.default_rng(0)
    L = rasch_fit.data.L
    pairs = az.from_dict(
        {
            "posterior": {"theta": rng.standard_normal((2, 400, L))},
            "log_likelihood": {"pairs": rng.standard_normal((2, 400, L, L)) - 3},
        },
        coords={"llm": list(rasch_fit.models), "llm_other": list(rasch_fit.models)},
        dims={"theta": ["llm"], "pairs": ["llm", "llm_other"]},
    )
    bt = Posterior(pairs, rasch_fit.data, "bradley_terry", observed_var="pairs")
    with pytest.raises(DataError, match="different units"):
        compare({"rasch": rasch_fit, "bt": bt})
    with pytest.raises(ValueError, match="at least two"):
        compare({"rasch": rasch_fit})


# ------------------------------------------------------------- accuracy scale (issue 9, item 4)
def _irt_posterior(rng, *, a: bool, c: bool, L=3, M=5, chains=2, draws=40) -> Posterior:
    post = {"theta": rng.normal(size=(chains, draws, L)), "b": rng.normal(size=(chains, draws, M))}
    dims = {"theta": ["llm"], "b": ["question"]}
    if a:
        post["a"] = np.exp(0.3 * rng.normal(size=(chains, draws, M)))
        dims["a"] = ["question"]
    if c:
        post["c"] = rng.uniform(0, 0.3, size=(chains, draws, M))
        dims["c"] = ["question"]
    idata = az.from_dict({"posterior": post}, coords={"llm": [f"m{i}" for i in range(L)],
                                                      "question": [f"q{j}" for j in range(M)]},
                         dims=dims)
    return Posterior(idata, None, "3pl" if c else ("2pl" if a else "rasch"))


@pytest.mark.parametrize(("a", "c"), [(False, False), (True, False), (True, True)])
def test_expected_accuracy_is_the_mean_irt_solve_probability(a, c):
    import math

    post = _irt_posterior(np.random.default_rng(7), a=a, c=c)
    acc = post.expected_accuracy().transpose("chain", "draw", "llm").values
    pv = post.idata.posterior
    ch, dr = 1, 17  # one draw, worked cell by cell
    for ell in range(3):
        probs = []
        for m in range(5):
            slope = float(pv["a"].values[ch, dr, m]) if a else 1.0
            ability = float(pv["theta"].values[ch, dr, ell])
            eta = slope * (ability - float(pv["b"].values[ch, dr, m]))
            p = 1.0 / (1.0 + math.exp(-eta))
            if c:
                floor = float(pv["c"].values[ch, dr, m])
                p = floor + (1 - floor) * p
            probs.append(p)
        assert acc[ch, dr, ell] == pytest.approx(sum(probs) / 5, rel=1e-12)
    board = post.leaderboard(prob=0.8)
    flat = acc.reshape(-1, 3)
    for ell, name in enumerate(post.models):
        assert board.loc[name, "accuracy"] == pytest.approx(flat[:, ell].mean())
        assert board.loc[name, "accuracy_lower"] == pytest.approx(np.quantile(flat[:, ell], 0.1))
        assert board.loc[name, "accuracy_upper"] == pytest.approx(np.quantile(flat[:, ell], 0.9))
    cols = list(board.columns)
    # first after the model name: the accuracy scale (no data here, so no observed column)
    assert cols[:3] == ["accuracy", "accuracy_lower", "accuracy_upper"]
    assert board.attrs["accuracy_label"] == "expected accuracy on these questions"


def test_bayes_accuracy_is_its_theta_and_pairwise_models_have_none():
    import bayesrank

    rng = np.random.default_rng(2)
    R = rng.integers(0, 3, size=(3, 6, 5))
    d = ResponseData(R, weights=[0.0, 0.5, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(d, "bayes", random_seed=0, progressbar=False, draws=200)
    acc = post.expected_accuracy().transpose("chain", "draw", "llm").values
    np.testing.assert_allclose(acc, post.theta.transpose("chain", "draw", "llm").values,
                               rtol=1e-10)
    board = closed_form(d).leaderboard()
    np.testing.assert_allclose(board["accuracy"], board["mean"])
    bt = posterior_from_draws(rng.normal(size=(2, 50, 3)))
    bt.model = "bradley_terry"
    frame = bt.leaderboard()
    assert "accuracy" not in frame.columns
    assert "bradley_terry" in frame.attrs["accuracy_note"]


def test_misfit_advice_never_suggests_the_beta_binomial_at_one_trial_per_cell():
    """At N = 1 the beta-binomial is the Bernoulli: suggesting it (as the report did on
    LiveCodeBench's N = 1 runs) names the same model; the 2PL is the advice, or nothing."""
    from types import SimpleNamespace

    from bayesrank.analysis.ppc import PPCResult, suggest_better_model

    flagged = PPCResult(pd.DataFrame({"statistic": ["model_dispersion"], "target": ["all"],
                                      "p_value": [0.0], "flagged": [True]}), {}, {}, "k", 0.05)
    rng = np.random.default_rng(0)
    one = ResponseData(rng.integers(0, 2, (3, 8, 1)))
    many = ResponseData(rng.integers(0, 2, (3, 8, 4)))
    levels = ResponseData(rng.integers(0, 3, (3, 8, 1)), n_categories=3)

    def posterior(model, data, phi=False):
        names = {"theta": 0} | ({"phi": 0} if phi else {})
        return SimpleNamespace(model=model, data=data,
                               idata={"posterior": SimpleNamespace(data_vars=names)})

    assert suggest_better_model(posterior("rasch", one), flagged) == 'fit(data, "2pl")'
    assert suggest_better_model(posterior("2pl", one), flagged) is None
    assert suggest_better_model(posterior("bayes", levels), flagged) == \
        'fit(data.binarize(), "2pl")'
    assert suggest_better_model(posterior("rasch", many), flagged) == \
        'fit(data, "rasch", likelihood="beta_binomial")'
    assert suggest_better_model(posterior("rasch", many, phi=True), flagged) == \
        'fit(data, "2pl", likelihood="beta_binomial")'
