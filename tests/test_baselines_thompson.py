"""Thompson ranking: per-posterior streams against scorio, the exact limit and hand-worked ranks.

The random stream is ours (each model's draws seeded by the seed and its posterior), so
scorio's thompson and the exact expected ranks (quadrature of Beta CDFs) are matched within
Monte Carlo error, with tolerances taken from the spread of independently simulated ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
from _sims import simulate
from scipy import integrate, stats
from scorio import rank as sr

import bayesrank
from bayesrank import DataError, ResponseData
from bayesrank.baselines import metrics

SHAPES = {"single_trial": (6, 25, 1), "small": (6, 12, 4), "paper_size": (20, 120, 80)}


def _posterior(R: np.ndarray, alpha: float = 1.0, beta: float = 1.0):
    S = R.sum(axis=(1, 2)).astype(float)
    return alpha + S, beta + R.shape[1] * R.shape[2] - S


def _rank_sd(a: np.ndarray, b: np.ndarray, T: int, seed: int = 5) -> np.ndarray:
    """Standard deviation of each model's rank over joint posterior draws (numpy's own
    Beta stream, independent of both estimators), divided by sqrt(T): one estimate's error."""
    x = np.random.default_rng(seed).beta(a, b, size=(T, len(a)))
    ranks = stats.rankdata(-x, axis=1, method="average")
    return ranks.std(axis=0) / np.sqrt(T)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_agrees_with_scorio_within_monte_carlo_error(shape):
    L, M, N = SHAPES[shape]
    R = simulate(L, M, N, seed=sum(SHAPES[shape]))
    ours = bayesrank.rank(ResponseData(R), "thompson")
    _, theirs = sr.thompson(R, n_samples=10000, prior_alpha=1.0, prior_beta=1.0, seed=42,
                            return_scores=True)
    a, b = _posterior(R)
    np.testing.assert_array_equal(ours.details["posterior"], np.stack([a, b], axis=1))
    # two independent estimates of one mean: difference sd sqrt(2) sd; 5 sd, plus a few
    # draws' worth where the simulated spread happened to be 0
    tol = 5 * np.sqrt(2) * _rank_sd(a, b, 10000) + 5 / 10000
    assert np.all(np.abs(ours.scores - theirs) <= tol), (ours.scores - theirs, tol)


def _exact_greater(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``P(p_j > p_l)`` for independent Beta posteriors, by quadrature (j rows, l columns)."""
    dists = [stats.beta(x, y) for x, y in zip(a, b, strict=True)]
    L = len(a)
    out = np.zeros((L, L))
    for j in range(L):
        for l in range(L):
            if j != l:
                out[j, l] = integrate.quad(lambda p, j=j, l=l: dists[l].pdf(p) * dists[j].sf(p),
                                           0, 1, epsabs=1e-12)[0]
    return out


def test_pairwise_estimates_and_mean_ranks_match_the_exact_limit():
    # two near-equal posteriors, a duplicate, and well separated ones
    a = np.array([12.0, 12.0, 13.0, 30.0, 5.0, 20.0])
    b = np.array([20.0, 20.0, 19.0, 3.0, 28.0, 10.0])
    T = 40000
    counts = metrics.thompson_pair_counts(metrics.thompson_draws(a, b, T, entropy=7))
    exact = _exact_greater(a, b)
    p_hat = counts / (2 * T)
    off = ~np.eye(len(a), dtype=bool)
    # each pair: a binomial proportion (ties only between the identical posteriors 0 and 1)
    tol = 5 * np.sqrt(exact * (1 - exact) / T) + 1 / T
    assert np.all(np.abs(p_hat - exact)[off] <= tol[off])
    assert counts[0, 1] == counts[1, 0] == T  # identical draws: every draw a tie
    mean_rank = -metrics.thompson_scores(counts, T)
    tol_rank = 5 * _rank_sd(a, b, T)
    np.testing.assert_array_less(np.abs(mean_rank - (1 + exact.sum(axis=0))), tol_rank)


def test_scores_are_mean_ranks_with_ties_averaged():
    # draws on a coarse grid: many sample ties, each counted 1/2 (average ranks per draw)
    x = np.random.default_rng(2).integers(0, 4, size=(5, 300)) / 4
    counts = metrics.thompson_pair_counts(x)
    per_draw = stats.rankdata(-x, axis=0, method="average")
    np.testing.assert_allclose(-metrics.thompson_scores(counts, 300), per_draw.mean(axis=1),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(counts + counts.T, 600 * (1 - np.eye(5, dtype=int)))


def test_pair_counts_by_hand():
    x = np.array([[0.5, 0.2, 0.9], [0.5, 0.3, 0.1], [0.1, 0.1, 0.9]])
    # C_jl = 2 (j above l) + (tied), draw by draw
    expect = np.array([[0, 3, 5], [3, 0, 4], [1, 2, 0]])
    np.testing.assert_array_equal(metrics.thompson_pair_counts(x), expect)
    np.testing.assert_allclose(-metrics.thompson_scores(expect, 3), [5 / 3, 5.5 / 3, 2.5])


def test_a_models_draws_depend_only_on_its_posterior():
    a, b = np.array([3.0, 8.0, 3.0]), np.array([9.0, 2.0, 9.0])
    both = metrics.thompson_draws(a, b, 500, entropy=11)
    np.testing.assert_array_equal(both[0], both[2])
    for l in range(3):
        np.testing.assert_array_equal(both[l], metrics.thompson_draws(a[l:l + 1], b[l:l + 1],
                                                                      500, entropy=11)[0])
    assert not np.array_equal(both[0], metrics.thompson_draws(a[:1], b[:1], 500, entropy=12)[0])
    cache: dict = {}
    metrics.thompson_draws(a, b, 500, 11, cache)
    assert len(cache) == 2
    np.testing.assert_array_equal(metrics.thompson_draws(a[::-1], b[::-1], 500, 11, cache),
                                  both[::-1])


def test_a_pools_scores_are_sums_of_the_full_pairwise_counts():
    R = simulate(7, 15, 3, seed=21)
    data = ResponseData(R)
    full = bayesrank.rank(data, "thompson")
    a, b = full.details["posterior"].T
    counts = metrics.thompson_pair_counts(metrics.thompson_draws(a, b, 10000, entropy=42))
    np.testing.assert_array_equal(full.scores, metrics.thompson_scores(counts, 10000))
    for pool in ([0, 3, 4], [6, 1, 2, 5], [2, 4]):
        alone = bayesrank.rank(data.subset(models=pool), "thompson").scores
        np.testing.assert_array_equal(alone, metrics.thompson_scores(
            counts[np.ix_(pool, pool)], 10000))
    perm = np.random.default_rng(3).permutation(7)
    np.testing.assert_array_equal(bayesrank.rank(R[perm], "thompson").scores, full.scores[perm])


def test_seed_none_draws_a_fresh_seed_and_still_ties_duplicates():
    R = simulate(3, 8, 2, seed=4)
    R = np.concatenate([R, R[1:2]])
    first = bayesrank.rank(R, "thompson", seed=None).scores
    assert first[1] == first[3]
    assert not np.array_equal(first, bayesrank.rank(R, "thompson", seed=None).scores)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "42", np.random.default_rng(0)])
def test_bad_seeds_raise(seed):
    with pytest.raises(DataError, match="seed must be a non-negative integer or None"):
        bayesrank.rank(simulate(3, 4, 2, seed=1), "thompson", seed=seed)
