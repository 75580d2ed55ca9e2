"""The beta-binomial log-pmf of the IRT models against scipy, from heavy over-dispersion to
the binomial limit (models.irt.log_rising_steps)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from bayesrank.models.irt import _beta_binomial_logp
from scipy import special, stats


def trial_counts(n):
    """0, 1, ..., max n: the counts the normaliser is evaluated at (then picked per cell)."""
    return pt.as_tensor(np.arange(n.max() + 1.0))


def logpmf_without_binomial_coefficient(k, n, p, phi):
    log_steps = np.log(np.arange(1.0, n.max()))
    value = _beta_binomial_logp(
        pt.as_tensor(k), pt.as_tensor(n), pt.as_tensor(np.log(p)), pt.as_tensor(np.log1p(-p)),
        pt.as_tensor(-np.log(phi)), pt.as_tensor(0.0), log_steps=pt.as_tensor(log_steps),
        levels=trial_counts(n),
    )
    return value.eval()


@pytest.fixture
def cells():
    rng = np.random.default_rng(0)
    n = rng.integers(0, 13, size=(7, 9)).astype(float)
    k = np.floor(rng.uniform(size=n.shape) * (n + 1))
    return k, n, rng.uniform(0.001, 0.999, size=n.shape)


# scipy's betabinom takes gammaln differences of arguments near phi, which lose about
# log10(phi) of their 16 digits; the tolerance follows that, not our result
@pytest.mark.parametrize(("phi", "atol"), [(0.05, 1e-12), (0.3, 1e-12), (2.0, 1e-12),
                                           (50.0, 1e-12), (1e4, 1e-9)])
def test_beta_binomial_logpmf_is_scipys(cells, phi, atol):
    k, n, p = cells
    expected = stats.betabinom.logpmf(k, n, p * phi, (1 - p) * phi) - np.log(special.comb(n, k))
    got = logpmf_without_binomial_coefficient(k, n, p, phi)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=atol)


def test_beta_binomial_tends_to_the_binomial(cells):
    # at phi = 1e12 scipy's gammaln differences have lost their digits; the exact
    # difference from the binomial is below sum_i i / (p phi) < 1e-7 here
    k, n, p = cells
    binomial = stats.binom.logpmf(k, n, p) - np.log(special.comb(n, k))
    got = logpmf_without_binomial_coefficient(k, n, p, 1e12)
    np.testing.assert_allclose(got, binomial, rtol=0, atol=1e-7)
    assert np.all(np.isfinite(got))


def test_many_trials_use_the_gammaln_form_with_the_same_density():
    # above MAX_STEPPED_TRIALS the model builds the O(1)-per-cell gammaln form; it must be
    # the density the stepped sums give (and scipy's) on the same cells
    from bayesrank.models.irt import MAX_STEPPED_TRIALS, _beta_binomial_logp_gamma

    rng = np.random.default_rng(1)
    n = rng.integers(MAX_STEPPED_TRIALS + 1, 81, size=(5, 6)).astype(float)
    k = np.floor(rng.uniform(size=n.shape) * (n + 1))
    p = rng.uniform(0.001, 0.999, size=n.shape)
    for phi in (0.3, 2.0, 50.0):
        gamma_form = _beta_binomial_logp_gamma(
            pt.as_tensor(k), pt.as_tensor(n), pt.as_tensor(np.log(p)),
            pt.as_tensor(np.log1p(-p)), pt.as_tensor(-np.log(phi)), pt.as_tensor(0.0),
            levels=trial_counts(n),
        ).eval()
        np.testing.assert_allclose(gamma_form, logpmf_without_binomial_coefficient(k, n, p, phi),
                                   rtol=1e-10, atol=1e-10)
        expected = stats.betabinom.logpmf(k, n, p * phi, (1 - p) * phi) - np.log(
            special.comb(n, k))
        np.testing.assert_allclose(gamma_form, expected, rtol=1e-10, atol=1e-10)


def test_the_model_picks_the_form_by_trials_per_cell():
    from bayesrank.models import get_model

    import bayesrank

    rng = np.random.default_rng(2)
    few = bayesrank.ResponseData(rng.integers(0, 2, size=(4, 6, 10)))
    many = bayesrank.ResponseData(rng.integers(0, 2, size=(4, 6, 40)))
    assert any(v.name.endswith("_log_steps") for v in get_model("3pl").build(few).data_vars)
    assert not any(v.name.endswith("_log_steps")
                   for v in get_model("3pl").build(many).data_vars)
