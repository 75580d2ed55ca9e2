"""The wall map Op against a stable NumPy reference and the PyTensor map it stands for
(:func:`models.transforms.wall_map`), in every back end, and inside the 2PL and 3PL models."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from _cells_ops import MODES, assert_same_density, count_ops
from bayesrank.models import irt
from bayesrank.models.fast.wall_map import WallMap, wall_map
from bayesrank.models.likelihoods import fast_kernels
from bayesrank.models.transforms import wall_map as plain_wall_map
from scipy import special

NAMES = ("v", "wall", "scale")


def _reference(v, wall, scale, side):
    """x and log dx/dv, stable at any v (scipy)."""
    x = wall + side * (v - scale * np.logaddexp(0.0, -v))
    return x, np.log1p(scale * special.expit(-v))


def _compiled(map_of, side, g_x, g_j, mode):
    if mode == "jax":
        pytest.importorskip("jax")
    v, wall, scale = pt.vector("v"), pt.vector("wall"), pt.scalar("scale")
    x, log_jacobian = map_of(v, wall, pt.constant(side), scale)
    objective = (g_x * x).sum() + (g_j * log_jacobian).sum()
    return pytensor.function([v, wall, scale],
                             [x, log_jacobian, *pytensor.grad(objective, [v, wall, scale])],
                             mode=MODES.get(mode, mode))


def _points(rng, M):
    points = [(rng.normal(0, 3, M), rng.normal(0, 2, M), np.exp(rng.normal(0, 1)))
              for _ in range(3)]
    v = rng.normal(0, 3, M)
    v[:6] = [0.0, 40.0, -40.0, 800.0, -800.0, 1e-300]  # beyond e^x's range on some
    points.append((v, rng.normal(0, 2, M), 32.0))
    return points


@pytest.mark.parametrize("mode", list(MODES))
def test_values_and_gradient_match_the_reference_and_the_plain_map(mode):
    rng = np.random.default_rng(0)
    M = 40
    side = rng.choice([-1.0, 0.0, 1.0], M)
    g_x, g_j = rng.normal(size=M), rng.normal(size=M)
    fast = _compiled(wall_map, side, g_x, g_j, mode)
    plain = _compiled(plain_wall_map, side, g_x, g_j, "FAST_RUN")
    for point in _points(rng, M):
        got, expected = fast(*point), plain(*point)
        x, log_jacobian = _reference(*point, side)
        np.testing.assert_allclose(got[0], x, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(got[1], log_jacobian, rtol=1e-13, atol=1e-15)
        for g, e, name in zip(got, expected, ("x", "log_jacobian", *NAMES), strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-11, atol=1e-11, err_msg=name)


def test_gradient_matches_finite_differences_of_the_op():
    rng = np.random.default_rng(1)
    M = 12
    side = pt.constant(rng.choice([-1.0, 0.0, 1.0], M))
    g_x, g_j = rng.normal(size=M), rng.normal(size=M)

    def objective(v, wall, scale):
        x, log_jacobian = wall_map(v, wall, side, scale)
        return (g_x * x).sum() + (g_j * log_jacobian).sum()

    pytensor.gradient.verify_grad(
        objective, [rng.normal(0, 2, M), rng.normal(0, 1, M), np.array(1.7)],
        rng=rng, abs_tol=1e-7, rel_tol=1e-7)


def test_derivative_outputs_are_not_differentiable_and_shapes_are_checked():
    v = pt.vector("v")
    outputs = WallMap()(v, pt.zeros_like(v), pt.ones_like(v), 1.0)
    with pytest.raises(NotImplementedError, match="derivative outputs"):
        pytensor.grad(outputs[2].sum(), v)
    with pytest.raises(ValueError, match="WallMap takes"):
        WallMap()(v, v, v, pt.vector())


@pytest.mark.parametrize(("kind", "sd"), [("2pl", 1.5), ("3pl", 0.5)])
def test_the_models_density_is_the_previous_graphs(kind, sd):
    """A 2PL/3PL with never- and always-solved questions: the WallMap is in its
    log-density, whose value and gradient equal those of the plain build (the map and its
    log-Jacobian as PyTensor operations).  Binomial cells, whose fast and plain forms are the same
    algebra, so the map alone is compared to 1e-12; the beta-binomial's Op against
    PyMC's gammaln form is held to 1e-10 in test_fast_path.  The 3PL at points 0.5 wide:
    1.5 wide, some cells reach p = 1 in floating point (both builds' gradients are NaN
    there) and PyMC's Binomial(p) and the fast cells then differ by 5e-8 elsewhere."""
    rng = np.random.default_rng(2)
    R = (rng.random((5, 12, 3)) < 0.5).astype(int)
    R[:, 2], R[:, 5], R[:, 7] = 0, 1, 0
    model = irt.build(R, kind=kind, likelihood="binomial")
    assert count_ops(model, WallMap) >= 1
    with fast_kernels(False):  # the map as PyTensor operations, PyMC's own likelihoods
        previous = irt.build(R, kind=kind, likelihood="binomial")
    assert count_ops(previous, WallMap) == 0
    assert_same_density(model, previous, rng, sd=sd)
