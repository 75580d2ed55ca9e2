"""The numbers people read (issue 52): the observed accuracy from the data, the model's
estimate named for what it is, and an interval a replicated benchmark's accuracy falls in."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
from scipy import special, stats

import bayesrank
from bayesrank import ResponseData, closed_form
from bayesrank.analysis.accuracy import predictive_accuracy_draws
from bayesrank.analysis.posterior import BAYES_SCORE_LABEL, Posterior


def _fixed_posterior(data: ResponseData, theta, b, *, draws: int, phi=None) -> Posterior:
    """A posterior that puts all its mass on one (theta, b[, phi]): the truth."""
    post = {"theta": np.broadcast_to(theta, (1, draws, len(theta))).copy(),
            "b": np.broadcast_to(b, (1, draws, len(b))).copy()}
    if phi is not None:
        post["phi"] = np.full((1, draws), float(phi))
    idata = az.from_dict({"posterior": post},
                         coords={"llm": list(data.models), "question": list(data.questions)},
                         dims={"theta": ["llm"], "b": ["question"]})
    return Posterior(idata, data, "rasch")


@pytest.mark.parametrize("chunk", [None, 30])
@pytest.mark.parametrize("phi", [None, 3.0])
@pytest.mark.parametrize("missing", [0.0, 0.7])
def test_predictive_accuracy_has_the_binomial_and_beta_binomial_moments(phi, missing, chunk,
                                                                        monkeypatch):
    """Also with 70% of the cells missing (replicated over the observed cells only), and
    with one draw's cells cut into chunks (``chunk`` values: as at 1,000 x 20,000)."""
    from bayesrank.analysis import accuracy

    if chunk is not None:
        monkeypatch.setattr(accuracy, "_ACCURACY_CHUNK", chunk)
    rng = np.random.default_rng(0)
    L, M, N = 3, 40, 5
    theta, b = np.array([-1.0, 0.0, 1.5]), rng.normal(size=M)
    mask = rng.random((L, M, N)) < 0.8
    mask[:, :, 0] = True
    mask &= (rng.random((L, M)) >= missing)[..., None]
    data = ResponseData(rng.integers(0, 2, (L, M, N)), mask=mask)
    post = _fixed_posterior(data, theta, b, draws=20000, phi=phi)
    rep = predictive_accuracy_draws(post.idata, data, random_seed=1).values[0]
    n = data.reductions.trials
    p = special.expit(theta[:, None] - b[None, :])
    # independent oracle: scipy's binomial / beta-binomial cell variances, summed
    if phi is None:
        cell_var = stats.binom(n, p).var()
    else:
        cell_var = stats.betabinom(n, p * phi, (1 - p) * phi).var()
    mean = (n * p).sum(axis=1) / n.sum(axis=1)
    sd = np.sqrt(cell_var.sum(axis=1)) / n.sum(axis=1)
    np.testing.assert_allclose(rep.mean(axis=0), mean, atol=4 * sd.max() / np.sqrt(20000))
    np.testing.assert_allclose(rep.std(axis=0), sd, rtol=0.03)


def test_leaderboard_interval_is_the_predictive_interval_and_covers_replicates():
    """With the posterior at the truth, observed accuracies of data simulated from it fall
    in the 90% interval about 90% of the time; the expected accuracy's interval (a point
    here) would hold none of them."""
    rng = np.random.default_rng(3)
    L, M, N = 8, 30, 4
    theta, b = np.linspace(-1.5, 1.5, L), rng.normal(size=M)
    p = special.expit(theta[:, None] - b[None, :])
    hits, total = 0, 0
    for _rep in range(25):
        R = (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
        data = ResponseData(R)
        board = _fixed_posterior(data, theta, b, draws=2000).leaderboard(prob=0.9)
        inside = (board["observed"] >= board["accuracy_lower"]) & (
            board["observed"] <= board["accuracy_upper"])
        hits += int(inside.sum())
        total += L
    assert 0.84 <= hits / total <= 0.96, hits / total


def test_observed_accuracy_comes_first_and_is_exact():
    rng = np.random.default_rng(5)
    R = rng.integers(0, 2, (4, 9, 3))
    mask = rng.random(R.shape) < 0.7
    mask[:, 0, 0] = True
    data = ResponseData(R, models=["a", "b", "c", "d"], mask=mask)
    board = closed_form(data).leaderboard()
    assert list(board.columns[:2]) == ["observed", "accuracy"]
    for name in data.models:
        i = data.models.index(name)
        assert board.loc[name, "observed"] == R[i][mask[i]].mean()  # exactly, no prior
    assert board.attrs["observed_label"] == "observed accuracy"
    assert board.attrs["accuracy_label"] == BAYES_SCORE_LABEL
    levels = ResponseData(rng.integers(0, 3, (2, 5, 2)), weights=[0, 0.2, 1])
    frame = closed_form(levels).leaderboard()
    assert frame.attrs["observed_label"] == "observed score"
    w = np.array([0, 0.2, 1])
    np.testing.assert_allclose(frame.loc[list(levels.models), "observed"],
                               w[levels.R].mean(axis=(1, 2)), rtol=1e-15)


def test_cli_rank_shows_observed_accuracy_then_the_named_score(capsys, tmp_path):
    from bayesrank.cli import main

    R = np.zeros((3, 4, 1), dtype=int)
    R[0] = 1
    R[1, :3] = 1
    path = bayesrank.save(ResponseData(R, models=["x", "y", "z"]), tmp_path / "d.npz")
    assert main(["rank", str(path), "--method", "bayes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1]
    assert header.index("observed accuracy") < header.index(BAYES_SCORE_LABEL)
    row = lines[2].split()
    assert row[1] == "x" and float(row[2]) == 1.0
    assert float(row[3]) == pytest.approx(2 / 3)  # (k + 1) / (N + 2) at N = 1: shrunk


def test_cli_rank_names_the_prior_runs_bayes_score_for_what_it_is(capsys):
    from bayesrank.analysis.posterior import estimate_label
    from bayesrank.cli import main

    greedy = estimate_label("bayes_greedy")
    for argv in (["--method", "bayes", "--option", "R0=data"], ["--method", "bayes_greedy"]):
        assert main(["rank", "--key", "aime24", *argv]) == 0
        header = capsys.readouterr().out.splitlines()[1]
        assert header.rstrip().endswith(greedy) and BAYES_SCORE_LABEL not in header
    assert main(["rank", "--key", "aime24", "--method", "bayes_ci"]) == 0
    assert capsys.readouterr().out.splitlines()[1].rstrip().endswith("bayes_ci score")


def _banner_posterior(model: str, *, phi: bool, N: int, shift: float = 0.0) -> Posterior:
    rng = np.random.default_rng(9)
    L, M = 10, 30
    theta, b = np.linspace(-1, 1, L), rng.normal(size=M)
    p = special.expit(theta[:, None] - b[None, :])
    data = ResponseData((rng.random((L, M, N)) < p[..., None]).astype(np.int8))
    post = _fixed_posterior(data, theta + shift, b, draws=500, phi=50.0 if phi else None)
    post.model = model
    return post


def _flagged_ppc():
    from types import SimpleNamespace

    import pandas as pd

    return SimpleNamespace(overall=pd.DataFrame(
        {"statistic": ["question_dispersion"], "p_value": [0.001], "flagged": [True]}))


def test_every_misfit_banner_names_the_better_model_or_says_none_fits_better():
    from bayesrank.report.html import _misfit_warning

    rasch = _misfit_warning(_banner_posterior("rasch", phi=False, N=4), _flagged_ppc())
    assert "fits better by PSIS-LOO" in rasch
    assert 'fit(data, "rasch", likelihood="beta_binomial")' in rasch.replace("&quot;", '"')
    best = _misfit_warning(_banner_posterior("2pl", phi=True, N=4), _flagged_ppc())
    assert "None of the models tried" in best and "fits better by PSIS-LOO" in best
    one = _misfit_warning(_banner_posterior("2pl", phi=False, N=1), _flagged_ppc())
    assert "None of the models tried" in one and "one trial per model-question cell" in one


def test_coverage_banner_when_the_predictive_interval_misses_the_observed_accuracy():
    from bayesrank.report.html import _coverage_warning

    fitting = _banner_posterior("2pl", phi=True, N=4)
    wide = fitting.leaderboard(prob=0.999)  # holds every observed accuracy here
    assert _coverage_warning(fitting, wide, 0.999, None) == ""
    off = _banner_posterior("2pl", phi=True, N=4, shift=1.0)  # every ability one logit high
    board = off.leaderboard()
    text = _coverage_warning(off, board, 0.9, None)
    assert 'id="coverage-warning"' in text
    missed = int(((board["observed"] < board["accuracy_lower"])
                  | (board["observed"] > board["accuracy_upper"])).sum())
    assert missed >= 2 and f"{missed} of 10 models" in text
    chance = stats.binom.sf(missed - 1, 10, 0.1)  # this many outside by chance alone
    assert f"probability {chance:.2g}" in text
    assert "None of the models tried" in text


@pytest.mark.parametrize("w", [[0.0, 0.3, 1.0], [0.0, 1.0]])
def test_bayes_predictive_accuracy_has_the_dirichlet_multinomial_moments(w):
    """Fitted Bayes@N (exact Dirichlet draws): the replicated weighted score of n trials per
    cell has mean n E[w] and variance n Var(w) (a0 + n) / (a0 + 1) per cell, the
    Dirichlet-multinomial's, with alpha = 1 + the cell's category counts (three categories:
    multinomial replicates; two: binomial ones)."""
    import warnings

    rng = np.random.default_rng(1)
    w = np.array(w)
    R = rng.integers(0, w.size, (3, 12, 4))
    data = ResponseData(R, weights=w) if w.size > 2 else ResponseData(R)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(data, "bayes", random_seed=0, progressbar=False, draws=2500)
    rep = post.predictive_accuracy().values.reshape(-1, 3)
    alpha = 1 + np.stack([(R == k).sum(axis=2) for k in range(w.size)], axis=-1)
    a0 = alpha.sum(-1)
    mean_w = (alpha @ w) / a0
    var_w = (alpha @ w**2) / a0 - mean_w**2
    n = 4
    mean = (n * mean_w).sum(axis=1) / (12 * n)
    sd = np.sqrt((n * var_w * (a0 + n) / (a0 + 1)).sum(axis=1)) / (12 * n)
    np.testing.assert_allclose(rep.mean(axis=0), mean, atol=4 * sd.max() / np.sqrt(rep.shape[0]))
    np.testing.assert_allclose(rep.std(axis=0), sd, rtol=0.06)


def test_bayes_predictive_accuracy_with_one_trial_per_cell_is_bernoulli():
    """One trial per cell, some cells missing (the uniform-against-p path of
    conjugate._binomial): a replicated cell is Bernoulli(E p) = Bernoulli((k + 1) / 3)
    marginally, independent over cells, so each model's replicated accuracy has mean
    sum_m m_lm / n_l and variance sum_m m_lm (1 - m_lm) / n_l^2 over its observed cells."""
    import warnings

    rng = np.random.default_rng(2)
    R = rng.integers(0, 2, (3, 30, 1))
    mask = rng.random(R.shape) < 0.7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(ResponseData(R, mask=mask), "bayes", random_seed=0,
                             progressbar=False, draws=2500)
    rep = post.predictive_accuracy().transpose("chain", "draw", "llm").values.reshape(-1, 3)
    observed = mask[..., 0]
    m = np.where(observed, (R[..., 0] + 1) / 3, 0.0)
    n = observed.sum(axis=1)
    mean = m.sum(axis=1) / n
    sd = np.sqrt((m * (1 - m)).sum(axis=1)) / n
    np.testing.assert_allclose(rep.mean(axis=0), mean, atol=4 * sd.max() / np.sqrt(rep.shape[0]))
    np.testing.assert_allclose(rep.std(axis=0), sd, rtol=0.06)
    # each replicate is a whole number of solved trials out of the model's observed ones
    np.testing.assert_allclose(rep * n, np.round(rep * n), atol=1e-9)


def test_closed_form_interval_is_the_predictive_one_of_its_own_dirichlet_posterior():
    """closed_form's accuracy interval: the normal approximation of the same replicated
    scores that fit(data, "bayes") draws exactly."""
    import warnings

    rng = np.random.default_rng(4)
    data = ResponseData(rng.integers(0, 3, (3, 40, 5)), weights=[0.0, 0.5, 1.0])
    board = closed_form(data).leaderboard(prob=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(data, "bayes", random_seed=0, progressbar=False, draws=2500)
    rep = post.predictive_accuracy().transpose("chain", "draw", "llm").values.reshape(-1, 3)
    lower, upper = np.quantile(rep, [0.05, 0.95], axis=0)
    width = upper - lower
    np.testing.assert_allclose(board["accuracy_lower"].loc[list(data.models)], lower,
                               atol=0.05 * width.max())
    np.testing.assert_allclose(board["accuracy_upper"].loc[list(data.models)], upper,
                               atol=0.05 * width.max())
    credible = closed_form(data)._interval(0.9, "eti")
    assert np.all(board["accuracy_upper"].loc[list(data.models)].to_numpy()
                  - board["accuracy_lower"].loc[list(data.models)].to_numpy()
                  > credible[1] - credible[0])


def test_bayes_label_names_the_prior_mean_it_shrinks_toward():
    rng = np.random.default_rng(6)
    uneven = ResponseData(rng.integers(0, 3, (3, 4, 1)), weights=[0.0, 0.25, 1.0])
    label = closed_form(uneven).leaderboard().attrs["accuracy_label"]
    assert label == "Bayes@N score (uniform prior, shrinks toward 0.417 at small N)"
    # the uniform prior's mean score: one pseudo-count per category, all trials unseen
    empty = closed_form(ResponseData(np.zeros((2, 3, 1), dtype=int),
                                     mask=np.array([[[True], [False], [False]]] * 2),
                                     weights=[0.0, 0.25, 1.0]))
    # two unseen questions at the prior mean 5/12, one failed: Dirichlet(2, 1, 1) -> 1.25 / 4
    assert empty.mu[0] == pytest.approx((2 * 5 / 12 + 1.25 / 4) / 3, rel=1e-12)


def test_shrunken_bayes_at_one_trial_gets_the_coverage_banner_and_the_2pl_remedy():
    """Bayes@N at N = 1 squeezes the scores toward 0.5; its predictive interval then misses
    the observed accuracies of strong models, and the banner names the 2PL."""
    from bayesrank.report.html import _coverage_warning

    rng = np.random.default_rng(2)
    R = (rng.random((12, 300, 1)) < np.linspace(0.6, 0.97, 12)[:, None, None]).astype(np.int8)
    post = closed_form(ResponseData(R))
    text = _coverage_warning(post, post.leaderboard(), 0.9, None).replace("&quot;", '"')
    assert 'id="coverage-warning"' in text and 'fit(data, "2pl")' in text


def test_item_response_accuracies_read_every_kth_draw_beyond_the_cell_budget(monkeypatch):
    """Beyond ACCURACY_BUDGET cells x draws the expected and predictive accuracies read
    every k-th draw of every chain: the expected accuracy of each draw read is that
    draw's, exactly (issue 47: 1,000 x 20,000 cells would score 8e10 cell-draws)."""
    from bayesrank.analysis import accuracy

    rng = np.random.default_rng(3)
    data = ResponseData(rng.integers(0, 2, (4, 30, 2)))
    theta, b = rng.normal(size=(2, 50, 4)), rng.normal(size=(2, 50, 30))
    idata = az.from_dict({"posterior": {"theta": theta, "b": b}},
                         coords={"llm": list(data.models), "question": list(data.questions)},
                         dims={"theta": ["llm"], "b": ["question"]})
    whole = accuracy.expected_accuracy_draws(idata, data)
    assert whole.sizes["draw"] == 50
    monkeypatch.setattr(accuracy, "ACCURACY_BUDGET", 2 * 120 * 10)  # 10 draws per chain
    part = accuracy.expected_accuracy_draws(idata, data)
    assert part.sizes["draw"] == 10
    np.testing.assert_array_equal(part.values, whole.values[:, ::5])
    np.testing.assert_array_equal(part["draw"], whole["draw"][::5])
    # one draw's cells cut into chunks of 7 questions: the same means, to rounding
    monkeypatch.setattr(accuracy, "_ACCURACY_CHUNK", 2 * 4 * 7)
    np.testing.assert_allclose(accuracy.expected_accuracy_draws(idata, data).values,
                               part.values, rtol=1e-14)
    np.testing.assert_allclose(whole.values, special.expit(
        theta[..., :, None] - b[..., None, :]).mean(axis=-1), rtol=1e-14)
    predictive = accuracy.predictive_accuracy_draws(idata, data)
    assert predictive.sizes == {"chain": 2, "draw": 10, "llm": 4}
