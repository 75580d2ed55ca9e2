"""Graph, spectral and game-theoretic rankings: paper configurations vs oracles.

Oracles: scorio 0.2.3 (the paper's implementation) for every identifier;
networkx PageRank on the paper's win-probability graph; published reference
cases (networkx's Langville-Meyer PageRank, OpenSpiel's alpha-Rank and Nash
averaging tests) in ``shared/data/graph_game_references``; closed forms
(HodgeRank on a gradient flow, SerialRank/Nash on complete binary data).

Documented disagreements with scorio 0.2.3 (both tested below):
- ``pagerank``: scorio adds self-loop mass ``sum_k P_hat[j, k]`` to each node
  and divides by L - 1; the paper (App. "PageRank") normalises the columns of
  ``P_hat`` without self-loops, which is exactly networkx's weighted PageRank.
- ``spectral``: scorio uses Keener's Laplace-smoothed matrix
  ``(W + T/2 + 1) / (total + 2)`` with zero diagonal; the paper uses
  ``P_hat`` with the row sums on the diagonal.
Rankings agree on the test tensors; scores differ, and we follow the paper.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import bayesrank
from bayesrank import ResponseData
from bayesrank.baselines import graph
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError

scorio_rank = pytest.importorskip("scorio.rank")
nx = pytest.importorskip("networkx")

GRAPH = sorted(bayesrank.methods(paper_only=True).query("family == 'graph'")["identifier"])
BASES = (
    "pagerank",
    "spectral",
    "alpharank",
    "nash",
    "rank_centrality",
    "serial_rank",
    "hodge_rank",
)


def _irt_like(L: int, M: int, N: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, L)
    b = rng.normal(0.0, 1.5, M)
    a = np.exp(rng.normal(0.0, 0.3, M))
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random((L, M, N)) < p[:, :, None]).astype(np.int8)


TENSORS = {
    "big_20x120x80": _irt_like(20, 120, 80, 0),
    "N1_8x10": _irt_like(8, 10, 1, 1),
    "small_5x6x3": _irt_like(5, 6, 3, 1),
    "N1_12x30": _irt_like(12, 30, 1, 4),
    "mid_10x20x4": _irt_like(10, 20, 4, 5),
}


def _base(identifier: str) -> str:
    return next(b for b in BASES if identifier.startswith(b))


_SCORIO_CACHE: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}


def _scorio(identifier: str, tensor: str) -> tuple[np.ndarray, np.ndarray]:
    """scorio's (ranks, scores) with the identifier's paper arguments (cached)."""
    key = (identifier, tensor)
    if key not in _SCORIO_CACHE:
        spec = bayesrank.registry.get_method(identifier)
        fn = getattr(scorio_rank, _base(identifier))
        _SCORIO_CACHE[key] = fn(TENSORS[tensor], return_scores=True, **spec.defaults)[:2]
    return _SCORIO_CACHE[key]


def test_every_paper_identifier_is_registered_with_the_paper_arguments(shared_dir):
    with open(shared_dir / "spec" / "paper_methods.tsv") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["family"] == "Graph/game"]
    assert sorted(r["identifier"] for r in rows) == GRAPH
    for row in rows:
        defaults = bayesrank.registry.get_method(row["identifier"]).defaults
        for part in row["arguments_used_in_the_paper"].split(", "):
            key, value = part.split("=")
            assert str(defaults[key]).lower() == value.lower() or (
                float(defaults[key]) == float(value)
            ), (row["identifier"], key)


# ---------------------------------------------------------------------------------------
# scorio 0.2.3 (the paper's implementation)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tensor", sorted(TENSORS))
@pytest.mark.parametrize("identifier", GRAPH)
def test_ranking_matches_scorio(identifier, tensor):
    ours = bayesrank.rank(TENSORS[tensor], identifier)
    ranks, _ = _scorio(identifier, tensor)
    np.testing.assert_array_equal(ours.ranks, ranks)


SAME_DEFINITION = [i for i in GRAPH if not i.startswith(("pagerank", "spectral", "serial"))]


@pytest.mark.parametrize("tensor", ["big_20x120x80", "N1_12x30", "mid_10x20x4"])
@pytest.mark.parametrize("identifier", SAME_DEFINITION)
def test_scores_match_scorio_where_the_definitions_agree(identifier, tensor):
    ours = bayesrank.rank(TENSORS[tensor], identifier)
    _, scores = _scorio(identifier, tensor)
    # scorio stops its power iterations at an L1 change of 1e-12; we solve exactly
    np.testing.assert_allclose(ours.scores, scores, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("identifier", ["serial_rank_prob_diff", "serial_rank_sign"])
def test_serial_rank_scores_match_scorio_up_to_eigenvector_normalisation(identifier):
    for tensor in ("big_20x120x80", "mid_10x20x4"):
        ours = bayesrank.rank(TENSORS[tensor], identifier)
        _, scores = _scorio(identifier, tensor)
        np.testing.assert_allclose(ours.scores, scores, atol=1e-9)  # both unit-norm


def test_pagerank_differs_from_scorio_by_definition_and_follows_the_paper():
    R = TENSORS["mid_10x20x4"]
    d = ResponseData(R)
    ours = bayesrank.rank(d, "pagerank").scores
    _, theirs = _scorio("pagerank", "mid_10x20x4")
    assert np.abs(ours - theirs).max() > 1e-3  # a real difference, not noise
    # scorio's chain: A_ij = P_hat[i, j] (i != j), A_ii = sum_k P_hat[i, k], Q = A / (L - 1)
    P_hat, _ = graph.win_probabilities(d.reductions.wins, d.reductions.ties)
    A = P_hat.copy()
    np.fill_diagonal(A, 0.0)
    np.fill_diagonal(A, A.sum(axis=1))
    Q = A / (d.L - 1)
    rebuilt = graph.pagerank_scores(Q.T, 0.85)  # adjacency[j, i] = Q[i, j]
    np.testing.assert_allclose(rebuilt, theirs, atol=1e-6)  # scorio: 100 power steps


def test_spectral_differs_from_scorio_by_definition_and_follows_the_paper():
    d = ResponseData(TENSORS["mid_10x20x4"])
    ours = bayesrank.rank(d, "spectral").scores
    _, theirs = _scorio("spectral", "mid_10x20x4")
    assert np.abs(ours - theirs).max() > 1e-3
    W, T = d.reductions.wins, d.reductions.ties
    keener = (W + 0.5 * T + 1.0) / (W + W.T + T + 2.0)
    np.fill_diagonal(keener, 0.0)
    np.testing.assert_allclose(graph.perron_vector(keener), theirs, atol=1e-10)
    # the paper's matrix: P_hat off the diagonal, row sums on it; v is its Perron vector
    P_hat, _ = graph.win_probabilities(W, T)
    M = P_hat - np.diag(np.diag(P_hat))
    M += np.diag(M.sum(axis=1))
    lam = (M @ ours) / ours
    np.testing.assert_allclose(lam, lam[0], rtol=1e-10)
    assert lam[0] == pytest.approx(np.max(np.abs(np.linalg.eigvals(M))), rel=1e-10)


# ---------------------------------------------------------------------------------------
# Independent oracles: networkx and published reference cases
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tensor", ["mid_10x20x4", "N1_12x30"])
def test_pagerank_equals_networkx_on_the_win_probability_graph(tensor):
    d = ResponseData(TENSORS[tensor])
    P_hat, compared = graph.win_probabilities(d.reductions.wins, d.reductions.ties)
    G = nx.DiGraph()
    G.add_nodes_from(range(d.L))
    for i, j in zip(*np.nonzero(compared), strict=True):
        G.add_edge(int(j), int(i), weight=float(P_hat[i, j]))  # loser j links to winner i
    expected = nx.pagerank(G, alpha=0.85, tol=1e-14, max_iter=10_000)
    ours = bayesrank.rank(d, "pagerank").scores
    np.testing.assert_allclose(ours, [expected[i] for i in range(d.L)], atol=1e-10)
    power = bayesrank.rank(d, "pagerank", solver="power", max_iter=2000).scores
    np.testing.assert_allclose(power, ours, atol=1e-10)


@pytest.mark.parametrize(
    "identifier", ["pagerank", "spectral", "rank_centrality_tie_half", "alpharank"]
)
def test_power_iteration_solver_converges_to_the_exact_solution(identifier):
    d = ResponseData(TENSORS["mid_10x20x4"])
    exact = bayesrank.rank(d, identifier).scores
    power = bayesrank.rank(d, identifier, solver="power", max_iter=200_000, tol=1e-15).scores
    np.testing.assert_allclose(power, exact, atol=1e-9)


@pytest.fixture(scope="module")
def references(shared_dir):
    with open(shared_dir / "data" / "graph_game_references" / "references.json") as fh:
        return json.load(fh)


def test_pagerank_langville_meyer_reference(references):
    case = references["pagerank_langville_meyer"]
    nodes = case["nodes"]
    A = np.zeros((len(nodes), len(nodes)))
    for u, v in case["directed_edges"]:
        A[nodes.index(u), nodes.index(v)] = 1.0
    r = graph.pagerank_scores(A, case["damping_alpha"])
    np.testing.assert_allclose(r, case["expected_pagerank"], atol=case["test_tolerance_abs"])
    personal = case["personalization_case"]
    K4 = np.ones((4, 4)) - np.eye(4)
    weights = [personal["personalization"][str(i)] for i in range(4)]
    r = graph.pagerank_scores(K4, personal["alpha"], teleport=np.array(weights, float))
    # the published values come from a power iteration stopped at networkx's default tol
    np.testing.assert_allclose(r, personal["expected"], atol=1e-6)
    G = nx.complete_graph(4)
    tight = nx.pagerank(
        G,
        alpha=personal["alpha"],
        personalization=dict(enumerate(weights)),
        tol=1e-15,
        max_iter=10_000,
    )
    np.testing.assert_allclose(r, [tight[i] for i in range(4)], atol=1e-12)


def test_alpharank_han_et_al_reference(references):
    case = references["alpharank_han2013"]
    pi = graph.alpharank_scores(
        np.array(case["single_population_symmetric_payoff_matrix"]),
        alpha=case["alpha_selection_intensity"],
        population_size=case["m_population_size"],
    )
    np.testing.assert_allclose(pi, case["expected_stationary_distribution"], atol=1e-4)
    power = graph.alpharank_scores(
        np.array(case["single_population_symmetric_payoff_matrix"]),
        alpha=case["alpha_selection_intensity"],
        population_size=case["m_population_size"],
        solver="power",
    )
    np.testing.assert_allclose(power, pi, atol=1e-9)


def test_nash_averaging_rock_paper_scissors_reference(references):
    case = references["nash_averaging_rps"]
    A = np.array(case["row_player_payoffs"])
    x = graph.nash_equilibrium(A)
    np.testing.assert_allclose(x, case["expected_maxent_nash_each_player"], atol=1e-9)
    np.testing.assert_allclose(A @ x, case["expected_nash_average_values"], atol=1e-9)


def test_alpharank_constant_sum_closed_form():
    """Paper App. alpha-Rank: rho = (1 - e^-u) / (1 - e^-mu), u = alpha m/(m-1) (P - 1/2)."""
    d = ResponseData(TENSORS["N1_12x30"])
    P_hat, _ = graph.win_probabilities(d.reductions.wins, d.reductions.ties)
    m, alpha, L = 50, 1.0, d.L
    u = alpha * m / (m - 1) * (P_hat - 0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(np.abs(u) < 1e-14, 1.0 / m, np.expm1(-u) / np.expm1(-m * u))
    C = rho.T / (L - 1)  # C[s, r] = rho[r, s] / (L - 1)
    np.fill_diagonal(C, 0.0)
    np.fill_diagonal(C, 1.0 - C.sum(axis=1))
    w, V = np.linalg.eig(C.T)
    pi = np.real(V[:, np.argmin(np.abs(w - 1))])
    np.testing.assert_allclose(bayesrank.rank(d, "alpharank").scores, pi / pi.sum(), atol=1e-12)


def test_stationary_distribution_is_accurate_for_tiny_masses():
    # birth-death chain with stationary masses spanning 30 orders of magnitude
    L, q = 8, 1e-4
    P = np.zeros((L, L))
    for i in range(L - 1):
        P[i, i + 1] = q
        P[i + 1, i] = 0.5
    np.fill_diagonal(P, 1.0 - P.sum(axis=1))
    pi = graph.stationary_distribution(P)
    expected = (2 * q) ** np.arange(L)  # detailed balance: pi_{i+1} / pi_i = q / 0.5
    np.testing.assert_allclose(pi, expected / expected.sum(), rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Closed forms and properties
# ---------------------------------------------------------------------------------------
def test_hodge_recovers_the_potential_of_a_gradient_flow_exactly():
    rng = np.random.default_rng(3)
    s = rng.normal(size=9)
    w = rng.uniform(0.1, 3.0, size=(9, 9))
    w = np.triu(w, 1) * (rng.random((9, 9)) < 0.6)
    w = w + w.T
    w[0, 1:] = w[1:, 0] = 1.0  # keep the graph connected
    flow = s[None, :] - s[:, None]  # Y_ij = s_j - s_i
    scores, diag = graph.hodge_potential(flow, w)
    np.testing.assert_allclose(scores, s - s.mean(), atol=1e-12)
    assert diag["residual_l2"] < 1e-10
    # a cyclic (curl) flow on a triangle has zero gradient part
    cyc = np.array([[0, 1, -1], [-1, 0, 1], [1, -1, 0]], float)
    zero, diag = graph.hodge_potential(cyc, np.ones((3, 3)))
    np.testing.assert_allclose(zero, 0.0, atol=1e-12)
    assert diag["relative_residual_l2"] == pytest.approx(1.0)


@pytest.mark.parametrize("weights", ["total", "decisive", "uniform"])
def test_hodge_on_complete_binary_data_is_centred_accuracy(weights):
    # Y_ij = (W_ji - W_ij) / MN = acc_j - acc_i is a gradient flow: exact for any weights
    R = TENSORS["mid_10x20x4"]
    acc = R.mean(axis=(1, 2))
    ours = bayesrank.rank(R, f"hodge_rank_binary_{weights}", return_diagnostics=True)
    np.testing.assert_allclose(ours.scores, acc - acc.mean(), atol=1e-12)
    assert ours.details["residual_l2"] < 1e-10


def test_serial_rank_on_complete_binary_data_orders_by_accuracy():
    R = TENSORS["big_20x120x80"]
    acc = R.mean(axis=(1, 2))
    ours = bayesrank.rank(R, "serial_rank_prob_diff")
    assert ours.details["fiedler_unique"]
    # C = acc 1^T - 1 acc^T: the Fiedler vector is the centred accuracy (up to scale)
    centred = acc - acc.mean()
    np.testing.assert_allclose(ours.scores, centred / np.linalg.norm(centred), atol=1e-10)


def test_serial_rank_falls_back_when_the_seriation_is_not_identified():
    R = np.tile(np.array([1, 0, 1, 1], np.int8), (5, 1))[:, :, None]  # identical models
    out = bayesrank.rank(R, "serial_rank_prob_diff")
    assert not out.details["fiedler_unique"]
    assert np.all(out.ranks == 1)


def test_nash_on_complete_binary_data_is_uniform_over_the_best_models():
    # A_ij = acc_i - acc_j: the maximin strategies mix the most accurate models
    R = TENSORS["N1_12x30"].copy()
    R[3] = R[int(np.argmax(R.sum(axis=(1, 2))))]  # a tie at the top
    out = bayesrank.rank(R, "nash_vs_equilibrium", return_equilibrium=True)
    acc = R.mean(axis=(1, 2))
    best = acc == acc.max()
    assert best.sum() == 2
    np.testing.assert_allclose(out.details["equilibrium"], best / best.sum(), atol=1e-12)
    np.testing.assert_allclose(out.scores, 0.5 + (acc - acc.max()) / 2, atol=1e-12)
    adv = bayesrank.rank(R, "nash_advantage_vs_equilibrium").scores
    np.testing.assert_allclose(adv, 2 * out.scores - 1, atol=1e-12)


def test_nash_max_entropy_selection_is_invariant_to_duplicated_strategies():
    rps = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], float)
    idx = [0, 0, 1, 2]  # rock duplicated
    A = rps[np.ix_(idx, idx)]
    x = graph.nash_equilibrium(A)
    np.testing.assert_allclose(x, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=1e-8)
    lp = graph.nash_equilibrium(A, selection="lp")
    assert np.all(A @ lp <= 1e-9)  # still an equilibrium
    np.testing.assert_allclose(lp[0] + lp[1], 1 / 3, atol=1e-9)


def test_nash_on_random_skew_games_is_an_equilibrium():
    rng = np.random.default_rng(7)
    for _ in range(5):
        B = rng.normal(size=(7, 7))
        A = B - B.T
        x = graph.nash_equilibrium(A)
        assert x.min() >= 0 and x.sum() == pytest.approx(1.0)
        assert np.max(A @ x) <= 1e-9  # no pure strategy gains against x
    fp = graph._smooth_fictitious_play(A, 5_000, 0.01)
    assert np.max(A @ fp) < 0.1  # the approximate solver gets close


def test_graph_methods_run_on_categorical_and_masked_data():
    rng = np.random.default_rng(5)
    R = rng.integers(0, 3, size=(6, 8, 3))
    mask = rng.random(R.shape) < 0.8
    d = ResponseData(R, n_categories=3, mask=mask)
    for identifier in GRAPH:
        out = bayesrank.rank(d, identifier)
        assert np.all(np.isfinite(out.scores)), identifier
    # nash on a non-rank-2 game: x is still an equilibrium of A = 2 P_hat - 1
    P_hat, _ = graph.win_probabilities(d.reductions.wins, d.reductions.ties)
    A = 2 * P_hat - 1
    np.fill_diagonal(A, 0.0)
    x = bayesrank.rank(d, "nash_vs_equilibrium", return_equilibrium=True).details["equilibrium"]
    assert np.max(A @ x) <= 1e-8


# ---------------------------------------------------------------------------------------
# Disconnected graphs and bad input
# ---------------------------------------------------------------------------------------
def _two_islands() -> ResponseData:
    rng = np.random.default_rng(0)
    R = (rng.random((4, 6, 2)) < 0.5).astype(np.int8)
    mask = np.zeros(R.shape, bool)
    mask[:2, :3] = True  # models 0, 1 answered questions 0-2 only
    mask[2:, 3:] = True  # models 2, 3 answered questions 3-5 only
    return ResponseData(R, mask=mask)


@pytest.mark.parametrize("identifier", GRAPH)
def test_disconnected_comparison_graph_is_refused(identifier):
    with pytest.raises(DisconnectedGraphError, match="connected components"):
        bayesrank.rank(_two_islands(), identifier)


def test_rank_centrality_ignore_needs_a_strongly_connected_walk():
    R = TENSORS["small_5x6x3"].copy()
    R[0] = 1  # model 0 never loses a decisive comparison
    with pytest.raises(DisconnectedGraphError, match="strongly connected"):
        bayesrank.rank(R, "rank_centrality_tie_ignore")
    with pytest.raises(ValueError, match="strongly connected"):
        scorio_rank.rank_centrality(R, tie_handling="ignore")  # scorio refuses too
    assert np.isfinite(bayesrank.rank(R, "rank_centrality_tie_half").scores).all()
    smooth = bayesrank.rank(R, "rank_centrality_tie_ignore", smoothing=0.5)
    assert smooth.ranks[0] == 1


def test_hodge_decisive_weights_can_disconnect_an_all_tie_pair():
    R = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 0]], np.int8)[:, :, None]
    R = np.concatenate([R, R], axis=2)
    d = ResponseData(np.stack([R[0], R[1]]))  # two identical models: only ties
    with pytest.raises(DisconnectedGraphError, match="positive edge weights"):
        bayesrank.rank(d, "hodge_rank_binary_decisive")
    assert np.all(bayesrank.rank(d, "hodge_rank_binary_total").ranks == 1)


@pytest.mark.parametrize(
    ("identifier", "options", "message"),
    [
        ("pagerank", {"damping": 1.0}, "damping"),
        ("pagerank", {"solver": "magic"}, "solver"),
        ("spectral", {"max_iter": 0}, "max_iter"),
        ("alpharank", {"alpha": -1.0}, "alpha"),
        ("alpharank", {"population_size": 1}, "population_size"),
        ("nash_vs_equilibrium", {"score_type": "best"}, "score_type"),
        ("nash_vs_equilibrium", {"solver": "cfr"}, "solver"),
        ("nash_vs_equilibrium", {"temperature": 0.0}, "temperature"),
        ("rank_centrality_tie_half", {"tie_handling": "third"}, "tie_handling"),
        ("rank_centrality_tie_half", {"teleport": 1.0}, "teleport"),
        ("serial_rank_sign", {"comparison": "rank"}, "comparison"),
        ("hodge_rank_binary_total", {"weight_method": "all"}, "weight_method"),
        ("hodge_rank_log_odds_total", {"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_options_raise_clear_errors(identifier, options, message):
    with pytest.raises(ValueError, match=message):
        bayesrank.rank(TENSORS["small_5x6x3"], identifier, **options)


def test_bad_arrays_raise_clear_errors():
    with pytest.raises(ValueError, match="antisymmetric"):
        graph.nash_equilibrium(np.ones((3, 3)))
    with pytest.raises(ValueError, match="skew-symmetric"):
        graph.hodge_potential(np.ones((3, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        graph.pagerank_scores(-np.ones((3, 3)))
    with pytest.raises(NotIdentifiedError, match="reducible"):
        graph.stationary_distribution(np.eye(3))
    with pytest.raises(DataError):
        bayesrank.rank(np.full((3, 4, 2), 0.5), "pagerank")


def test_single_model_gets_a_trivial_ranking():
    R = np.array([[[1, 0], [0, 1]]], np.int8)
    for identifier in GRAPH:
        assert bayesrank.rank(R, identifier).ranks.tolist() == [1], identifier
