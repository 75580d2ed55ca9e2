"""Stacked sequential ratings (bayesrank.study.stack_seq): identical ranks to each draw alone.

The oracle is :func:`bayesrank.study._core.safe_ranks`, i.e. :func:`bayesrank.rank` on
``ResponseData.subset`` of each draw, which never touches the stack.  Ranks must be equal
exactly, and a draw the rule cannot rank must fail with the same reason on both paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import special

from bayesrank import ResponseData
from bayesrank.baselines import paired
from bayesrank.baselines._mcmc_kernels import bt_log_posterior, log_posterior_row, whole_counts
from bayesrank.datasets import example
from bayesrank.study import stack_seq
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import DrawStack, batched_scores, rank_stack, stacked_scores

RATINGS = [
    "elo_tie_skip", "elo_tie_draw", "elo_tie_correct_draw_only",
    "glicko_tie_skip", "glicko_tie_draw", "glicko_tie_correct_draw_only",
    "trueskill",
]
VOTING = [
    "ranked_pairs_strength_margin_tie_ignore", "ranked_pairs_strength_margin_tie_half",
    "ranked_pairs_strength_winning_votes_tie_ignore",
    "ranked_pairs_strength_winning_votes_tie_half",
    "nanson_rank_ties_average", "nanson_rank_ties_max",
    "baldwin_rank_ties_average", "baldwin_rank_ties_max", "majority_judgment",
    "kemeny_young_tie_ignore", "kemeny_young_tie_half",
]
#: Need k = 2 trials per draw: on N=1 draws they fail, on both paths alike.
PASS = ["pass_at_k_2", "pass_hat_k_2", "mg_pass_at_k_2"]
#: Identifiers of the family that the stack reproduces (checked to take the stacked path);
#: bayes_ci is the closed form of bayesrank.study.batched (base rule "bayes").
BATCHED = [*RATINGS, "bayesian_mcmc", *VOTING, "bayes_ci"]


def _assert_same_as_alone(data: ResponseData, draws, models=None, ids=BATCHED,
                          stacked=True) -> None:
    stack = DrawStack.from_data(data, draws)
    if models is not None:
        stack = stack.pool(np.asarray(models))
    out = rank_stack(stack, ids)
    for m in ids:
        path = batched_scores(stack, m) is not None
        assert path == stacked, f"{m}: stacked path {path}, expected {stacked}"
        for d, idx in enumerate(draws):
            ref, reason, _ = safe_ranks(data.subset(models=models, trials=idx), m)
            if ref is None:
                assert out[m].ranks[d] is None and out[m].reasons[d] == reason, (m, d)
            else:
                np.testing.assert_array_equal(out[m].ranks[d], ref, err_msg=f"{m}, draw {d}")


def _assert_pool_rows_same_as_alone(data: ResponseData, draws, pools, ids=RATINGS) -> None:
    """Every row of the pool stack (draw d on pool p) ranks as the pool's draw alone."""
    pooled = DrawStack.from_data(data, draws).pools(np.asarray(pools))
    out = rank_stack(pooled, ids)
    for m in ids:
        assert batched_scores(pooled, m) is not None, f"{m}: not stacked on a pool stack"
        for p, pool in enumerate(pools):
            for d, idx in enumerate(draws):
                ref, reason, _ = safe_ranks(data.subset(models=pool, trials=idx), m)
                got = out[m].ranks[p * len(draws) + d]
                assert reason is None and out[m].reasons[p * len(draws) + d] is None
                np.testing.assert_array_equal(got, ref, err_msg=f"{m}, pool {p}, draw {d}")


@pytest.fixture(scope="module")
def aime() -> ResponseData:
    return example("aime24")


@pytest.mark.parametrize("size", [5, 10, 15])
def test_example_pools_single_trial_draws(aime, size):
    rng = np.random.default_rng(size)
    draws = [np.array([n]) for n in rng.choice(aime.N, 10, replace=False)]
    models = np.sort(rng.choice(aime.L, size, replace=False))
    _assert_same_as_alone(aime, draws, models)
    _assert_same_as_alone(aime, draws, models, ids=PASS, stacked=False)  # k = 2 > 1 trial


def test_example_full_pool_two_trial_draws(aime):
    # Two trials per draw: the second trial's events follow the first's (trial-major).
    rng = np.random.default_rng(7)
    draws = [rng.choice(aime.N, 2, replace=False) for _ in range(8)]
    _assert_same_as_alone(aime, draws, ids=[*BATCHED, *PASS])
    _assert_same_as_alone(aime, draws, models=[2, 5, 11], ids=[*BATCHED, *PASS])


@pytest.mark.parametrize("size", [5, 10, 15])
def test_ratings_on_example_pool_stacks(aime, size):
    # the streams come from the stack's outcomes: each row holds its own pool's models
    rng = np.random.default_rng(100 + size)
    draws = [np.array([n]) for n in rng.choice(aime.N, 6, replace=False)]
    draws2 = [rng.choice(aime.N, 2, replace=False) for _ in range(3)]
    pools = [np.sort(rng.choice(aime.L, size, replace=False)) for _ in range(3)]
    _assert_pool_rows_same_as_alone(aime, draws, pools, ids=[*RATINGS, "bayesian_mcmc"])
    _assert_pool_rows_same_as_alone(aime, draws2, pools, ids=[*RATINGS, "bayesian_mcmc"])


@settings(max_examples=25, deadline=None)
@given(arrays(np.int8, st.tuples(st.integers(2, 6), st.integers(1, 5), st.integers(1, 4)),
              elements=st.integers(0, 1)))
def test_random_binary_tensors(R):
    data = ResponseData(R)
    draws = [np.array([n]) for n in range(data.N)]
    _assert_same_as_alone(data, draws)
    if data.N >= 2:
        pairs = [np.array([n, (n + 1) % data.N]) for n in range(data.N)]
        _assert_same_as_alone(data, pairs, ids=[*BATCHED, *PASS])
    _assert_pool_rows_same_as_alone(data, draws, [[0, data.L - 1], [data.L - 1, 0],
                                                  list(range(data.L))[:2]])


def test_degenerate_draws():
    # Model 0 solves everything, model 3 nothing, models 1 and 2 are identical (exact ties),
    # and in trial 2 every model answers alike (no decisive match at all).
    R = np.array([
        [[1, 1, 1], [1, 1, 1], [1, 1, 1]],
        [[0, 1, 0], [1, 0, 0], [0, 1, 0]],
        [[0, 1, 0], [1, 0, 0], [0, 1, 0]],
        [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    ])
    R[:, :, 2] = 1
    data = ResponseData(R)
    draws = [np.array([n]) for n in range(3)]
    _assert_same_as_alone(data, draws)
    _assert_same_as_alone(data, draws, models=[1, 2])  # a pool of two exact twins
    _assert_same_as_alone(data, [np.array([0, 1]), np.array([1, 2])], ids=[*BATCHED, *PASS])
    stack = DrawStack.from_data(data, draws)
    for m in BATCHED:
        ranks = rank_stack(stack, [m])[m].ranks
        np.testing.assert_array_equal(ranks[2], np.ones(4))  # nothing decisive: all tied
        assert ranks[0][1] == ranks[0][2]  # identical streams tie exactly


def test_non_binary_and_invalid_options_take_the_per_draw_path():
    rng = np.random.default_rng(0)
    data = ResponseData(rng.integers(0, 3, size=(4, 5, 3)), n_categories=3)
    stack = DrawStack.from_data(data, [np.array([n]) for n in range(3)])
    for m in [*RATINGS, *PASS]:
        assert batched_scores(stack, m) is None
        out = rank_stack(stack, [m])[m]
        assert all(r is None for r in out.ranks)
        assert all("binary" in why for why in out.reasons)
    binary = DrawStack.from_data(ResponseData(rng.integers(0, 2, size=(4, 5, 3))),
                                 [np.array([0])])
    assert stacked_scores(binary, "elo", K=-1.0) is None
    assert stacked_scores(binary, "glicko", tie_handling="sometimes") is None
    assert stacked_scores(binary, "trueskill", beta=0.0) is None
    assert stacked_scores(binary, "bayesian_mcmc", seed=None) is None  # unseeded: streams differ
    # a Generator carries on from draw to draw in the per-draw path
    assert stacked_scores(binary, "bayesian_mcmc", seed=np.random.default_rng(1)) is None
    assert stacked_scores(binary, "bayesian_mcmc", n_samples=0) is None
    assert stacked_scores(binary, "ranked_pairs", strength="borda") is None
    assert stacked_scores(binary, "kemeny_young", time_limit=5.0) is None  # a per-call wall clock
    assert stacked_scores(binary, "nanson", rank_ties="dense") is None
    assert stacked_scores(binary, "pass_at_k", k=0) is None


def test_categorical_draws():
    # Questions vote by cell utility; Bradley-Terry wins compare categories by weight.
    rng = np.random.default_rng(4)
    R = rng.integers(0, 3, size=(6, 8, 5))
    data = ResponseData(R, weights=[0.0, 0.25, 1.0])
    ids = ["bayesian_mcmc", *VOTING]
    _assert_same_as_alone(data, [np.array([n]) for n in range(5)], ids=ids)
    _assert_same_as_alone(data, [np.array([0, 3]), np.array([1, 4])], ids=ids)


def test_batched_chains_equal_single_chains(aime):
    stack = DrawStack.from_data(aime, [np.array([n]) for n in range(4)]).pool(np.arange(6))
    draws, rates = paired.bt_posterior_draws_batch(stack.wins, n_samples=300, burnin=50)
    for b, W in enumerate(stack.wins):
        alone, rate = paired.bt_posterior_draws(W, n_samples=300, burnin=50)
        np.testing.assert_array_equal(draws[b], alone)
        assert rates[b] == rate


def test_compiled_log_posterior_matches_scipy():
    # Rows whose spread underflows e^(x - max x) (Student-t with 1 df, scale 300); small whole
    # counts (product form), large and fractional counts (one log1p per pair).
    rng = np.random.default_rng(5)
    L = 9
    first, second = np.triu_indices(L, 1)
    loss_nodes = rng.normal(size=L)
    whole = rng.integers(0, 6, first.size).astype(float)
    for n in (whole, whole * 40.0, whole + 0.25):
        for scale in (0.1, 3.0, 300.0):
            x = rng.standard_t(1, size=(500, L)) * scale
            ref = ((special.log_expit(x[:, first] - x[:, second]) * n).sum(axis=1)
                   - x @ loss_nodes - 0.5 * (x * x).sum(axis=1) / 2.0)
            got = bt_log_posterior(x, first, second, n, loss_nodes, 2.0)
            np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("block", [1, 5, 16])
def test_stacked_mcmc_scores_are_each_draws_scores_bit_for_bit(aime, block, monkeypatch):
    # not only the ranks: the posterior means of a pool stack, in blocks of any size, are
    # the bits bayesian_mcmc gives each pool's draw alone
    monkeypatch.setattr(stack_seq, "MCMC_BLOCK", block)
    rng = np.random.default_rng(11)
    draws = [np.array([n]) for n in rng.choice(aime.N, 4, replace=False)]
    pools = np.array([np.sort(rng.choice(aime.L, size, replace=False)) for size in (5, 5)])
    got = stacked_scores(DrawStack.from_data(aime, draws).pools(pools), "bayesian_mcmc",
                         n_samples=400, burnin=100)
    for p, pool in enumerate(pools):
        for d, idx in enumerate(draws):
            alone = paired.bayesian_mcmc(aime.subset(models=pool, trials=idx), n_samples=400,
                                         burnin=100)
            np.testing.assert_array_equal(got[p * len(draws) + d], alone.scores)


def test_log_posterior_rows_side_by_side_equal_one_row_at_a_time():
    # The kernel evaluates rows in SIMD blocks; each row must get the bits of the pair-by-pair
    # reference order: whole, large and fractional counts in one call, a row count that is no
    # multiple of the block, and rows whose spread underflows e^(x - max x) (redone alone).
    rng = np.random.default_rng(8)
    L = 11
    first, second = np.triu_indices(L, 1)
    n = rng.integers(0, 31, first.size).astype(float)
    n[::7] *= 40.0  # above the product form's limit
    n[3::7] += 0.5  # fractional
    loss_nodes = rng.normal(size=L)
    x = rng.standard_t(2, size=(1001, L)) * rng.choice([0.1, 1.0, 5.0, 400.0], size=(1001, 1))
    got = bt_log_posterior(x, first, second, n, loss_nodes, 1.5)
    whole = whole_counts(n)
    ref = [log_posterior_row(row, first, second, n, whole, loss_nodes, 1.5) for row in x]
    spread = x.max(axis=1) - x.min(axis=1)
    assert (spread > 700).any() and (spread < 700).any()  # both paths are exercised
    np.testing.assert_array_equal(got, ref)


def test_both_kemeny_identifiers_read_one_solve_per_stack(aime):
    """W + T/2 and W have the same margins, so the two tie policies are one exact solve."""
    rng = np.random.default_rng(3)
    draws = [np.array([n]) for n in rng.choice(aime.N, 6, replace=False)]
    stack = DrawStack.from_data(aime, draws).pools(np.array([[0, 3, 7, 9, 12], [1, 2, 4, 8, 19]]))
    half = batched_scores(stack, "kemeny_young_tie_half")
    ignore = batched_scores(stack, "kemeny_young_tie_ignore")
    solves = [key for key in stack.__dict__["_shared"] if key[0] == "kemeny_young"]
    assert len(solves) == 1  # the second identifier read the first one's solve
    np.testing.assert_array_equal(half, ignore)
    half[:] = np.nan  # each call gets its own copy
    assert np.isfinite(batched_scores(stack, "kemeny_young_tie_ignore")).all()
    _assert_pool_rows_same_as_alone(aime, draws, [[0, 3, 7, 9, 12], [1, 2, 4, 8, 19]],
                                    ids=["kemeny_young_tie_half", "kemeny_young_tie_ignore"])
