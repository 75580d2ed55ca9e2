"""The two slowest study rules' cores against outputs frozen from the engine before them.

``tests/snapshots/slow_rules.npz`` was written by ``tests/snapshots/make_slow_rules.py``
from main at ab339b3 (before issue 51's item 4), on the bundled aime24 example (pools of
5, 10 and 15 models, 24 N=1 draws) and on 12 models x 8 windows of 30 questions of the
shared ``real_zeroeval_gsm8k`` set.  The archive keeps the inputs, so this test does not
depend on how the study builds its stacks.

Bayesian Bradley-Terry (``bayesian_mcmc``): the chains must be the same draw for draw
(SHA-256 of every chain's draws), and the means-only path the study calls must equal the
mean of those draws bit for bit.  xPL fits (``rasch_3pl_map``, ``rasch_3pl``,
``rasch_2pl_map``): abilities, item parameters, objective, iterations, unconverged
stages and failures equal to the frozen fit.  Both comparisons are bit for bit and run on
the floating-point kernels the archive was written with (``tests/_float_kernels.py``);
elsewhere they skip with the difference named, and the 2PL MAP and 3PL joint-ML optima
are compared by their objective to 1e-9 relative (the 3PL MAP can reach another local
optimum: ex10 did under AVX2, 1.3e-5 apart).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
from _float_kernels import bit_exact_skip_reason

from bayesrank.baselines import paired
from bayesrank.baselines.irt.xpl_batch import fit_xpl_batch

HERE = Path(__file__).resolve().parent / "snapshots"
sys.path.insert(0, str(HERE))
from make_slow_rules import LAYOUTS, inputs, wins  # noqa: E402

needs_snapshot_kernels = pytest.mark.skipif(bit_exact_skip_reason() is not None,
                                            reason=str(bit_exact_skip_reason()))

SETS = ("ex5", "ex10", "ex15", "real")


@pytest.fixture(scope="module")
def frozen():
    with np.load(HERE / "slow_rules.npz", allow_pickle=False) as z:
        return dict(z)


@pytest.mark.parametrize("name", SETS)
def test_inputs_are_rebuilt_unchanged(frozen, name):
    """The archive's outcome stacks are what make_slow_rules builds from the data today."""
    np.testing.assert_array_equal(inputs()[name], frozen[f"{name}/X"])


@needs_snapshot_kernels
@pytest.mark.parametrize("name", SETS)
def test_mcmc_chains_and_their_means_are_unchanged(frozen, name):
    W = wins(frozen[f"{name}/X"])
    draws, rates = paired.bt_posterior_draws_batch(W, seed=42)
    digests = [hashlib.sha256(d.tobytes()).hexdigest() for d in draws]
    assert digests == list(frozen[f"{name}/mcmc/sha256"])
    np.testing.assert_array_equal(rates, frozen[f"{name}/mcmc/rate"])
    means, mean_rates = paired.bt_posterior_means_batch(W, seed=42)
    np.testing.assert_array_equal(means, frozen[f"{name}/mcmc/mean"])
    np.testing.assert_array_equal(means, draws.mean(axis=1))
    np.testing.assert_array_equal(mean_rates, rates)


def test_mcmc_means_follow_the_seed(frozen):
    """Another seed gives other chains (the comparison above could not pass by accident)."""
    W = wins(frozen["ex5/X"][:4])
    means, _ = paired.bt_posterior_means_batch(W, seed=7)
    assert not np.allclose(means, frozen["ex5/mcmc/mean"][:4], rtol=0, atol=1e-6)
    ref, _ = paired.bt_posterior_draws_batch(W, seed=7)
    np.testing.assert_array_equal(means, ref.mean(axis=1))


def test_mcmc_short_chains_without_burnin_match_their_draws():
    rng = np.random.default_rng(3)
    W = rng.integers(0, 6, size=(5, 7, 7)).astype(float)
    W[:, np.arange(7), np.arange(7)] = 0.0
    W[1] = 0.0  # no decisive comparison at all: the chain samples the prior's Laplace fit
    for burnin, n in ((0, 1), (0, 50), (3, 20)):
        draws, rates = paired.bt_posterior_draws_batch(W, n_samples=n, burnin=burnin, seed=1)
        means, got = paired.bt_posterior_means_batch(W, n_samples=n, burnin=burnin, seed=1)
        np.testing.assert_array_equal(means, draws.mean(axis=1))
        np.testing.assert_array_equal(got, rates)


@needs_snapshot_kernels
@pytest.mark.parametrize("lay_name", LAYOUTS)
@pytest.mark.parametrize("name", SETS)
def test_xpl_fits_are_unchanged(frozen, name, lay_name):
    X = frozen[f"{name}/X"]
    fit = fit_xpl_batch(X, np.ones_like(X), LAYOUTS[lay_name], 500)
    key = f"{name}/{lay_name}"
    np.testing.assert_array_equal(fit.theta, frozen[f"{key}/theta"])
    np.testing.assert_array_equal(fit.v, frozen[f"{key}/v"])
    np.testing.assert_array_equal(fit.objective, frozen[f"{key}/objective"])
    np.testing.assert_array_equal(fit.n_iter, frozen[f"{key}/n_iter"])
    np.testing.assert_array_equal(fit.unconverged, frozen[f"{key}/unconverged"])
    np.testing.assert_array_equal([e is not None for e in fit.errors], frozen[f"{key}/failed"])


@pytest.mark.parametrize("lay_name", ["2pl_map", "3pl_jml"])
@pytest.mark.parametrize("name", SETS)
def test_xpl_optima_match_to_rounding(frozen, name, lay_name):
    X = frozen[f"{name}/X"]
    fit = fit_xpl_batch(X, np.ones_like(X), LAYOUTS[lay_name], 500)
    key = f"{name}/{lay_name}"
    np.testing.assert_allclose(fit.objective, frozen[f"{key}/objective"], rtol=1e-9)
    np.testing.assert_array_equal(fit.unconverged, frozen[f"{key}/unconverged"])
    np.testing.assert_array_equal([e is not None for e in fit.errors], frozen[f"{key}/failed"])
