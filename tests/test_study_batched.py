"""Batched study engine: identical ranks and frames to ranking each draw alone.

The oracle is :func:`bayesrank.rank` on ``ResponseData.subset`` of each draw (and
scipy's Kendall tau-b), run independently of the stack machinery.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayesrank as br
from bayesrank import ResponseData, study
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import DrawStack, batched_kendall_tau, batched_scores, rank_stack

ALL = br.methods()["identifier"].tolist()


def _simulate(L=7, M=12, N=6, seed=3, categories=2) -> ResponseData:
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.2, 1.2, L)[:, None, None]
    p = 1.0 / (1.0 + np.exp(-(ability - rng.normal(size=(1, M, 1)))))
    if categories == 2:
        R = (rng.random((L, M, N)) < p).astype(int)
        R0 = (rng.random((L, M, 1)) < p).astype(int)  # greedy decodes
    else:
        R = rng.binomial(categories - 1, np.broadcast_to(p, (L, M, N)))
        R0 = rng.binomial(categories - 1, np.broadcast_to(p, (L, M, 1)))
    return ResponseData(R, models=[f"m{i}" for i in range(L)], R0=R0, n_categories=categories)


def _same(ref: np.ndarray | None, got: np.ndarray | None) -> bool:
    if ref is None or got is None:
        return ref is None and got is None
    return np.array_equal(ref, got)


def _check_identity(data: ResponseData, draws, models=None) -> None:
    stack = DrawStack.from_data(data, draws)
    if models is not None:
        stack = stack.pool(models)
    out = rank_stack(stack, ALL)
    mismatched = []
    for m in ALL:
        for d, idx in enumerate(draws):
            ref, reason, _ = safe_ranks(data.subset(models=models, trials=idx), m)
            if not _same(ref, out[m].ranks[d]) or (ref is None and out[m].reasons[d] != reason):
                mismatched.append((m, d))
    assert mismatched == []


@pytest.mark.parametrize("n_trials", [1, 2])
def test_every_identifier_ranks_each_draw_as_alone(n_trials):
    data = _simulate()
    draws = [np.arange(d * n_trials, (d + 1) * n_trials) for d in range(data.N // n_trials)]
    _check_identity(data, draws)


def test_every_identifier_on_a_model_pool_of_the_stack():
    data = _simulate(seed=5)
    _check_identity(data, [np.array([d]) for d in range(data.N)], models=np.array([0, 2, 3, 6]))


def test_every_identifier_on_categorical_draws():
    data = _simulate(categories=4, seed=8)
    _check_identity(data, [np.array([0, 3]), np.array([1, 2]), np.array([4, 5])])


def test_closed_forms_cover_the_count_rules():
    stack = DrawStack.from_data(_simulate(), [np.array([0]), np.array([1])])
    covered = {m for m in ALL if batched_scores(stack, m) is not None}
    assert {"avg", "bayes", "bayes_greedy", "bayes_ci", "inverse_difficulty", "borda",
            "copeland", "win_rate", "minimax_variant_margin_tie_half"} <= covered


def test_stack_reductions_equal_each_draw_reductions():
    data = _simulate(categories=3, seed=2)
    draws = [np.array([0, 5]), np.array([2, 1])]
    stack = DrawStack.from_data(data, draws)
    for d, idx in enumerate(draws):
        red = data.subset(trials=idx).reductions
        np.testing.assert_array_equal(stack.counts[d], red.category_counts)
        np.testing.assert_array_equal(stack.wins[d], red.wins)
        np.testing.assert_array_equal(stack.ties[d], red.ties)
        np.testing.assert_array_equal(stack.question_wins[d], red.question_wins)
        np.testing.assert_array_equal(stack.question_ties[d], red.question_ties)


def test_batched_kendall_tau_matches_scipy_with_ties_and_constants():
    rng = np.random.default_rng(0)
    ranks = rng.integers(1, 5, size=(200, 9)).astype(float)
    ranks[0] = 3.0  # constant: undefined
    target = rng.integers(1, 6, size=9).astype(float)
    got = batched_kendall_tau(ranks, target)
    assert np.isnan(got[0])
    want = [stats.kendalltau(r, target, variant="b").statistic for r in ranks[1:]]
    np.testing.assert_allclose(got[1:], want, rtol=0, atol=1e-12)
    assert np.isnan(batched_kendall_tau(ranks[1:3], np.ones(9))).all()


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    drop = [c for c in ("seconds",) if c in a]
    pd.testing.assert_frame_equal(a.drop(columns=drop), b.drop(columns=drop), rtol=0, atol=1e-12)


METHODS = ["avg", "bayes", "bayes_greedy", "bayes_ci", "borda", "copeland", "elo_tie_draw",
           "bradley_terry", "bradley_terry_map", "pass_at_k_2", "schulze_tie_half",
           "minimax_variant_margin_tie_ignore", "inverse_difficulty", "rasch"]


def test_protocols_give_the_reference_frames():
    data = _simulate(L=6, M=10, N=8)
    for func, kwargs in (
        (study.stability, {}),
        (study.stability, {"n_trials": 2}),
        (study.convergence, {"budgets": (1, 2, 8), "reps": 3}),
        (study.model_pool_bootstrap, {"sizes": (3, 5), "subsets": 4}),
    ):
        ref = func(data, METHODS, engine="reference", **kwargs)
        _frames_equal(func(data, METHODS, **kwargs), ref)


def test_prior_effect_gives_the_reference_frame():
    data = _simulate(L=6, M=10, N=8)
    ref = study.prior_effect(data, budgets=(1, 2, 8), reps=5, engine="reference")
    _frames_equal(study.prior_effect(data, budgets=(1, 2, 8), reps=5), ref)


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="unknown study engine"):
        study.stability(_simulate(), ["avg"], engine="fast")


def test_competition_ranks_equal_scores_to_ranks_with_near_ties():
    from bayesrank.ranking import scores_to_ranks
    from bayesrank.study.batched import competition_ranks

    rng = np.random.default_rng(4)
    for _ in range(300):
        s = rng.integers(0, 4, size=rng.integers(1, 9)).astype(float) * rng.choice([1e-3, 1e6])
        s = s + rng.choice([0.0, 1e-13, 1e-9], size=s.size)  # below / above the tolerance
        np.testing.assert_array_equal(competition_ranks(s), scores_to_ranks(s))
    with pytest.raises(ValueError, match="finite"):
        competition_ranks(np.array([1.0, np.nan]))


def test_competition_ranks_of_a_stack_are_the_rows_ranks():
    from bayesrank.ranking import scores_to_ranks
    from bayesrank.study.batched import competition_ranks

    rng = np.random.default_rng(5)
    stack = rng.integers(0, 3, size=(50, 6)).astype(float) * rng.choice([1.0, 1e9], size=(50, 1))
    stack[::3] += 1e-13
    got = competition_ranks(stack)
    for row, ranks in zip(stack, got, strict=True):
        np.testing.assert_array_equal(ranks, scores_to_ranks(row))


def test_draw_subset_equals_response_data_subset():
    data = _simulate()
    stack = DrawStack.from_data(data, [np.array([4]), np.array([1])])
    assert stack.subset(0) == data.subset(trials=[4])
    assert stack.subset(1) == data.subset(trials=[1])


def test_bootstrap_counts_a_repeated_pool_twice():
    # L=4, size 3: only 4 distinct pools, so 12 draws repeat pools; both engines agree
    # and every pool counts (n_subsets), as a loop over the drawn pools would.
    data = _simulate(L=4, M=8, N=4)
    ref = study.model_pool_bootstrap(data, ["avg", "elo_tie_draw"], sizes=(3,), subsets=12,
                                     engine="reference")
    got = study.model_pool_bootstrap(data, ["avg", "elo_tie_draw"], sizes=(3,), subsets=12)
    _frames_equal(got, ref)
    assert (got["n_subsets"] == 12).all()


@pytest.mark.parametrize("budget", [2 * 7 * 12 * 7, 10])  # 2 draws per stack; none fits
def test_memory_budget_splits_stacks_without_changing_results(monkeypatch, budget):
    from bayesrank.study import batched

    data = _simulate()
    ref = study.stability(data, METHODS, engine="reference")
    monkeypatch.setattr(batched, "STACK_ELEMENTS", budget)
    assert batched.draws_per_stack(data, [np.array([d]) for d in range(6)]) == (
        2 if budget > 10 else 0)
    _frames_equal(study.stability(data, METHODS), ref)
    _frames_equal(study.model_pool_bootstrap(data, METHODS, sizes=(4,), subsets=2),
                  study.model_pool_bootstrap(data, METHODS, sizes=(4,), subsets=2,
                                             engine="reference"))


def test_the_stacked_table_and_the_records_agree():
    # every base rule has a stacked form, or its record says why it is ranked draw by draw
    from bayesrank.baselines import METHODS, PER_DRAW
    from bayesrank.study.stack_rules import BATCHED_RULES

    bases = {spec.base for spec in METHODS.values()}
    assert set(BATCHED_RULES) | set(PER_DRAW) == bases
    assert not set(BATCHED_RULES) & set(PER_DRAW)
    assert all(spec.per_draw is None for spec in METHODS.values() if spec.in_paper)
    assert METHODS["g_pass_at_k_tau"].per_draw == PER_DRAW["g_pass_at_k_tau"]


def test_stacked_forms_receive_every_option_of_the_record():
    # the rule's own defaults under the identifier's: nothing restated by the stacked form
    spec = br.registry.get_method("pagerank")
    assert dict(spec.options) == {"damping": 0.85, "max_iter": 100, "tol": 1e-12,
                                  "solver": "exact"}
    data = _simulate()
    stack = DrawStack.from_data(data, [np.array([0]), np.array([1])])
    assert batched_scores(stack, "pagerank", solver="power") is None  # not closed: per draw
    assert batched_scores(stack, "pagerank", damping=2.0) is None  # the rule's DataError
    with pytest.raises(br.errors.DataError, match="damping"):
        br.rank(data, "pagerank", damping=2.0)
