"""Bayesian Bradley-Terry and Davidson fitted to pairwise battles (issue 48, item 3): the same
PyMC model as from a tensor's counts, posteriors near the ML fits (choix, the Davidson MLE)
on simulated battles, and the analytics and the HTML report working on the result."""

from __future__ import annotations

import choix
import numpy as np
import pytest
from _battles import THETA, simulate_battles
from _sims import simulate
from bayesrank.models import build

import bayesrank as br
from bayesrank import DataError
from bayesrank.baselines import paired
from bayesrank.data.pairwise import PairwiseData, from_battles

FIT = {"chains": 2, "draws": 400, "tune": 400, "random_seed": 3, "progressbar": False,
       "log_likelihood": False}


@pytest.fixture(scope="module")
def pairs() -> PairwiseData:
    return from_battles(simulate_battles(n=1500, seed=1))


@pytest.fixture(scope="module")
def fits(pairs):
    return {model: br.fit(pairs, model, **FIT) for model in ("bradley_terry", "davidson")}


@pytest.mark.parametrize("model", ["bradley_terry", "davidson"])
def test_same_model_as_from_the_tensor(model):
    """A tensor and its counts as PairwiseData build the same model: log-density equal."""
    data = br.ResponseData(simulate(5, 20, 3, seed=2))
    counts = PairwiseData(data.reductions.wins, data.reductions.ties, models=data.models)
    ours, theirs = build(model, counts), build(model, data)
    assert [v.name for v in ours.free_RVs] == [v.name for v in theirs.free_RVs]
    rng = np.random.default_rng(0)
    point = {k: rng.normal(size=np.shape(v)) for k, v in ours.initial_point().items()}
    assert ours.compile_logp()(point) == pytest.approx(theirs.compile_logp()(point), rel=1e-12)


def test_bradley_terry_posterior_near_choix(pairs, fits):
    post = fits["bradley_terry"]
    assert post.diagnostics["r_hat"].max() < 1.02
    i, j = np.nonzero(pairs.wins)
    comparisons = [(a, b) for a, b, n in zip(i, j, pairs.wins[i, j].astype(int), strict=True)
                   for _ in range(n)]
    mle = choix.opt_pairwise(pairs.L, comparisons, alpha=0.0, method="Newton-CG", tol=1e-10)
    mean = post.theta.mean(("chain", "draw")).values
    sd = post.theta.std(("chain", "draw")).values
    # a weak N(0, 1) prior against 1,500 battles: the mean is the MLE up to its own sd / 2
    np.testing.assert_array_less(np.abs(mean - (mle - mle.mean())), sd / 2)
    assert post.rank("mean").ranks.tolist() == [5, 4, 3, 2, 1]
    assert np.all(np.abs(mean - (THETA - THETA.mean())) < 4 * sd)


def test_davidson_posterior_near_its_mle(pairs, fits):
    post = fits["davidson"]
    theta, nu = paired.davidson_log_strengths(pairs.wins, pairs.ties)
    mean = post.theta.mean(("chain", "draw")).values
    sd = post.theta.std(("chain", "draw")).values
    np.testing.assert_array_less(np.abs(mean - (theta - theta.mean())), sd / 2)
    nu_draws = post.idata["posterior"]["nu"].values.ravel()
    assert abs(nu_draws.mean() - nu) < nu_draws.std()


def test_analytics_on_battles(pairs, fits):
    post = fits["davidson"]
    board = post.leaderboard()
    best = pairs.models[int(np.argmax(THETA))]
    assert board.index[0] == best
    np.testing.assert_allclose(board.loc[list(pairs.models), "observed"],
                               pairs.reductions.observed_score)
    assert board.attrs["observed_label"] == "observed win rate (ties half)"
    assert "accuracy" not in board and "accuracy_note" in board.attrs
    assert (board["rank_lower"] <= board["rank"]).all()
    assert (board["rank"] <= board["rank_upper"]).all()
    assert best in post.top_set(0.05)
    sup = post.superiority()["prob"]
    worst = pairs.models[int(np.argmin(THETA))]
    assert float(sup.sel(llm=best, llm_other=worst)) > 0.999


def test_report_on_battles(tmp_path, fits):
    path = br.write_report(fits["bradley_terry"], tmp_path / "battles.html")
    text = path.read_text()
    assert "observed win rate (ties half)" in text
    assert "decisive battles" in text and "battles in order" in text
    for baseline in ("bradley_terry", "bradley_terry_davidson", "win_rate"):
        assert f"<td class=\"name\">{baseline}</td>" in text
    assert "failed" not in text  # every pairwise baseline ranked the battles


def test_tensor_models_refuse_battles(pairs):
    for model in ("rasch", "bayes", "davidson_luce"):
        with pytest.raises(DataError, match="fit pairwise data with 'bradley_terry' or "
                                            "'davidson'"):
            br.fit(pairs, model)


def test_saved_fit_of_battles_reloads(tmp_path, pairs, fits):
    post = fits["davidson"]
    again = br.load_posterior(post.save(tmp_path / "battles_fit.nc"))
    assert isinstance(again.data, PairwiseData) and again.pymc_model is not None
    np.testing.assert_array_equal(again.data.wins, pairs.wins)
    np.testing.assert_array_equal(again.data.battles.outcome, pairs.battles.outcome)
    assert again.leaderboard().equals(post.leaderboard())
