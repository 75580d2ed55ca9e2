"""The posterior-predictive check block by block (issue 47): the statistics of blocks of
replicated draws are those of the whole replicate, and memory is bounded by the block."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bayesrank as br
from bayesrank import conjugate
from bayesrank.analysis import ppc as P
from bayesrank.data.reductions import ObservedCells

pytestmark = [pytest.mark.xdist_group("ppc_blocks"),
              pytest.mark.filterwarnings("ignore:.*did not pass the convergence checks")]


def _data() -> br.ResponseData:
    rng = np.random.default_rng(1)
    R = (rng.random((6, 40, 3)) < rng.random((6, 1, 1))).astype(int)
    return br.ResponseData(R)


@pytest.fixture(scope="module", params=["bayes", "rasch"])
def fitted(request):
    return br.fit(_data(), request.param, draws=120, chains=2, random_seed=3,
                  progressbar=False)


def test_blocks_hold_at_most_max_values_and_replicate_equals_their_concatenation(fitted):
    blocks = list(P.replicated_blocks(fitted, num_draws=60, random_seed=4, max_values=5000))
    values_per_draw = 2 * fitted.data.reductions.trials.size * (
        2 if fitted.model == "bayes" else 1)  # chains x cells (x categories)
    assert len(blocks) >= 3
    assert all(b[fitted.observed_var].size <= max(5000, values_per_draw) for b in blocks)
    whole = P.replicate(fitted, num_draws=60, random_seed=4, max_values=5000)
    np.testing.assert_array_equal(
        whole["posterior_predictive"][fitted.observed_var].values,
        np.concatenate([b[fitted.observed_var].values for b in blocks], axis=1))


def test_block_statistics_equal_the_dense_statistics_of_the_same_draws(fitted):
    """Every replicated statistic and p-value from blocks equals those computed on the
    whole replicated array (chain by chain, the order of the dense reshape)."""
    var, data = fitted.observed_var, fitted.data
    blocked = fitted.ppc(num_draws=60, random_seed=4, max_values=5000)
    tree = P.replicate(fitted, num_draws=60, random_seed=4, max_values=5000)
    cells = data.reductions.observed_cells
    rep = P._cell_scores(tree["posterior_predictive"][var], data.weights, cells)
    trials = cells.gather(data.reductions.trials).astype(float)
    dense = P._statistics(rep.reshape(-1, rep.shape[-1]), trials, cells)
    for name in P.STATISTICS:
        np.testing.assert_array_equal(blocked.replicated[name].values, dense[name])
        np.testing.assert_array_equal(
            blocked.statistics.query("statistic == @name")["p_value"].values,
            P.bayesian_p_values(dense[name], blocked.observed[name].values))
    # the tree keeps the first blocks' draws only, and says so
    assert 0 < blocked.kept_draws < blocked.replicated["accuracy"].sizes["sample"] == 60
    # one block when everything fits: the tree holds every draw the statistics read
    assert fitted.ppc(num_draws=60, random_seed=4).kept_draws == 60


@pytest.mark.parametrize("missing", [0.0, 0.7])
def test_bayes_replicates_at_fresh_exact_draws_with_the_predictive_mean(missing, monkeypatch):
    """Bayes@N's check replicates at new exact draws of p, never reading the stored ones
    (no pass over every draw); the replicated counts have the posterior predictive mean
    n_lm E[p_lm] = n_lm nu_lm / sum(nu_lm) (5 standard errors), and a missing cell's are 0."""
    def refuse(*args, **kwargs):
        raise AssertionError("the stored draws of p were made")

    data = _data()
    if missing:
        data = br.ResponseData(data.R, mask=np.random.default_rng(2).random(data.R.shape) >= 0.7)
    post = br.fit(data, "bayes", draws=500, chains=2, random_seed=3, progressbar=False)
    monkeypatch.setattr(conjugate.ExactDraws, "p_at", refuse)
    result = post.ppc(num_draws=1000, random_seed=7, max_values=10_000)
    assert result.kept_draws < 1000  # blocks
    counts = P.replicate(post, num_draws=1000, random_seed=7)["posterior_predictive"][
        "counts"].values.reshape(-1, *data.reductions.category_counts.shape)
    nu = 1.0 + data.reductions.category_counts
    n = data.reductions.trials[..., None]
    expected = n * nu / nu.sum(-1, keepdims=True)
    se = np.sqrt(n * n / 4 + n / 4) / np.sqrt(counts.shape[0])  # loose bound on the sd
    assert np.all(np.abs(counts.mean(0) - expected) <= 5 * se)
    assert np.array_equal(counts.sum(-1), np.broadcast_to(n[..., 0], counts.shape[:-1]))


def test_report_says_when_its_figure_pools_part_of_the_draws(tmp_path, monkeypatch):
    from bayesrank.analysis import ppc as ppc_module

    post = br.fit(_data(), "bayes", draws=100, chains=2, random_seed=3, progressbar=False)
    check = ppc_module.posterior_predictive_check

    def small_blocks(posterior, **kwargs):
        return check(posterior, **{**kwargs, "max_values": 3_000})

    monkeypatch.setattr(ppc_module, "posterior_predictive_check", small_blocks)
    out = tmp_path / "r.html"
    br.write_report(post, out, baselines=["avg"], ppc_draws=40)
    text = out.read_text()
    assert 'id="ppc-summary"' in text
    assert "of the 40 replicated draws (the statistics above read all 40)" in text


def _nan_statistics(score: np.ndarray, trials: np.ndarray) -> dict[str, np.ndarray]:
    """The statistics over the whole (L, M) table, unobserved cells NaN (numpy's nan
    reductions): the oracle of the observed cells' sums."""
    rate = np.where(trials > 0, score / np.where(trials > 0, trials, 1), np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        question, model = np.nanvar(rate, axis=-1), np.nanvar(rate, axis=-2)
        return {"accuracy": score.sum(-1) / trials.sum(-1),
                "solve_rate": score.sum(-2) / trials.sum(-2),
                "question_dispersion": np.concatenate(
                    [question, np.nanmean(question, -1)[..., None]], -1),
                "model_dispersion": np.concatenate(
                    [model, np.nanmean(model, -1)[..., None]], -1)}


def test_statistics_over_the_observed_cells_are_the_whole_tables():
    """With most cells missing, a model and a question that observed nothing (NaN) and a
    model with one observed cell (variance 0), the statistics summed over the observed
    cells equal numpy's nan reductions over the whole table."""
    rng = np.random.default_rng(8)
    trials = rng.integers(1, 4, (7, 30)) * (rng.random((7, 30)) < 0.3)
    trials[2], trials[:, 5], trials[4] = 0, 0, 0
    trials[4, 9] = 2
    score = rng.binomial(trials, 0.4, size=(5, 7, 30)).astype(float)
    cells = ObservedCells.of(trials)
    got = P._statistics(cells.gather(score), cells.gather(trials).astype(float), cells)
    for name, want in _nan_statistics(score, trials).items():
        np.testing.assert_allclose(got[name], want, rtol=1e-12, atol=1e-15, equal_nan=True)
    assert np.isnan(got["accuracy"][:, 2]).all() and np.isnan(got["solve_rate"][:, 5]).all()
    assert (got["question_dispersion"][:, 4] == 0).all()


def test_the_python_linker_replicates_what_the_default_linker_does(fitted, monkeypatch):
    """The forward function is compiled with the Python linker (``P.FORWARD_COMPILE``:
    milliseconds against about a second a block with Numba); the replicated cells are
    the same numbers as with PyMC's default compilation."""
    if fitted.model == "bayes":
        pytest.skip("Bayes@N replicates from its exact draws: no forward function")
    fast = P.replicate(fitted, num_draws=20, random_seed=5)
    monkeypatch.setattr(P, "FORWARD_COMPILE", None)  # PyMC's default
    default = P.replicate(fitted, num_draws=20, random_seed=5)
    var = fitted.observed_var
    np.testing.assert_array_equal(fast["posterior_predictive"][var].values,
                                  default["posterior_predictive"][var].values)
