"""Paired-comparison models: scorio and choix parity, published fits, the paper's
counterexample, identification, Bayesian BT by MCMC, bad input."""

from __future__ import annotations

import json

import choix
import numpy as np
import pandas as pd
import pytest
from _sims import simulate
from scorio import rank as sr

import bayesrank
from bayesrank import DataError, DisconnectedGraphError, NotIdentifiedError, ResponseData
from bayesrank.baselines import paired

SHAPES = {"single_trial": (8, 40, 1), "small": (6, 12, 4), "paper_size": (20, 120, 80)}
SCORIO = {
    "bradley_terry": lambda R: sr.bradley_terry(R, max_iter=500, return_scores=True),
    "bradley_terry_map": lambda R: sr.bradley_terry_map(R, prior=1.0, max_iter=500,
                                                        return_scores=True),
    "bradley_terry_davidson": lambda R: sr.bradley_terry_davidson(R, max_iter=500,
                                                                  return_scores=True),
    "bradley_terry_davidson_map": lambda R: sr.bradley_terry_davidson_map(
        R, prior=1.0, max_iter=500, return_scores=True),
    "rao_kupper": lambda R: sr.rao_kupper(R, tie_strength=1.1, max_iter=500,
                                          return_scores=True),
    "rao_kupper_map": lambda R: sr.rao_kupper_map(R, tie_strength=1.1, prior=1.0, max_iter=500,
                                                  return_scores=True),
}


def assert_same_ranking(ours, theirs_scores, log_tol=1e-4):
    """Equal orderings; where ours has an exact tie, scorio must agree up to its optimiser
    tolerance (it breaks exact ties by L-BFGS noise, see the Davidson test below)."""
    a = np.log(ours.scores)
    b = np.log(np.asarray(theirs_scores, float))
    b = b - b.mean() + a.mean()
    np.testing.assert_allclose(a, b, atol=log_tol)
    strict = np.abs(a[:, None] - a[None, :]) > 10 * log_tol
    assert np.array_equal(np.sign(a[:, None] - a[None, :])[strict],
                          np.sign(b[:, None] - b[None, :])[strict])


@pytest.fixture(scope="module", params=list(SHAPES))
def tensor(request):
    L, M, N = SHAPES[request.param]
    return simulate(L, M, N, seed=L * M + N)


@pytest.mark.parametrize("identifier", list(SCORIO))
def test_matches_scorio(identifier, tensor):
    ours = bayesrank.rank(tensor, identifier)
    ranks, scores = SCORIO[identifier](tensor)
    assert_same_ranking(ours, scores)
    if len(np.unique(ours.ranks)) == len(ours.ranks):  # no exact ties: ranks identical
        np.testing.assert_array_equal(ours.ranks, ranks)


def test_davidson_ranks_like_accuracy_on_complete_binary_data():
    """Documented difference with scorio.

    On complete binary data every pair meets M N times, so the Davidson log-likelihood
    sum_pairs [(W_ij - W_ji) d/2 + T_ij log nu - M N log(e^{d/2} + e^{-d/2} + nu)] sees
    theta only through the net wins sum_j (W_ij - W_ji) = L S_i - sum_j S_j: the ML and MAP
    rankings equal the accuracy ranking, ties included.  Model 5 below answers model 3's
    questions in another order (same accuracy, different pairwise wins): we tie them
    exactly, scorio separates them by optimiser noise only.
    """
    R = simulate(6, 30, 6, seed=21)
    R[5] = R[3][np.random.default_rng(0).permutation(30)]
    avg = bayesrank.rank(R, "avg")
    for identifier in ("bradley_terry_davidson", "bradley_terry_davidson_map"):
        ours = bayesrank.rank(R, identifier)
        np.testing.assert_array_equal(ours.ranks, avg.ranks)
        assert ours.ranks[3] == ours.ranks[5]
        _, theirs = SCORIO[identifier](R)
        assert abs(np.log(theirs[3]) - np.log(theirs[5])) < 1e-4
    bt = bayesrank.rank(R, "bradley_terry")  # BT does see the different wins
    assert bt.ranks[3] != bt.ranks[5]


def test_ml_matches_choix():
    R = simulate(7, 20, 5, seed=4)
    W = ResponseData(R).reductions.wins
    theta = paired.bt_log_strengths(W)
    ref = choix.ilsr_pairwise_dense(W, tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(theta, ref - ref.mean(), atol=1e-8)


@pytest.mark.parametrize("variance", [1.0, 0.25])
def test_map_matches_choix(variance):
    R = simulate(5, 6, 2, seed=9)
    W = ResponseData(R).reductions.wins
    comparisons = [(i, j) for i in range(5) for j in range(5) for _ in range(int(W[i, j]))]
    # choix penalises alpha * sum(theta^2) (its code; the docstring's "variance 1/alpha" is
    # off by a factor 2), i.e. a N(0, 1 / (2 alpha)) prior
    ref = choix.opt_pairwise(5, comparisons, alpha=1 / (2 * variance), method="BFGS",
                             tol=1e-11)
    np.testing.assert_allclose(paired.bt_log_strengths(W, prior=variance), ref, atol=1e-8)
    result = bayesrank.rank(R, "bradley_terry_map", prior=variance)
    np.testing.assert_allclose(np.log(result.scores), ref, atol=1e-8)


def test_paper_counterexample_bt_disagrees_with_accuracy():
    """Appendix "A Counterexample": M = 8, N = 1 with question types A = (0,1,1) x2,
    B = (1,0,0) x3, C = (1,1,0) x3 gives accuracy 0 > 1 > 2 but BT-ML 1 > 0 > 2, with
    pi_1 / pi_2 = b* the root in (4, 5) of 2b^3 - 5b^2 - 16b - 15 and
    pi_0 / pi_2 = 3 b*^2 / (2 b* + 5)."""
    types = {"A": (0, 1, 1), "B": (1, 0, 0), "C": (1, 1, 0)}
    columns = [types["A"]] * 2 + [types["B"]] * 3 + [types["C"]] * 3
    R = np.array(columns, dtype=np.int8).T[:, :, None]  # (3 models, 8 questions, 1 trial)
    np.testing.assert_array_equal(ResponseData(R).reductions.wins,
                                  [[0, 3, 6], [2, 0, 3], [2, 0, 0]])
    np.testing.assert_array_equal(bayesrank.rank(R, "avg").ranks, [1, 2, 3])
    bt = bayesrank.rank(R, "bradley_terry")
    np.testing.assert_array_equal(bt.ranks, [2, 1, 3])
    roots = np.roots([2, -5, -16, -15])
    b = roots[(abs(roots.imag) < 1e-12) & (roots.real > 4) & (roots.real < 5)].real[0]
    pi = bt.scores / bt.scores[2]
    np.testing.assert_allclose(pi[:2], [3 * b**2 / (2 * b + 5), b], rtol=1e-9)


# -- published reference fits ---------------------------------------------------------------
def _arena(shared_dir):
    raw = json.loads((shared_dir / "data/chatbot_arena_20240814_pairwise/"
                      "chatbotarena_20240814.json").read_text())
    X, Y = np.asarray(raw["X"]), np.asarray(raw["Y"], float)
    L = len(raw["models"])
    W, T = np.zeros((L, L)), np.zeros((L, L))
    np.add.at(W, (X[:, 0], X[:, 1]), Y[:, 0])
    np.add.at(W, (X[:, 1], X[:, 0]), Y[:, 1])
    np.add.at(T, (X[:, 0], X[:, 1]), Y[:, 2])  # leaderbot's default: "both bad" excluded
    np.add.at(T, (X[:, 1], X[:, 0]), Y[:, 2])
    return W, T, Y[:, :3].sum()


def test_chatbot_arena_mean_nll(shared_dir):
    """leaderbot 0.4.3 README, table "Model Selection": mean NLL per battle at the MLE."""
    W, T, battles = _arena(shared_dir)
    half = W + T / 2  # BT: a tie is half a win and half a loss
    theta = paired.bt_log_strengths(half)
    assert -paired.bt_loglik(theta, half) / battles == pytest.approx(0.6554, abs=5e-5)
    theta, nu = paired.davidson_log_strengths(W, T)
    assert -paired.davidson_loglik(theta, nu, W, T) / battles == pytest.approx(1.0100, abs=5e-5)
    assert nu == pytest.approx(0.5476, abs=5e-4)
    theta, kappa = paired.rao_kupper_log_strengths(W, T, tie_strength=None)
    assert -paired.rao_kupper_loglik(theta, kappa, W, T) / battles == pytest.approx(1.0095,
                                                                                   abs=5e-5)
    assert np.log(kappa) == pytest.approx(0.4500, abs=5e-4)


def test_baseball_bradley_terry(shared_dir):
    """BradleyTerry2 vignette (Agresti 2002): 1987 AL East, Baltimore = 0."""
    games = pd.read_csv(shared_dir / "data/bradleyterry2_agresti/baseball_1987_ALeast.csv")
    teams = sorted(set(games["home.team"]) | set(games["away.team"]))
    index = {t: k for k, t in enumerate(teams)}
    W = np.zeros((len(teams), len(teams)))
    for home, away, hw, aw in games[["home.team", "away.team", "home.wins",
                                     "away.wins"]].itertuples(index=False):
        W[index[home], index[away]] += hw
        W[index[away], index[home]] += aw
    theta = paired.bt_log_strengths(W)
    published = {"Boston": 1.1077, "Cleveland": 0.6839, "Detroit": 1.4364, "Milwaukee": 1.5814,
                 "New York": 1.2476, "Toronto": 1.2945}
    for team, value in published.items():
        assert theta[index[team]] - theta[index["Baltimore"]] == pytest.approx(value, abs=5e-5)


def test_pudding_davidson(shared_dir):
    """PlackettLuce vignette: Davidson (1970) worths (sum 1) and tie parameter, to 1e-4."""
    pud = pd.read_csv(shared_dir / "data/plackettluce_nascar_pudding/pudding_davidson1970.csv")
    W, T = np.zeros((6, 6)), np.zeros((6, 6))
    for i, j, _, wij, wji, tij in pud.itertuples(index=False):
        W[i - 1, j - 1], W[j - 1, i - 1] = wij, wji
        T[i - 1, j - 1] = T[j - 1, i - 1] = tij
    theta, nu = paired.davidson_log_strengths(W, T)
    worth = np.exp(theta) / np.exp(theta).sum()
    np.testing.assert_allclose(
        worth, [0.1388005, 0.1729985, 0.1617420, 0.1653930, 0.1586805, 0.2023855], atol=1e-4)
    assert nu == pytest.approx(0.7468147, abs=1e-4)


# -- identification -----------------------------------------------------------------------
def _undefeated_first_model():
    R = simulate(5, 20, 3, seed=5)
    R[0] = 1  # model 0 is always right: it never loses a comparison
    return R


@pytest.mark.parametrize("identifier", ["bradley_terry", "plackett_luce"])
def test_ml_without_finite_estimate_raises_and_map_works(identifier):
    R = _undefeated_first_model()
    with pytest.raises(NotIdentifiedError, match=r"model_0.*_map"):
        bayesrank.rank(R, identifier)
    fit = bayesrank.rank(R, f"{identifier}_map")
    assert np.all(np.isfinite(fit.scores)) and fit.ranks[0] == 1


def test_tie_models_are_identified_by_ties():
    """The undefeated model still ties (both right), which keeps its tie-model MLE finite."""
    R = _undefeated_first_model()
    for identifier in ("bradley_terry_davidson", "rao_kupper"):
        fit = bayesrank.rank(R, identifier)
        assert np.all(np.isfinite(np.log(fit.scores))) and fit.ranks[0] == 1


def test_disconnected_counts_raise():
    W = np.zeros((4, 4))
    W[0, 1], W[1, 0], W[2, 3], W[3, 2] = 3, 2, 1, 4
    with pytest.raises(DisconnectedGraphError, match="disconnected"):
        paired.bt_log_strengths(W)
    theta = paired.bt_log_strengths(W, prior=1.0)  # the prior links the components
    assert np.all(np.isfinite(theta))


def test_no_decisive_outcome_ties_everyone():
    R = np.tile(simulate(1, 10, 3, seed=1), (4, 1, 1))  # four identical models
    for identifier in list(SCORIO) + ["bayesian_mcmc"]:
        result = bayesrank.rank(R, identifier)
        assert np.all(result.ranks == 1), identifier


# -- Bayesian Bradley-Terry by MCMC ---------------------------------------------------------
def _posterior_means_by_quadrature(W: np.ndarray, var: float) -> np.ndarray:
    """E[theta | W] for L = 3 on a fine grid over the two contrasts (the mean of theta is
    independent of the data under the isotropic prior and has mean 0)."""
    basis = np.array([[1, -1, 0], [1, 1, -2]], float).T
    basis /= np.linalg.norm(basis, axis=0)
    grid = np.linspace(-7, 7, 701)
    v1, v2 = np.meshgrid(grid, grid, indexing="ij")
    theta = np.stack([v1.ravel(), v2.ravel()], 1) @ basis.T
    d = theta[:, :, None] - theta[:, None, :]
    log_lik = (W[None] * -np.logaddexp(0, -d)).sum(axis=(1, 2))
    log_post = log_lik - 0.5 * (v1.ravel() ** 2 + v2.ravel() ** 2) / var
    weight = np.exp(log_post - log_post.max())
    return (theta * weight[:, None]).sum(0) / weight.sum()


def test_bayesian_mcmc_matches_quadrature():
    W = np.array([[0, 4, 7], [3, 0, 5], [1, 2, 0]], float)
    exact = _posterior_means_by_quadrature(W, 1.0)
    draws, rate = paired.bt_posterior_draws(W, n_samples=5000, burnin=1000, seed=42)
    sd = draws.std(0)
    assert 0.3 < rate < 1
    np.testing.assert_array_less(np.abs(draws.mean(0) - exact), 0.1 * sd)


def test_bayesian_mcmc_is_seeded():
    R = simulate(6, 12, 4, seed=3)
    first = bayesrank.rank(R, "bayesian_mcmc")
    np.testing.assert_array_equal(first.scores, bayesrank.rank(R, "bayesian_mcmc").scores)
    assert not np.array_equal(first.scores, bayesrank.rank(R, "bayesian_mcmc", seed=7).scores)


def test_bayesian_mcmc_agrees_with_scorio_on_small_data():
    R = simulate(6, 12, 4, seed=3)
    ours = bayesrank.rank(R, "bayesian_mcmc")
    ranks, scores = sr.bayesian_mcmc(R, n_samples=5000, burnin=1000, prior_var=1.0, seed=42,
                                     return_scores=True)
    np.testing.assert_array_equal(ours.ranks, ranks)
    sd = ours.details["posterior_sd"]
    np.testing.assert_array_less(np.abs(ours.scores - (scores - scores.mean())), 0.3 * sd)


def test_bayesian_mcmc_mixes_where_scorios_random_walk_does_not():
    """Documented difference with scorio.

    scorio's random-walk Metropolis uses an isotropic proposal of scale ~0.1; with
    thousands of comparisons per pair the posterior sd is ~0.02, so in L dimensions almost
    every proposal is rejected and its "posterior mean" stays near the start.  Our
    independence sampler (Student-t around the mode, Laplace scale) agrees with a 20x longer
    run and with the posterior mode to a fraction of a posterior sd; scorio's does not.
    """
    R = simulate(10, 120, 80, seed=15)
    W = ResponseData(R).reductions.wins
    ours = bayesrank.rank(R, "bayesian_mcmc")
    long, _ = paired.bt_posterior_draws(W, n_samples=100_000, burnin=1000, seed=2024)
    reference, sd = long.mean(0), long.std(0)
    mode = paired.bt_log_strengths(W, prior=1.0)
    np.testing.assert_array_less(np.abs(reference - mode), 0.2 * sd)
    np.testing.assert_array_less(np.abs(ours.scores - reference), 0.15 * sd)
    _, scorio_means = sr.bayesian_mcmc(R, n_samples=5000, burnin=1000, prior_var=1.0, seed=42,
                                       return_scores=True)
    assert np.max(np.abs(scorio_means - scorio_means.mean() - reference) / sd) > 1.5  # 3.4 seen


# -- other inputs -------------------------------------------------------------------------------
def test_categorical_data_use_utility_wins():
    rng = np.random.default_rng(0)
    data = ResponseData(rng.integers(0, 3, (4, 10, 3)), n_categories=3)
    result = bayesrank.rank(data, "bradley_terry_map")
    expect = paired.bt_log_strengths(data.reductions.wins, prior=1.0)
    np.testing.assert_allclose(np.log(result.scores), expect, atol=1e-12)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: paired.bt_log_strengths(np.ones((2, 3))), "square"),
        (lambda: paired.bt_log_strengths(-np.ones((2, 2)) + np.eye(2)), "non-negative"),
        (lambda: paired.bt_log_strengths(np.ones((2, 2))), "diagonal"),
        (lambda: paired.bt_log_strengths(np.array([[0, np.nan], [1, 0]])), "finite"),
        (lambda: paired.davidson_log_strengths(np.array([[0, 1], [1, 0]]),
                                               np.array([[0, 1], [2, 0]])), "symmetric"),
        (lambda: paired.bt_log_strengths(np.array([[0, 1], [1, 0]]), prior=0.0), "prior"),
        (lambda: paired.bt_log_strengths(np.array([[0, 1], [1, 0]]), prior=True), "prior"),
        (lambda: paired.rao_kupper_log_strengths(np.array([[0, 1], [1, 0]]), np.zeros((2, 2)),
                                                 tie_strength=0.9), "kappa"),
        (lambda: paired.rao_kupper_log_strengths(np.array([[0, 1], [1, 0]]),
                                                 np.array([[0, 1], [1, 0]]), tie_strength=1.0),
         "ties"),
        (lambda: bayesrank.rank(simulate(3, 4, 2, 0), "bayesian_mcmc", n_samples=0),
         "n_samples"),
    ],
)
def test_bad_input_raises_data_error(call, message):
    with pytest.raises(DataError, match=message):
        call()
