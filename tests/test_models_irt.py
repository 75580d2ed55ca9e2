"""Hierarchical IRT models: simulation-based calibration, recovery, baselines, options, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _model_sims import counts_to_binary, logistic, rasch_prior_draw, simulate_irt, zero_sum_normal
from bayesrank.models import irt
from pymc.exceptions import ImplicitFreezeWarning
from scipy import stats

import bayesrank
from bayesrank import DataError, ResponseData, kendall_tau
from bayesrank.inference.fitting import fit

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:arviz")


def interval_hits(draws: np.ndarray, truth: np.ndarray, level: float = 0.9) -> np.ndarray:
    """Whether each true value lies in the central ``level`` interval of its draws (S, K)."""
    lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return (lo <= truth) & (truth <= hi)


def assert_coverage(hits: np.ndarray, level: float = 0.9, alpha: float = 0.01) -> None:
    test = stats.binomtest(int(hits.sum()), hits.size, level)
    assert test.pvalue > alpha, f"coverage {hits.mean():.3f} of {hits.size} at nominal {level}"


def draws_of(post, name: str) -> np.ndarray:
    v = post.idata.posterior[name]
    return v.values.reshape(-1, *v.shape[2:])


# -- simulation-based calibration ---------------------------------------------------------

@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_rasch_simulation_based_calibration():
    """Ranks of the true theta and b among posterior draws are uniform (Talts et al. 2018).

    40 datasets of 4 models x 6 questions x 5 trials drawn from the model's own
    prior; nutpie reuses one compiled model for all of them.  The same fits give
    the 90%-interval coverage of every ability.
    """
    rng = np.random.default_rng(2024)
    L, M, N, reps, thin = 4, 6, 5, 40, 3
    ranks, hits, divergent = [], [], 0
    for r in range(reps):
        theta, b = rasch_prior_draw(rng, L, M)
        R, _ = simulate_irt(rng, theta, b, N)
        post = fit(R, "rasch", draws=600, tune=400, chains=2, random_seed=r, log_likelihood=False)
        divergent += post.diagnostics.attrs["divergences"]
        th = draws_of(post, "theta")[::thin]
        bb = draws_of(post, "b")[::thin]
        ranks.append(np.concatenate([(th < theta).sum(0), (bb < b).sum(0)]))
        hits.append(interval_hits(draws_of(post, "theta"), theta))
    ranks = np.concatenate(ranks)
    n_draws = th.shape[0]
    counts = np.bincount(ranks * 10 // (n_draws + 1), minlength=10)
    assert stats.chisquare(counts).pvalue > 0.01, counts
    assert_coverage(np.concatenate(hits))
    assert divergent <= 0.001 * reps * 1200  # prior draws include hard geometries


# -- recovery and agreement ---------------------------------------------------------------

@pytest.fixture(scope="module")
def rasch_fixed():
    rng = np.random.default_rng(7)
    theta = np.linspace(-1.5, 1.5, 8)
    b = zero_sum_normal(rng, 1.5, 20)
    R, _ = simulate_irt(rng, theta, b, 10)
    data = ResponseData(R)
    return data, theta, b, fit(data, "rasch", random_seed=1)


def test_rasch_recovers_known_abilities(rasch_fixed):
    data, theta, b, post = rasch_fixed
    assert post.diagnostics["passed"].all()
    hits = np.concatenate(
        [interval_hits(draws_of(post, "theta"), theta), interval_hits(draws_of(post, "b"), b)]
    )
    assert_coverage(hits)
    assert kendall_tau(post.theta.mean(("chain", "draw")).values, theta) > 0.8


def test_rasch_posterior_ordering_matches_rasch_map(rasch_fixed):
    data, _, _, post = rasch_fixed
    try:
        ranking = bayesrank.rank(data, "rasch_map")
    except bayesrank.UnknownMethodError:
        pytest.skip("rasch_map baseline not registered yet")
    mean = post.theta.mean(("chain", "draw")).values
    assert kendall_tau(mean, ranking.scores) > 0.9
    assert np.corrcoef(mean, ranking.scores)[0, 1] > 0.98


@pytest.mark.parametrize(
    "kind, likelihood", [("2pl", None), ("3pl", None), ("3pl", "binomial")]
)
def test_2pl_3pl_recover_simulated_parameters(kind, likelihood):
    """Binomial data: both 3PL likelihoods recover the truth (beta-binomial -> binomial limit)."""
    rng = np.random.default_rng(11 if kind == "2pl" else 12)
    L, M, N = 10, 30, 20
    theta = rng.normal(0.0, 1.5, L)
    a = np.exp(zero_sum_normal(rng, 0.5, M))
    beta = zero_sum_normal(rng, abs(rng.normal(0, 2.5)), M)
    c = rng.beta(1.0, 19.0, M) if kind == "3pl" else None
    R, _ = simulate_irt(rng, theta, -beta / a, N, a=a, c=c)
    # the same curves with the mean ability moved into the intercepts (the models' location)
    beta, theta = beta + a * theta.mean(), theta - theta.mean()
    options = {} if likelihood is None else {"likelihood": likelihood}
    post = fit(R, kind, draws=1000, chains=4, random_seed=3, **options)
    assert post.diagnostics.attrs["divergences"] == 0
    assert post.diagnostics["passed"].all(), post.diagnostics
    hits = [
        interval_hits(draws_of(post, "theta"), theta),
        interval_hits(draws_of(post, "a"), a),
        interval_hits(draws_of(post, "beta"), beta),
    ]
    if kind == "3pl":
        hits.append(interval_hits(draws_of(post, "c"), c))
    assert_coverage(np.concatenate(hits))
    assert kendall_tau(post.theta.mean(("chain", "draw")).values, theta) > 0.75
    b_mean = draws_of(post, "b").mean(0)
    a_mean = draws_of(post, "a").mean(0)
    np.testing.assert_allclose(np.exp(np.log(a_mean).mean()), 1.0, atol=0.1)
    assert np.corrcoef(b_mean, -beta / a)[0, 1] > 0.9


# -- over-dispersion (beta-binomial) ------------------------------------------------------

@pytest.fixture(scope="module")
def overdispersed():
    """Rasch curve with cell rates scattered around it: Beta(p phi, (1 - p) phi), phi = 3."""
    rng = np.random.default_rng(21)
    theta = np.linspace(-1.5, 1.5, 12)
    b = zero_sum_normal(rng, 1.0, 25)
    R, _ = simulate_irt(rng, theta, b, 40, phi=3.0)
    return ResponseData(R), theta, 3.0


def test_beta_binomial_recovers_abilities_and_overdispersion(overdispersed):
    data, theta, phi = overdispersed
    post = fit(data, "rasch", likelihood="beta_binomial", random_seed=4)
    assert post.diagnostics["passed"].all(), post.diagnostics
    assert_coverage(interval_hits(draws_of(post, "theta"), theta))
    lo, hi = np.quantile(draws_of(post, "phi"), [0.05, 0.95])
    assert lo < phi < hi
    overall = post.ppc().overall.set_index("statistic")
    assert not overall.loc[["question_dispersion", "model_dispersion"], "flagged"].any()


def test_binomial_intervals_are_overconfident_on_overdispersed_data(overdispersed):
    """Why the 3PL defaults to beta-binomial: binomial intervals miss the truth here."""
    data, theta, _ = overdispersed
    post = fit(data, "rasch", random_seed=4)
    hits = interval_hits(draws_of(post, "theta"), theta)
    assert stats.binomtest(int(hits.sum()), hits.size, 0.9, alternative="less").pvalue < 0.01
    overall = post.ppc().overall.set_index("statistic")  # and the PPC says why
    assert overall.loc[["question_dispersion", "model_dispersion"], "flagged"].all()


def test_beta_binomial_log_likelihood_is_scipys_pmf():
    rng = np.random.default_rng(3)
    R, _ = simulate_irt(rng, np.linspace(-1, 1, 4), zero_sum_normal(rng, 1.0, 6), 7, phi=4.0)
    post = fit(R, "3pl", draws=50, tune=50, chains=1, random_seed=0)
    draw = {v: post.idata.posterior[v].values[0, 10] for v in ("theta", "a", "beta", "c", "phi")}
    p = draw["c"] + (1 - draw["c"]) * logistic(draw["a"] * draw["theta"][:, None] + draw["beta"])
    k = post.data.reductions.successes
    expected = stats.betabinom.logpmf(k, 7, p * draw["phi"], (1 - p) * draw["phi"])
    np.testing.assert_allclose(post.idata.log_likelihood["k"].values[0, 10], expected, rtol=1e-9)


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_binomial_3pl_is_multimodal_where_the_default_converges():
    """Bundled example, aime24: the default 3PL passes every check; binomial chains disagree.

    (Before the abilities carried the location, the binomial chains sat in modes with
    R-hat 1.5-2.1; with it they still disagree beyond the 1.01 check.)"""
    data = bayesrank.datasets.example("aime24")
    default = fit(data, "3pl", random_seed=0)
    assert default.diagnostics["passed"].all(), default.diagnostics
    assert default.diagnostics.attrs["divergences"] == 0
    binomial = fit(data, "3pl", likelihood="binomial", random_seed=0)
    assert binomial.diagnostics["r_hat"].max() > 1.01
    assert not binomial.diagnostics["passed"].all()


# -- empirical prior from R0 --------------------------------------------------------------

def test_greedy_prior_adds_information_about_abilities():
    """Per-model prior runs (one greedy decode per question) sharpen the abilities."""
    rng = np.random.default_rng(5)
    L, M, N = 6, 15, 2
    theta = np.linspace(-1.0, 1.0, L)
    b = zero_sum_normal(rng, 1.0, M)
    R, p = simulate_irt(rng, theta, b, N)
    greedy = (rng.random((L, M, 1)) < logistic(theta[:, None] + 0.3 - b)[..., None]).astype(int)
    data = ResponseData(R, R0=greedy)
    plain = fit(data, "rasch", chains=2, random_seed=2)
    informed = fit(data, "rasch", use_R0=True, chains=2, random_seed=2)
    assert "delta" in informed.idata.posterior and "k0" in informed.idata.observed_data
    assert list(informed.idata.log_likelihood.data_vars) == ["k"]
    sd_plain = plain.theta.std(("chain", "draw")).values
    sd_informed = informed.theta.std(("chain", "draw")).values
    assert np.mean(sd_informed) < 0.97 * np.mean(sd_plain)
    assert informed.diagnostics.attrs["divergences"] == 0


def test_shared_prior_runs_inform_difficulties_only():
    R = np.random.default_rng(0).integers(0, 2, (3, 4, 5))
    model = irt.build(ResponseData(R, R0=np.ones((4, 2), dtype=int)), use_R0=True)
    assert "theta_ref" in model.named_vars and "delta" not in model.named_vars
    assert model.named_vars_to_dims["k0"] == ("question",)
    np.testing.assert_array_equal(model["prior_trials"].get_value(), np.full(4, 2))


# -- structure and errors -----------------------------------------------------------------

def test_identifiability_constraints_hold_in_every_draw(rasch_fixed):
    _, _, _, post = rasch_fixed
    np.testing.assert_allclose(draws_of(post, "theta").sum(axis=1), 0.0, atol=1e-8)
    model = irt.build(rasch_fixed[0], kind="2pl")
    assert {"log_a", "beta", "a", "b"} <= set(model.named_vars)


def test_abilities_are_a_zero_sum_normal_pivoted_on_the_best_informed_model():
    """theta ~ ZeroSumNormal(3) in a basis whose dense coordinate is the best-informed model.

    PyMC's ZeroSumNormal makes the last model's ability a mixture of every free
    coordinate; the 3PL's weakest model on ZeroEval MATH-L5 is listed last and
    mixed slowly there (models/irt.py, ``_abilities``).
    """
    import pymc as pm

    from bayesrank.inference.cache import structure_key

    rates = np.array([0.8, 0.55, 0.3, 0.9, 0.04])  # model 1 nearest 1/2, the weakest last
    R = (np.random.default_rng(0).random((5, 40, 4)) < rates[:, None, None]).astype(int)
    k = R.sum(-1)
    assert irt.ability_pivot(k, np.full(k.shape, 4)) == 1
    model = irt.build(R, kind="3pl")
    np.testing.assert_array_equal(model["theta_pivot"].get_value(), [0, 1, 0, 0, 0])
    assert model["theta_z"].type.shape == (4,)
    L, zsn = 5, pm.ZeroSumNormal.dist(sigma=3.0, shape=5)
    offsets = []
    for z in np.random.default_rng(4).normal(size=(6, 4)):
        theta = model["theta"].eval({model["theta_z"]: z})
        assert abs(theta.sum()) < 1e-12
        assert np.linalg.norm(theta) == pytest.approx(3.0 * np.linalg.norm(z), rel=1e-12)
        # same density as PyMC's ZeroSumNormal(3), up to the constant of the basis change
        offsets.append(pm.logp(zsn, theta).eval() - stats.norm.logpdf(z).sum())
    np.testing.assert_allclose(offsets, offsets[0], atol=1e-10)
    # the weakest model (not the pivot) is mainly its own coordinate: H e_j has
    # 1 - 1 / (L - sqrt(L)) on the diagonal, the pivot is a mixture of all
    unit = np.eye(4)[3]  # the free slot of model 4
    theta = model["theta"].eval({model["theta_z"]: unit})
    assert theta[4] == pytest.approx(3.0 * (1 - 1 / (L - np.sqrt(L))), rel=1e-12)
    pivot_row = [model["theta"].eval({model["theta_z"]: e})[1] for e in np.eye(4)]
    np.testing.assert_allclose(pivot_row, 3.0 / np.sqrt(L), rtol=1e-12)
    # a dataset with another pivot builds the same graph (fit_many batches them)
    other = irt.build(R[::-1], kind="3pl")
    assert other["theta_pivot"].get_value().argmax() == 3
    assert structure_key(model, "3pl") == structure_key(other, "3pl")


def test_discrimination_scale_is_fixed_by_the_informed_questions_only():
    """Questions solved by none or by all get free log a; the others' log a sum to zero."""
    import pymc as pm

    k = np.array([[0, 3, 5, 1, 5], [0, 1, 5, 4, 5], [0, 2, 5, 0, 4]])
    R = counts_to_binary(k, 5)
    np.testing.assert_array_equal(
        irt.informed_questions(k, np.full(k.shape, 5)), [False, True, False, True, True]
    )
    model = irt.build(R, kind="2pl")
    assert model["log_a_z"].type.shape == (4,)  # M - 1 free directions, whatever K is
    draws = pm.draw(model["log_a"], draws=400, random_seed=1)
    np.testing.assert_allclose(draws[:, [1, 3, 4]].sum(axis=1), 0.0, atol=1e-10)
    assert np.all(np.abs(draws[:, [0, 2]].sum(axis=1)) > 1e-6)
    # the uninformed log a are N(0, 0.5) i.i.d. (the reflection leaves them alone) ...
    for value in np.random.default_rng(2).normal(size=(5, 4)):
        log_a = model["log_a"].eval({model["log_a_z"]: value})
        # ... and the map is an isometry onto the zero-sum subspace: ||log a|| = 0.5 ||z||
        assert np.linalg.norm(log_a) == pytest.approx(0.5 * np.linalg.norm(value), rel=1e-12)
        np.testing.assert_allclose(log_a[[0, 2]], 0.5 * value[[0, 1]], rtol=1e-12)
    # intercepts: informed ones centred, the others non-centred (mu + sigma z), one vector
    rasch = irt.build(R, kind="rasch")
    np.testing.assert_array_equal(rasch["centred"].get_value(), [0, 1, 0, 1, 1])
    values = {"mu_b": 0.5, "sigma_b": 2.0, "b_raw": [1.0, 1.0, -1.0, 2.0, 3.0]}
    got = rasch["b"].eval({rasch[name]: np.asarray(v) for name, v in values.items()})
    np.testing.assert_allclose(got, [2.5, 1.0, -1.5, 2.0, 3.0])
    # the raw vector's prior: N(mu, sigma) where centred, N(0, 1) elsewhere
    point = rasch.initial_point() | {
        "mu_b": 0.5, "sigma_b_log__": np.log(2.0), "b_raw": np.array(values["b_raw"])
    }
    logp = rasch.compile_logp(vars=[rasch["b_raw"]], jacobian=False)(point)
    expected = stats.norm.logpdf([1.0, 2.0, 3.0], 0.5, 2.0).sum()
    expected += stats.norm.logpdf([1.0, -1.0]).sum()
    assert logp == pytest.approx(expected, rel=1e-12)


def test_one_informed_question_has_unit_discrimination():
    import pymc as pm

    k = np.array([[0, 3, 5], [0, 1, 5]])
    model = irt.build(counts_to_binary(k, 5), kind="2pl")
    draws = pm.draw(model["log_a"], draws=50, random_seed=3)
    np.testing.assert_allclose(draws[:, 1], 0.0, atol=1e-12)
    assert np.std(draws[:, 0]) > 0.2 and np.std(draws[:, 2]) > 0.2


def test_binomial_counts_are_the_sufficient_statistic():
    """Trial order does not matter: k and n are all the model sees."""
    rng = np.random.default_rng(1)
    k = rng.integers(0, 6, (3, 4))
    shuffled = rng.permuted(counts_to_binary(k, 5), axis=2)
    for R in (counts_to_binary(k, 5), shuffled):
        model = irt.build(R)
        np.testing.assert_array_equal(model["successes"].get_value(), k)
        np.testing.assert_array_equal(model["trials"].get_value(), np.full((3, 4), 5))


def test_irt_errors_name_the_problem():
    categorical = ResponseData(np.random.default_rng(0).integers(0, 3, (3, 4, 2)))
    with pytest.raises(DataError, match="binary"):
        irt.build(categorical)
    with pytest.raises(DataError, match="bayes"):
        fit(categorical, "2pl")
    binary = ResponseData(np.ones((2, 3, 2), dtype=int))
    with pytest.raises(ValueError, match="no prior outcomes"):
        irt.build(binary, use_R0=True)
    with pytest.raises(ValueError, match="kind"):
        irt.build(binary, kind="4pl")
    with pytest.raises(ValueError, match="fix_guessing"):
        irt.build(binary, kind="3pl", fix_guessing=1.5)
    with pytest.raises(ValueError, match="ability_scale"):
        irt.build(binary, ability_scale=0.0)
    with pytest.raises(ValueError, match="likelihood"):
        irt.build(binary, likelihood="poisson")


def test_pointwise_log_likelihood_is_the_binomial_pmf(rasch_fixed):
    """The likelihood (with log C(n, k) precomputed) is exactly Binomial(n, logistic(theta - b))."""
    import pymc as pm

    data, _, _, post = rasch_fixed
    theta = post.idata.posterior["theta"].values[2, 40]
    b = post.idata.posterior["b"].values[2, 40]
    expected = stats.binom.logpmf(
        data.reductions.successes, data.reductions.trials, logistic(theta[:, None] - b)
    )
    np.testing.assert_allclose(post.idata.log_likelihood["k"].values[2, 40], expected, rtol=1e-10)
    # the question masks the priors read travel with the draws, so PyMC keeps the posterior
    # draws of b_raw knowingly instead of warning that it froze them
    np.testing.assert_array_equal(
        post.idata.constant_data["centred"].values, post.pymc_model["centred"].get_value()
    )
    assert "successes" not in post.idata.constant_data
    with post.pymc_model, warnings.catch_warnings():
        warnings.simplefilter("error", ImplicitFreezeWarning)
        pred = pm.sample_posterior_predictive(
            post.idata.sel(draw=slice(0, 20)), progressbar=False, random_seed=0
        )
    k = pred.posterior_predictive["k"]
    assert k.dims == ("chain", "draw", "llm", "question")
    assert k.values.min() >= 0 and k.values.max() <= data.N
    # replicated counts track the observed ones
    assert np.corrcoef(k.mean(("chain", "draw")).values.ravel(), data.reductions.successes.ravel())[
        0, 1
    ] > 0.9


def test_beta_binomial_draws_survive_a_probability_that_rounds_to_one():
    """A cell with p = 1 - 1e-20 (p rounds to 1.0) still draws; before, Beta(.., 0) raised."""
    from bayesrank.models.irt import _beta_binomial_random

    rng = np.random.default_rng(0)
    n = np.array([10, 10])
    log_p = np.array([np.log1p(-1e-20), np.log(0.5)])
    log_q = np.array([-46.0, np.log(0.5)])  # log(1e-20) and log(0.5)
    draws = _beta_binomial_random(n, log_p, log_q, np.log(0.5), 0.0, rng=rng, size=(2000, 2))
    assert draws.shape == (2000, 2)
    assert (draws[:, 0] == 10).all()  # almost surely every trial succeeds
    assert abs(draws[:, 1].mean() - 5.0) < 0.3
