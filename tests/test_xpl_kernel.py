"""The compiled xPL objective, its derivatives, Newton step and stages against oracles.

Oracles: scipy's binomial log-pmf for the objective, central finite differences for the
gradient and the observed Hessian, the exact expectation for the Fisher information (the
observed curvatures are linear in the counts), a dense KKT solve for the constrained
Newton step, and scipy's minimiser for a whole MAP fit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, special, stats

from bayesrank.baselines.irt import _xpl_kernel as kern
from bayesrank.baselines.irt.xpl_batch import Layout, fit_xpl_batch, kernel_config

LAYOUTS = {
    "1pl_map": Layout("1pl", 1.0, 0.01, 0.1, 0.5, None),
    "2pl_jml": Layout("2pl", None, 0.01, 0.1, 0.5, None),
    "2pl_unpenalised": Layout("2pl", None, 0.0, 0.1, 0.5, None),
    "3pl_map": Layout("3pl", 2.0, 0.01, 0.1, 0.5, None),
    "3pl_fixed_guessing": Layout("3pl", 1.0, 0.01, 0.1, 0.5, 0.2),
}


def _problem(lay: Layout, L=6, M=8, trials=5, seed=0):
    rng = np.random.default_rng(seed)
    q = lay.n_item_params
    theta, v = rng.normal(size=L) * 0.7, rng.normal(size=(M, q)) * 0.5
    k = rng.binomial(trials, 0.5, size=(L, M)).astype(float)
    return theta, v, k, np.full((L, M), float(trials)), np.arange(M), kernel_config(lay)


def _probability(theta, v, lay: Layout, cfg):
    a = np.exp(v[:, 1]) if lay.has_a else np.ones(v.shape[0])
    sig = special.expit(a * (theta[:, None] - v[:, 0]))
    if lay.model != "3pl":
        return sig
    c = lay.upper * special.expit(v[:, 2]) if lay.free_c else np.full(v.shape[0], cfg[4])
    return c + (1 - c) * sig


@pytest.mark.parametrize("name", LAYOUTS)
def test_value_is_the_binomial_negative_log_posterior(name):
    lay = LAYOUTS[name]
    theta, v, k, n, items, cfg = _problem(lay)
    log_binom = stats.binom.logpmf(k, n, _probability(theta, v, lay, cfg))
    log_coef = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    expected = -(log_binom - log_coef).sum()
    if lay.prior_var is not None:
        expected += 0.5 * theta @ theta / lay.prior_var
    if lay.has_a:
        expected += lay.reg_a * v[:, 1] @ v[:, 1]
    if lay.free_c:
        expected += lay.reg_c * v[:, 2] @ v[:, 2]
    got = kern.value(theta, v, k, n, items, cfg, 7.0)
    np.testing.assert_allclose(got, expected / 7.0, rtol=1e-12)


def _flat_gradient(x, lay, k, n, items, cfg):
    L = k.shape[0]
    theta, v = x[:L], x[L:].reshape(k.shape[1], lay.n_item_params)
    a, dc, d2c, cells = kern.cell_derivatives(theta, v, k, n, items, cfg)
    g_u, g_v = kern.gradient(theta, v, items, cfg, 1.0, a, dc, cells)
    return np.r_[g_u, g_v.ravel()], (theta, v, a, dc, d2c, cells)


def _dense(uu, uv, vv):
    """The full Hessian from the block form (diagonal person block, item blocks)."""
    L, M, q = uv.shape
    D = np.zeros((L + M * q, L + M * q))
    D[:L, :L] = np.diag(uu)
    D[:L, L:] = uv.reshape(L, M * q)
    D[L:, :L] = D[:L, L:].T
    for m in range(M):
        D[L + m * q: L + (m + 1) * q, L + m * q: L + (m + 1) * q] = vv[m]
    return D


@pytest.mark.parametrize("name", LAYOUTS)
def test_gradient_and_observed_hessian_are_the_derivatives_of_the_value(name):
    lay = LAYOUTS[name]
    theta, v, k, n, items, cfg = _problem(lay, seed=1)
    x = np.r_[theta, v.ravel()]
    L, M, q = theta.size, v.shape[0], v.shape[1]

    def f(y):
        return kern.value(y[:L], y[L:].reshape(M, q), k, n, items, cfg, 1.0)

    grad, (_, _, a, dc, d2c, cells) = _flat_gradient(x, lay, k, n, items, cfg)
    np.testing.assert_allclose(grad, optimize.approx_fprime(x, f, 1e-7), atol=2e-5)
    observed = _dense(*kern.hessian(theta, items, cfg, 1.0, a, dc, d2c, cells, True,
                                    np.ones(M, dtype=bool)))
    h = 1e-6
    numeric = np.column_stack([
        (_flat_gradient(x + h * e, lay, k, n, items, cfg)[0]
         - _flat_gradient(x - h * e, lay, k, n, items, cfg)[0]) / (2 * h)
        for e in np.eye(x.size)])
    np.testing.assert_allclose(observed, numeric, atol=1e-6)


@pytest.mark.parametrize("name", LAYOUTS)
def test_fisher_information_is_the_observed_hessian_at_the_expected_counts(name):
    lay = LAYOUTS[name]
    theta, v, k, n, items, cfg = _problem(lay, seed=2)
    every = np.ones(v.shape[0], dtype=bool)

    def curvature(counts, observed):
        a, dc, d2c, cells = kern.cell_derivatives(theta, v, counts, n, items, cfg)
        return _dense(*kern.hessian(theta, items, cfg, 1.0, a, dc, d2c, cells, observed,
                                    every))

    expected_counts = n * _probability(theta, v, lay, cfg)
    np.testing.assert_allclose(curvature(k, False), curvature(expected_counts, True),
                               rtol=1e-10, atol=1e-12)


def test_newton_step_is_the_dense_constrained_solve_with_held_components():
    """Two sum-to-zero constraints (b and log a), a held item and a component at its bound."""
    lay = LAYOUTS["2pl_unpenalised"]
    theta, v, k, n, items, cfg = _problem(lay, L=5, M=7, seed=3)
    a, dc, d2c, cells = kern.cell_derivatives(theta, v, k, n, items, cfg)
    g_u, g_v = kern.gradient(theta, v, items, cfg, 1.0, a, dc, cells)
    uu, uv, vv = kern.hessian(theta, items, cfg, 1.0, a, dc, d2c, cells, False,
                              np.ones(7, dtype=bool))
    fixed = np.zeros((7, 2), dtype=bool)
    fixed[2, 1] = True  # log a of item 2 held (at a bound)
    live = np.array([0, 1, 2, 3, 5, 6])  # item 4 held out of the problem
    fixed[4] = True
    du, dv, ok = kern.newton_step(g_u, g_v, uu, uv, vv, fixed, np.array([0, 1]), live, False)
    assert ok
    free = np.r_[np.ones(5, dtype=bool), ~fixed.ravel()]
    D = _dense(uu, uv, vv)[np.ix_(free, free)]
    E = np.zeros((free.sum(), 2))
    free_v = ~fixed.ravel()
    E[5:, 0] = (np.arange(14) % 2 == 0)[free_v]  # difficulties
    E[5:, 1] = (np.arange(14) % 2 == 1)[free_v]  # log discriminations
    kkt = np.block([[D, E], [E.T, np.zeros((2, 2))]])
    rhs = -np.r_[g_u, g_v.ravel()][free]
    sol = np.linalg.solve(kkt, np.r_[rhs, 0.0, 0.0])
    np.testing.assert_allclose(du, sol[:5], atol=1e-10)
    np.testing.assert_allclose(dv.ravel()[free_v], sol[5:-2], atol=1e-10)
    assert np.all(dv[fixed] == 0.0)
    np.testing.assert_allclose(dv[live, 0].sum(), 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ["1pl_map", "3pl_map"])
def test_a_map_fit_is_scipys_constrained_minimum(name):
    """The whole staged fit against scipy's minimiser with b_M = -sum(b_1..b_M-1)."""
    lay = LAYOUTS[name]
    rng = np.random.default_rng(4)
    L, M, q = 6, 10, lay.n_item_params
    truth = rng.normal(size=L)
    k = rng.binomial(20, special.expit(truth[:, None] - rng.normal(size=M)))
    k[:, 0] = 0  # an uninformative item: held out, its count adds nothing
    n = np.full((L, M), 20.0)
    fit = fit_xpl_batch(k[None].astype(float), n[None], lay, 500)
    assert fit.errors[0] is None and not fit.unconverged[0]
    keep = np.flatnonzero(fit.keep[0])
    cfg = kernel_config(lay)

    def unpack(x):
        theta, rest = x[:L], x[L:].reshape(keep.size, q)
        v = np.zeros((M, q))
        v[keep] = rest
        v[keep[-1], 0] = -rest[:-1, 0].sum()
        return theta, v

    def f(x):
        theta, v = unpack(x)
        return kern.value(theta, v, k.astype(float), n, keep, cfg, 1.0)

    start = np.zeros(L + keep.size * q)
    best = optimize.minimize(f, start, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000})
    theta, v = unpack(best.x)
    np.testing.assert_allclose(fit.theta[0], theta, atol=2e-5)
    np.testing.assert_allclose(fit.v[0][keep], v[keep], atol=5e-5)


def test_a_stage_stalls_only_where_its_objective_is_flat():
    """STALLED: no step decreased the objective, or FLAT_STEPS steps in a row barely did.

    JML 2PL fits of single-trial 10 x 30 tensors crawl along flat ridges.  Each stage that
    ends STALLED at iteration T is rerun to T - 1 iterations (no step at T: the same
    objective) or, otherwise, to T - FLAT_STEPS iterations, after which it gained at most
    FLAT_STEPS x FLAT_GAIN x max(1, |f|).  Both kinds of stop occur (the first without a
    ridge on log a, the second with the default one).
    """
    seen = {"no step": 0, "flat": 0}
    for lay in (LAYOUTS["2pl_unpenalised"], LAYOUTS["2pl_jml"]):
        cfg, rng = kernel_config(lay), np.random.default_rng(5)
        for _ in range(60):
            logits = rng.normal(size=10)[:, None] - rng.normal(size=30)
            k = (rng.random((10, 30)) < special.expit(logits)).astype(float)
            keep = (k.sum(0) > 0) & (k.sum(0) < 10)
            n = np.broadcast_to(np.where(keep, 1.0, 0.0), k.shape).copy()
            args = (np.where(keep, k, 0.0), n, keep, n.sum(), np.zeros(10), np.zeros((30, 2)),
                    cfg)
            _, _, value, n_iter, status = kern.stage(*args, 500)
            if status != kern.STALLED or n_iter <= kern.FLAT_STEPS:
                continue
            if kern.stage(*args, int(n_iter) - 1)[2] == value:
                seen["no step"] += 1
                continue
            _, _, before, _, early = kern.stage(*args, int(n_iter) - kern.FLAT_STEPS)
            assert early == kern.MAX_ITER
            assert 0 <= before - value <= kern.FLAT_STEPS * kern.FLAT_GAIN * max(1, abs(value))
            seen["flat"] += 1
    assert min(seen.values()) >= 1, seen


def test_batched_fits_do_not_depend_on_the_number_of_threads(monkeypatch):
    from bayesrank.baselines.irt import xpl_batch

    rng = np.random.default_rng(6)
    k = rng.binomial(1, 0.5, size=(40, 8, 20)).astype(float)
    fits = []
    for workers in (1, 3):
        monkeypatch.setattr(xpl_batch, "worker_threads", lambda w=workers: w)
        fits.append(fit_xpl_batch(k, np.ones_like(k), LAYOUTS["3pl_map"], 500))
    np.testing.assert_array_equal(fits[0].theta, fits[1].theta)
    np.testing.assert_array_equal(fits[0].n_iter, fits[1].n_iter)
