"""The exact Bayes@N sampler: marginals (scipy), log-likelihood (PyMC as oracle), seeds, dims."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import bayesrank
from bayesrank import ResponseData
from bayesrank.conjugate import exact_draws, multinomial_coefficient
from bayesrank.inference.fitting import fit

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning:arviz"),
    # few draws on purpose: these tests check the draws, not their number
    pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning"),
]


def mixed_binary(seed=0, L=4, M=7, N=5):
    """Never-, always- and sometimes-solved cells, a trial-less one, per-model prior outcomes."""
    rng = np.random.default_rng(seed)
    R = (rng.random((L, M, N)) < rng.random((L, M, 1))).astype(int)
    R[:, 0] = 0
    R[:, 1] = 1
    mask = np.ones(R.shape, dtype=bool)
    mask[0, 2] = False  # a cell without trials
    mask[1, 3, :2] = False  # fewer trials in one cell
    return ResponseData(R, mask=mask, R0=rng.integers(0, 2, (L, M, 2)))


def three_categories(seed=1, L=3, M=6, N=6):
    rng = np.random.default_rng(seed)
    R = rng.integers(0, 3, (L, M, N))
    R[0, 0] = 2  # two categories of this cell have nu = 1: exponential variates
    mask = rng.random((L, M, N)) > 0.2
    return ResponseData(R, mask=mask, R0=rng.integers(0, 3, (M, 2)), weights=[0.0, 0.4, 1.0])


CASES = {
    "binary-uniform": (mixed_binary, None),
    "binary-R0-per-model": (mixed_binary, "data"),
    "binary-N1": (lambda: ResponseData(np.random.default_rng(5).integers(0, 2, (5, 9, 1))), None),
    "three-categories-R0-shared": (three_categories, "data"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_log_likelihood_equals_pymc_on_the_same_draws(case):
    """The closed-form pointwise log-likelihood is what pm.compute_log_likelihood returns."""
    make, R0 = CASES[case]
    data = make()
    post = fit(data, "bayes", R0=R0, draws=60, chains=2, random_seed=3, progressbar=False,
               log_likelihood=True)
    ours = post.idata["log_likelihood"]["counts"]
    oracle = pm.compute_log_likelihood(
        post.idata, var_names=["counts"], model=post.pymc_model,
        extend_inferencedata=False, progressbar=False,
    )["counts"]
    assert ours.dims == oracle.dims == ("chain", "draw", "llm", "question")
    assert np.all(np.isfinite(ours.values))
    np.testing.assert_allclose(ours.values, oracle.values, rtol=0, atol=1e-10)
    assert list(ours["llm"].values) == list(data.models)
    assert list(ours["question"].values) == list(data.questions)


def test_variables_dims_and_coords_a_user_sees():
    data = three_categories()
    post = fit(data, "bayes", draws=30, chains=3, random_seed=1, progressbar=False)
    posterior = post.idata["posterior"]
    assert set(posterior.data_vars) == {"p", "theta"}
    assert posterior["p"].dims == ("chain", "draw", "llm", "question", "category")
    assert posterior["p"].shape == (3, 30, data.L, data.M, 3)
    assert posterior["theta"].dims == ("chain", "draw", "llm")
    assert list(posterior["category"].values) == [0, 1, 2]
    assert list(posterior["question"].values) == list(data.questions)
    np.testing.assert_allclose(posterior["p"].sum("category"), 1.0, rtol=1e-12)
    # theta is the weighted score of the very draws of p
    score = (posterior["p"].values @ data.weights).mean(axis=-1)
    np.testing.assert_allclose(posterior["theta"].values, score, rtol=1e-12)


def test_same_seed_same_draws_other_seed_other_draws():
    data = mixed_binary()
    a, b, c = (fit(data, "bayes", draws=20, chains=2, random_seed=s, progressbar=False,
                   log_likelihood=True)
               for s in (7, 7, 8))
    for group, var in (("posterior", "p"), ("posterior", "theta"), ("log_likelihood", "counts")):
        np.testing.assert_array_equal(a.idata[group][var].values, b.idata[group][var].values)
        assert not np.allclose(a.idata[group][var].values, c.idata[group][var].values)


def test_no_log_likelihood_when_not_asked():
    post = fit(mixed_binary(), "bayes", draws=20, chains=2, random_seed=1,
               log_likelihood=False, progressbar=False)
    assert "log_likelihood" not in post.idata.children
    out = exact_draws(np.full((2, 3, 2), 2.0), np.array([0.0, 1.0]), draws=5, chains=1, seed=0)
    assert set(out) == {"p", "theta"}


@pytest.mark.parametrize(
    "nu",
    [(1.0, 11.0), (11.0, 1.0), (1.0, 1.0), (3.0, 9.0), (12.0, 7.0), (6.0, 6.0), (20.0, 9.0),
     (2.5, 0.7), (1.0, 4.0, 2.0)],
    ids=["never-solved", "always-solved", "no-trials", "product-3", "product-7", "product-tie",
         "gamma-9", "fractional", "3-cat"],
)
def test_every_cell_kind_has_its_dirichlet_marginals(nu):
    """Each category's probability ~ Beta(nu_k, sum(nu) - nu_k) (Kolmogorov-Smirnov, scipy)."""
    nu = np.asarray(nu)
    params = np.broadcast_to(nu, (2, 3, nu.size))  # six cells of one kind
    out = exact_draws(params, np.linspace(0, 1, nu.size), draws=4000, chains=2, seed=12)
    p = out["p"].reshape(-1, 6, nu.size)
    for k in range(nu.size):
        marginal = stats.beta(nu[k], nu.sum() - nu[k])
        for cell in range(6):
            assert stats.kstest(p[:, cell, k], marginal.cdf).pvalue > 1e-4
    # cells are independent of each other
    corr = np.corrcoef(p[:, :, 0].T)[np.triu_indices(6, 1)]
    assert np.all(np.abs(corr) < 5 / np.sqrt(p.shape[0]))


def test_mixed_cells_keep_their_own_parameters():
    """Cells of different kinds in one tensor each get their own Dirichlet (posterior mean)."""
    nu = np.array([[[1.0, 6.0], [6.0, 1.0], [2.0, 5.0]], [[1.0, 1.0], [4.0, 3.0], [1.0, 6.0]]])
    out = exact_draws(nu, np.array([0.0, 1.0]), draws=5000, chains=2, seed=4)
    mean = out["p"].mean(axis=(0, 1))
    expected = nu / nu.sum(-1, keepdims=True)
    sd = np.sqrt(expected * (1 - expected) / (nu.sum(-1, keepdims=True) + 1) / 10000)
    np.testing.assert_array_less(np.abs(mean - expected), 5 * sd)


def test_multinomial_coefficient_against_scipy():
    counts = np.array([[3, 0, 2], [0, 0, 0], [1, 4, 1]])
    p = np.array([0.2, 0.5, 0.3])
    expected = stats.multinomial.logpmf(counts, counts.sum(-1), p) - counts @ np.log(p)
    np.testing.assert_allclose(multinomial_coefficient(counts), expected, rtol=1e-12)


def test_fit_matches_the_closed_form_on_a_real_shaped_tensor():
    """Most cells never solved (like real benchmarks): theta's mean and sd still Bayes@N's."""
    rng = np.random.default_rng(2)
    R = (rng.random((6, 80, 10)) < rng.beta(0.3, 2.0, (6, 80, 1))).astype(int)
    data = ResponseData(R)
    post = fit(data, "bayes", draws=3000, chains=2, random_seed=6, progressbar=False)
    mu, sigma = bayesrank.bayes_at_n(data)
    theta = post.idata["posterior"]["theta"].values.reshape(-1, data.L)
    n = theta.shape[0]
    np.testing.assert_array_less(np.abs(theta.mean(0) - mu), 4 * sigma / np.sqrt(n))
    np.testing.assert_array_less(np.abs(theta.std(0) - sigma), 4 * sigma / np.sqrt(2 * n))


def test_draws_do_not_depend_on_the_number_of_threads(monkeypatch):
    from bayesrank import conjugate

    nu = conjugate.dirichlet_parameters(three_categories(), R0="data")
    counts = three_categories().reductions.category_counts
    runs = []
    for workers in (1, 3):
        monkeypatch.setattr(conjugate, "worker_threads", lambda w=workers: w)
        runs.append(exact_draws(nu, np.array([0.0, 0.4, 1.0]), draws=50, chains=2, seed=9,
                                counts=counts))
    for name in ("p", "theta", "log_likelihood"):
        np.testing.assert_array_equal(runs[0][name], runs[1][name])


def test_fit_keeps_p_unmade_until_it_is_read(monkeypatch):
    """fit() needs theta and the log-likelihood only; p is drawn again, identically, on reading."""
    from bayesrank import conjugate

    made = []
    original = conjugate.ExactDraws.p
    monkeypatch.setattr(conjugate.ExactDraws, "p", lambda self: made.append(1) or original(self))
    data = mixed_binary()
    post = fit(data, "bayes", draws=40, chains=2, random_seed=5, progressbar=False)
    assert made == []
    p = post.idata["posterior"]["p"].values
    assert made == [1]
    np.testing.assert_allclose(post.idata["posterior"]["theta"].values,
                               (p @ data.weights).mean(axis=-1), rtol=1e-12)
    np.testing.assert_array_equal(post.idata["posterior"]["p"].isel(question=2).values,
                                  p[:, :, :, 2])
    assert made == [1]  # read once, kept
    nu = conjugate.dirichlet_parameters(data)
    np.testing.assert_array_equal(p, exact_draws(nu, data.weights, draws=40, chains=2,
                                                 seed=5)["p"])


def test_stated_diagnostics_of_exact_draws_agree_with_arviz_estimates():
    """fit() states ESS = number of draws and R-hat = 1; ArviZ's estimates on the draws agree."""
    import warnings

    import arviz as az

    from bayesrank.inference.diagnostics import SamplingWarning

    post = fit(mixed_binary(), "bayes", draws=2000, chains=2, random_seed=2, progressbar=False)
    row = post.diagnostics.loc["theta"]
    assert row["ess_bulk"] == row["ess_tail"] == 4000 and row["r_hat"] == 1.0 and row["passed"]
    theta = post.idata["posterior"].to_dataset()[["theta"]]
    assert float(az.rhat(theta)["theta"].max()) < 1.01
    assert float(az.ess(theta, method="bulk")["theta"].min()) > 0.8 * 4000
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(mixed_binary(), "bayes", draws=100, chains=2, random_seed=2, progressbar=False)
    assert any(issubclass(w.category, SamplingWarning) and "ESS < 400" in str(w.message)
               for w in caught)


def test_log_likelihood_at_a_zero_probability_is_scipys():
    """0 log 0 = 0 in a cell without that outcome, -inf in a cell with it (scipy's convention)."""
    from bayesrank.conjugate import _block_log_likelihood

    counts = np.array([[0.0, 3.0], [2.0, 1.0]])
    p0 = np.array([[0.0, 0.4], [0.0, 0.4]])  # (cells, samples)
    got = _block_log_likelihood({0: p0, 1: 1.0 - p0}, {}, counts, multinomial_coefficient(counts))
    for cell in range(2):
        for s in range(2):
            probs = [p0[cell, s], 1.0 - p0[cell, s]]
            expected = stats.multinomial.logpmf(counts[cell], counts[cell].sum(), probs)
            assert got[cell, s] == pytest.approx(expected, rel=1e-12)


def test_leaderboard_and_loo_never_make_every_cells_p(monkeypatch):
    """The leaderboard's expected score is theta and its predictive interval is replicated
    block by block; PSIS-LOO draws the log-likelihood block by block: none makes all of p."""
    from bayesrank import conjugate

    made = []
    original = conjugate.ExactDraws.p
    monkeypatch.setattr(conjugate.ExactDraws, "p", lambda self: made.append(1) or original(self))
    data = ResponseData(np.random.default_rng(5).integers(0, 2, (5, 9, 3)))  # every cell seen
    post = fit(data, "bayes", draws=40, chains=2, random_seed=5, progressbar=False)
    board = post.leaderboard()
    post.loo()
    assert made == []
    theta = post.idata["posterior"]["theta"].mean(("chain", "draw")).to_series()
    np.testing.assert_allclose(board["accuracy"], theta.loc[board.index], rtol=1e-12)
    assert (board["accuracy_lower"] <= board["accuracy_upper"]).all()


def test_thinned_p_is_made_alone_and_equals_the_whole(monkeypatch):
    """A predictive check reads every k-th draw of p: only those are made (not all of p),
    and they are the very draws of the whole array."""
    from bayesrank import conjugate

    made = []
    original = conjugate.ExactDraws.p
    monkeypatch.setattr(conjugate.ExactDraws, "p", lambda self: made.append(1) or original(self))
    post = fit(mixed_binary(), "bayes", draws=40, chains=2, random_seed=5, progressbar=False)
    p = post.idata["posterior"]["p"]
    thinned = p.isel(draw=slice(None, None, 7), llm=[2, 0], category=1).values
    one = p.isel(chain=1, draw=3).values
    post.ppc(num_draws=20)  # replicates at fresh exact draws: reads no p
    assert made == []
    whole = p.values
    assert made == [1]
    np.testing.assert_array_equal(thinned, whole[:, ::7][:, :, [2, 0]][..., 1])
    np.testing.assert_array_equal(one, whole[1, 3])
