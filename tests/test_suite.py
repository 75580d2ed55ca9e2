"""The suite model (models/suite.py, bayesrank.fit_benchmarks): build, validation, recovery.

Simulated suites with known parameters: 10 models on three benchmarks of different
difficulty, two models missing from one benchmark each; each fit is 2 chains x 300 draws
(the recovery checks do not need converged tails).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from bayesrank.models import suite
from bayesrank.models.irt import informed_questions
from bayesrank.models.likelihoods import fast_kernels
from bayesrank.models.pooling import Pooling, pooled_abilities
from scipy import special, stats

import bayesrank as br
from bayesrank import DataError, ResponseData, kendall_tau

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

L, M, N = 10, 40, 4
SKILL = np.linspace(-2.0, 2.0, L)
SPREAD = np.array([0.3, 0.5, 0.2])
LEVEL = np.array([-1.5, 0.0, 1.0])  # the benchmarks' mean difficulty: easy, middle, hard
MISSING = {1: (2, 7), 2: (4,)}  # benchmark: the models that did not run it
#: graphs evaluated without compiling them to C or Numba: seconds, not minutes, for these
#: small checks (the fits compile as usual)
PYTHON_MODE = {"mode": "FAST_COMPILE"}


def simulate(seed: int = 0):
    """The suite (ResponseData per benchmark, the missing cells left out) and the held-out
    cells' observed accuracies, from theta_lb = skill_l + sigma_b z_lb, b_m ~ N(level_b, 1)."""
    rng = np.random.default_rng(seed)
    theta = SKILL[:, None] + SPREAD * rng.standard_normal((L, SPREAD.size))
    names = [f"m{i}" for i in range(L)]
    data, held_out = {}, {}
    for j in range(SPREAD.size):
        b = rng.normal(LEVEL[j], 1.0, M)
        p = special.expit(theta[:, j, None] - b)
        R = (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
        keep = [i for i in range(L) if i not in MISSING.get(j, ())]
        data[f"bench{j}"] = ResponseData(R[keep], models=[names[i] for i in keep])
        for i in MISSING.get(j, ()):
            held_out[(names[i], f"bench{j}")] = R[i].mean()
    return data, held_out


@pytest.fixture(scope="module")
def simulated():
    return simulate()


@pytest.fixture(scope="module")
def rasch_fit(simulated):
    data, _ = simulated
    return br.fit_benchmarks(data, "rasch", random_seed=1, draws=300, chains=2,
                             progressbar=False)


# -- the model --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", suite.KINDS)
def test_prior_predictive_draws_every_benchmark_only_where_it_was_run(simulated, kind):
    data, _ = simulated
    model = suite.build(data, kind=kind)
    prior = pm.sample_prior_predictive(draws=50, model=model, random_seed=0,
                                       compile_kwargs=PYTHON_MODE)
    for j in range(3):
        k = prior.prior_predictive[f"k_bench{j}"]
        assert k.shape[2:] == (L - len(MISSING.get(j, ())), M)  # no cells where not run
        assert int(k.max()) <= N and int(k.min()) >= 0
    theta = prior.prior["theta"]
    assert theta.dims[2:] == ("llm", "benchmark") and theta.shape[2:] == (L, 3)
    skill = prior.prior["skill"].values
    np.testing.assert_allclose(skill.sum(axis=-1), 0.0, atol=1e-9)  # zero sum over models
    # each benchmark's deviations sum to zero over the models that ran it, not the others
    deviation = prior.prior["deviation"].values
    ran = suite.SuiteData.of(data).ran()
    for j in range(3):
        np.testing.assert_allclose(deviation[..., ran[:, j], j].sum(axis=-1), 0.0, atol=1e-9)
        if (~ran[:, j]).any():
            assert np.abs(deviation[..., ~ran[:, j], j]).max() > 0.01
    assert float(prior.prior["spread"].min()) > 0


def prior_covariance(ran, scale, spread):
    """Cov of (skill, theta) given the spreads, from the module docstring's equations:
    skill ~ ZeroSumNormal(scale) over the models, d_.b ~ ZeroSumNormal(sigma_b) over the
    models that ran b and Normal(0, sigma_b) over the others, theta_lb = skill_l + d_lb."""
    n_models, n_bench = ran.shape
    skill = scale**2 * (np.eye(n_models) - 1.0 / n_models)
    theta = np.kron(skill, np.ones((n_bench, n_bench)))  # (l, b) row-major
    for j in range(n_bench):
        r = ran[:, j].astype(float)
        deviation = spread[j] ** 2 * (np.eye(n_models) - np.outer(r, r) / r.sum())
        theta[j::n_bench, j::n_bench] += deviation
    cross = np.repeat(skill, n_bench, axis=1)
    return np.block([[skill, cross], [cross.T, theta]])


@pytest.mark.parametrize("coverage", ["simulated", "one benchmark each missing"])
def test_pooled_abilities_keep_the_prior_of_skill_and_theta(simulated, coverage, numpy_graphs):
    """Sampling the abilities of the cells run and drawing the rest given them
    (models/pooling.py) is the same prior: given the spreads, theta_run's density is the
    equations' marginal (of the contrasts) and (skill, theta), linear in (theta_run,
    theta_level_z, z), has the equations' covariance, exactly (with a benchmark run by
    every model, whose abilities sum to 0, and without)."""
    ran = suite.SuiteData.of(simulated[0]).ran()
    if coverage != "simulated":
        ran = ran.copy()
        ran[0, 0] = False  # now no benchmark was run by every model: no zero-sum constraint
    scale, spread = 3.0, np.array([0.3, 0.8, 1.5])
    with pm.Model() as model:
        skill, theta, level = pooled_abilities(ran, scale, pt.as_tensor(spread))
    pool = Pooling.of(ran)
    assert pool.pivots.size == (1 if coverage == "simulated" else 0)
    expected = prior_covariance(ran, scale, spread)
    # theta_run: the cells run in levels and contrasts (x = E^-1 theta_r), the free
    # contrasts; the free levels drawn given them from theta_level_z
    run = ran.shape[0] + pool.cells
    to_x = np.linalg.inv(pool.basis)[pool.free]
    order, n_c = pool.contrasts_then_levels()
    sampled = (to_x @ expected[np.ix_(run, run)] @ to_x.T)[np.ix_(order, order)]
    x = np.random.default_rng(0).multivariate_normal(np.zeros(n_c), sampled[:n_c, :n_c])
    np.testing.assert_allclose(pm.logp(model["theta_run"], x).eval(),
                               stats.multivariate_normal(cov=sampled[:n_c, :n_c]).logpdf(x),
                               rtol=1e-10)
    names = ("theta_run", "theta_level_z", "theta_z")
    values = [model.rvs_to_values[model[name]] for name in names]
    outputs = pt.concatenate([skill, theta.ravel()])
    jacobian = pytensor.function(values, pytensor.gradient.jacobian(
        model.replace_rvs_by_values([outputs])[0], values))
    standard = [np.zeros(model[name].type.shape[0]) for name in names[1:]]
    j_run, j_level, j_z = jacobian(x, *standard)
    covariance = j_run @ sampled[:n_c, :n_c] @ j_run.T + j_level @ j_level.T + j_z @ j_z.T
    np.testing.assert_allclose(covariance, expected, atol=1e-9)
    # the levels are the mean abilities of the models that ran each benchmark
    level_of = pytensor.function(values, model.replace_rvs_by_values([level])[0],
                                 on_unused_input="ignore")
    theta_of = pytensor.function(values, model.replace_rvs_by_values([theta])[0])
    rng = np.random.default_rng(1)
    z = [rng.standard_normal(model[name].type.shape[0]) for name in names[1:]]
    drawn = np.where(ran, theta_of(x, *z), np.nan)
    np.testing.assert_allclose(level_of(x, *z), np.nanmean(drawn, axis=0), atol=1e-12)


@pytest.mark.parametrize("kind", suite.KINDS)
def test_fast_and_plain_likelihoods_give_the_same_density(simulated, kind):
    """The suite's cells go through the single-benchmark likelihoods: bayesrank's kernels
    and PyMC's own distributions give the same log-density and gradient."""
    data, _ = simulated
    fast = suite.build(data, kind=kind)
    with fast_kernels(False):
        plain = suite.build(data, kind=kind)
    point = fast.initial_point(random_seed=3)
    rng = np.random.default_rng(4)
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in point.items()}
    np.testing.assert_allclose(fast.compile_logp(**PYTHON_MODE)(point),
                               plain.compile_logp(**PYTHON_MODE)(point), rtol=1e-9)
    np.testing.assert_allclose(fast.compile_dlogp(**PYTHON_MODE)(point),
                               plain.compile_dlogp(**PYTHON_MODE)(point), rtol=1e-7, atol=1e-9)


def test_a_benchmark_sharing_no_model_is_a_one_line_error(simulated):
    data, _ = simulated
    apart = ResponseData(np.ones((2, 5, 1), np.int8), models=["x", "y"])
    with pytest.raises(DataError, match=r"'apart' share no model with 'bench0', 'bench1'") as err:
        suite.build({**data, "apart": apart})
    assert "\n" not in str(err.value)


def test_one_benchmark_or_categorical_outcomes_are_refused(simulated):
    data, _ = simulated
    with pytest.raises(DataError, match="at least two benchmarks"):
        br.fit_benchmarks({"bench0": data["bench0"]})
    graded = ResponseData(np.full((3, 4, 1), 2, np.int8), models=["m0", "m1", "m2"],
                          weights=[0.0, 0.5, 1.0])
    with pytest.raises(DataError, match="suite models read binary outcomes"):
        suite.build({"bench0": data["bench0"], "graded": graded})


# -- the answers -------------------------------------------------------------------------

def test_overall_leaderboard_recovers_the_skill_ranking(rasch_fit):
    board = rasch_fit.leaderboard()
    assert list(board.columns[:3]) == ["benchmarks", "rank", "mean"]
    assert kendall_tau(board["mean"].reindex([f"m{i}" for i in range(L)]).to_numpy(),
                       SKILL) >= 0.8
    assert board.index[0] == "m9" and board.loc["m9", "in_top_set"]
    assert board.loc[["m2", "m7", "m4"], "benchmarks"].tolist() == [2, 2, 2]
    # P(best) and the interval are those of the skill's draws (an independent count)
    skill = rasch_fit.idata.posterior["skill"].values.reshape(-1, L)
    best = np.bincount(skill.argmax(axis=1), minlength=L) / skill.shape[0]
    np.testing.assert_allclose(board["p_best"].reindex(rasch_fit.models), best)
    np.testing.assert_allclose(board["lower"].reindex(rasch_fit.models),
                               np.quantile(skill, 0.05, axis=0))


def test_benchmark_leaderboard_has_every_model_and_flags_the_predicted(rasch_fit, simulated):
    data, _ = simulated
    board = rasch_fit.leaderboard(benchmark="bench1")
    assert set(board.index) == set(rasch_fit.models)
    assert set(board.index[~board["ran"]]) == {"m2", "m7"}
    assert board.loc[~board["ran"], "observed"].isna().all()
    ran = board[board["ran"]]
    observed = data["bench1"].R.mean(axis=(1, 2))
    np.testing.assert_allclose(ran["observed"].reindex(data["bench1"].models), observed)
    # expected accuracy: mean over the benchmark's questions of logistic(theta_lb - b_m)
    post = rasch_fit.idata.posterior
    theta = post["theta"].sel(benchmark="bench1").values.reshape(-1, L)
    b = post["b"].values.reshape(theta.shape[0], -1)[:, M:2 * M]
    expected = special.expit(theta[:, :, None] - b[:, None, :]).mean(axis=(0, 2))
    np.testing.assert_allclose(board["accuracy"].reindex(rasch_fit.models), expected)
    assert (board["accuracy_lower"] <= board["accuracy"]).all()
    assert (board["accuracy"] <= board["accuracy_upper"]).all()


def test_predicted_accuracy_of_models_that_did_not_run_a_benchmark(rasch_fit, simulated):
    """The held-out cells' observed accuracy lies in the predicted 90% interval, and the
    prediction follows the benchmark's level (the easy one above the hard one)."""
    _, held_out = simulated
    for (model, bench), observed in held_out.items():
        row = rasch_fit.predict(model, bench)
        assert not row["ran"] and np.isnan(row["observed"])
        assert row["accuracy_lower"] <= observed <= row["accuracy_upper"], (model, bench, row)
    easy, hard = rasch_fit.predict("m4", "bench0"), rasch_fit.predict("m4", "bench2")
    assert easy["ran"] and not hard["ran"]
    assert easy["accuracy"] > hard["accuracy"] + 0.15


def test_spread_per_benchmark(rasch_fit):
    spread = rasch_fit.spread(prob=0.9)
    assert list(spread.index) == ["bench0", "bench1", "bench2"]
    assert (spread["lower"] > 0).all() and (spread["lower"] < spread["upper"]).all()
    draws = rasch_fit.idata.posterior["spread"].values.reshape(-1, 3)
    np.testing.assert_allclose(spread["mean"], draws.mean(axis=0))
    with pytest.raises(DataError, match="no benchmark 'nope'"):
        rasch_fit.leaderboard(benchmark="nope")


@pytest.mark.extended("a 2PL suite fit's recovery, 15 s on 2 busy cores; the Rasch suite's "
                      "recovery runs in make test")
def test_two_pl_suite_recovers_the_skill_ranking(simulated):
    data, held_out = simulated
    post = br.fit_benchmarks(data, "2pl", random_seed=2, draws=300, chains=2,
                             progressbar=False)
    board = post.leaderboard()
    assert kendall_tau(board["mean"].reindex([f"m{i}" for i in range(L)]).to_numpy(),
                       SKILL) >= 0.8
    log_a = post.idata.posterior["log_a"].values.reshape(-1, 3, M)
    for j, d in enumerate(data.values()):  # zero sum over each benchmark's informed questions
        red = d.reductions
        informed = informed_questions(red.successes, red.trials)
        np.testing.assert_allclose(log_a[:, j, informed].sum(axis=-1), 0.0, atol=1e-8)
    (model, bench), observed = next(iter(held_out.items()))
    row = post.predict(model, bench)
    assert row["accuracy_lower"] <= observed <= row["accuracy_upper"]
