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

NAMES = ("v", "wall", "scale", "width")


def _reference(v, wall, scale, width, side):
    """x and log dx/dv, stable at any v (scipy)."""
    low = special.expit(-v)
    x = wall + side * (v - scale * np.logaddexp(0.0, -v) - width * low)
    return x, np.log1p(scale * low + width * low * special.expit(v))


def _compiled(map_of, side, g_x, g_j, mode):
    if mode == "jax":
        pytest.importorskip("jax")
    v, wall, scale, width = (pt.vector(name) for name in NAMES)
    x, log_jacobian = map_of(v, wall, pt.constant(side), scale, width)
    objective = (g_x * x).sum() + (g_j * log_jacobian).sum()
    inputs = [v, wall, scale, width]
    return pytensor.function(inputs, [x, log_jacobian, *pytensor.grad(objective, inputs)],
                             mode=MODES.get(mode, mode))


def _stretches(rng, M, scale):
    """Per question: the one-sided map's scale, or (a third of them) a cap's width."""
    capped = rng.random(M) < 1 / 3
    return np.where(capped, 0.0, scale), np.where(capped, np.exp(rng.normal(1, 1.5, M)), 0.0)


def _points(rng, M):
    points = [(rng.normal(0, 3, M), rng.normal(0, 2, M),
               *_stretches(rng, M, np.exp(rng.normal(0, 1)))) for _ in range(3)]
    v = rng.normal(0, 3, M)
    v[:6] = [0.0, 40.0, -40.0, 800.0, -800.0, 1e-300]  # beyond e^x's range on some
    v[6:12] = v[:6]
    scale, width = _stretches(rng, M, 32.0)
    scale[:6], width[:6], scale[6:12], width[6:12] = 32.0, 0.0, 0.0, 1e4
    points.append((v, rng.normal(0, 2, M), scale, width))
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

    def objective(v, wall, scale, width):
        x, log_jacobian = wall_map(v, wall, side, scale, width)
        return (g_x * x).sum() + (g_j * log_jacobian).sum()

    scale, width = _stretches(rng, M, 1.7)
    pytensor.gradient.verify_grad(
        objective, [rng.normal(0, 2, M), rng.normal(0, 1, M), scale + 0.1, width + 0.2],
        rng=rng, abs_tol=1e-7, rel_tol=1e-7)


def test_derivative_outputs_are_not_differentiable_and_shapes_are_checked():
    v = pt.vector("v")
    outputs = WallMap()(v, pt.zeros_like(v), pt.ones_like(v), pt.ones_like(v), v)
    with pytest.raises(NotImplementedError, match="derivative outputs"):
        pytensor.grad(outputs[2].sum(), v)
    with pytest.raises(ValueError, match="WallMap takes"):
        WallMap()(v, v, v, pt.scalar(), v)


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


def test_the_inverse_recovers_v_for_one_sided_and_capped_maps():
    """The transforms' ``forward`` (initial points): Newton from the asymptotes recovers v
    for scales and cap widths up to 1e5, on both sides of the wall and between wall and cap."""
    from bayesrank.models.transforms import _wall_inverse

    v = np.concatenate([np.linspace(-700.0, 700.0, 1401), np.linspace(-30.0, 30.0, 601)])
    x, wall, scale, width = pt.vector("x"), pt.vector("wall"), pt.scalar("s"), pt.scalar("d")
    inverse = pytensor.function([x, wall, scale, width],
                                _wall_inverse(x, wall, pt.constant(-1.0), scale, width))
    for s, d in [(0.0, 0.0), (1.7, 0.0), (1e5, 0.0), (0.0, 0.3), (0.0, 13.0), (0.0, 1e5)]:
        wall_at = np.full(v.size, 2.5)
        forward, _ = _reference(v, wall_at, s, d, -1.0)
        got = inverse(forward, wall_at, s, d)
        y = (forward - wall_at) * -1.0
        back, _ = _reference(got, wall_at, s, d, -1.0)
        np.testing.assert_allclose((back - wall_at) * -1.0, y, rtol=1e-14, atol=1e-12,
                                   err_msg=f"scale {s}, width {d}")
