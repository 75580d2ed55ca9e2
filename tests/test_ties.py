"""Ties are ties (issue 9, item 5).

Models with identical sufficient statistics have the same posterior, so any
order between them is Monte Carlo noise: ``rank()``, ``leaderboard()`` and the
report must give them the same (competition) rank whatever the seed.  More
generally, an order whose score gap is within 2 Monte Carlo standard errors of
the difference is reported as a tie.  The grouping rules are checked on
hand-worked cases; the MCSE against the i.i.d. formula sd / sqrt(S).
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest

import bayesrank
from bayesrank.analysis.posterior import Posterior, closed_form, exchangeable_models
from bayesrank.analysis.rank_stats import (
    identical_rows,
    mean_difference_mcse,
    swap_invariant_pairs,
    tie_groups,
    tied_scores,
)
from bayesrank.data import ResponseData


def duplicated_data(seed: int = 1) -> ResponseData:
    """Four models; ``b2`` repeats ``b`` exactly (same outcomes, same trial order)."""
    rng = np.random.default_rng(seed)
    p = np.array([0.3, 0.5, 0.5, 0.7])
    R = (rng.random((4, 12, 6)) < p[:, None, None]).astype(np.int8)
    R[2] = R[1]
    return ResponseData(R, models=["a", "b", "b2", "c"])


# -------------------------------------------------------------- exchangeable from the data
def test_identical_rows_groups_only_equal_rows():
    rows = np.array([[1, 2], [3, 4], [1, 2], [5, 6], [3, 4], [1, 3]])
    groups = identical_rows(rows)
    assert sorted(g.tolist() for g in groups) == [[0, 2], [1, 4]]
    # several parts: a model's row is its rows of all of them, no copy concatenated
    other = np.array([[0.5], [1.0], [0.5], [2.0], [9.0], [0.5]])
    assert [g.tolist() for g in identical_rows(rows, other)] == [[0, 2]]
    small = rows.astype(np.int8)  # any dtype, any memory layout of the parts
    assert [g.tolist() for g in identical_rows(small, small[:, ::-1])] == [[0, 2], [1, 4]]


def test_swap_invariant_pairs_on_a_hand_made_win_matrix():
    # 0 and 1 beat each other equally often and face 2 identically; 2 differs.
    W = np.array([[0, 3, 5], [3, 0, 5], [1, 1, 0]])
    assert [g.tolist() for g in swap_invariant_pairs(W)] == [[0, 1]]
    W2 = W.copy()
    W2[0, 1] = 4  # 0 now beats 1 more often: not exchangeable
    assert swap_invariant_pairs(W2) == []
    T = np.array([[0, 1, 0], [1, 0, 2], [0, 2, 0]])  # ties against 2 differ
    assert swap_invariant_pairs(W, T) == []


@pytest.mark.parametrize("model", ["bayes", "rasch", "bradley_terry", "davidson_luce"])
def test_duplicated_models_are_found_exchangeable(model):
    groups = exchangeable_models(duplicated_data(), model)
    assert [g.tolist() for g in groups] == [[1, 2]]


def test_same_counts_in_another_trial_order_are_exchangeable_for_cell_models_only():
    d = duplicated_data()
    R = d.R.copy()
    R[2] = R[2][:, ::-1]  # same counts per question, different trial order
    shuffled = ResponseData(R, models=list(d.models))
    assert [g.tolist() for g in exchangeable_models(shuffled, "rasch")] == [[1, 2]]
    assert exchangeable_models(shuffled, "davidson_luce") == []


# -------------------------------------------------------------- grouping and MC error
def test_tie_groups_complete_linkage_and_exchangeable_groups():
    scores = np.array([1.0, 0.9, 0.8, 0.0])
    tol = np.full((4, 4), 0.15)
    # 0~1 and 1~2 are within 0.15 but 0 and 2 are 0.2 apart: no chain through 1.
    assert [g.tolist() for g in tie_groups(scores, tol)] == [[0, 1]]
    # exact posteriors (no tolerance): only the exchangeable group ties
    assert [g.tolist() for g in tie_groups(scores, None, [np.array([1, 3])])] == [[1, 3]]
    tied = tied_scores(scores, [np.array([0, 1])])
    assert tied[0] == tied[1] == pytest.approx(0.95)


def test_mean_difference_mcse_matches_iid_formula():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 2000, 3)) * np.array([1.0, 2.0, 0.5])
    se = mean_difference_mcse(x)
    flat = x.reshape(-1, 3)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        iid = (flat[:, i] - flat[:, j]).std(ddof=1) / np.sqrt(flat.shape[0])
        assert se[i, j] == se[j, i]
        assert se[i, j] == pytest.approx(iid, rel=0.1)
    assert np.all(np.diag(se) == 0)
    # draws independent by construction: the ESS is their number, and the formula exact
    exact = mean_difference_mcse(x, independent=True)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        iid = (flat[:, i] - flat[:, j]).std(ddof=1) / np.sqrt(flat.shape[0])
        assert exact[i, j] == exact[j, i] == pytest.approx(iid, rel=1e-12)


def test_order_within_mc_error_is_a_tie_and_a_clear_gap_is_not():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(4, 500, 1))
    # model 1 = model 0 + a shift far below its MCSE; model 2 clearly lower
    theta = np.concatenate([base, base + 1e-4 + 0.01 * rng.normal(size=base.shape),
                            base - 3.0], axis=-1)
    idata = az.from_dict({"posterior": {"theta": theta}}, coords={"llm": ["x", "y", "z"]},
                         dims={"theta": ["llm"]})
    post = Posterior(idata, None, "test")
    ranks = post.rank("mean").ranks
    assert ranks.tolist() == [1, 1, 3]
    assert post.tie_groups("mean") == [("x", "y")]


# -------------------------------------------------------------- end to end, across seeds
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_duplicated_models_tie_in_rank_and_leaderboard_for_every_seed(seed):
    d = duplicated_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(d, "bayes", random_seed=seed, progressbar=False)
    for by in ("mean", "median", "lcb"):
        ranks = dict(zip(d.models, post.rank(by).ranks, strict=True))
        assert ranks["b"] == ranks["b2"] == 2, (by, ranks)
        assert ranks["c"] == 1 and ranks["a"] == 4
    board = post.leaderboard()
    assert board.loc["b", "rank"] == board.loc["b2", "rank"] == 2
    assert board.loc["b", "lcb_rank"] == board.loc["b2", "lcb_rank"]
    assert ("b", "b2") in board.attrs["tie_groups"]


@pytest.mark.parametrize("seed", [0, 1])
def test_duplicated_models_tie_under_rasch(seed):
    d = duplicated_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(d, "rasch", random_seed=seed, progressbar=False, draws=300,
                             tune=300, chains=2)
    ranks = dict(zip(d.models, post.rank("mean").ranks, strict=True))
    assert ranks["b"] == ranks["b2"] == 2


def test_closed_form_ties_duplicated_models():
    d = duplicated_data()
    ranks = closed_form(d).rank("lcb").ranks
    assert ranks[1] == ranks[2] == 2
