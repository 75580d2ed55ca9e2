"""The shared optimisation helpers of the baselines: priors, penalty, Newton, identifiability."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy import optimize

import bayesrank
from bayesrank.baselines import _optim
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan, True, "1.0", [1.0], np.ones(2)])
def test_prior_variance_refuses_non_variances_naming_the_argument(bad):
    with pytest.raises(DataError, match=r"prior_var must be a positive, finite prior variance"):
        _optim.prior_variance(bad, "prior_var")


def test_prior_variance_passes_none_and_positive_numbers():
    assert _optim.prior_variance(None) is None
    assert _optim.prior_variance(2) == 2.0 and isinstance(_optim.prior_variance(2), float)


@pytest.mark.parametrize("identifier", ["bradley_terry_map", "plackett_luce_map", "rasch_map",
                                        "bradley_terry_luce_map", "rasch_2pl_map"])
def test_every_family_refuses_a_bad_prior_the_same_way(identifier):
    R = np.random.default_rng(0).integers(0, 2, (4, 6, 3))
    for bad in (-1.0, [1.0]):
        with pytest.raises(DataError, match="prior must be a positive, finite prior variance"):
            bayesrank.rank(R, identifier, prior=bad)


def _numeric_derivatives(fun, x, h=1e-6):
    g = optimize.approx_fprime(x, lambda z: fun(z)[0], h)
    H = np.array([optimize.approx_fprime(x, lambda z, i=i: fun(z)[1][i], h)
                  for i in range(x.size)])
    return g, H


@pytest.mark.parametrize("prior_var", [None, 0.7])
def test_penalise_matches_its_formula_and_derivatives(prior_var):
    rng = np.random.default_rng(1)
    theta = rng.normal(size=4)
    scale = 13.0

    def penalised(x):
        return _optim.penalise(0.0, np.zeros(x.size), np.zeros((x.size, x.size)), x,
                               prior_var, scale)

    f, g, H = penalised(theta)
    if prior_var is None:
        expected = 0.5 * theta.mean() ** 2  # scale * m^2 / 2, divided by scale
    else:
        expected = 0.5 * theta @ theta / prior_var / scale
    assert f == pytest.approx(expected, rel=1e-14)
    g_num, H_num = _numeric_derivatives(penalised, theta)
    np.testing.assert_allclose(g, g_num, atol=1e-7)
    np.testing.assert_allclose(H, H_num, atol=1e-6)


def test_penalise_leaves_extra_parameters_alone():
    g, H = np.zeros(3), np.zeros((3, 3))
    _, g_out, H_out = _optim.penalise(0.0, g, H, np.array([1.0, 3.0]), 1.0, 1.0)
    assert g_out[2] == 0.0 and np.all(H_out[2] == 0.0) and np.all(H_out[:, 2] == 0.0)


def test_newton_solves_a_convex_problem_to_the_scipy_optimum():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(5, 5))
    Q = A @ A.T + np.eye(5)
    b = rng.normal(size=5)

    def objective(x):  # log-sum-exp plus a quadratic: smooth and strictly convex
        z = np.exp(x - x.max())
        p = z / z.sum()
        f = np.log(z.sum()) + x.max() + 0.5 * x @ Q @ x - b @ x
        return f, p + Q @ x - b, np.diag(p) - np.outer(p, p) + Q

    x = _optim.newton(objective, np.zeros(5), 50, "test")
    ref = optimize.minimize(lambda v: objective(v)[0], np.zeros(5),
                            jac=lambda v: objective(v)[1], method="BFGS", tol=1e-12).x
    np.testing.assert_allclose(x, ref, atol=1e-7)
    assert np.max(np.abs(objective(x)[1])) <= 1e-10


def test_newton_warns_when_max_iter_runs_out():
    def objective(x):
        return float(np.cosh(x[0] - 20.0)), np.array([np.sinh(x[0] - 20.0)]), np.array(
            [[np.cosh(x[0] - 20.0)]])

    with pytest.warns(RuntimeWarning, match="max_iter=1"):
        _optim.newton(objective, np.zeros(1), 1, "cosh")


def test_require_connected_names_the_components():
    edges = np.zeros((4, 4), bool)
    edges[0, 1] = edges[2, 3] = True
    with pytest.raises(DisconnectedGraphError, match=r"2 disconnected components.*'a', 'b'"):
        _optim.require_connected(edges, "rule", labels=["a", "b", "c", "d"])
    edges[1, 2] = True
    _optim.require_connected(edges, "rule")


def test_check_identified_agrees_with_strong_connectivity():
    rng = np.random.default_rng(3)
    for _ in range(200):
        beats = rng.random((5, 5)) < 0.3
        np.fill_diagonal(beats, False)
        graph = nx.from_numpy_array(beats.astype(int), create_using=nx.DiGraph)
        try:
            _optim.check_identified(beats)
            outcome = "ok"
        except DisconnectedGraphError:
            outcome = "disconnected"
        except NotIdentifiedError:
            outcome = "not identified"
        expected = ("ok" if nx.is_strongly_connected(graph) else
                    "not identified" if nx.is_weakly_connected(graph) else "disconnected")
        assert outcome == expected


def test_check_ford_on_hand_made_counts():
    n = np.full((3, 2), 4.0)
    _optim.check_ford_condition(np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]]), n, "Rasch")
    with pytest.raises(NotIdentifiedError, match=r"model\(s\) \[1\] solved every"):
        _optim.check_ford_condition(np.array([[1.0, 3.0], [4.0, 4.0], [3.0, 1.0]]), n, "Rasch")
    # model 0 always solves item 1, which model 1 always fails; items 0 and 2 are seen by one
    # model each: every model and item has a success and a failure, yet no path leads from
    # model 1 back to model 0, so model 0's ability runs off relative to model 1's
    k = np.array([[2.0, 4.0, 0.0], [0.0, 0.0, 2.0]])
    trials = np.array([[4.0, 4.0, 0.0], [0.0, 4.0, 4.0]])
    with pytest.raises(NotIdentifiedError, match=r"Ford.*\[\[0\], \[1\]\]|Ford.*\[\[1\], \[0\]\]"):
        _optim.check_ford_condition(k, trials, "Rasch")


def test_exchangeable_models_get_exactly_equal_scores():
    W = np.array([[0, 2, 2], [2, 0, 2], [1, 1, 0]], float)
    groups = bayesrank.ranking.exchangeable_groups(W)
    assert groups[0] == groups[1] != groups[2]
    np.testing.assert_array_equal(_optim.average_groups(np.array([1.0, 2.0, 5.0]), groups),
                                  [1.5, 1.5, 5.0])
