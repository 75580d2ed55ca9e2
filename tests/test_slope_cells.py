"""The 2PL cells Op: binomial log-pmf and score against scipy and PyTensor's own graph."""

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
from bayesrank.models.fast.slope_cells import SlopeCells, SlopeCellsTotal, slope_cells
from bayesrank.models.likelihoods import fast_kernels

from bayesrank import ResponseData


def _reference(k, n, theta, a, beta, log_coef):
    """log C(n, k) + k x - n log(1 + e^x), stable at any x, and its gradient, in NumPy."""
    cells, residual = stable_cells(k, n, theta[:, None] * a[None, :] + beta[None, :], log_coef)
    return cells, residual @ a, theta @ residual, residual.sum(axis=0)


@pytest.mark.parametrize("mode", list(MODES))
def test_cells_and_gradient_match_scipy_and_a_stable_reference(mode):
    rng = np.random.default_rng(0)
    k, n, log_coef = _data(rng)
    fn = cells_and_gradient(lambda theta, a, beta: slope_cells(k, n, theta, a, beta, log_coef),
                            ("theta", "a", "beta"), mode)
    points = [(rng.normal(0, 1.5, 5), np.exp(rng.normal(0, 0.5, 9)), rng.normal(0, 2.5, 9))
              for _ in range(3)]
    # far beyond floating point's e^x on some cells
    points.append((np.array([750.0, -750.0, 0.0, 3.0, -2.0]), np.full(9, 1.3), np.array(
        [0.0, 760.0, -760.0, 1.0, 2.0, -1.0, 40.0, -40.0, 0.5])))
    for theta, a, beta in points:
        got = fn(theta, a, beta)
        want = _reference(k, n, theta, a, beta, log_coef)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-9)
        assert_cells_match_scipy(got[0], k, n, theta[:, None] * a[None, :] + beta[None, :])


def test_the_residual_output_is_not_differentiable_and_shapes_are_checked():
    k, n, log_coef = _data(np.random.default_rng(1))
    theta_v, a_v, beta_v = pt.vector("theta"), pt.vector("a"), pt.vector("beta")
    _, residual = SlopeCells()(k, n, theta_v, a_v, beta_v, log_coef)
    with pytest.raises(NotImplementedError, match="residual"):
        pytensor.grad(residual.sum(), theta_v)
    with pytest.raises(ValueError, match="SlopeCells takes"):
        SlopeCells()(k[0], n, theta_v, a_v, beta_v, log_coef)


@pytest.mark.parametrize("prior_runs", [False, True])
def test_the_binomial_2pl_samples_with_the_op_and_scores_as_before(prior_runs):
    """The 2PL's likelihood is the Op; its log-density and gradient equal the previous
    graph's (binomial_logit at eta = a theta + beta) at random points, also with
    per-model prior runs R0 (a second table of cells)."""
    rng = np.random.default_rng(2)
    R = (rng.random((4, 8, 3)) < 0.5).astype(int)
    R[:, 2], R[:, 5] = 0, 1
    options = {"kind": "2pl"}
    if prior_runs:
        R = ResponseData(R, R0=(rng.random((4, 8, 1)) < 0.5).astype(int))
        options["use_R0"] = True
    model = irt.build(R, **options)
    assert count_ops(model, SlopeCells) == (2 if prior_runs else 1)
    with fast_kernels(False):  # PyMC's own Binomial at eta = a theta + beta
        previous = irt.build(R, **options)
    assert count_ops(previous, SlopeCells) == 0
    assert_same_density(model, previous, rng, sd=1.5)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_sum_and_its_gradient_in_one_pass_match_the_cells(mode):
    """SlopeCellsTotal: the cells' sum and its gradient from integer counts, equal to the
    stable reference, at ordinary points and far beyond e^x's range."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng = np.random.default_rng(3)
    k, n, log_coef = _data(rng, L=6, M=37)
    theta_v, a_v, beta_v = pt.vector("theta"), pt.vector("a"), pt.vector("beta")
    outputs = SlopeCellsTotal()(k.astype(np.int32), n.astype(np.int8), theta_v, a_v, beta_v,
                                log_coef)
    fn = pytensor.function([theta_v, a_v, beta_v], outputs, mode=MODES[mode])
    points = [(rng.normal(0, 1.5, 6), np.exp(rng.normal(0, 0.5, 37)), rng.normal(0, 2.5, 37)),
              (np.array([750.0, -750.0, 0.0, 3.0, -2.0, 40.0]), np.full(37, 1.3),
               np.linspace(-760.0, 760.0, 37))]
    for theta, a, beta in points:
        cells, *gradient = _reference(k, n, theta, a, beta, log_coef)
        total, *got = fn(theta, a, beta)
        assert float(total) == pytest.approx(cells.sum(), rel=1e-13)
        for g, w in zip(got, gradient, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("one_sided", [False, True], ids=["informed", "walls"])
def test_a_fits_log_density_and_gradient_take_the_one_pass_op(one_sided):
    """The sum of the cells and the gradient of that sum become one SlopeCellsTotal node,
    with no table of cells, in the log-density and gradient nutpie compiles (also with
    never- and always-solved questions, whose walled intercepts once left two nodes: two
    passes over the cells); a weighted sum (one weight per cell) keeps the table and gets
    the same gradient as the reference."""
    from bayesrank.inference.backends import model_var_names
    from bayesrank.inference.nutpie_models import _functions

    rng = np.random.default_rng(4)
    R = (rng.random((5, 12, 2)) < 0.5).astype(int)
    if one_sided:
        R[:, :2], R[:, 2] = 0, 1
    model = irt.build(R, kind="2pl")
    _, _, logp_fn, *_ = _functions(model, model_var_names(model), "NUMBA", join_expanded=True)
    ops = [type(node.op) for node in logp_fn.maker.fgraph.apply_nodes]
    assert ops.count(SlopeCellsTotal) == 1 and SlopeCells not in ops

    k, n, log_coef = _data(rng)
    weight = rng.random(k.shape)
    fn = cells_and_gradient(
        lambda theta, a, beta: weight * slope_cells(k, n, theta, a, beta, log_coef),
        ("theta", "a", "beta"), "numba")
    theta, a, beta = rng.normal(size=5), np.exp(rng.normal(0, 0.5, 9)), rng.normal(size=9)
    x = theta[:, None] * a[None, :] + beta[None, :]
    residual = weight * stable_cells(k, n, x, log_coef)[1]
    for got, want in zip(fn(theta, a, beta)[1:], (residual @ a, theta @ residual,
                                                  residual.sum(axis=0)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
