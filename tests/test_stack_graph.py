"""Graph rules over a whole DrawStack rank every draw exactly as the draw ranked alone.

The oracle is :func:`bayesrank.study._core.safe_ranks` (i.e. :func:`bayesrank.rank`) on
``ResponseData.subset`` of each draw, built independently of the stack; the rules with
non-default options are checked against the per-draw rule function called with the same
options.  Equality is exact (``assert_array_equal`` on competition ranks), and so is the
set of draws that fail (a batched NaN row must be exactly a draw the rule refuses).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import bayesrank as br
from bayesrank import ResponseData
from bayesrank.baselines import graph
from bayesrank.registry import get_method
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import (
    SKIPPABLE,
    DrawStack,
    competition_ranks,
    rank_stack,
    stacked_scores,
)
from bayesrank.study.stack_graph import RULES

GRAPH = [
    "pagerank", "spectral", "alpharank", "nash_vs_equilibrium", "nash_advantage_vs_equilibrium",
    "rank_centrality_tie_ignore", "rank_centrality_tie_half", "serial_rank_prob_diff",
    "serial_rank_sign", "hodge_rank_binary_total", "hodge_rank_binary_decisive",
    "hodge_rank_binary_uniform", "hodge_rank_log_odds_total", "hodge_rank_log_odds_decisive",
    "hodge_rank_log_odds_uniform",
]


def _stack_scores(stack: DrawStack, method: str) -> np.ndarray:
    spec = get_method(method)
    scores = stacked_scores(stack, spec.base, **spec.options)
    assert scores is not None, f"{method}: the paper defaults must be batched"
    assert scores.shape == (stack.D, stack.data.L)
    return scores


def _check_identity(data: ResponseData, draws, models=None, *, lp_free: bool = True) -> None:
    """Batched ranks == per-draw ranks on every draw; NaN rows == the draws that fail.

    ``lp_free``: every game is solved without the Nash LP (true for binary data, whose
    trial-level game is transitive), so nash has no NaN row beyond the failures either.
    """
    stack = DrawStack.from_data(data, draws)
    if models is not None:
        stack = stack.pool(models)
    engine = rank_stack(stack, GRAPH)
    for method in GRAPH:
        scores = _stack_scores(stack, method)
        for d, idx in enumerate(draws):
            ref, reason, _ = safe_ranks(data.subset(models=models, trials=idx), method)
            where = f"{method}, draw {d}"
            assert (engine[method].ranks[d] is None) == (ref is None), where
            assert engine[method].reasons[d] == reason, where
            if ref is not None:
                np.testing.assert_array_equal(engine[method].ranks[d], ref, err_msg=where)
            finite = bool(np.all(np.isfinite(scores[d])))
            if finite:
                assert ref is not None, f"{where}: batched scores where the rule refuses"
                np.testing.assert_array_equal(competition_ranks(scores[d]), ref, err_msg=where)
            elif ref is not None:
                assert method.startswith("nash") and not lp_free, f"{where}: needless NaN row"


@pytest.fixture(scope="module")
def example() -> ResponseData:
    return br.datasets.example("aime24")


def _check_scores_bitwise(stack: DrawStack, method: str) -> None:
    """Finite batched rows are the per-draw rule's scores to the last bit (same arithmetic)."""
    spec = get_method(method)
    rule = spec.function.__wrapped_rule__
    scores = _stack_scores(stack, method)
    for d in np.flatnonzero(np.isfinite(scores).all(axis=1)):
        out = rule(stack.subset(d), **dict(spec.defaults))
        ref = out[0] if isinstance(out, tuple) else out
        np.testing.assert_array_equal(scores[d], ref, err_msg=f"{method}, draw {d}")


@pytest.mark.parametrize("size", [5, 10, 15])
def test_example_pools_rank_as_each_draw_alone(example, size):
    rng = np.random.default_rng(size)
    draws = [np.array([t]) for t in rng.choice(example.N, 10, replace=False)]
    for _ in range(2):
        models = np.sort(rng.choice(example.L, size, replace=False))
        _check_identity(example, draws, models)
        stack = DrawStack.from_data(example, draws).pool(models)
        for method in GRAPH:
            _check_scores_bitwise(stack, method)


def test_full_example_with_draws_of_two_trials(example):
    rng = np.random.default_rng(7)
    _check_identity(example, [rng.choice(example.N, 2, replace=False) for _ in range(8)])


@st.composite
def _binary_data(draw):
    L = draw(st.integers(1, 6))
    M = draw(st.integers(1, 5))
    N = draw(st.integers(1, 3))
    R = draw(arrays(np.int8, (L, M, N), elements=st.integers(0, 1)))
    return ResponseData(R.astype(int))


@settings(max_examples=40, deadline=None)
@given(_binary_data())
def test_small_binary_tensors_rank_as_each_draw_alone(data):
    _check_identity(data, [np.array([t]) for t in range(data.N)])


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 6), st.integers(2, 5), st.integers(0, 2**16))
def test_categorical_tensors_rank_as_each_draw_alone(L, M, seed):
    rng = np.random.default_rng(seed)
    data = ResponseData(rng.integers(0, 3, size=(L, M, 3)), n_categories=3)
    _check_identity(data, [np.array([0]), np.array([1]), np.array([2])], lp_free=False)


def test_models_that_solve_nothing_or_everything():
    rng = np.random.default_rng(11)
    R = rng.integers(0, 2, size=(6, 8, 4))
    R[0] = 0  # solves nothing
    R[1] = 1  # solves everything
    R[2] = R[3]  # two identical models
    R[4, :, 2] = R[0, :, 2]  # trial 2: another model solves nothing
    data = ResponseData(R)
    _check_identity(data, [np.array([t]) for t in range(4)])
    _check_identity(data, [np.array([t]) for t in range(4)], models=np.array([0, 2, 3]))


def test_all_tied_draws_fail_or_rank_exactly_as_alone():
    # trial 0: all models identical (decisive HodgeRank graph has no edge, the 'beaten by'
    # walk has no step); trial 1: one model strictly best, the rest identical.
    R = np.zeros((5, 4, 2), dtype=int)
    R[:, :2, 0] = 1
    R[0, :, 1] = 1
    data = ResponseData(R)
    _check_identity(data, [np.array([0]), np.array([1])])
    stack = DrawStack.from_data(data, [np.array([0]), np.array([1])])
    assert np.isnan(_stack_scores(stack, "hodge_rank_binary_decisive")[0]).all()
    assert np.isnan(_stack_scores(stack, "rank_centrality_tie_ignore")).all()


def _per_draw_option_check(data: ResponseData, base: str, options: dict, defers: bool) -> None:
    """The rule with ``options`` over the stack against the rule on each draw alone.

    ``defers``: draws that need a search the stack does not run (the Nash LP) may get a
    NaN row although the rule ranks them; every finite row must still be exact.
    """
    draws = [np.array([t]) for t in range(data.N)]
    stack = DrawStack.from_data(data, draws)
    scores = stacked_scores(stack, base, **options)
    assert scores is not None
    rule = getattr(graph, base).__wrapped_rule__
    for d, idx in enumerate(draws):
        try:
            out = rule(data.subset(trials=idx), **options)
        except SKIPPABLE:
            assert np.isnan(scores[d]).all(), f"{base} {options}: draw {d} should fail"
            continue
        ref = out[0] if isinstance(out, tuple) else out
        if defers and np.isnan(scores[d]).all():
            continue
        np.testing.assert_array_equal(scores[d], ref, err_msg=f"{base} {options}: draw {d}")
    assert np.isfinite(scores).all(axis=1).any(), f"{base} {options}: nothing batched"


@pytest.mark.parametrize(("base", "options"), [
    ("alpharank", {"alpha": 500.0}),  # fixation probabilities underflow on some draws
    ("alpharank", {"alpha": 3.0, "population_size": 7}),
    ("pagerank", {"damping": 0.5}),
    ("rank_centrality", {"tie_handling": "ignore", "smoothing": 0.5}),
    ("rank_centrality", {"tie_handling": "ignore", "teleport": 0.1}),
    ("nash", {"score_type": "equilibrium"}),
    ("nash", {"selection": "lp"}),  # closed only for an all-zero game (trial 4)
    ("hodge_rank", {"pairwise_stat": "log_odds", "epsilon": 2.0}),
])
def test_non_default_options_rank_as_each_draw_alone(base, options):
    rng = np.random.default_rng(3)
    R = rng.integers(0, 2, size=(7, 6, 5))
    R[0, :, 0] = 1  # a draw with a model that never loses
    R[:, :, 4] = R[0, :, 4]  # a draw where every model ties
    _per_draw_option_check(ResponseData(R), base, options, defers=options.get("selection") == "lp")


@pytest.mark.parametrize(("base", "options"), [
    ("pagerank", {"solver": "power"}),
    ("spectral", {"solver": "power"}),
    ("rank_centrality", {"solver": "power"}),
    ("alpharank", {"solver": "power"}),
    ("nash", {"solver": "fictitious_play"}),
    ("serial_rank", {"comparison": "ratio"}),
    ("hodge_rank", {"weight_method": "inverse"}),
])
def test_options_not_reproduced_use_the_per_draw_path(base, options):
    data = ResponseData(np.random.default_rng(0).integers(0, 2, size=(4, 5, 2)))
    stack = DrawStack.from_data(data, [np.array([0]), np.array([1])])
    assert stacked_scores(stack, base, **options) is None


@pytest.mark.parametrize(("base", "options"), [
    ("pagerank", {"damping": True}),
    ("pagerank", {"tol": 0.0}),
    ("spectral", {"max_iter": 0}),
    ("rank_centrality", {"teleport": 1.0}),
    ("rank_centrality", {"smoothing": -1.0}),
    ("alpharank", {"population_size": 1}),
    ("alpharank", {"alpha": float("nan")}),
    ("nash", {"temperature": -1.0}),
    ("nash", {"selection": "random"}),
    ("serial_rank", {"comparison": "ratio"}),
    ("hodge_rank", {"epsilon": True}),
])
def test_options_the_rule_refuses_are_left_to_the_per_draw_path(base, options):
    data = ResponseData(np.random.default_rng(0).integers(0, 2, size=(4, 5, 2)))
    stack = DrawStack.from_data(data, [np.array([0]), np.array([1])])
    assert stacked_scores(stack, base, **options) is None
    with pytest.raises(br.errors.DataError):
        getattr(graph, base)(data.subset(trials=[0]), **options)


def test_every_graph_identifier_is_batched():
    assert {get_method(m).base for m in GRAPH} == set(RULES)


def test_alpharank_closed_form_equals_the_sum_over_population_states():
    # Independent of the stack: the constant-sum closed form used by the rule against the
    # general Fermi fixation sum (Omidshafiei et al., 2019) on win-probability games.
    rng = np.random.default_rng(9)
    for L, alpha, m in ((4, 1.0, 50), (7, 10.0, 20), (5, 0.0, 3)):
        wins = rng.integers(0, 6, size=(L, L)).astype(float)
        np.fill_diagonal(wins, 0.0)
        ties = rng.integers(0, 3, size=(L, L)).astype(float)
        ties = np.triu(ties, 1) + np.triu(ties, 1).T
        P_hat, _ = graph.win_probabilities(wins, ties)
        closed = graph.alpharank_scores(P_hat, alpha, m, constant_sum=True)
        general = graph.alpharank_scores(P_hat, alpha, m)
        np.testing.assert_allclose(closed, general, rtol=1e-10, atol=1e-14)
    with pytest.raises(br.errors.DataError, match="constant_sum"):
        graph.alpharank_scores(np.eye(3), constant_sum=True)


def test_population_sum_in_blocks_equals_each_game_alone(monkeypatch):
    from bayesrank.baselines import graph_batch

    monkeypatch.setattr(graph_batch, "BLOCK", 4)  # 10 games: blocks of 4, 4 and 2
    games = np.random.default_rng(12).random((10, 5, 5))
    stacked = graph_batch.alpharank_chain_batch(games, 2.0, 9)
    for b, game in enumerate(games):
        np.testing.assert_array_equal(stacked[b], graph_batch.alpharank_chain_batch(
            game[None], 2.0, 9)[0])
    general = graph.alpharank_scores(games[3], 2.0, 9)
    np.testing.assert_array_equal(general, graph_batch.stationary_batch(stacked[3:4])[0])


def test_blocks_of_a_stack_are_shared_and_kept_in_it(monkeypatch):
    from bayesrank.study import stack_graph

    monkeypatch.setattr(stack_graph, "CHUNK", 3)  # 7 draws: blocks of 3, 3 and 1
    data = ResponseData(np.random.default_rng(1).integers(0, 2, size=(5, 6, 7)))
    stack = DrawStack.from_data(data, [np.array([t]) for t in range(7)])
    for method in GRAPH:
        _check_scores_bitwise(stack, method)
    blocks = stack_graph._blocks(stack)
    assert [rows.D for rows in blocks] == [3, 3, 1]
    assert stack_graph._blocks(stack) is blocks  # every rule reads the same blocks
    assert all("_probabilities" in rows.__dict__ for rows in blocks)  # computed once
    again = DrawStack.from_data(data, [np.array([t]) for t in range(7)])
    assert stack_graph._blocks(again) is not blocks  # no state outside the stack
    assert not hasattr(stack_graph, "_BLOCKS")


def test_batched_connectivity_matches_scipy_connected_components():
    from scipy.sparse.csgraph import connected_components

    from bayesrank.baselines import graph_batch

    rng = np.random.default_rng(13)
    for L in (1, 2, 5, 9):
        edges = rng.random((300, L, L)) < rng.choice([0.05, 0.2, 0.5], size=(300, 1, 1))
        strong = graph_batch.strongly_connected_batch(edges)
        weak = graph_batch.connected_batch(edges)
        for b in range(300):
            n_strong = connected_components(edges[b], directed=True, connection="strong")[0]
            n_weak = connected_components(edges[b], directed=True, connection="weak")[0]
            assert strong[b] == (n_strong == 1) and weak[b] == (n_weak == 1), (L, b)
        if L >= 5:  # both outcomes occur: the comparison is not vacuous
            assert strong.any() and (~weak).any()


def test_a_stack_of_many_pools_scores_each_pool_as_alone(example):
    # What a pool-stacking bootstrap hands the rules: rows of several pools of one size.
    rng = np.random.default_rng(21)
    full = DrawStack.from_data(example, [np.array([t]) for t in range(0, example.N, 4)])
    parts = [full.pool(np.sort(rng.choice(example.L, 10, replace=False))) for _ in range(30)]
    fields = ("draws", "counts", "wins", "ties", "question_wins", "question_ties")
    big = DrawStack(parts[0].data, **{f: np.concatenate([getattr(p, f) for p in parts])
                                      for f in fields})
    for method in GRAPH:
        together = _stack_scores(big, method)
        alone = np.concatenate([_stack_scores(p, method) for p in parts])
        np.testing.assert_array_equal(together, alone, err_msg=method)
