"""Metric-based rules: scorio parity, brute-force oracles, published Bayes@N numbers, bad input."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from _sims import simulate
from scipy import integrate, stats
from scorio import rank as sr

import bayesrank
from bayesrank import DataError, ResponseData
from bayesrank.baselines import metrics

SHAPES = {"single_trial": (6, 25, 1), "small": (6, 12, 4), "paper_size": (20, 120, 80)}


@pytest.fixture(scope="module", params=list(SHAPES))
def tensor(request):
    L, M, N = SHAPES[request.param]
    R = simulate(L, M, N, seed=sum(SHAPES[request.param]))
    R0 = (np.random.default_rng(7).random((L, M, 1)) < 0.5).astype(np.int8)
    return ResponseData(R, R0=R0), R, R0


def _scorio_call(identifier, R, R0):
    calls = {
        "avg": lambda: sr.avg(R, return_scores=True),
        "inverse_difficulty": lambda: sr.inverse_difficulty(
            R, return_scores=True, clip_range=(0.01, 0.99)),
        "pass_at_k_2": lambda: sr.pass_at_k(R, 2, return_scores=True),
        "pass_hat_k_2": lambda: sr.pass_hat_k(R, 2, return_scores=True),
        "mg_pass_at_k_2": lambda: sr.mg_pass_at_k(R, 2, return_scores=True),
        "bayes": lambda: sr.bayes(R, R0=None, quantile=None, return_scores=True),
        "bayes_greedy": lambda: sr.bayes(R, R0=R0, quantile=None, return_scores=True),
        "bayes_ci": lambda: sr.bayes(R, R0=None, quantile=0.05, return_scores=True),
    }
    return calls[identifier]()


METRIC_IDS = ["avg", "inverse_difficulty", "pass_at_k_2", "pass_hat_k_2", "mg_pass_at_k_2",
              "bayes", "bayes_greedy", "bayes_ci"]


@pytest.mark.parametrize("identifier", METRIC_IDS)
def test_matches_scorio(identifier, tensor):
    data, R, R0 = tensor
    if data.N < 2 and identifier.endswith("_k_2"):
        # k = 2 draws need two trials: both implementations refuse
        with pytest.raises(DataError, match="k=2"):
            bayesrank.rank(data, identifier)
        with pytest.raises(ValueError):
            _scorio_call(identifier, R, R0)
        return
    ours = bayesrank.rank(data, identifier)
    ranks, scores = _scorio_call(identifier, R, R0)
    np.testing.assert_array_equal(ours.ranks, ranks)
    # same scale everywhere
    np.testing.assert_allclose(ours.scores, scores, rtol=0, atol=1e-12)


def _brute_force_draws(successes: int, n: int, k: int) -> np.ndarray:
    """Distribution of successes among all C(n, k) subsets of k trials (enumerated)."""
    trials = np.r_[np.ones(successes), np.zeros(n - successes)]
    hits = [int(trials[list(c)].sum()) for c in itertools.combinations(range(n), k)]
    return np.bincount(hits, minlength=k + 1) / len(hits)


def test_pass_family_equals_subset_enumeration():
    rng = np.random.default_rng(3)
    n, k = 9, 4
    R = (rng.random((3, 5, n)) < rng.random((3, 5, 1))).astype(np.int8)
    data = ResponseData(R)
    counts = R.sum(axis=2)
    dist = np.array([[_brute_force_draws(c, n, k) for c in row] for row in counts])
    ge = lambda j: dist[..., j:].sum(-1)  # noqa: E731  P(X >= j)
    np.testing.assert_allclose(metrics.pass_at_k(data, k=k).scores, ge(1).mean(1), atol=1e-14)
    np.testing.assert_allclose(metrics.pass_hat_k(data, k=k).scores, dist[..., k].mean(1),
                               atol=1e-14)
    for tau, j0 in [(0.0, 1), (0.25, 1), (0.5, 2), (0.6, 3), (1.0, 4)]:
        got = metrics.g_pass_at_k_tau(data, k=k, tau=tau).scores
        np.testing.assert_allclose(got, ge(j0).mean(1), atol=1e-14)
    # mG-Pass@k as defined by Liu et al.: (2/k) sum_{i = ceil(k/2)+1}^{k} G-Pass@k_{i/k}
    mg = 2 / k * sum(ge(i) for i in range(math.ceil(k / 2) + 1, k + 1))
    np.testing.assert_allclose(metrics.mg_pass_at_k(data, k=k).scores, mg.mean(1), atol=1e-14)


def test_g_pass_threshold_is_robust_to_float_products():
    # 0.7 * 10 = 7.000000000000001 in floating point; the threshold must be 7, not 8
    rng = np.random.default_rng(4)
    R = (rng.random((2, 3, 12)) < 0.6).astype(np.int8)
    data = ResponseData(R)
    dist = np.array([[_brute_force_draws(c, 12, 10) for c in row] for row in R.sum(2)])
    got = metrics.g_pass_at_k_tau(data, k=10, tau=0.7).scores
    np.testing.assert_allclose(got, dist[..., 7:].sum(-1).mean(1), atol=1e-14)


def test_metric_identities():
    data = ResponseData(simulate(5, 20, 6, seed=8))
    k2 = {i: bayesrank.rank(data, i).scores for i in ("pass_hat_k_2", "mg_pass_at_k_2")}
    np.testing.assert_allclose(k2["pass_hat_k_2"], k2["mg_pass_at_k_2"], atol=1e-15)
    np.testing.assert_allclose(metrics.pass_at_k(data, k=1).scores, metrics.avg(data).scores,
                               atol=1e-15)
    np.testing.assert_allclose(metrics.g_pass_at_k_tau(data, k=3, tau=0).scores,
                               metrics.pass_at_k(data, k=3).scores, atol=1e-15)
    np.testing.assert_allclose(metrics.g_pass_at_k_tau(data, k=3, tau=1).scores,
                               metrics.pass_hat_k(data, k=3).scores, atol=1e-15)


def test_missing_trials_use_each_cells_own_count():
    rng = np.random.default_rng(9)
    R = (rng.random((3, 4, 6)) < 0.5).astype(np.int8)
    mask = np.ones_like(R, dtype=bool)
    mask[0, 1, 3:] = False  # 3 trials left in that cell
    mask[2, :, 5] = False
    data = ResponseData(R, mask=mask.copy())
    got = metrics.pass_at_k(data, k=2).scores
    n = mask.sum(2)
    nu = np.where(mask, R, 0).sum(2)
    expect = np.array([[1 - math.comb(n[l, m] - nu[l, m], 2) / math.comb(n[l, m], 2)
                        for m in range(4)] for l in range(3)]).mean(1)
    np.testing.assert_allclose(got, expect, atol=1e-14)
    mask[1, 2, 1:] = False  # one trial only: k = 2 impossible there
    with pytest.raises(DataError, match="only 1 trial"):
        metrics.pass_at_k(ResponseData(R, mask=mask), k=2)


def test_inverse_difficulty_weights_by_hand():
    # question 0 solved by nobody (clipped to 0.01), question 1 by half, question 2 by all
    R = np.array([[[0, 0], [1, 1], [1, 1]],
                  [[0, 0], [0, 0], [1, 1]]], dtype=np.int8)
    result = bayesrank.rank(R, "inverse_difficulty")
    w = np.array([1 / 0.01, 1 / 0.5, 1 / 0.99])
    w /= w.sum()
    np.testing.assert_allclose(result.details["question_weights"], w)
    np.testing.assert_allclose(result.scores, [w[1] + w[2], w[2]])


def test_bayes_at_n_worked_example(shared_dir):
    """Published Bayes@N numbers (README example of the Bayes@N authors).

    The source is the authors' own package (see its SOURCE.md caution); it is the only
    published worked example with categorical weights and prior outcomes.
    """
    ex = json.loads((shared_dir / "data/bayes_at_n_worked_example/"
                     "bayes_at_n_readme_example.json").read_text())
    R = np.asarray(ex["R_outcomes_M_by_N"])[None]
    w = np.asarray(ex["category_weights_w"])
    R0 = np.asarray(ex["R0_prior_outcomes_M_by_D"])
    plain = bayesrank.rank(ResponseData(R, weights=w), "bayes")
    greedy = bayesrank.rank(ResponseData(R, weights=w, R0=R0), "bayes_greedy")
    for result, key in ((greedy, "with_prior"), (plain, "without_prior")):
        assert result.details["mu"][0] == pytest.approx(ex["expected"][key]["mu"], abs=5e-7)
        assert result.details["sigma"][0] == pytest.approx(ex["expected"][key]["sigma"],
                                                           abs=5e-7)
    lower = bayesrank.rank(ResponseData(R, weights=w), "bayes_ci")
    z = stats.norm.ppf(0.05)
    assert lower.scores[0] == pytest.approx(0.5625 + z * ex["expected"]["without_prior"]["sigma"],
                                            abs=1e-6)


def test_tau_bench_pass_hat_k_reproduces_the_published_leaderboard_row(shared_dir):
    """tau-bench airline, gpt-4o (50 tasks x 4 trials): README pass^1..4 = 0.420, 0.273,
    0.220, 0.200 (its SOURCE.md), from the long table loaded as one model's runs.

    The task-by-trial matrix of the same rewards is the independent check: there pass^k
    is counted by hand, mean over tasks of C(c, k) / C(4, k) with c successes of 4.
    """
    folder = shared_dir / "data" / "tau_bench_gpt4o_airline"
    data = bayesrank.load(folder / "rewards_long.csv", models=["gpt-4o"],
                          columns={"question": "task_id", "outcome": "reward"})
    assert (data.L, data.M, data.N) == (1, 50, 4)
    matrix = np.loadtxt(folder / "rewards_matrix_task_by_trial.csv", delimiter=",",
                        skiprows=1)[:, 1:]
    c = matrix.sum(axis=1)
    published = {1: 0.420, 2: 0.273, 3: 0.220, 4: 0.200}
    for k, value in published.items():
        score = metrics.pass_hat_k(data, k=k).scores[0]
        assert score == pytest.approx(value, abs=5e-4)  # published to three decimals
        assert score == pytest.approx(np.mean([math.comb(int(x), k) for x in c])
                                      / math.comb(4, k), abs=1e-12)
    assert metrics.pass_hat_k(data, k=2).scores[0] == pytest.approx(41 / 150, abs=1e-12)
    assert data.R.sum() == 84  # "84 of 200 trials succeed"


def test_alpaca_eval_discrete_win_rates_reproduce_the_published_leaderboard(shared_dir):
    """AlpacaEval 2.0 (52 models x 805 instructions, judge preference against GPT-4
    Turbo): as a 3-category tensor (baseline preferred, tie, model preferred) with
    weights (0, 1/2, 1), avg@1 is the published discrete win rate of all 51 published
    models, and the category counts are their n_wins_base / n_draws / n_wins (SOURCE.md).
    Bayes@N orders the models exactly as the discrete win rate does."""
    import pandas as pd

    folder = shared_dir / "data" / "alpaca_eval2_gpt4turbo_judge"
    table = pd.read_csv(folder / "preferences_model_by_instruction.csv")
    published = pd.read_csv(folder / "published_leaderboard_rows.csv").set_index("model")
    preference = table.drop(columns="model").to_numpy()
    category = np.where(preference > 1.5, 2, np.where(preference < 1.5, 0, 1))
    data = ResponseData(category[:, :, None], models=table["model"].tolist(), n_categories=3,
                        weights=[0.0, 0.5, 1.0])
    assert (data.L, data.M, data.N) == (52, 805, 1)
    rows = [data.models.index(m) for m in published.index]
    assert len(rows) == 51
    discrete = bayesrank.rank(data, "avg").scores[rows] * 100
    np.testing.assert_allclose(discrete, published["discrete_win_rate"], atol=1e-9)
    counts = data.reductions.category_counts[rows].sum(axis=1)  # (51, 3)
    np.testing.assert_array_equal(
        counts, published[["n_wins_base", "n_draws", "n_wins"]].to_numpy())
    bayes = bayesrank.rank(data, "bayes").scores[rows]
    assert stats.kendalltau(bayes, published["discrete_win_rate"]).statistic == 1.0


def test_thompson_is_seeded_and_matches_exact_expected_ranks():
    R = simulate(4, 6, 5, seed=12)
    data = ResponseData(R)
    first = bayesrank.rank(data, "thompson")
    np.testing.assert_array_equal(first.scores, bayesrank.rank(data, "thompson").scores)
    assert not np.array_equal(first.scores, bayesrank.rank(data, "thompson", seed=1).scores)
    # exact E[rank_l] = 1 + sum_j P(p_j > p_l), by quadrature over independent Betas
    a, b = first.details["posterior"].T
    dists = [stats.beta(x, y) for x, y in zip(a, b, strict=True)]

    def p_greater(j, l):
        return integrate.quad(lambda p: dists[l].pdf(p) * dists[j].sf(p), 0, 1)[0]

    exact = np.array([1 + sum(p_greater(j, l) for j in range(4) if j != l) for l in range(4)])
    # Monte Carlo error of a mean rank over 10,000 draws is below 0.015 here
    np.testing.assert_allclose(-first.scores, exact, atol=0.03)


def test_thompson_ties_identical_posteriors_exactly():
    R = simulate(3, 5, 4, seed=2)
    R = np.concatenate([R, R[:1]])  # model 3 duplicates model 0
    result = bayesrank.rank(R, "thompson")
    assert result.scores[0] == result.scores[3]
    assert result.ranks[0] == result.ranks[3]


CATEGORICAL = ResponseData(np.array([[[0, 2, 1]], [[1, 1, 2]]]), n_categories=3)


@pytest.mark.parametrize("identifier", ["pass_at_k_2", "pass_hat_k_2", "mg_pass_at_k_2",
                                        "thompson", "inverse_difficulty"])
def test_binary_only_rules_refuse_categorical_data(identifier):
    with pytest.raises(DataError, match="binary"):
        bayesrank.rank(CATEGORICAL, identifier)


def test_bayes_accepts_categorical_weights():
    result = bayesrank.rank(CATEGORICAL, "bayes")
    mu, _ = bayesrank.bayes_at_n(CATEGORICAL)
    np.testing.assert_allclose(result.scores, mu)


@pytest.mark.parametrize(
    ("identifier", "options", "message"),
    [
        ("pass_at_k_2", {"k": 9}, "k=9"),
        ("pass_at_k_2", {"k": 0}, "positive integer"),
        ("pass_hat_k_2", {"k": True}, "positive integer"),
        ("pass_at_k_2", {"k": 2.5}, "positive integer"),
        ("g_pass_at_k_tau", {"k": 2, "tau": 1.5}, "tau"),
        ("bayes_ci", {"quantile": 1.0}, "quantile"),
        ("bayes_ci", {"quantile": 0.0}, "quantile"),
        ("bayes", {"R0": "greedy"}, "R0"),
        ("bayes_greedy", {}, "no"),
        ("inverse_difficulty", {"clip_range": (0.5, 0.2)}, "clip_range"),
        ("inverse_difficulty", {"clip_range": 0.1}, "clip_range"),
        ("thompson", {"n_samples": 0}, "n_samples"),
        ("thompson", {"prior_alpha": -1.0}, "prior_alpha"),
    ],
)
def test_bad_arguments_raise_clear_errors(identifier, options, message):
    data = ResponseData(simulate(3, 4, 3, seed=1))  # no R0: bayes_greedy must refuse
    with pytest.raises(DataError, match=message):
        bayesrank.rank(data, identifier, **options)
