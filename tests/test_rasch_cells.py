"""The Rasch cells Op: binomial log-pmf and score against scipy and PyTensor's own graph."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from _cells_ops import (
    MODES,
    assert_cells_match_scipy,
    assert_same_density,
    cells_and_gradient,
    count_ops,
    stable_cells,
)
from _cells_ops import binomial_cells_data as _data
from bayesrank.models import irt
from bayesrank.models.fast.rasch_cells import RaschCells, rasch_cells
from bayesrank.models.fast.slope_cells import SlopeCells
from bayesrank.models.likelihoods import fast_kernels

from bayesrank import ResponseData


def _reference(k, n, theta, b, log_coef):
    """log C(n, k) + k x - n log(1 + e^x), stable at any x, and its gradient, in NumPy."""
    cells, residual = stable_cells(k, n, theta[:, None] - b[None, :], log_coef)
    return cells, residual.sum(axis=1), -residual.sum(axis=0)


@pytest.mark.parametrize("mode", list(MODES))
def test_cells_and_gradient_match_scipy_and_a_stable_reference(mode):
    rng = np.random.default_rng(0)
    k, n, log_coef = _data(rng)
    fn = cells_and_gradient(lambda theta, b: rasch_cells(k, n, theta, b, log_coef),
                            ("theta", "b"), mode)
    points = [(rng.normal(0, 1.5, 5), rng.normal(0, 2.5, 9)) for _ in range(3)]
    # far beyond floating point's e^x: the stable fallback (|x| > 700) on some cells
    points.append((np.array([750.0, -750.0, 0.0, 3.0, -2.0]), np.array(
        [0.0, 760.0, -760.0, 1.0, 2.0, -1.0, 40.0, -40.0, 0.5])))
    for theta, b in points:
        got = fn(theta, b)
        want = _reference(k, n, theta, b, log_coef)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-9)
        assert_cells_match_scipy(got[0], k, n, theta[:, None] - b[None, :])


def test_the_residual_output_is_not_differentiable_and_shapes_are_checked():
    k, n, log_coef = _data(np.random.default_rng(1))
    theta_v, b_v = pt.vector("theta"), pt.vector("b")
    _, residual = RaschCells()(k, n, theta_v, b_v, log_coef)
    with pytest.raises(NotImplementedError, match="residual"):
        pytensor.grad(residual.sum(), theta_v)
    with pytest.raises(ValueError, match="RaschCells takes"):
        RaschCells()(k[0], n, theta_v, b_v, log_coef)


@pytest.mark.parametrize("variant", ["plain", "collapsed", "prior_runs"])
def test_the_binomial_rasch_samples_with_the_op_and_scores_as_before(variant):
    """The Rasch model's likelihood is the Op; its log-density and gradient equal the
    previous graph's (binomial_logit at eta = theta - b) at random points, also with
    the one-sided questions' difficulties integrated out (their cells weighted 0) and
    with per-model prior runs R0 (a second table of cells)."""
    rng = np.random.default_rng(2)
    R = (rng.random((4, 8, 3)) < 0.5).astype(int)
    R[:, 2], R[:, 5] = 0, 1
    options = {"kind": "rasch", "collapse_uninformed": variant == "collapsed"}
    if variant == "prior_runs":
        R = ResponseData(R, R0=(rng.random((4, 8, 1)) < 0.5).astype(int))
        options["use_R0"] = True
    model = irt.build(R, **options)
    assert ("uninformed_difficulties" in model.named_vars) is (variant == "collapsed")
    # unweighted cells take the 2PL's kernel at a = 1 (summed without the table); the
    # collapsed Rasch's weighted cells the Rasch Op
    assert count_ops(model, RaschCells) == (variant == "collapsed")
    assert count_ops(model, SlopeCells) == {"plain": 1, "collapsed": 0, "prior_runs": 2}[variant]
    with fast_kernels(False):  # PyMC's own Binomial at eta = theta - b
        previous = irt.build(R, **options)
    assert count_ops(previous, RaschCells) == 0
    assert_same_density(model, previous, rng, sd=2)
