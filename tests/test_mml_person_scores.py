"""``rasch_mml`` / ``rasch_mml_credible`` person scores against an independent fine grid.

The paper defines the EAP as the posterior mean ``E[theta_l | R]`` and the credible score
as a posterior quantile.  bayesrank computes both from each model's own posterior given
the MML fit's item parameters (:mod:`bayesrank.baselines.irt._person_kernel`); the EM
itself keeps the paper's 21 nodes.  Here bayesrank differs from scorio 0.2.3, which
takes both scores on the 21-node grid, so that models with many trials snap to a node
and tie (see ``test_baselines_irt.py`` for the agreement with scorio on the grid).

Oracles, on complete binary data:

- sufficiency: under the Rasch model a model's total successes are sufficient for its
  ability, so every posterior functional is strictly increasing in the total; the
  rankings must equal the ranking by total successes, with ties exactly where totals tie;
- a 2,001-node reference computed here from the fitted difficulties and population sd
  alone (log-likelihood from ``scipy.special.log_expit`` matrix products, prior from
  ``scipy.stats.norm``; a uniform grid over ``mean +- 20 sd`` of each model's posterior;
  trapezoid mean, Simpson CDF inverted by a cubic spline): scores within 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, interpolate, stats
from scipy.special import log_expit

import bayesrank
from bayesrank import ResponseData
from bayesrank.baselines import irt
from bayesrank.data.io import load
from bayesrank.ranking import scores_to_ranks

NODES = 2001
QUANTILE = 0.05  # rasch_mml_credible's paper argument
REAL = [("real_lcb_repair_2024_10", "repair"), ("real_reasoning_gym_hard", "rg_hard"),
        ("real_zeroeval_gsm8k", "gsm8k"), ("real_zeroeval_math_l5", "math_l5")]


def _log_posterior(theta, k, n, b, sd):
    """(L, G) unnormalised log posterior of abilities ``theta`` (G,) for counts (L, M)."""
    eta = theta[:, None] - b[None, :]
    return k @ log_expit(eta).T + (n - k) @ log_expit(-eta).T + stats.norm.logpdf(theta, 0, sd)


def _reference(k, n, difficulty, sd):
    """Posterior mean and ``QUANTILE``-quantile of each model on a 2,001-node grid."""
    finite = np.isfinite(difficulty)  # items all (or no) models solved carry no information
    k, n, b = k[:, finite], n[:, finite], difficulty[finite]
    wide = np.linspace(-12 * sd, 12 * sd, NODES)  # locates each posterior
    f = np.exp((lp := _log_posterior(wide, k, n, b, sd)) - lp.max(axis=1, keepdims=True))
    mean = np.trapezoid(f * wide, wide, axis=1) / np.trapezoid(f, wide, axis=1)
    spread = np.sqrt(np.trapezoid(f * (wide - mean[:, None]) ** 2, wide, axis=1)
                     / np.trapezoid(f, wide, axis=1))
    eap, low = np.empty(len(k)), np.empty(len(k))
    for l in range(len(k)):
        grid = np.linspace(mean[l] - 20 * spread[l], mean[l] + 20 * spread[l], NODES)
        lp = _log_posterior(grid, k[l:l + 1], n[l:l + 1], b, sd)[0]
        f = np.exp(lp - lp.max())
        norm = np.trapezoid(f, grid)
        eap[l] = np.trapezoid(f * grid, grid) / norm
        cdf = integrate.cumulative_simpson(f, x=grid, initial=0.0) / norm
        (low[l],) = interpolate.CubicSpline(grid, cdf).solve(QUANTILE, extrapolate=False)
    return eap, low


def _assert_scores_follow_totals_and_reference(data: ResponseData, **options):
    d = data.reductions
    k, n = d.successes.astype(float), d.trials.astype(float)
    assert np.all(n == n.max()), "the oracles need complete data"
    total = k.sum(axis=1)
    eap = bayesrank.rank(data, "rasch_mml", return_item_params=True, **options)
    low = bayesrank.rank(data, "rasch_mml_credible", **options)
    same_total = total[:, None] == total[None, :]
    for out in (eap, low):
        np.testing.assert_array_equal(out.ranks, scores_to_ranks(total))
        np.testing.assert_array_equal(out.scores[:, None] == out.scores[None, :], same_total)
    ref_eap, ref_low = _reference(k, n, eap.details["difficulty"],
                                  eap.details["population_sd"])
    np.testing.assert_allclose(eap.scores, ref_eap, rtol=0, atol=1e-6)
    np.testing.assert_allclose(low.scores, ref_low, rtol=0, atol=1e-6)
    assert np.all(low.scores < eap.scores)
    return eap


@pytest.mark.parametrize(("folder", "key"), REAL)
def test_real_sets_rank_by_total_successes_and_match_the_fine_grid(shared_dir, folder, key):
    data = load(shared_dir / "data" / folder / "R.npz", key=key)
    _assert_scores_follow_totals_and_reference(data)


def _simulated() -> np.ndarray:
    """12 models x 250 questions x 20 trials (5,000 trials per model), with two models of
    equal total but different responses and one model that solves nothing."""
    rng = np.random.default_rng(53)
    theta = rng.normal(0.0, 1.0, 11)
    b = rng.normal(0.0, 1.5, 250)
    R = (rng.random((11, 250, 20)) < 1 / (1 + np.exp(-(theta[:, None, None] - b[:, None])))
         ).astype(np.int8)
    twin = R[4].copy()
    twin[[0, 1]] = twin[[1, 0]]  # same total as model 4, other questions
    assert not np.array_equal(twin, R[4])
    return np.concatenate([R, twin[None], np.zeros((1, 250, 20), np.int8)])


def test_simulated_set_with_thousands_of_trials_per_model():
    R = _simulated()
    out = _assert_scores_follow_totals_and_reference(ResponseData(R))
    assert out.scores[4] == out.scores[11]  # equal totals, bit for bit
    # the EM's 21-node grid cannot resolve these posteriors: its EAPs collapse
    fit = irt.fit_rasch_mml(ResponseData(R).reductions.successes, 20)
    grid_eap = fit.posterior @ fit.nodes
    assert len(np.unique(np.round(grid_eap, 6))) < len(np.unique(R.sum(axis=(1, 2))))
    # posterior sds (but the model solving nothing) far below the node spacing
    assert fit.posterior_sd[:-1].max() < 0.1 < np.diff(fit.nodes).min()


def test_free_population_sd_scores_match_the_fine_grid():
    _assert_scores_follow_totals_and_reference(ResponseData(_simulated()[:, :80]),
                                               population_sd=None)


def test_few_trials_match_the_fine_grid():
    """Skewed, wide posteriors (one trial on 12 questions) are integrated just as well."""
    rng = np.random.default_rng(7)
    R = (rng.random((9, 12, 1)) < 0.5).astype(np.int8)
    R[0] = 0
    _assert_scores_follow_totals_and_reference(ResponseData(R))


def test_incomplete_data_match_the_fine_grid():
    """With missing trials (a mask) each model's posterior has its own trial counts; the
    totals are no longer sufficient, but the scores are still its mean and quantile."""
    rng = np.random.default_rng(11)
    R = (rng.random((8, 40, 30)) < rng.random((8, 40, 1))).astype(np.int8)
    mask = rng.random(R.shape) < 0.7
    mask[:, :, 0] = True  # every (model, question) keeps a trial
    data = ResponseData(R, mask=mask)
    k, n = data.reductions.successes.astype(float), data.reductions.trials.astype(float)
    assert len(np.unique(n)) > 10
    eap = bayesrank.rank(data, "rasch_mml", return_item_params=True)
    low = bayesrank.rank(data, "rasch_mml_credible")
    ref_eap, ref_low = _reference(k, n, eap.details["difficulty"],
                                  eap.details["population_sd"])
    np.testing.assert_allclose(eap.scores, ref_eap, rtol=0, atol=1e-6)
    np.testing.assert_allclose(low.scores, ref_low, rtol=0, atol=1e-6)
