"""Pool stacks: every pool of one size ranked in one stack gives each pool's own results.

The oracles are the per-pool engine (one stack per pool, ``POOL_STACKS = False``, itself
checked against the reference runner in test_study_batched.py), :meth:`DrawStack.pool`
and :meth:`ResponseData.subset` of each pool, and :class:`TauSample` for the tau summaries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayesrank as br
from bayesrank import ResponseData, study
from bayesrank.study import batched, protocols
from bayesrank.study._core import UNDEFINED_TAU, TauSample
from bayesrank.study.batched import DrawStack, batched_scores, pair_signs

ALL = br.methods()["identifier"].tolist()
CLOSED = [m for m in ALL if batched.is_batched(m)]
#: Closed forms plus rules ranked draw by draw unless batched (pass@k fails at N=1).
METHODS = list(dict.fromkeys([*CLOSED, "elo_tie_draw", "pass_at_k_2", "bradley_terry_map"]))
#: For the fall-back mechanics (which rule runs where), without the six slow xPL/MCMC
#: rules: their iterative fits were 70% of those tests' time, and their pool-stack
#: rows are compared with the per-pool engine in the parametrised test below.
MECHANICS = [m for m in METHODS if m not in study.SLOW_METHODS]


def _simulate(L=6, M=10, N=6, seed=3, categories=2, tied_trial=True) -> ResponseData:
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.2, 1.2, L)[:, None, None]
    p = 1.0 / (1.0 + np.exp(-(ability - rng.normal(size=(1, M, 1)))))
    R = rng.binomial(categories - 1, np.broadcast_to(p, (L, M, N)))
    R0 = rng.binomial(categories - 1, np.broadcast_to(p, (L, M, 1)))  # per-model greedy
    if tied_trial:
        R[:, :, 0] = 0  # every model fails every question: tau_b undefined on that draw
    return ResponseData(R, models=[f"m{i}" for i in range(L)], R0=R0, n_categories=categories)


def _bootstrap(data, methods, pool_stacks, monkeypatch, **kwargs) -> pd.DataFrame:
    monkeypatch.setattr(protocols, "POOL_STACKS", pool_stacks)
    return study.model_pool_bootstrap(data, methods, **kwargs)


def _same_as_per_pool(data, methods, monkeypatch, **kwargs) -> pd.DataFrame:
    per_pool = _bootstrap(data, methods, False, monkeypatch, **kwargs)
    stacked = _bootstrap(data, methods, True, monkeypatch, **kwargs)
    pd.testing.assert_frame_equal(stacked, per_pool, check_exact=True)
    return stacked


def test_pool_stack_rows_are_each_pools_stack():
    data = _simulate(categories=3, seed=4)
    draws = [np.array([d]) for d in range(data.N)]
    stack = DrawStack.from_data(data, draws)
    pools = np.array([[0, 2, 3, 5], [1, 2, 4, 5], [0, 2, 3, 5]])  # a pool twice
    pooled = stack.pools(pools)
    assert pooled.D == len(pools) * data.N and pooled.data.L == 4
    for p, pool in enumerate(pools):
        alone = stack.pool(pool)
        rows = slice(p * data.N, (p + 1) * data.N)
        for name in ("counts", "wins", "ties", "question_wins", "question_ties", "draws"):
            np.testing.assert_array_equal(getattr(pooled, name)[rows], getattr(alone, name))
        np.testing.assert_array_equal(pooled.prior_counts[rows],
                                      np.broadcast_to(alone.prior_counts, (data.N, 4, *alone
                                                      .prior_counts.shape[1:])))
        np.testing.assert_array_equal(pooled.outcomes[rows], alone.outcomes)
        for d, idx in enumerate(draws):
            assert pooled.subset(p * data.N + d) == data.subset(models=pool, trials=idx)
            np.testing.assert_array_equal(alone.outcomes[d], data.R[pool][:, :, idx])
        for m in CLOSED:
            got, want = batched_scores(pooled, m), batched_scores(alone, m)
            assert (got is None) == (want is None), m
            if want is not None:
                np.testing.assert_array_equal(got[rows], want, err_msg=m)


def test_pool_stack_data_has_only_what_every_row_shares():
    data = _simulate()
    pooled = DrawStack.from_data(data, [np.array([1])]).pools(np.array([[0, 1, 2], [3, 4, 5]]))
    shared = pooled.data
    assert (shared.L, shared.M, shared.N, shared.questions) == (3, data.M, data.N,
                                                                 data.questions)
    assert shared.is_binary and shared.complete and shared.n_categories == 2
    for per_row in ("R", "R0", "models", "reductions"):
        with pytest.raises(batched.PoolStackError, match=f"data.{per_row} differs"):
            getattr(shared, per_row)


def test_pool_stack_refuses_bad_pools():
    stack = DrawStack.from_data(_simulate(), [np.array([1]), np.array([2])])
    with pytest.raises(ValueError, match="non-empty"):
        stack.pools(np.array([0, 1, 2]))
    pooled = stack.pools(np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="already a pool stack"):
        pooled.pools(np.array([[0, 1]]))
    with pytest.raises(ValueError, match="cannot be restricted"):
        pooled.pool(np.array([0, 1]))


def test_rule_reading_per_model_data_is_ranked_pool_by_pool(monkeypatch):
    # A closed form that reads data.R (fine on one pool's stack) cannot run on a pool
    # stack; the bootstrap ranks it on each pool's own stack, with the same frames.
    data = _simulate(seed=10)
    ref = _bootstrap(data, MECHANICS, False, monkeypatch, sizes=(3, 5), subsets=4)
    copeland = batched.BATCHED_RULES["copeland"]
    seen = []

    def reads_R(stack, **options):
        seen.append(stack.data.R.shape)  # raises PoolStackError on a pool stack
        return copeland(stack, **options)

    monkeypatch.setitem(batched.BATCHED_RULES, "copeland", reads_R)
    got = _bootstrap(data, MECHANICS, True, monkeypatch, sizes=(3, 5), subsets=4)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)
    assert seen  # it still ran batched, on each pool's own stack


def test_draws_a_closed_form_cannot_score_go_draw_by_draw(monkeypatch):
    # Some draws of some pools NaN (ranked again draw by draw, successfully), and a rule
    # NaN on every draw whose per-draw rule fails there (pass@k at N=1: every draw fails,
    # with its reason), once as (scores, reasons): both as the per-pool engine reports.
    data = _simulate(seed=12)
    ref = _bootstrap(data, MECHANICS, False, monkeypatch, sizes=(3, 4), subsets=6)
    borda = batched.BATCHED_RULES["borda"]

    def some_nan(stack, **options):
        scores = borda(stack, **options)
        scores[::3] = np.nan
        return scores

    def cannot_score(stack, **options):
        scores = np.full((stack.D, stack.data.L), np.nan)
        return scores, ["DataError: not this draw"] * stack.D

    monkeypatch.setitem(batched.BATCHED_RULES, "borda", some_nan)
    monkeypatch.setitem(batched.BATCHED_RULES, "pass_at_k", cannot_score)
    got = _bootstrap(data, MECHANICS, True, monkeypatch, sizes=(3, 4), subsets=6)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)
    pak = got[got.method == "pass_at_k_2"]
    assert (pak["n_failed_draws"] == 6 * data.N).all()
    assert pak["skip_reason"].str.contains("k=2").all()


@pytest.mark.parametrize("categories", [2, 3])
def test_pool_stacked_bootstrap_equals_the_per_pool_engine(categories, monkeypatch):
    # L=6: 15 pools of size 4 and 6 of size 5, so 9 draws per size repeat pools; draw 0
    # ties every model (tau_b undefined), pass_at_k_2 fails on every draw.
    data = _simulate(categories=categories, seed=5 + categories)
    frame = _same_as_per_pool(data, METHODS, monkeypatch, sizes=(2, 4, 5), subsets=9, seed=2)
    avg = frame[frame.method == "avg"]
    assert (avg["n_subsets"] == 9).all() and avg["skip_reason"].eq(UNDEFINED_TAU).all()
    if categories == 2:
        pak = frame[frame.method == "pass_at_k_2"]
        assert (pak["n_subsets"] == 0).all() and (pak["n_failed_draws"] == 9 * data.N).all()


def test_bootstrap_on_the_example_equals_the_per_pool_engine(monkeypatch):
    # the six slow xPL/MCMC rules are left out here for make test's budget (they were 90%
    # of this test's 270 s); their pool-stack rows are checked on the small data above
    data = br.datasets.example("aime24")
    fast = [m for m in CLOSED if m not in study.SLOW_METHODS]
    _same_as_per_pool(data, fast, monkeypatch, sizes=(5, 15), subsets=3, seed=1)


def test_non_finite_closed_form_scores_send_the_pool_draw_by_draw(monkeypatch):
    # A closed form that cannot score some pools (NaN rows, as a rule does where it
    # breaks down) leaves those pools, draws and references alike, to the per-draw path.
    data = _simulate(seed=9)
    ref = _bootstrap(data, MECHANICS, False, monkeypatch, sizes=(3, 4), subsets=6)
    borda = batched.BATCHED_RULES["borda"]

    def partly_nan(stack, **options):
        scores = borda(stack, **options)
        if stack.models is not None:
            scores[stack.models[:, 0] == 0] = np.nan  # every pool holding model 0
        return scores

    monkeypatch.setitem(batched.BATCHED_RULES, "borda", partly_nan)
    got = _bootstrap(data, MECHANICS, True, monkeypatch, sizes=(3, 4), subsets=6)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_memory_budget_splits_pool_stacks_without_changing_results(monkeypatch):
    data = _simulate(L=6, M=10, N=6)
    ref = _bootstrap(data, MECHANICS, False, monkeypatch, sizes=(4, 5), subsets=5)
    draws = [np.array([d]) for d in range(data.N)]
    stack = DrawStack.from_data(data, draws)
    # just enough for the draws' stack (L * M * L elements per draw): a pool stack row of
    # k models holds k * M * k, so 2 pools of 4 models or 1 pool of 5 per stack
    monkeypatch.setattr(batched, "STACK_ELEMENTS", data.L * data.M * data.L * data.N)
    assert batched.draws_per_stack(data, draws) == data.N
    assert (batched.pools_per_stack(stack, 4), batched.pools_per_stack(stack, 5)) == (2, 1)
    got = _bootstrap(data, MECHANICS, True, monkeypatch, sizes=(4, 5), subsets=5)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_stacked_pool_scores_are_tau_sample_summaries():
    rng = np.random.default_rng(0)
    P, D, k = 5, 7, 4
    ranks = rng.integers(1, 4, size=(P, D, k)).astype(float)
    ranks[1, 3] = 2.0  # one constant draw: undefined tau_b
    ranks[2] = 1.0  # every draw constant: no tau_b at all
    targets = rng.integers(1, 5, size=(P, k)).astype(float)
    missing = [None, None, None, "DataError: no pool reference", None]
    got = protocols._stacked_pool_scores(pair_signs(ranks), pair_signs(targets), missing)
    for p in range(P):
        sample = TauSample()
        if missing[p] is not None:
            sample.target_missing = missing[p]
        else:
            sample.add_many(list(ranks[p]), targets[p], [None] * D)
        want = sample.summary()
        mean, n_failed, reason = got[p]
        assert (np.isnan(mean) and np.isnan(want["tau_mean"])) or mean == want["tau_mean"]
        assert (n_failed, reason) == (want["n_failed"], want["skip_reason"])
    assert got[1][2] == got[2][2] == UNDEFINED_TAU and np.isnan(got[2][0])
