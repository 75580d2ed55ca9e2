"""Stacked Thompson ranks (bayesrank.study.stack_rules): identical scores to each draw alone.

The oracle is :func:`bayesrank.baselines.metrics.thompson` on ``ResponseData.subset`` of
each draw (and of each pool), which never touches the stack; scores must be equal exactly,
on plain stacks, on :meth:`DrawStack.pool` and on the rows of :meth:`DrawStack.pools`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bayesrank import ResponseData
from bayesrank.baselines import metrics
from bayesrank.datasets import example
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import (
    DrawStack,
    batched_scores,
    is_batched,
    rank_stack,
    stacked_scores,
)


def rule(stack, **options):
    """The stacked Thompson rule with ``options`` over the rule's defaults (None: per draw)."""
    return stacked_scores(stack, "thompson", **options)


def _alone(data: ResponseData, idx, models=None, **options) -> np.ndarray:
    return metrics.thompson(data.subset(models=models, trials=idx), **options).scores


def _assert_stack_equals_alone(data, draws, pools, **options) -> None:
    stack = DrawStack.from_data(data, draws)
    got = rule(stack, **options)
    for d, idx in enumerate(draws):
        np.testing.assert_array_equal(got[d], _alone(data, idx, **options), err_msg=f"draw {d}")
    pooled = rule(stack.pools(pools), **options)  # before the pools' own stacks: no cache
    for p, pool in enumerate(pools):
        own = rule(stack.pool(pool), **options)
        for d, idx in enumerate(draws):
            want = _alone(data, idx, models=pool, **options)
            np.testing.assert_array_equal(pooled[p * len(draws) + d], want, err_msg=f"{p}, {d}")
            np.testing.assert_array_equal(own[d], want, err_msg=f"pool {p} alone, draw {d}")


@pytest.fixture(scope="module")
def aime() -> ResponseData:
    return example("aime24")


@pytest.mark.parametrize("size", [5, 10, 15])
def test_example_pools_single_trial_draws(aime, size):
    rng = np.random.default_rng(size)
    draws = [np.array([n]) for n in rng.choice(aime.N, 6, replace=False)]
    pools = np.array([np.sort(rng.choice(aime.L, size, replace=False)) for _ in range(3)])
    _assert_stack_equals_alone(aime, draws, pools)


def test_example_ranks_through_rank_stack(aime):
    # the registered identifier, default options, ranks as bayesrank.rank gives them
    rng = np.random.default_rng(7)
    draws = [rng.choice(aime.N, 2, replace=False) for _ in range(4)]
    assert is_batched("thompson")
    for models in (None, np.array([2, 5, 11, 12])):
        stack = DrawStack.from_data(aime, draws)
        stack = stack if models is None else stack.pool(models)
        assert batched_scores(stack, "thompson") is not None
        out = rank_stack(stack, ["thompson"])["thompson"]
        for d, idx in enumerate(draws):
            ref, reason, _ = safe_ranks(aime.subset(models=models, trials=idx), "thompson")
            assert reason is None
            np.testing.assert_array_equal(out.ranks[d], ref)


@settings(max_examples=25, deadline=None)
@given(arrays(np.int8, st.tuples(st.integers(2, 6), st.integers(1, 5), st.integers(1, 4)),
              elements=st.integers(0, 1)),
       st.integers(0, 2**40), st.sampled_from([(1.0, 1.0), (0.5, 2.0)]))
def test_random_binary_tensors(R, seed, prior):
    data = ResponseData(R)
    draws = [np.array([n]) for n in range(data.N)]
    pools = np.array([[0, data.L - 1], [data.L - 1, 0]])
    options = {"n_samples": 300, "seed": seed, "prior_alpha": prior[0], "prior_beta": prior[1]}
    _assert_stack_equals_alone(data, draws, pools, **options)


def test_twins_tie_exactly_in_every_row():
    R = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]], [[1, 1], [1, 0]]])  # 0 and 1 alike per draw
    data = ResponseData(R)
    stack = DrawStack.from_data(data, [np.array([0]), np.array([1])])
    for scores in (rule(stack), rule(stack.pools(np.array([[0, 1], [0, 2]])))[:2]):
        np.testing.assert_array_equal(scores[:, 0], scores[:, 1])


def test_what_the_stack_does_not_reproduce_takes_the_per_draw_path():
    rng = np.random.default_rng(0)
    categorical = DrawStack.from_data(ResponseData(rng.integers(0, 3, size=(4, 5, 3)),
                                                   n_categories=3),
                                      [np.array([0])])
    assert batched_scores(categorical, "thompson") is None
    out = rank_stack(categorical, ["thompson"])["thompson"]
    assert out.ranks == [None] and "binary" in out.reasons[0]
    binary = DrawStack.from_data(ResponseData(rng.integers(0, 2, size=(4, 5, 3))),
                                 [np.array([0])])
    assert rule(binary, seed=None) is None  # each draw alone gets a fresh seed
    assert rule(binary, seed=-3) is None
    assert rule(binary, n_samples=0) is None
    assert rule(binary, prior_alpha=0.0) is None
