"""PSIS-LOO block by block (issue 47): a default fit holds no L x M x draws array, and
``Posterior.loo`` / ``compare`` made block by block on demand equal ArviZ's ``loo`` and
``compare`` on the whole pointwise log-likelihood, before and after a save and reload."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
import xarray as xr

import bayesrank
from bayesrank import ResponseData
from bayesrank.analysis.comparison import loo, relative_efficiency
from bayesrank.analysis.posterior import Posterior
from bayesrank.datatree import without_groups

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    # few draws on purpose: these tests check the arithmetic of the blocks, not convergence
    pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning"),
]

L, M, N, CHAINS, DRAWS = 6, 40, 3, 2, 100
MODELS = ("bayes", "rasch", "2pl")


@pytest.fixture(scope="module")
def data() -> ResponseData:
    rng = np.random.default_rng(0)
    R = (rng.random((L, M, N)) < rng.random((1, M, 1))).astype(int)
    return ResponseData(R)


@pytest.fixture(scope="module")
def stored(data) -> dict[str, Posterior]:
    """Fits that store the pointwise log-likelihood (the dense oracle)."""
    return {m: bayesrank.fit(data, m, draws=DRAWS, chains=CHAINS, random_seed=1,
                             progressbar=False, log_likelihood=True) for m in MODELS}


def _on_demand(post: Posterior) -> Posterior:
    """The same draws without the stored group: LOO must make it block by block."""
    return Posterior(without_groups(post.idata, "log_likelihood"), post.data, post.model,
                     sampler=post.sampler, pymc_model=post.pymc_model,
                     observed_var=post.observed_var)


def _dense_loo(post: Posterior):
    tree = xr.DataTree.from_dict({
        "posterior": post.idata["posterior"].to_dataset()[["theta"]],
        "log_likelihood": post.idata["log_likelihood"].to_dataset()})
    return az.loo(tree, pointwise=True, var_name=post.observed_var,
                  reff=relative_efficiency(post))


@pytest.mark.parametrize("model", MODELS)
def test_default_fit_holds_no_cell_by_draw_array(data, model):
    post = bayesrank.fit(data, model, draws=DRAWS, chains=CHAINS, random_seed=1,
                         progressbar=False)
    assert "log_likelihood" not in post.idata.children
    for name in post.idata.children:
        for var, values in post.idata[name].to_dataset().data_vars.items():
            if values.size >= L * M * CHAINS * DRAWS:
                # only the exact Bayes@N cell probabilities, made again when read
                assert (model, var) == ("bayes", "p")
                assert not isinstance(values.variable._data, np.ndarray)


@pytest.mark.parametrize("model", MODELS)
def test_blockwise_loo_equals_dense(stored, model):
    post = stored[model]
    dense = _dense_loo(post)
    # 10 cells per block: 24 blocks (the conjugate sampler's own blocks hold one model's
    # cells of one kind, grouped up to the budget)
    got = loo(_on_demand(post), max_values=10 * CHAINS * DRAWS)
    for name in ("elpd_i", "pareto_k"):
        np.testing.assert_allclose(getattr(got, name).transpose(*dense.elpd_i.dims).values,
                                   getattr(dense, name).values, rtol=1e-12, atol=1e-12)
    assert got.elpd == pytest.approx(dense.elpd, rel=1e-12)
    assert got.se == pytest.approx(dense.se, rel=1e-12)
    assert got.p == pytest.approx(dense.p, rel=1e-12)
    assert (got.n_data_points, got.n_samples) == (L * M, CHAINS * DRAWS)
    assert got.elpd == pytest.approx(post.loo().elpd, rel=1e-12)  # stored group, one block


def test_compare_on_demand_equals_compare_on_stored(stored):
    dense = bayesrank.compare(stored)
    made = bayesrank.compare({m: _on_demand(p) for m, p in stored.items()})
    numbers = ["elpd_loo", "se", "elpd_diff", "diff_se", "p_loo", "weight", "max_pareto_k"]
    np.testing.assert_allclose(made.loc[dense.index, numbers].to_numpy(float),
                               dense[numbers].to_numpy(float), rtol=1e-9, atol=1e-12)
    assert list(made.index) == list(dense.index)


@pytest.mark.parametrize("model", ["bayes", "rasch"])
def test_reloaded_fit_gives_the_same_loo(stored, model, tmp_path):
    post = _on_demand(stored[model])
    path = post.save(tmp_path / "fit.nc")
    back = bayesrank.load_posterior(path)
    assert "log_likelihood" not in back.idata.children
    a, b = post.loo(), back.loo()
    np.testing.assert_array_equal(a.elpd_i.values, b.elpd_i.values)
    np.testing.assert_array_equal(a.pareto_k.values, b.pareto_k.values)
    if model == "bayes":  # the exact draws of p were not written; made again from the seed
        np.testing.assert_array_equal(back.idata["posterior"]["p"].values,
                                      post.idata["posterior"]["p"].values)
        np.testing.assert_allclose(back.leaderboard()["accuracy"],
                                   post.leaderboard()["accuracy"], rtol=1e-12)


@pytest.fixture(scope="module")
def masked() -> dict[str, Posterior]:
    """Fits of data with about half of the cells missing (no trials)."""
    rng = np.random.default_rng(3)
    R = (rng.random((L, M, N)) < rng.random((1, M, 1))).astype(int)
    mask = np.broadcast_to(rng.random((L, M, 1)) > 0.5, R.shape)
    data = ResponseData(R, mask=mask)
    return {m: bayesrank.fit(data, m, draws=DRAWS, chains=CHAINS, random_seed=1,
                             progressbar=False, log_likelihood=True) for m in ("bayes", "rasch")}


@pytest.mark.parametrize("model", ["bayes", "rasch"])
def test_cells_without_trials_are_left_out(masked, model):
    """Cells nobody observed score 0 at every draw; ArviZ cannot smooth them, so LOO runs
    over the observed cells (equal to arviz.loo on those alone)."""
    post = masked[model]
    seen = post.data.reductions.trials > 0
    stored = post.idata["log_likelihood"][post.observed_var]
    dense = stored.stack(observed=("llm", "question")).isel(
        observed=np.flatnonzero(seen.ravel()))
    tree = xr.DataTree.from_dict({"posterior": post.idata["posterior"].to_dataset()[["theta"]],
                                  "log_likelihood": dense.to_dataset(name="obs")})
    oracle = az.loo(tree, pointwise=True, var_name="obs", reff=relative_efficiency(post))
    got = loo(_on_demand(post), max_values=10 * CHAINS * DRAWS)
    assert got.n_data_points == int(seen.sum()) == oracle.n_data_points
    np.testing.assert_allclose(got.elpd_i.values, oracle.elpd_i.values, rtol=1e-12)
    np.testing.assert_allclose(got.pareto_k.values, oracle.pareto_k.values, rtol=1e-12)
    assert (got.elpd, got.se, got.p) == pytest.approx((oracle.elpd, oracle.se, oracle.p),
                                                      rel=1e-12)


def test_compare_on_masked_data(masked):
    table = bayesrank.compare({m: _on_demand(p) for m, p in masked.items()})
    seen = int((masked["bayes"].data.reductions.trials > 0).sum())
    assert (table["n_observations"] == seen).all() and seen < L * M
    assert table.attrs["observation_unit"] == "observed unit"
    assert np.isclose(table["elpd_loo"].sum(), sum(p.loo().elpd for p in masked.values()))
