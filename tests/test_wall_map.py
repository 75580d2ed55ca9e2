"""The one-sided intercepts' wall map Op against a stable NumPy reference and the graph it
replaced, in every back end, and inside the 2PL and 3PL models."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from _cells_ops import MODES, assert_same_density, count_ops
from bayesrank.models import irt
from bayesrank.models.fast.wall_map import WallMap, wall_map
from bayesrank.models.likelihoods import fast_kernels
from scipy import special

NAMES = ("raw", "location", "scale", "slope", "reference")


def _reference(raw, location, scale, slope, reference, side):
    """z and log density, stable at any raw (scipy), and the gradient of
    sum(g_z z + g_ld log_density) by central differences of the closed form."""
    one_sided = side != 0
    h = -np.logaddexp(0.0, -raw) + raw / scale
    z = np.where(one_sided, (-slope * reference - location) / scale + side * h, raw)
    log_density = 0.5 * (raw**2 - z**2) + np.log(special.expit(-raw) + 1.0 / scale)
    return z, np.where(one_sided, log_density, 0.0)


def _previous_graph(raw, location, scale, slope, reference, side):
    """The map as PyTensor graph, as models.item_effects built it before the Op."""
    z_wall = (-slope * reference - location) / scale
    h = -pt.softplus(-raw) + raw / scale
    one_sided = pt.neq(side, 0)
    z = pt.where(one_sided, z_wall + side * h, raw)
    log_density = 0.5 * (raw**2 - z**2) + pt.log(pt.sigmoid(-raw) + 1.0 / scale)
    return z, pt.where(one_sided, log_density, 0.0)


def _compiled(map_of, side, g_z, g_ld, mode):
    if mode == "jax":
        pytest.importorskip("jax")
    raw, slope, reference = pt.vector("raw"), pt.vector("slope"), pt.vector("reference")
    location, scale = pt.scalar("location"), pt.scalar("scale")
    inputs = [raw, location, scale, slope, reference]
    z, log_density = map_of(*inputs, pt.constant(side))
    objective = (g_z * z).sum() + (g_ld * log_density).sum()
    return pytensor.function(inputs, [z, log_density, *pytensor.grad(objective, inputs)],
                             mode=MODES.get(mode, mode))


def _points(rng, M):
    points = []
    for _ in range(3):
        points.append((rng.normal(0, 3, M), rng.normal(), np.exp(rng.normal(0, 1)),
                       np.exp(rng.normal(0, 0.5, M)), rng.normal(0, 2, M)))
    raw = rng.normal(0, 3, M)
    raw[:6] = [0.0, 40.0, -40.0, 800.0, -800.0, 1e-300]  # beyond e^x's range on some
    points.append((raw, 0.4, 32.0, np.full(M, 1.3), rng.normal(0, 2, M)))
    return points


@pytest.mark.parametrize("mode", list(MODES))
def test_values_and_gradient_match_the_reference_and_the_previous_graph(mode):
    rng = np.random.default_rng(0)
    M = 40
    side = rng.choice([-1.0, 0.0, 1.0], M)
    g_z, g_ld = rng.normal(size=M), rng.normal(size=M)
    new = _compiled(wall_map, side, g_z, g_ld, mode)
    # PyTensor's C back end: the py linker's build of this graph is off by up to 4e-8 here
    previous = _compiled(_previous_graph, side, g_z, g_ld, "FAST_RUN")
    for point in _points(rng, M):
        got, before = new(*point), previous(*point)
        z, log_density = _reference(*point, side)
        np.testing.assert_allclose(got[0], z, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(got[1], log_density, rtol=1e-12, atol=1e-12)
        for g, b, name in zip(got, before, ("z", "log_density", *NAMES), strict=True):
            np.testing.assert_allclose(g, b, rtol=1e-11, atol=1e-11, err_msg=name)


def test_gradient_matches_finite_differences_of_the_op():
    rng = np.random.default_rng(1)
    M = 12
    side = pt.constant(rng.choice([-1.0, 0.0, 1.0], M))
    g_z, g_ld = rng.normal(size=M), rng.normal(size=M)

    def objective(raw, location, scale, slope, reference):
        z, log_density = wall_map(raw, location, scale, slope, reference, side)
        return (g_z * z).sum() + (g_ld * log_density).sum()

    pytensor.gradient.verify_grad(
        objective, [rng.normal(0, 2, M), np.array(0.3), np.array(1.7),
                    np.exp(rng.normal(0, 0.5, M)), rng.normal(0, 1, M)],
        rng=rng, abs_tol=1e-7, rel_tol=1e-7)


def test_derivative_outputs_are_not_differentiable_and_shapes_are_checked():
    raw = pt.vector("raw")
    outputs = WallMap()(raw, 0.0, 1.0, pt.ones_like(raw), pt.zeros_like(raw), pt.ones_like(raw))
    with pytest.raises(NotImplementedError, match="derivative outputs"):
        pytensor.grad(outputs[2].sum(), raw)
    with pytest.raises(ValueError, match="WallMap takes"):
        WallMap()(raw, pt.vector(), 1.0, raw, raw, raw)


@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_the_models_density_is_the_previous_graphs(kind):
    """A 2PL/3PL with never- and always-solved questions: the WallMap is in its
    log-density, whose value and gradient equal those of the graph it replaced."""
    rng = np.random.default_rng(2)
    R = (rng.random((5, 12, 3)) < 0.5).astype(int)
    R[:, 2], R[:, 5], R[:, 7] = 0, 1, 0
    model = irt.build(R, kind=kind)
    assert count_ops(model, WallMap) >= 1
    with fast_kernels(False):  # the map as PyTensor operations, PyMC's own likelihoods
        previous = irt.build(R, kind=kind)
    assert count_ops(previous, WallMap) == 0
    assert_same_density(model, previous, rng, sd=1.5)
