"""The beta-binomial cells (models.beta_binomial): log-pmf and derivatives against scipy and
the gammaln form, in NumPy, Numba and JAX, from heavy over-dispersion to the binomial limit,
and the 3PL model's density with the Op against the same model built on the gammaln form."""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from bayesrank.models import get_model, irt
from bayesrank.models.fast import beta_binomial as bb
from pytensor.compile.mode import Mode
from scipy import special, stats

from bayesrank import ResponseData

MODES = {"numba": "NUMBA", "jax": "JAX", "numpy": Mode(linker="py", optimizer="fast_run")}
#: one xdist worker: the Ops' Numba and JAX kernels compile once, not once on each worker
pytestmark = pytest.mark.xdist_group("beta_binomial_cells")


def _cells(rng, L=7, M=9, most=12):
    n = rng.integers(0, most + 1, size=(L, M)).astype(float)
    n[0, 0] = most
    k = np.floor(rng.uniform(size=n.shape) * (n + 1))
    return k, n, special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _functions(k, n, log_coef, mode):
    """cells and the gradient of their sum in (eta, c, log delta): the Op and the gammaln form."""
    eta, c, log_delta = pt.matrix("eta"), pt.vector("c"), pt.scalar("log_delta")
    cells = bb.beta_binomial_cells(k, n, eta, c, log_delta, log_coef, max_trials=int(n.max()))
    gamma_form = bb.beta_binomial_logp_gamma(
        pt.as_tensor(k), pt.as_tensor(n), *bb.log_curve(eta, c), log_delta, pt.as_tensor(log_coef),
        levels=pt.as_tensor(np.arange(n.max() + 1.0)))
    return [pytensor.function([eta, c, log_delta],
                              [out, *pytensor.grad(out.sum(), [eta, c, log_delta])], mode=m)
            for out, m in ((cells, MODES[mode]), (gamma_form, None))]


@functools.cache
def _scipy_case(mode):
    """The cells and the two forms' functions, compiled once per mode for every phi (Numba's
    compilation of a graph with the counts as constants took 17-19 s per case)."""
    cells = _cells(np.random.default_rng(10))
    return cells, _functions(*cells, mode)


# scipy's betabinom takes gammaln differences of arguments near phi, which lose about
# log10(phi) of their 16 digits; the tolerance follows that, not our result
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("phi", "atol"), [(0.05, 1e-12), (0.3, 1e-12), (2.0, 1e-12),
                                           (50.0, 1e-12), (1e4, 1e-9)])
def test_cells_are_scipys_beta_binomial_and_their_gradient_the_gammaln_forms(mode, phi, atol):
    if mode == "jax":
        pytest.importorskip("jax")
    (k, n, log_coef), (op, gamma_form) = _scipy_case(mode)
    rng = np.random.default_rng(0)
    eta, c = rng.normal(0.0, 2.0, k.shape), rng.uniform(0.0, 0.3, k.shape[1])
    c[0] = 0.0  # no floor (the 2PL and Rasch beta-binomials)
    got = [np.array(v) for v in op(eta, c, -np.log(phi))]
    want = gamma_form(eta, c, -np.log(phi))
    p = c + (1 - c) * special.expit(eta)
    np.testing.assert_allclose(got[0], stats.betabinom.logpmf(k, n, p * phi, (1 - p) * phi),
                               rtol=1e-12, atol=atol)
    # the gammaln form's log c has no derivative at c = 0: there a one-sided difference (JAX
    # differentiates that form too, so it has none either: c = 0 is only ever a constant)
    if mode == "jax":
        assert np.isnan(got[2][0])
    else:
        difference = (op(eta, c + np.eye(9)[0] * 1e-7, -np.log(phi))[0][:, 0].sum()
                      - got[0][:, 0].sum()) / 1e-7
        assert got[2][0] == pytest.approx(difference, rel=1e-5)
    got[2][0] = want[2][0] = 0.0
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(w).max()))


@pytest.mark.parametrize("mode", list(MODES))
def test_cells_tend_to_the_binomial_and_stay_finite_far_out(mode):
    if mode == "jax":
        pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    k, n, log_coef = _cells(rng, L=4, M=6)
    op, _ = _functions(k, n, log_coef, mode)
    eta, c = rng.normal(0.0, 2.0, k.shape), np.zeros(6)
    # at phi = 1e12 the exact difference from the binomial is below sum_i i / (p phi) < 1e-7
    np.testing.assert_allclose(op(eta, c, -np.log(1e12))[0],
                               stats.binom.logpmf(k, n, special.expit(eta)), rtol=0, atol=1e-7)
    # logits beyond e^700, with and without a floor: finite, and the sums over trials
    # written out from the stable log p and log q
    eta = np.where(rng.random(k.shape) < 0.5, 800.0, -800.0)
    for floor in (0.0, 0.05):
        c = np.full(6, floor)
        got = op(eta, c, np.log(0.5))
        # d/dc at c = 0 is infinite where p underflows to 0 (c = 0 is only ever a constant)
        checked = got if floor > 0 else [got[0], got[1], got[3]]
        assert all(np.isfinite(g).all() for g in checked)
        # atol: a cell certain at these logits has log-pmf 0, which no relative tolerance
        # admits one ulp from (2.2e-16 from NumPy's AVX2 log1p on an AMD EPYC, 2026-12-04)
        np.testing.assert_allclose(got[0], _written_out(k, n, eta, c, 0.5, log_coef),
                                   rtol=1e-13, atol=1e-14)


def _written_out(k, n, eta, c, delta, log_coef):
    """log C(n, k) + sum_{i<k} log(p + i delta) + sum_{i<n-k} log(q + i delta)
    - sum_{i<n} log(1 + i delta), term by term, log p and log q from logaddexp."""
    with np.errstate(divide="ignore"):
        log_p = np.logaddexp(np.log(c), np.log1p(-c) - np.logaddexp(0.0, -eta))
    log_q = np.log1p(-c) - np.logaddexp(0.0, eta)
    out = log_coef.copy()
    for index in np.ndindex(k.shape):
        hits, misses = int(k[index]), int(n[index] - k[index])
        for count, log_base in ((hits, log_p[index]), (misses, log_q[index])):
            if count:
                out[index] += log_base + sum(np.log(np.exp(log_base) + i * delta)
                                             for i in range(1, count))
        out[index] -= sum(np.log1p(i * delta) for i in range(1, int(n[index])))
    return out


def test_the_derivative_outputs_are_not_differentiable_and_shapes_are_checked():
    k, n, log_coef = _cells(np.random.default_rng(2))
    eta, c, log_delta = pt.matrix("eta"), pt.vector("c"), pt.scalar("log_delta")
    outputs = bb.BetaBinomialCells(12)(k, n, eta, c, log_delta, log_coef)
    with pytest.raises(NotImplementedError, match="not differentiable"):
        pytensor.grad(outputs[1].sum(), eta)
    with pytest.raises(ValueError, match="BetaBinomialCells takes"):
        bb.BetaBinomialCells(12)(k, n, eta, c[None, :], log_delta, log_coef)


def test_many_trials_use_the_gammaln_form_with_the_same_density():
    rng = np.random.default_rng(3)
    k, n, log_coef = _cells(rng, L=5, M=6, most=80)
    n[n <= bb.MAX_STEPPED_TRIALS] += bb.MAX_STEPPED_TRIALS
    k = np.minimum(k, n)
    log_coef = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    op, gamma_form = _functions(k, n, log_coef, "numba")
    eta, c = rng.normal(0.0, 2.0, k.shape), rng.uniform(0.0, 0.3, 6)
    for phi in (0.3, 2.0, 50.0):
        np.testing.assert_allclose(gamma_form(eta, c, -np.log(phi))[0],
                                   op(eta, c, -np.log(phi))[0], rtol=1e-10, atol=1e-10)


def _ops(model):
    return {type(node.op) for node in pytensor.graph.traversal.applys_between(
        model.value_vars, [model.logp()])}


def test_the_model_picks_the_form_by_trials_per_cell():
    rng = np.random.default_rng(4)
    few = ResponseData(rng.integers(0, 2, size=(4, 6, 10)))
    many = ResponseData(rng.integers(0, 2, size=(4, 6, 40)))
    assert bb.BetaBinomialSlopeCells in _ops(get_model("3pl").build(few))
    assert bb.BetaBinomialSlopeCells not in _ops(get_model("3pl").build(many))


@pytest.mark.parametrize("shared", [False, pytest.param(True, marks=pytest.mark.extended(
    "a second 3PL pair's rewrites, 35-40 s in make test on a cold cache; the shared run's "
    "cells are the same Op's, whose values test_cells_are_scipys_beta_binomial_... holds"))])
def test_the_models_density_is_the_gammaln_forms(shared, monkeypatch, numpy_graphs):
    """The 3PL's log-density and gradient with the Op equal those of the same model built on
    the gammaln form, at random points: with per-model prior runs (a second (L, M) table of
    cells) and a free floor, and with a shared reference run ((M,) cells) and no floor (a
    constant c = 0, as in the beta-binomial Rasch and 2PL)."""
    rng = np.random.default_rng(5)
    R = (rng.random((4, 8, 6)) < 0.5).astype(int)
    R[:, 2], R[:, 5] = 0, 1
    R0 = (rng.random((4, 8, 2)) < 0.5).astype(int)
    data = ResponseData(R, R0=R0[0] if shared else R0)
    options = {"kind": "3pl", "use_R0": True, **({"fix_guessing": 0.0} if shared else {})}
    model = irt.build(data, **options)
    assert bb.BetaBinomialSlopeCells in _ops(model)
    monkeypatch.setattr(bb, "MAX_STEPPED_TRIALS", 0)
    gamma_form = irt.build(data, **options)
    assert bb.BetaBinomialSlopeCells not in _ops(gamma_form)
    functions = [pytensor.function(m.value_vars, [m.logp(), *pytensor.grad(m.logp(), m.value_vars)])
                 for m in (model, gamma_form)]
    start = model.initial_point()
    for _ in range(5):
        point = [rng.normal(0, 1.5, np.shape(start[v.name])) for v in model.value_vars]
        got, want = (f(*point) for f in functions)
        assert got[0] == pytest.approx(want[0], rel=1e-11)
        for g, w in zip(got[1:], want[1:], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-8)


def _slope_functions(k, n, log_coef, mode):
    """The slope Ops' cells, the gradient of their sum and of a weighted sum in (theta, a,
    beta, c, log delta); and the same of BetaBinomialCells at eta = a theta + beta."""
    theta, a, beta = pt.vector("theta"), pt.vector("a"), pt.vector("beta")
    c, log_delta, weight = pt.vector("c"), pt.scalar("log_delta"), pt.matrix("weight")
    wrt = [theta, a, beta, c, log_delta]
    most = int(n.max())
    by_slope = bb.BetaBinomialSlopeCells(most)(k, n, theta, a, beta, c, log_delta, log_coef)[0]
    at_eta = bb.beta_binomial_cells(k.astype(float), n.astype(float),
                                    theta[:, None] * a + beta, c, log_delta, log_coef,
                                    max_trials=most)
    return [pytensor.function([*wrt, weight], [
        cells, cells.sum(), *pytensor.grad(cells.sum(), wrt),
        *pytensor.grad((weight * cells).sum(), wrt)], mode=MODES[mode], on_unused_input="ignore")
        for cells in (by_slope, at_eta)]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("L", "M", "most"), [(7, 9, 12), (3, 2 * 2048 + 5, 1)])
def test_the_slope_ops_are_the_cells_at_a_theta_plus_beta(mode, L, M, most):
    """BetaBinomialSlopeCells and its one-pass total (counts as int8, not cast) against
    BetaBinomialCells at the logits: cells, their sum and the gradients of the sum and of a
    weighted sum, over several blocks of questions, with and without floors, one trial per
    cell and several, at ordinary and extreme logits; a fit's sum is the total's one node."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng = np.random.default_rng(6)
    k, n, log_coef = _cells(rng, L=L, M=M, most=most)
    k8, n8 = k.astype(np.int8), n.astype(np.int8)
    by_slope, at_eta = _slope_functions(k8, n8, log_coef, mode)
    if mode == "numba":
        total_ops = {type(node.op) for node in by_slope.maker.fgraph.toposort()}
        assert bb.BetaBinomialSlopeTotal in total_ops
    theta, a, beta = rng.normal(0, 1.5, L), np.exp(rng.normal(0, 0.5, M)), rng.normal(0, 2, M)
    c = rng.uniform(0.0, 0.3, M)
    c[0] = 0.0  # no floor
    weight = rng.normal(size=(L, M))
    far_beta, far_c = beta.copy(), c.copy()
    far_c[1:3] = 1e-310, 1e-250  # a subnormal floor, a tiny one
    far_beta[1:5] = -800.0, -800.0, 800.0, -40.0  # p subnormal or zero, q rounding to 0
    for log_delta in (np.log(0.5), -np.log(1e4)):
        got, want = ([np.asarray(v) for v in f(theta, a, beta, c, log_delta, weight)]
                     for f in (by_slope, at_eta))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-13)
        assert float(got[1]) == pytest.approx(float(want[1]), rel=1e-12)
        for g, w in zip(got[2:], want[2:], strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(w).max()))
        # far out the derivatives overflow (d/dc of log p at a subnormal c), alike in both
        got, want = ([np.asarray(v) for v in f(theta, a, far_beta, far_c, log_delta, weight)]
                     for f in (by_slope, at_eta))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-13)
        for g, w in zip(got[2:], want[2:], strict=True):
            np.testing.assert_array_equal(np.isfinite(g), np.isfinite(w))


def test_a_subnormal_floor_is_scored_from_its_log():
    """log p = log(c + (1 - c) logistic(eta)) where c is subnormal and logistic(eta) smaller
    still: the written-out logaddexp, in Numba (the vectorised loop's log needs a normal p)."""
    k = np.array([[1.0, 1.0, 0.0, 3.0]])
    n = np.array([[1.0, 2.0, 1.0, 4.0]])
    log_coef = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    op, _ = _functions(k, n, log_coef, "numba")
    eta = np.array([[-720.0, -740.0, -745.0, -700.0]])
    c = np.array([1e-310, 3e-320, 1e-315, 2e-308])
    np.testing.assert_allclose(op(eta, c, np.log(0.3))[0],
                               _written_out(k, n, eta, c, 0.3, log_coef), rtol=1e-13)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(("L", "M", "most"), [(6, 40, 12), (2, 3 * 2048 + 9, 1)])
def test_the_observed_cells_ops_are_the_whole_tables(mode, L, M, most):
    """ObservedBetaBinomialCells and its total over the observed cells (listed row by row)
    against BetaBinomialSlopeCells on the whole table whose other cells have no trials:
    the four tables, the sum, and the gradients of the sum and of a weighted sum; a row with
    several blocks of observed cells; a fit's sum is the observed total's one node."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng = np.random.default_rng(7)
    k, n, log_coef = _cells(rng, L=L, M=M, most=most)
    n[rng.random(n.shape) < 0.6] = 0
    k = np.minimum(k, n)
    log_coef = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    rows, columns = np.nonzero(n)
    starts = np.concatenate([[0], np.cumsum(np.count_nonzero(n, axis=1))])
    theta, a, beta = pt.vector("theta"), pt.vector("a"), pt.vector("beta")
    c, log_delta, weight = pt.vector("c"), pt.scalar("log_delta"), pt.matrix("weight")
    wrt = [theta, a, beta, c, log_delta]
    k8, n8 = k.astype(np.int8), n.astype(np.int8)
    observed = bb.ObservedBetaBinomialCells(most)(k8, n8, theta, a, beta, c, log_delta,
                                                  log_coef[rows, columns], starts, columns)
    whole = bb.BetaBinomialSlopeCells(most)(k8, n8, theta, a, beta, c, log_delta, log_coef)
    functions = [pytensor.function(
        [*wrt, weight], [*outputs, outputs[0].sum(), *pytensor.grad(outputs[0].sum(), wrt),
                         *pytensor.grad((weight * outputs[0]).sum(), wrt)], mode=MODES[mode])
        for outputs in (observed, whole)]
    if mode == "numba":
        assert bb.ObservedBetaBinomialTotal in {
            type(node.op) for node in functions[0].maker.fgraph.toposort()}
    point = (rng.normal(0, 1.5, L), np.exp(rng.normal(0, 0.5, M)), rng.normal(0, 2, M),
             rng.uniform(0.0, 0.3, M), np.log(0.4), rng.normal(size=(L, M)))
    got, want = ([np.asarray(v) for v in f(*point)] for f in functions)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-11 * max(1.0, np.abs(w).max()))
    with pytest.raises(ValueError, match="ObservedBetaBinomialCells takes"):
        bb.ObservedBetaBinomialCells(most)(k8, n8, theta, a, beta, c, log_delta,
                                           log_coef[rows, columns], starts, columns + 0.5)
