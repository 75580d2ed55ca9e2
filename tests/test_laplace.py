"""The Laplace approximations of the binomial Rasch and 2PL (issue 47's CPU route at
leaderboard scale): their gradients and Hessian blocks against finite differences, the
Schur-complement covariance of the draws against the dense Hessian's inverse, the 2PL's
draws moved to the NUTS model's convention, the checks a fit scores with them, and the
refusals.  Against NUTS on real sets: tests/test_models_real.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

import bayesrank as br
from bayesrank.errors import DataError
from bayesrank.inference import laplace as LP

pytestmark = pytest.mark.xdist_group("laplace")


def _cells(L=12, M=60, trials=3, seed=0):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1.2, L), rng.normal(0, 1.2, M)
    n = np.full((L, M), float(trials))
    k = rng.binomial(trials, 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
    return k, n


def _layout(layout, k, n, seed=30):
    """The search's cells: the whole table, or, with a third of the cells emptied, the
    whole table or its observed cells."""
    if layout == "table":
        return LP._Table(k, n)
    empty = np.random.default_rng(seed).random(k.shape) < 0.35
    k, n = np.where(empty, 0.0, k), np.where(empty, 0.0, n)
    return LP._Table(k, n) if layout == "table with missing cells" else LP._ObservedCells(k, n)


LAYOUTS = ["table", "table with missing cells", "observed cells"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradient_is_that_of_the_log_density(layout):
    cells = _layout(layout, *_cells(5, 9))
    x = np.random.default_rng(1).normal(0, 0.7, 14)
    value = lambda x: LP._negative_log_posterior(x, cells, 9.0, 1.7)[0]  # noqa: E731
    numeric = approx_fprime(x, value, 1e-7)
    np.testing.assert_allclose(LP._negative_log_posterior(x, cells, 9.0, 1.7)[1], numeric,
                               rtol=1e-5, atol=1e-5)
    if layout == "observed cells":  # the same density as the table with those cells empty
        table = _layout("table with missing cells", *_cells(5, 9))
        for got, want in zip(LP._negative_log_posterior(x, cells, 9.0, 1.7),
                             LP._negative_log_posterior(x, table, 9.0, 1.7), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        curvatures = [LP._Rasch.curvature(x, c, 9.0, 1.7) for c in (cells, table)]
        for name in ("h_theta", "B"):
            np.testing.assert_allclose(*(getattr(c, name) for c in curvatures), rtol=1e-12)
        np.testing.assert_allclose(curvatures[0].coupling(cells), curvatures[1].coupling(table),
                                   rtol=1e-12)


def test_scale_step_maximises_the_expected_log_density():
    squares, M = 37.0, 20
    u = LP._scale_step(squares, M)
    objective = lambda u: -M / 2 * np.log(u) - squares / (2 * u) - u / (2 * 2.5**2)  # noqa: E731
    assert objective(u) > max(objective(u * 1.001), objective(u / 1.001))


def test_draws_have_the_schur_complement_covariance_of_the_dense_hessian():
    """theta's draws: mean the mode (which zeroes the gradient) and covariance the (theta,
    theta) block of the inverse of the full (L + M) Hessian; b given theta as derived."""
    k, n = _cells()
    L, M = k.shape
    informed = np.ones(L, bool)
    out = LP.rasch_laplace(k, n, informed, 3.0, 200_000, np.random.default_rng(2))
    sigma2 = out["sigma_b"] ** 2
    theta, b = out["theta"], out["b"]
    # the mode, from the draws' mean (the centring is a translation of theta and b alike)
    hat = np.concatenate([theta.mean(0), b.mean(0)])
    # dense Hessian at the mode (centring removed: the shift is unidentified by the cells)
    rough = LP.rasch_laplace(k, n, informed, 3.0, 1, np.random.default_rng(3))
    assert rough["sigma_b"] == pytest.approx(out["sigma_b"], rel=1e-12)
    x = _mode(k, n, sigma2)
    p = 1 / (1 + np.exp(-(x[:L, None] - x[None, L:])))
    W = n * p * (1 - p)
    H = np.block([[np.diag(W.sum(1) + 1 / 9.0), -W], [-W.T, np.diag(W.sum(0) + 1 / sigma2)]])
    cov = np.linalg.inv(H)
    centre = np.concatenate([np.full((L, L), 1.0 / L), np.full((M, L), 1.0 / L)])
    # draws are (theta, b) - mean(theta): covariance C cov C^T with C = I - centre rows
    C = np.eye(L + M) - np.hstack([centre, np.zeros((L + M, M))])
    expected = C @ cov @ C.T
    got = np.cov(np.hstack([theta, b]).T)
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    assert np.abs(got - expected).max() / scale.max() < 0.02
    # the draws' mean is the mode found here independently, to Monte Carlo error
    np.testing.assert_allclose(hat, C @ x, atol=4 * np.sqrt(np.diag(expected).max() / 200_000))


def _mode(k, n, sigma2):
    from scipy.optimize import minimize

    L, M = k.shape
    found = minimize(LP._negative_log_posterior, np.zeros(L + M),
                     args=(LP._Table(k, n), 9.0, sigma2),
                     jac=True, method="L-BFGS-B",
                     options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 10_000})
    return found.x


def test_fit_with_laplace_gives_iid_draws_of_the_centred_abilities():
    rng = np.random.default_rng(4)
    R = (rng.random((8, 50, 2)) < rng.random((8, 1, 1))).astype(int)
    post = br.fit(br.ResponseData(R), "rasch", sampler="laplace", draws=300, chains=2,
                  random_seed=5, progressbar=False)
    theta = post.idata["posterior"]["theta"]
    assert theta.sizes == {"chain": 2, "draw": 300, "llm": 8}
    np.testing.assert_allclose(theta.mean("llm"), 0.0, atol=1e-12)  # every model informed
    assert post.sampler == "laplace"
    assert (post.diagnostics.loc[post.diagnostics.index.str.startswith("theta"),
                                 "ess_bulk"] == 600).all()
    # the conservative ranking reads the draws: each model's score is its 5% quantile
    lower = np.quantile(theta.values.reshape(-1, 8), 0.05, axis=0)
    np.testing.assert_allclose(post.rank(by="lcb", q=0.05).scores, lower, rtol=1e-12)


@pytest.mark.parametrize(("model", "options", "message"), [
    ("3pl", {}, "Rasch and 2PL posteriors only"),
    ("rasch", {"likelihood": "beta_binomial"}, "binomial Rasch and 2PL without prior runs"),
    ("2pl", {"use_R0": True}, "binomial Rasch and 2PL without prior runs"),
])
def test_laplace_refuses_other_models_in_one_line(model, options, message):
    rng = np.random.default_rng(6)
    R, R0 = ((rng.random((5, 20, n)) < 0.5).astype(int) for n in (2, 1))
    with pytest.raises(DataError, match=message) as caught:
        br.fit(br.ResponseData(R, R0=R0), model, sampler="laplace", progressbar=False,
               **options)
    assert "\n" not in str(caught.value)


def test_a_laplace_fit_checks_and_scores_its_own_draws():
    """The PPC replicates at the draws' theta and b (its replicated accuracies centre on the
    observed ones), and PSIS-LOO scores every cell at them: its lppd (elpd + p_loo) is the
    log mean likelihood of each cell over the draws, computed here with scipy.  (Against
    NUTS on real sets: tests/test_models_real.py.)"""
    from scipy.special import logsumexp
    from scipy.stats import binom

    rng = np.random.default_rng(7)
    theta, b = rng.normal(0, 1, 20), rng.normal(0, 1, 60)
    R = (rng.random((20, 60, 2)) < 1 / (1 + np.exp(-(theta[:, None] - b)))[..., None])
    data = br.ResponseData(R.astype(int))
    post = br.fit(data, "rasch", sampler="laplace", random_seed=8, progressbar=False)
    check = post.ppc(num_draws=200, random_seed=9)
    rows = check.statistics.query("statistic == 'accuracy'")
    assert (rows["p_value"].between(0.01, 0.99)).all()
    draws = post.idata["posterior"]
    t, d = (draws[v].values.reshape(-1, draws[v].shape[-1]) for v in ("theta", "b"))
    p = 1 / (1 + np.exp(-(t[:, :, None] - d[:, None, :])))
    k, n = data.reductions.successes, data.reductions.trials
    lppd = (logsumexp(binom.logpmf(k, n, p), axis=0) - np.log(t.shape[0])).sum()
    loo = post.loo()
    assert float(loo["elpd"]) + float(loo["p"]) == pytest.approx(lppd, rel=1e-9)


#: the 2PL's pieces with every one of _two_pl_cells' seven models informed
TWO_PL = LP._TwoPL(np.ones(7))


def _two_pl_cells(L=7, M=12, trials=4, seed=10):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(0, 1, L), rng.normal(0, 1, M), np.exp(rng.normal(0, 0.4, M))
    n = np.full((L, M), float(trials))
    return rng.binomial(trials, 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float), n


def _dense(curvature, cells):
    """The full Hessian from its blocks (the abilities' block, then each question's
    parameters, as x lays them out)."""
    U = curvature.coupling(cells)
    L, M, q = U.shape
    H = np.zeros((L + M * q, L + M * q))
    H[:L, :L] = curvature.abilities_block()
    H[:L, L:] = U.reshape(L, M * q)
    H[L:, :L] = H[:L, L:].T
    for m in range(M):
        H[L + m * q:L + (m + 1) * q, L + m * q:L + (m + 1) * q] = curvature.B[m]
    return H


@pytest.mark.parametrize("layout", LAYOUTS)
def test_two_pl_gradient_and_hessian_blocks_are_the_log_densitys(layout):
    """The 2PL's gradient against finite differences of its value, and its Hessian blocks
    against finite differences of the gradient (the abilities' block is diagonal, the
    questions do not couple)."""
    cells = _layout(layout, *_two_pl_cells(7, 5))
    x = np.random.default_rng(11).normal(0, 0.6, 7 + 1 + 10)  # z, mu, items
    value = lambda x: TWO_PL.value(x, cells, 9.0, 1.7)  # noqa: E731
    np.testing.assert_allclose(value(x)[1], approx_fprime(x, lambda x: value(x)[0], 1e-7),
                               rtol=1e-5, atol=1e-5)
    numeric = np.array([(value(x + h)[1] - value(x - h)[1]) / 2e-6
                        for h in 1e-6 * np.eye(x.size)])
    np.testing.assert_allclose(_dense(TWO_PL.curvature(x, cells, 9.0, 1.7), cells), numeric,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("model", ["rasch", "2pl"])
def test_schur_complement_and_regression_are_the_dense_hessians(model, layout):
    """The abilities' precision is the inverse of the dense Hessian's inverse's abilities'
    block, and each question's mean shift given the abilities B_m^-1 U_m^T d, on every
    layout: the observed cells' sparse products are the table's dense ones."""
    posterior, cells = ((LP._Rasch, _layout(layout, *_cells(5, 9))) if model == "rasch" else
                        (TWO_PL, _layout(layout, *_two_pl_cells(7, 5))))
    L, M = cells.shape
    x = np.random.default_rng(21).normal(0, 0.6, L + posterior.extra + M * posterior.q)
    curvature = posterior.curvature(x, cells, 9.0, 1.7)
    covariance = np.linalg.inv(curvature.B)
    regression = LP._Regression(curvature, cells, covariance)
    n = L + posterior.extra
    np.testing.assert_allclose(np.linalg.inv(regression.precision),
                               np.linalg.inv(_dense(curvature, cells))[:n, :n], rtol=1e-9,
                               atol=1e-12)
    shifts = list(regression.shifts(np.eye(n), 2))  # two questions a block
    assert [at.start for at, _ in shifts] == list(range(0, M, 2))
    got = np.concatenate([shift for _, shift in shifts], axis=1)
    want = np.einsum("mij,lmj->lmi", covariance, curvature.coupling(cells))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("block_values", [LP._BLOCK_VALUES, 5 * 200_000 * 2])
def test_two_pl_draws_have_the_covariance_of_the_dense_hessian_at_the_mode(
        monkeypatch, block_values):
    """Before the move to the NUTS model's convention: the draws' mean is the mode (its
    gradient zero) and their covariance the inverse of the full Hessian there, whether the
    questions' draws are made at once or five questions at a time."""
    monkeypatch.setattr(LP, "_BLOCK_VALUES", block_values)
    k, n = _two_pl_cells()
    L, M = k.shape
    theta, items, sigma = LP._laplace(TWO_PL, LP._Table(k, n), 3.0, 200_000,
                                      np.random.default_rng(12))
    items = np.moveaxis(items, 0, -1)  # (samples, M, q), as x lays them out
    x = np.concatenate([theta.mean(0), items.mean(0).ravel()])
    draws = np.hstack([theta, items.reshape(theta.shape[0], -1)])
    # the mode, found independently by exact-Hessian trust-region Newton
    from scipy.optimize import minimize

    args = (LP._Table(k, n), 9.0, sigma**2)
    hessian = lambda x, *_: _dense(TWO_PL.curvature(x, *args), args[0])  # noqa: E731
    mode = minimize(TWO_PL.value, x, args=args, jac=True, hess=hessian,
                    method="trust-exact", options={"gtol": 1e-8}).x
    for _ in range(3):  # Newton's own steps, to rounding
        mode = mode - np.linalg.solve(hessian(mode), TWO_PL.value(mode, *args)[1])
    assert np.abs(TWO_PL.value(mode, *args)[1]).max() < 1e-8
    cov = np.linalg.inv(hessian(mode))
    sd = np.sqrt(np.diag(cov))
    assert np.abs(x - mode).max() < 5 * sd.max() / np.sqrt(200_000)
    got = np.cov(draws.T)
    assert np.abs(got - cov).max() / np.outer(sd, sd).max() < 0.02


def test_two_pl_draws_are_moved_along_the_likelihoods_symmetries():
    """Each draw is moved to the NUTS 2PL's convention (informed log a summing to zero,
    informed abilities to zero) without changing a single cell's logit a theta + beta."""
    k, n = _two_pl_cells()
    informed, questions = np.ones(7, bool), np.ones(12, bool)
    questions[[0, 5]] = False
    raw_theta, items, _ = LP._laplace(TWO_PL, LP._Table(k, n), 3.0, 50,
                                      np.random.default_rng(13))
    items = np.moveaxis(items, 0, -1)
    out = LP.two_pl_laplace(k, n, informed, questions, 3.0, 50, np.random.default_rng(13))
    np.testing.assert_allclose(np.log(out["a"][:, questions]).sum(1), 0.0, atol=1e-12)
    np.testing.assert_allclose(out["theta"].mean(1), 0.0, atol=1e-12)
    raw_a, raw_beta = np.exp(items[:, None, :, 0]), items[:, None, :, 1]
    raw = TWO_PL.abilities(raw_theta)[:, :, None] * raw_a + raw_beta
    moved = out["a"][:, None, :] * (out["theta"][:, :, None] - out["b"][:, None, :])
    np.testing.assert_allclose(moved, raw, rtol=1e-12, atol=1e-12)


def test_a_two_pl_laplace_fit_scores_its_own_draws():
    """PSIS-LOO of a 2PL Laplace fit reads the draws' theta, a and b: its lppd (elpd +
    p_loo) is the log mean likelihood of each cell over the draws, computed here with
    scipy; the PPC's replicated accuracies centre on the observed ones."""
    from scipy.special import logsumexp
    from scipy.stats import binom

    k, n = _two_pl_cells(10, 40, 1, seed=14)
    R = (np.arange(1)[None, None, :] < k[..., None]).astype(int)
    post = br.fit(br.ResponseData(R), "2pl", sampler="laplace", draws=250, chains=2,
                  random_seed=15, progressbar=False)
    draws = post.idata["posterior"]
    theta, a, b = (draws[v].values.reshape(500, -1) for v in ("theta", "a", "b"))
    p = 1 / (1 + np.exp(-a[:, None, :] * (theta[:, :, None] - b[:, None, :])))
    lppd = (logsumexp(binom.logpmf(k, n, p), axis=0) - np.log(500)).sum()
    loo = post.loo()
    assert float(loo["elpd"]) + float(loo["p"]) == pytest.approx(lppd, rel=1e-9)
    rows = post.ppc(num_draws=200, random_seed=16).statistics.query("statistic == 'accuracy'")
    assert rows["p_value"].between(0.01, 0.99).all()


@pytest.mark.parametrize("model", ["rasch", "2pl"])
def test_a_laplace_fit_reads_a_table_with_most_cells_missing(model, monkeypatch):
    """With 80% of the cells missing the NUTS model and the Laplace route (search, Schur
    complement, draws) score the observed cells only; the draws are those of the same data
    on the whole table (the threshold forced to 0) to the search's tolerance, and the PPC
    and PSIS-LOO run."""
    import models.likelihoods as likelihoods

    rng = np.random.default_rng(17)
    theta, b = rng.normal(0, 1, 12), rng.normal(0, 1, 80)
    R = (rng.random((12, 80, 1)) < 1 / (1 + np.exp(-(theta[:, None] - b)))[..., None])
    data = br.ResponseData(R.astype(int), mask=rng.random((12, 80, 1)) < 0.2)
    options = {"sampler": "laplace", "draws": 200, "chains": 2, "random_seed": 18,
               "progressbar": False}
    sparse = br.fit(data, model, **options)
    monkeypatch.setattr(likelihoods, "SPARSE_COVERAGE", 0.0)
    whole = br.fit(data, model, **options)
    for name in ("theta", "b", "a")[:3 if model == "2pl" else 2]:  # the Schur complement,
        # the questions' draws given theta: the observed cells' sparse rows, the table's dense
        drawn = [post.idata["posterior"][name].values for post in (sparse, whole)]
        np.testing.assert_allclose(*drawn, rtol=0, atol=1e-6 * drawn[1].std())
    rows = sparse.ppc(num_draws=100, random_seed=19).statistics.query(
        "statistic == 'accuracy'")
    assert rows["p_value"].between(0.005, 0.995).all()
    assert np.isfinite(float(sparse.loo()["elpd"]))
