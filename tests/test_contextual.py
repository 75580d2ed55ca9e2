"""Style control: battles with covariates and the contextual Bradley-Terry / Davidson.

The oracle is arena-rank's ``ContextualBradleyTerry`` (its maximum likelihood, with its
coefficient penalty off): on simulated battles with known coefficients the posterior
means under weak priors are within Monte Carlo error of its MLE, and both recover the
truth.  arena-rank is a test dependency only (skipped with a reason when absent).
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from _battles import BETA, THETA, simulate_style_battles
from _cells_ops import MODES
from _html_tables import parse
from bayesrank.models import build
from bayesrank.models.fast.battle_cells import BLOCK, BattleCells, BattleCellsTotal
from bayesrank.models.fast.davidson_battles import DavidsonCells, DavidsonCellsTotal
from scipy.special import expit, log_expit, log_softmax

import bayesrank as br
from bayesrank import DataError
from bayesrank.data.pairwise import PairwiseData, from_battles
from bayesrank.errors import CovariatesIgnoredWarning

FIT = {"chains": 2, "draws": 500, "tune": 500, "progressbar": False, "log_likelihood": False}
COVARIATES = ["length", "markdown"]


@pytest.fixture(scope="module")
def style() -> pd.DataFrame:
    return simulate_style_battles(n=40_000, seed=2)


@pytest.fixture(scope="module")
def weak_fit(style):
    """The contextual Bradley-Terry under weak priors (sd 10 on theta and beta)."""
    pairs = from_battles(style, covariates=COVARIATES)
    return br.fit(pairs, "bradley_terry", random_seed=4, scale=10.0, beta_scale=10.0, **FIT)


@pytest.fixture(scope="module")
def small() -> PairwiseData:
    return from_battles(simulate_style_battles(n=1500, tie=0.2, seed=5), covariates=COVARIATES)


def _posterior(post, var: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior mean, sd and Monte Carlo standard error of the mean of ``var``."""
    draws = post.idata.posterior.to_dataset()[[var]]
    mean = draws[var].mean(("chain", "draw")).values
    sd = draws[var].std(("chain", "draw")).values
    return mean, sd, np.asarray(az.mcse(draws)[var].values)


def test_posterior_means_match_arena_rank_mle(style, weak_fit):
    """Weak priors, 40,000 battles: |posterior mean - arena-rank's MLE| <= 4 MCSE for every
    strength and coefficient (the mean-mode gap of the logistic likelihood, O(1/n), is a
    fraction of the MCSE at this size)."""
    ctx = pytest.importorskip("arena_rank.models.contextual_bradley_terry",
                              reason="arena-rank (the test oracle) is not installed")
    from arena_rank.utils.data_utils import ContextualPairDataset

    # the same battles, each covariate as the difference x_a - x_b, neither reweighted
    # nor normalised, and no L2 penalty on the coefficients: plain maximum likelihood
    features = style[["model_a", "model_b", "winner"]].assign(
        length=style.length_a - style.length_b, markdown=style.markdown_a - style.markdown_b)
    dataset = ContextualPairDataset.from_pandas(features, feature_cols=COVARIATES,
                                                reweighted=False, normalize_features=False)
    assert list(dataset.competitors) == list(weak_fit.data.models)
    mle = ctx.ContextualBradleyTerry(dataset.n_competitors, len(COVARIATES), reg=0.0)
    mle.fit(dataset)
    ratings = np.asarray(mle.params["ratings"])
    for var, oracle in (("theta", ratings - ratings.mean()),
                        ("beta_per_unit", np.asarray(mle.params["coeffs"]))):
        mean, _, mcse = _posterior(weak_fit, var)
        assert np.all(np.abs(mean - oracle) <= 4 * mcse), (var, mean, oracle, mcse)


def test_true_strengths_and_coefficients_recovered(weak_fit):
    for var, truth in (("theta", THETA - THETA.mean()), ("beta_per_unit", BETA)):
        mean, sd, _ = _posterior(weak_fit, var)
        assert np.all(np.abs(mean - truth) <= 4 * sd), (var, mean, truth, sd)
    assert weak_fit.diagnostics["passed"].all()


def test_leaderboard_ranks_style_controlled_strengths(weak_fit):
    board = weak_fit.leaderboard()
    assert list(board.index) == [f"llm_{k}" for k in np.argsort(-THETA)]
    beta = weak_fit.idata.posterior["beta"]
    assert list(beta.coords["covariate"].values) == COVARIATES
    assert beta.dims[-1] == "covariate"


@pytest.mark.parametrize("model", ["bradley_terry", "davidson"])
def test_prior_predictive_draws(small, model):
    with build(model, small):
        prior = pm.sample_prior_predictive(20, random_seed=0)
    observed = "a_wins" if model == "bradley_terry" else "outcomes"
    draws = prior.prior_predictive[observed].values
    n = int((small.battles.outcome < 2).sum()) if model == "bradley_terry" else len(small.battles)
    assert draws.shape[-1] == n
    assert set(np.unique(draws)) <= ({0, 1} if model == "bradley_terry" else {0, 1, 2})
    assert prior.prior["beta"].shape[-1] == 2
    hierarchical = build(model, small, hierarchical=True, beta_scale=0.5)
    assert {"sigma", "theta", "beta"} <= {v.name for v in hierarchical.free_RVs}


@pytest.mark.parametrize("mode", ["FAST_COMPILE", "NUMBA"])
@pytest.mark.parametrize(("model", "observed", "total"), [
    ("bradley_terry", "a_wins", "BattleCellsTotal"),
    ("davidson", "outcomes", "DavidsonCellsTotal")])
def test_fast_and_plain_contextual_are_one_model(small, mode, model, observed, total):
    """The fast kernel (NumPy perform, Numba as nutpie runs it) and PyMC's Bernoulli /
    Categorical give the same log-density and gradient; the compiled gradient uses the
    one-pass total."""
    fast, plain = build(model, small), build(model, small, fast=False)
    assert [v.name for v in fast.value_vars] == [v.name for v in plain.value_vars]
    functions = []
    for m in (fast, plain):
        logp = m.logp()
        fn = m.compile_fn([logp, *pytensor.grad(logp, m.value_vars)],
                          inputs=m.value_vars, point_fn=True, mode=mode)
        functions.append(fn)
    ops = {type(node.op).__name__ for node in functions[0].f.maker.fgraph.apply_nodes}
    assert total in ops and total.removesuffix("Total") not in ops
    start = fast.initial_point()
    for seed in range(3):
        rng = np.random.default_rng(seed)
        point = {k: v + 0.5 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
        (lf, *gf), (lp, *gp) = (fn(point) for fn in functions)
        assert float(lf) == pytest.approx(float(lp), rel=1e-10)
        for a, b in zip(gf, gp, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.max(np.abs(b)))
    # battle by battle too: what a pointwise log-likelihood (LOO) reads
    pointwise = [m.compile_logp(vars=[m[observed]], sum=False) for m in (fast, plain)]
    cells = [np.asarray(f(start)[0]) for f in pointwise]
    fitted = small.battles.outcome < 2 if model == "bradley_terry" else small.battles.outcome >= 0
    assert cells[0].shape == (int(fitted.sum()),)
    np.testing.assert_allclose(cells[0], cells[1], rtol=1e-10, atol=1e-13)


def _random_battles(seed: int, outcomes: int, n: int = 257):
    """A generator, the sizes (L, K, n) and n random battles: sides a != b, covariate
    differences z (K, n) and outcomes 0..outcomes-1."""
    rng = np.random.default_rng(seed)
    L, K, n = 5, 3, n
    a = rng.integers(0, L, n)
    b = (a + rng.integers(1, L, n)) % L
    z, outcome = rng.normal(size=(K, n)), rng.integers(0, outcomes, n).astype(np.int8)
    return rng, (L, K, n), (a, b, z, outcome)


@pytest.mark.parametrize("mode", list(MODES))
def test_battle_kernels_match_a_stable_reference(mode):
    """BattleCells and BattleCellsTotal in each back end (NumPy, Numba, JAX) against
    log_expit, at ordinary points and at |eta| far beyond e^x's range."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng, (L, K, n), (a, b, z, y) = _random_battles(6, outcomes=2)
    theta_v, beta_v = pt.vector("theta"), pt.vector("beta")
    cells = BattleCells()(y, a, b, z, theta_v, beta_v)
    total = BattleCellsTotal()(y, a, b, z, theta_v, beta_v)
    fn = pytensor.function([theta_v, beta_v], [*cells, *total], mode=MODES[mode])
    for theta, beta in ((rng.normal(0, 1.5, L), rng.normal(0, 1.0, K)),
                        (np.array([700.0, -700.0, 0.0, 40.0, -3.0]), np.array([1.0, 0.0, -2.0]))):
        eta = theta[a] - theta[b] + beta @ z
        want = np.where(y == 1, log_expit(eta), log_expit(-eta))
        residual = y - expit(eta)
        got_cells, got_residual, got_total, d_theta, d_beta = fn(theta, beta)
        # y eta - softplus(eta) is exact to an ulp of eta (|eta| <= 740 here), not relatively
        np.testing.assert_allclose(got_cells, want, rtol=1e-12, atol=2e-13)
        np.testing.assert_allclose(got_residual, residual, rtol=1e-12, atol=1e-15)
        assert float(got_total) == pytest.approx(want.sum(), rel=1e-13)
        scores = np.bincount(a, residual, L) - np.bincount(b, residual, L)
        np.testing.assert_allclose(d_theta, scores, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(d_beta, z @ residual, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("mode", list(MODES))
def test_davidson_kernels_match_a_stable_reference(mode):
    """DavidsonCells and DavidsonCellsTotal in each back end against scipy's log-softmax of
    (delta / 2, -delta / 2, log nu), at ordinary points and far beyond e^x's range; the
    log-nu score against a central difference of the total."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng, (L, K, n), (a, b, z, o) = _random_battles(7, outcomes=3)
    theta_v, beta_v, nu_v = pt.vector("theta"), pt.vector("beta"), pt.scalar("log_nu")
    cells = DavidsonCells()(o, a, b, z, theta_v, beta_v, nu_v)
    total = DavidsonCellsTotal()(o, a, b, z, theta_v, beta_v, nu_v)
    fn = pytensor.function([theta_v, beta_v, nu_v], [*cells, *total], mode=MODES[mode])
    for theta, beta, log_nu in (
            (rng.normal(0, 1.5, L), rng.normal(0, 1.0, K), -0.6),
            (np.array([1400.0, -1400.0, 0.0, 80.0, -6.0]), np.array([1.0, 0.0, -2.0]), 3.0),
            (rng.normal(0, 1.0, L), rng.normal(0, 1.0, K), -700.0)):
        half = 0.5 * (theta[a] - theta[b] + beta @ z)
        logits = np.stack([half, -half, np.full(n, log_nu)])
        logp = log_softmax(logits, axis=0)
        p = np.exp(logp)
        want = logp[o, np.arange(n)]
        residual = 0.5 * ((o == 0) * 1.0 - (o == 1) - p[0] + p[1])
        got_cells, got_residual, got_tie, got_total, d_theta, d_beta, d_nu = fn(theta, beta,
                                                                              log_nu)
        np.testing.assert_allclose(got_cells, want, rtol=1e-12, atol=4e-13)
        np.testing.assert_allclose(got_residual, residual, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got_tie, (o == 2) - p[2], rtol=1e-12, atol=1e-15)
        assert float(got_total) == pytest.approx(want.sum(), rel=1e-13)
        scores = np.bincount(a, residual, L) - np.bincount(b, residual, L)
        np.testing.assert_allclose(d_theta, scores, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(d_beta, z @ residual, rtol=1e-12, atol=1e-9)
        h = 1e-6
        central = (fn(theta, beta, log_nu + h)[3] - fn(theta, beta, log_nu - h)[3]) / (2 * h)
        assert float(d_nu) == pytest.approx(float(central), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("mode", list(MODES))
def test_summed_kernels_cover_every_block(mode):
    """Over two blocks of battles and part of a third (the Numba sums go block by block),
    each summed Op gives the sum of its elementwise Op's cells and the scores of its
    residuals, in the same back end."""
    if mode == "jax":
        pytest.importorskip("jax")
    for outcomes, cells_op, total_op in ((2, BattleCells, BattleCellsTotal),
                                         (3, DavidsonCells, DavidsonCellsTotal)):
        rng, (L, K, n), (a, b, z, o) = _random_battles(8, outcomes, n=2 * BLOCK + 257)
        inputs = [pt.vector("theta"), pt.vector("beta")] + ([pt.scalar("log_nu")]
                                                            if outcomes == 3 else [])
        cells = cells_op()(o, a, b, z, *inputs)
        total = total_op()(o, a, b, z, *inputs)
        fn = pytensor.function(inputs, [*cells, *total], mode=MODES[mode])
        point = [rng.normal(0, 1.5, L), rng.normal(0, 1.0, K)] + ([-0.6] if outcomes == 3
                                                                  else [])
        got = fn(*point)
        n_cells = len(cells)
        cell, residual = got[0], got[1]
        total_value, d_theta, d_beta = got[n_cells:n_cells + 3]
        assert float(total_value) == pytest.approx(cell.sum(), rel=1e-13)
        scores = np.bincount(a, residual, L) - np.bincount(b, residual, L)
        np.testing.assert_allclose(d_theta, scores, rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(d_beta, z @ residual, rtol=1e-12, atol=1e-11)
        if outcomes == 3:
            assert float(got[-1]) == pytest.approx(got[2].sum(), rel=1e-12)


def test_davidson_fits_ties_with_covariates(small, tmp_path):
    post = br.fit(small, "davidson", random_seed=1, **{**FIT, "draws": 300, "tune": 300})
    assert post.idata.observed_data["outcomes"].shape == (len(small.battles),)
    assert {"beta", "beta_per_unit", "nu"} <= set(post.idata.posterior.data_vars)
    again = br.load_posterior(post.save(tmp_path / "style.nc"))
    assert again.data.covariate_names == tuple(COVARIATES)
    np.testing.assert_array_equal(again.data.battles.covariates, small.battles.covariates)
    assert again.pymc_model is not None and again.leaderboard().equals(post.leaderboard())
    br.write_report(again, tmp_path / "style.html")
    html = (tmp_path / "style.html").read_text()
    assert "covariates held equal (style control)" in html and "length, markdown" in html
    # the style section: each coefficient's posterior mean per unit and P(beta > 0)
    header, *rows = parse(tmp_path / "style.html").tables["style"]
    table = pd.DataFrame(rows, columns=header).set_index("covariate")
    draws = post.idata.posterior
    for k, name in enumerate(COVARIATES):
        per_unit = float(table.loc[name, "beta per unit (mean)"])
        assert per_unit == pytest.approx(draws.beta_per_unit[..., k].values.mean(), abs=1e-4)
        assert np.sign(per_unit) == np.sign(BETA[k])
        positive = (draws.beta[..., k].values > 0).mean()
        assert float(table.loc[name, "P(beta > 0)"]) == pytest.approx(positive, abs=1e-3)


def test_load_reads_covariates_and_rank_says_it_ignores_them(tmp_path, small):
    """br.load(path, covariates=...) is load_battles' reading; the deterministic rules rank
    the outcomes alone and say so; a response tensor refuses covariates in one line."""
    frame = simulate_style_battles(n=300, seed=1)
    frame.to_csv(tmp_path / "battles.csv", index=False)
    read = br.load(tmp_path / "battles.csv", covariates=["length"])
    assert read.covariate_names == ("length",)
    np.testing.assert_array_equal(
        read.battles.covariates,
        br.load_battles(tmp_path / "battles.csv", covariates=["length"]).battles.covariates)
    with pytest.warns(CovariatesIgnoredWarning,
                      match=r"without their covariates \(length, markdown\)"):
        br.rank(small, "bradley_terry")
    np.save(tmp_path / "R.npy", np.ones((2, 3, 1), dtype=np.int8))
    with pytest.raises(br.LoadError, match="covariates apply to pairwise battles") as info:
        br.load(tmp_path / "R.npy", covariates=["length"])
    assert "\n" not in str(info.value)


def test_cli_report_controls_for_covariates(tmp_path, capsys):
    from bayesrank.cli import main

    simulate_style_battles(n=1500, seed=6).to_csv(tmp_path / "battles.csv", index=False)
    out = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "battles.csv"), "--covariates", "length,markdown",
                 "--draws", "200", "--tune", "200", "--chains", "2", "-q", "-o", str(out)]) == 0
    header, *rows = parse(out).tables["style"]
    assert [row[header.index("covariate")] for row in rows] == COVARIATES
    assert "without their covariates" not in capsys.readouterr().err  # said in the section
    assert main(["rank", "--covariates", "length"]) == 2
    assert "--covariates applies to a DATA file" in capsys.readouterr().err


def test_covariate_columns_conventions(tmp_path):
    frame = simulate_style_battles(n=300, seed=1)
    sides = from_battles(frame, covariates=["length"])
    frame.to_csv(tmp_path / "battles.csv", index=False)
    read = br.load_battles(tmp_path / "battles.csv", covariates=["length"])
    np.testing.assert_allclose(read.battles.covariates, sides.battles.covariates, rtol=1e-12)
    difference = from_battles(frame.assign(length=frame.length_a - frame.length_b)
                              .drop(columns=["length_a", "length_b"]), covariates=["length"])
    np.testing.assert_array_equal(sides.battles.covariates, difference.battles.covariates)
    evalica = frame.rename(columns={"model_a": "left", "model_b": "right",
                                    "length_a": "length_left", "length_b": "length_right"})
    evalica["winner"] = evalica["winner"].map({"model_a": "left", "model_b": "right"})
    np.testing.assert_array_equal(from_battles(evalica, covariates=["length"]).battles.covariates,
                                  sides.battles.covariates)
    kept = from_battles(frame.assign(winner=np.where(np.arange(300) % 3, frame.winner, "tie")),
                        covariates=["length"], ties="drop")
    assert kept.battles.covariates.shape == (200, 1)
    assert "covariates length" in repr(sides) and not from_battles(frame).covariate_names


@pytest.mark.parametrize(("change", "covariates", "message"), [
    (lambda f: f.assign(length_a=np.where(np.arange(len(f)) == 7, np.nan, f.length_a)),
     ["length"], "row 7 has nan in covariate column 'length_a'"),
    (lambda f: f, ["tokens"], "no column for covariate 'tokens'"),
    (lambda f: f.assign(markdown_b=f.markdown_a + 2), ["length", "markdown"],
     "covariate 'markdown' has the same difference"),
    (lambda f: f.assign(markdown_a=2 * f.length_a, markdown_b=2 * f.length_b),
     ["length", "markdown"], "linearly dependent"),
    (lambda f: f.assign(length_a=f.length_a.astype(str)), ["length"], "not numbers"),
    (lambda f: f, "length", "must be a list of names"),
    (lambda f: f, [], "names no covariate"),
    (lambda f: f, ["length", "length"], "names a covariate twice"),
    (lambda f: f[f.model_a.isin(["llm_0", "llm_1"]) == f.model_b.isin(["llm_0", "llm_1"])],
     ["length"], "comparison graph is disconnected"),
])
def test_bad_covariates_are_refused(change, covariates, message):
    frame = change(simulate_style_battles(n=400, seed=3))
    with pytest.raises(DataError, match=message):
        from_battles(frame, covariates=covariates)


def test_covariate_options_refused_where_they_cannot_apply(tmp_path):
    counts = tmp_path / "counts.json"
    counts.write_text('{"models": ["a", "b"], "X": [[0, 1]], "Y": [[3, 2, 1]]}')
    with pytest.raises(DataError, match="no per-battle covariates"):
        br.load_battles(counts, covariates=["length"])
    with pytest.raises(ValueError, match="beta_scale is the prior sd of covariate"):
        build("bradley_terry", br.load_battles(counts), beta_scale=2.0)
