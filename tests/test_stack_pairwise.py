"""Paired-comparison rules over a DrawStack rank every draw exactly as it ranks alone.

The oracle is :func:`bayesrank.rank` on ``ResponseData.subset`` of each draw (through
``safe_ranks``, which also reports the failures and warnings), run without the stack.
Each identifier's stack rule must give the same competition ranks on every draw it
scores, and a NaN row (the per-draw path) exactly where the draw alone fails or warns.
The batched solvers must also give bit-identical estimates for a problem alone and
inside any batch.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesrank import ResponseData
from bayesrank.baselines import luce, paired
from bayesrank.baselines.pairwise_batch import (
    bt_fit_batch,
    davidson_fit_batch,
    pl_mm_batch,
    rao_kupper_fit_batch,
    strongly_connected,
)
from bayesrank.datasets import example
from bayesrank.registry import get_method, rank
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import (
    SKIPPABLE,
    DrawStack,
    competition_ranks,
    rank_stack,
    stacked_scores,
)
from bayesrank.study.stack_pairwise import RULES, setwise_events

IDS = [
    "bradley_terry", "bradley_terry_map", "bradley_terry_davidson",
    "bradley_terry_davidson_map", "rao_kupper", "rao_kupper_map", "plackett_luce",
    "plackett_luce_map", "bradley_terry_luce", "bradley_terry_luce_map",
]


def _stack_scores(stack: DrawStack, method: str) -> np.ndarray | None:
    spec = get_method(method)
    with np.errstate(all="ignore"):
        return stacked_scores(stack, spec.base, **spec.options)


def _compare(data: ResponseData, draws, models, methods=IDS) -> dict[str, int]:
    """Assert stack == alone for every method and draw; return the draws scored batched."""
    stack = DrawStack.from_data(data, draws)
    if models is not None:
        stack = stack.pool(models)
    scored = {}
    for m in methods:
        scores = _stack_scores(stack, m)
        assert scores is not None, m
        assert scores.shape == (len(draws), stack.data.L)
        batched = np.isfinite(scores).all(axis=1)
        assert np.array_equal(batched, ~np.isnan(scores).any(axis=1))  # whole rows only
        for d, idx in enumerate(draws):
            ref, reason, n_warn = safe_ranks(data.subset(models=models, trials=idx), m)
            if batched[d]:
                assert ref is not None and n_warn == 0, (m, d, reason)
                np.testing.assert_array_equal(competition_ranks(scores[d]), ref, err_msg=m)
            else:  # left to the per-draw path: the draw alone fails or warns
                assert ref is None or n_warn > 0, (m, d)
        scored[m] = int(batched.sum())
    return scored


@pytest.fixture(scope="module")
def aime() -> ResponseData:
    return example()


@pytest.mark.parametrize("size", [5, 10, 15])
def test_example_pools_rank_as_each_draw_alone(aime, size):
    rng = np.random.default_rng(size)
    draws = [np.array([t]) for t in rng.choice(aime.N, 8, replace=False)]
    models = np.sort(rng.choice(aime.L, size, replace=False))
    scored = _compare(aime, draws, models)
    assert all(n == len(draws) for n in scored.values()), scored  # nothing fell back


@st.composite
def _binary_tensors(draw):
    L = draw(st.integers(2, 5))
    M = draw(st.integers(1, 6))
    N = draw(st.integers(1, 3))
    p = draw(st.sampled_from([0.2, 0.5, 0.8]))
    seed = draw(st.integers(0, 2**16))
    R = (np.random.default_rng(seed).random((L, M, N)) < p).astype(np.int8)
    return R


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_binary_tensors())
def test_small_binary_tensors_rank_as_each_draw_alone(R):
    data = ResponseData(R)
    draws = [np.array([t]) for t in range(data.N)]
    _compare(data, draws, None)
    if data.L > 2:
        _compare(data, draws, np.array([0, data.L - 1]))


def _degenerate() -> tuple[ResponseData, list[np.ndarray]]:
    """Draw 0: model 0 solves everything and model 1 nothing (no finite ML estimate for
    the win-only models); draw 1: every model answers alike (no decisive comparison);
    draw 2: models 0, 1 and models 2, 3 answer alike, 0 and 1 better (exact ties)."""
    R = np.zeros((4, 5, 3), dtype=np.int8)
    R[0, :, 0] = 1
    R[2:, :3, 0] = 1
    R[:, :2, 1] = 1
    R[:2, :4, 2] = 1
    R[2:, 3:, 2] = 1
    return ResponseData(R), [np.array([0]), np.array([1]), np.array([2])]


def test_degenerate_draws_fail_or_tie_as_alone():
    data, draws = _degenerate()
    scored = _compare(data, draws, None)
    assert scored["bradley_terry_map"] == 3
    stack = DrawStack.from_data(data, draws)
    for m in ("bradley_terry", "plackett_luce", "bradley_terry_luce"):
        assert np.isnan(_stack_scores(stack, m)[0]).all(), m
        assert safe_ranks(data.subset(trials=draws[0]), m)[1].startswith("NotIdentifiedError")
    for m in IDS:  # no decisive comparison: every model tied
        np.testing.assert_array_equal(competition_ranks(_stack_scores(stack, m)[1]), np.ones(4))
        np.testing.assert_array_equal(competition_ranks(_stack_scores(stack, m)[2]),
                                      [1.0, 1.0, 3.0, 3.0])


def test_rank_stack_reports_each_failing_draw_with_its_per_draw_reason():
    data, draws = _degenerate()
    out = rank_stack(DrawStack.from_data(data, draws), IDS)
    for m in IDS:
        for d, idx in enumerate(draws):
            ref, reason, n_warn = safe_ranks(data.subset(trials=idx), m)
            assert out[m].reasons[d] == reason, m
            if ref is None:
                assert out[m].ranks[d] is None
            else:
                np.testing.assert_array_equal(out[m].ranks[d], ref)


def _alone(sub: ResponseData, base: str, **options) -> tuple[bool, int]:
    """(fails, number of warnings) of a base rule on one draw with ``options``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rank(sub, base, **options)
            failed = False
        except SKIPPABLE:
            failed = True
    return failed, len(caught)


def test_a_fit_out_of_iterations_is_left_to_the_per_draw_path(aime):
    stack = DrawStack.from_data(aime, [np.array([t]) for t in range(4)]).pool(np.arange(6))
    for base in RULES:
        with np.errstate(all="ignore"):
            scores = stacked_scores(stack, base, max_iter=1)
        left = np.isnan(scores).any(axis=1)
        for d in range(stack.D):
            failed, n_warn = _alone(stack.subset(d), base, max_iter=1)
            assert left[d] == (failed or n_warn > 0), (base, d)
        assert left.any(), base  # one Newton / MM step does not converge here


def test_options_not_reproduced_give_none(aime):
    stack = DrawStack.from_data(aime, [np.array([0])]).pool(np.arange(4))
    assert stacked_scores(stack, "bradley_terry", prior=-1.0) is None  # the rule raises per draw
    assert stacked_scores(stack, "rao_kupper", tie_strength=None) is None  # free kappa
    assert stacked_scores(stack, "rao_kupper", tie_strength=1.0) is None
    assert stacked_scores(stack, "plackett_luce", tol=0.0) is None
    # an option the rule does not have is the caller's mistake on both paths alike
    with pytest.raises(TypeError, match="unknown"):
        stacked_scores(stack, "bradley_terry", unknown=1)
    with pytest.raises(TypeError, match="unknown"):
        paired.bradley_terry(stack.subset(0), unknown=1)


@pytest.mark.parametrize("size", [5, 10, 15])
def test_pool_stack_rows_rank_as_each_pools_draw_alone(aime, size):
    # every rule reads only the stack's per-row arrays (bradley_terry_luce: its events come
    # from the stack's outcomes), so one stack of all pools scores each row as the pool alone
    rng = np.random.default_rng(200 + size)
    draws = [np.array([t]) for t in rng.choice(aime.N, 5, replace=False)]
    pools = np.array([np.sort(rng.choice(aime.L, size, replace=False)) for _ in range(3)])
    full = DrawStack.from_data(aime, draws)
    pooled = full.pools(pools)
    for m in IDS:
        got = _stack_scores(pooled, m)
        assert got is not None and got.shape == (len(pools) * len(draws), size), m
        for p, pool in enumerate(pools):
            rows = got[p * len(draws):(p + 1) * len(draws)]
            np.testing.assert_array_equal(rows, _stack_scores(full.pool(pool), m), err_msg=m)
            for d, idx in enumerate(draws):
                ref, reason, n_warn = safe_ranks(aime.subset(models=pool, trials=idx), m)
                assert reason is None and n_warn == 0, (m, p, d)
                np.testing.assert_array_equal(competition_ranks(rows[d]), ref, err_msg=m)


def test_pool_stack_events_are_each_pools_setwise_events(aime):
    draws = [np.array([t]) for t in range(4)]
    pools = np.array([[1, 4, 7, 9], [0, 2, 18, 19], [1, 4, 7, 9]])
    U, V, c = setwise_events(DrawStack.from_data(aime, draws).pools(pools))
    for p, pool in enumerate(pools):
        for d, idx in enumerate(draws):
            ev = aime.subset(models=pool, trials=idx).reductions.setwise
            row, E = p * len(draws) + d, len(ev.counts)
            np.testing.assert_array_equal(U[row, :E], ev.winners)
            np.testing.assert_array_equal(V[row, :E], ev.losers)
            np.testing.assert_array_equal(c[row, :E], ev.counts)
            assert not c[row, E:].any()


def test_stack_events_are_each_draws_setwise_events(aime):
    draws = [np.array([t]) for t in range(6)]
    stack = DrawStack.from_data(aime, draws).pool(np.array([1, 4, 7, 9, 12, 18]))
    U, V, c = setwise_events(stack)
    for d in range(stack.D):
        ev = stack.subset(d).reductions.setwise
        E = len(ev.counts)
        np.testing.assert_array_equal(U[d, :E], ev.winners)
        np.testing.assert_array_equal(V[d, :E], ev.losers)
        np.testing.assert_array_equal(c[d, :E], ev.counts)
        assert not U[d, E:].any() and not V[d, E:].any() and not c[d, E:].any()


# -- the solvers: one problem alone and inside a batch give the same bits ------------------
@st.composite
def _count_batches(draw):
    L = draw(st.integers(2, 6))
    D = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    W = rng.integers(0, 4, (D, L, L)).astype(float)
    T = rng.integers(0, 3, (D, L, L)).astype(float)
    T = np.triu(T, 1) + np.swapaxes(np.triu(T, 1), 1, 2)
    W[:, np.arange(L), np.arange(L)] = 0.0
    return W, T


@settings(max_examples=40, deadline=None)
@given(_count_batches(), st.sampled_from([None, 1.0]))
def test_batched_solvers_equal_single_problem_bits(batch, prior):
    W, T = batch
    theta, _ = bt_fit_batch(W, prior_var=prior, max_iter=500)
    dav, nu, _ = davidson_fit_batch(W, T, prior_var=prior, max_iter=500)
    rk, _ = rao_kupper_fit_batch(W, T, kappa=1.1, prior_var=prior, max_iter=500)
    connected = strongly_connected((W > 0) | (T > 0))
    for d in range(len(W)):
        if prior is not None or strongly_connected(W[d:d + 1] > 0)[0]:
            np.testing.assert_array_equal(paired.bt_log_strengths(W[d], prior=prior), theta[d])
        if prior is not None or connected[d]:
            one, one_nu = paired.davidson_log_strengths(W[d], T[d], prior=prior)
            np.testing.assert_array_equal(one, dav[d])
            assert one_nu == nu[d] or (np.isinf(one_nu) and np.isinf(nu[d]))
            one_rk, _ = paired.rao_kupper_log_strengths(W[d], T[d], prior=prior)
            np.testing.assert_array_equal(one_rk, rk[d])
    ok = strongly_connected(W > 0)
    if ok.any():
        pl, _ = pl_mm_batch(W[ok], max_iter=500, tol=1e-8)
        for k, d in enumerate(np.flatnonzero(ok)):
            np.testing.assert_array_equal(luce.pl_log_strengths(W[d]), pl[k])


def test_strong_connectivity_matches_scipy():
    from scipy.sparse.csgraph import connected_components

    rng = np.random.default_rng(4)
    A = rng.random((200, 6, 6)) < 0.25
    expect = [connected_components(a, directed=True, connection="strong")[0] == 1 for a in A]
    np.testing.assert_array_equal(strongly_connected(A), expect)
