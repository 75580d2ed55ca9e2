"""The 3PL floors' Op against a stable NumPy reference and the PyTensor graph it stands for
(:func:`models.transforms.floor_shares`), in every back end, and inside the 3PL."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from _cells_ops import MODES, assert_same_density, count_ops
from bayesrank.models import irt
from bayesrank.models.fast.floors import FloorShares, floor_shares
from bayesrank.models.likelihoods import fast_kernels
from bayesrank.models.transforms import floor_shares as plain_floor_shares
from scipy import special

#: free coordinates at the ends of the range: e^-700 is a normal number, e^-800 is not
EXTREMES = (0.0, 1e-300, 3.0, -3.0, 30.0, -30.0, 700.0, -700.0)


def _reference(u, w, centred):
    """shift, c and log c + log(1 - c), stable at any u and w (scipy, in log space)."""
    informed = centred > 0
    log_c = special.log_expit(w) + np.where(informed, special.log_expit(u), 0.0)
    # 1 - c = logistic(-u) + logistic(u) logistic(-w) (informed), logistic(-w) (other)
    log_not_c = np.where(informed, np.logaddexp(special.log_expit(-u),
                                                special.log_expit(u) + special.log_expit(-w)),
                         special.log_expit(-w))
    return np.where(informed, np.logaddexp(0.0, w), 0.0), np.exp(log_c), log_c + log_not_c


def _compiled(floors_of, centred, weights, mode):
    if mode == "jax":
        pytest.importorskip("jax")
    u, w = pt.vector("u"), pt.vector("w")
    outputs = floors_of(u, w, pt.constant(centred))
    objective = sum((g * x).sum() for g, x in zip(weights, outputs, strict=True))
    return pytensor.function([u, w], [*outputs, *pytensor.grad(objective, [u, w])],
                             mode=MODES.get(mode, mode))


def _points(rng, M):
    points = [(rng.normal(0, 3, M), rng.normal(-2, 2, M)) for _ in range(3)]
    # each pair of the grid twice in a row: informed, then not (the tests' ``centred``)
    grid = np.repeat(np.array([(u, w) for u in EXTREMES for w in EXTREMES]).T, 2, axis=1)
    u, w = rng.normal(0, 3, M), rng.normal(0, 3, M)
    u[:grid.shape[1]], w[:grid.shape[1]] = grid
    points.append((u, w))
    return points


@pytest.mark.parametrize("mode", list(MODES))
def test_values_and_gradient_match_the_reference_and_the_plain_graph(mode):
    rng = np.random.default_rng(0)
    M = 2 * len(EXTREMES) ** 2
    centred = np.tile([1.0, 0.0], M // 2)  # every grid point both informed and not
    weights = rng.normal(size=(3, M))
    fast = _compiled(floor_shares, centred, weights, mode)
    plain = _compiled(plain_floor_shares, centred, weights, "FAST_RUN")
    for u, w in _points(rng, M):
        got, expected = fast(u, w), plain(u, w)
        for g, r, name in zip(got[:3], _reference(u, w, centred), ("shift", "c", "J"),
                              strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-13, atol=1e-14, err_msg=name)
        for g, e, name in zip(got, expected, ("shift", "c", "J", "du", "dw"), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-11, atol=1e-11, err_msg=name)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_log_jacobian_stays_finite_where_the_plain_graph_does_not(mode):
    """At u = w = 800, 1 - c = 2 e^-800 is below the smallest float: the plain graph's
    log1mexp(log c) is -inf there, the Op's log(1 - c) = softplus(beta) - softplus(u) not."""
    u = w = np.array([800.0, 800.0, -800.0, 40.0])
    centred = np.array([1.0, 0.0, 1.0, 1.0])
    fast = _compiled(floor_shares, centred, np.ones((3, 4)), mode)
    got = fast(u, w)
    np.testing.assert_allclose(got[2], _reference(u, w, centred)[2], rtol=1e-14)
    assert all(np.isfinite(g).all() for g in got)


def test_gradient_matches_finite_differences_of_the_op():
    rng = np.random.default_rng(1)
    M = 12
    centred = pt.constant(rng.choice([0.0, 1.0], M))
    weights = rng.normal(size=(3, M))

    def objective(u, w):
        return sum((g * x).sum() for g, x in zip(weights, floor_shares(u, w, centred),
                                                  strict=True))

    pytensor.gradient.verify_grad(objective, [rng.normal(0, 2, M), rng.normal(-1, 2, M)],
                                  rng=rng, abs_tol=1e-7, rel_tol=1e-7)


def test_derivative_outputs_are_not_differentiable_and_shapes_are_checked():
    u = pt.vector("u")
    outputs = FloorShares()(u, u, pt.ones_like(u))
    with pytest.raises(NotImplementedError, match="derivative outputs"):
        pytensor.grad(outputs[4].sum(), u)
    with pytest.raises(ValueError, match="FloorShares takes"):
        FloorShares()(u, u, pt.scalar())


def _binary_with_walls(rng):
    R = (rng.random((5, 12, 3)) < 0.5).astype(int)
    R[:, 2], R[:, 5], R[:, 7] = 0, 1, 0
    return R


def test_the_3pls_density_is_the_plain_graphs():
    """A 3PL with never- and always-solved questions: the Op is in its log-density, whose
    value and gradient equal those of the plain build (binomial cells, as in
    test_wall_map)."""
    rng = np.random.default_rng(2)
    R = _binary_with_walls(rng)
    model = irt.build(R, kind="3pl", likelihood="binomial")
    assert count_ops(model, FloorShares) >= 1
    with fast_kernels(False):
        previous = irt.build(R, kind="3pl", likelihood="binomial")
    assert count_ops(previous, FloorShares) == 0
    assert_same_density(model, previous, rng, sd=0.5)


def test_the_3pl_with_the_op_draws_its_prior_and_starts_where_the_plain_one_does():
    R = _binary_with_walls(np.random.default_rng(3))
    model = irt.build(R, kind="3pl")
    with model:
        prior = pm.sample_prior_predictive(draws=50, random_seed=4).prior
    c = prior["c"].values
    assert ((c > 0) & (c < 1)).all()
    with fast_kernels(False):
        plain = irt.build(R, kind="3pl")
    start, plain_start = model.initial_point(), plain.initial_point()
    for name, value in start.items():
        np.testing.assert_allclose(value, plain_start[name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
