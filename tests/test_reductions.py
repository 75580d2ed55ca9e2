"""Shared reductions against direct loop implementations (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bayesrank import DataError, ResponseData


@st.composite
def response_data(draw, binary: bool | None = None, allow_mask: bool = True):
    L = draw(st.integers(2, 6))
    M = draw(st.integers(1, 6))
    N = draw(st.integers(1, 5))
    n_cat = 2 if binary else draw(st.integers(2, 4)) if binary is None else draw(st.integers(3, 4))
    R = draw(arrays(np.int8, (L, M, N), elements=st.integers(0, n_cat - 1)))
    mask = None
    if allow_mask and draw(st.booleans()):
        mask = draw(arrays(np.bool_, (L, M, N)))
        mask[:, 0, 0] = True  # every model observed at least once
    weights = None
    if n_cat > 2 and draw(st.booleans()):
        weights = draw(
            arrays(np.float64, n_cat, elements=st.sampled_from([0.0, 0.25, 0.5, 1.0]))
        )
    return ResponseData(R, mask=mask, weights=weights, n_categories=n_cat)


def loop_pairwise(d: ResponseData):
    L, M, N = d.shape
    u = d.weights[d.R]
    seen = np.ones(d.shape, bool) if d.mask is None else d.mask
    W = np.zeros((L, L))
    T = np.zeros((L, L))
    for i in range(L):
        for j in range(L):
            if i == j:
                continue
            for m in range(M):
                for n in range(N):
                    if seen[i, m, n] and seen[j, m, n]:
                        W[i, j] += u[i, m, n] > u[j, m, n]
                        T[i, j] += u[i, m, n] == u[j, m, n]
    return W, T


def loop_question_pairs(d: ResponseData):
    L, M, N = d.shape
    u = d.weights[d.R]
    seen = np.ones(d.shape, bool) if d.mask is None else d.mask
    W = np.zeros((L, L))
    T = np.zeros((L, L))
    for m in range(M):
        cell = [u[l, m][seen[l, m]].mean() if seen[l, m].any() else None for l in range(L)]
        for i in range(L):
            for j in range(L):
                if i != j and cell[i] is not None and cell[j] is not None:
                    if np.isclose(cell[i], cell[j]):
                        T[i, j] += 1
                    elif cell[i] > cell[j]:
                        W[i, j] += 1
    return W, T


@settings(max_examples=60, deadline=None)
@given(response_data())
def test_pairwise_counts_match_loop(d):
    W, T = loop_pairwise(d)
    np.testing.assert_array_equal(d.reductions.wins, W)
    np.testing.assert_array_equal(d.reductions.ties, T)


@settings(max_examples=60, deadline=None)
@given(response_data())
def test_question_preferences_match_loop(d):
    W, T = loop_question_pairs(d)
    red = d.reductions
    np.testing.assert_array_equal(red.question_wins, W)
    np.testing.assert_array_equal(red.question_ties, T)
    np.testing.assert_allclose(red.question_preferences, W + T / 2)


@settings(max_examples=60, deadline=None)
@given(response_data())
def test_cell_counts_match_loop(d):
    L, M, N = d.shape
    seen = np.ones(d.shape, bool) if d.mask is None else d.mask
    counts = np.zeros((L, M, d.n_categories), dtype=np.int64)
    for l in range(L):
        for m in range(M):
            for n in range(N):
                if seen[l, m, n]:
                    counts[l, m, d.R[l, m, n]] += 1
    np.testing.assert_array_equal(d.reductions.category_counts, counts)
    np.testing.assert_array_equal(d.reductions.trials, counts.sum(-1))
    if d.is_binary:
        np.testing.assert_array_equal(d.reductions.successes, counts[..., 1])


@settings(max_examples=40, deadline=None)
@given(response_data(binary=True))
def test_setwise_events_match_loop(d):
    L, M, N = d.shape
    seen = np.ones(d.shape, bool) if d.mask is None else d.mask
    expected: dict[tuple, int] = {}
    for m in range(M):
        for n in range(N):
            winners = tuple(bool(seen[l, m, n] and d.R[l, m, n]) for l in range(L))
            losers = tuple(bool(seen[l, m, n] and not d.R[l, m, n]) for l in range(L))
            if any(winners) and any(losers):
                expected[winners, losers] = expected.get((winners, losers), 0) + 1
    ev = d.reductions.setwise
    got = {
        (tuple(w.tolist()), tuple(lo.tolist())): int(c)
        for w, lo, c in zip(ev.winners, ev.losers, ev.counts, strict=True)
    }
    assert got == expected


@settings(max_examples=40, deadline=None)
@given(response_data(allow_mask=False))
def test_complete_data_pairs_account_for_every_trial(d):
    red = d.reductions
    off = ~np.eye(d.L, dtype=bool)
    total = red.wins + red.wins.T + red.ties
    assert np.all(total[off] == d.M * d.N)
    np.testing.assert_allclose(
        (red.question_preferences + red.question_preferences.T)[off], d.M
    )


def test_large_binary_fast_path_matches_general_path():
    rng = np.random.default_rng(3)
    R = (rng.random((7, 300, 70)) < 0.4).astype(np.int8)  # more than one column chunk
    fast = ResponseData(R).reductions  # binary, complete: one symmetric product
    general = ResponseData(R, n_categories=3).reductions  # per-level products
    np.testing.assert_array_equal(fast.wins, general.wins)
    np.testing.assert_array_equal(fast.ties, general.ties)
    np.testing.assert_array_equal(fast.question_preferences, general.question_preferences)
    mask = np.ones(R.shape, bool)
    mask[3, 5, 2] = False
    masked = ResponseData(R, mask=mask)
    head = masked.subset(questions=slice(0, 6))
    W, T = loop_pairwise(head)
    np.testing.assert_array_equal(head.reductions.wins, W)
    np.testing.assert_array_equal(head.reductions.ties, T)
    total = masked.reductions.comparisons
    assert total[3, 0] == 300 * 70 - 1 and total[0, 1] == 300 * 70


def test_prior_counts_shared_and_per_model():
    R = np.zeros((2, 3, 4), dtype=int)
    shared = ResponseData(R, R0=np.array([[1, 1], [0, 1], [0, 0]]))
    np.testing.assert_array_equal(shared.reductions.prior_successes, [2, 1, 0])
    per_model = ResponseData(R, R0=np.array([[[1], [0], [1]], [[0], [0], [1]]]))
    np.testing.assert_array_equal(per_model.reductions.prior_successes, [[1, 0, 1], [0, 0, 1]])
    assert ResponseData(R).reductions.prior_category_counts is None


def test_binary_only_reductions_refuse_categorical():
    d = ResponseData(np.array([[[0, 2]], [[1, 1]]]), n_categories=3)
    with pytest.raises(DataError, match="binary"):
        _ = d.reductions.successes
    with pytest.raises(DataError, match="binary"):
        _ = d.reductions.setwise


def test_reductions_are_cached():
    d = ResponseData(np.ones((2, 2, 2), dtype=int))
    assert d.reductions is d.reductions
    assert d.reductions.wins is d.reductions.wins


def test_equal_mean_utilities_tie_whatever_their_rounding():
    """Weights 0, 1/3, 2/3, 1 (the default for four categories): trials (1, 2, 2, 2) and
    (0, 2, 2, 3) both mean 7/12, but their float sums differ in the last bit; an exact
    comparison counted a question-level win (found by hypothesis in the loop test)."""
    from bayesrank import rank
    from bayesrank.study.batched import DrawStack

    R = np.array([[[1, 2, 2, 2], [3, 3, 3, 3]], [[0, 2, 2, 3], [0, 0, 0, 0]]], dtype=np.int8)
    d = ResponseData(R, n_categories=4)
    u = d.reductions.cell_utility
    assert u[0, 0] != u[1, 0] and np.isclose(u[0, 0], u[1, 0])  # the rounding is real
    np.testing.assert_array_equal(d.reductions.question_wins, [[0, 1], [0, 0]])
    np.testing.assert_array_equal(d.reductions.question_ties, [[0, 1], [1, 0]])
    stack = DrawStack.from_data(d, [np.arange(4)])  # the study's stacked reduction agrees
    np.testing.assert_array_equal(stack.question_wins[0], d.reductions.question_wins)
    # Majority Judgment reads the same grades: model 0 is better on question 2 only
    assert rank(d, "majority_judgment").ranks.tolist() == [1, 2]


def test_merge_near_ties_merges_rounding_only_and_keeps_rows_apart():
    from bayesrank.data.reductions import merge_near_ties

    x = np.array([[7 / 12, 0.5833333333333333, np.nan, 0.58333333334],
                  [0.25, 0.25 + 1e-15, 0.9, 0.25 - 1e-15]])
    merged = merge_near_ties(x, per_row=True)
    assert merged[0, 0] == merged[0, 1] and merged[0, 3] != merged[0, 0]  # 7e-12 apart: kept
    assert np.isnan(merged[0, 2])
    assert merged[1, 0] == merged[1, 1] == merged[1, 3] == 0.25 - 1e-15 and merged[1, 2] == 0.9
    np.testing.assert_array_equal(merge_near_ties(x[1]), merged[1])  # a row alone: the same
